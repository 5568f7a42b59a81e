//! The GPU-0 pile-up: a process started without `CUDA_VISIBLE_DEVICES` uses every GPU and
//! puts its work on device 0, so on a shared server everybody's forgotten jobs land on
//! GPU 0 while other GPUs sit free. Raised when processes of two or more users or jobs
//! share a host's GPU 0, at least one of them is known to have no pinning (its
//! environment was readable and neither `CUDA_VISIBLE_DEVICES` nor a container's
//! `NVIDIA_VISIBLE_DEVICES` was set), and another GPU of the same host is free. Pure.

use std::collections::BTreeSet;

use super::Model;
use super::holders::owner_name;
use super::owners::is_free;
use super::procs::ProcRow;
use super::visible::{Pinning, pinning_for};
use super::warnings::{Severity, Subject, Warning, WarningKind};
use crate::source::GpuReading;

/// Whether a row on `gpu` is known to run unpinned (an unreadable environment is not
/// evidence); pinned means by the variables of the GPU's vendor.
pub fn unpinned(row: &ProcRow, gpu: &GpuReading) -> bool {
    pinning_for(row.context.env.as_deref(), gpu.vendor) == Pinning::Unset
}

/// The pile-up warnings of the model's latest sample, one per host at most.
pub fn evaluate(model: &Model) -> Vec<Warning> {
    model
        .gpus()
        .iter()
        .filter(|g| g.index == 0)
        .filter_map(|gpu0| on_gpu0(model, gpu0))
        .collect()
}

fn on_gpu0(model: &Model, gpu0: &GpuReading) -> Option<Warning> {
    let rows: Vec<&ProcRow> = model
        .procs()
        .all
        .iter()
        .filter(|r| r.key.gpu == gpu0.id)
        .collect();
    let owners: BTreeSet<String> = rows.iter().map(|r| owner_name(r)).collect();
    let loose: Vec<&&ProcRow> = rows.iter().filter(|r| unpinned(r, gpu0)).collect();
    let free: Vec<u32> = model
        .gpus()
        .iter()
        .filter(|g| g.host == gpu0.host && g.id != gpu0.id && is_free(model, g))
        .map(|g| g.index)
        .collect();
    if owners.len() < 2 || loose.is_empty() || free.is_empty() {
        return None;
    }
    let users: BTreeSet<String> = loose.iter().map(|r| owner_name(r)).collect();
    Some(Warning {
        severity: Severity::Warning,
        subject: Subject::Gpu {
            id: gpu0.id.clone(),
            index: gpu0.index,
            host: gpu0.host.clone(),
        },
        kind: WarningKind::PileUp {
            unpinned: loose.iter().map(|r| r.key.pid).collect(),
            owners: users.len(),
            free,
        },
    })
}
