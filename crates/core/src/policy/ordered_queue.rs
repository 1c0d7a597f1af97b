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
//! - **Two forms.** Up to [`SMALL_QUEUE`] entries the queue is a sorted array whose first
//!   entry is at a moving `head`: taking the first (`pop_first`, and `remove` of the first,
//!   the common cases) steps `head` on, and a newcomer whose key is at least the last one's
//!   (a new deadline, a new turn: the common case again) is a `push`, neither moving any
//!   entry. Another newcomer bubbles from the end to its place as long as the array is
//!   short ([`LINEAR_UP_TO`]); longer arrays are searched by bisection. The taken entries
//!   before `head` are dropped when the array empties, or when it is full and needs room.
//!   Past [`SMALL_QUEUE`] entries the queue moves into an ordered set and stays there until
//!   it empties.
//! - The array is the cheaper form at the sizes most systems have (a handful of VCPUs per
//!   pcpu); the set keeps 100,000 VCPUs on one pcpu near-linear (`docs/benchmarks.md`,
//!   "SEDF at scale").

use std::collections::BTreeSet;

use crate::model::VcpuId;

/// A queued VCPU's place: the key it was inserted with and its insertion number.
pub(crate) type Slot<K> = (K, u64);

/// The most entries an [`OrderedQueue`] keeps in its array.
pub(crate) const SMALL_QUEUE: usize = 64;

/// Up to this many entries the array is walked from its last entry (a newcomer bubbles
/// into place, a removal looks for its insertion number); past it, bisection.
pub(crate) const LINEAR_UP_TO: usize = 16;

/// The array's least allocation, in entries: room for a short queue's taken entries, so
/// that its live ones move to the front rarely.
const ROOM: usize = 2 * LINEAR_UP_TO;

/// VCPUs by key, first in, first out among equal keys (see the module note).
#[derive(Clone, Debug)]
pub(crate) struct OrderedQueue<K> {
    /// While `big` is empty: from `head` on, every entry in increasing (key, insertion
    /// number) order; before `head`, taken entries not yet dropped. Unallocated while
    /// `big` is not empty.
    small: Vec<(K, u64, VcpuId)>,
    /// The first entry's index in `small` (0 when the array is empty).
    head: usize,
    /// Past [`SMALL_QUEUE`] entries: every entry, in increasing order.
    big: BTreeSet<(K, u64, VcpuId)>,
    /// The next insertion number.
    next_seq: u64,
}

impl<K: Ord + Copy> OrderedQueue<K> {
    pub(crate) fn new() -> Self {
        OrderedQueue {
            small: Vec::new(),
            head: 0,
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
        // Room in the array means the array form: the set leaves it unallocated.
        if len - self.head < LINEAR_UP_TO && len < self.small.capacity() {
            // Its insertion number is above every other: it goes after every entry whose
            // key is at most its own — last, with nothing moved, when its key is the
            // largest.
            self.small.push((key, seq, vcpu));
            let mut at = len;
            while at > self.head && self.small[at - 1].0 > key {
                self.small.swap(at - 1, at);
                at -= 1;
            }
        } else {
            self.insert_slow((key, seq, vcpu));
        }
        (key, seq)
    }

    /// `insert` into a full or long array, or into the set.
    #[inline(never)]
    fn insert_slow(&mut self, entry: (K, u64, VcpuId)) {
        let live = self.small.len() - self.head;
        if !self.big.is_empty() || live >= SMALL_QUEUE {
            self.big.extend(self.small.drain(self.head..));
            self.small = Vec::new();
            self.head = 0;
            self.big.insert(entry);
            return;
        }
        let len = self.small.len();
        if len == self.small.capacity() {
            if self.head > 0 && self.head >= live {
                // At least as many taken entries as live ones: room from them (a live
                // entry moves once per as many taken).
                self.small.copy_within(self.head.., 0);
                self.small.truncate(live);
                self.head = 0;
            } else {
                self.small.reserve(len.max(ROOM));
            }
        }
        let key = entry.0;
        let at = self.head + self.small[self.head..].partition_point(|&(k, _, _)| k <= key);
        self.small.insert(at, entry);
    }

    /// Takes `vcpu` out by the slot `insert` returned; false if it is not queued there.
    #[inline(always)]
    pub(crate) fn remove(&mut self, vcpu: VcpuId, (key, seq): Slot<K>) -> bool {
        if let Some(&(_, s, v)) = self.small.get(self.head) {
            if s == seq && v == vcpu {
                self.take_head();
                return true;
            }
        }
        self.remove_slow(vcpu, (key, seq))
    }

    /// The array's first entry is taken: `head` moves past it (both to the start once the
    /// array is empty).
    #[inline(always)]
    fn take_head(&mut self) {
        self.head += 1;
        if self.head == self.small.len() {
            self.small.clear();
            self.head = 0;
        }
    }

    /// `remove` of an entry that is not the array's first.
    #[inline(never)]
    fn remove_slow(&mut self, vcpu: VcpuId, (key, seq): Slot<K>) -> bool {
        if !self.big.is_empty() {
            return self.big.remove(&(key, seq, vcpu));
        }
        let live = &self.small[self.head..];
        let at = if live.len() <= LINEAR_UP_TO {
            live.iter().rposition(|&(_, s, _)| s == seq)
        } else {
            Some(live.partition_point(|&(k, s, _)| (k, s) < (key, seq)))
        };
        match at {
            Some(at) if live.get(at) == Some(&(key, seq, vcpu)) => {
                self.small.remove(self.head + at);
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
        match self.small.get(self.head) {
            Some(&(k, _, v)) => Some((k, v)),
            None => self.big.first().map(|&(k, _, v)| (k, v)),
        }
    }

    /// Takes the first entry out; returns its VCPU.
    #[inline(always)]
    pub(crate) fn pop_first(&mut self) -> Option<VcpuId> {
        match self.small.get(self.head) {
            Some(&(_, _, v)) => {
                self.take_head();
                Some(v)
            }
            None => self.big.pop_first().map(|(_, _, v)| v),
        }
    }

    /// Every entry in order: its slot and its VCPU.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Slot<K>, VcpuId)> + '_ {
        self.small[self.head..]
            .iter()
            .chain(self.big.iter())
            .map(|&(k, seq, v)| ((k, seq), v))
    }

    pub(crate) fn len(&self) -> usize {
        self.small.len() - self.head + self.big.len()
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
