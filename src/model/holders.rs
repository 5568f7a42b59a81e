//! Who holds each GPU, derived once per sample from the process rows: VRAM per user, the
//! total the listed processes account for, and how many there are. The panels, the header
//! and `pick` read this instead of scanning every process for every GPU on every frame.

use std::collections::HashMap;

use super::procs::ProcRow;
use crate::source::GpuId;
use crate::units::Bytes;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holders {
    /// (user, VRAM) per user, largest first; a process whose user is unknown (another PID
    /// namespace) is listed as `pid N`.
    pub owners: Vec<(String, Bytes)>,
    /// VRAM the listed processes hold together; `None` when any of them is unknown.
    pub listed: Option<Bytes>,
    pub processes: usize,
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
        let name = row
            .user
            .clone()
            .unwrap_or_else(|| format!("pid {}", row.key.pid));
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
