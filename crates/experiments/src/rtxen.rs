//! What the 2011 (RT-Xen, EMSOFT 2011) experiments share: the five-domain systems of the
//! share-pattern table, and the six policies they compare.

use rtvmm_core::guest::GuestScheduler;
use rtvmm_core::policy::PolicyKind;
use rtvmm_gen::rtxen::{rtxen_taskset, share_pattern_table, SharePattern};

use crate::error::ExperimentError;
use crate::system::{gen_tasks, ServerDomain};

/// The policies the 2011 experiments compare: the four servers, Credit and SEDF.
pub const RTXEN_POLICIES: [PolicyKind; 6] = [
    PolicyKind::Deferrable,
    PolicyKind::Periodic,
    PolicyKind::Polling,
    PolicyKind::Sporadic,
    PolicyKind::Credit,
    PolicyKind::Sedf,
];

/// The five domains d1…d5 of `pattern` (servers from the share table) with the
/// rtxen-capacity task set for load α = `load_permille` ‰ and `seed`, guests `rm`.
pub fn rtxen_domains(
    pattern: SharePattern,
    load_permille: u32,
    seed: u64,
) -> Result<Vec<ServerDomain>, ExperimentError> {
    let system = rtxen_taskset(pattern, load_permille, seed)?;
    let table = share_pattern_table(pattern);
    Ok(table
        .iter()
        .zip(&system.domains)
        .map(|(server, domain)| {
            debug_assert_eq!(server.name, domain.name);
            ServerDomain {
                name: server.name.clone(),
                budget: server.budget,
                period: server.period,
                priority: server.priority,
                guest: GuestScheduler::Rm,
                tasks: gen_tasks(domain),
            }
        })
        .collect())
}

/// Sum of wcet ÷ period over a domain's tasks.
pub fn domain_utilisation(domain: &ServerDomain) -> f64 {
    domain
        .tasks
        .iter()
        .map(|t| t.wcet.as_ns() as f64 / t.period.as_ns() as f64)
        .sum()
}

/// budget ÷ period of a domain's server.
pub fn domain_share(domain: &ServerDomain) -> f64 {
    domain.budget.as_ns() as f64 / domain.period.as_ns() as f64
}
