//! MIG instances from Prometheus series: a series with a `GPU_I_ID` label is about one
//! instance of its GPU, not the GPU (dcgm-exporter labels its per-instance series so, and
//! gpuwatch's exporter too). Its framebuffer values fill that instance's `MigReading`;
//! anything else it says is the instance's and is not taken as the GPU's. The instance's
//! id is gpuwatch's `mig_uuid` label; dcgm-exporter exports no MIG UUID, so there it is
//! `MIG-<GPU UUID>/<GI>` (what identifies it; not a UUID CUDA takes). Pure.

use super::api::Labels;

use super::series::MigMemory;
use crate::reading::mig::MigReading;
use crate::reading::{GpuId, GpuReading};
use crate::units::Bytes;

/// The instance a series is about, from its labels: (GPU instance id, profile).
pub fn instance_of(labels: &Labels) -> Option<(u32, Option<String>)> {
    let gi = labels.get("GPU_I_ID")?.parse().ok()?;
    let profile = labels
        .get("GPU_I_PROFILE")
        .filter(|p| !p.is_empty())
        .cloned();
    Some((gi, profile))
}

/// An instance being read, with the free memory dcgm-exporter gives instead of a total.
#[derive(Debug, Clone)]
pub struct Building {
    reading: MigReading,
    free: Option<Bytes>,
}

/// Applies one instance series (value in gpuwatch's units) to its GPU's instances.
pub fn apply(
    instances: &mut Vec<Building>,
    gpu: &GpuId,
    labels: &Labels,
    memory: Option<MigMemory>,
    value: f64,
) {
    let Some((gi, profile)) = instance_of(labels) else {
        return;
    };
    let at = match instances
        .iter()
        .position(|b| b.reading.gpu_instance_id == Some(gi))
    {
        Some(at) => at,
        None => {
            instances.push(Building {
                reading: MigReading {
                    id: GpuId(format!("MIG-{}/{gi}", gpu.0)),
                    gpu_instance_id: Some(gi),
                    compute_instance_id: None,
                    profile: None,
                    memory_total: None,
                    memory_used: None,
                    util: None,
                    pids: Vec::new(),
                },
                free: None,
            });
            instances.len() - 1
        }
    };
    let b = &mut instances[at];
    if let Some(uuid) = labels.get("mig_uuid").filter(|u| u.starts_with("MIG-")) {
        b.reading.id = GpuId(uuid.clone());
    }
    if b.reading.profile.is_none() {
        b.reading.profile = profile;
    }
    let bytes = (value >= 0.0).then(|| Bytes(value.round() as u64));
    match memory {
        Some(MigMemory::Used) => b.reading.memory_used = bytes,
        Some(MigMemory::Free) => b.free = bytes,
        Some(MigMemory::Total) => b.reading.memory_total = bytes,
        None => {}
    }
}

/// The GPU's instances, ordered by GPU instance id, totals derived from used + free where
/// no total came; a GPU with instances is in MIG mode.
pub fn finish(g: &mut GpuReading, instances: Vec<Building>) {
    if instances.is_empty() {
        return;
    }
    let mut out: Vec<MigReading> = instances
        .into_iter()
        .map(|mut b| {
            if b.reading.memory_total.is_none()
                && let (Some(u), Some(f)) = (b.reading.memory_used, b.free)
            {
                b.reading.memory_total = Some(u + f);
            }
            b.reading
        })
        .collect();
    out.sort_by_key(|m| m.gpu_instance_id);
    g.mig_devices = out;
    g.mig_enabled.get_or_insert(true);
}
