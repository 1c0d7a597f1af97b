//! Global EDF over budget-keeping servers (RTDS VCPUs) on m processors: the test of
//! Bertogna, Cirinei and Lipari, and why it holds for servers that keep unused budget to
//! the end of their period.
//!
//! Source: M. Bertogna, M. Cirinei, G. Lipari, "Improved schedulability analysis of EDF on
//! multiprocessor platforms", ECRTS 2005 (Theorem 2, the EDF test with the interference of
//! each task bounded by `D_k − C_k + 1`). `docs/analysis.md`, "Many pcpus", says where it
//! is used.
//!
//! # The test
//! Servers `(Π_i, Θ_i)`, deadline = period, scheduled by global EDF on `m` processors in
//! integer time. With `W_i(L) = ⌊L/Π_i⌋·Θ_i + min(Θ_i, L mod Π_i)` (the most server i can run
//! in a window of length L whose end is a deadline of its own, deadlines aligned to the
//! window's end), server k gets its budget in every period if
//!
//! ```text
//! Σ_{i≠k} min(W_i(Π_k), Π_k − Θ_k + 1)  <  m·(Π_k − Θ_k + 1)
//! ```
//!
//! For `m = 1` this is `Θ_k + Σ_{i≠k} W_i(Π_k) ≤ Π_k`.
//!
//! # Why it holds for servers that keep their budget
//! An RTDS VCPU is not a periodic task: it keeps unused budget until its deadline, so a
//! VCPU that wakes late can claim all of its budget just before its deadline, and
//! `Σ Θ/Π ≤ 1` is not enough (`crates/analyze/tests/agreement.rs`: a (4, 1) VCPU misses
//! behind a (14, 4) VCPU that woke late; the example of [`bcl_served`] shows this test
//! refuses it). The interference bound above does not depend on release times, only on
//! three facts that RTDS keeps:
//! 1. each server runs at most its budget per period (RTDS charges every unit it runs);
//! 2. a server's budget of one period can only be used before that period's deadline (RTDS
//!    drops the budget and moves the deadline on at each period boundary), and its periods
//!    are back to back, so its deadlines are at least `Π_i` apart;
//! 3. EDF: a server with budget and work runs unless m servers with deadlines no later than
//!    its own run (ties count as interference).
//!
//! Let server k be backlogged (its guest has work) from some `t0` inside its period
//! `[r_k, d_k)` to `d_k`, with budget `b` left at `t0`. The periodic resource model asks for
//! `min(b, (d_k − t0) − (Π_k − Θ_k))` more units by `d_k` (the budget may all have been
//! supplied before `t0`, so no more is owed than what fits after a gap of `Π_k − Θ_k`).
//! If k gets less, it had budget and work but did not run for at least `Π_k − Θ_k + 1`
//! units inside `[t0, d_k)`, and at each of those instants all m processors ran servers
//! with deadlines `≤ d_k` (fact 3). By facts 1 and 2, a server i runs at most `W_i(Π_k)`
//! with such deadlines inside `[r_k, d_k)` — the jobs whose deadlines fall in `(r_k, d_k]`,
//! the earliest one only for what fits after `r_k` — and at most `Π_k − Θ_k + 1` of it
//! during those instants counts. So the sum above is at least `m·(Π_k − Θ_k + 1)`, which the
//! test excludes. A server backlogged over a whole period (`t0 = r_k`, `b = Θ_k`) gets all
//! of `Θ_k`. So every server supplies its guest at least the periodic resource model's
//! `sbf`, whenever it wakes: the one-pcpu interface analysis holds on top of it.
//!
//! Nothing here depends on the servers being released at the same time, or at all: a
//! server that sleeps through a period takes nothing from the others.

use crate::prm::Interface;

/// The most a server `(period, budget)` runs in a window of length `length` whose end is
/// one of its deadlines, deadlines aligned to the window's end: `⌊L/Π⌋·Θ + min(Θ, L mod Π)`.
pub fn window_workload(server: Interface, length: u64) -> u128 {
    if server.period == 0 {
        return 0;
    }
    let full = u128::from(length / server.period) * u128::from(server.budget);
    full + u128::from(server.budget.min(length % server.period))
}

/// Per server, in the order given: whether global EDF on `processors` processors gives it
/// its budget in every period by the test of Bertogna, Cirinei and Lipari (module docs). A
/// server with a budget above its period, or any server when `processors` is 0, is not
/// served; a budget of 0 is.
///
/// ```
/// use rtvmm_analysis::bcl::bcl_served;
/// use rtvmm_analysis::Interface;
///
/// // The agreement test's counter-example: (4, 1) behind (14, 4) on one pcpu. Σ Θ/Π < 1,
/// // but W_(14,4)(4) = min(4, 4) = 4 and 4 ≥ 1·(4 − 1 + 1): refused.
/// let servers = [Interface::new(4, 1), Interface::new(14, 4)];
/// assert_eq!(bcl_served(&servers, 1), vec![false, true]);
/// ```
pub fn bcl_served(servers: &[Interface], processors: u64) -> Vec<bool> {
    (0..servers.len())
        .map(|k| bcl_server_served(servers, k, processors))
        .collect()
}

