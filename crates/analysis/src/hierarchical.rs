//! Hierarchical fixed-priority response-time analysis: tasks inside Periodic, Polling,
//! Sporadic and Deferrable servers that are themselves scheduled by fixed priority on one
//! processor.
//!
//! # Source
//! R. I. Davis and A. Burns, "Hierarchical Fixed Priority Pre-emptive Scheduling", RTSS 2005,
//! building on Saewong, Rajkumar, Lehoczky & Klein (ECRTS 2002), Bernat & Burns (RTSS 1999)
//! and Strosnider, Lehoczky & Sha (IEEE TC 1995). The paper's text is not at hand; its
//! recurrence is cited as restated, with credit to it, in H. Mei, *Real-Time Stream
//! Processing in Embedded Systems*, PhD thesis, University of York, 2017, §5.2.1, whose
//! equation numbers are used below: (5.1) a server's response, (5.4) the response window,
//! (5.5) the load, (5.7) and (5.8) the task and server jitters (cited together below: the
//! restatement at hand lists both numbers without saying which is which), (5.13) blocking. Each recurrence
//! here is also derived and proved sound in this module, and checked against two simulators
//! (the discrete one in `tests/integration/hierarchical_sim.rs` and the scheduling core in
//! `crates/scenario/tests/integration/soundness.rs`); `tests/integration/hierarchical_sim.rs` also checks
//! that, without bound tasks, the bounds here *are* those of (5.4) and (5.5).
//!
//! # Term by term against the published form
//! For τ_i in server S, the thesis writes the load (5.5)
//! `L_i(w) = C_i + Σ_{j∈hp(i)} ⌈(w + J_j)/T_j⌉ C_j` and the window (5.4)
//! `w = L + (⌈L/C_S⌉ − 1)(T_S − C_S) + Σ_{X∈hp(S)} ⌈(max(0, w − (⌈L/C_S⌉ − 1)T_S) + J_X)/T_X⌉ C_X`,
//! `R_i = w + J_i`, with `J_i = T_S − C_S` for a task released at any
//! time and 0 for one bound to the server's release, `J_X = T_X − C_X` for a Deferrable
//! Server X and 0 for Periodic and Sporadic ones, and for the server itself (5.1)
//! `R_S = C_S + Σ_X ⌈(R_S + J_X)/T_X⌉C_X`, schedulable iff `R_S ≤ T_S`.
//!
//! | published | here | same? |
//! |---|---|---|
//! | (5.1) `R_S ≤ T_S` | (H2) `r_S(C_S) ≤ T_S` | identical |
//! | (5.5) load, `⌈(w + J_j)/T_j⌉` | (H1) `⌈R/T_j⌉` with `R = w + G_S` | identical: for unbound tasks `J_j = J_i = G_S` |
//! | (5.4) window | (H3) `G_S + (k−1)T_S + r_S(x)` | identical least solution (below) |
//! | (5.4) start and stop: `w₀ = C_i + (⌈C_i/C_S⌉−1)(T_S−C_S)`, stop past `D_i − J_i` | start `R = C_i`, stop past `D_i` | same answer: both starts lie below the least solution, and `R = w + J_i` |
//! | (5.7, 5.8) unbound task, `J_i = T_S − C_S` | `G_S = T_S − C_S` (Periodic, Deferrable, Sporadic) | identical |
//! | (5.7, 5.8) bound task, `J_i = 0` | (H4), no gap | identical |
//! | (5.7, 5.8) server jitter `J_X` | `release_jitter` | identical; Polling and merging Sporadic servers, which the thesis does not treat, get 0 too (below) |
//! | (5.13) blocking | — | not modelled (below) |
//!
//! Where the code differs, and why (one line each):
//! * **Polling gap** `G_S = T_S`, not `T_S − C_S`: a task arriving just after a poll that
//!   found nothing waits for the next period's budget (rtvmm's Polling Server discards it).
//! * **Merging Sporadic Server** ([`ServerKind::SporadicMerging`]) gap `T_S`: a merge at the
//!   replenishment cap can bring budget back up to a period late (proof below); one that
//!   never merges is analysed as published (`T_S − C_S`).
//! * **`J_X = 0` for Polling and merging Sporadic servers**: each runs only budget it got
//!   at a replenishment at least `T_X` after the previous one's, so it interferes no more
//!   than a periodic task `(T_X, C_X)` (a merge only delays budget).
//! * **Bound task's higher-priority unbound tasks**: (5.5) gives them jitter `T_S − C_S`;
//!   here the carry-in is their own bound `R_j`, which (H4)'s proof covers. The published
//!   term is tighter (for about one generated system in fifty) and held in simulation on
//!   every system tried (`published_carry_in_of_bound_tasks_holds_in_simulation`, ignored by
//!   default; `RTVMM_PUBLISHED_CASES=300000` passes), but its proof is in the paper, which is
//!   not at hand, and a carried-in job can be older than `T_S − C_S` (a job needing several
//!   server periods), so it is not used: the one place the code is looser than published.
//! * **Bound higher-priority tasks carry nothing in only if they meet their deadlines**
//!   (a bound job that could miss may still be pending at the release); (5.5) takes
//!   `J_j = 0` for them unconditionally.
//! * **A bound task gets the smaller of (H3) and (H4)**; both are sound.
//! * **Equal priorities interfere both ways** (rtvmm serves equals FIFO, so either can run
//!   first), tasks within a server and servers at the root alike, by the one rule of
//!   [`crate::interferes`]; the published `hp(i)` is strictly higher.
//! * **(5.13) blocking: none.** rtvmm's servers share no resources and budgets are enforced
//!   exactly (no overrun to add to `C_X`); scheduling overheads are outside the guarantees
//!   (the analysis notes say so when a machine has them).
//! * **(5.4) solved with (H2) nested**: (5.4)'s own iteration need not be monotone in w (when
//!   `⌈L/C_S⌉` grows, the last-period term can shrink); every fixed point of the nested map
//!   `R ↦ G_S + (k−1)T_S + r_S(x)` is a solution of (5.4), and every solution of (5.4) lies
//!   above the nested map's least fixed point, so the least solution is the same.
//!
//! # The recurrences
//! For task τ_i (WCET `C_i`, deadline `D_i ≤ T_i`) in server S (budget `C_S`, period `T_S`),
//! all in integer time units:
//!
//! * **(H1) load** inside the server over a window of length R (Mei (5.5) with
//!   `R = w + J_i`):
//!   `L_i(R) = C_i + Σ_{j ∈ hp(i) in S} ⌈R / T_j⌉ C_j`.
//! * **(H2) server response to x units** at the root (Mei (5.1) for `x = C_S`, and the
//!   last-period term of (5.4); jitters (5.7, 5.8)), from the start of a server period,
//!   with higher-priority servers X released at the same time:
//!   `r_S(x) = x + Σ_{X ∈ hp(S)} ⌈(r_S(x) + J_X) / T_X⌉ C_X`, where `J_X = T_X − C_X` for a
//!   **Deferrable** X (its budget can run at the end of one period and the start of the
//!   next, back to back: Strosnider et al. 1995) and `J_X = 0` for the others (they
//!   interfere no more than a periodic task `(T_X, C_X)`: Sprunt, Sha & Lehoczky 1989 for
//!   the Sporadic Server, whose merges only delay replenishments). S is **schedulable at
//!   the root** iff `r_S(C_S) ≤ T_S`; otherwise its tasks get
//!   [`ResponseBound::ServerUnschedulable`] (unless the check is skipped: "Without the
//!   root check" below).
//! * **(H3) response time** (Mei (5.4), task jitter (5.7, 5.8)): with `k = ⌈L/C_S⌉` server
//!   periods needed and
//!   `x = L − (k−1)C_S` units in the last one,
//!   `R_i = G_S + (k − 1)·T_S + r_S(x)`, `L = L_i(R_i)`, solved by fixed-point iteration
//!   from `R_i = C_i` and stopped at `D_i`. Written as the paper's single recurrence in the
//!   time `w = R_i − G_S` after the gap, this is
//!   `w = L + (k−1)(T_S − C_S) + Σ_{X ∈ hp(S)} ⌈(max(0, w − (k−1)T_S) + J_X) / T_X⌉ C_X`:
//!   the load, a gap `T_S − C_S` between consecutive server periods, and higher-priority
//!   servers counted in the last period only (substitute `w = (k−1)T_S + y` to get (H2) with
//!   `y = r_S(x)`). The code iterates (H3) with (H2) nested because that map is monotone in
//!   `R` (at `L = kC_S + 1`, `kT_S + r_S(1) > (k−1)T_S + r_S(C_S)`), so the iteration from
//!   below reaches the least fixed point.
//!
//!   The **capacity gap** `G_S` is the longest wait from the start of the task's busy window
//!   to the start of the next server period in which the server serves it:
//!   * Periodic, Deferrable, and Sporadic servers that never merge replenishments:
//!     `G_S = T_S − C_S` (the task arrives just after the server used up its budget, which
//!     took at least `C_S` from the period's start);
//!   * Polling server: `G_S = T_S` (the task can arrive just after the poll found nothing
//!     to do, and the budget is then discarded for the rest of the period);
//!   * Sporadic server that can merge replenishments ([`ServerKind::SporadicMerging`]):
//!     `G_S = T_S` (proof below).
//! * **(H4) tasks bound to the server's release** (Mei (5.4)/(5.5) with `J_i = 0`, (5.7, 5.8)).
//!   A periodic task whose period is a
//!   multiple of `T_S` and whose jobs are released exactly at server releases (Periodic,
//!   Deferrable or Polling server) never waits for a capacity gap: at its release the
//!   budget is full. Its bound is `R_i = (k − 1)·T_S + r_S(x)` with
//!   `L = C_i + Σ_{j bound} ⌈R/T_j⌉ C_j + Σ_{j unbound} ⌈(R + R_j)/T_j⌉ C_j` over
//!   `j ∈ hp(i)`, where `R_j` is the bound of higher-priority task j (needed: an unbound
//!   task can have one job pending at the release). The task gets the smaller of (H3) and (H4). Davis & Burns recommend choosing
//!   server periods that divide task periods for this reason.
//!
//! The back-to-back term of Deferrable servers appears only as interference on
//! *lower*-priority servers (through `J_X`), which is how Davis & Burns conclude that the
//! Periodic Server dominates the Deferrable Server for task schedulability.
//!
//! # Why (H3) is sound
//! Let the task's busy window start at `a` in server period `[r₀, r₀ + T_S)` with `c` units
//! of budget left. Write `f = r_S`; `f` is non-decreasing and `f(y + d) ≥ f(y) + d`. In
//! every full later period the server delivers `C_S` by `f(C_S) ≤ T_S`, and `x` units of the
//! last one by `f(x)`. If the budget is exhausted at `a`, the server ran `C_S` units in
//! `[r₀, a]`, so `r₀ + T_S − a ≤ T_S − C_S`. If `c > 0` units are left (or delivered only in
//! part, `c'`, before the period ends — Deferrable), the server had either consumed
//! `C_S − c` before `a` or could not run `c' + 1` units in `[a, r₀ + T_S)`, which gives
//! `r₀ + T_S − a ≤ T_S − C_S + c'`; in both cases the units delivered in the first period
//! make up for the shorter gap because `f(x) ≥ f(x − c') + c'` and
//! `f(x + C_S − c') ≤ f(C_S) − (c' − x) ≤ T_S − c' + x`. So from any release instant the
//! server delivers L units within `G_S + (k−1)T_S + f(x)`, a service-time bound valid for
//! every window start, and the usual busy-window argument for fixed priorities inside a
//! supply with such a bound gives `R_i`. For a Polling server the only new case is a poll
//! that found no work just before `a`, whence `G_S = T_S`.
//!
//! # Why (H4) is sound
//! Let the job be released at a server release `r`. Its own earlier job and those of bound
//! higher-priority tasks were released at or before `r − T_j` on the same grid and met
//! their deadlines `≤ T_j`, so none is pending at `r`; an unbound task j with bound
//! `R_j ≤ D_j ≤ T_j` has at most one job pending at `r`, released after `r − R_j`, so at most
//! `⌈(R + R_j)/T_j⌉` of its jobs run in `[r, r + R)`. At `r` the server's budget is `C_S`
//! (Periodic and Deferrable: replenished; Polling: the poll at `r` finds the job) and it is
//! backlogged with level-i work until the job completes, so it delivers `C_S` in every full
//! period and `x` units of the last by `r_S(x)`.
//!
//! # Why a merging Sporadic Server has gap `T_S`
//! The core caps pending replenishments at `max_replenishments`; one more is merged into
//! the latest pending one, which moves to the new one's due time (activation + `T_S`), so
//! budget can come back later than one period after the activation that spent it
//! (`crates/scenario/tests/integration/soundness.rs` pins a case 1.04 ms past the (H3) bound with gap
//! `T_S − C_S`). Take a busy window from `a`. Every replenishment pending at `a` is due at
//! some chunk's activation + `T_S` with that activation before `a`, so by `a + T_S`; the
//! chunk open at `a` (if any) was activated before `a` and its payback, merged or not, is
//! due by `a + T_S` too. While the server stays backlogged, chunks close only by exhausting
//! the budget and start only when a replenishment arrives, so the count of pending
//! replenishments never grows after the first close and no later merge happens. Hence all
//! `C_S` units the server held at `a` are available again by `a + T_S`, and from then on
//! every chunk is paid back one period after its activation — at worst a Sporadic Server
//! released with full budget at `a + T_S`, which is no worse than a Periodic Server
//! released then: `R_i ≤ T_S + (k−1)T_S + r_S(x)`. A server whose limit is at least its
//! budget in the core's time grain (1 ns) can never hold that many replenishments (each is
//! at least 1 ns and they add up to at most `C_S`), so it never merges: that is
//! [`ServerKind::Sporadic`].
//!
//! # Without the root check
//! [`RootCheck::Skipped`] gives every server's tasks their (5.4) bound whether or not (5.1)
//! holds — how the 2011 RT-Xen evaluation applied the analysis (`rtxen-theory`'s *tasks
//! only* verdict): the higher-priority servers still interfere in the last period, and only
//! `r_S(C_S) ≤ T_S` goes unchecked. For a server that passes (5.1) nothing changes. For one
//! that does not, the last-period term `r_S(x)` is computed without the `≤ T_S` limit (up
//! to the task's deadline), and two things differ:
//! * **It is not sound**: (5.4) counts `C_S` units in every full server period, which the
//!   root does not deliver to such a server; the bound is the published formula's value,
//!   not a guarantee.
//! * **The map need not be monotone**: with `r_S(C_S) > T_S + r_S(1)`, one more unit of
//!   load can take a server period less (`(k−1)T_S + r_S(C_S) > kT_S + r_S(1)`), so the
//!   iteration from below could overshoot the least solution or cycle. The code finds the
//!   least solution of (5.4) (least fixed point of (H3)) by a scan instead: the load
//!   `L(R)` is a step function, so (H3)'s right side `F(R) = S(L(R))` is constant between
//!   two steps of `L`, and a fixed point lies in such a stretch iff `S` of its load falls
//!   inside it. From a stretch starting at R with `t = S(L(R))`, the scan stops at t when
//!   `L(t) = L(R)` (t is a fixed point and every point before it is not); jumps to t when
//!   `t > R` and `L(t)` needs as many server periods as `L(R)` (`S` is non-decreasing in
//!   the load while the number of periods stays the same, so no point in `[R, t)` is
//!   fixed); and otherwise moves to the next step of `L`. Its work is at most one step per
//!   higher-priority job released before the deadline, and it is used only for servers
//!   that fail (5.1).
//!
//! # The root at scale
//! (H2)'s sum `W(y) = Σ_{X ∈ hp(S)} ⌈(y + J_X)/T_X⌉ C_X` is evaluated on every iterate of
//! every `r_S(x)`; summed server by server, the root of n servers costs O(n²) per round of
//! iterates (100,000 CARTS components took 41 s). Instead the servers are taken level by
//! level from the highest priority, and one structure (`HigherPriority`) holds every server
//! at or above the current level — exactly `hp(S) ∪ {S}` under [`crate::interferes`] — as
//! `B = Σ C_X`, the budgets of servers without jitter summed per period (in an ordered map,
//! and in a Fenwick tree over the ranks of the root's periods), and those of Deferrable
//! servers summed per `(θ_X, T_X, J_X)`, ordered by the threshold `θ_X = T_X − J_X = C_X`.
//! For `y ≥ 1` (every iterate is at least `x ≥ 1`), with P the servers held without jitter
//! and D the Deferrable ones:
//!
//! `W(y) = B + Σ_{X ∈ P} (⌈y/T_X⌉ − 1) C_X + Σ_{X ∈ D, θ_X < y} (⌈(y + J_X)/T_X⌉ − 1) C_X − ⌈(y + J_S)/T_S⌉ C_S`,
//!
//! and the middle sum is computed either period by period over `T_X < y` or layer by layer,
//! `Σ_{m ≥ 1} Σ_{X ∈ P, T_X ≤ ⌊(y − 1)/m⌋} C_X` (one prefix sum of the tree per layer, for
//! `m ≤ (y − 1)/T_min`), whichever visits fewer entries.
//!
//! *Proof.* If `θ_X ≥ y` then `0 < y + J_X ≤ T_X`, so `⌈(y + J_X)/T_X⌉ = 1` and X adds
//! just `C_X`, which `B` counts; otherwise it adds `C_X` in `B` and the rest in its group,
//! whose members share `T_X` and `J_X` (so the factor) and add their budgets. For the
//! layers, `⌈y/T⌉ = #{m ≥ 0 : m·T < y}` and the `m = 0` term is 1, so
//! `⌈y/T⌉ − 1 = #{m ≥ 1 : T ≤ ⌊(y − 1)/m⌋}`; summing `C_X` over X and m in the other order
//! gives the layers. The last term takes S's own term out (`hp(S)` excludes S, and only S:
//! a server with S's parameters stays in). Every iterate is the same integer as before,
//! from the same start `x`, so every fixed point and every first iterate past a limit are
//! the same numbers; nothing else changes. `grouped_root_sums_are_the_definition` compares
//! the structure with the server-by-server sum, and the two middle sums with each other,
//! on random sets.
//!
//! *Cost.* Sorting is O(n log n); an iterate costs O(log n) plus the cheaper of the periods
//! below y and `⌊(y − 1)/T_min⌋` layers of O(log n) each, plus one step per Deferrable group
//! with `C_X < y` (Deferrable servers of distinct parameters remain linear per iterate). In
//! case 4 of `docs/benchmarks.md`'s scale section (periods 100,000–199,999, rate-monotonic,
//! budgets 1) every `r_S(C_S)` is at most 100,000, so nothing is visited; with 50,000
//! shorter periods above 50,000 long ones (`case4-short.xml`), at most four layers.
//!
//! # Remaining gaps (stated honestly)
//! * The published carry-in of unbound higher-priority tasks in a bound task's window (see
//!   the table above) is not used until its proof can be checked.
//! * Priorities: smaller number = higher. Equal priorities (servers among servers, tasks
//!   within a server) are treated as interfering both ways (conservative).

