//! The exact schedulability tests on a supply bound, in work that does not grow with the
//! ratio of the periods, and never allocating.
//!
//! Two tests, both exact for the periodic resource model, and the horizons they need:
//!
//! * **Lemma 1 (fixed priority) as a fixed point.** Task i passes iff some `t ∈ (0, d_i]` has
//!   `sbf(t) ≥ rbf_i(t)`. Rather than try every step of `rbf_i` (one per job of every
//!   higher-priority task up to `d_i`: 43 million for a 2 ms task beside a one-day task), the
//!   least such t is found as the least fixed point of `t ↦ sbf⁻¹(rbf_i(t))`
//!   ([`crate::sbf_inverse`]), iterated from `sbf⁻¹(Σ_{k≤i} e_k)` — the response-time
//!   recurrence of Joseph & Pandya (1986) with the supply in place of the processor
//!   (the usual form for a periodic resource; e.g. Easwaran, Anand & Lee, RTSS 2007).
//! * **EDF, `dbf(t) ≤ sbf(t)` for all t**, by QPA — H. Zhang and A. Burns, "Schedulability
//!   Analysis for Real-Time Systems with EDF Scheduling", IEEE Trans. Computers 58(9), 2009 —
//!   with sbf in place of the processor: walk down from the horizon, jumping from t to the
//!   last dbf step before `sbf⁻¹(dbf(t))`.
//!
//! # Why the fixed point decides Lemma 1
//! Let `F(t) = sbf⁻¹(rbf_i(t))`, non-decreasing because rbf_i and sbf⁻¹ are, and let `t*` be
//! the least `t > 0` with `sbf(t) ≥ rbf_i(t)`. Every `t ≤ t*` has `F(t) ≤ F(t*) ≤ t*`; the
//! start `t₀ = sbf⁻¹(Σ e_k)` is `≤ t*` (`rbf_i(t*) ≥ Σ e_k`) and `≤ F(t₀)`. So the iterates
//! rise, stay `≤ t*`, and stop at a `t` with `F(t) ≤ t`, i.e. `sbf(t) ≥ rbf_i(t)`: that t is
//! `t*`. Task i passes iff the iteration stops at or before `d_i`. Each iterate that does not
//! stop takes in at least one more job, so the iteration count is at most the number of
//! rbf_i's steps, and in practice a handful.
//!
//! # Why QPA against sbf is exact
//! If `dbf(t) ≤ sbf(t)` and `x = sbf⁻¹(dbf(t)) ≤ t`, then every `t' ∈ [x, t]` has
//! `dbf(t') ≤ dbf(t) ≤ sbf(x) ≤ sbf(t')` (both functions non-decreasing), so the next
//! instant that can fail is the last dbf step before x (dbf is constant between its steps and
//! sbf non-decreasing, so only steps can fail). Each jump goes strictly down; the walk ends
//! below the first deadline, or at the first t it finds with `dbf(t) > sbf(t)`.
//!
//! # Horizons (where a violation must show if there is one)
//! With `U` the utilisation and `κ = Θ/Π`:
//! * `κ < U`: it fails (over long intervals demand grows at rate U, supply at rate κ).
//! * `κ > U`: `dbf(t) ≤ U·t + Σ(p_i − d_i)U_i` and `sbf(t) ≥ κ(t − 2(Π − Θ))` (lsbf), so only
//!   `t < (Σ(p_i − d_i)U_i + 2κ(Π − Θ)) / (κ − U)` can fail.
//! * `κ = U < 1`, general form: it fails. At `t = kH` (H the hyperperiod, `d_i ≤ p_i`) every
//!   task has exactly `kH/p_i` deadlines, so `dbf(kH) = U·kH`, while
//!   `sbf(kH) ≤ κ(kH − (Π − Θ)) < κ·kH`.
//! * `κ = U`, harmonic form or `Θ = Π`: the least multiple `B = mΠ` with `W(B) ≤ mΘ`, where
//!   `W(t) = Σ ⌈t/p_i⌉ e_i` (it exists: `m = H/Π` qualifies). Jobs released before B count at
//!   most `W(B)` and the rest at most `dbf(t − B)`, so `dbf(t) ≤ W(B) + dbf(t − B)`; and a
//!   window of length t from a period boundary splits at the boundary B into two such windows,
//!   so `sbf(t) ≥ sbf(B) + sbf(t − B) ≥ W(B) + sbf(t − B)`. A violation at `t > B` thus implies
//!   one at `t − B`: if any, there is one in `(0, B]`.
//!
//! # Work
//! A step is one task's term evaluated. Every test takes a step allowance and, past it,
//! answers "undecided" rather than run on; callers treat that as a failure (the
//! safe side) and say the result is not proven optimal, or report the limit.

