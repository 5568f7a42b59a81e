//! The field table's rows for a GPU's health counters (`reading::health`): memory
//! temperature, PCIe replays, corrected ECC, retired pages, remapped rows and XIDs. Nested
//! readings are one row per member.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::table::{
    boolean, celsius, count, counter, dcgm, flag, float, gauge, integer, smi, to_count, whole,
};
use super::{Field, Key, MetricKind, Scale, Shown};
use crate::reading::GpuReading;
use crate::reading::health::{RemappedRows, RetiredPages, Xid, XidTally};
use crate::units::Celsius;

use MetricKind::{Counter, Gauge};

// A nested reading is written as one series per member; reading one back starts from an
// all-clear struct, which the member's other series then fill (the exporter writes all of a
// struct's series or none).
fn retired(g: &mut GpuReading) -> &mut RetiredPages {
    g.health.retired_pages.get_or_insert(RetiredPages {
        single_bit: 0,
        double_bit: 0,
        pending: false,
    })
}
fn remapped(g: &mut GpuReading) -> &mut RemappedRows {
    g.health.remapped_rows.get_or_insert(RemappedRows {
        correctable: 0,
        uncorrectable: 0,
        pending: false,
        failed: false,
    })
}
fn xid(g: &mut GpuReading) -> &mut XidTally {
    g.health.xid.get_or_insert(XidTally::NONE)
}
/// The latest XID, its number and time set by two series in either order.
fn last_xid(g: &mut GpuReading) -> &mut Xid {
    xid(g).last.get_or_insert(Xid {
        code: 0,
        at: UNIX_EPOCH,
    })
}
fn epoch_secs(at: SystemTime) -> Option<f64> {
    at.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs_f64())
}

