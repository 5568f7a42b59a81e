//! Reading a MIG-mode GPU's instances through NVML: each MIG device handle's UUID, name
//! (whose end is the profile), memory and GPU/compute instance ids, and which listed
//! processes carry those ids, and SM activity from GPM where the GPU has it (`gpm`). A
//! query an instance cannot answer leaves its field `None`;
//! nothing here marks the GPU lost (its own queries do that).

use std::ffi::c_uint;

use nvml_wrapper::Device;

use super::GpuProc;
use crate::reading::GpuId;
use crate::reading::mig::{MigReading, profile_of};
use crate::units::Bytes;

/// The instances of `d` (in MIG mode), with the PIDs among `procs` on each, and their SM
/// activity where GPM gives it (`gpm`).
pub(super) fn read_instances(
    d: &Device,
    procs: &[GpuProc],
    gpm: &mut super::gpm::GpmSamples,
) -> Vec<MigReading> {
    let Ok(max) = d.mig_device_count() else {
        gpm.keep_only(d.nvml(), &[]);
        return Vec::new();
    };
    let mut instances: Vec<MigReading> = (0..max)
        .filter_map(|i| d.mig_device_by_index(i).ok())
        .filter_map(|m| {
            let uuid = m.uuid().ok()?;
            let memory = m.memory_info().ok();
            let gi = instance_id(&m, false);
            let ci = instance_id(&m, true);
            let pids = procs
                .iter()
                .filter(|p| p.instance.is_some() && p.instance == gi.zip(ci))
                .map(|p| p.pid)
                .collect();
            Some(MigReading {
                id: GpuId(uuid),
                gpu_instance_id: gi,
                compute_instance_id: ci,
                profile: m.name().ok().as_deref().and_then(profile_of),
                memory_total: memory.as_ref().map(|m| Bytes(m.total)),
                memory_used: memory.as_ref().map(|m| Bytes(m.used)),
                util: None,
                pids,
            })
        })
        .collect();
    // One GPM sample per GPU instance (compute instances share their GPU instance's SMs).
    let mut gis: Vec<u32> = instances.iter().filter_map(|m| m.gpu_instance_id).collect();
    gis.sort_unstable();
    gis.dedup();
    for gi in &gis {
        let activity = gpm.sm_activity(d, *gi);
        for m in instances
            .iter_mut()
            .filter(|m| m.gpu_instance_id == Some(*gi))
        {
            m.util = activity;
        }
    }
    gpm.keep_only(d.nvml(), &gis);
    instances
}

/// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId`: nvml-wrapper 0.13 has
/// no safe call for them, so through its loaded library. The symbol is looked at first
/// (the generated method would panic on a driver without it).
fn instance_id(m: &Device, compute: bool) -> Option<u32> {
    let lib = m.nvml().lib();
    let f = if compute {
        lib.nvmlDeviceGetComputeInstanceId.as_ref().ok()?
    } else {
        lib.nvmlDeviceGetGpuInstanceId.as_ref().ok()?
    };
    let mut id: c_uint = 0;
    // SAFETY: `m` is a live device handle of this library; `id` is a valid out-pointer.
    let rc = unsafe { f(m.handle(), &mut id) };
    (rc == 0).then_some(id)
}
