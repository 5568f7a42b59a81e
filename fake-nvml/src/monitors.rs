//! NVML calls that other monitors make and gpuwatch does not (nvtop, nvitop through
//! nvidia-ml-py): with them the same fake drives those programs, so `scripts/overhead.sh`
//! measures gpuwatch beside them on identical readings. Answers come from the same scenario
//! fields as gpuwatch's own calls; facts a headless server never has are NOT_SUPPORTED.

use std::ffi::c_uint;

use crate::device::{field, with_gpu};
use crate::{Device, ERROR_NOT_SUPPORTED};

/// nvitop's power cap: the management limit, which the scenario does not tell from the
/// enforced one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementLimit(d: Device, mw: *mut c_uint) -> u32 {
    field("nvmlDeviceGetPowerManagementLimit", d, "power_limit_mw", mw)
}

/// Whether a display is connected: never on the servers the fake stands for.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDisplayActive(d: Device, _active: *mut c_uint) -> u32 {
    with_gpu("nvmlDeviceGetDisplayActive", d, |_, _| ERROR_NOT_SUPPORTED)
}

/// The Windows driver model (WDDM/TCC): not supported on Linux, as the real library says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDriverModel(
    d: Device,
    _current: *mut c_uint,
    _pending: *mut c_uint,
) -> u32 {
    with_gpu("nvmlDeviceGetDriverModel", d, |_, _| ERROR_NOT_SUPPORTED)
}
