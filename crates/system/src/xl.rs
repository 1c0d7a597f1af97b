//! Applying an `xl` command ([`XlCommand`]) to a running [`Machine`]: each command maps to
//! the machine's API (`sched-rtds` → [`Machine::adjust`] of budget, period and extratime;
//! `sched-credit` → weight and cap; `vcpu-pin` → [`Machine::pin`]; `cpupool-*` → the pool
//! commands). The simulator applies [`crate::Change::Xl`] with it; the scenario reader
//! runs it on a machine without work to check a file's events before any run.
//!
//! A command is all or nothing: when it touches several VCPUs, every one is checked
//! before any changes, and a refused command changes nothing.
//!
//! `sched-rtds` sets the budget and period every server-like policy reads (RTDS, SEDF,
//! the fixed-priority servers), whatever the pool's policy, as rtvmm's `sched-set` does;
//! it leaves the weight alone.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::{Machine, MachineError, PoolSpec};
use rtvmm_core::model::{DomainId, VcpuId, VcpuParams};
use rtvmm_core::policy::PolicySettings;
use rtvmm_core::xl::{VcpuSel, XlCommand};
use rtvmm_core::Nanos;

/// Why a command was refused; the command changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XlApplyError {
    #[error("`{command}`: no domain named '{domain}'")]
    UnknownDomain { command: String, domain: String },
    #[error("`{command}`: domain '{domain}' has no VCPU {vcpu} (it has {count})")]
    NoSuchVcpu {
        command: String,
        domain: String,
        vcpu: u32,
        count: usize,
    },
    #[error("`{command}`: policy {policy} needs an ARINC 653 schedule table, which a pool created at run time cannot have")]
    NeedsArincTable { command: String, policy: String },
    // `error`, not `source`: the message includes it.
    #[error("`{command}`: {error}")]
    Machine {
        command: String,
        error: MachineError,
    },
}

/// A present domain's id and its VCPUs (in VCPU order), by name: what [`apply_xl`] asks
/// of its caller.
pub type VcpusOf<'a> = dyn Fn(&str) -> Option<(DomainId, Vec<VcpuId>)> + 'a;

/// Applies `cmd` at `now`. `vcpus_of` gives a present domain's id and its VCPUs (in VCPU
/// order) by name; `settings` gives the configuration of a policy a new pool gets.
pub fn apply_xl(
    machine: &mut Machine,
    now: Nanos,
    cmd: &XlCommand,
    vcpus_of: &VcpusOf,
    settings: &PolicySettings,
) -> Result<(), XlApplyError> {
    let command = || cmd.to_string();
    let refused = |error: MachineError| XlApplyError::Machine {
        command: command(),
        error,
    };
    let domain = |name: &str| {
        vcpus_of(name).ok_or_else(|| XlApplyError::UnknownDomain {
            command: command(),
            domain: name.to_string(),
        })
    };
    let chosen = |name: &str, sel: VcpuSel| -> Result<Vec<VcpuId>, XlApplyError> {
        let (_, vcpus) = domain(name)?;
        match sel {
            VcpuSel::All => Ok(vcpus),
            VcpuSel::One(i) => match vcpus.get(i as usize) {
                Some(&v) => Ok(vec![v]),
                None => Err(XlApplyError::NoSuchVcpu {
                    command: command(),
                    domain: name.to_string(),
                    vcpu: i,
                    count: vcpus.len(),
                }),
            },
        }
    };
    match cmd {
        XlCommand::CpupoolCreate { name, sched } => {
            let config = settings
                .config(*sched)
                .map_err(|_| XlApplyError::NeedsArincTable {
                    command: command(),
                    policy: sched.name().to_string(),
                })?;
            machine
                .pool_create(now, PoolSpec::new(name, CpuSet::EMPTY, config))
                .map_err(refused)
        }
        XlCommand::CpupoolCpuAdd { pool, cpu } => {
            let pool = machine.pool_index(pool).map_err(refused)?;
            machine.pool_cpu_add(now, pool, *cpu).map_err(refused)
        }
        XlCommand::CpupoolCpuRemove { pool, cpu } => {
            let pool = machine.pool_index(pool).map_err(refused)?;
            machine.pool_cpu_remove(now, pool, *cpu).map_err(refused)
        }
        XlCommand::CpupoolMigrate { domain: name, pool } => {
            let (id, _) = domain(name)?;
            let pool = machine.pool_index(pool).map_err(refused)?;
            machine.pool_migrate(now, id, pool).map_err(refused)
        }
        XlCommand::VcpuPin {
            domain: name,
            vcpu,
            cpus,
        } => {
            let vcpus = chosen(name, *vcpu)?;
            for &v in &vcpus {
                check_pin(machine, v, *cpus).map_err(refused)?;
            }
            for &v in &vcpus {
                machine.pin(now, v, *cpus).map_err(refused)?;
            }
            Ok(())
        }
        XlCommand::SchedRtds {
            domain: name,
            vcpu,
            period_us,
            budget_us,
            extratime,
        } => {
            let vcpus = chosen(name, *vcpu)?;
            set_params(machine, now, &vcpus, |p| {
                p.budget = Nanos::from_us(*budget_us);
                p.period = Nanos::from_us(*period_us);
                if let Some(e) = extratime {
                    p.extratime = Some(*e);
                }
            })
            .map_err(refused)
        }
        XlCommand::SchedCredit {
            domain: name,
            weight,
            cap,
        } => {
            let (_, vcpus) = domain(name)?;
            set_params(machine, now, &vcpus, |p| {
                if let Some(w) = weight {
                    p.weight = *w;
                }
                if let Some(c) = cap {
                    p.cap = *c;
                }
            })
            .map_err(refused)
        }
    }
}

