//! What the globally scheduling policies (RTDS, Credit, Deferrable, Sporadic) share on a
//! pool of several pcpus: each VCPU's hard affinity, and the choice of the pcpus to
//! "tickle" (Xen's `runq_tickle` in `xen/common/sched/rt.c`).
//!
//! # Tickling
//! A policy describes, per pcpu, the key of what it runs (`None`: it idles, or what it runs
//! is no longer eligible and leaves at its next `do_schedule`), and lists the eligible
//! VCPUs that run nowhere, most urgent first, each with its affinity and the pcpu it last
//! ran on. For each of those in turn: a pcpu of its affinity that idles is named; else the
//! pcpu of its affinity that runs the least urgent VCPU, if the waiting VCPU's key beats
//! that one's. Both searches walk the pcpus as Xen's `runq_tickle` does
//! (`cpumask_cycle`): from the pcpu the VCPU last ran on (for its cache), upwards, wrapping
//! around; a VCPU that never ran starts at the lowest. Among equally unurgent running
//! VCPUs the first met is named. Each pcpu is named once (Xen's `prv->tickled`), so a
//! second waiting VCPU looks further.
//!
//! Why it converges: a named pcpu's `do_schedule` picks the most urgent eligible VCPU
//! allowed there and running nowhere else, which is at least as urgent as the VCPU that
//! named it; so every reschedule a tickle causes makes what that pcpu runs strictly more
//! urgent (or ends an idle), and nothing else changes.

