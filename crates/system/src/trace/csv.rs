//! The CSV writer (see the module doc of [`super`] for the columns).

use std::borrow::{Borrow, Cow};
use std::io::{self, Write};

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::{PcpuId, VcpuId};

use super::{guest_job, Event, TraceNames};
use crate::records::{GuestEvent, TraceEvent};
/// One CSV field, quoted when it holds a comma, a quote or a line break.
pub(crate) fn csv_field(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
}

/// Writes one CSV field ([`csv_field`]).
fn write_csv_field(w: &mut impl Write, field: &str) -> io::Result<()> {
    w.write_all(csv_field(field).as_bytes())
}

/// Writes `events` (in time order) one row each, as they come.
pub(super) fn write_csv<W: Write, E: Borrow<Event>>(
    w: &mut W,
    events: impl Iterator<Item = io::Result<E>>,
    names: &TraceNames,
    partial: Option<&str>,
) -> io::Result<()> {
    if let Some(why) = partial {
        writeln!(w, "# partial: {}", why.replace(['\n', '\r'], " "))?;
    }
    writeln!(w, "time_ns,kind,pcpu,vcpu,domain,task,job,detail")?;
    let vcpu_str = |v: Option<VcpuId>| v.map_or(String::new(), |v| v.0.to_string());
    let domain_of = |v: Option<VcpuId>| {
        v.and_then(|v| names.domain_of(v))
            .map_or(String::new(), |d| names.domain_name(d))
    };
    for item in events {
        let item = item?;
        let (at, event) = item.borrow();
        let (kind, pcpu, vcpu, domain, task, job, detail): (
            &str,
            Option<PcpuId>,
            Option<VcpuId>,
            String,
            String,
            Option<u64>,
            String,
        ) = match event {
            TraceEvent::Core(core) => {
                let (kind, pcpu, vcpu, detail) = match core {
                    CoreEvent::Switch {
                        pcpu,
                        from,
                        to,
                        reason,
                    } => {
                        let from = from.map_or("idle".to_string(), |v| v.0.to_string());
                        let detail = format!("from={from};reason={}", reason.as_str());
                        ("switch", Some(*pcpu), *to, detail)
                    }
                    CoreEvent::Resume { pcpu, vcpu } => {
                        ("resume", Some(*pcpu), *vcpu, String::new())
                    }
                    CoreEvent::Overhead { pcpu, cost } => (
                        "overhead",
                        Some(*pcpu),
                        None,
                        format!("cost_ns={}", cost.as_ns()),
                    ),
                    CoreEvent::Wake { vcpu } => ("wake", None, Some(*vcpu), String::new()),
                    CoreEvent::Block { vcpu } => ("block", None, Some(*vcpu), String::new()),
                    CoreEvent::Replenish { vcpu, budget } => (
                        "replenish",
                        None,
                        Some(*vcpu),
                        format!("budget_ns={}", budget.as_ns()),
                    ),
                    CoreEvent::BudgetExhausted { vcpu } => {
                        ("budget_exhausted", None, Some(*vcpu), String::new())
                    }
                    CoreEvent::BudgetDiscarded { vcpu, amount } => (
                        "budget_discarded",
                        None,
                        Some(*vcpu),
                        format!("amount_ns={}", amount.as_ns()),
                    ),
                };
                (
                    kind,
                    pcpu,
                    vcpu,
                    domain_of(vcpu),
                    String::new(),
                    None,
                    detail,
                )
            }
            TraceEvent::Guest(guest) => {
                let (domain, task, seq) = guest_job(guest);
                let (d, t) = (domain as usize, task as usize);
                let (kind, detail) = match guest {
                    GuestEvent::Release { .. } => ("release", String::new()),
                    GuestEvent::Run { end, .. } => ("run", format!("end_ns={}", end.as_ns())),
                    GuestEvent::Finish { missed, .. } => ("finish", format!("missed={missed}")),
                };
                (
                    kind,
                    None,
                    None,
                    names.domain_name(d),
                    names.task_name(d, t),
                    Some(seq),
                    detail,
                )
            }
        };
        write!(w, "{},{kind},", at.as_ns())?;
        if let Some(p) = pcpu {
            write!(w, "{}", p.0)?;
        }
        write!(w, ",{},", vcpu_str(vcpu))?;
        write_csv_field(w, &domain)?;
        w.write_all(b",")?;
        write_csv_field(w, &task)?;
        w.write_all(b",")?;
        if let Some(j) = job {
            write!(w, "{j}")?;
        }
        w.write_all(b",")?;
        write_csv_field(w, &detail)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}