use std::collections::BTreeMap;

use serde::Serialize;
use thiserror::Error;

use crate::error::WorkloadError;
use crate::rta::{self, FpTask, ResponseBound};
use crate::workload::MAX_TIME;

/// Server policies (as described by Davis & Burns 2005).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ServerKind {
    /// Released every period with budget `C_S`; runs (idling if it has no work) until the
    /// budget is used. Equivalent to a periodic task at the root.
    Periodic,
    /// Released every period; if no task is ready when it runs, the budget is discarded
    /// until the next period, and likewise when its queue empties.
    Polling,
    /// Budget is replenished `T_S` after each chunk of consumption began (Sprunt et al.);
    /// pending replenishments are never merged.
    Sporadic,
    /// A Sporadic Server whose cap on pending replenishments can be reached (the core's
    /// `max_replenishments` below the budget in ns; POSIX `sched_ss_max_repl`): a merge at
    /// the cap moves budget later, and the capacity gap grows to `T_S` (module docs).
    SporadicMerging,
    /// Keeps its budget for the whole period and serves tasks whenever they are ready;
    /// replenished to `C_S` every period (Strosnider et al. 1995).
    Deferrable,
}

impl ServerKind {
    /// The Sporadic Server kind for a cap of `max_pending` pending replenishments and a
    /// budget of `budget_grains` in the scheduler's time grain (the core's: 1 ns). Each
    /// pending replenishment is at least one grain and together they are at most the
    /// budget, so a cap at or above the budget is never reached ([`ServerKind::Sporadic`]);
    /// below it a merge can happen ([`ServerKind::SporadicMerging`]).
    pub fn sporadic(max_pending: u64, budget_grains: u64) -> ServerKind {
        if max_pending < budget_grains {
            ServerKind::SporadicMerging
        } else {
            ServerKind::Sporadic
        }
    }

