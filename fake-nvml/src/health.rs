//! The fake's health counters: `nvmlDeviceGetFieldValues` for the fields gpuwatch asks
//! (memory temperature, PCIe replays, corrected ECC, retired pages, remapped rows), each
//! answering from its scenario field or NOT_SUPPORTED on its own, as NVML fills every
//! entry's own return code. Owns the `nvmlFieldValue_t` layout and the field-id table.

use std::ffi::{c_int, c_longlong, c_uint, c_ulonglong};

use crate::device::with_gpu;
use crate::scenario::Step;
use crate::{Device, ERROR_INVALID_ARGUMENT, SUCCESS};

/// `nvmlFieldValue_t`; the value union is read as `unsigned long long`.
#[repr(C)]
pub struct FieldValue {
    field_id: c_uint,
    scope_id: c_uint,
    timestamp: c_longlong,
    latency_usec: c_longlong,
    value_type: c_uint,
    nvml_return: c_uint,
    value: c_ulonglong,
}

const _: () = assert!(std::mem::size_of::<FieldValue>() == 40);

/// NVML_VALUE_TYPE_UNSIGNED_LONG_LONG.
const VALUE_TYPE_ULL: c_uint = 3;

/// NVML field id → scenario field (ids from nvml.h: NVML_FI_DEV_*).
const FIELD_IDS: &[(c_uint, &str)] = &[
    (3, "ecc_corrected_volatile"), // ECC_SBE_VOL_TOTAL
    (29, "retired_pages_sbe"),     // RETIRED_SBE
    (30, "retired_pages_dbe"),     // RETIRED_DBE
    (31, "retired_pages_pending"), // RETIRED_PENDING (0/1)
    (82, "memory_temperature"),    // MEMORY_TEMP (°C)
    (94, "pcie_replay_counter"),   // PCIE_REPLAY_COUNTER
    (142, "remapped_rows_correctable"),
    (143, "remapped_rows_uncorrectable"),
    (144, "remapped_rows_pending"), // 0/1
    (145, "remapped_rows_failed"),  // 0/1
];

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(
    device: Device,
    count: c_int,
    values: *mut FieldValue,
) -> u32 {
    let Ok(n) = usize::try_from(count) else {
        return ERROR_INVALID_ARGUMENT;
    };
    if values.is_null() || n == 0 {
        return ERROR_INVALID_ARGUMENT;
    }
    with_gpu("nvmlDeviceGetFieldValues", device, |g, tick| {
        // `"field_values": 0`: a driver without the call, where readers fall back on the
        // counters' own calls (`modes::nvmlDeviceGetPcieReplayCounter`, TotalEccErrors).
        if let Step::Value(0) = g.field("field_values", tick) {
            return crate::ERROR_NOT_SUPPORTED;
        }
        // SAFETY: NVML's contract: `values` holds `count` entries, their field ids set.
        let entries = unsafe { std::slice::from_raw_parts_mut(values, n) };
        for e in entries {
            let step = FIELD_IDS.iter().find(|(id, _)| *id == e.field_id).map_or(
                Step::Error(crate::scenario::ErrorName::NotSupported),
                |(_, name)| g.field(name, tick),
            );
            e.timestamp = 1_000_000 * (tick as c_longlong + 1);
            e.latency_usec = 0;
            match step {
                Step::Value(v) => {
                    e.value_type = VALUE_TYPE_ULL;
                    e.nvml_return = SUCCESS;
                    e.value = v;
                }
                Step::Error(err) => e.nvml_return = err.code(),
            }
        }
        SUCCESS
    })
}