/// The test for server `k` of `servers` alone (module docs).
pub fn bcl_server_served(servers: &[Interface], k: usize, processors: u64) -> bool {
    let own = servers[k];
    if processors == 0 || own.budget > own.period {
        return false;
    }
    let slack = u128::from(own.period - own.budget) + 1;
    let interference: u128 = servers
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != k)
        .map(|(_, &other)| window_workload(other, own.period).min(slack))
        .sum();
    interference < u128::from(processors) * slack
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(list: &[(u64, u64)]) -> Vec<Interface> {
        list.iter().map(|&(p, b)| Interface::new(p, b)).collect()
    }

    /// `W_i(L)`: (14, 4) over 4 → 0·4 + min(4, 4) = 4; (10, 2) over 20 → 2·2 + min(2, 0)
    /// = 4; (10, 3) over 25 → 2·3 + min(3, 5) = 9; (10, 3) over 21 → 6 + min(3, 1) = 7.
    #[test]
    fn window_workload_by_hand() {
        assert_eq!(window_workload(Interface::new(14, 4), 4), 4);
        assert_eq!(window_workload(Interface::new(10, 2), 20), 4);
        assert_eq!(window_workload(Interface::new(10, 3), 25), 9);
        assert_eq!(window_workload(Interface::new(10, 3), 21), 7);
    }

    /// The agreement test's counter-example is refused for the (4, 1) server, though its
    /// bandwidth sum 1/4 + 4/14 is far below 1. The (14, 4) server: L = 11, W_(4,1)(14) =
    /// 3·1 + min(1, 2) = 4 < 11: served.
    #[test]
    fn budget_keeping_counter_example_is_refused() {
        assert_eq!(
            bcl_served(&servers(&[(4, 1), (14, 4)]), 1),
            vec![false, true]
        );
    }

    /// One pcpu, (10, 2) and (20, 5): for (10, 2), L = 9 and W_(20,5)(10) = min(5, 10) = 5,
    /// 2 + 5 ≤ 10; for (20, 5), L = 16 and W_(10,2)(20) = 4, 5 + 4 ≤ 20. Both served. With
    /// (10, 6) instead of (10, 2): W_(20,5)(10) = 5 > 10 − 6 = 4 → (10, 6) refused; (20, 5):
    /// W_(10,6)(20) = 12 < 16 → served.
    #[test]
    fn one_pcpu_by_hand() {
        assert_eq!(
            bcl_served(&servers(&[(10, 2), (20, 5)]), 1),
            vec![true, true]
        );
        assert_eq!(
            bcl_served(&servers(&[(10, 6), (20, 5)]), 1),
            vec![false, true]
        );
    }

    /// Two pcpus, three VCPUs (10, 5): L = 6, each other contributes min(5, 6) = 5, 10 <
    /// 2·6 = 12 → all served (bandwidth 1.5). Three VCPUs (10, 6): L = 5, each other
    /// min(6, 5) = 5, 10 < 10 fails → all refused — and rightly: released together, two run
    /// [0, 6) and the third gets only [6, 10), 4 < 6.
    #[test]
    fn two_pcpus_three_vcpus_by_hand() {
        assert_eq!(bcl_served(&servers(&[(10, 5); 3]), 2), vec![true; 3]);
        assert_eq!(bcl_served(&servers(&[(10, 6); 3]), 2), vec![false; 3]);
        // On three pcpus each has one of its own.
        assert_eq!(bcl_served(&servers(&[(10, 6); 3]), 3), vec![true; 3]);
    }

    /// A full server (budget = period) alone on a pcpu is served (L = 1, no interference);
    /// next to (100, 1) neither is: (5, 5) has L = 1 and min(W, 1) = 1 ≮ 1, and (100, 1)
    /// has L = 100 and W_(5,5)(100) = 100 ≮ 100 (the full server takes every unit). Over-full
    /// and zero pcpus are refused; a budget of 0 asks for nothing.
    #[test]
    fn full_servers_and_degenerate_input() {
        assert_eq!(bcl_served(&servers(&[(5, 5)]), 1), vec![true]);
        assert_eq!(
            bcl_served(&servers(&[(5, 5), (100, 1)]), 1),
            vec![false, false]
        );
        assert_eq!(bcl_served(&servers(&[(5, 6)]), 1), vec![false]);
        assert_eq!(bcl_served(&servers(&[(5, 1)]), 0), vec![false]);
        assert_eq!(bcl_served(&servers(&[(5, 0), (5, 5)]), 1), vec![true, true]);
    }
}
