//! What each Prometheus series means for a GPU: the table of gpuwatch's own `gpuwatch_gpu_*`
//! names (base units: bytes, ratios, hertz, joules) and dcgm-exporter's `DCGM_FI_DEV_*`
//! (MiB, %, MHz, mJ), each to one `GpuReading` field in gpuwatch's units; and a GPU's
//! identity from the labels (`uuid`/`UUID`, `gpu`, `name`/`modelName`, host from `host`,
//! `Hostname` or `instance`). Pure. A field no series gives stays `None`: never invented.

use std::collections::HashMap;

use crate::source::{GpuReading, Vendor};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// A `GpuReading` field a series can fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Util,
    MemoryUtil,
    MemoryTotal,
    MemoryUsed,
    MemoryFree,
    MemoryReserved,
    Temperature,
    TemperatureSlowdown,
    TemperatureShutdown,
    Power,
    PowerLimit,
    EnergyJoules,
    Fan,
    SmClock,
    MemoryClock,
    SmClockMax,
    MemoryClockMax,
    Pstate,
    EncoderUtil,
    DecoderUtil,
    PcieGen,
    PcieWidth,
    PcieTx,
    PcieRx,
    EccUncorrected,
    Mig,
    /// A MIG instance's memory (`gpuwatch_mig_memory_*_bytes`; see `prometheus::mig`).
    MigMemoryTotal,
    MigMemoryUsed,
    MigMemoryFree,
    /// `gpuwatch_gpu_lost`: 1 when the GPU fell off the bus.
    Lost,
    /// `gpuwatch_gpu_info`: identity labels only.
    Info,
}

/// One known metric: its name, the field it fills, and the factor from its unit to the
/// field's (gpuwatch's) unit.
pub struct Metric {
    pub name: &'static str,
    pub field: Field,
    pub scale: f64,
}

const fn m(name: &'static str, field: Field, scale: f64) -> Metric {
    Metric { name, field, scale }
}

const MIB: f64 = 1_048_576.0;

