//! The fake's MIG (multi-instance GPU) support: a GPU's `mig_devices` in the scenario are
//! its instances while its `mig_mode_current` field reads 1 at the tick. Owns the MIG handle
//! encoding, the MIG entry points (max count, handle by index, parent, instance ids) and the
//! view of an instance as a device, so `device`'s queries (UUID, name, memory, process
//! lists) answer for MIG handles as NVML does: with the instance's own values.

use std::ffi::c_uint;

use serde::Deserialize;

use crate::scenario::{ErrorName, Gpu, Reading, Step};
use crate::{
    Device, ERROR_INVALID_ARGUMENT, ERROR_NOT_FOUND, ERROR_NOT_SUPPORTED, State, put, with_state,
};

/// One MIG device (a compute instance inside a GPU instance) in the scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigDevice {
    /// `MIG-…`.
    pub uuid: String,
    /// As NVML names a MIG device: `NVIDIA H100 80GB HBM3 MIG 3g.40gb`.
    pub name: String,
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    /// Bytes.
    pub memory_total: Reading,
    pub memory_used: Reading,
    /// GPM's SM utilisation of the instance, % (Hopper+; `gpm`). Absent: no GPM.
    #[serde(default)]
    pub sm_activity: Option<Reading>,
}

/// MIG handles carry this bit, the parent's index and the instance's index; plain device
/// handles are the index + 1, far below it.
const MIG_BIT: usize = 1 << 30;

fn mig_handle(gpu: usize, mig: usize) -> Device {
    (MIG_BIT | (gpu << 8) | mig) as Device
}

/// (parent index, MIG index) for a MIG handle.
pub(crate) fn decode(device: Device) -> Option<(usize, usize)> {
    let raw = device as usize;
    (raw & MIG_BIT != 0).then_some(((raw & !MIG_BIT) >> 8, raw & 0xff))
}

fn mig_on(gpu: &Gpu, tick: u64) -> bool {
    gpu.field("mig_mode_current", tick) == Step::Value(1)
}

/// The instance behind a MIG handle as a device of its own: its UUID, name and memory;
/// the parent's processes on it; every other field unsupported (NVML answers per-instance
/// utilisation, temperature, power and clocks NOT_SUPPORTED). `Err` with an NVML code
/// when the handle names no instance at this tick.
pub(crate) fn as_device(s: &State, device: Device) -> Option<Result<Gpu, u32>> {
    let (gi, mi) = decode(device)?;
    let Some(parent) = s.scenario.gpus.get(gi) else {
        return Some(Err(ERROR_INVALID_ARGUMENT));
    };
    let Some(m) = parent
        .mig_devices
        .get(mi)
        .filter(|_| mig_on(parent, s.tick))
    else {
        return Some(Err(ERROR_INVALID_ARGUMENT));
    };
    let mut g = parent.clone();
    g.name = m.name.clone();
    g.uuid = m.uuid.clone();
    g.mig_devices.clear();
    g.fields.clear();
    g.fields
        .insert("memory_total".into(), m.memory_total.clone());
    g.fields.insert("memory_used".into(), m.memory_used.clone());
    g.fields
        .insert("memory_reserved".into(), Reading::Fixed(Step::Value(0)));
    g.processes.retain(|p| {
        p.gpu_instance_id == Some(m.gpu_instance_id)
            && p.compute_instance_id == Some(m.compute_instance_id)
    });
    Some(Ok(g))
}

/// Runs `f` on a parent (non-MIG) GPU.
fn with_parent(symbol: &'static str, d: Device, f: impl FnOnce(&Gpu, usize, u64) -> u32) -> u32 {
    with_state(symbol, |s| {
        if decode(d).is_some() {
            return ERROR_INVALID_ARGUMENT;
        }
        let index = (d as usize).wrapping_sub(1);
        match s.scenario.gpus.get(index) {
            Some(g) if g.lost_at(s.tick) => ErrorName::GpuIsLost.code(),
            Some(g) => f(g, index, s.tick),
            None => ERROR_INVALID_ARGUMENT,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(d: Device, count: *mut c_uint) -> u32 {
    with_parent("nvmlDeviceGetMaxMigDeviceCount", d, |g, _, tick| {
        // A GPU that cannot do MIG has no mode to read.
        if !matches!(g.field("mig_mode_current", tick), Step::Value(_)) {
            return ERROR_NOT_SUPPORTED;
        }
        // SAFETY: NVML's contract: `count` points to a c_uint.
        unsafe { put(count, g.mig_devices.len() as c_uint) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    d: Device,
    index: c_uint,
    mig: *mut Device,
) -> u32 {
    with_parent("nvmlDeviceGetMigDeviceHandleByIndex", d, |g, gi, tick| {
        let i = index as usize;
        if !mig_on(g, tick) || i >= g.mig_devices.len() {
            return ERROR_NOT_FOUND;
        }
        // SAFETY: NVML's contract: `mig` points to a device handle.
        unsafe { put(mig, mig_handle(gi, i)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    mig: Device,
    parent: *mut Device,
) -> u32 {
    with_state(
        "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
        |_| match decode(mig) {
            // SAFETY: NVML's contract: `parent` points to a device handle.
            Some((gi, _)) => unsafe { put(parent, (gi + 1) as Device) },
            None => ERROR_INVALID_ARGUMENT,
        },
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(d: Device, is_mig: *mut c_uint) -> u32 {
    with_state("nvmlDeviceIsMigDeviceHandle", |_| {
        // SAFETY: NVML's contract: `is_mig` points to a c_uint.
        unsafe { put(is_mig, c_uint::from(decode(d).is_some())) }
    })
}

fn instance_id(symbol: &'static str, d: Device, out: *mut c_uint, compute: bool) -> u32 {
    with_state(symbol, |s| match as_device(s, d) {
        None => ERROR_NOT_SUPPORTED,
        Some(Err(code)) => code,
        Some(Ok(_)) => {
            let (gi, mi) = decode(d).unwrap_or_default();
            let m = &s.scenario.gpus[gi].mig_devices[mi];
            let id = if compute {
                m.compute_instance_id
            } else {
                m.gpu_instance_id
            };
            // SAFETY: NVML's contract: `out` points to a c_uint.
            unsafe { put(out, id) }
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(d: Device, id: *mut c_uint) -> u32 {
    instance_id("nvmlDeviceGetGpuInstanceId", d, id, false)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(d: Device, id: *mut c_uint) -> u32 {
    instance_id("nvmlDeviceGetComputeInstanceId", d, id, true)
}
