//! The fake's process queries: the compute and graphics lists (with NVML's two-call
//! INSUFFICIENT_SIZE protocol) and per-process utilization samples. Owns their C layouts.

use std::ffi::{c_uint, c_ulonglong};

use crate::device::with_gpu;
use crate::scenario::{ProcKind, ProcessApi, Step};
use crate::{Device, ERROR_INSUFFICIENT_SIZE, ERROR_INVALID_ARGUMENT, ERROR_NOT_FOUND, SUCCESS};

/// `nvmlProcessInfo_t` as used by the `_v3` process lists: 24 bytes with padding after `pid`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ProcessInfo {
    pub(crate) pid: c_uint,
    pub(crate) used_gpu_memory: c_ulonglong,
    pub(crate) gpu_instance_id: c_uint,
    pub(crate) compute_instance_id: c_uint,
}

/// `nvmlProcessUtilizationSample_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ProcessUtilizationSample {
    pid: c_uint,
    time_stamp: c_ulonglong,
    sm_util: c_uint,
    mem_util: c_uint,
    enc_util: c_uint,
    dec_util: c_uint,
}

const _: () = assert!(std::mem::size_of::<ProcessInfo>() == 24);
const _: () = assert!(std::mem::size_of::<ProcessUtilizationSample>() == 32);

/// NVML_VALUE_NOT_AVAILABLE as an unsigned long long.
const VALUE_NOT_AVAILABLE: u64 = u64::MAX;
/// "No MIG instance" in the process structs.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;
/// Driver timestamps are microseconds; the fake stamps tick T's samples at (T + 1) s.
const MICROS_PER_TICK: u64 = 1_000_000;
/// How many ticks of per-process samples the fake "driver" keeps buffered.
const SAMPLE_BUFFER_TICKS: u64 = 10;

/// The two-call protocol of NVML's list queries: with too small a buffer (or none), say how
/// many entries there are and answer INSUFFICIENT_SIZE; otherwise fill and say how many.
pub(crate) unsafe fn fill_list<T: Copy>(items: &[T], count: *mut c_uint, buf: *mut T) -> u32 {
    if count.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: checked non-null; NVML's contract: `count` is in/out capacity of `buf`.
    let capacity = unsafe { *count } as usize;
    // SAFETY: as above.
    unsafe { *count = items.len() as c_uint };
    if items.is_empty() {
        return SUCCESS;
    }
    if buf.is_null() || capacity < items.len() {
        return ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: `buf` holds `capacity >= items.len()` entries.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), buf, items.len()) };
    SUCCESS
}

fn running(
    symbol: &'static str,
    d: Device,
    graphics: bool,
    count: *mut c_uint,
    buf: *mut ProcessInfo,
) -> u32 {
    // SAFETY: NVML's contract for list queries (see fill_list).
    listed(symbol, d, graphics, |g, listed| match g.process_api {
        ProcessApi::V3 => unsafe { fill_list(listed, count, buf) },
        ProcessApi::V3Wide => {
            let wide: Vec<_> = listed.iter().map(|&p| crate::legacy::wide(p)).collect();
            // SAFETY: the driver of that era wrote 32-byte entries into the caller's buffer.
            unsafe { fill_list(&wide, count, buf.cast()) }
        }
        // Drivers before the _v3 calls (and 535.98, which dropped them) lack the symbol.
        ProcessApi::V2 | ProcessApi::V1 => crate::ERROR_FUNCTION_NOT_FOUND,
    })
}

/// The processes a list call of this tick sees on `d` (compute or graphics), handed to `f`
/// with the GPU: the one listing every process-list export answers from.
pub(crate) fn listed(
    symbol: &'static str,
    d: Device,
    graphics: bool,
    f: impl FnOnce(&crate::scenario::Gpu, &[ProcessInfo]) -> u32,
) -> u32 {
    // Which call of this tick this is (1 = the size query), counted apart from `calls` so
    // the per-symbol call counts tests read stay one per call.
    let call = crate::lock().as_mut().map_or(0, |s| {
        let calls = s
            .list_calls
            .entry(((d as usize).wrapping_sub(1), graphics))
            .or_default();
        *calls += 1;
        *calls
    });
    with_gpu(symbol, d, |g, tick| {
        let listed: Vec<ProcessInfo> = g
            .processes
            .iter()
            .filter(|p| p.listed_at(tick, call))
            .filter(|p| match p.kind {
                ProcKind::Both => true,
                ProcKind::Graphics => graphics,
                ProcKind::Compute => !graphics,
            })
            .map(|p| ProcessInfo {
                pid: p.pid,
                used_gpu_memory: p.used_memory.unwrap_or(VALUE_NOT_AVAILABLE),
                gpu_instance_id: p.gpu_instance_id.unwrap_or(NO_INSTANCE),
                compute_instance_id: p.compute_instance_id.unwrap_or(NO_INSTANCE),
            })
            .collect();
        f(g, &listed)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    d: Device,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    running(
        "nvmlDeviceGetComputeRunningProcesses_v3",
        d,
        false,
        count,
        infos,
    )
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    d: Device,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> u32 {
    running(
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
        d,
        true,
        count,
        infos,
    )
}

/// Per-process samples newer than `last_seen` (µs); NOT_FOUND when there are none, as the
/// real driver answers between its sampling periods.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    d: Device,
    samples: *mut ProcessUtilizationSample,
    count: *mut c_uint,
    last_seen: c_ulonglong,
) -> u32 {
    with_gpu("nvmlDeviceGetProcessUtilization", d, |g, tick| {
        if let Some(err) = g.process_utilization_error {
            return err.code();
        }
        let first = tick.saturating_sub(SAMPLE_BUFFER_TICKS - 1);
        let mut found = Vec::new();
        for t in first..=tick {
            let time_stamp = (t + 1) * MICROS_PER_TICK;
            if time_stamp <= last_seen {
                continue;
            }
            for p in g.processes.iter().filter(|p| p.alive_at(t)) {
                if let Some(Step::Value(sm)) = p.sm_util.as_ref().map(|r| r.at(t)) {
                    found.push(ProcessUtilizationSample {
                        pid: p.pid,
                        time_stamp,
                        sm_util: sm as c_uint,
                        mem_util: 0,
                        enc_util: 0,
                        dec_util: 0,
                    });
                }
            }
        }
        if found.is_empty() {
            if !count.is_null() {
                // SAFETY: checked non-null; NVML's contract: `count` points to a c_uint.
                unsafe { *count = 0 };
            }
            return ERROR_NOT_FOUND;
        }
        // SAFETY: NVML's contract for list queries (see fill_list).
        unsafe { fill_list(&found, count, samples) }
    })
}
