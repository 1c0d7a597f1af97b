//! [`OrderedQueue`]: VCPUs by key, first in, first out among equal keys — Xen's sorted
//! lists (a newcomer goes after every entry whose key is at most its own), in O(log n) per
//! operation at any size. SEDF's run, wait and extra-time queues ([`sedf`](super::sedf))
//! and `sedf-ideal`'s EDF, timer and round-robin orders ([`sedf_ideal`](super::sedf_ideal))
//! are each one.
//!
//! # Design note
//! - **Order**: by (key, insertion number), where every insertion takes the next number.
//!   `insert` returns the entry's [`Slot`]; its owner keeps it to `remove` the entry, and
//!   must not change the key the entry was inserted with while it is queued (remove it
//!   and insert it again instead: it then goes after its ties).
//! - **Two forms.** Up to [`SMALL_QUEUE`] entries the queue is an array sorted the other
//!   way round, the first entry last: taking the first (`pop_first`, and `remove` of the
//!   first, the common cases) is a `pop`, and a newcomer bubbles from the end to its place,
//!   with no call to `memmove` and no search, as long as the array is short
//!   ([`LINEAR_UP_TO`]); longer arrays are searched by bisection. Past [`SMALL_QUEUE`]
//!   entries the queue moves into an ordered set and stays there until it empties.
//! - The array is the cheaper form at the sizes most systems have (a handful of VCPUs per
//!   pcpu); the set keeps 100,000 VCPUs on one pcpu near-linear (`docs/benchmarks.md`,
//!   "SEDF at scale").

use std::collections::BTreeSet;

use crate::model::VcpuId;

/// A queued VCPU's place: the key it was inserted with and its insertion number.
pub(crate) type Slot<K> = (K, u64);

/// The most entries an [`OrderedQueue`] keeps in its array.
pub(crate) const SMALL_QUEUE: usize = 64;

/// Up to this many entries the array is walked from the first entry's end (a newcomer
/// bubbles into place, a removal looks for its insertion number); past it, bisection.
pub(crate) const LINEAR_UP_TO: usize = 16;

/// VCPUs by key, first in, first out among equal keys (see the module note).
#[derive(Clone, Debug)]
pub(crate) struct OrderedQueue<K> {
    /// While `big` is empty: every entry, in decreasing (key, insertion number) order —
    /// the first entry is the last element.
    small: Vec<(K, u64, VcpuId)>,
    /// Past [`SMALL_QUEUE`] entries: every entry, in increasing order.
    big: BTreeSet<(K, u64, VcpuId)>,
    /// The next insertion number.
    next_seq: u64,
}

impl<K: Ord + Copy> OrderedQueue<K> {
    pub(crate) fn new() -> Self {
        OrderedQueue {
            small: Vec::new(),
            big: BTreeSet::new(),
            next_seq: 0,
        }
    }

