//! Systems the benchmarks time, defined once: the benchmark builds them from here and the
//! example files that carry them are checked against them (`crates/scenario`'s tests).

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{credit_weight_from_share, DomainSpec, VcpuParams};
use rtvmm_core::Nanos;

/// The pcpus [`global_rtds_domains`] is meant for, in one RTDS pool.
pub const GLOBAL_RTDS_PCPUS: u32 = 4;

/// The domains of the many-pcpu benchmark (issue 12; `examples/global-rtds.toml`): 16
/// domains of one VCPU each at 1 ms every 4 ms (a quarter of a pcpu each: the
/// [`GLOBAL_RTDS_PCPUS`] pcpus are full), extratime off, each running two rate-monotonic
/// tasks (0.8 ms every 10 ms, 1.6 ms every 20 ms: 64 % of its VCPU) whose first releases
/// are staggered by 250 µs per domain. Priorities (rate-monotonic, ties in declaration
/// order) and Credit weights (from the share) are what a scenario file that does not give
/// them gets; RTDS reads neither.
pub fn global_rtds_domains() -> Vec<DomainSpec> {
    let us = Nanos::from_us;
    (0..16u64)
        .map(|d| {
            let (budget, period) = (us(1_000), us(4_000));
            let mut vcpu = VcpuParams::server(budget, period, d as u32 + 1);
            vcpu.weight = credit_weight_from_share(budget, period);
            vcpu.extratime = Some(false);
            let mut fast = TaskSpec::periodic("fast", us(10_000), us(800));
            let mut slow = TaskSpec::periodic("slow", us(20_000), us(1_600));
            fast.offset = us(250 * d);
            slow.offset = us(250 * d);
            DomainSpec {
                name: format!("d{d}"),
                vcpu,
                guest: GuestScheduler::Rm,
                tasks: vec![fast, slow],
                placement: Default::default(),
            }
        })
        .collect()
}
