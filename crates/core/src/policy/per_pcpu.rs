//! [`PerPcpu`]: one value per pcpu of a pool, pcpu 0's inline.
//!
//! A global policy keeps per pcpu what it decided there (Credit, Deferrable and Sporadic:
//! the VCPU each pcpu runs). Most pools have one pcpu, and their hooks run on every
//! decision, tick and burn; keeping pcpu 0's value inline makes reading or writing it a
//! field access (no bounds check, no pointer to follow, and no store through a pointer
//! that the compiler must assume aliases the policy's other tables), so the one-pcpu path
//! costs what it did when those policies kept a single value. Pcpus 1.. live in a `Vec`.

use std::ops::{Index, IndexMut};

/// One `T` per local pcpu (`0..len()`, at least one). See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerPcpu<T> {
    first: T,
    rest: Vec<T>,
}

impl<T: Clone> PerPcpu<T> {
    /// `value` on each of `pcpus` pcpus (at least one).
    pub fn new(pcpus: u32, value: T) -> PerPcpu<T> {
        PerPcpu {
            rest: vec![value.clone(); pcpus.max(1) as usize - 1],
            first: value,
        }
    }
}

impl<T> PerPcpu<T> {
    /// The number of pcpus.
    #[inline]
    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    /// Never: there is at least one pcpu (for clippy's `len_without_is_empty`).
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether there are several pcpus.
    #[inline]
    pub fn several(&self) -> bool {
        !self.rest.is_empty()
    }

    /// The values, pcpu 0 first.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        std::iter::once(&self.first).chain(&self.rest)
    }

    /// The values, pcpu 0 first.
    #[inline]
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        std::iter::once(&mut self.first).chain(&mut self.rest)
    }
}

impl<T: PartialEq> PerPcpu<T> {
    /// Whether some pcpu holds `value`.
    #[inline]
    pub fn contains(&self, value: &T) -> bool {
        self.first == *value || self.rest.contains(value)
    }

    /// The first pcpu that holds `value`.
    #[inline]
    pub fn position(&self, value: &T) -> Option<usize> {
        if self.first == *value {
            return Some(0);
        }
        self.rest.iter().position(|v| v == value).map(|i| i + 1)
    }
}

/// A pool keeps at least one pcpu while it has VCPUs (the machine refuses the rest), so
/// taking out pcpu 0 leaves pcpu 1 in its place.
impl<T> crate::policy::PcpuIndexed<T> for PerPcpu<T> {
    fn insert_at(&mut self, at: usize, value: T) {
        if at == 0 {
            let old = std::mem::replace(&mut self.first, value);
            self.rest.insert(0, old);
        } else {
            self.rest.insert(at - 1, value);
        }
    }

    fn remove_at(&mut self, at: usize) -> T {
        if at == 0 {
            let next = self.rest.remove(0);
            std::mem::replace(&mut self.first, next)
        } else {
            self.rest.remove(at - 1)
        }
    }
}

impl<T> Index<usize> for PerPcpu<T> {
    type Output = T;

    #[inline]
    fn index(&self, pcpu: usize) -> &T {
        match pcpu {
            0 => &self.first,
            _ => &self.rest[pcpu - 1],
        }
    }
}

impl<T> IndexMut<usize> for PerPcpu<T> {
    #[inline]
    fn index_mut(&mut self, pcpu: usize) -> &mut T {
        match pcpu {
            0 => &mut self.first,
            _ => &mut self.rest[pcpu - 1],
        }
    }
}

impl<'a, T> IntoIterator for &'a PerPcpu<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Chain<std::iter::Once<&'a T>, std::slice::Iter<'a, T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(&self.first).chain(self.rest.iter())
    }
}

impl<'a, T> IntoIterator for &'a mut PerPcpu<T> {
    type Item = &'a mut T;
    type IntoIter = std::iter::Chain<std::iter::Once<&'a mut T>, std::slice::IterMut<'a, T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(&mut self.first).chain(self.rest.iter_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcpu_zero_inline_the_others_after_it() {
        let mut one = PerPcpu::new(1, 0u32);
        assert_eq!((one.len(), one.several()), (1, false));
        one[0] = 7;
        assert_eq!(one.iter().copied().collect::<Vec<_>>(), vec![7]);
        assert_eq!((one.contains(&7), one.position(&7)), (true, Some(0)));

        let mut three = PerPcpu::new(3, None::<u32>);
        assert_eq!((three.len(), three.several()), (3, true));
        three[2] = Some(5);
        three[0] = Some(4);
        assert_eq!(
            three.iter().copied().collect::<Vec<_>>(),
            vec![Some(4), None, Some(5)]
        );
        assert_eq!(three.position(&Some(5)), Some(2));
        assert_eq!(three.position(&Some(6)), None);
        for v in &mut three {
            *v = v.map(|x| x + 1);
        }
        assert_eq!(
            (&three).into_iter().copied().collect::<Vec<_>>(),
            vec![Some(5), None, Some(6)]
        );
        assert_eq!(PerPcpu::new(0, 1u8).len(), 1, "at least one pcpu");
    }

    #[test]
    fn a_pcpu_joins_or_leaves_anywhere_pcpu_zero_included() {
        use crate::policy::PcpuChange;
        let all = |p: &PerPcpu<u8>| p.iter().copied().collect::<Vec<_>>();
        let mut p = PerPcpu::new(2, 0u8);
        p[1] = 1;
        // [0, 1] → a pcpu joins at 0 → [9, 0, 1]; pcpu 0 leaves → [0, 1]; one joins at 2.
        assert_eq!(PcpuChange::Join(0).apply(&mut p, || 9), None);
        assert_eq!(all(&p), [9, 0, 1]);
        assert_eq!(PcpuChange::Leave(0).apply(&mut p, || 9), Some(9));
        assert_eq!(all(&p), [0, 1]);
        PcpuChange::Join(2).apply(&mut p, || 7);
        assert_eq!(PcpuChange::Leave(1).apply(&mut p, || 9), Some(1));
        assert_eq!((all(&p), p[0], p[1]), (vec![0, 7], 0, 7));
    }
}