    /// Released on a fixed grid of periods, so that tasks can be bound to its releases
    /// ((H4)): Periodic, Polling and Deferrable; not the Sporadic Server.
    pub fn has_release_grid(self) -> bool {
        match self {
            ServerKind::Periodic | ServerKind::Polling | ServerKind::Deferrable => true,
            ServerKind::Sporadic | ServerKind::SporadicMerging => false,
        }
    }

    /// Once the root serves it (`r_S(C_S) ≤ T_S`), the server delivers the periodic
    /// resource model's supply `(T_S, C_S)` to a backlogged domain (`C_S` in every period,
    /// a blackout of at most `2(T_S − C_S)`), so Lemma 1 applies to its tasks: Periodic,
    /// Deferrable and never-merging Sporadic servers. Not a Polling server (an idle server
    /// loses its budget: a domain that becomes busy just after a poll can wait
    /// `2T_S − C_S`) nor a merging Sporadic Server (a merged replenishment can come back up
    /// to a period late; module docs).
    pub fn supplies_periodic_resource(self) -> bool {
        match self {
            ServerKind::Periodic | ServerKind::Deferrable | ServerKind::Sporadic => true,
            ServerKind::Polling | ServerKind::SporadicMerging => false,
        }
    }
}

/// Whether a server's tasks get bounds only when the root can serve it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum RootCheck {
    /// (5.1) first: the tasks of a server with `r_S(C_S) > T_S` get
    /// [`ResponseBound::ServerUnschedulable`]. Sound.
    #[default]
    Checked,
    /// (5.1) not checked: every server's tasks get their (5.4) bound, higher-priority
    /// servers interfering as published; for a server that fails (5.1) the bound is the
    /// formula's value, not a guarantee (module docs, "Without the root check").
    Skipped,
}

/// A server with its tasks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Server {
    /// For reports.
    pub name: String,
    /// `C_S`.
    pub budget: u64,
    /// `T_S`.
    pub period: u64,
    /// Root priority; smaller = higher.
    pub priority: u32,
    /// Policy.
    pub kind: ServerKind,
    /// The server's tasks with their local priorities (smaller = higher).
    pub tasks: Vec<FpTask>,
    /// Per task, in the order of `tasks`: bound to the server's release (periodic, period a
    /// multiple of `T_S`, every job released exactly at a server release; module docs,
    /// (H4)). Empty: no task is bound.
    pub bound: Vec<bool>,
}

/// Result for one server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerAnalysis {
    /// The server's name.
    pub name: String,
    /// `r_S(C_S)`: the latest the full budget is delivered after the period starts, if
    /// within the period.
    pub budget_response_time: Option<u64>,
    /// `r_S(C_S) ≤ T_S`.
    pub schedulable_at_root: bool,
    /// One bound per task, in the order given.
    pub tasks: Vec<ResponseBound>,
}

