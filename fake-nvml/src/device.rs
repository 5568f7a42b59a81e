//! The fake's per-device NVML queries: each answers from the scenario at the current tick,
//! GPU_IS_LOST while the scenario says the GPU is lost, and NOT_SUPPORTED for a field the
//! scenario leaves out. Owns the C layouts of the structs these calls fill; the process
//! queries live in `processes`.

use std::ffi::{c_char, c_uint, c_ulonglong};

use crate::scenario::{Gpu, Step};
use crate::{
    Device, ERROR_ARGUMENT_VERSION_MISMATCH, ERROR_GPU_IS_LOST, ERROR_INVALID_ARGUMENT,
    ERROR_NOT_SUPPORTED, SUCCESS, put, put_str, with_state,
};

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlMemory_t` (v1).
#[repr(C)]
pub struct MemoryV1 {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlUtilization_t`.
#[repr(C)]
pub struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// `nvmlPciInfo_t` (the v3 layout).
#[repr(C)]
pub struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

const _: () = assert!(std::mem::size_of::<MemoryV2>() == 40);
const _: () = assert!(std::mem::size_of::<PciInfo>() == 68);

/// Runs `f` on the GPU behind `device` at the current tick, unless the handle is bad or
/// the GPU is lost.
pub(crate) fn with_gpu(
    symbol: &'static str,
    device: Device,
    f: impl FnOnce(&Gpu, u64) -> u32,
) -> u32 {
    with_state(symbol, |s| {
        // A MIG handle answers as its instance (crate::mig).
        if let Some(instance) = crate::mig::as_device(s, device) {
            return match instance {
                Ok(gpu) if gpu.lost_at(s.tick) => ERROR_GPU_IS_LOST,
                Ok(gpu) => f(&gpu, s.tick),
                Err(code) => code,
            };
        }
        let index = (device as usize).wrapping_sub(1);
        let Some(gpu) = s.scenario.gpus.get(index) else {
            return ERROR_INVALID_ARGUMENT;
        };
        if gpu.lost_at(s.tick) {
            return ERROR_GPU_IS_LOST;
        }
        if gpu.all_not_supported {
            return ERROR_NOT_SUPPORTED;
        }
        f(gpu, s.tick)
    })
}

/// The common shape: one scenario field into one integer out-pointer.
pub(crate) fn field<T: TryFrom<u64>>(
    symbol: &'static str,
    device: Device,
    name: &str,
    out: *mut T,
) -> u32 {
    with_gpu(symbol, device, |gpu, tick| match gpu.field(name, tick) {
        Step::Value(v) => match T::try_from(v) {
            // SAFETY: NVML's contract: `out` points to a T.
            Ok(v) => unsafe { put(out, v) },
            Err(_) => ERROR_INVALID_ARGUMENT,
        },
        Step::Error(e) => e.code(),
    })
}

