//! The older process-list exports real drivers have: `_v2` (the 24-byte struct, as `_v3`)
//! and the unversioned call (16 bytes: pid and memory), plus the 32-byte entry some
//! 535–545 drivers wrote from `_v3`. Which of them answer is the GPU's `process_api`.

use std::ffi::{c_uint, c_ulonglong};

use crate::processes::{ProcessInfo, fill_list, listed};
use crate::scenario::ProcessApi;
use crate::{Device, ERROR_FUNCTION_NOT_FOUND};

/// `nvmlProcessInfo_v1_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ProcessInfoV1 {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
}

/// The 32-byte `_v3` entry of the drivers that appended `usedGpuCcProtectedMemory`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ProcessInfoWide {
    info: ProcessInfo,
    used_gpu_cc_protected_memory: c_ulonglong,
}

const _: () = assert!(std::mem::size_of::<ProcessInfoV1>() == 16);
const _: () = assert!(std::mem::size_of::<ProcessInfoWide>() == 32);

pub(crate) fn wide(info: ProcessInfo) -> ProcessInfoWide {
    ProcessInfoWide {
        info,
        used_gpu_cc_protected_memory: 0,
    }
}

fn v2(symbol: &'static str, d: Device, graphics: bool, n: *mut c_uint, b: *mut ProcessInfo) -> u32 {
    listed(symbol, d, graphics, |g, list| match g.process_api {
        ProcessApi::V1 => ERROR_FUNCTION_NOT_FOUND,
        // SAFETY: NVML's contract for list queries (see fill_list).
        _ => unsafe { fill_list(list, n, b) },
    })
}

fn v1(
    symbol: &'static str,
    d: Device,
    graphics: bool,
    n: *mut c_uint,
    b: *mut ProcessInfoV1,
) -> u32 {
    listed(symbol, d, graphics, |_, list| {
        let old: Vec<_> = list
            .iter()
            .map(|p| ProcessInfoV1 {
                pid: p.pid,
                used_gpu_memory: p.used_gpu_memory,
            })
            .collect();
        // SAFETY: NVML's contract for list queries (see fill_list).
        unsafe { fill_list(&old, n, b) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    d: Device,
    n: *mut c_uint,
    b: *mut ProcessInfo,
) -> u32 {
    v2("nvmlDeviceGetComputeRunningProcesses_v2", d, false, n, b)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v2(
    d: Device,
    n: *mut c_uint,
    b: *mut ProcessInfo,
) -> u32 {
    v2("nvmlDeviceGetGraphicsRunningProcesses_v2", d, true, n, b)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses(
    d: Device,
    n: *mut c_uint,
    b: *mut ProcessInfoV1,
) -> u32 {
    v1("nvmlDeviceGetComputeRunningProcesses", d, false, n, b)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses(
    d: Device,
    n: *mut c_uint,
    b: *mut ProcessInfoV1,
) -> u32 {
    v1("nvmlDeviceGetGraphicsRunningProcesses", d, true, n, b)
}
