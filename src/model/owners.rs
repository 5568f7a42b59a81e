//! Who holds a GPU: VRAM per user on it, VRAM no listed process accounts for, and
//! whether the GPU is free. Pure derivations from the model, used by the panels, the
//! header, `--once`, `pick` and the exporter.

use super::Model;
use super::activity::FREE_MAX_UTIL;
use super::procs::ProcRow;
use crate::reading::mig::MigReading;
use crate::reading::workload::Workload;
use crate::reading::{GpuReading, GpuStatus};
use crate::units::Bytes;

/// VRAM held with no process listed is worth pointing out above this (the driver itself
/// keeps a few hundred MiB on every GPU).
pub const UNATTRIBUTED_MIN: Bytes = Bytes(Bytes::GIB);
const FREE_MAX_MEMORY_RATIO: f64 = 0.05;

/// (user, VRAM) for each user with a process on this GPU, largest first. A process whose
/// user is unknown (another PID namespace) is listed by PID.
pub fn owners<'a>(model: &'a Model, gpu: &GpuReading) -> &'a [(String, Bytes)] {
    model.holders(&gpu.id).map_or(&[], |h| h.owners.as_slice())
}

/// VRAM used on the GPU that no listed process accounts for, when that is significant
/// and every process's usage is known (otherwise the difference means nothing).
pub fn unattributed(model: &Model, gpu: &GpuReading) -> Option<Bytes> {
    if !model.processes_known() {
        return None;
    }
    let used = gpu.memory_used?;
    let listed = match model.holders(&gpu.id) {
        // A pod the kubelet names holds what no visible process accounts for.
        Some(h) if !h.pods.is_empty() => return None,
        Some(h) => h.listed?,
        None => Bytes(0),
    };
    let rest = used.saturating_sub(listed);
    (rest >= UNATTRIBUTED_MIN).then_some(rest)
}

/// A GPU nobody is using: no process, low util, almost no VRAM, and no warning.
pub fn is_free(model: &Model, gpu: &GpuReading) -> bool {
    gpu.status == GpuStatus::Ok
        && model.holders(&gpu.id).is_none()
        && gpu.util.is_some_and(|u| u.0 <= FREE_MAX_UTIL)
        && gpu
            .memory_ratio()
            .is_some_and(|r| r < FREE_MAX_MEMORY_RATIO)
        && model.gpu_severity(&gpu.id).is_none()
}

/// What stands in a GPU's owners when nobody is named there (no process listed, no VRAM
/// held by no process worth pointing out): one answer for the panels, the compact lines and
/// `--once`, so they never disagree on which GPU is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unheld {
    /// `is_free`: idle, almost no VRAM used, no warning.
    Free,
    /// Working (util above the free threshold) with no process to show for it: another
    /// container's or VM's job, or processes the driver does not list.
    Busy,
    /// Idle but holding VRAM, too little to name as held by no process.
    HoldsMemory,
    /// Not free for another reason (a warning, a reading unknown, lost, processes the
    /// source cannot list): nothing to add.
    NotFree,
}

/// What stands in for a GPU's owners, or `None` when someone is named (`owners`,
/// `unattributed`).
pub fn unheld(model: &Model, gpu: &GpuReading) -> Option<Unheld> {
    if !owners(model, gpu).is_empty() || unattributed(model, gpu).is_some() {
        return None;
    }
    // Where the source cannot list processes (`--prometheus`), "no process listed" says
    // nothing: the header says the process rows are unknown.
    let listed = model.processes_known() && gpu.status == GpuStatus::Ok;
    Some(if is_free(model, gpu) {
        Unheld::Free
    } else if listed && gpu.util.is_some_and(|u| u.0 > FREE_MAX_UTIL) {
        Unheld::Busy
    } else if listed
        && gpu
            .memory_ratio()
            .is_some_and(|r| r >= FREE_MAX_MEMORY_RATIO)
    {
        Unheld::HoldsMemory
    } else {
        Unheld::NotFree
    })
}

/// The free GPUs, in order.
fn free(model: &Model) -> impl Iterator<Item = &GpuReading> {
    model.gpus().iter().filter(|g| is_free(model, g))
}

/// Indices of the free GPUs, in order (the JSON document's `free_gpus`).
pub fn free_gpus(model: &Model) -> Vec<u32> {
    free(model).map(|g| g.index).collect()
}

/// Labels of the free GPUs (`6`, or `gpu1:6` when watching several hosts), in order.
pub fn free_labels(model: &Model) -> Vec<String> {
    free(model).map(GpuReading::label).collect()
}

/// (owner, VRAM) for each owner with a process on this MIG instance, largest first.
pub fn instance_owners<'a>(model: &'a Model, m: &MigReading) -> &'a [(String, Bytes)] {
    model.holders(&m.id).map_or(&[], |h| h.owners.as_slice())
}

/// The user of the Slurm job a process runs in, when Slurm (or the job's environment) said:
/// the process counts as theirs whatever its own UID (the `extern` step and prolog run as
/// root; a job may run a helper under another account), so one job is one owner.
pub fn job_user(row: &ProcRow) -> Option<&str> {
    match row.context.workload.as_deref()? {
        Workload::Slurm { names, .. } => names.user.as_deref(),
        _ => None,
    }
}

/// The Unix user a process counts for: its Slurm job's user when known, else its effective
/// user (without the ` (real …)` note a setuid program carries); `None` when not known here
/// (another PID namespace). Never a job, a pod or a PID: per-user sums add these up.
pub fn unix_user(row: &ProcRow) -> Option<&str> {
    job_user(row).or_else(|| {
        let user = row.user.as_deref()?;
        Some(
            user.split_once(" (real ")
                .map_or(user, |(effective, _)| effective),
        )
    })
}
