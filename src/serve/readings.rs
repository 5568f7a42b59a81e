//! The table of per-GPU series: every numeric `GpuReading` field as a native metric in
//! base units, and the writer shared with the dcgm-exporter table. Pure; `None` readings
//! produce no sample.

use crate::source::GpuReading;
use crate::units::{Bytes, Celsius, MegaHertz, Percent};

use super::text::{Exposition, Family, Kind, Labels};

/// One per-GPU series: its family and how to read it from a GPU (`None`: leave it out).
pub(super) struct GpuSeries {
    pub family: Family,
    pub value: fn(&GpuReading) -> Option<f64>,
}

const fn gauge(
    name: &'static str,
    help: &'static str,
    value: fn(&GpuReading) -> Option<f64>,
) -> GpuSeries {
    GpuSeries {
        family: Family {
            name,
            kind: Kind::Gauge,
            help,
        },
        value,
    }
}

const fn counter(
    name: &'static str,
    help: &'static str,
    value: fn(&GpuReading) -> Option<f64>,
) -> GpuSeries {
    GpuSeries {
        family: Family {
            name,
            kind: Kind::Counter,
            help,
        },
        value,
    }
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
    m.map(|m| f64::from(m.0) * 1e6)
}

/// Every numeric `GpuReading` field, in base units.
pub(super) const GPU_SERIES: &[GpuSeries] = &[
    gauge(
        "gpuwatch_gpu_utilization_ratio",
        "Share of the last sample period in which a kernel ran on the GPU (0-1).",
        |g| ratio(g.util),
    ),
    gauge(
        "gpuwatch_gpu_memory_utilization_ratio",
        "Share of the last sample period in which device memory was read or written (0-1).",
        |g| ratio(g.memory_util),
    ),
    gauge(
        "gpuwatch_gpu_memory_total_bytes",
        "Device memory (VRAM) in total.",
        |g| bytes(g.memory_total),
    ),
    gauge(
        "gpuwatch_gpu_memory_used_bytes",
        "Device memory in use.",
        |g| bytes(g.memory_used),
    ),
    gauge(
        "gpuwatch_gpu_memory_free_bytes",
        "Device memory free.",
        |g| bytes(g.memory_free),
    ),
    gauge(
        "gpuwatch_gpu_memory_reserved_bytes",
        "Device memory the driver reserves for itself.",
        |g| bytes(g.memory_reserved),
    ),
    gauge(
        "gpuwatch_gpu_temperature_celsius",
        "GPU core temperature.",
        |g| celsius(g.temperature),
    ),
    gauge(
        "gpuwatch_gpu_slowdown_temperature_celsius",
        "Temperature at which the GPU starts slowing itself down.",
        |g| celsius(g.temperature_slowdown),
    ),
    gauge(
        "gpuwatch_gpu_shutdown_temperature_celsius",
        "Temperature at which the GPU shuts itself down.",
        |g| celsius(g.temperature_shutdown),
    ),
    gauge("gpuwatch_gpu_power_watts", "Power draw.", |g| {
        g.power.map(|w| w.0)
    }),
    gauge(
        "gpuwatch_gpu_power_limit_watts",
        "Power limit the GPU is held to.",
        |g| g.power_limit.map(|w| w.0),
    ),
    counter(
        "gpuwatch_gpu_energy_joules_total",
        "Energy used since the driver was loaded.",
        |g| g.energy_joules,
    ),
    gauge(
        "gpuwatch_gpu_fan_speed_ratio",
        "Fan speed as a share of its maximum (0-1).",
        |g| ratio(g.fan),
    ),
    gauge("gpuwatch_gpu_sm_clock_hertz", "SM (graphics) clock.", |g| {
        hertz(g.sm_clock)
    }),
    gauge("gpuwatch_gpu_memory_clock_hertz", "Memory clock.", |g| {
        hertz(g.memory_clock)
    }),
    gauge(
        "gpuwatch_gpu_sm_clock_max_hertz",
        "Highest SM clock the GPU supports.",
        |g| hertz(g.sm_clock_max),
    ),
    gauge(
        "gpuwatch_gpu_memory_clock_max_hertz",
        "Highest memory clock the GPU supports.",
        |g| hertz(g.memory_clock_max),
    ),
    gauge(
        "gpuwatch_gpu_performance_state",
        "Performance state, 0 (fastest) to 15 (slowest).",
        |g| g.pstate.map(f64::from),
    ),
    gauge(
        "gpuwatch_gpu_encoder_utilization_ratio",
        "Video encoder utilization (0-1).",
        |g| ratio(g.encoder_util),
    ),
    gauge(
        "gpuwatch_gpu_decoder_utilization_ratio",
        "Video decoder utilization (0-1).",
        |g| ratio(g.decoder_util),
    ),
    gauge(
        "gpuwatch_gpu_pcie_link_generation",
        "PCIe link generation in use.",
        |g| g.pcie_link_gen.map(f64::from),
    ),
    gauge("gpuwatch_gpu_pcie_link_width", "PCIe lanes in use.", |g| {
        g.pcie_link_width.map(f64::from)
    }),
    gauge(
        "gpuwatch_gpu_pcie_transmit_bytes_per_second",
        "PCIe traffic out of the GPU over NVML's last ~20 ms window.",
        |g| bytes(g.pcie_tx_per_second),
    ),
    gauge(
        "gpuwatch_gpu_pcie_receive_bytes_per_second",
        "PCIe traffic into the GPU over NVML's last ~20 ms window.",
        |g| bytes(g.pcie_rx_per_second),
    ),
    counter(
        "gpuwatch_gpu_ecc_uncorrected_errors_total",
        "Uncorrected ECC errors since the driver was loaded.",
        |g| g.ecc_errors_uncorrected.map(|n| n as f64),
    ),
    gauge(
        "gpuwatch_gpu_mig_enabled",
        "1 when MIG (multi-instance GPU) mode is on, else 0.",
        |g| g.mig_enabled.map(|on| f64::from(u8::from(on))),
    ),
    gauge(
        "gpuwatch_gpu_memory_temperature_celsius",
        "Memory (HBM) temperature, where the board has the sensor.",
        |g| celsius(g.health.memory_temperature),
    ),
    counter(
        "gpuwatch_gpu_pcie_replays_total",
        "PCIe link replays (retransmitted packets) since the driver was loaded.",
        |g| count(g.health.pcie_replays),
    ),
    counter(
        "gpuwatch_gpu_ecc_corrected_errors_total",
        "Corrected (single-bit) ECC errors since the driver was loaded.",
        |g| count(g.health.ecc_corrected),
    ),
    gauge(
        "gpuwatch_gpu_retired_pages_single_bit",
        "Memory pages retired for repeated single-bit ECC errors.",
        |g| g.health.retired_pages.map(|p| p.single_bit as f64),
    ),
    gauge(
        "gpuwatch_gpu_retired_pages_double_bit",
        "Memory pages retired for double-bit ECC errors.",
        |g| g.health.retired_pages.map(|p| p.double_bit as f64),
    ),
    gauge(
        "gpuwatch_gpu_retired_pages_pending",
        "1 when a page retirement waits for the driver to reload, else 0.",
        |g| g.health.retired_pages.map(|p| flag(p.pending)),
    ),
    gauge(
        "gpuwatch_gpu_remapped_rows_correctable",
        "Memory rows remapped for correctable errors.",
        |g| g.health.remapped_rows.map(|r| r.correctable as f64),
    ),
    gauge(
        "gpuwatch_gpu_remapped_rows_uncorrectable",
        "Memory rows remapped for uncorrectable errors.",
        |g| g.health.remapped_rows.map(|r| r.uncorrectable as f64),
    ),
    gauge(
        "gpuwatch_gpu_remapped_rows_pending",
        "1 when a row remapping waits for a GPU reset, else 0.",
        |g| g.health.remapped_rows.map(|r| flag(r.pending)),
    ),
    gauge(
        "gpuwatch_gpu_remapped_rows_failed",
        "1 when a row remapping failed (no spare row left), else 0.",
        |g| g.health.remapped_rows.map(|r| flag(r.failed)),
    ),
    counter(
        "gpuwatch_gpu_xid_errors_total",
        "Critical XID errors the GPU reported since gpuwatch started watching it.",
        |g| g.health.xid.map(|x| x.count as f64),
    ),
    gauge(
        "gpuwatch_gpu_last_xid",
        "The number of the latest critical XID error (absent until one arrives).",
        |g| g.health.xid.and_then(|x| x.last).map(|x| x.code as f64),
    ),
    gauge(
        "gpuwatch_gpu_last_xid_timestamp_seconds",
        "When the latest critical XID error arrived, in seconds since the Unix epoch.",
        |g| {
            g.health
                .xid
                .and_then(|x| x.last)
                .and_then(|x| x.at.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64())
        },
    ),
];

fn count(n: Option<u64>) -> Option<f64> {
    n.map(|n| n as f64)
}
fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

/// Writes each series of `table` for every GPU that has the reading.
pub(super) fn write_gpu_series(
    e: &mut Exposition,
    table: &[GpuSeries],
    gpus: &[GpuReading],
    labels: impl Fn(&GpuReading) -> Labels,
) {
    for series in table {
        e.family(
            series.family,
            gpus.iter()
                .filter_map(|g| (series.value)(g).map(|v| (labels(g), v))),
        );
    }
}

/// The labels every native per-GPU series carries: `vendor` when known (`nvidia`, `amd`,
/// `intel`: one query or dashboard across a box's vendors can still tell them apart), and
/// `host` when the state holds several hosts' GPUs (`--remote`), whose indices would
/// otherwise collide.
pub(super) fn gpu_labels(g: &GpuReading) -> Labels {
    let mut labels = vec![
        ("gpu", g.index.to_string()),
        ("uuid", g.id.0.clone()),
        ("name", g.name.clone()),
    ];
    if let Some(vendor) = g.vendor {
        labels.push(("vendor", vendor.name().to_string()));
    }
    if let Some(host) = &g.host {
        labels.push(("host", host.clone()));
    }
    labels
}