/// Reads several fields at once; the first error wins (NVML fills all or nothing).
fn fields<const N: usize>(gpu: &Gpu, tick: u64, names: [&str; N]) -> Result<[u64; N], u32> {
    let mut out = [0; N];
    for (slot, name) in out.iter_mut().zip(names) {
        match gpu.field(name, tick) {
            Step::Value(v) => *slot = v,
            Step::Error(e) => return Err(e.code()),
        }
    }
    Ok(out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(device: Device, name: *mut c_char, len: c_uint) -> u32 {
    // SAFETY: NVML's contract: `name` holds `len` bytes.
    with_gpu("nvmlDeviceGetName", device, |g, _| unsafe {
        put_str(name, len, &g.name)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(device: Device, uuid: *mut c_char, len: c_uint) -> u32 {
    // SAFETY: NVML's contract: `uuid` holds `len` bytes.
    with_gpu("nvmlDeviceGetUUID", device, |g, _| unsafe {
        put_str(uuid, len, &g.uuid)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: Device, pci: *mut PciInfo) -> u32 {
    with_gpu("nvmlDeviceGetPciInfo_v3", device, |g, _| {
        let mut info = PciInfo {
            bus_id_legacy: [0; 16],
            domain: 0,
            bus: 0,
            device: 0,
            pci_device_id: 0x2330_10de,
            pci_sub_system_id: 0,
            bus_id: [0; 32],
        };
        // Leave room for the NUL the zeroed array already holds.
        for (dst, src) in info.bus_id.iter_mut().zip(g.pci_bus_id.bytes().take(31)) {
            *dst = src as c_char;
        }
        // SAFETY: NVML's contract: `pci` points to an nvmlPciInfo_t.
        unsafe { put(pci, info) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(device: Device, memory: *mut MemoryV2) -> u32 {
    if memory.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // NVML_STRUCT_VERSION(Memory, 2): the caller must say which layout it passed.
    let expected = (std::mem::size_of::<MemoryV2>() | (2 << 24)) as c_uint;
    // SAFETY: checked non-null; NVML's contract: it points to an nvmlMemory_v2_t.
    if unsafe { (*memory).version } != expected {
        return ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    with_gpu("nvmlDeviceGetMemoryInfo_v2", device, |g, tick| {
        let [total, used] = match fields(g, tick, ["memory_total", "memory_used"]) {
            Ok(v) => v,
            Err(code) => return code,
        };
        let reserved = fields(g, tick, ["memory_reserved"]).map_or(0, |[r]| r);
        let free = total.saturating_sub(reserved).saturating_sub(used);
        let info = MemoryV2 {
            version: expected,
            total,
            reserved,
            free,
            used,
        };
        // SAFETY: as above.
        unsafe { put(memory, info) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(device: Device, memory: *mut MemoryV1) -> u32 {
    with_gpu("nvmlDeviceGetMemoryInfo", device, |g, tick| {
        match fields(g, tick, ["memory_total", "memory_used"]) {
            Ok([total, used]) => {
                let free = total.saturating_sub(used);
                // SAFETY: NVML's contract: `memory` points to an nvmlMemory_t.
                unsafe { put(memory, MemoryV1 { total, free, used }) }
            }
            Err(code) => code,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(device: Device, u: *mut Utilization) -> u32 {
    with_gpu("nvmlDeviceGetUtilizationRates", device, |g, tick| {
        match fields(g, tick, ["util_gpu", "util_memory"]) {
            Ok([gpu, memory]) => {
                let value = Utilization {
                    gpu: gpu as c_uint,
                    memory: memory as c_uint,
                };
                // SAFETY: NVML's contract: `u` points to an nvmlUtilization_t.
                unsafe { put(u, value) }
            }
            Err(code) => code,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    d: Device,
    sensor: c_uint,
    t: *mut c_uint,
) -> u32 {
    match sensor {
        0 => field("nvmlDeviceGetTemperature", d, "temperature", t),
        _ => with_gpu("nvmlDeviceGetTemperature", d, |_, _| ERROR_NOT_SUPPORTED),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperatureThreshold(
    d: Device,
    kind: c_uint,
    t: *mut c_uint,
) -> u32 {
    const SYMBOL: &str = "nvmlDeviceGetTemperatureThreshold";
    match kind {
        0 => field(SYMBOL, d, "temperature_shutdown", t),
        1 => field(SYMBOL, d, "temperature_slowdown", t),
        _ => with_gpu(SYMBOL, d, |_, _| ERROR_NOT_SUPPORTED),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(d: Device, mw: *mut c_uint) -> u32 {
    field("nvmlDeviceGetPowerUsage", d, "power_usage_mw", mw)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(d: Device, mw: *mut c_uint) -> u32 {
    field("nvmlDeviceGetEnforcedPowerLimit", d, "power_limit_mw", mw)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(d: Device, mj: *mut u64) -> u32 {
    field("nvmlDeviceGetTotalEnergyConsumption", d, "energy_mj", mj)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed(d: Device, speed: *mut c_uint) -> u32 {
    field("nvmlDeviceGetFanSpeed", d, "fan_speed", speed)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed_v2(
    d: Device,
    fan: c_uint,
    speed: *mut c_uint,
) -> u32 {
    match fan {
        0 => field("nvmlDeviceGetFanSpeed_v2", d, "fan_speed", speed),
        _ => with_gpu("nvmlDeviceGetFanSpeed_v2", d, |_, _| ERROR_INVALID_ARGUMENT),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(d: Device, kind: c_uint, mhz: *mut c_uint) -> u32 {
    match kind {
        0 => field("nvmlDeviceGetClockInfo", d, "clock_graphics", mhz),
        1 => field("nvmlDeviceGetClockInfo", d, "clock_sm", mhz),
        2 => field("nvmlDeviceGetClockInfo", d, "clock_memory", mhz),
        3 => field("nvmlDeviceGetClockInfo", d, "clock_video", mhz),
        _ => with_gpu("nvmlDeviceGetClockInfo", d, |_, _| ERROR_NOT_SUPPORTED),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    d: Device,
    kind: c_uint,
    mhz: *mut c_uint,
) -> u32 {
    match kind {
        0 => field("nvmlDeviceGetMaxClockInfo", d, "max_clock_graphics", mhz),
        1 => field("nvmlDeviceGetMaxClockInfo", d, "max_clock_sm", mhz),
        2 => field("nvmlDeviceGetMaxClockInfo", d, "max_clock_memory", mhz),
        _ => with_gpu("nvmlDeviceGetMaxClockInfo", d, |_, _| ERROR_NOT_SUPPORTED),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPerformanceState(d: Device, p: *mut c_uint) -> u32 {
    field("nvmlDeviceGetPerformanceState", d, "pstate", p)
}

fn codec_util(symbol: &'static str, d: Device, name: &str, u: *mut c_uint, us: *mut c_uint) -> u32 {
    with_gpu(symbol, d, |g, tick| match g.field(name, tick) {
        // SAFETY: NVML's contract: both point to a c_uint.
        Step::Value(v) => unsafe {
            match put(u, v as c_uint) {
                SUCCESS => put(us, 1_000_000),
                err => err,
            }
        },
        Step::Error(e) => e.code(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEncoderUtilization(
    d: Device,
    u: *mut c_uint,
    us: *mut c_uint,
) -> u32 {
    codec_util("nvmlDeviceGetEncoderUtilization", d, "encoder_util", u, us)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDecoderUtilization(
    d: Device,
    u: *mut c_uint,
    us: *mut c_uint,
) -> u32 {
    codec_util("nvmlDeviceGetDecoderUtilization", d, "decoder_util", u, us)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(d: Device, g: *mut c_uint) -> u32 {
    field("nvmlDeviceGetCurrPcieLinkGeneration", d, "pcie_link_gen", g)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(d: Device, w: *mut c_uint) -> u32 {
    field("nvmlDeviceGetCurrPcieLinkWidth", d, "pcie_link_width", w)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(d: Device, g: *mut c_uint) -> u32 {
    field(
        "nvmlDeviceGetMaxPcieLinkGeneration",
        d,
        "pcie_link_gen_max",
        g,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(d: Device, w: *mut c_uint) -> u32 {
    field("nvmlDeviceGetMaxPcieLinkWidth", d, "pcie_link_width_max", w)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieThroughput(
    d: Device,
    counter: c_uint,
    kbps: *mut c_uint,
) -> u32 {
    match counter {
        0 => field("nvmlDeviceGetPcieThroughput", d, "pcie_tx_kbps", kbps),
        1 => field("nvmlDeviceGetPcieThroughput", d, "pcie_rx_kbps", kbps),
        _ => with_gpu("nvmlDeviceGetPcieThroughput", d, |_, _| {
            ERROR_INVALID_ARGUMENT
        }),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(d: Device, r: *mut u64) -> u32 {
    field(
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        d,
        "throttle_reasons",
        r,
    )
}

/// The newer name of the same query (drivers ≥ 535 export both).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(d: Device, r: *mut u64) -> u32 {
    field(
        "nvmlDeviceGetCurrentClocksEventReasons",
        d,
        "throttle_reasons",
        r,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    d: Device,
    error_type: c_uint,
    counter_type: c_uint,
    count: *mut u64,
) -> u32 {
    const SYMBOL: &str = "nvmlDeviceGetTotalEccErrors";
    match (error_type, counter_type) {
        // Uncorrected and corrected, volatile: the combinations gpuwatch shows.
        (1, 0) => field(SYMBOL, d, "ecc_uncorrected_volatile", count),
        (0, 0) => field(SYMBOL, d, "ecc_corrected_volatile", count),
        _ => with_gpu(SYMBOL, d, |_, _| ERROR_NOT_SUPPORTED),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    d: Device,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> u32 {
    with_gpu("nvmlDeviceGetMigMode", d, |g, tick| {
        match fields(g, tick, ["mig_mode_current", "mig_mode_pending"]) {
            // SAFETY: NVML's contract: both point to a c_uint.
            Ok([c, p]) => unsafe {
                match put(current, c as c_uint) {
                    SUCCESS => put(pending, p as c_uint),
                    err => err,
                }
            },
            Err(code) => code,
        }
    })
}