/// Invalid input for the hierarchical analysis.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
pub enum HierarchyError {
    /// No servers.
    #[error("no servers")]
    Empty,
    /// `C_S = 0`, `C_S > T_S`, or `T_S` above the maximum.
    #[error("server {server}: budget {budget} must be in 1..={period} (its period)")]
    BadServer {
        /// Index of the server.
        server: usize,
        /// Budget.
        budget: u64,
        /// Period.
        period: u64,
    },
    /// A task marked bound to the server's release cannot be.
    #[error("server {server}, task {task}: cannot be bound to the server's release: {reason}")]
    BadBound {
        /// Index of the server.
        server: usize,
        /// Index of the task in the server.
        task: usize,
        /// Why.
        reason: &'static str,
    },
    /// A task is invalid.
    #[error("server {server}: {error}")]
    BadTask {
        /// Index of the server.
        server: usize,
        /// What is wrong.
        error: WorkloadError,
    },
}

/// Worst-case response-time bounds of every task in every server (Davis & Burns 2005, in
/// the form of Mei 2017, §5.2.1, eqs. (5.1), (5.4), (5.5), (5.7), (5.8); differences in the
/// module docs).
///
/// ```
/// use rtvmm_analysis::{hierarchical_response_times, FpTask, ResponseBound, Server, ServerKind};
/// let mut servers = [Server {
///     name: "S".into(), budget: 2, period: 5, priority: 0, kind: ServerKind::Periodic,
///     tasks: vec![FpTask::new(20, 3, 0)], bound: vec![],
/// }];
/// // L = 3, k = 2, x = 1: R = (5 − 2) + 5 + 1 = 9.
/// let result = hierarchical_response_times(&servers).unwrap();
/// assert_eq!(result[0].tasks[0], ResponseBound::Bounded { response_time: 9, slack: 11 });
/// // Released at the server's releases (20 is a multiple of 5): no gap, R = 5 + 1 = 6.
/// servers[0].bound = vec![true];
/// let result = hierarchical_response_times(&servers).unwrap();
/// assert_eq!(result[0].tasks[0].response_time(), Some(6));
/// ```
pub fn hierarchical_response_times(
    servers: &[Server],
) -> Result<Vec<ServerAnalysis>, HierarchyError> {
    hierarchical_response_times_with(servers, RootCheck::Checked)
}

/// [`hierarchical_response_times`] with (5.1) checked or skipped ([`RootCheck`]); with
/// [`RootCheck::Skipped`] a server that fails (5.1) is still reported as not schedulable
/// at the root, and its tasks get bounds all the same.
///
/// ```
/// use rtvmm_analysis::{hierarchical_response_times_with, FpTask, RootCheck, Server, ServerKind};
/// let server = |name: &str, budget, priority, tasks| Server {
///     name: name.into(), budget, period: 4, priority, kind: ServerKind::Periodic, tasks,
///     bound: vec![],
/// };
/// // S2 below S1 (2 of every 4): r(3) = 3 + 2⌈r/4⌉ → 5 → 7 > 4, not served. Its task
/// // (40, 3) still gets (5.4): L = 3, k = 1, R = (4 − 3) + r(3) = 1 + 7 = 8.
/// let servers = [server("S1", 2, 0, vec![]), server("S2", 3, 1, vec![FpTask::new(40, 3, 0)])];
/// let result = hierarchical_response_times_with(&servers, RootCheck::Skipped).unwrap();
/// assert!(!result[1].schedulable_at_root);
/// assert_eq!(result[1].tasks[0].response_time(), Some(8));
/// ```
pub fn hierarchical_response_times_with(
    servers: &[Server],
    check: RootCheck,
) -> Result<Vec<ServerAnalysis>, HierarchyError> {
    validate(servers)?;
    // Level by level from the highest priority: `above` holds every server of this priority
    // or a higher one (smaller number), which is `hp(S)` plus S itself under
    // `crate::interferes` (`other ≤ own`: equals interfere both ways).
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by_key(|&index| servers[index].priority);
    let mut above = HigherPriority::new(servers);
    let mut results: Vec<Option<ServerAnalysis>> = vec![None; servers.len()];
    for level in order.chunk_by(|&a, &b| servers[a].priority == servers[b].priority) {
        for &index in level {
            above.insert(&servers[index]);
        }
        for &index in level {
            let interference = Interference {
                above: &above,
                own: &servers[index],
            };
            results[index] = Some(analyse_server(&servers[index], interference, check));
        }
    }
    Ok(results
        .into_iter()
        .map(|result| result.expect("every server is on one level"))
        .collect())
}

fn validate(servers: &[Server]) -> Result<(), HierarchyError> {
    if servers.is_empty() {
        return Err(HierarchyError::Empty);
    }
    for (index, server) in servers.iter().enumerate() {
        if server.budget == 0 || server.budget > server.period || server.period > MAX_TIME {
            return Err(HierarchyError::BadServer {
                server: index,
                budget: server.budget,
                period: server.period,
            });
        }
        if !server.tasks.is_empty() {
            rta::validate(&server.tasks).map_err(|error| HierarchyError::BadTask {
                server: index,
                error,
            })?;
        }
        if !server.bound.is_empty() && server.bound.len() != server.tasks.len() {
            return Err(HierarchyError::BadBound {
                server: index,
                task: server.bound.len().min(server.tasks.len()),
                reason: "`bound` must be empty or have one entry per task",
            });
        }
        for (task, _) in server.bound.iter().enumerate().filter(|(_, &b)| b) {
            let reason = if !server.kind.has_release_grid() {
                "a Sporadic Server has no fixed releases"
            } else if server.tasks[task].period % server.period != 0 {
                "its period is not a multiple of the server's period"
            } else {
                continue;
            };
            return Err(HierarchyError::BadBound {
                server: index,
                task,
                reason,
            });
        }
    }
    Ok(())
}

/// `J_X` of a server as seen by lower-priority servers (Mei (5.7, 5.8); Polling and merging
/// Sporadic servers, which it does not treat, as periodic tasks: module docs).
fn release_jitter(server: &Server) -> u64 {
    match server.kind {
        ServerKind::Deferrable => server.period - server.budget,
        ServerKind::Periodic
        | ServerKind::Polling
        | ServerKind::Sporadic
        | ServerKind::SporadicMerging => 0,
    }
}

/// The capacity gap `G_S`: the jitter `J_i` of an unbound task (Mei (5.7, 5.8)), a whole period
/// for Polling and merging Sporadic servers (module docs).
fn capacity_gap(server: &Server) -> u64 {
    match server.kind {
        ServerKind::Polling | ServerKind::SporadicMerging => server.period,
        ServerKind::Periodic | ServerKind::Sporadic | ServerKind::Deferrable => {
            server.period - server.budget
        }
    }
}

/// The servers at or above one priority level, for (H2)'s sum in a time near-independent
/// of their number (module docs, "The root at scale"): `Σ C_X` over all of them; the
/// budgets of servers without jitter summed per period, both in an ordered map and in a
/// Fenwick tree over the ranks of every such period of the root; and those of Deferrable
/// servers summed per `(θ_X, T_X, J_X)`, `θ_X = T_X − J_X = C_X`, in that order.
struct HigherPriority {
    budgets: u64,
    /// Jitter 0: `T_X` → the budgets of the servers held with that period.
    periodic: BTreeMap<u64, u64>,
    /// Every period of a server without jitter in the whole root, sorted, once each.
    periods: Vec<u64>,
    /// Fenwick tree over the ranks in `periods`: the budgets held, for prefix sums.
    by_rank: Vec<u64>,
    /// The shortest period held without jitter (`u64::MAX`: none).
    shortest: u64,
    /// Deferrable: `(θ_X, T_X, J_X)` → the budgets of the servers held with them.
    deferrable: BTreeMap<(u64, u64, u64), u64>,
}