/// gpuwatch's exporter (`src/serve/readings.rs`), then dcgm-exporter's default counters.
pub const METRICS: &[Metric] = &[
    m("gpuwatch_gpu_info", Field::Info, 1.0),
    m("gpuwatch_gpu_lost", Field::Lost, 1.0),
    m("gpuwatch_gpu_utilization_ratio", Field::Util, 100.0),
    m(
        "gpuwatch_gpu_memory_utilization_ratio",
        Field::MemoryUtil,
        100.0,
    ),
    m("gpuwatch_gpu_memory_total_bytes", Field::MemoryTotal, 1.0),
    m("gpuwatch_gpu_memory_used_bytes", Field::MemoryUsed, 1.0),
    m("gpuwatch_gpu_memory_free_bytes", Field::MemoryFree, 1.0),
    m(
        "gpuwatch_gpu_memory_reserved_bytes",
        Field::MemoryReserved,
        1.0,
    ),
    m("gpuwatch_gpu_temperature_celsius", Field::Temperature, 1.0),
    m(
        "gpuwatch_gpu_slowdown_temperature_celsius",
        Field::TemperatureSlowdown,
        1.0,
    ),
    m(
        "gpuwatch_gpu_shutdown_temperature_celsius",
        Field::TemperatureShutdown,
        1.0,
    ),
    m("gpuwatch_gpu_power_watts", Field::Power, 1.0),
    m("gpuwatch_gpu_power_limit_watts", Field::PowerLimit, 1.0),
    m("gpuwatch_gpu_energy_joules_total", Field::EnergyJoules, 1.0),
    m("gpuwatch_gpu_fan_speed_ratio", Field::Fan, 100.0),
    m("gpuwatch_gpu_sm_clock_hertz", Field::SmClock, 1e-6),
    m("gpuwatch_gpu_memory_clock_hertz", Field::MemoryClock, 1e-6),
    m("gpuwatch_gpu_sm_clock_max_hertz", Field::SmClockMax, 1e-6),
    m(
        "gpuwatch_gpu_memory_clock_max_hertz",
        Field::MemoryClockMax,
        1e-6,
    ),
    m("gpuwatch_gpu_performance_state", Field::Pstate, 1.0),
    m(
        "gpuwatch_gpu_encoder_utilization_ratio",
        Field::EncoderUtil,
        100.0,
    ),
    m(
        "gpuwatch_gpu_decoder_utilization_ratio",
        Field::DecoderUtil,
        100.0,
    ),
    m("gpuwatch_gpu_pcie_link_generation", Field::PcieGen, 1.0),
    m("gpuwatch_gpu_pcie_link_width", Field::PcieWidth, 1.0),
    m(
        "gpuwatch_gpu_pcie_transmit_bytes_per_second",
        Field::PcieTx,
        1.0,
    ),
    m(
        "gpuwatch_gpu_pcie_receive_bytes_per_second",
        Field::PcieRx,
        1.0,
    ),
    m(
        "gpuwatch_gpu_ecc_uncorrected_errors_total",
        Field::EccUncorrected,
        1.0,
    ),
    m("gpuwatch_gpu_mig_enabled", Field::Mig, 1.0),
    m(
        "gpuwatch_mig_memory_total_bytes",
        Field::MigMemoryTotal,
        1.0,
    ),
    m("gpuwatch_mig_memory_used_bytes", Field::MigMemoryUsed, 1.0),
    m("gpuwatch_mig_memory_free_bytes", Field::MigMemoryFree, 1.0),
    m("DCGM_FI_DEV_GPU_UTIL", Field::Util, 1.0),
    m("DCGM_FI_DEV_MEM_COPY_UTIL", Field::MemoryUtil, 1.0),
    m("DCGM_FI_DEV_FB_USED", Field::MemoryUsed, MIB),
    m("DCGM_FI_DEV_FB_FREE", Field::MemoryFree, MIB),
    m("DCGM_FI_DEV_FB_RESERVED", Field::MemoryReserved, MIB),
    m("DCGM_FI_DEV_GPU_TEMP", Field::Temperature, 1.0),
    m("DCGM_FI_DEV_SLOWDOWN_TEMP", Field::TemperatureSlowdown, 1.0),
    m("DCGM_FI_DEV_SHUTDOWN_TEMP", Field::TemperatureShutdown, 1.0),
    m("DCGM_FI_DEV_POWER_USAGE", Field::Power, 1.0),
    m("DCGM_FI_DEV_POWER_MGMT_LIMIT", Field::PowerLimit, 1.0),
    m(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        Field::EnergyJoules,
        1e-3,
    ),
    m("DCGM_FI_DEV_FAN_SPEED", Field::Fan, 1.0),
    m("DCGM_FI_DEV_SM_CLOCK", Field::SmClock, 1.0),
    m("DCGM_FI_DEV_MEM_CLOCK", Field::MemoryClock, 1.0),
    m("DCGM_FI_DEV_MAX_SM_CLOCK", Field::SmClockMax, 1.0),
    m("DCGM_FI_DEV_MAX_MEM_CLOCK", Field::MemoryClockMax, 1.0),
    m("DCGM_FI_DEV_ENC_UTIL", Field::EncoderUtil, 1.0),
    m("DCGM_FI_DEV_DEC_UTIL", Field::DecoderUtil, 1.0),
    m("DCGM_FI_DEV_PCIE_LINK_GEN", Field::PcieGen, 1.0),
    m("DCGM_FI_DEV_PCIE_LINK_WIDTH", Field::PcieWidth, 1.0),
    m("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Field::EccUncorrected, 1.0),
];

/// The metric a series name is, if gpuwatch knows it.
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// The regex alternation of every known name, for one instant query that fetches them all.
pub fn names_regex() -> String {
    let names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
    names.join("|")
}

/// The GPU a series is about, from its labels; `None` when it names no UUID (a series that
/// cannot be placed is left out rather than given a made-up identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uuid: String,
    pub index: Option<u32>,
    pub name: Option<String>,
    /// gpuwatch's `vendor` label (`None` when absent or a vendor this build does not know).
    pub vendor: Option<Vendor>,
    /// Named the dcgm-exporter way (`UUID`): NVIDIA's, unless a `vendor` label says more
    /// (gpuwatch's `--dcgm-compat` writes those names for every vendor's GPUs).
    pub dcgm: bool,
    /// `host` (a gpuwatch watching others) or `Hostname` (dcgm-exporter); `None`: only the
    /// scrape target (`instance`) says where it is.
    pub host: Option<String>,
    pub instance: Option<String>,
}

pub fn identity(labels: &HashMap<String, String>) -> Option<Identity> {
    let get = |k: &str| labels.get(k).filter(|v| !v.is_empty()).cloned();
    Some(Identity {
        uuid: get("uuid").or_else(|| get("UUID"))?,
        index: get("gpu").and_then(|g| g.parse().ok()),
        name: get("name").or_else(|| get("modelName")),
        vendor: get("vendor").as_deref().and_then(Vendor::from_name),
        dcgm: get("uuid").is_none(),
        host: get("host").or_else(|| get("Hostname")),
        instance: get("instance"),
    })
}

fn whole(v: f64) -> Option<u32> {
    (v >= 0.0 && v <= f64::from(u32::MAX)).then(|| v.round() as u32)
}

fn bytes(v: f64) -> Option<Bytes> {
    (v >= 0.0).then(|| Bytes(v.round() as u64))
}