/// Every VCPU of `vcpus` gets its parameters changed by `change`: all are checked by
/// their pool's policy first, then all are adjusted (all or nothing).
pub(crate) fn set_params(
    machine: &mut Machine,
    now: Nanos,
    vcpus: &[VcpuId],
    change: impl Fn(&mut VcpuParams),
) -> Result<(), MachineError> {
    let mut new = Vec::with_capacity(vcpus.len());
    for &v in vcpus {
        let mut params = machine.params(v).clone();
        change(&mut params);
        machine
            .policy_of(v)
            .validate(&params)
            .map_err(|error| MachineError::Param { vcpu: v.0, error })?;
        new.push((v, params));
    }
    for (v, params) in new {
        machine.adjust(now, v, params)?;
    }
    Ok(())
}

/// The checks [`Machine::pin`] makes, without pinning, so that a command pinning several
/// VCPUs can refuse before pinning any: the affinity lies within the VCPU's pool, and is
/// one pcpu when the pool's policy schedules several pcpus partitioned.
fn check_pin(machine: &Machine, vcpu: VcpuId, cpus: Option<CpuSet>) -> Result<(), MachineError> {
    let (pool_name, _) = machine.placement(vcpu);
    let (_, pool_cpus, config) = machine
        .pools()
        .find(|(name, _, _)| *name == pool_name)
        .expect("a VCPU's pool exists");
    if pool_cpus.is_empty() {
        return Err(MachineError::EmptyPool {
            pool: pool_name.to_string(),
        });
    }
    let affinity = cpus.unwrap_or(pool_cpus);
    if affinity.is_empty() || !affinity.is_subset(pool_cpus) {
        return Err(MachineError::AffinityOutsidePool {
            vcpu: vcpu.0,
            affinity,
            pool: pool_name.to_string(),
            pool_pcpus: pool_cpus,
        });
    }
    let kind = config.kind();
    if pool_cpus.len() > 1 && !kind.schedules_globally() && affinity.len() != 1 {
        return Err(MachineError::NeedsPinning {
            vcpu: vcpu.0,
            policy: kind,
            pool: pool_name.to_string(),
            affinity,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::machine::MachineConfig;
    use rtvmm_core::policy::{PolicyConfig, PolicyKind, RtdsMode};

    fn ms(n: u64) -> Nanos {
        Nanos::from_ms(n)
    }

    /// Two pcpus: `Pool-0` = {0} under RTDS, `rt` = {1} under RTDS. Domain `web` has two
    /// VCPUs in `Pool-0`; domain `db` one in `rt`.
    fn machine() -> (Machine, Vec<VcpuId>, VcpuId) {
        let config = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        let rtds = PolicyConfig::Rtds(RtdsMode::Event);
        let mut m = Machine::with_pools(
            config,
            vec![
                PoolSpec::new("Pool-0", CpuSet::one(0), rtds.clone()),
                PoolSpec::new("rt", CpuSet::one(1), rtds),
            ],
        )
        .unwrap();
        let p = VcpuParams::server(ms(2), ms(10), 1);
        let web = vec![
            m.add_vcpu_in(Nanos::ZERO, DomainId(0), p.clone(), 0, None)
                .unwrap(),
            m.add_vcpu_in(Nanos::ZERO, DomainId(0), p.clone(), 0, None)
                .unwrap(),
        ];
        let db = m.add_vcpu_in(Nanos::ZERO, DomainId(1), p, 1, None).unwrap();
        (m, web, db)
    }

    fn apply(m: &mut Machine, web: &[VcpuId], db: VcpuId, line: &str) -> Result<(), String> {
        let cmd = XlCommand::parse(line).unwrap();
        let web = web.to_vec();
        let vcpus_of = move |name: &str| match name {
            "web" => Some((DomainId(0), web.clone())),
            "db" => Some((DomainId(1), vec![db])),
            _ => None,
        };
        apply_xl(m, ms(1), &cmd, &vcpus_of, &PolicySettings::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn sched_rtds_sets_the_chosen_vcpus() {
        let (mut m, web, db) = machine();
        apply(
            &mut m,
            &web,
            db,
            "sched-rtds -d web -v 1 -p 20000 -b 5000 -e 1",
        )
        .unwrap();
        assert_eq!(m.params(web[0]).budget, ms(2), "VCPU 0 untouched");
        let p = m.params(web[1]);
        assert_eq!(
            (p.budget, p.period, p.extratime),
            (ms(5), ms(20), Some(true))
        );
        apply(&mut m, &web, db, "sched-rtds -d web -p 8000 -b 4000").unwrap();
        for &v in &web {
            let p = m.params(v);
            assert_eq!((p.budget, p.period), (ms(4), ms(8)));
        }
        assert_eq!(m.params(web[1]).extratime, Some(true), "-e not given: kept");
        assert_eq!(m.params(db).budget, ms(2), "another domain untouched");
    }

    #[test]
    fn sched_credit_sets_weight_and_cap() {
        let (mut m, web, db) = machine();
        apply(&mut m, &web, db, "sched-credit -d db -w 512").unwrap();
        assert_eq!((m.params(db).weight, m.params(db).cap), (512, 0));
    }

    #[test]
    fn refused_commands_change_nothing() {
        let (mut m, web, db) = machine();
        let before: Vec<VcpuParams> = web.iter().map(|&v| m.params(v).clone()).collect();
        assert_eq!(
            apply(&mut m, &web, db, "sched-rtds -d nobody -p 100 -b 50").unwrap_err(),
            "`sched-rtds -d nobody -p 100 -b 50`: no domain named 'nobody'"
        );
        assert_eq!(
            apply(&mut m, &web, db, "sched-rtds -d web -v 2 -p 100 -b 50").unwrap_err(),
            "`sched-rtds -d web -v 2 -p 100 -b 50`: domain 'web' has no VCPU 2 (it has 2)"
        );
        // Pinning both VCPUs of `web` outside its pool: refused before either is pinned.
        assert_eq!(
            apply(&mut m, &web, db, "vcpu-pin web all 1").unwrap_err(),
            "`vcpu-pin web all 1`: vcpu 0: affinity 1 is not within cpupool 'Pool-0' (pcpus 0)"
        );
        assert_eq!(
            apply(&mut m, &web, db, "cpupool-cpu-add rt 0").unwrap_err(),
            "`cpupool-cpu-add rt 0`: pcpu 0: it is in cpupool 'Pool-0' already (a pcpu \
             belongs to one pool)"
        );
        assert_eq!(
            apply(&mut m, &web, db, "cpupool-cpu-remove rt 1").unwrap_err(),
            "`cpupool-cpu-remove rt 1`: cpupool 'rt': removing pcpu 1 would leave it without \
             pcpus while it holds VCPUs"
        );
        assert_eq!(
            apply(&mut m, &web, db, "cpupool-create rt sched=credit").unwrap_err(),
            "`cpupool-create rt sched=credit`: cpupool 'rt': a pool of that name exists already"
        );
        assert_eq!(
            apply(&mut m, &web, db, "cpupool-create tt sched=arinc653").unwrap_err(),
            "`cpupool-create tt sched=arinc653`: policy arinc653 needs an ARINC 653 schedule \
             table, which a pool created at run time cannot have"
        );
        let after: Vec<VcpuParams> = web.iter().map(|&v| m.params(v).clone()).collect();
        assert_eq!(before, after);
        assert_eq!(m.placement(web[0]), ("Pool-0", CpuSet::one(0)));
        assert_eq!(m.placement(web[1]), ("Pool-0", CpuSet::one(0)));
        assert_eq!(m.pools().count(), 2);
    }

    #[test]
    fn pools_are_created_filled_and_domains_migrate() {
        let (mut m, web, db) = machine();
        apply(&mut m, &web, db, "cpupool-create spare sched=credit").unwrap();
        // An empty pool cannot take a domain.
        assert_eq!(
            apply(&mut m, &web, db, "cpupool-migrate db spare").unwrap_err(),
            "`cpupool-migrate db spare`: cpupool 'spare': it has no pcpus, so it cannot hold \
             domains"
        );
        // Pcpu 1 leaves `rt` only once `db` has left it.
        apply(&mut m, &web, db, "cpupool-migrate db Pool-0").unwrap();
        apply(&mut m, &web, db, "cpupool-cpu-remove rt 1").unwrap();
        apply(&mut m, &web, db, "cpupool-cpu-add spare 1").unwrap();
        apply(&mut m, &web, db, "cpupool-migrate db spare").unwrap();
        assert_eq!(m.placement(db), ("spare", CpuSet::one(1)));
        assert_eq!(m.policy_of(db).kind(), PolicyKind::Credit);
    }
}