use crate::prm::{sbf, sbf_inverse, SupplyForm};
use crate::workload::Task;

/// The least supply a component gets in any interval of length t.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Supply {
    /// A periodic resource `(Π, Θ)` with the sbf of `form`.
    Periodic {
        form: SupplyForm,
        period: u64,
        budget: u64,
    },
    /// `max(0, t − delay)`: above every general sbf with `Π − Θ ≥ delay/2` (used for κ = 1).
    Delayed(u64),
}

impl Supply {
    /// `sbf(t)`.
    fn at(self, t: u64) -> u64 {
        match self {
            Supply::Periodic {
                form,
                period,
                budget,
            } => sbf(form, period, budget, t),
            Supply::Delayed(delay) => t.saturating_sub(delay),
        }
    }

    /// The least t with `sbf(t) ≥ demand`; `None` if there is none in `u64`.
    fn inverse(self, demand: u64) -> Option<u64> {
        match self {
            Supply::Periodic {
                form,
                period,
                budget,
            } => sbf_inverse(form, period, budget, demand),
            Supply::Delayed(delay) if demand > 0 => demand.checked_add(delay),
            Supply::Delayed(_) => Some(0),
        }
    }
}

/// A test's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome<T> {
    /// The test passes.
    Pass,
    /// The test fails, with a witness (for EDF: an instant where demand exceeds supply).
    Fail(T),
    /// The step allowance ran out first.
    Undecided,
}

/// A step allowance: `limit` task terms, of which `used` are spent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Steps {
    pub used: u64,
    pub limit: u64,
}

impl Steps {
    pub(crate) fn new(limit: u64) -> Steps {
        Steps { used: 0, limit }
    }

    /// Spends `n` steps; false once the allowance is exceeded.
    fn take(&mut self, n: usize) -> bool {
        self.used = self.used.saturating_add(n as u64);
        self.used <= self.limit
    }
}

/// `Σ ⌈t/p_k⌉ e_k` over `tasks`, saturating at `u64::MAX`.
fn request(tasks: &[Task], t: u64) -> u64 {
    let sum: u128 = tasks
        .iter()
        .map(|task| t.div_ceil(task.period) as u128 * task.wcet as u128)
        .sum();
    u64::try_from(sum).unwrap_or(u64::MAX)
}

/// `dbf(t)`, saturating at `u64::MAX` (a saturated demand exceeds every supply ≤ t).
pub(crate) fn demand(tasks: &[Task], t: u64) -> u64 {
    let sum: u128 = tasks
        .iter()
        .filter(|task| t >= task.deadline)
        .map(|task| ((t - task.deadline) / task.period + 1) as u128 * task.wcet as u128)
        .sum();
    u64::try_from(sum).unwrap_or(u64::MAX)
}

/// The last dbf step (`d_i + k·p_i`) at or before `t`, if any.
fn last_step_at_most(tasks: &[Task], t: u64) -> Option<u64> {
    tasks
        .iter()
        .filter(|task| task.deadline <= t)
        .map(|task| t - (t - task.deadline) % task.period)
        .max()
}

/// The first task (in the given order) with a deadline at `t`; the last task if none.
pub(crate) fn task_due_at(tasks: &[Task], t: u64) -> usize {
    tasks
        .iter()
        .position(|task| t >= task.deadline && (t - task.deadline).is_multiple_of(task.period))
        .unwrap_or(tasks.len() - 1)
}

/// Lemma 1 for a task with deadline `deadline` against `interfering` (itself and the tasks
/// of higher or equal priority, [`crate::Workload::interfering`]): is there a
/// `t ∈ (0, deadline]` with `sbf(t) ≥ rbf_i(t)`? Exact, by the least fixed point (module
/// docs).
pub(crate) fn lemma1(
    interfering: &[Task],
    deadline: u64,
    supply: Supply,
    steps: &mut Steps,
) -> Outcome<()> {
    let first: u64 = request(interfering, 1);
    let Some(mut t) = supply.inverse(first) else {
        return Outcome::Fail(());
    };
    loop {
        if t > deadline {
            return Outcome::Fail(());
        }
        if !steps.take(interfering.len()) {
            return Outcome::Undecided;
        }
        match supply.inverse(request(interfering, t)) {
            Some(next) if next <= t => return Outcome::Pass,
            Some(next) => t = next,
            None => return Outcome::Fail(()),
        }
    }
}

