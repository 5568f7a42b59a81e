//! Who holds each GPU, derived once per sample from the process rows: VRAM per user, the
//! total the listed processes account for, and how many there are. The panels, the header
//! and `pick` read this instead of scanning every process for every GPU on every frame.

use std::collections::HashMap;

use super::procs::ProcRow;
use crate::source::GpuId;
use crate::units::Bytes;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holders {
    /// (owner, VRAM) per owner, largest first: a job (`slurm 48121 (alice)`), else a user;
    /// a process whose user is unknown (another PID namespace) is listed as `pid N`.
    pub owners: Vec<(String, Bytes)>,
    /// VRAM the listed processes hold together; `None` when any of them is unknown.
    pub listed: Option<Bytes>,
    pub processes: usize,
}

/// Who a row counts as on the owners line: its job with the user in brackets
/// (`slurm 48121 (alice)`), the user, or the PID when neither is known.
pub fn owner_name(row: &ProcRow) -> String {
    let job = row
        .context
        .workload
        .as_deref()
        .and_then(super::jobs::short_label);
    match (job, &row.user) {
        (Some(job), Some(user)) => format!("{job} ({user})"),
        (Some(job), None) => job,
        (None, Some(user)) => user.clone(),
        (None, None) => format!("pid {}", row.key.pid),
    }
}

pub fn by_gpu(rows: &[ProcRow]) -> HashMap<GpuId, Holders> {
    let mut out: HashMap<GpuId, Holders> = HashMap::new();
    for row in rows {
        let h = out.entry(row.key.gpu.clone()).or_insert_with(|| Holders {
            listed: Some(Bytes(0)),
            ..Holders::default()
        });
        h.processes += 1;
        h.listed = match (h.listed, row.vram) {
            (Some(total), Some(v)) => Some(total + v),
            _ => None,
        };
        let name = owner_name(row);
        let vram = row.vram.unwrap_or_default();
        match h.owners.iter_mut().find(|(u, _)| *u == name) {
            Some((_, total)) => *total = *total + vram,
            None => h.owners.push((name, vram)),
        }
    }
    for h in out.values_mut() {
        h.owners
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    }
    out
}