impl HigherPriority {
    /// Empty, for a root of `servers`.
    fn new(servers: &[Server]) -> HigherPriority {
        let mut periods: Vec<u64> = servers
            .iter()
            .filter(|server| release_jitter(server) == 0)
            .map(|server| server.period)
            .collect();
        periods.sort_unstable();
        periods.dedup();
        HigherPriority {
            budgets: 0,
            periodic: BTreeMap::new(),
            by_rank: vec![0; periods.len() + 1],
            periods,
            shortest: u64::MAX,
            deferrable: BTreeMap::new(),
        }
    }

    fn insert(&mut self, server: &Server) {
        let jitter = release_jitter(server);
        self.budgets += server.budget;
        if jitter == 0 {
            *self.periodic.entry(server.period).or_default() += server.budget;
            self.shortest = self.shortest.min(server.period);
            let rank = self.periods.partition_point(|&p| p < server.period);
            debug_assert_eq!(self.periods.get(rank), Some(&server.period));
            let mut node = rank + 1;
            while node < self.by_rank.len() {
                self.by_rank[node] += server.budget;
                node += node & node.wrapping_neg();
            }
        } else {
            *self
                .deferrable
                .entry((server.period - jitter, server.period, jitter))
                .or_default() += server.budget;
        }
    }

    /// `Σ_X ⌈(y + J_X)/T_X⌉ C_X` over the servers held, for `y ≥ 1`: every server counts
    /// `C_X` once (in `budgets`), and only those with `θ_X < y` count more.
    fn interference(&self, response: u64) -> u64 {
        debug_assert!(response >= 1);
        // Jitter 0, the cheaper of two equal sums: one term per period below y, or one
        // prefix sum per layer m with m·T_min < y.
        let groups = self.periods.partition_point(|&p| p < response) as u64;
        let layers = (response - 1) / self.shortest;
        let per_layer = 2 * u64::from(usize::BITS - self.periods.len().leading_zeros());
        let periodic = if layers.saturating_mul(per_layer) < groups {
            self.periodic_by_layers(response)
        } else {
            self.periodic_by_groups(response)
        };
        self.budgets
            + periodic
            + self
                .deferrable
                .range(..(response, 0, 0))
                .map(|(&(_, period, jitter), &budget)| {
                    ((response + jitter).div_ceil(period) - 1) * budget
                })
                .sum::<u64>()
    }

    /// `Σ (⌈y/T_X⌉ − 1) C_X` over the servers held without jitter, period by period.
    fn periodic_by_groups(&self, response: u64) -> u64 {
        self.periodic
            .range(..response)
            .map(|(&period, &budget)| (response.div_ceil(period) - 1) * budget)
            .sum()
    }

    /// The same sum, layer by layer: `⌈y/T⌉ − 1 = #{m ≥ 1 : m·T < y}`, so it is
    /// `Σ_{m ≥ 1} Σ_{T_X ≤ ⌊(y − 1)/m⌋} C_X`, one prefix sum per layer.
    fn periodic_by_layers(&self, response: u64) -> u64 {
        (1..)
            .map_while(|layer: u64| {
                let longest = (response - 1) / layer;
                (longest >= self.shortest)
                    .then(|| self.prefix(self.periods.partition_point(|&p| p <= longest)))
            })
            .sum()
    }

    /// The budgets held without jitter at the `count` shortest periods of the root.
    fn prefix(&self, count: usize) -> u64 {
        let mut sum = 0;
        let mut node = count;
        while node > 0 {
            sum += self.by_rank[node];
            node &= node - 1;
        }
        sum
    }
}

/// `hp(S)` of one server: the servers at or above its level, less itself.
#[derive(Clone, Copy)]
struct Interference<'s> {
    above: &'s HigherPriority,
    own: &'s Server,
}

impl Interference<'_> {
    /// `Σ_{X ∈ hp(S)} ⌈(y + J_X)/T_X⌉ C_X`, for `y ≥ 1`.
    fn at(&self, response: u64) -> u64 {
        let own = &self.own;
        self.above.interference(response)
            - (response + release_jitter(own)).div_ceil(own.period) * own.budget
    }
}

/// `r_S(x)`: (H2), which is Mei (5.1) for `x = C_S` and the last server period of (5.4)
/// otherwise, iterated from `x` (`x ≥ 1`). `Err` holds the first iterate above `limit` (a
/// lower bound on `r_S(x)`) when the least fixed point is past it.
fn server_response(interference: Interference<'_>, units: u64, limit: u64) -> Result<u64, u64> {
    let mut response = units;
    loop {
        if response > limit {
            return Err(response);
        }
        let next = units + interference.at(response);
        if next == response {
            return Ok(response);
        }
        response = next;
    }
}

fn analyse_server(
    server: &Server,
    interference: Interference<'_>,
    check: RootCheck,
) -> ServerAnalysis {
    let budget_response_time = server_response(interference, server.budget, server.period).ok();
    let schedulable_at_root = budget_response_time.is_some();
    let tasks = if schedulable_at_root || check == RootCheck::Skipped {
        task_bounds(interference, schedulable_at_root)
    } else {
        vec![ResponseBound::ServerUnschedulable; server.tasks.len()]
    };
    ServerAnalysis {
        name: server.name.clone(),
        budget_response_time,
        schedulable_at_root,
        tasks,
    }
}

/// Every task's bound: (H3) (Mei (5.4) with (5.5) and `J_i = T_S − C_S`), then, for bound
/// tasks in priority order, the smaller of (H3) and (H4) (the same with `J_i = 0`; the
/// carry-in of unbound higher-priority tasks is their own bound, not (5.5)'s `T_S − C_S`).
/// `served`: the server passes (5.1); otherwise (no root check) the (5.4) map is solved by
/// the scan of the module docs.
fn task_bounds(interference: Interference<'_>, served: bool) -> Vec<ResponseBound> {
    let server = interference.own;
    let tasks = &server.tasks;
    let supply = Supply {
        interference,
        served,
    };
    let gap = capacity_gap(server);
    let mut bounds: Vec<ResponseBound> = (0..tasks.len())
        .map(|i| {
            let load = Load {
                wcet: tasks[i].wcet,
                interferers: rta::interferers(tasks, i)
                    .map(|other| (*other, 0))
                    .collect(),
            };
            supply.solve(gap, tasks[i], &load)
        })
        .collect();
    let is_bound = |i: usize| server.bound.get(i).copied().unwrap_or(false);
    let mut by_priority: Vec<usize> = (0..tasks.len()).collect();
    by_priority.sort_by_key(|&i| (tasks[i].priority, i));
    for i in by_priority.into_iter().filter(|&i| is_bound(i)) {
        // Higher-priority tasks' bounds as known so far: final for strictly higher ones
        // (done first), (H3) for equal ones — both valid bounds. Without a bound for an
        // unbound one, (H4) does not apply.
        let interferers: Option<Vec<(FpTask, u64)>> = rta::interfering_indices(tasks, i)
            .map(|j| {
                let other = &tasks[j];
                let carry_in = if is_bound(j) && bounds[j].is_schedulable() {
                    Some(0)
                } else {
                    bounds[j].response_time()
                };
                carry_in.map(|carry_in| (*other, carry_in))
            })
            .collect();
        let Some(interferers) = interferers else {
            continue;
        };
        let load = Load {
            wcet: tasks[i].wcet,
            interferers,
        };
        let refined = supply.solve(0, tasks[i], &load);
        if tighter(&refined, &bounds[i]) {
            bounds[i] = refined;
        }
    }
    bounds
}

/// A bound beats none; a smaller bound (or first iterate past the deadline) beats a larger.
fn tighter(a: &ResponseBound, b: &ResponseBound) -> bool {
    use ResponseBound::{Bounded, ExceedsDeadline};
    match (a, b) {
        (
            Bounded {
                response_time: x, ..
            },
            Bounded {
                response_time: y, ..
            },
        )
        | (ExceedsDeadline { at_least: x }, ExceedsDeadline { at_least: y }) => x < y,
        (Bounded { .. }, _) => true,
        _ => false,
    }
}