/// QPA: is `dbf(t) ≤ sbf(t)` for every `t ≤ horizon`? `Fail(t)` gives an instant where it is
/// not (not necessarily the first; see [`earliest_violation`]).
pub(crate) fn qpa(tasks: &[Task], supply: Supply, horizon: u64, steps: &mut Steps) -> Outcome<u64> {
    let Some(mut t) = last_step_at_most(tasks, horizon) else {
        return Outcome::Pass;
    };
    loop {
        if !steps.take(2 * tasks.len()) {
            return Outcome::Undecided;
        }
        let needed = demand(tasks, t);
        if needed > supply.at(t) {
            return Outcome::Fail(t);
        }
        // sbf(t) ≥ dbf(t), so the inverse exists and is ≤ t; nothing in [x, t] can fail.
        let x = supply.inverse(needed).unwrap_or(t);
        match x
            .checked_sub(1)
            .and_then(|below| last_step_at_most(tasks, below))
        {
            Some(next) => t = next,
            None => return Outcome::Pass,
        }
    }
}

/// The first `count` dbf steps up to `horizon`, in increasing order: the first where
/// `dbf(t) > sbf(t)`, if any. A candidate budget just above the utilisation usually fails at
/// one of the first deadlines, where its blackout shows, while QPA would reach them only at
/// the end of a walk down from a very long horizon.
pub(crate) fn early_violation(
    tasks: &[Task],
    supply: Supply,
    horizon: u64,
    count: usize,
    steps: &mut Steps,
) -> Option<u64> {
    let mut next: Vec<u64> = tasks.iter().map(|task| task.deadline).collect();
    let mut needed = 0u64;
    for _ in 0..count {
        if !steps.take(tasks.len()) {
            return None;
        }
        let t = *next.iter().min()?;
        if t > horizon {
            return None;
        }
        for (due, task) in next.iter_mut().zip(tasks) {
            if *due == t {
                needed = needed.saturating_add(task.wcet);
                *due = due.saturating_add(task.period);
            }
        }
        if needed > supply.at(t) {
            return Some(t);
        }
    }
    None
}

/// Given a violation at `t`, the first one: QPA again below each violation found, until it
/// passes. With the allowance exhausted, the earliest violation found so far.
pub(crate) fn earliest_violation(
    tasks: &[Task],
    supply: Supply,
    mut t: u64,
    steps: &mut Steps,
) -> u64 {
    while let Some(below) = t.checked_sub(1) {
        match qpa(tasks, supply, below, steps) {
            Outcome::Fail(earlier) => t = earlier,
            Outcome::Pass | Outcome::Undecided => break,
        }
    }
    t
}