use crate::cpuset::CpuSet;
use crate::model::VcpuId;
use crate::policy::table::VcpuTable;
use crate::policy::PcpuChange;

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
/// `waiting` are the eligible VCPUs running nowhere, most urgent first, each with its
/// [`Placement`]. A smaller key is more urgent; a waiting VCPU preempts only a strictly
/// greater key. Allocates nothing: it runs after every decision on a pool of several pcpus.
pub fn tickle_targets<K: Ord + Copy>(
    pcpus: usize,
    running: impl Fn(usize) -> Option<K>,
    waiting: impl IntoIterator<Item = (K, Placement)>,
) -> CpuSet {
    let all = CpuSet::first(pcpus as u32);
    let mut named = CpuSet::EMPTY;
    for (key, Placement { affinity, last }) in waiting {
        // Waiting VCPUs come most urgent first: once one cannot take any pcpu not yet
        // named (none idles, and it beats none of them), no later one can.
        if nothing_to_tickle_on(all.intersection(named.complement()), &running, Some(key)) {
            break;
        }
        let free = all.intersection(affinity).intersection(named.complement());
        if free.is_empty() {
            continue;
        }
        let start = last.unwrap_or(0);
        if let Some(idle) = free
            .iter_from(start)
            .find(|&p| running(p as usize).is_none())
        {
            named.insert(idle);
            continue;
        }
        // The least urgent running VCPU of its affinity (the first met among equals).
        let mut worst: Option<(K, u32)> = None;
        for p in free.iter_from(start) {
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

/// Where a VCPU may run (its hard affinity, in the pool's local indices) and the pcpu it
/// last ran on (local index; `None`: never), as [`tickle_targets`] reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub affinity: CpuSet,
    pub last: Option<u32>,
}

impl Placement {
    /// A VCPU that may run anywhere and never ran.
    pub const ANYWHERE: Placement = Placement {
        affinity: CpuSet::ALL,
        last: None,
    };
}

/// Each VCPU's [`Placement`]; a VCPU whose affinity was never set may run anywhere.
#[derive(Clone, Debug, Default)]
pub struct Affinities(VcpuTable<Placement>);

impl Affinities {
    /// Sets the VCPU's affinity (keeping where it last ran).
    pub fn set(&mut self, vcpu: VcpuId, affinity: CpuSet) {
        let last = self.placement(vcpu).last;
        self.0.insert(vcpu, Placement { affinity, last });
    }

    pub fn remove(&mut self, vcpu: VcpuId) {
        self.0.remove(vcpu);
    }

    /// The VCPU was chosen to run on local pcpu `pcpu`.
    #[inline]
    pub fn ran(&mut self, vcpu: VcpuId, pcpu: u32) {
        match self.0.try_get_mut(vcpu) {
            Some(p) => p.last = Some(pcpu),
            None => self.0.insert(
                vcpu,
                Placement {
                    last: Some(pcpu),
                    ..Placement::ANYWHERE
                },
            ),
        }
    }

    /// The VCPU's placement (anywhere, never ran, if never set).
    #[inline]
    pub fn placement(&self, vcpu: VcpuId) -> Placement {
        self.0.try_get(vcpu).copied().unwrap_or(Placement::ANYWHERE)
    }

    /// The VCPU's affinity (every pcpu if never set).
    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> CpuSet {
        self.placement(vcpu).affinity
    }

    /// A pcpu joins or leaves the pool: where each VCPU last ran follows the new local
    /// numbering (never ran, for the pcpu that leaves). Affinities are sent again by the
    /// machine.
    pub fn change_pcpus(&mut self, change: PcpuChange) {
        for p in self.0.iter_mut() {
            p.last = p.last.and_then(|last| change.renumber(last));
        }
    }

    /// Whether every affinity set holds all of `pcpus`.
    pub fn all_hold(&self, pcpus: CpuSet) -> bool {
        self.0.iter().all(|a| pcpus.is_subset(a.affinity))
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

    /// Waiting VCPUs that never ran.
    fn tickle_targets<const N: usize>(
        running: &[Option<u32>; N],
        waiting: impl IntoIterator<Item = (u32, CpuSet)>,
    ) -> CpuSet {
        let never_ran = |(k, affinity)| {
            (
                k,
                Placement {
                    affinity,
                    last: None,
                },
            )
        };
        super::tickle_targets(N, |p| running[p], waiting.into_iter().map(never_ran))
    }

    /// Waiting VCPUs with the pcpu they last ran on.
    fn tickle_from<const N: usize>(
        running: &[Option<u32>; N],
        waiting: impl IntoIterator<Item = (u32, CpuSet, u32)>,
    ) -> CpuSet {
        let ran = |(k, affinity, last)| {
            let last = Some(last);
            (k, Placement { affinity, last })
        };
        super::tickle_targets(N, |p| running[p], waiting.into_iter().map(ran))
    }

    #[test]
    fn where_a_vcpu_last_ran_follows_the_pools_numbering() {
        let (a, b, c) = (VcpuId(0), VcpuId(1), VcpuId(2));
        let mut aff = Affinities::default();
        aff.ran(a, 0);
        aff.ran(b, 1);
        aff.ran(c, 2);
        // Local pcpu 1 leaves: B never ran (in this pool), C's pcpu is now 1.
        aff.change_pcpus(PcpuChange::Leave(1));
        let last = |aff: &Affinities| [a, b, c].map(|v| aff.placement(v).last);
        assert_eq!(last(&aff), [Some(0), None, Some(1)]);
        // A pcpu joins at 0: everyone's pcpu moves up by one; affinities are kept.
        aff.set(a, set(&[0, 1]));
        aff.change_pcpus(PcpuChange::Join(0));
        assert_eq!(last(&aff), [Some(1), None, Some(2)]);
        assert_eq!(
            aff.get(a),
            set(&[0, 1]),
            "the machine sends affinities again"
        );
    }

    #[test]
    fn the_search_starts_where_the_vcpu_last_ran_and_wraps_around() {
        let all = set(&[0, 1, 2, 3]);
        // Pcpus 0 and 2 idle. A VCPU that last ran on 2 takes 2; one that last ran on 3
        // finds 3 busy and wraps around to 0; one that last ran on 1 goes up to 2. A VCPU
        // that never ran takes the lowest, 0.
        let run = [None, Some(5), None, Some(6)];
        assert_eq!(tickle_from(&run, [(1, all, 2)]), set(&[2]));
        assert_eq!(tickle_from(&run, [(1, all, 3)]), set(&[0]));
        assert_eq!(tickle_from(&run, [(1, all, 1)]), set(&[2]));
        assert_eq!(tickle_targets(&run, [(1, all)]), set(&[0]));
        // Two waiters: the first takes its own pcpu 2, the second (last on 2 as well) goes
        // on to the next idle one, wrapping to 0.
        assert_eq!(tickle_from(&run, [(1, all, 2), (2, all, 2)]), set(&[0, 2]));
        // Nobody idles and pcpus 1 and 3 run equally unurgent VCPUs (key 7): the first met
        // from where the waiter last ran is named — 3 from 2, 1 from 0.
        let busy = [Some(2), Some(7), Some(3), Some(7)];
        assert_eq!(tickle_from(&busy, [(4, all, 2)]), set(&[3]));
        assert_eq!(tickle_from(&busy, [(4, all, 0)]), set(&[1]));
        // The affinity still bounds the search: last on 2 but allowed on {0, 1} only.
        assert_eq!(tickle_from(&run, [(1, set(&[0, 1]), 2)]), set(&[0]));
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
