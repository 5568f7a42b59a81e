//! Who holds a GPU: VRAM per user on it, VRAM no listed process accounts for, and
//! whether the GPU is free. Pure derivations from the state, used by panels and the header.

use crate::source::{GpuReading, GpuStatus};
use crate::state::State;
use crate::units::Bytes;

/// VRAM held with no process listed is worth pointing out above this (the driver itself
/// keeps a few hundred MiB on every GPU).
pub const UNATTRIBUTED_MIN: Bytes = Bytes(Bytes::GIB);
/// A GPU counts as free below these.
const FREE_MAX_UTIL: u32 = 5;
const FREE_MAX_MEMORY_RATIO: f64 = 0.05;

/// (user, VRAM) for each user with a process on this GPU, largest first. A process whose
/// user is unknown (another PID namespace) is listed by PID.
pub fn owners<'a>(state: &'a State, gpu: &GpuReading) -> &'a [(String, Bytes)] {
    state
        .holders
        .get(&gpu.id)
        .map_or(&[], |h| h.owners.as_slice())
}

/// VRAM used on the GPU that no listed process accounts for, when that is significant
/// and every process's usage is known (otherwise the difference means nothing).
pub fn unattributed(state: &State, gpu: &GpuReading) -> Option<Bytes> {
    let used = gpu.memory_used?;
    let listed = match state.holders.get(&gpu.id) {
        Some(h) => h.listed?,
        None => Bytes(0),
    };
    let rest = used.saturating_sub(listed);
    (rest >= UNATTRIBUTED_MIN).then_some(rest)
}

/// A GPU nobody is using: no process, low util, almost no VRAM, and no warning.
pub fn is_free(state: &State, gpu: &GpuReading) -> bool {
    gpu.status == GpuStatus::Ok
        && !state.holders.contains_key(&gpu.id)
        && gpu.util.is_some_and(|u| u.0 <= FREE_MAX_UTIL)
        && gpu
            .memory_ratio()
            .is_some_and(|r| r < FREE_MAX_MEMORY_RATIO)
        && state.gpu_severity(&gpu.id).is_none()
}

/// The free GPUs, in order.
fn free(state: &State) -> impl Iterator<Item = &GpuReading> {
    state.gpus.iter().filter(|g| is_free(state, g))
}

/// Indices of the free GPUs, in order (the JSON document's `free_gpus`).
pub fn free_gpus(state: &State) -> Vec<u32> {
    free(state).map(|g| g.index).collect()
}

/// Labels of the free GPUs (`6`, or `gpu1:6` when watching several hosts), in order.
pub fn free_labels(state: &State) -> Vec<String> {
    free(state).map(GpuReading::label).collect()
}