/// The level-i load (Mei (5.5)) in a window of length R from the task's release:
/// `L(R) = C_i + Σ_j ⌈(R + c_j)/T_j⌉ C_j` over the interfering tasks j with carry-in `c_j`.
struct Load {
    wcet: u64,
    /// Each interfering task with its carry-in.
    interferers: Vec<(FpTask, u64)>,
}

impl Load {
    fn at(&self, response: u64) -> u64 {
        self.wcet
            + self
                .interferers
                .iter()
                .map(|(task, carry_in)| (response + carry_in).div_ceil(task.period) * task.wcet)
                .sum::<u64>()
    }

    /// The least `R' > R` at which the load can grow (`None`: it never does).
    fn next_step(&self, response: u64) -> Option<u64> {
        // ⌈(R + c)/T⌉ is constant while R + c stays in ((m−1)T, mT].
        self.interferers
            .iter()
            .map(|(task, carry_in)| {
                (response + carry_in).div_ceil(task.period) * task.period - carry_in + 1
            })
            .min()
    }
}

/// The service of one server: how long after the task's release `L` units are delivered.
struct Supply<'s> {
    interference: Interference<'s>,
    /// The server passes (5.1), so `r_S(x) ≤ r_S(C_S) ≤ T_S` and the map is monotone.
    served: bool,
}

impl Supply<'_> {
    /// `S(L) = gap + (k−1)T_S + r_S(x)` with `k = ⌈L/C_S⌉`, `x = L − (k−1)C_S`, or `Err`
    /// with a lower bound on it above `deadline`.
    fn service(&self, gap: u64, load: u64, deadline: u64) -> Result<u64, u64> {
        let server = self.interference.own;
        let periods = load.div_ceil(server.budget);
        let last = load - (periods - 1) * server.budget;
        let before = gap + (periods - 1) * server.period;
        // Served: r_S(last) ≤ r_S(C_S) ≤ T_S, so it always exists within T_S. Not served:
        // no limit but the deadline.
        let limit = if self.served {
            server.period
        } else {
            server.period.max(deadline.saturating_sub(before))
        };
        server_response(self.interference, last, limit)
            .map(|in_last| before + in_last)
            .map_err(|at_least| before + at_least)
    }

    /// The least `R ≤ D_i` with `R = S(L(R))` — Mei (5.4) in the time `R = w + J_i` from
    /// the task's release, with its load (5.5) — or the first value found past `D_i`.
    fn solve(&self, gap: u64, task: FpTask, load: &Load) -> ResponseBound {
        if self.served {
            self.iterate(gap, task, load)
        } else {
            self.scan(gap, task, load)
        }
    }

    /// The fixed-point iteration from `C_i`: the map is monotone when the server is
    /// served (module docs, (H3)), so it rises to the least fixed point.
    fn iterate(&self, gap: u64, task: FpTask, load: &Load) -> ResponseBound {
        let mut response = task.wcet;
        loop {
            let next = match self.service(gap, load.at(response), task.deadline) {
                Ok(next) => next,
                Err(at_least) => return ResponseBound::ExceedsDeadline { at_least },
            };
            if next > task.deadline {
                return ResponseBound::ExceedsDeadline { at_least: next };
            }
            if next == response {
                return bounded(next, task.deadline);
            }
            // The map is monotone and we start below its least fixed point, so `next ≥ response`.
            response = next;
        }
    }

    /// The least fixed point of a map that need not be monotone, stretch by stretch of the
    /// load (module docs, "Without the root check"). Invariant: no `R' < response` is a
    /// fixed point.
    fn scan(&self, gap: u64, task: FpTask, load: &Load) -> ResponseBound {
        let server = self.interference.own;
        let periods = |units: u64| units.div_ceil(server.budget);
        let mut response = task.wcet;
        while response <= task.deadline {
            let here = load.at(response);
            if let Ok(served_by) = self.service(gap, here, task.deadline) {
                if served_by >= response {
                    let there = load.at(served_by);
                    if there == here {
                        return if served_by > task.deadline {
                            ResponseBound::ExceedsDeadline {
                                at_least: served_by,
                            }
                        } else {
                            bounded(served_by, task.deadline)
                        };
                    }
                    if periods(there) == periods(here) {
                        response = served_by;
                        continue;
                    }
                }
            }
            match load.next_step(response) {
                Some(next) => response = next,
                None => break,
            }
        }
        ResponseBound::ExceedsDeadline {
            at_least: response.max(task.deadline + 1),
        }
    }
}

