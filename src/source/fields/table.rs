//! The rows of the field table (`source::fields`), in the order the exporter writes them;
//! plus the small conversions between a reading's type and its base-unit value.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Dcgm, Field, Key, MetricKind, Native, Scale};
use crate::source::GpuReading;
use crate::source::health::{RemappedRows, RetiredPages, Xid, XidTally};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

use MetricKind::{Counter, Gauge};

const MIB: f64 = 1_048_576.0;
const MHZ: f64 = 1e6;

const fn gauge(name: &'static str, help: &'static str) -> Option<Native> {
    Some(Native {
        name,
        kind: Gauge,
        help,
    })
}

const fn counter(name: &'static str, help: &'static str) -> Option<Native> {
    Some(Native {
        name,
        kind: Counter,
        help,
    })
}

/// A DCGM name `--dcgm-compat` writes.
const fn dcgm(
    name: &'static str,
    scale: Scale,
    kind: MetricKind,
    help: &'static str,
) -> Option<Dcgm> {
    Some(Dcgm {
        name,
        scale,
        written: Some((kind, help)),
    })
}

/// A DCGM name only read back from a dcgm-exporter.
const fn dcgm_read(name: &'static str, scale: Scale) -> Option<Dcgm> {
    Some(Dcgm {
        name,
        scale,
        written: None,
    })
}

// Unclamped on purpose: a fan reported above 100 % is a real reading, not ours to hide.
fn ratio(p: Option<Percent>) -> Option<f64> {
    p.map(|p| f64::from(p.0) / 100.0)
}
fn bytes(b: Option<Bytes>) -> Option<f64> {
    b.map(|b| b.0 as f64)
}
fn celsius(c: Option<Celsius>) -> Option<f64> {
    c.map(|c| f64::from(c.0))
}
fn hertz(m: Option<MegaHertz>) -> Option<f64> {
    m.map(|m| f64::from(m.0) * MHZ)
}
fn whole_f(n: Option<u32>) -> Option<f64> {
    n.map(f64::from)
}
fn count(n: Option<u64>) -> Option<f64> {
    n.map(|n| n as f64)
}
fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

fn whole(v: f64) -> Option<u32> {
    (v >= 0.0 && v <= f64::from(u32::MAX)).then(|| v.round() as u32)
}
fn to_count(v: f64) -> Option<u64> {
    (v >= 0.0).then(|| v.round() as u64)
}
fn to_percent(v: f64) -> Option<Percent> {
    whole(v * 100.0).map(Percent)
}
fn to_bytes(v: f64) -> Option<Bytes> {
    to_count(v).map(Bytes)
}
fn to_mhz(v: f64) -> Option<MegaHertz> {
    whole(v / MHZ).map(MegaHertz)
}

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

