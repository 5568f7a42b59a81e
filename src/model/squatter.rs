//! The squatter warning: a pod's processes on a GPU the kubelet allocated to other pods
//! only — a pod that asked for no GPU but sees them all (`NVIDIA_VISIBLE_DEVICES=all`).
//! "Who really holds a GPU" must expose it: the allocated pod's owner sees the memory go
//! and `pick` would otherwise trust the allocation alone. Pure; no hysteresis: a process
//! is on the GPU or not, and the kubelet's answer changes only when pods come and go.

use std::collections::BTreeMap;

use super::warnings::WarningKind;
use crate::reading::workload::Workload;
use crate::reading::{GpuReading, ProcReading};
use crate::units::Bytes;

/// One warning per pod on `gpu` whose processes are not of any pod the GPU is allocated
/// to. Only pods whose names are known (the kubelet's log directories or the engine's
/// labels tie the UID to them): an unnamed pod cannot be told from the allocated pod itself,
/// and a wrong warning would accuse the GPU's rightful user. No allocation (no kubelet
/// answer, or a GPU given to no pod): nothing to squat on.
pub(super) fn evaluate(gpu: &GpuReading, procs: &[&ProcReading]) -> Vec<WarningKind> {
    if gpu.allocations.is_empty() {
        return Vec::new();
    }
    // UID → (namespace, pod, VRAM so far): one warning per pod, however many processes.
    let mut squatters: BTreeMap<&str, (&str, &str, Option<Bytes>)> = BTreeMap::new();
    for p in procs {
        let Some(Workload::Pod { uid, names, .. }) =
            p.details().and_then(|d| d.context.workload.as_deref())
        else {
            continue;
        };
        let (Some(namespace), Some(pod)) = (names.namespace.as_deref(), names.name.as_deref())
        else {
            continue;
        };
        let its_own = gpu
            .allocations
            .iter()
            .any(|a| a.namespace == namespace && a.pod == pod);
        if its_own {
            continue;
        }
        let entry = squatters.entry(uid).or_insert((namespace, pod, None));
        if let Some(v) = p.gpu_memory {
            entry.2 = Some(Bytes(entry.2.map_or(0, |b| b.0) + v.0));
        }
    }
    let allocated_to: Vec<String> = gpu
        .allocations
        .iter()
        .map(|a| format!("{}/{}", a.namespace, a.pod))
        .collect();
    squatters
        .into_iter()
        .map(|(uid, (namespace, pod, vram))| WarningKind::Squatter {
            uid: uid.to_string(),
            namespace: Some(namespace.to_string()),
            pod: Some(pod.to_string()),
            vram,
            allocated_to: allocated_to.clone(),
        })
        .collect()
}

#[cfg(test)]
#[path = "squatter_tests.rs"]
mod tests;
