//! Polling: NOT IMPLEMENTED YET (stub so the workspace builds while the policy is written).

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, VcpuView};
use crate::time::Nanos;

pub struct Polling;

impl Polling {
    pub fn new(pcpus: u32) -> Polling {
        let _ = pcpus;
        todo!("polling policy")
    }
}

impl Policy for Polling {
    fn kind(&self) -> PolicyKind {
        todo!()
    }
    fn validate(&self, _params: &VcpuParams) -> Result<(), ParamError> {
        todo!()
    }
    fn insert_vcpu(&mut self, _cx: &mut Cx, _vcpu: VcpuId, _params: &VcpuParams) {
        todo!()
    }
    fn remove_vcpu(&mut self, _cx: &mut Cx, _vcpu: VcpuId) {
        todo!()
    }
    fn wake(&mut self, _cx: &mut Cx, _vcpu: VcpuId) -> bool {
        todo!()
    }
    fn sleep(&mut self, _cx: &mut Cx, _vcpu: VcpuId) -> bool {
        todo!()
    }
    fn burn(&mut self, _cx: &mut Cx, _pcpu: PcpuId, _ran: Nanos) {
        todo!()
    }
    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        todo!()
    }
    fn next_timer(&self) -> Option<Nanos> {
        todo!()
    }
    fn handle_timer(&mut self, _cx: &mut Cx) -> bool {
        todo!()
    }
    fn adjust(&mut self, _cx: &mut Cx, _vcpu: VcpuId, _params: &VcpuParams) -> bool {
        todo!()
    }
    fn view(&self, _vcpu: VcpuId) -> VcpuView {
        todo!()
    }
    fn counters(&self, _vcpu: VcpuId) -> BudgetCounters {
        todo!()
    }
    fn check_invariants(&self) -> Result<(), String> {
        todo!()
    }
}
