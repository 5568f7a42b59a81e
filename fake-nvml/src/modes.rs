//! The fake's mode and counter queries that nvidia-smi's query fields read: compute mode,
//! persistence mode and the PCIe replay counter (the one nvidia-smi falls back on when field
//! values do not answer). Each answers from one scenario field, NOT_SUPPORTED without it.

use std::ffi::c_uint;

use crate::Device;
use crate::device::field;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeMode(d: Device, mode: *mut c_uint) -> u32 {
    field("nvmlDeviceGetComputeMode", d, "compute_mode", mode)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPersistenceMode(d: Device, mode: *mut c_uint) -> u32 {
    field("nvmlDeviceGetPersistenceMode", d, "persistence_mode", mode)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieReplayCounter(d: Device, count: *mut c_uint) -> u32 {
    field(
        "nvmlDeviceGetPcieReplayCounter",
        d,
        "pcie_replay_counter",
        count,
    )
}
