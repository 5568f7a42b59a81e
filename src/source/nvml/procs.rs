//! Process lists on every driver since R470. nvml-wrapper calls only
//! `nvml*RunningProcesses_v3` with the 24-byte struct, but drivers differ (nvitop#88/#93):
//! 535.98 dropped the `_v3` calls, R470-era drivers predate them, and some 535–545 drivers
//! filled 32-byte entries from `_v3` (`usedGpuCcProtectedMemory` appended), which a 24-byte
//! reader turns into wrong PIDs and memory. So the calls are made here through the library's
//! own symbols (libloading, already in the tree under nvml-wrapper): `_v3`, else `_v2`,
//! else the unversioned call (16 bytes), and `_v3`'s entry size is read off what the driver
//! wrote (see `stride`). A PID of 0 is never a process: such an entry is dropped.

use std::ffi::{c_uint, c_void};
use std::path::Path;

use nvml_wrapper::Device;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::struct_wrappers::device::ProcessInfo;

/// `nvmlReturn_t nvmlDeviceGet*RunningProcesses*(nvmlDevice_t, unsigned int *, info *)`.
type ListFn = unsafe extern "C" fn(*mut c_void, *mut c_uint, *mut u8) -> c_uint;

/// The entry layouts, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    V3,
    V2,
    V1,
}

impl Api {
    fn symbol(self, graphics: bool) -> String {
        let kind = if graphics { "Graphics" } else { "Compute" };
        let version = match self {
            Api::V3 => "_v3",
            Api::V2 => "_v2",
            Api::V1 => "",
        };
        format!("nvmlDeviceGet{kind}RunningProcesses{version}\0")
    }
}

const NVML_SUCCESS: u32 = 0;
const NVML_ERROR_INSUFFICIENT_SIZE: u32 = 7;
const NVML_ERROR_FUNCTION_NOT_FOUND: u32 = 13;
/// Unused bytes are this, so what the driver wrote can be told from what it did not.
const SENTINEL: u8 = 0xA5;
/// The widest entry any driver writes.
const MAX_STRIDE: usize = 32;

pub(super) struct ProcessCalls {
    /// The calls the library has, newest first: compute, then graphics. Looked up once
    /// (16 symbol lookups a second with 8 GPUs were a third of the process-list cost).
    compute: Vec<(Api, ListFn)>,
    graphics: Vec<(Api, ListFn)>,
    /// Kept loaded: the function pointers above point into it.
    _lib: Option<libloading::Library>,
}

impl ProcessCalls {
    /// The same library NVML was loaded from (`dlopen` hands back the loaded copy).
    pub fn open(path: Option<&Path>) -> Self {
        let name = path.map_or_else(|| "libnvidia-ml.so.1".into(), |p| p.as_os_str().to_owned());
        // SAFETY: loading libnvidia-ml runs no initialiser beyond what nvml-wrapper's load ran.
        let lib = unsafe { libloading::Library::new(name) }.ok();
        let calls = |graphics: bool| -> Vec<(Api, ListFn)> {
            let Some(lib) = &lib else { return Vec::new() };
            [Api::V3, Api::V2, Api::V1]
                .into_iter()
                .filter_map(|api| {
                    // SAFETY: the symbol has the nvml.h signature of `ListFn` (the entry
                    // pointer is typed per version there; bytes here, decoded by `decode`).
                    let f = unsafe { lib.get::<ListFn>(api.symbol(graphics).as_bytes()) };
                    f.ok().map(|f| (api, *f))
                })
                .collect()
        };
        ProcessCalls {
            compute: calls(false),
            graphics: calls(true),
            _lib: lib,
        }
    }

    /// The compute or graphics processes on `d`, from the newest call this driver has.
    pub fn list(&self, d: &Device, graphics: bool) -> Result<Vec<ProcessInfo>, NvmlError> {
        let calls = if graphics {
            &self.graphics
        } else {
            &self.compute
        };
        for &(api, f) in calls {
            match call(f, d, api) {
                Err(NvmlError::FunctionNotFound) => continue,
                other => return other,
            }
        }
        Err(NvmlError::FunctionNotFound)
    }
}