    /// Queues `vcpu` after every entry whose key is at most `key`; returns its slot.
    #[inline(always)]
    pub(crate) fn insert(&mut self, vcpu: VcpuId, key: K) -> Slot<K> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let len = self.small.len();
        if len < LINEAR_UP_TO && self.big.is_empty() {
            // Its insertion number is above every other: it goes before (in the array)
            // every entry whose key is at most its own.
            self.small.push((key, seq, vcpu));
            let mut at = len;
            while at > 0 && self.small[at - 1].0 <= key {
                self.small.swap(at - 1, at);
                at -= 1;
            }
        } else {
            self.insert_slow(vcpu, key, seq);
        }
        (key, seq)
    }

    /// `insert` into a longer array (by bisection) or into the set.
    #[inline(never)]
    fn insert_slow(&mut self, vcpu: VcpuId, key: K, seq: u64) {
        if self.big.is_empty() && self.small.len() < SMALL_QUEUE {
            let at = self.small.partition_point(|&(k, _, _)| k > key);
            self.small.insert(at, (key, seq, vcpu));
        } else {
            self.big.extend(self.small.drain(..));
            self.big.insert((key, seq, vcpu));
        }
    }

    /// Takes `vcpu` out by the slot `insert` returned; false if it is not queued there.
    #[inline(always)]
    pub(crate) fn remove(&mut self, vcpu: VcpuId, (key, seq): Slot<K>) -> bool {
        if let Some(&(_, s, v)) = self.small.last() {
            if s == seq && v == vcpu {
                self.small.pop();
                return true;
            }
        }
        self.remove_slow(vcpu, (key, seq))
    }

    /// `remove` of an entry that is not the array's first.
    #[inline(never)]
    fn remove_slow(&mut self, vcpu: VcpuId, (key, seq): Slot<K>) -> bool {
        if !self.big.is_empty() {
            return self.big.remove(&(key, seq, vcpu));
        }
        let at = if self.small.len() <= LINEAR_UP_TO {
            self.small.iter().rposition(|&(_, s, _)| s == seq)
        } else {
            let at = self.small.partition_point(|&(k, s, _)| (k, s) > (key, seq));
            Some(at)
        };
        match at {
            Some(at) if self.small.get(at) == Some(&(key, seq, vcpu)) => {
                self.small.remove(at);
                true
            }
            _ => false,
        }
    }

    /// The first entry's VCPU.
    #[inline(always)]
    pub(crate) fn first(&self) -> Option<VcpuId> {
        self.first_entry().map(|(_, v)| v)
    }

    /// The first entry: its key and its VCPU.
    #[inline(always)]
    pub(crate) fn first_entry(&self) -> Option<(K, VcpuId)> {
        match self.small.last() {
            Some(&(k, _, v)) => Some((k, v)),
            None => self.big.first().map(|&(k, _, v)| (k, v)),
        }
    }

    /// Takes the first entry out; returns its VCPU.
    #[inline(always)]
    pub(crate) fn pop_first(&mut self) -> Option<VcpuId> {
        match self.small.pop() {
            Some((_, _, v)) => Some(v),
            None => self.big.pop_first().map(|(_, _, v)| v),
        }
    }

    /// Every entry in order: its slot and its VCPU.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Slot<K>, VcpuId)> + '_ {
        self.small
            .iter()
            .rev()
            .chain(self.big.iter())
            .map(|&(k, seq, v)| ((k, seq), v))
    }

    pub(crate) fn len(&self) -> usize {
        self.small.len() + self.big.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.small.is_empty() && self.big.is_empty()
    }

    /// Whether the entries are in the ordered set (past [`SMALL_QUEUE`] entries).
    #[cfg(test)]
    fn is_big(&self) -> bool {
        !self.big.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids<K: Ord + Copy>(queue: &OrderedQueue<K>) -> Vec<u32> {
        queue.iter().map(|(_, v)| v.0).collect()
    }

    /// Entries with equal keys stay in insertion order; a newcomer goes after its ties.
    #[test]
    fn equal_keys_keep_insertion_order() {
        let mut q = OrderedQueue::new();
        for (v, key) in [(0, 5), (1, 3), (2, 5), (3, 3), (4, 7), (5, 5)] {
            q.insert(VcpuId(v), key);
        }
        assert_eq!(ids(&q), [1, 3, 0, 2, 5, 4]);
        assert_eq!(q.pop_first(), Some(VcpuId(1)));
        assert_eq!(q.first(), Some(VcpuId(3)));
        assert_eq!(q.first_entry(), Some((3, VcpuId(3))));
    }

    /// Removing a VCPU from the middle (by its slot) leaves the others in order, and a
    /// later newcomer with the same key goes after them all.
    #[test]
    fn removal_from_the_middle_keeps_the_rest_in_order() {
        let mut q = OrderedQueue::new();
        let slots: Vec<_> = (0..5).map(|v| q.insert(VcpuId(v), 4)).collect();
        assert!(q.remove(VcpuId(2), slots[2]));
        assert!(!q.remove(VcpuId(2), slots[2]), "already gone");
        assert_eq!(ids(&q), [0, 1, 3, 4]);
        q.insert(VcpuId(2), 4);
        assert_eq!(ids(&q), [0, 1, 3, 4, 2]);
    }

    /// Past [`SMALL_QUEUE`] entries the queue is an ordered set, back to the array once it
    /// empties; the order is the same throughout.
    #[test]
    fn grows_into_the_set_and_back() {
        let mut q = OrderedQueue::new();
        for v in 0..(SMALL_QUEUE as u32 + 1) {
            q.insert(VcpuId(v), v % 3);
        }
        assert!(q.is_big());
        let want: Vec<u32> = (0..3)
            .flat_map(|k| (0..=SMALL_QUEUE as u32).filter(move |v| v % 3 == k))
            .collect();
        assert_eq!(ids(&q), want);
        for &v in &want {
            assert_eq!(q.pop_first(), Some(VcpuId(v)));
        }
        assert!(q.is_empty() && !q.is_big());
        q.insert(VcpuId(7), 1);
        assert!(!q.is_big());
        assert_eq!(ids(&q), [7]);
    }

    /// One operation on both the queue and the reference: insert a VCPU that is not
    /// queued, remove one that is (by its slot), pop the first, or try a stale slot.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32, u8),
        Remove(usize),
        PopFirst,
        RemoveStale(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..200, 0u8..6).prop_map(|(v, k)| Op::Insert(v, k)),
            2 => any::<usize>().prop_map(Op::Remove),
            1 => Just(Op::PopFirst),
            1 => any::<usize>().prop_map(Op::RemoveStale),
        ]
    }

    proptest! {
        /// Against a sorted `Vec` (a newcomer after every entry whose key is at most its
        /// own, Xen's lists): the same order, first entry and length after every
        /// operation, through all three forms (short array, long array, set). Few keys,
        /// so most entries tie; runs long enough to pass [`SMALL_QUEUE`] and empty again.
        #[test]
        fn matches_a_sorted_list(ops in prop::collection::vec(op(), 1..1500)) {
            let mut queue = OrderedQueue::new();
            let mut reference: Vec<(u8, u32)> = Vec::new();
            let mut slots: Vec<Option<Slot<u8>>> = vec![None; 200];
            let mut stale: Vec<(u32, Slot<u8>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(v, key) => {
                        if slots[v as usize].is_some() {
                            continue;
                        }
                        let at = reference.partition_point(|&(k, _)| k <= key);
                        reference.insert(at, (key, v));
                        slots[v as usize] = Some(queue.insert(VcpuId(v), key));
                    }
                    Op::Remove(i) if !reference.is_empty() => {
                        let (_, v) = reference.remove(i % reference.len());
                        let slot = slots[v as usize].take().unwrap();
                        prop_assert!(queue.remove(VcpuId(v), slot));
                        stale.push((v, slot));
                    }
                    Op::PopFirst => {
                        let want = (!reference.is_empty()).then(|| reference.remove(0).1);
                        let got = queue.pop_first().map(|v| v.0);
                        prop_assert_eq!(got, want);
                        if let Some(v) = want {
                            stale.push((v, slots[v as usize].take().unwrap()));
                        }
                    }
                    Op::RemoveStale(i) if !stale.is_empty() => {
                        let (v, slot) = stale[i % stale.len()];
                        prop_assert!(!queue.remove(VcpuId(v), slot), "a stale slot");
                    }
                    Op::Remove(_) | Op::RemoveStale(_) => {}
                }
                let want: Vec<u32> = reference.iter().map(|&(_, v)| v).collect();
                prop_assert_eq!(ids(&queue), want);
                prop_assert_eq!(queue.len(), reference.len());
                prop_assert_eq!(queue.is_empty(), reference.is_empty());
                prop_assert_eq!(
                    queue.first_entry().map(|(k, v)| (k, v.0)),
                    reference.first().copied()
                );
                for (slot, v) in queue.iter() {
                    prop_assert_eq!(Some(slot), slots[v.0 as usize]);
                }
            }
            // Emptied, whatever form it had, it is an array again.
            for (_, v) in reference.drain(..) {
                prop_assert_eq!(queue.pop_first(), Some(VcpuId(v)));
            }
            prop_assert!(queue.is_empty() && !queue.is_big());
            queue.insert(VcpuId(0), 1);
            queue.insert(VcpuId(1), 0);
            prop_assert_eq!(ids(&queue), [1, 0]);
        }
    }
}
