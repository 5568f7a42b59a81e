//! The health counters of one NVML device in one `nvmlDeviceGetFieldValues` call: memory
//! temperature, PCIe replays, corrected ECC, retired pages and remapped rows (the fields
//! dcgm-exporter reads too). Each field answers on its own, so a device that lacks one
//! still reports the others; a field it refuses is remembered in the slot and not asked
//! again. Owns the field ids; no state of its own.

use nvml_wrapper::Device;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id as fi;

use super::{Lost, Query, Slot};
use crate::reading::GpuReading;
use crate::reading::health::{Health, RemappedRows, RetiredPages};
use crate::units::Celsius;

/// Every field asked, in the order `Values::set` expects nothing of (matched by id).
const FIELDS: [u32; 10] = [
    fi::NVML_FI_DEV_MEMORY_TEMP,
    fi::NVML_FI_DEV_PCIE_REPLAY_COUNTER,
    fi::NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
    fi::NVML_FI_DEV_RETIRED_SBE,
    fi::NVML_FI_DEV_RETIRED_DBE,
    fi::NVML_FI_DEV_RETIRED_PENDING,
    fi::NVML_FI_DEV_REMAPPED_COR,
    fi::NVML_FI_DEV_REMAPPED_UNC,
    fi::NVML_FI_DEV_REMAPPED_PENDING,
    fi::NVML_FI_DEV_REMAPPED_FAILURE,
];

/// Reads the health fields the device has not refused before into `g.health` (the XID
/// tally is the event set's, filled in by the source).
pub(super) fn read_health(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    let ask: Vec<FieldId> = FIELDS
        .iter()
        .filter(|id| !s.never_fields.contains(id))
        .map(|&id| FieldId(id))
        .collect();
    if ask.is_empty() {
        return Ok(());
    }
    let Some(samples) = s.ask(Query::FieldValues, || d.field_values_for(&ask))? else {
        return Ok(());
    };
    let mut values: Vec<(u32, u64)> = Vec::with_capacity(samples.len());
    for (id, sample) in ask.iter().zip(samples) {
        match sample.map(|FieldValueSample { value, .. }| value) {
            Ok(Ok(v)) => values.extend(as_u64(v).map(|v| (id.0, v))),
            Ok(Err(NvmlError::GpuLost)) | Err(NvmlError::GpuLost) => return Err(Lost),
            Ok(Err(e)) | Err(e) if refused(&e) => {
                s.never_fields.insert(id.0);
            }
            // Transient (or a value type this build does not know): ask again next time.
            _ => {}
        }
    }
    g.health = health_from(&values);
    Ok(())
}

fn refused(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported | NvmlError::NoPermission | NvmlError::FunctionNotFound
    )
}

/// Counters are never negative or fractional; a value that is is not a reading.
fn as_u64(v: SampleValue) -> Option<u64> {
    match v {
        SampleValue::U32(n) => Some(u64::from(n)),
        SampleValue::U64(n) => Some(n),
        SampleValue::I64(n) => u64::try_from(n).ok(),
        SampleValue::F64(x) => (x >= 0.0 && x.fract() == 0.0).then_some(x as u64),
    }
}

/// The readings from (field id, value) pairs; a group (retired pages, remapped rows) is
/// known only when all its fields are.
fn health_from(values: &[(u32, u64)]) -> Health {
    let get = |id: u32| values.iter().find(|(f, _)| *f == id).map(|(_, v)| *v);
    let retired_pages = match (
        get(fi::NVML_FI_DEV_RETIRED_SBE),
        get(fi::NVML_FI_DEV_RETIRED_DBE),
        get(fi::NVML_FI_DEV_RETIRED_PENDING),
    ) {
        (Some(single_bit), Some(double_bit), Some(pending)) => Some(RetiredPages {
            single_bit,
            double_bit,
            pending: pending != 0,
        }),
        _ => None,
    };
    let remapped_rows = match (
        get(fi::NVML_FI_DEV_REMAPPED_COR),
        get(fi::NVML_FI_DEV_REMAPPED_UNC),
        get(fi::NVML_FI_DEV_REMAPPED_PENDING),
        get(fi::NVML_FI_DEV_REMAPPED_FAILURE),
    ) {
        (Some(correctable), Some(uncorrectable), Some(pending), Some(failed)) => {
            Some(RemappedRows {
                correctable,
                uncorrectable,
                pending: pending != 0,
                failed: failed != 0,
            })
        }
        _ => None,
    };
    Health {
        memory_temperature: get(fi::NVML_FI_DEV_MEMORY_TEMP)
            .and_then(|t| u32::try_from(t).ok())
            .map(Celsius),
        pcie_replays: get(fi::NVML_FI_DEV_PCIE_REPLAY_COUNTER),
        ecc_corrected: get(fi::NVML_FI_DEV_ECC_SBE_VOL_TOTAL),
        retired_pages,
        remapped_rows,
        xid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_known_only_when_every_field_is() {
        let h = health_from(&[
            (fi::NVML_FI_DEV_MEMORY_TEMP, 71),
            (fi::NVML_FI_DEV_REMAPPED_COR, 2),
            (fi::NVML_FI_DEV_REMAPPED_UNC, 1),
            (fi::NVML_FI_DEV_REMAPPED_PENDING, 1),
            (fi::NVML_FI_DEV_REMAPPED_FAILURE, 0),
            (fi::NVML_FI_DEV_RETIRED_SBE, 0),
        ]);
        assert_eq!(h.memory_temperature, Some(Celsius(71)));
        assert_eq!(
            h.remapped_rows,
            Some(RemappedRows {
                correctable: 2,
                uncorrectable: 1,
                pending: true,
                failed: false
            })
        );
        assert_eq!(h.retired_pages, None, "two of three retired-page fields");
        assert_eq!(h.pcie_replays, None);
    }
}
