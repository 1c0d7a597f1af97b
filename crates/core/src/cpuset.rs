//! Sets of pcpus: a VCPU's hard affinity, a pool's pcpus, the pcpus a policy asks to
//! reschedule. A bit set of at most [`CpuSet::MAX`] pcpus, so that it is `Copy` and a
//! membership test is one instruction.

use std::fmt;

/// A set of pcpu indices `0..CpuSet::MAX`. Within a policy the indices are the pool's own
/// (0 = the pool's first pcpu); in the machine's API they are machine pcpu ids.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(u64);

impl CpuSet {
    /// The most pcpus a machine may have.
    pub const MAX: u32 = 64;
    pub const EMPTY: CpuSet = CpuSet(0);
    /// Every pcpu index below [`CpuSet::MAX`].
    pub const ALL: CpuSet = CpuSet(u64::MAX);

    /// `{0, 1, …, n−1}` (`n` at most [`CpuSet::MAX`]).
    pub fn first(n: u32) -> CpuSet {
        debug_assert!(n <= Self::MAX);
        if n >= 64 {
            CpuSet(u64::MAX)
        } else {
            CpuSet((1u64 << n) - 1)
        }
    }

    /// `{i}`.
    pub fn one(i: u32) -> CpuSet {
        debug_assert!(i < Self::MAX);
        CpuSet(1u64 << i)
    }

    /// The set of the listed indices; `None` if one is [`CpuSet::MAX`] or more.
    pub fn from_indices(indices: impl IntoIterator<Item = u32>) -> Option<CpuSet> {
        let mut s = CpuSet::EMPTY;
        for i in indices {
            if i >= Self::MAX {
                return None;
            }
            s.insert(i);
        }
        Some(s)
    }

    #[inline]
    pub fn contains(self, i: u32) -> bool {
        i < Self::MAX && self.0 & (1u64 << i) != 0
    }

    #[inline]
    pub fn insert(&mut self, i: u32) {
        self.0 |= 1u64 << i;
    }

    #[inline]
    pub fn remove(&mut self, i: u32) {
        self.0 &= !(1u64 << i);
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }

    #[inline]
    pub fn union(self, o: CpuSet) -> CpuSet {
        CpuSet(self.0 | o.0)
    }

    #[inline]
    pub fn intersection(self, o: CpuSet) -> CpuSet {
        CpuSet(self.0 & o.0)
    }

    /// The indices below [`CpuSet::MAX`] not in `self`.
    #[inline]
    pub fn complement(self) -> CpuSet {
        CpuSet(!self.0)
    }

    /// Whether every member of `self` is in `o`.
    #[inline]
    pub fn is_subset(self, o: CpuSet) -> bool {
        self.0 & !o.0 == 0
    }

    /// The smallest member.
    #[inline]
    pub fn lowest(self) -> Option<u32> {
        (self.0 != 0).then(|| self.0.trailing_zeros())
    }

    /// The members in cyclic order from `start`: those ≥ `start` smallest first, then
    /// those below it (Xen's `cpumask_cycle` walk).
    pub fn iter_from(self, start: u32) -> impl Iterator<Item = u32> {
        let above = if start >= Self::MAX {
            0
        } else {
            self.0 & (u64::MAX << start)
        };
        CpuSet(above).iter().chain(CpuSet(self.0 & !above).iter())
    }

    /// The members, smallest first.
    pub fn iter(self) -> impl Iterator<Item = u32> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let i = bits.trailing_zeros();
            bits &= bits - 1;
            Some(i)
        })
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// `xl`'s form: `0-2,5` (ranges of consecutive pcpus joined with commas); `none` when empty.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let mut first = true;
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().expect("peeked");
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_print_as_xl_ranges() {
        let s = CpuSet::from_indices([0, 1, 2, 5, 7, 8]).unwrap();
        assert_eq!(s.to_string(), "0-2,5,7-8");
        assert_eq!(CpuSet::EMPTY.to_string(), "none");
        assert_eq!(CpuSet::first(2).to_string(), "0-1");
        assert_eq!(s.len(), 6);
        assert_eq!(s.lowest(), Some(0));
        assert!(s.contains(5) && !s.contains(6) && !s.contains(64));
        assert!(CpuSet::one(5).is_subset(s) && !CpuSet::one(6).is_subset(s));
        assert_eq!(CpuSet::from_indices([64]), None);
        assert_eq!(CpuSet::first(64).len(), 64);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(s.iter_from(5).collect::<Vec<_>>(), vec![5, 7, 8, 0, 1, 2]);
        assert_eq!(s.iter_from(3).collect::<Vec<_>>(), vec![5, 7, 8, 0, 1, 2]);
        assert_eq!(s.iter_from(0).collect::<Vec<_>>(), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(s.iter_from(9).collect::<Vec<_>>(), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(s.iter_from(64).collect::<Vec<_>>(), vec![0, 1, 2, 5, 7, 8]);
    }
}
