//! What the globally scheduling policies (RTDS, Credit, Deferrable, Sporadic) share on a
//! pool of several pcpus: each VCPU's hard affinity, and the choice of the pcpus to
//! "tickle" (Xen's `runq_tickle` in `xen/common/sched/rt.c`).
//!
//! # Tickling
//! A policy describes, per pcpu, the key of what it runs (`None`: it idles, or what it runs
//! is no longer eligible and leaves at its next `do_schedule`), and lists the eligible
//! VCPUs that run nowhere, most urgent first, each with its affinity. For each of those in
//! turn: a pcpu of its affinity that idles (the lowest index) is named; else the pcpu of its
//! affinity that runs the least urgent VCPU, if the waiting VCPU's key beats that one's.
//! Each pcpu is named once (Xen's `prv->tickled`), so a second waiting VCPU looks further.
//!
//! Why it converges: a named pcpu's `do_schedule` picks the most urgent eligible VCPU
//! allowed there and running nowhere else, which is at least as urgent as the VCPU that
//! named it; so every reschedule a tickle causes makes what that pcpu runs strictly more
//! urgent (or ends an idle), and nothing else changes.

use crate::cpuset::CpuSet;
use crate::model::VcpuId;
use crate::policy::table::VcpuTable;

/// A VCPU pinned away from the pcpu it runs on stops there at once (the machine
/// deschedules it; see `Machine::pin`): that pcpu's current decision becomes IDLE until it
/// decides again.
pub fn stop_outside<'a>(
    current: impl IntoIterator<Item = &'a mut Option<VcpuId>>,
    vcpu: VcpuId,
    affinity: CpuSet,
) {
    for (p, c) in current.into_iter().enumerate() {
        if *c == Some(vcpu) && !affinity.contains(p as u32) {
            *c = None;
        }
    }
}

/// The pcpus (local indices `0..pcpus`) that must reschedule: see the module note.
/// `running(p)` is the key of what pcpu p runs (`None`: idle, or not eligible any more);
/// `waiting` are the eligible VCPUs running nowhere, most urgent first, with their
/// affinity. A smaller key is more urgent; a waiting VCPU preempts only a strictly greater
/// key. Allocates nothing: it runs after every decision on a pool of several pcpus.
pub fn tickle_targets<K: Ord + Copy>(
    pcpus: usize,
    running: impl Fn(usize) -> Option<K>,
    waiting: impl IntoIterator<Item = (K, CpuSet)>,
) -> CpuSet {
    let all = CpuSet::first(pcpus as u32);
    let mut named = CpuSet::EMPTY;
    for (key, affinity) in waiting {
        // Waiting VCPUs come most urgent first: once one cannot take any pcpu not yet
        // named (none idles, and it beats none of them), no later one can.
        if nothing_to_tickle_on(all.intersection(named.complement()), &running, Some(key)) {
            break;
        }
        let free = all.intersection(affinity).intersection(named.complement());
        if free.is_empty() {
            continue;
        }
        if let Some(idle) = free.iter().find(|&p| running(p as usize).is_none()) {
            named.insert(idle);
            continue;
        }
        // The least urgent running VCPU of its affinity (the lowest index among equals).
        let mut worst: Option<(K, u32)> = None;
        for p in free.iter() {
            if let Some(k) = running(p as usize) {
                if worst.is_none_or(|(w, _)| k > w) {
                    worst = Some((k, p));
                }
            }
        }
        if let Some((w, p)) = worst {
            if key < w {
                named.insert(p);
            }
        }
        if named == all {
            break;
        }
    }
    named
}

/// Whether no waiting VCPU can take a pcpu: no pcpu idles and the most urgent waiting key
/// (`best_waiting`; `None`: nobody waits) does not beat the least urgent running one.
/// Then [`tickle_targets`] names none, whatever the affinities; a policy that must sort
/// its waiting VCPUs first asks this before sorting.
pub fn nothing_to_tickle<K: Ord + Copy>(
    pcpus: usize,
    running: impl Fn(usize) -> Option<K>,
    best_waiting: Option<K>,
) -> bool {
    nothing_to_tickle_on(CpuSet::first(pcpus as u32), &running, best_waiting)
}

/// [`nothing_to_tickle`] over the pcpus of `on` only.
fn nothing_to_tickle_on<K: Ord + Copy>(
    on: CpuSet,
    running: &impl Fn(usize) -> Option<K>,
    best_waiting: Option<K>,
) -> bool {
    let Some(best) = best_waiting else {
        return true;
    };
    let mut worst: Option<K> = None;
    for p in on.iter() {
        match running(p as usize) {
            None => return false,
            Some(k) => worst = Some(worst.map_or(k, |w| w.max(k))),
        }
    }
    worst.is_none_or(|w| best >= w)
}