/// The least multiple `B = mΠ` with `Σ ⌈B/p_i⌉ e_i ≤ mΘ` (module docs, `κ = U`), if it is
/// at most `limit` and found within the allowance.
pub(crate) fn busy_period_on_grid(
    tasks: &[Task],
    period: u64,
    budget: u64,
    limit: u64,
    steps: &mut Steps,
) -> Option<u64> {
    let total = request(tasks, 1);
    let mut periods = total.div_ceil(budget.max(1));
    loop {
        let length = periods.checked_mul(period).filter(|&b| b <= limit)?;
        if !steps.take(tasks.len()) {
            return None;
        }
        let needed = request(tasks, length).div_ceil(budget.max(1));
        if needed <= periods {
            return Some(length);
        }
        periods = needed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demand::rbf;
    use crate::workload::Workload;

    fn periodic(form: SupplyForm, period: u64, budget: u64) -> Supply {
        Supply::Periodic {
            form,
            period,
            budget,
        }
    }

    /// W = {(7,2), (8,1), (10,1)} on Γ = (5, 4), general sbf (blackout 2, then 4 per 5):
    /// task 3: rbf_3 = 4 on (0, 7]; sbf⁻¹(4) = 2 + 4 = 6; rbf_3(6) = 4 → t* = 6 ≤ 10: passes.
    /// On (5, 3) (blackout 4): sbf⁻¹(4) = 4 + 5 + 1 = 10; rbf_3(10) = 2·2 + 2 + 1 = 7;
    /// sbf⁻¹(7) = 4 + 10 + 1 = 15 > 10: fails. (Matches `min_exec_of_the_worked_example`.)
    #[test]
    fn lemma1_by_hand() {
        let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
        let mut steps = Steps::new(1000);
        let pass = lemma1(
            w.interfering(2),
            10,
            periodic(SupplyForm::General, 5, 4),
            &mut steps,
        );
        assert_eq!(pass, Outcome::Pass);
        let fail = lemma1(
            w.interfering(2),
            10,
            periodic(SupplyForm::General, 5, 3),
            &mut steps,
        );
        assert_eq!(fail, Outcome::Fail(()));
        assert_eq!(rbf(&w, 2, 10), 7);
    }

    /// The fixed point against every integer t, on many small cases.
    #[test]
    fn lemma1_matches_every_t() {
        let sets: [&[(u64, u64)]; 4] = [
            &[(7, 2), (8, 1), (10, 1)],
            &[(4, 1), (6, 2), (12, 3)],
            &[(3, 1), (5, 2), (15, 1)],
            &[(2, 1), (9, 2)],
        ];
        for pairs in sets {
            let w = Workload::from_pairs(pairs).unwrap();
            for period in 1..12 {
                for budget in 0..=period {
                    for form in [SupplyForm::General, SupplyForm::Harmonic] {
                        for i in 0..w.len() {
                            let expected = (1..=w.tasks()[i].deadline)
                                .any(|t| sbf(form, period, budget, t) >= rbf(&w, i, t));
                            let mut steps = Steps::new(10_000);
                            let got = lemma1(
                                w.interfering(i),
                                w.tasks()[i].deadline,
                                periodic(form, period, budget),
                                &mut steps,
                            );
                            assert_eq!(
                                got == Outcome::Pass,
                                expected,
                                "{pairs:?} {period} {budget} {form:?} {i}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// QPA against the definition (every integer t up to a long horizon), and the earliest
    /// violation against a scan.
    #[test]
    fn qpa_matches_every_t() {
        let sets: [&[(u64, u64, u64)]; 3] = [
            &[(4, 1, 4), (8, 2, 8)],
            &[(5, 1, 3), (10, 2, 10)],
            &[(6, 2, 4), (9, 1, 9), (12, 2, 7)],
        ];
        for triples in sets {
            let w = Workload::new(
                triples
                    .iter()
                    .map(|&(p, e, d)| Task::with_deadline(p, e, d)),
            )
            .unwrap();
            for period in 1..10 {
                for budget in 1..=period {
                    let supply = periodic(SupplyForm::General, period, budget);
                    let horizon = 200;
                    let first_bad = (1..=horizon).find(|&t| demand(w.tasks(), t) > supply.at(t));
                    let mut steps = Steps::new(100_000);
                    // The prefix scan finds the first violation when it is among the first
                    // steps, and nothing otherwise.
                    let early = early_violation(w.tasks(), supply, horizon, 3, &mut steps);
                    if let Some(t) = early {
                        assert_eq!(Some(t), first_bad);
                    }
                    match qpa(w.tasks(), supply, horizon, &mut steps) {
                        Outcome::Pass => assert_eq!(first_bad, None),
                        Outcome::Fail(t) => {
                            assert!(demand(w.tasks(), t) > supply.at(t));
                            let first = earliest_violation(w.tasks(), supply, t, &mut steps);
                            assert_eq!(Some(first), first_bad);
                        }
                        Outcome::Undecided => panic!("allowance too small"),
                    }
                }
            }
        }
    }

    /// The allowance is honoured: one task term per step.
    #[test]
    fn undecided_past_the_allowance() {
        let w = Workload::from_pairs(&[(2, 1), (1 << 30, 1 << 20)]).unwrap();
        // Γ = (1, 1): t ← ⌈t/2⌉ + 2^20 converges to 2^21 in about 21 iterations of 2 terms.
        let full = periodic(SupplyForm::General, 1, 1);
        assert_eq!(
            lemma1(
                w.interfering(1),
                w.tasks()[1].deadline,
                full,
                &mut Steps::new(10)
            ),
            Outcome::Undecided
        );
        let mut steps = Steps::new(1000);
        assert_eq!(
            lemma1(w.interfering(1), w.tasks()[1].deadline, full, &mut steps),
            Outcome::Pass
        );
        assert!(steps.used <= 2 * 25, "{} steps", steps.used);
    }

    /// B for κ = U on the grid, by hand: W = {(4,1), (8,2)} (U = 1/2), Γ = (2, 1) (κ = 1/2).
    /// W(t) = ⌈t/4⌉ + 2⌈t/8⌉ counts the jobs released in [0, t). Start m = ⌈3/1⌉ = 3:
    /// W(6) = 2 + 2 = 4 > 3 → m = 4: W(8) = 2 + 2 = 4 ≤ 4 → B = 8 (the hyperperiod).
    #[test]
    fn busy_period_on_the_grid() {
        let w = Workload::from_pairs(&[(4, 1), (8, 2)]).unwrap();
        let mut steps = Steps::new(1000);
        assert_eq!(
            busy_period_on_grid(w.tasks(), 2, 1, 1000, &mut steps),
            Some(8)
        );
        assert_eq!(busy_period_on_grid(w.tasks(), 2, 1, 7, &mut steps), None);
    }
}