/// NVML's two-call protocol: the size (no buffer), then the fill. A list that grew in
/// between answers INSUFFICIENT_SIZE, which the caller retries (`read::retry_on_growth`).
fn call(f: ListFn, d: &Device, api: Api) -> Result<Vec<ProcessInfo>, NvmlError> {
    // SAFETY: `d` is a live handle of this library.
    let handle = unsafe { d.handle() }.cast::<c_void>();
    let mut n: c_uint = 0;
    // SAFETY: a null buffer with a count of 0 is NVML's size query.
    let rc = unsafe { f(handle, &mut n, std::ptr::null_mut()) };
    match rc {
        NVML_SUCCESS => return Ok(Vec::new()),
        NVML_ERROR_INSUFFICIENT_SIZE => {}
        NVML_ERROR_FUNCTION_NOT_FOUND => return Err(NvmlError::FunctionNotFound),
        other => {
            nvml_try(other)?;
        }
    }
    let capacity = n as usize;
    let mut buf = vec![SENTINEL; capacity * MAX_STRIDE];
    // SAFETY: `buf` holds `capacity` entries of the widest layout any driver writes.
    let rc = unsafe { f(handle, &mut n, buf.as_mut_ptr()) };
    match rc {
        NVML_SUCCESS => Ok(decode(&buf, (n as usize).min(capacity), api)),
        NVML_ERROR_INSUFFICIENT_SIZE => Err(NvmlError::InsufficientSize(Some(n as usize))),
        NVML_ERROR_FUNCTION_NOT_FOUND => Err(NvmlError::FunctionNotFound),
        other => nvml_try(other).map(|()| Vec::new()),
    }
}

/// The entry size the driver used: the versions' own, except that a `_v3` driver that wrote
/// past `n` 24-byte entries wrote 32-byte ones.
fn stride(buf: &[u8], n: usize, api: Api) -> usize {
    match api {
        Api::V1 => 16,
        Api::V2 => 24,
        Api::V3 if n > 0 && buf[n * 24..n * 32].iter().any(|&b| b != SENTINEL) => 32,
        Api::V3 => 24,
    }
}

fn decode(buf: &[u8], n: usize, api: Api) -> Vec<ProcessInfo> {
    let stride = stride(buf, n, api);
    let u32_at = |o: usize| u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap_or_default());
    let u64_at = |o: usize| u64::from_ne_bytes(buf[o..o + 8].try_into().unwrap_or_default());
    // NVML_VALUE_NOT_AVAILABLE, and "no MIG instance".
    const NOT_AVAILABLE: u64 = u64::MAX;
    const NO_INSTANCE: u32 = u32::MAX;
    (0..n)
        .map(|i| i * stride)
        .filter(|&o| u32_at(o) != 0)
        .map(|o| {
            let memory = u64_at(o + 8);
            let id = |at: usize| Some(u32_at(o + at)).filter(|&v| v != NO_INSTANCE);
            let with_ids = api != Api::V1;
            ProcessInfo {
                pid: u32_at(o),
                used_gpu_memory: if memory == NOT_AVAILABLE {
                    UsedGpuMemory::Unavailable
                } else {
                    UsedGpuMemory::Used(memory)
                },
                gpu_instance_id: id(16).filter(|_| with_ids),
                compute_instance_id: id(20).filter(|_| with_ids),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(buf: &mut [u8], at: usize, pid: u32, mem: u64, wide: bool) {
        buf[at..at + 4].copy_from_slice(&pid.to_ne_bytes());
        buf[at + 4..at + 8].fill(0);
        buf[at + 8..at + 16].copy_from_slice(&mem.to_ne_bytes());
        buf[at + 16..at + 24].copy_from_slice(&[0xff; 8]);
        if wide {
            buf[at + 24..at + 32].fill(0);
        }
    }

    #[test]
    fn the_32_byte_layout_is_read_off_what_the_driver_wrote() {
        for wide in [false, true] {
            let stride = if wide { 32 } else { 24 };
            let mut buf = vec![SENTINEL; 6 * MAX_STRIDE];
            entry(&mut buf, 0, 100, 1 << 30, wide);
            entry(&mut buf, stride, 200, 2 << 30, wide);
            let got: Vec<_> = decode(&buf, 2, Api::V3)
                .into_iter()
                .map(|p| (p.pid, p.used_gpu_memory, p.gpu_instance_id))
                .collect();
            assert_eq!(
                got,
                [
                    (100, UsedGpuMemory::Used(1 << 30), None),
                    (200, UsedGpuMemory::Used(2 << 30), None)
                ],
                "wide: {wide}"
            );
        }
    }
}
