//! [`VcpuTable`]: a policy's per-VCPU state, indexed by VCPU id.
//!
//! VCPU ids are small and never reused (see [`VcpuId`]), so a vector of optional slots is
//! both the simplest and the fastest map; iteration is in id order, never a hash order.

use crate::model::VcpuId;

/// Per-VCPU state of one policy: a slot per VCPU id, empty for ids that are not (or no
/// longer) the policy's.
#[derive(Clone, Debug)]
pub struct VcpuTable<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for VcpuTable<T> {
    fn default() -> Self {
        VcpuTable { slots: Vec::new() }
    }
}

impl<T> VcpuTable<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `value` in `vcpu`'s slot (replacing what was there).
    pub fn insert(&mut self, vcpu: VcpuId, value: T) {
        if self.slots.len() <= vcpu.index() {
            self.slots.resize_with(vcpu.index() + 1, || None);
        }
        self.slots[vcpu.index()] = Some(value);
    }

    /// Empties `vcpu`'s slot, returning what it held.
    pub fn remove(&mut self, vcpu: VcpuId) -> Option<T> {
        self.slots.get_mut(vcpu.index()).and_then(Option::take)
    }

    /// The state of a VCPU of this policy. Panics for any other id: the machine only
    /// calls a policy's hooks for VCPUs it inserted and has not removed.
    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> &T {
        match self.slots.get(vcpu.index()) {
            Some(Some(value)) => value,
            _ => panic!("vcpu {} is not in this policy", vcpu.0),
        }
    }

    /// See [`Self::get`].
    #[inline]
    pub fn get_mut(&mut self, vcpu: VcpuId) -> &mut T {
        match self.slots.get_mut(vcpu.index()) {
            Some(Some(value)) => value,
            _ => panic!("vcpu {} is not in this policy", vcpu.0),
        }
    }

    /// See [`Self::try_get`].
    #[inline]
    pub fn try_get_mut(&mut self, vcpu: VcpuId) -> Option<&mut T> {
        self.slots.get_mut(vcpu.index()).and_then(Option::as_mut)
    }

    /// The state of `vcpu`, if it is this policy's.
    #[inline]
    pub fn try_get(&self, vcpu: VcpuId) -> Option<&T> {
        self.slots.get(vcpu.index()).and_then(Option::as_ref)
    }

    pub fn contains(&self, vcpu: VcpuId) -> bool {
        self.try_get(vcpu).is_some()
    }

    /// Every present VCPU's state, in id order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// Every present VCPU's state, mutably, in id order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().flatten()
    }

    /// Every present VCPU with its state, in id order.
    pub fn entries(&self) -> impl Iterator<Item = (VcpuId, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.as_ref().map(|value| (VcpuId(i as u32), value)))
    }

    /// The ids with a slot so far, present or not: `0..capacity` covers every present VCPU
    /// (for passes that change the table while they walk it).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Number of present VCPUs.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_by_id_in_id_order() {
        let mut t = VcpuTable::new();
        t.insert(VcpuId(3), "c");
        t.insert(VcpuId(1), "a");
        assert_eq!(t.iter().copied().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(t.entries().map(|(v, _)| v.0).collect::<Vec<_>>(), [1, 3]);
        assert_eq!((t.len(), t.capacity()), (2, 4));
        assert_eq!(t.remove(VcpuId(1)), Some("a"));
        assert_eq!(t.remove(VcpuId(1)), None);
        assert!(!t.contains(VcpuId(1)) && t.contains(VcpuId(3)));
        assert_eq!(t.try_get(VcpuId(9)), None);
        *t.get_mut(VcpuId(3)) = "d";
        assert_eq!(*t.get(VcpuId(3)), "d");
    }

    #[test]
    #[should_panic(expected = "vcpu 2 is not in this policy")]
    fn a_missing_vcpu_is_a_bug() {
        VcpuTable::<u8>::new().get(VcpuId(2));
    }
}