/// Every numeric GPU reading. The exporter writes the native series in this order.
pub const TABLE: &[Field] = &[
    Field {
        key: Key::Util,
        json: "utilization_gpu",
        get: |g| ratio(g.util),
        set: Some(|g, v| g.util = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_utilization_ratio",
            "Share of the last sample period in which a kernel ran on the GPU (0-1).",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_GPU_UTIL",
            Scale::Times(100.0),
            Gauge,
            "GPU utilization (in %).",
        ),
    },
    Field {
        key: Key::MemoryUtil,
        json: "utilization_memory",
        get: |g| ratio(g.memory_util),
        set: Some(|g, v| g.memory_util = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_memory_utilization_ratio",
            "Share of the last sample period in which device memory was read or written (0-1).",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_MEM_COPY_UTIL",
            Scale::Times(100.0),
            Gauge,
            "Memory utilization (in %).",
        ),
    },
    Field {
        key: Key::MemoryTotal,
        json: "memory_total",
        get: |g| bytes(g.memory_total),
        set: Some(|g, v| g.memory_total = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_memory_total_bytes",
            "Device memory (VRAM) in total.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::MemoryUsed,
        json: "memory_used",
        get: |g| bytes(g.memory_used),
        set: Some(|g, v| g.memory_used = to_bytes(v)),
        native: gauge("gpuwatch_gpu_memory_used_bytes", "Device memory in use."),
        dcgm: dcgm(
            "DCGM_FI_DEV_FB_USED",
            Scale::Per(MIB),
            Gauge,
            "Framebuffer memory used (in MiB).",
        ),
    },
    Field {
        key: Key::MemoryFree,
        json: "memory_free",
        get: |g| bytes(g.memory_free),
        set: Some(|g, v| g.memory_free = to_bytes(v)),
        native: gauge("gpuwatch_gpu_memory_free_bytes", "Device memory free."),
        dcgm: dcgm(
            "DCGM_FI_DEV_FB_FREE",
            Scale::Per(MIB),
            Gauge,
            "Framebuffer memory free (in MiB).",
        ),
    },
    Field {
        key: Key::MemoryReserved,
        json: "memory_reserved",
        get: |g| bytes(g.memory_reserved),
        set: Some(|g, v| g.memory_reserved = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_memory_reserved_bytes",
            "Device memory the driver reserves for itself.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_FB_RESERVED", Scale::Per(MIB)),
    },
    Field {
        key: Key::Temperature,
        json: "temperature_gpu",
        get: |g| celsius(g.temperature),
        set: Some(|g, v| g.temperature = whole(v).map(Celsius)),
        native: gauge("gpuwatch_gpu_temperature_celsius", "GPU core temperature."),
        dcgm: dcgm(
            "DCGM_FI_DEV_GPU_TEMP",
            Scale::Same,
            Gauge,
            "GPU temperature (in C).",
        ),
    },
    Field {
        key: Key::TemperatureSlowdown,
        json: "temperature_slowdown",
        get: |g| celsius(g.temperature_slowdown),
        set: Some(|g, v| g.temperature_slowdown = whole(v).map(Celsius)),
        native: gauge(
            "gpuwatch_gpu_slowdown_temperature_celsius",
            "Temperature at which the GPU starts slowing itself down.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_SLOWDOWN_TEMP", Scale::Same),
    },
    Field {
        key: Key::TemperatureShutdown,
        json: "temperature_shutdown",
        get: |g| celsius(g.temperature_shutdown),
        set: Some(|g, v| g.temperature_shutdown = whole(v).map(Celsius)),
        native: gauge(
            "gpuwatch_gpu_shutdown_temperature_celsius",
            "Temperature at which the GPU shuts itself down.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_SHUTDOWN_TEMP", Scale::Same),
    },
    Field {
        key: Key::Power,
        json: "power_draw",
        get: |g| g.power.map(|w| w.0),
        set: Some(|g, v| g.power = Some(Watts(v))),
        native: gauge("gpuwatch_gpu_power_watts", "Power draw."),
        dcgm: dcgm(
            "DCGM_FI_DEV_POWER_USAGE",
            Scale::Same,
            Gauge,
            "Power draw (in W).",
        ),
    },
    Field {
        key: Key::PowerLimit,
        json: "enforced_power_limit",
        get: |g| g.power_limit.map(|w| w.0),
        set: Some(|g, v| g.power_limit = Some(Watts(v))),
        native: gauge(
            "gpuwatch_gpu_power_limit_watts",
            "Power limit the GPU is held to.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_POWER_MGMT_LIMIT", Scale::Same),
    },
    Field {
        key: Key::EnergyJoules,
        json: "total_energy_consumption",
        get: |g| g.energy_joules,
        set: Some(|g, v| g.energy_joules = Some(v)),
        native: counter(
            "gpuwatch_gpu_energy_joules_total",
            "Energy used since the driver was loaded.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            Scale::Times(1000.0),
            Counter,
            "Total energy consumption since boot (in mJ).",
        ),
    },
    Field {
        key: Key::Fan,
        json: "fan_speed",
        get: |g| ratio(g.fan),
        set: Some(|g, v| g.fan = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_fan_speed_ratio",
            "Fan speed as a share of its maximum (0-1).",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_FAN_SPEED", Scale::Times(100.0)),
    },
    Field {
        key: Key::SmClock,
        json: "clocks_sm",
        get: |g| hertz(g.sm_clock),
        set: Some(|g, v| g.sm_clock = to_mhz(v)),
        native: gauge("gpuwatch_gpu_sm_clock_hertz", "SM (graphics) clock."),
        dcgm: dcgm(
            "DCGM_FI_DEV_SM_CLOCK",
            Scale::Per(MHZ),
            Gauge,
            "SM clock frequency (in MHz).",
        ),
    },
    Field {
        key: Key::MemoryClock,
        json: "clocks_mem",
        get: |g| hertz(g.memory_clock),
        set: Some(|g, v| g.memory_clock = to_mhz(v)),
        native: gauge("gpuwatch_gpu_memory_clock_hertz", "Memory clock."),
        dcgm: dcgm(
            "DCGM_FI_DEV_MEM_CLOCK",
            Scale::Per(MHZ),
            Gauge,
            "Memory clock frequency (in MHz).",
        ),
    },
    Field {
        key: Key::SmClockMax,
        json: "clocks_max_sm",
        get: |g| hertz(g.sm_clock_max),
        set: Some(|g, v| g.sm_clock_max = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_sm_clock_max_hertz",
            "Highest SM clock the GPU supports.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_MAX_SM_CLOCK", Scale::Per(MHZ)),
    },
    Field {
        key: Key::MemoryClockMax,
        json: "clocks_max_mem",
        get: |g| hertz(g.memory_clock_max),
        set: Some(|g, v| g.memory_clock_max = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_memory_clock_max_hertz",
            "Highest memory clock the GPU supports.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_MAX_MEM_CLOCK", Scale::Per(MHZ)),
    },
    Field {
        key: Key::Pstate,
        json: "pstate",
        get: |g| whole_f(g.pstate),
        set: Some(|g, v| g.pstate = whole(v)),
        native: gauge(
            "gpuwatch_gpu_performance_state",
            "Performance state, 0 (fastest) to 15 (slowest).",
        ),
        dcgm: None,
    },
    Field {
        key: Key::EncoderUtil,
        json: "utilization_encoder",
        get: |g| ratio(g.encoder_util),
        set: Some(|g, v| g.encoder_util = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_encoder_utilization_ratio",
            "Video encoder utilization (0-1).",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_ENC_UTIL",
            Scale::Times(100.0),
            Gauge,
            "Encoder utilization (in %).",
        ),
    },
    Field {
        key: Key::DecoderUtil,
        json: "utilization_decoder",
        get: |g| ratio(g.decoder_util),
        set: Some(|g, v| g.decoder_util = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_decoder_utilization_ratio",
            "Video decoder utilization (0-1).",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_DEC_UTIL",
            Scale::Times(100.0),
            Gauge,
            "Decoder utilization (in %).",
        ),
    },
    Field {
        key: Key::PcieGen,
        json: "pcie_link_gen_current",
        get: |g| whole_f(g.pcie_link_gen),
        set: Some(|g, v| g.pcie_link_gen = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_generation",
            "PCIe link generation in use.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_LINK_GEN", Scale::Same),
    },
    Field {
        key: Key::PcieWidth,
        json: "pcie_link_width_current",
        get: |g| whole_f(g.pcie_link_width),
        set: Some(|g, v| g.pcie_link_width = whole(v)),
        native: gauge("gpuwatch_gpu_pcie_link_width", "PCIe lanes in use."),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_LINK_WIDTH", Scale::Same),
    },
    Field {
        key: Key::PcieGenMax,
        json: "pcie_link_gen_max",
        get: |g| whole_f(g.pcie_link_gen_max),
        set: Some(|g, v| g.pcie_link_gen_max = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_generation_max",
            "Fastest PCIe link generation the GPU and its slot support.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", Scale::Same),
    },
    Field {
        key: Key::PcieWidthMax,
        json: "pcie_link_width_max",
        get: |g| whole_f(g.pcie_link_width_max),
        set: Some(|g, v| g.pcie_link_width_max = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_width_max",
            "Widest PCIe link (lanes) the GPU and its slot support.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", Scale::Same),
    },
    Field {
        key: Key::PcieTx,
        json: "pcie_tx_throughput",
        get: |g| bytes(g.pcie_tx_per_second),
        set: Some(|g, v| g.pcie_tx_per_second = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_transmit_bytes_per_second",
            "PCIe traffic out of the GPU over NVML's last ~20 ms window.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::PcieRx,
        json: "pcie_rx_throughput",
        get: |g| bytes(g.pcie_rx_per_second),
        set: Some(|g, v| g.pcie_rx_per_second = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_receive_bytes_per_second",
            "PCIe traffic into the GPU over NVML's last ~20 ms window.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::EccUncorrected,
        json: "ecc_errors_uncorrected_volatile",
        get: |g| count(g.ecc_errors_uncorrected),
        set: Some(|g, v| g.ecc_errors_uncorrected = to_count(v)),
        native: counter(
            "gpuwatch_gpu_ecc_uncorrected_errors_total",
            "Uncorrected ECC errors since the driver was loaded.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Scale::Same),
    },
    Field {
        key: Key::Mig,
        json: "mig_enabled",
        get: |g| g.mig_enabled.map(flag),
        set: Some(|g, v| g.mig_enabled = Some(v != 0.0)),
        native: gauge(
            "gpuwatch_gpu_mig_enabled",
            "1 when MIG (multi-instance GPU) mode is on, else 0.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::MemoryTemperature,
        json: "temperature_memory",
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
    },
    Field {
        key: Key::PcieReplays,
        json: "pcie_replay_counter",
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
    },
    Field {
        key: Key::EccCorrected,
        json: "ecc_errors_corrected_volatile",
        get: |g| count(g.health.ecc_corrected),
        set: Some(|g, v| g.health.ecc_corrected = to_count(v)),
        native: counter(
            "gpuwatch_gpu_ecc_corrected_errors_total",
            "Corrected (single-bit) ECC errors since the driver was loaded.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::RetiredSingleBit,
        json: "retired_pages.single_bit_ecc",
        get: |g| g.health.retired_pages.map(|p| p.single_bit as f64),
        set: Some(|g, v| retired(g).single_bit = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_retired_pages_single_bit",
            "Memory pages retired for repeated single-bit ECC errors.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::RetiredDoubleBit,
        json: "retired_pages.double_bit_ecc",
        get: |g| g.health.retired_pages.map(|p| p.double_bit as f64),
        set: Some(|g, v| retired(g).double_bit = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_retired_pages_double_bit",
            "Memory pages retired for double-bit ECC errors.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::RetiredPending,
        json: "retired_pages.pending",
        get: |g| g.health.retired_pages.map(|p| flag(p.pending)),
        set: Some(|g, v| retired(g).pending = v != 0.0),
        native: gauge(
            "gpuwatch_gpu_retired_pages_pending",
            "1 when a page retirement waits for the driver to reload, else 0.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::RemappedCorrectable,
        json: "remapped_rows.correctable",
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
    },
    Field {
        key: Key::RemappedUncorrectable,
        json: "remapped_rows.uncorrectable",
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
    },
    Field {
        key: Key::RemappedPending,
        json: "remapped_rows.pending",
        get: |g| g.health.remapped_rows.map(|r| flag(r.pending)),
        set: Some(|g, v| remapped(g).pending = v != 0.0),
        native: gauge(
            "gpuwatch_gpu_remapped_rows_pending",
            "1 when a row remapping waits for a GPU reset, else 0.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::RemappedFailed,
        json: "remapped_rows.failure",
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
    },
    Field {
        key: Key::XidCount,
        json: "xid_errors.count",
        get: |g| g.health.xid.map(|x| x.count as f64),
        set: Some(|g, v| xid(g).count = to_count(v).unwrap_or_default()),
        native: counter(
            "gpuwatch_gpu_xid_errors_total",
            "Critical XID errors the GPU reported since gpuwatch started watching it.",
        ),
        dcgm: None,
    },
    Field {
        key: Key::LastXid,
        json: "xid_errors.last",
        get: |g| g.health.xid.and_then(|x| x.last).map(|x| x.code as f64),
        set: Some(|g, v| last_xid(g).code = to_count(v).unwrap_or_default()),
        native: gauge(
            "gpuwatch_gpu_last_xid",
            "The number of the latest critical XID error (absent until one arrives).",
        ),
        dcgm: None,
    },
    Field {
        key: Key::LastXidTime,
        json: "xid_errors.last_time",
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
    },
    // Written for dashboards, never read back: DCGM's field carries no time, and a latest
    // XID with a made-up time would raise (or hide) the XID warning wrongly.
    Field {
        key: Key::DcgmXid,
        json: "xid_errors.last",
        get: |g| g.health.xid.map(|x| x.last.map_or(0.0, |x| x.code as f64)),
        set: None,
        native: None,
        dcgm: dcgm(
            "DCGM_FI_DEV_XID_ERRORS",
            Scale::Same,
            Gauge,
            "Value of the last XID error encountered.",
        ),
    },
];
