//! What a simulation hands to the shared vocabulary at its end: its results
//! ([`RunResults`]), its jobs as rows, and the names its trace's numbers stand for.

use rtvmm_core::Nanos;
use rtvmm_system::records::JobRecord;
use rtvmm_system::results::{
    domain_job_rows, ChainResult, DomainJobs, JobRow, RunResults, TaskJobs, SOURCE_SIMULATION,
};
use rtvmm_system::trace::{DomainNames, TraceNames};

use crate::driver::Simulation;

impl Simulation {
    /// The results of this simulation, which ran until `end`.
    pub fn results(&self, scenario: &str, seed: u64, end: Nanos) -> RunResults {
        let domains: Vec<DomainJobs> = self
            .domains()
            .iter()
            .enumerate()
            .map(|(d, run)| {
                let mut pending: Vec<Vec<JobRecord>> = vec![Vec::new(); run.spec.tasks.len()];
                if run.removed_at.is_none() {
                    for (t, job) in self.pending_jobs(d) {
                        pending[t].push(job);
                    }
                }
                DomainJobs {
                    name: &run.spec.name,
                    vcpus: &run.vcpus,
                    tasks: run
                        .stats
                        .iter()
                        .zip(&run.spec.tasks)
                        .zip(pending)
                        .map(|((stats, spec), pending)| TaskJobs {
                            name: &spec.name,
                            relative_deadline: spec.deadline,
                            stats,
                            pending,
                        })
                        .collect(),
                }
            })
            .collect();
        let mut results = RunResults::from_domains(
            self.machine(),
            &domains,
            scenario,
            seed,
            end,
            SOURCE_SIMULATION,
        );
        results.chains = self
            .chains()
            .iter()
            .map(|chain| ChainResult::of(&chain.spec.name, &chain.stats))
            .collect();
        results
    }

    /// Every job of this run, which ended at `end`, by domain, task and job number. Jobs
    /// of a removed domain that were pending at its removal are left out, as in the
    /// counts. `None` when the simulation did not keep its jobs
    /// ([`Simulation::set_keep_jobs`]).
    pub fn job_rows(&self, end: Nanos) -> Option<Vec<JobRow>> {
        if !self.keeps_jobs() {
            return None;
        }
        let mut rows = Vec::new();
        for (d, run) in self.domains().iter().enumerate() {
            let mut jobs: Vec<(usize, JobRecord)> = run
                .finished
                .iter()
                .enumerate()
                .flat_map(|(t, js)| js.iter().map(move |j| (t, j.clone())))
                .collect();
            if run.removed_at.is_none() {
                jobs.extend(self.pending_jobs(d));
            }
            rows.extend(domain_job_rows(&run.spec, jobs, end));
        }
        Some(rows)
    }

    /// The names of this simulation's domains, tasks and VCPUs (every VCPU of a domain
    /// named after it); the run ends at its `now`.
    pub fn trace_names(&self) -> TraceNames {
        let mut vcpu_domain = vec![None; self.machine().vcpu_count()];
        let domains = self
            .domains()
            .iter()
            .enumerate()
            .map(|(i, d)| {
                for v in &d.vcpus {
                    if vcpu_domain.len() <= v.index() {
                        vcpu_domain.resize(v.index() + 1, None);
                    }
                    vcpu_domain[v.index()] = Some(i);
                }
                DomainNames::of(&d.spec, d.removed_at)
            })
            .collect();
        TraceNames {
            domains,
            vcpu_domain,
            pcpus: self.machine().config().pcpus,
            end: Some(self.now()),
        }
    }
}