fn bounded(response_time: u64, deadline: u64) -> ResponseBound {
    ResponseBound::Bounded {
        response_time,
        slack: deadline - response_time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::interferes;

    fn server(
        kind: ServerKind,
        budget: u64,
        period: u64,
        priority: u32,
        tasks: Vec<FpTask>,
    ) -> Server {
        Server {
            name: format!("{kind:?}"),
            budget,
            period,
            priority,
            kind,
            tasks,
            bound: Vec::new(),
        }
    }

    /// Two servers, by hand.
    /// S1 = Periodic (C=2, T=5, prio 0); S2 = Periodic (C=3, T=10, prio 1).
    /// r_S2(x) = x + ⌈r/5⌉·2: x=3 → 3+2=5 → 5+2=5 ✓ r(3)=5 ≤ 10; x=1 → 1+2 = 3 → 3.
    /// Task (T=40, C=4) alone in S2: L = 4, k = 2, x = 1:
    /// R = (10 − 3) + 10 + r_S2(1) = 7 + 10 + 3 = 20.
    /// The same with S1 Deferrable: J = 3, r_S2(x) = x + ⌈(r+3)/5⌉·2:
    /// x=1 → 1+2=3 → 1 + ⌈6/5⌉2 = 5 → 1 + ⌈8/5⌉2 = 5 ✓ r(1) = 5; x=3: 3+2=5 → 3+⌈8/5⌉2 = 7
    /// → 3 + ⌈10/5⌉2 = 7 ✓ r(3) = 7 ≤ 10. R = 7 + 10 + 5 = 22.
    #[test]
    fn two_servers_by_hand() {
        let task = vec![FpTask::new(40, 4, 0)];
        let periodic = [
            server(ServerKind::Periodic, 2, 5, 0, vec![]),
            server(ServerKind::Periodic, 3, 10, 1, task.clone()),
        ];
        let result = hierarchical_response_times(&periodic).unwrap();
        assert_eq!(result[1].budget_response_time, Some(5));
        assert_eq!(result[1].tasks[0].response_time(), Some(20));
        let deferrable = [
            server(ServerKind::Deferrable, 2, 5, 0, vec![]),
            server(ServerKind::Periodic, 3, 10, 1, task),
        ];
        let result = hierarchical_response_times(&deferrable).unwrap();
        assert_eq!(result[1].budget_response_time, Some(7));
        assert_eq!(result[1].tasks[0].response_time(), Some(22));
    }

    /// Polling server gap is a full period: C=2, T=5, task (20, 3):
    /// L=3, k=2, x=1: R = 5 + 5 + 1 = 11 (periodic gives 3 + 5 + 1 = 9).
    #[test]
    fn polling_gap_is_a_full_period() {
        let polling = [server(
            ServerKind::Polling,
            2,
            5,
            0,
            vec![FpTask::new(20, 3, 0)],
        )];
        let result = hierarchical_response_times(&polling).unwrap();
        assert_eq!(result[0].tasks[0].response_time(), Some(11));
    }

    /// Local interference: server (C=2, T=4) with tasks hi = (8, 1), lo = (16, 2).
    /// lo: R=2 → L = 2 + ⌈2/8⌉1 = 3, k = 2, x = 1 → R = 2 + 4 + 1 = 7
    ///     → L = 2 + ⌈7/8⌉ = 3 → 7 ✓.
    #[test]
    fn local_higher_priority_tasks_add_load() {
        let s = [server(
            ServerKind::Periodic,
            2,
            4,
            0,
            vec![FpTask::new(8, 1, 0), FpTask::new(16, 2, 1)],
        )];
        let result = hierarchical_response_times(&s).unwrap();
        // hi: L = 1, k = 1, x = 1: R = 2 + 1 = 3.
        assert_eq!(result[0].tasks[0].response_time(), Some(3));
        assert_eq!(result[0].tasks[1].response_time(), Some(7));
    }

    /// A Sporadic Server that can merge replenishments waits up to a whole period, as a
    /// Polling server does: C=2, T=5, task (20, 3): R = 5 + 5 + 1 = 11 (9 without merges).
    #[test]
    fn merging_sporadic_gap_is_a_full_period() {
        let task = vec![FpTask::new(20, 3, 0)];
        let merging = [server(ServerKind::SporadicMerging, 2, 5, 0, task.clone())];
        let plain = [server(ServerKind::Sporadic, 2, 5, 0, task)];
        let bound = |s: &[Server]| hierarchical_response_times(s).unwrap()[0].tasks[0];
        assert_eq!(bound(&merging).response_time(), Some(11));
        assert_eq!(bound(&plain).response_time(), Some(9));
    }

    /// Bound tasks, by hand. Server (C 2, T 5) below a Periodic server (1, 5):
    /// r_S(x) = x + ⌈r/5⌉ → r(1) = 2, r(2) = 3.
    /// hi = (10, 1) bound: L = 1, k = 1 → R = r(1) = 2 (general: G = 3 → 5).
    /// lo = (20, 3) bound: L = 3 + ⌈R/10⌉ (hi bound and meets its deadline: no carry-in):
    /// R = 3 → L = 4, k = 2, x = 2 → R = 5 + r(2) = 8 → L = 4 → 8 ✓
    /// (general: 3 + 5 + 3 = 11 → L = 3 + ⌈11/10⌉ = 5 → 3 + 10 + r(1) = 15 → L = 5 → 15).
    /// With hi unbound, lo carries hi's general bound 5 in: L = 3 + ⌈(R + 5)/10⌉:
    /// R = 3 → L = 4 → 8 → L = 3 + ⌈13/10⌉ = 5, k = 3, x = 1 → R = 10 + 2 = 12 → L = 5 → 12.
    #[test]
    fn bound_tasks_by_hand() {
        let tasks = vec![FpTask::new(10, 1, 0), FpTask::new(20, 3, 1)];
        let system = |bound: Vec<bool>| {
            let mut served = server(ServerKind::Periodic, 2, 5, 1, tasks.clone());
            served.bound = bound;
            let result = hierarchical_response_times(&[
                server(ServerKind::Periodic, 1, 5, 0, vec![]),
                served,
            ])
            .unwrap();
            result[1]
                .tasks
                .iter()
                .map(|b| b.response_time())
                .collect::<Vec<_>>()
        };
        assert_eq!(system(vec![]), vec![Some(5), Some(15)]);
        assert_eq!(system(vec![true, true]), vec![Some(2), Some(8)]);
        assert_eq!(system(vec![false, true]), vec![Some(5), Some(12)]);
        assert_eq!(system(vec![true, false]), vec![Some(2), Some(15)]);
    }

    #[test]
    fn binding_needs_a_release_grid_and_a_multiple_period() {
        let mut sporadic = server(ServerKind::Sporadic, 2, 5, 0, vec![FpTask::new(10, 1, 0)]);
        sporadic.bound = vec![true];
        let mut off_grid = server(ServerKind::Periodic, 2, 5, 0, vec![FpTask::new(12, 1, 0)]);
        off_grid.bound = vec![true];
        let mut short = server(ServerKind::Periodic, 2, 5, 0, vec![FpTask::new(10, 1, 0)]);
        short.bound = vec![true, false];
        for (s, reason) in [
            (sporadic, "a Sporadic Server has no fixed releases"),
            (
                off_grid,
                "its period is not a multiple of the server's period",
            ),
            (short, "`bound` must be empty or have one entry per task"),
        ] {
            assert_eq!(
                hierarchical_response_times(&[s]),
                Err(HierarchyError::BadBound {
                    server: 0,
                    task: if reason.starts_with('`') { 1 } else { 0 },
                    reason
                })
            );
        }
    }

    #[test]
    fn overloaded_root_makes_tasks_unbounded() {
        let servers = [
            server(ServerKind::Periodic, 4, 5, 0, vec![]),
            server(ServerKind::Periodic, 2, 5, 1, vec![FpTask::new(50, 1, 0)]),
        ];
        let result = hierarchical_response_times(&servers).unwrap();
        assert!(!result[1].schedulable_at_root);
        assert_eq!(result[1].tasks[0], ResponseBound::ServerUnschedulable);
    }

    /// Without the root check a served server's bounds are the checked ones: the two
    /// servers of `two_servers_by_hand`, both served.
    #[test]
    fn skipping_the_root_check_changes_nothing_for_served_servers() {
        let servers = [
            server(ServerKind::Deferrable, 2, 5, 0, vec![FpTask::new(10, 1, 0)]),
            server(ServerKind::Periodic, 3, 10, 1, vec![FpTask::new(40, 4, 0)]),
        ];
        assert_eq!(
            hierarchical_response_times_with(&servers, RootCheck::Skipped),
            hierarchical_response_times(&servers)
        );
    }

    /// S1 = Periodic (C 4, T 5, prio 0); S2 = Periodic (C 3, T 5, prio 1), gap 5 − 3 = 2:
    /// r(x) = x + 4⌈r/5⌉: r(1) = 1 → 5 → 5; r(2) = 2 → 6 → 10 → 10;
    /// r(3) = 3 → 7 → 11 → 15 → 15 > 5: S2 fails (5.1), and its tasks get no bound when
    /// it is checked. Skipped: S(L) = 2 + 5(k − 1) + r(x), so S(1) = 7, S(2) = 12,
    /// S(3) = 17, S(4) = 2 + 5 + 5 = 12 — one more unit of load, five less: not monotone
    /// (r(3) = 15 > T + r(1) = 10).
    /// hi = (10, 1): L = 1, R = S(1) = 7.
    /// lo = (100, 2): L(R) = 2 + ⌈R/10⌉. R ∈ [1, 10]: L = 3, S(3) = 17 ∉ [1, 10];
    /// R ∈ [11, 20]: L = 4, S(4) = 12 ∈ [11, 20]: the least solution is 12 (iterating from 2
    /// would go to 17 first, then down to 12).
    #[test]
    fn without_the_root_check_an_unserved_server_gets_the_least_solution() {
        let servers = |tasks| {
            [
                server(ServerKind::Periodic, 4, 5, 0, vec![]),
                server(ServerKind::Periodic, 3, 5, 1, tasks),
            ]
        };
        let tasks = vec![FpTask::new(10, 1, 0), FpTask::new(100, 2, 1)];
        let checked = hierarchical_response_times(&servers(tasks.clone())).unwrap();
        assert!(!checked[1].schedulable_at_root);
        assert_eq!(
            checked[1].tasks,
            vec![ResponseBound::ServerUnschedulable; 2]
        );
        let skipped =
            hierarchical_response_times_with(&servers(tasks), RootCheck::Skipped).unwrap();
        assert!(!skipped[1].schedulable_at_root);
        assert_eq!(skipped[1].budget_response_time, None);
        let bounds: Vec<Option<u64>> = skipped[1].tasks.iter().map(|b| b.response_time()).collect();
        assert_eq!(bounds, vec![Some(7), Some(12)]);
    }

    /// The same servers with hi = (5, 1): hi's R = S(1) = 7 > 5. lo: L(R) = 2 + ⌈R/5⌉, and
    /// in the stretch where L = 2 + m (R ∈ [5m − 4, 5m]) a solution needs S(2 + m) there:
    /// S(3), S(4), … = 17, 12, 17, 22, 17, 22, 27, 22, 27, 32, … never catches up with
    /// [1, 5], [6, 10], [11, 15], …, so (5.4) has no solution (iterating from 2 would cycle
    /// 17 → 22 → 17) and lo gets no bound.
    #[test]
    fn without_the_root_check_no_solution_means_no_bound() {
        let servers = [
            server(ServerKind::Periodic, 4, 5, 0, vec![]),
            server(
                ServerKind::Periodic,
                3,
                5,
                1,
                vec![FpTask::new(5, 1, 0), FpTask::new(100, 2, 1)],
            ),
        ];
        let result = hierarchical_response_times_with(&servers, RootCheck::Skipped).unwrap();
        assert_eq!(
            result[1].tasks,
            vec![
                ResponseBound::ExceedsDeadline { at_least: 7 },
                ResponseBound::ExceedsDeadline { at_least: 101 }
            ]
        );
    }

    /// The least solution of (5.4) by brute force, for a task released at any time in
    /// server `index`: the least `R ≤ D` with `R = G + (k−1)T_S + r_S(x)`, every value
    /// computed from its definition (`None`: no solution up to the deadline).
    fn least_solution_by_brute_force(servers: &[Server], index: usize, i: usize) -> Option<u64> {
        let me = &servers[index];
        let task = me.tasks[i];
        // r_S(x), the least fixed point of y = x + Σ ⌈(y + J_X)/T_X⌉ C_X, if below `cap`.
        let r = |x: u64, cap: u64| -> Option<u64> {
            let mut y = x;
            while y <= cap {
                let next = x + servers
                    .iter()
                    .enumerate()
                    .filter(|&(j, s)| j != index && s.priority <= me.priority)
                    .map(|(_, s)| {
                        let jitter = if s.kind == ServerKind::Deferrable {
                            s.period - s.budget
                        } else {
                            0
                        };
                        (y + jitter).div_ceil(s.period) * s.budget
                    })
                    .sum::<u64>();
                if next == y {
                    return Some(y);
                }
                y = next;
            }
            None
        };
        (1..=task.deadline).find(|&response| {
            let load = task.wcet
                + me.tasks
                    .iter()
                    .enumerate()
                    .filter(|&(j, t)| j != i && t.priority <= task.priority)
                    .map(|(_, t)| response.div_ceil(t.period) * t.wcet)
                    .sum::<u64>();
            let k = load.div_ceil(me.budget);
            let before = (me.period - me.budget) + (k - 1) * me.period;
            let x = load - (k - 1) * me.budget;
            r(x, task.deadline).is_some_and(|y| before + y == response)
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Without the root check, every task's bound is the least solution of (5.4) — found
        /// by the iteration for served servers and by the scan for the others, whether or
        /// not the map is monotone — and with it, a served server's bounds are the same.
        #[test]
        fn skipped_root_check_gives_the_least_solution(
            shape in proptest::collection::vec((2u64..=12, 1u64..=12, proptest::bool::ANY), 2..=3),
            tasks in proptest::collection::vec((5u64..=60, 1u64..=4, 0u32..=2), 1..=3),
        ) {
            let n = shape.len();
            let servers: Vec<Server> = shape
                .iter()
                .enumerate()
                .map(|(k, &(period, budget, deferrable))| Server {
                    name: format!("S{k}"),
                    budget: 1 + (budget - 1) % period,
                    period,
                    priority: k as u32,
                    kind: if deferrable { ServerKind::Deferrable } else { ServerKind::Periodic },
                    tasks: if k == n - 1 {
                        tasks
                            .iter()
                            .map(|&(p, e, prio)| FpTask::new(p, e.min(p), prio))
                            .collect()
                    } else {
                        vec![FpTask::new(60, 1, 0)]
                    },
                    bound: Vec::new(),
                })
                .collect();
            let skipped = hierarchical_response_times_with(&servers, RootCheck::Skipped).unwrap();
            let checked = hierarchical_response_times(&servers).unwrap();
            for (index, (unchecked, checked)) in skipped.iter().zip(&checked).enumerate() {
                for (i, bound) in unchecked.tasks.iter().enumerate() {
                    proptest::prop_assert_eq!(
                        bound.response_time(),
                        least_solution_by_brute_force(&servers, index, i),
                        "server {} task {}", index, i
                    );
                }
                if checked.schedulable_at_root {
                    proptest::prop_assert_eq!(&unchecked.tasks, &checked.tasks);
                }
            }
        }
    }

    /// (H2)'s iteration as it was before the root's grouping (module docs, "The root at
    /// scale"): every server's term summed one by one on every iterate, `hp(S)` chosen by
    /// [`interferes`]. The reference for `grouped_root_sums_are_the_definition`.
    fn server_response_by_definition(
        servers: &[Server],
        index: usize,
        units: u64,
        limit: u64,
    ) -> Result<u64, u64> {
        let me = &servers[index];
        let mut response = units;
        loop {
            if response > limit {
                return Err(response);
            }
            let next = units
                + servers
                    .iter()
                    .enumerate()
                    .filter(|&(j, other)| j != index && interferes(other.priority, me.priority))
                    .map(|(_, other)| {
                        (response + release_jitter(other)).div_ceil(other.period) * other.budget
                    })
                    .sum::<u64>();
            if next == response {
                return Ok(response);
            }
            response = next;
        }
    }

    fn kind_of(code: u8) -> ServerKind {
        match code % 5 {
            0 => ServerKind::Periodic,
            1 => ServerKind::Deferrable,
            2 => ServerKind::Polling,
            3 => ServerKind::Sporadic,
            _ => ServerKind::SporadicMerging,
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// The grouped sums of the root give `r_S(x)` exactly as summing server by server
        /// does — the least fixed point, or the same first iterate past the limit — for
        /// every server, every `x` up to its period and limits below, at and above it, on
        /// random sets with shared priorities, equal and distinct periods and every kind;
        /// and the whole analysis, checked and not, finds each server's `r_S(C_S)` so.
        #[test]
        fn grouped_root_sums_are_the_definition(
            shape in proptest::collection::vec(
                (1u64..=40, 1u64..=40, 0u32..=4, 0u8..5), 1..=14),
        ) {
            let servers: Vec<Server> = shape
                .iter()
                .enumerate()
                .map(|(k, &(period, budget, priority, kind))| Server {
                    name: format!("S{k}"),
                    budget: 1 + (budget - 1) % period,
                    period,
                    priority,
                    kind: kind_of(kind),
                    tasks: vec![FpTask::new(4 * period, 1, 0)],
                    bound: Vec::new(),
                })
                .collect();
            for (index, server) in servers.iter().enumerate() {
                // Only the servers at or above S's level: rebuild the set for it.
                let mut level = HigherPriority::new(&servers);
                for other in servers.iter().filter(|o| interferes(o.priority, server.priority)) {
                    level.insert(other);
                }
                for response in 1..=160 {
                    proptest::prop_assert_eq!(
                        level.periodic_by_layers(response),
                        level.periodic_by_groups(response)
                    );
                }
                let interference = Interference { above: &level, own: server };
                for units in 1..=server.period {
                    for limit in [units, server.period, 3 * server.period, 200] {
                        proptest::prop_assert_eq!(
                            server_response(interference, units, limit),
                            server_response_by_definition(&servers, index, units, limit),
                            "server {} x {} limit {}", index, units, limit
                        );
                    }
                }
            }
            for check in [RootCheck::Checked, RootCheck::Skipped] {
                let result = hierarchical_response_times_with(&servers, check).unwrap();
                for (index, (analysis, server)) in result.iter().zip(&servers).enumerate() {
                    let reference =
                        server_response_by_definition(&servers, index, server.budget, server.period)
                            .ok();
                    proptest::prop_assert_eq!(analysis.budget_response_time, reference);
                    proptest::prop_assert_eq!(&analysis.name, &server.name);
                }
            }
        }
    }

    #[test]
    fn invalid_input_is_typed() {
        let bad = [server(ServerKind::Periodic, 6, 5, 0, vec![])];
        assert_eq!(
            hierarchical_response_times(&bad),
            Err(HierarchyError::BadServer {
                server: 0,
                budget: 6,
                period: 5
            })
        );
    }
}