/// The health rows, after the device's readings in the table.
pub(super) const HEALTH: &[Field] = &[
    Field {
        key: Key::MemoryTemperature,
        json: integer("temperature_memory"),
        get: |g| celsius(g.health.memory_temperature),
        set: Some(|g, v| g.health.memory_temperature = whole(v).map(Celsius)),
        native: gauge(
            "gpuwatch_gpu_memory_temperature_celsius",
            "Memory (HBM) temperature, where the board has the sensor.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_MEMORY_TEMP",
            Scale::Same,
            Gauge,
            "Memory temperature (in C).",
        ),
        smi: &[smi(
            "temperature.memory",
            &[],
            Shown::Whole,
            "HBM temperature, °C.",
        )],
    },
    Field {
        key: Key::PcieReplays,
        json: integer("pcie_replay_counter"),
        get: |g| count(g.health.pcie_replays),
        set: Some(|g, v| g.health.pcie_replays = to_count(v)),
        native: counter(
            "gpuwatch_gpu_pcie_replays_total",
            "PCIe link replays (retransmitted packets) since the driver was loaded.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
            Scale::Same,
            Counter,
            "Total number of PCIe retries.",
        ),
        smi: &[],
    },
    Field {
        key: Key::EccCorrected,
        json: integer("ecc_errors_corrected_volatile"),
        get: |g| count(g.health.ecc_corrected),
        set: Some(|g, v| g.health.ecc_corrected = to_count(v)),
        native: counter(
            "gpuwatch_gpu_ecc_corrected_errors_total",
            "Corrected (single-bit) ECC errors since the driver was loaded.",
        ),
        dcgm: None,
        smi: &[smi(
            "ecc.errors.corrected.volatile.total",
            &[],
            Shown::Whole,
            "Corrected ECC errors since the driver loaded.",
        )],
    },
    Field {
        key: Key::RetiredSingleBit,
        json: integer("retired_pages.single_bit_ecc"),
        get: |g| g.health.retired_pages.map(|p| p.single_bit as f64),
        set: Some(|g, v| retired(g).single_bit = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_retired_pages_single_bit",
            "Memory pages retired for repeated single-bit ECC errors.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::RetiredDoubleBit,
        json: integer("retired_pages.double_bit_ecc"),
        get: |g| g.health.retired_pages.map(|p| p.double_bit as f64),
        set: Some(|g, v| retired(g).double_bit = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_retired_pages_double_bit",
            "Memory pages retired for double-bit ECC errors.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::RetiredPending,
        json: boolean("retired_pages.pending"),
        get: |g| g.health.retired_pages.map(|p| flag(p.pending)),
        set: Some(|g, v| retired(g).pending = v != 0.0),
        native: gauge(
            "gpuwatch_gpu_retired_pages_pending",
            "1 when a page retirement waits for the driver to reload, else 0.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::RemappedCorrectable,
        json: integer("remapped_rows.correctable"),
        get: |g| g.health.remapped_rows.map(|r| r.correctable as f64),
        set: Some(|g, v| remapped(g).correctable = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_remapped_rows_correctable",
            "Memory rows remapped for correctable errors.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
            Scale::Same,
            Counter,
            "Number of remapped rows for correctable errors",
        ),
        smi: &[],
    },
    Field {
        key: Key::RemappedUncorrectable,
        json: integer("remapped_rows.uncorrectable"),
        get: |g| g.health.remapped_rows.map(|r| r.uncorrectable as f64),
        set: Some(|g, v| remapped(g).uncorrectable = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_remapped_rows_uncorrectable",
            "Memory rows remapped for uncorrectable errors.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
            Scale::Same,
            Counter,
            "Number of remapped rows for uncorrectable errors",
        ),
        smi: &[],
    },
    Field {
        key: Key::RemappedPending,
        json: boolean("remapped_rows.pending"),
        get: |g| g.health.remapped_rows.map(|r| flag(r.pending)),
        set: Some(|g, v| remapped(g).pending = v != 0.0),
        native: gauge(
            "gpuwatch_gpu_remapped_rows_pending",
            "1 when a row remapping waits for a GPU reset, else 0.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::RemappedFailed,
        json: boolean("remapped_rows.failure"),
        get: |g| g.health.remapped_rows.map(|r| flag(r.failed)),
        set: Some(|g, v| remapped(g).failed = v != 0.0),
        native: gauge(
            "gpuwatch_gpu_remapped_rows_failed",
            "1 when a row remapping failed (no spare row left), else 0.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_ROW_REMAP_FAILURE",
            Scale::Same,
            Gauge,
            "Whether remapping of rows has failed",
        ),
        smi: &[],
    },
    Field {
        key: Key::XidCount,
        json: integer("xid_errors.count"),
        get: |g| g.health.xid.map(|x| x.count as f64),
        set: Some(|g, v| xid(g).count = to_count(v).unwrap_or_default()),
        native: counter(
            "gpuwatch_gpu_xid_errors_total",
            "Critical XID errors the GPU reported since gpuwatch started watching it.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::LastXid,
        json: integer("xid_errors.last"),
        get: |g| g.health.xid.and_then(|x| x.last).map(|x| x.code as f64),
        set: Some(|g, v| last_xid(g).code = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_last_xid",
            "The number of the latest critical XID error (absent until one arrives).",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::LastXidTime,
        json: float("xid_errors.last_time"),
        get: |g| {
            g.health
                .xid
                .and_then(|x| x.last)
                .and_then(|x| epoch_secs(x.at))
        },
        set: Some(|g, v| {
            if v >= 0.0 && v.is_finite() {
                last_xid(g).at = UNIX_EPOCH + Duration::from_secs_f64(v);
            }
        }),
        native: gauge(
            "gpuwatch_gpu_last_xid_timestamp_seconds",
            "When the latest critical XID error arrived, in seconds since the Unix epoch.",
        ),
        dcgm: None,
        smi: &[],
    },
    // Written for dashboards, never read back: DCGM's field carries no time, and a latest
    // XID with a made-up time would raise (or hide) the XID warning wrongly.
    Field {
        key: Key::DcgmXid,
        json: None,
        get: |g| g.health.xid.map(|x| x.last.map_or(0.0, |x| x.code as f64)),
        set: None,
        native: None,
        dcgm: dcgm(
            "DCGM_FI_DEV_XID_ERRORS",
            Scale::Same,
            Gauge,
            "Value of the last XID error encountered.",
        ),
        smi: &[],
    },
];