/// Each VCPU's hard affinity in the pool's local indices; a VCPU whose affinity was never
/// set may run anywhere.
#[derive(Clone, Debug, Default)]
pub struct Affinities(VcpuTable<CpuSet>);

impl Affinities {
    pub fn set(&mut self, vcpu: VcpuId, affinity: CpuSet) {
        self.0.insert(vcpu, affinity);
    }

    pub fn remove(&mut self, vcpu: VcpuId) {
        self.0.remove(vcpu);
    }

    /// The VCPU's affinity (every pcpu if never set).
    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> CpuSet {
        self.0
            .try_get(vcpu)
            .copied()
            .unwrap_or(CpuSet::first(CpuSet::MAX))
    }

    /// Whether every affinity set holds all of `pcpus`.
    pub fn all_hold(&self, pcpus: CpuSet) -> bool {
        self.0.iter().all(|a| pcpus.is_subset(*a))
    }

    /// Whether `vcpu` may run on local pcpu `pcpu`.
    #[inline]
    pub fn allows(&self, vcpu: VcpuId, pcpu: u32) -> bool {
        self.get(vcpu).contains(pcpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(i: &[u32]) -> CpuSet {
        CpuSet::from_indices(i.iter().copied()).unwrap()
    }

    fn tickle_targets<const N: usize>(
        running: &[Option<u32>; N],
        waiting: impl IntoIterator<Item = (u32, CpuSet)>,
    ) -> CpuSet {
        super::tickle_targets(N, |p| running[p], waiting)
    }

    #[test]
    fn nothing_to_tickle_when_no_pcpu_idles_and_nobody_beats_the_worst() {
        let run = [Some(1), Some(3)];
        assert!(
            nothing_to_tickle(2, |p| run[p], Some(3)),
            "3 does not beat 3"
        );
        assert!(!nothing_to_tickle(2, |p| run[p], Some(2)), "2 beats 3");
        assert!(nothing_to_tickle(2, |p| run[p], None), "nobody waits");
        let idle = [Some(1), None];
        assert!(!nothing_to_tickle(2, |p| idle[p], Some(9)), "an idle pcpu");
    }

    #[test]
    fn an_idle_pcpu_of_the_affinity_comes_first_then_the_worst_running_one() {
        let all = set(&[0, 1, 2]);
        // pcpu 1 idles: the waiting VCPU (key 5) takes it, though 5 beats nobody.
        assert_eq!(
            tickle_targets(&[Some(1), None, Some(3)], [(5, all)]),
            set(&[1])
        );
        // Nobody idles: key 2 beats the worst running (3 on pcpu 2), not the others.
        assert_eq!(
            tickle_targets(&[Some(1), Some(0), Some(3)], [(2, all)]),
            set(&[2])
        );
        // Key 4 beats nobody.
        assert!(tickle_targets(&[Some(1), Some(0), Some(3)], [(4, all)]).is_empty());
        // Affinity {0, 1}: the worst there is 1 on pcpu 0; key 2 does not beat it, though it
        // beats 3 on pcpu 2, outside its affinity.
        assert!(tickle_targets(&[Some(1), Some(0), Some(3)], [(2, set(&[0, 1]))]).is_empty());
    }

    #[test]
    fn each_pcpu_is_named_once_so_the_second_waiter_looks_further() {
        // Running 5 and 7. Waiting 1 and 2: 1 takes pcpu 1 (running 7, the worst); 2 then
        // takes pcpu 0 (running 5). A third waiter (3) finds nothing left.
        let all = set(&[0, 1]);
        assert_eq!(
            tickle_targets(&[Some(5), Some(7)], [(1, all), (2, all), (3, all)]),
            set(&[0, 1])
        );
        // Two waiters, one idle pcpu: the first takes it, the second beats 7 on pcpu 1.
        assert_eq!(
            tickle_targets(
                &[None, Some(7), Some(1)],
                [(2, set(&[0, 1, 2])), (3, set(&[0, 1, 2]))]
            ),
            set(&[0, 1])
        );
        // The second waiter may only run on the pcpu the first took: nothing more.
        assert_eq!(
            tickle_targets(&[None, Some(7)], [(2, set(&[0, 1])), (3, set(&[0]))]),
            set(&[0])
        );
    }
}
