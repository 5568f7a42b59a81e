//! The model's warning written as the public document's (`wire::Warning::of`): its numbers
//! in base units, its subject and severity. Lives with the model, above the wire format, so
//! `wire` knows nothing of `model`. Knows no words: the caller passes the sentence in.

use crate::model::warnings as model;
use crate::wire::{Severity, SubjectKind, Warning, WarningKind};

impl Warning {
    /// The model's warning as the document carries it: its numbers in base units, and the
    /// sentence people see when the caller passes it (this module knows no words).
    pub fn of(w: &model::Warning, message: Option<String>) -> Warning {
        let (subject, gpu_uuid, gpu_index, host) = match &w.subject {
            model::Subject::Gpu { id, index, host } => (
                SubjectKind::Gpu,
                Some(id.0.clone()),
                Some(*index),
                host.clone(),
            ),
            model::Subject::Host { name } => (SubjectKind::Host, None, None, Some(name.clone())),
        };
        Warning {
            subject,
            gpu_uuid,
            gpu_index,
            host,
            severity: match w.severity {
                model::Severity::Warning => Severity::Warning,
                model::Severity::Critical => Severity::Critical,
            },
            code: w.kind.code(),
            kind: WarningKind::of(&w.kind),
            message,
        }
    }
}

impl WarningKind {
    /// The model's kind with its numbers in base units.
    fn of(kind: &model::WarningKind) -> WarningKind {
        let secs = |d: &std::time::Duration| d.as_secs_f64();
        match kind {
            model::WarningKind::OomRisk {
                used,
                total,
                percent,
                time_to_full,
                instance,
            } => WarningKind::OomRisk {
                memory_used: used.0,
                memory_total: total.0,
                memory_percent: *percent,
                time_to_full: time_to_full.as_ref().map(secs),
                mig_uuid: instance.as_ref().map(|i| i.id.0.clone()),
                gpu_instance_id: instance.as_ref().and_then(|i| i.gpu_instance),
                mig_profile: instance.as_ref().and_then(|i| i.profile.clone()),
            },
            model::WarningKind::Overheating {
                temperature,
                held_for,
                critical_at,
                slowdown,
            } => WarningKind::Overheating {
                temperature: temperature.0,
                held_for: secs(held_for),
                critical_at: critical_at.0,
                slowdown: slowdown.map(|c| c.0),
            },
            model::WarningKind::Lost => WarningKind::Lost,
            model::WarningKind::IdleHolder {
                pid,
                user,
                command,
                vram,
                idle_for,
            } => WarningKind::IdleHolder {
                pid: *pid,
                user: user.clone(),
                command: command.clone(),
                gpu_memory: vram.0,
                idle_for: secs(idle_for),
            },
            model::WarningKind::HostDown { reason } => WarningKind::HostDown {
                reason: reason.clone(),
            },
            model::WarningKind::StaleVram { used, held_for } => WarningKind::StaleVram {
                memory_used: used.0,
                held_for: secs(held_for),
            },
            model::WarningKind::PileUp {
                unpinned,
                owners,
                free,
            } => WarningKind::PileUp {
                unpinned_pids: unpinned.clone(),
                owners: *owners,
                free_gpus: free.clone(),
            },
            model::WarningKind::Squatter {
                uid,
                namespace,
                pod,
                vram,
                allocated_to,
            } => WarningKind::Squatter {
                pod_uid: uid.clone(),
                pod_namespace: namespace.clone(),
                pod_name: pod.clone(),
                gpu_memory: vram.map(|v| v.0),
                allocated_to: allocated_to.clone(),
            },
            // Listed, not `_`: a new kind must not compile until it is written somewhere.
            health @ (model::WarningKind::Xid { .. }
            | model::WarningKind::RemappedRows(_)
            | model::WarningKind::RetiredPages(_)
            | model::WarningKind::PcieReplays { .. }
            | model::WarningKind::EccCorrected { .. }
            | model::WarningKind::HwSlowdown { .. }) => WarningKind::health(health),
        }
    }

    /// The health kinds (`model::health`) as the document carries them.
    fn health(kind: &model::WarningKind) -> WarningKind {
        match kind {
            model::WarningKind::Xid { code, count, ago } => WarningKind::Xid {
                xid: *code,
                count: *count,
                ago: ago.as_secs_f64(),
            },
            model::WarningKind::RemappedRows(r) => WarningKind::RemappedRows {
                correctable: r.correctable,
                uncorrectable: r.uncorrectable,
                pending: r.pending,
                failed: r.failed,
            },
            model::WarningKind::RetiredPages(p) => WarningKind::RetiredPages {
                single_bit: p.single_bit,
                double_bit: p.double_bit,
                pending: p.pending,
            },
            model::WarningKind::PcieReplays { total, growth } => WarningKind::PcieReplays {
                total: *total,
                growth: *growth,
            },
            model::WarningKind::EccCorrected { total, growth } => WarningKind::EccCorrected {
                total: *total,
                growth: *growth,
            },
            model::WarningKind::HwSlowdown { reason, held_for } => WarningKind::HwSlowdown {
                reason: reason.name().to_string(),
                held_for: held_for.as_secs_f64(),
            },
            // The other kinds are `of`'s; it passes only the ones above.
            _ => unreachable!("not a health kind: {kind:?}"),
        }
    }
}

#[cfg(test)]
#[path = "warning_doc_tests.rs"]
mod tests;