/// Sets `field` of `g` from `value` (already in gpuwatch's unit). A value the field cannot
/// hold (negative bytes, say) leaves it `None`.
pub fn set(g: &mut GpuReading, field: Field, value: f64) {
    match field {
        Field::Util => g.util = whole(value).map(Percent),
        Field::MemoryUtil => g.memory_util = whole(value).map(Percent),
        Field::MemoryTotal => g.memory_total = bytes(value),
        Field::MemoryUsed => g.memory_used = bytes(value),
        Field::MemoryFree => g.memory_free = bytes(value),
        Field::MemoryReserved => g.memory_reserved = bytes(value),
        Field::Temperature => g.temperature = whole(value).map(Celsius),
        Field::TemperatureSlowdown => g.temperature_slowdown = whole(value).map(Celsius),
        Field::TemperatureShutdown => g.temperature_shutdown = whole(value).map(Celsius),
        Field::Power => g.power = Some(Watts(value)),
        Field::PowerLimit => g.power_limit = Some(Watts(value)),
        Field::EnergyJoules => g.energy_joules = Some(value),
        Field::Fan => g.fan = whole(value).map(Percent),
        Field::SmClock => g.sm_clock = whole(value).map(MegaHertz),
        Field::MemoryClock => g.memory_clock = whole(value).map(MegaHertz),
        Field::SmClockMax => g.sm_clock_max = whole(value).map(MegaHertz),
        Field::MemoryClockMax => g.memory_clock_max = whole(value).map(MegaHertz),
        Field::Pstate => g.pstate = whole(value),
        Field::EncoderUtil => g.encoder_util = whole(value).map(Percent),
        Field::DecoderUtil => g.decoder_util = whole(value).map(Percent),
        Field::PcieGen => g.pcie_link_gen = whole(value),
        Field::PcieWidth => g.pcie_link_width = whole(value),
        Field::PcieTx => g.pcie_tx_per_second = bytes(value),
        Field::PcieRx => g.pcie_rx_per_second = bytes(value),
        Field::EccUncorrected => g.ecc_errors_uncorrected = (value >= 0.0).then_some(value as u64),
        Field::Mig => g.mig_enabled = Some(value != 0.0),
        Field::Lost => {
            if value != 0.0 {
                g.status = crate::source::GpuStatus::Lost;
            }
        }
        // Instance series go to `prometheus::mig`, never to the GPU.
        Field::Info | Field::MigMemoryTotal | Field::MigMemoryUsed | Field::MigMemoryFree => {}
    }
}

/// dcgm-exporter has no total: NVML's total is used + free + reserved (the v2 memory info),
/// so it is derived from those when the GPU reported them and no total series came.
pub fn derive_total(g: &mut GpuReading) {
    if g.memory_total.is_none()
        && let (Some(used), Some(free)) = (g.memory_used, g.memory_free)
    {
        g.memory_total = Some(used + free + g.memory_reserved.unwrap_or_default());
    }
}

/// The four histories the panels chart, each as one PromQL expression that gives both
/// exporters' series in gpuwatch's units (so one range query per chart, for every GPU).
pub const HISTORY: [(Chart, &str, &str); 4] = [
    (
        Chart::Temperature,
        "gpuwatch_gpu_temperature_celsius",
        "DCGM_FI_DEV_GPU_TEMP",
    ),
    (
        Chart::Power,
        "gpuwatch_gpu_power_watts",
        "DCGM_FI_DEV_POWER_USAGE",
    ),
    (
        Chart::Util,
        "gpuwatch_gpu_utilization_ratio * 100",
        "DCGM_FI_DEV_GPU_UTIL",
    ),
    (
        Chart::MemoryUsed,
        "gpuwatch_gpu_memory_used_bytes",
        "DCGM_FI_DEV_FB_USED * 1048576",
    ),
];

/// Which history a range query fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    Temperature,
    Power,
    Util,
    MemoryUsed,
}

/// `A{sel} or B{sel}` with the selector's matchers inside each metric's braces.
pub fn history_query(native: &str, dcgm: &str, matchers: &str) -> String {
    format!(
        "({}) or ({})",
        with_matchers(native, matchers),
        with_matchers(dcgm, matchers)
    )
}

/// `name * 100` → `name{m} * 100`: the matchers go right after the metric name.
fn with_matchers(expr: &str, matchers: &str) -> String {
    if matchers.is_empty() {
        return expr.to_string();
    }
    match expr.split_once(' ') {
        Some((name, rest)) => format!("{name}{{{matchers}}} {rest}"),
        None => format!("{expr}{{{matchers}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_known_once() {
        for m in METRICS {
            assert_eq!(
                METRICS.iter().filter(|o| o.name == m.name).count(),
                1,
                "{}",
                m.name
            );
        }
        assert_eq!(metric("DCGM_FI_DEV_FB_USED").unwrap().scale, MIB);
        assert!(metric("node_cpu_seconds_total").is_none());
    }

    #[test]
    fn history_queries_carry_the_selector() {
        assert_eq!(
            history_query("a * 100", "b", r#"cluster="x""#),
            r#"(a{cluster="x"} * 100) or (b{cluster="x"})"#
        );
        assert_eq!(history_query("a", "b * 2", ""), "(a) or (b * 2)");
    }
}
