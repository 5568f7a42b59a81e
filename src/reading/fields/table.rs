//! The rows of the field table (`reading::fields`) for the device's readings, in the order the
//! exporter, the JSON document and `--query-gpu`'s catalogue write them, and the table as a
//! whole (these, then `fields::health`'s); plus the small conversions between a reading's
//! type and its base-unit value, and the constructors of a row's parts, which both use.

use super::{Dcgm, Field, Json, JsonKind, Key, MetricKind, Native, Scale, Shown, Smi};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

use MetricKind::{Counter, Gauge};

const MIB: f64 = 1_048_576.0;
const MHZ: f64 = 1e6;

pub(super) const fn gauge(name: &'static str, help: &'static str) -> Option<Native> {
    Some(Native {
        name,
        kind: Gauge,
        help,
    })
}

pub(super) const fn counter(name: &'static str, help: &'static str) -> Option<Native> {
    Some(Native {
        name,
        kind: Counter,
        help,
    })
}

/// A DCGM name `--dcgm-compat` writes.
pub(super) const fn dcgm(
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
pub(super) const fn dcgm_read(name: &'static str, scale: Scale) -> Option<Dcgm> {
    Some(Dcgm {
        name,
        scale,
        written: None,
    })
}

/// A JSON member in base units written as a whole number (bytes, °C, counts).
pub(super) const fn integer(name: &'static str) -> Option<Json> {
    json(name, Scale::Same, JsonKind::Integer)
}
/// A JSON member in base units written as any number (W, J, seconds).
pub(super) const fn float(name: &'static str) -> Option<Json> {
    json(name, Scale::Same, JsonKind::Float)
}
/// A 1/0 reading written as `true`/`false`.
pub(super) const fn boolean(name: &'static str) -> Option<Json> {
    json(name, Scale::Same, JsonKind::Bool)
}
/// A 0-1 ratio written as whole percent.
const fn percent(name: &'static str) -> Option<Json> {
    json(name, Scale::Times(100.0), JsonKind::Integer)
}
/// Hertz written as whole MHz.
pub(super) const fn mhz(name: &'static str) -> Option<Json> {
    json(name, Scale::Per(MHZ), JsonKind::Integer)
}
const fn json(name: &'static str, scale: Scale, kind: JsonKind) -> Option<Json> {
    Some(Json { name, scale, kind })
}

/// A `--query-gpu` name of a reading.
pub(super) const fn smi(
    name: &'static str,
    aliases: &'static [&'static str],
    shown: Shown,
    help: &'static str,
) -> Smi {
    Smi {
        name,
        aliases,
        shown,
        help,
    }
}

// Unclamped on purpose: a fan reported above 100 % is a real reading, not ours to hide.
fn ratio(p: Option<Percent>) -> Option<f64> {
    p.map(|p| f64::from(p.0) / 100.0)
}
fn bytes(b: Option<Bytes>) -> Option<f64> {
    b.map(|b| b.0 as f64)
}
pub(super) fn celsius(c: Option<Celsius>) -> Option<f64> {
    c.map(|c| f64::from(c.0))
}
fn hertz(m: Option<MegaHertz>) -> Option<f64> {
    m.map(|m| f64::from(m.0) * MHZ)
}
pub(super) fn whole_f(n: Option<u32>) -> Option<f64> {
    n.map(f64::from)
}
pub(super) fn count(n: Option<u64>) -> Option<f64> {
    n.map(|n| n as f64)
}
pub(super) fn flag(on: bool) -> f64 {
    f64::from(u8::from(on))
}

pub(super) fn whole(v: f64) -> Option<u32> {
    (v >= 0.0 && v <= f64::from(u32::MAX)).then(|| v.round() as u32)
}
pub(super) fn to_count(v: f64) -> Option<u64> {
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

/// Every numeric GPU reading: the device's readings, then its health counters. The exporter
/// writes the native series in this order.
pub const TABLE: &[Field] = &join();

const LEN: usize = READINGS.len() + super::health::HEALTH.len();

/// The two lists as one table (a const: no copy at run time, no lazy initialisation).
const fn join() -> [Field; LEN] {
    let health = super::health::HEALTH;
    let mut out = [READINGS[0]; LEN];
    let mut i = 0;
    while i < READINGS.len() {
        out[i] = READINGS[i];
        i += 1;
    }
    let mut j = 0;
    while j < health.len() {
        out[i + j] = health[j];
        j += 1;
    }
    out
}

/// The device's readings: utilization, memory, temperatures, power, clocks, PCIe, ECC, MIG.
const READINGS: &[Field] = &[
    Field {
        key: Key::Util,
        json: percent("utilization_gpu"),
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
        smi: &[smi(
            "utilization.gpu",
            &[],
            Shown::Percent,
            "Share of the last sample period a kernel ran.",
        )],
    },
    Field {
        key: Key::MemoryUtil,
        json: percent("utilization_memory"),
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
        smi: &[smi(
            "utilization.memory",
            &[],
            Shown::Percent,
            "Share of the last sample period memory was read or written.",
        )],
    },
    Field {
        key: Key::EncoderUtil,
        json: percent("utilization_encoder"),
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
        smi: &[smi(
            "utilization.encoder",
            &[],
            Shown::Percent,
            "Video encoder utilization.",
        )],
    },
    Field {
        key: Key::DecoderUtil,
        json: percent("utilization_decoder"),
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
        smi: &[smi(
            "utilization.decoder",
            &[],
            Shown::Percent,
            "Video decoder utilization.",
        )],
    },
    Field {
        key: Key::MemoryTotal,
        json: integer("memory_total"),
        get: |g| bytes(g.memory_total),
        set: Some(|g, v| g.memory_total = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_memory_total_bytes",
            "Device memory (VRAM) in total.",
        ),
        dcgm: None,
        smi: &[smi("memory.total", &[], Shown::MiB, "VRAM in total.")],
    },
    Field {
        key: Key::MemoryUsed,
        json: integer("memory_used"),
        get: |g| bytes(g.memory_used),
        set: Some(|g, v| g.memory_used = to_bytes(v)),
        native: gauge("gpuwatch_gpu_memory_used_bytes", "Device memory in use."),
        dcgm: dcgm(
            "DCGM_FI_DEV_FB_USED",
            Scale::Per(MIB),
            Gauge,
            "Framebuffer memory used (in MiB).",
        ),
        smi: &[smi("memory.used", &[], Shown::MiB, "VRAM in use.")],
    },
    Field {
        key: Key::MemoryFree,
        json: integer("memory_free"),
        get: |g| bytes(g.memory_free),
        set: Some(|g, v| g.memory_free = to_bytes(v)),
        native: gauge("gpuwatch_gpu_memory_free_bytes", "Device memory free."),
        dcgm: dcgm(
            "DCGM_FI_DEV_FB_FREE",
            Scale::Per(MIB),
            Gauge,
            "Framebuffer memory free (in MiB).",
        ),
        smi: &[smi("memory.free", &[], Shown::MiB, "VRAM free.")],
    },
    Field {
        key: Key::MemoryReserved,
        json: integer("memory_reserved"),
        get: |g| bytes(g.memory_reserved),
        set: Some(|g, v| g.memory_reserved = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_memory_reserved_bytes",
            "Device memory the driver reserves for itself.",
        ),
        dcgm: dcgm(
            "DCGM_FI_DEV_FB_RESERVED",
            Scale::Per(MIB),
            Gauge,
            "Framebuffer memory reserved (in MiB).",
        ),
        smi: &[smi(
            "memory.reserved",
            &[],
            Shown::MiB,
            "VRAM the driver keeps for itself.",
        )],
    },
    Field {
        key: Key::Temperature,
        json: integer("temperature_gpu"),
        get: |g| celsius(g.temperature),
        set: Some(|g, v| g.temperature = whole(v).map(Celsius)),
        native: gauge("gpuwatch_gpu_temperature_celsius", "GPU core temperature."),
        dcgm: dcgm(
            "DCGM_FI_DEV_GPU_TEMP",
            Scale::Same,
            Gauge,
            "GPU temperature (in C).",
        ),
        smi: &[smi(
            "temperature.gpu",
            &[],
            Shown::Whole,
            "Core temperature, °C.",
        )],
    },
    Field {
        key: Key::TemperatureSlowdown,
        json: integer("temperature_slowdown"),
        get: |g| celsius(g.temperature_slowdown),
        set: Some(|g, v| g.temperature_slowdown = whole(v).map(Celsius)),
        native: gauge(
            "gpuwatch_gpu_slowdown_temperature_celsius",
            "Temperature at which the GPU starts slowing itself down.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_SLOWDOWN_TEMP", Scale::Same),
        smi: &[],
    },
    Field {
        key: Key::TemperatureShutdown,
        json: integer("temperature_shutdown"),
        get: |g| celsius(g.temperature_shutdown),
        set: Some(|g, v| g.temperature_shutdown = whole(v).map(Celsius)),
        native: gauge(
            "gpuwatch_gpu_shutdown_temperature_celsius",
            "Temperature at which the GPU shuts itself down.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_SHUTDOWN_TEMP", Scale::Same),
        smi: &[],
    },
    Field {
        key: Key::Power,
        json: float("power_draw"),
        get: |g| g.power.map(|w| w.0),
        set: Some(|g, v| g.power = Some(Watts(v))),
        native: gauge("gpuwatch_gpu_power_watts", "Power draw."),
        dcgm: dcgm(
            "DCGM_FI_DEV_POWER_USAGE",
            Scale::Same,
            Gauge,
            "Power draw (in W).",
        ),
        smi: &[smi("power.draw", &[], Shown::Watts, "Power draw.")],
    },
    Field {
        key: Key::PowerLimit,
        json: float("enforced_power_limit"),
        get: |g| g.power_limit.map(|w| w.0),
        set: Some(|g, v| g.power_limit = Some(Watts(v))),
        native: gauge(
            "gpuwatch_gpu_power_limit_watts",
            "Power limit the GPU is held to.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_POWER_MGMT_LIMIT", Scale::Same),
        // NVML has a management limit and the enforced one (the lower of it and others); the
        // sources read the enforced limit only, which is the management limit unless another
        // limit holds the GPU lower (docs/query.md says so).
        smi: &[
            smi(
                "power.limit",
                &[],
                Shown::Watts,
                "The power limit (the enforced one; see docs/query.md).",
            ),
            smi(
                "enforced.power.limit",
                &[],
                Shown::Watts,
                "The power limit the GPU is held to.",
            ),
        ],
    },
    Field {
        key: Key::EnergyJoules,
        json: float("total_energy_consumption"),
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
        smi: &[],
    },
    Field {
        key: Key::Fan,
        json: percent("fan_speed"),
        get: |g| ratio(g.fan),
        set: Some(|g, v| g.fan = to_percent(v)),
        native: gauge(
            "gpuwatch_gpu_fan_speed_ratio",
            "Fan speed as a share of its maximum (0-1).",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_FAN_SPEED", Scale::Times(100.0)),
        smi: &[smi(
            "fan.speed",
            &[],
            Shown::Percent,
            "Fan speed as a share of its maximum.",
        )],
    },
    Field {
        key: Key::SmClock,
        json: mhz("clocks_sm"),
        get: |g| hertz(g.sm_clock),
        set: Some(|g, v| g.sm_clock = to_mhz(v)),
        native: gauge("gpuwatch_gpu_sm_clock_hertz", "SM (graphics) clock."),
        dcgm: dcgm(
            "DCGM_FI_DEV_SM_CLOCK",
            Scale::Per(MHZ),
            Gauge,
            "SM clock frequency (in MHz).",
        ),
        smi: &[smi(
            "clocks.current.sm",
            &["clocks.sm"],
            Shown::MHz,
            "SM clock.",
        )],
    },
    Field {
        key: Key::MemoryClock,
        json: mhz("clocks_mem"),
        get: |g| hertz(g.memory_clock),
        set: Some(|g, v| g.memory_clock = to_mhz(v)),
        native: gauge("gpuwatch_gpu_memory_clock_hertz", "Memory clock."),
        dcgm: dcgm(
            "DCGM_FI_DEV_MEM_CLOCK",
            Scale::Per(MHZ),
            Gauge,
            "Memory clock frequency (in MHz).",
        ),
        smi: &[smi(
            "clocks.current.memory",
            &["clocks.mem"],
            Shown::MHz,
            "Memory clock.",
        )],
    },
    Field {
        key: Key::SmClockMax,
        json: mhz("clocks_max_sm"),
        get: |g| hertz(g.sm_clock_max),
        set: Some(|g, v| g.sm_clock_max = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_sm_clock_max_hertz",
            "Highest SM clock the GPU supports.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_MAX_SM_CLOCK", Scale::Per(MHZ)),
        smi: &[smi("clocks.max.sm", &[], Shown::MHz, "Highest SM clock.")],
    },
    Field {
        key: Key::MemoryClockMax,
        json: mhz("clocks_max_mem"),
        get: |g| hertz(g.memory_clock_max),
        set: Some(|g, v| g.memory_clock_max = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_memory_clock_max_hertz",
            "Highest memory clock the GPU supports.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_MAX_MEM_CLOCK", Scale::Per(MHZ)),
        smi: &[smi(
            "clocks.max.memory",
            &["clocks.max.mem"],
            Shown::MHz,
            "Highest memory clock.",
        )],
    },
    // DCGM has no graphics-clock field: these are gpuwatch's series only.
    Field {
        key: Key::GraphicsClock,
        json: mhz("clocks_gr"),
        get: |g| hertz(g.graphics_clock),
        set: Some(|g, v| g.graphics_clock = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_graphics_clock_hertz",
            "Graphics (shader) clock.",
        ),
        dcgm: None,
        smi: &[smi(
            "clocks.current.graphics",
            &["clocks.gr"],
            Shown::MHz,
            "Graphics (shader) clock.",
        )],
    },
    Field {
        key: Key::GraphicsClockMax,
        json: mhz("clocks_max_gr"),
        get: |g| hertz(g.graphics_clock_max),
        set: Some(|g, v| g.graphics_clock_max = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_graphics_clock_max_hertz",
            "Highest graphics clock the GPU supports.",
        ),
        dcgm: None,
        smi: &[smi(
            "clocks.max.graphics",
            &["clocks.max.gr"],
            Shown::MHz,
            "Highest graphics clock.",
        )],
    },
    Field {
        key: Key::VideoClock,
        json: mhz("clocks_video"),
        get: |g| hertz(g.video_clock),
        set: Some(|g, v| g.video_clock = to_mhz(v)),
        native: gauge(
            "gpuwatch_gpu_video_clock_hertz",
            "Video encoder/decoder clock.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_VIDEO_CLOCK", Scale::Per(MHZ)),
        smi: &[smi(
            "clocks.current.video",
            &["clocks.video"],
            Shown::MHz,
            "Video encoder/decoder clock.",
        )],
    },
    Field {
        key: Key::Pstate,
        json: integer("pstate"),
        get: |g| whole_f(g.pstate),
        set: Some(|g, v| g.pstate = whole(v)),
        native: gauge(
            "gpuwatch_gpu_performance_state",
            "Performance state, 0 (fastest) to 15 (slowest).",
        ),
        dcgm: None,
        smi: &[smi(
            "pstate",
            &[],
            Shown::Pstate,
            "Performance state, P0 (fastest) to P15.",
        )],
    },
    Field {
        key: Key::PcieGen,
        json: integer("pcie_link_gen_current"),
        get: |g| whole_f(g.pcie_link_gen),
        set: Some(|g, v| g.pcie_link_gen = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_generation",
            "PCIe link generation in use.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_LINK_GEN", Scale::Same),
        // nvidia-smi deprecates `pcie.link.gen.current` for `gpucurrent`; both ask NVML the same.
        smi: &[
            smi(
                "pcie.link.gen.current",
                &[],
                Shown::Whole,
                "PCIe generation in use.",
            ),
            smi(
                "pcie.link.gen.gpucurrent",
                &[],
                Shown::Whole,
                "PCIe generation in use (nvidia-smi's newer name).",
            ),
        ],
    },
    Field {
        key: Key::PcieWidth,
        json: integer("pcie_link_width_current"),
        get: |g| whole_f(g.pcie_link_width),
        set: Some(|g, v| g.pcie_link_width = whole(v)),
        native: gauge("gpuwatch_gpu_pcie_link_width", "PCIe lanes in use."),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_LINK_WIDTH", Scale::Same),
        smi: &[smi(
            "pcie.link.width.current",
            &[],
            Shown::Whole,
            "PCIe lanes in use.",
        )],
    },
    Field {
        key: Key::PcieGenMax,
        json: integer("pcie_link_gen_max"),
        get: |g| whole_f(g.pcie_link_gen_max),
        set: Some(|g, v| g.pcie_link_gen_max = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_generation_max",
            "Fastest PCIe link generation the GPU and its slot support.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", Scale::Same),
        smi: &[smi(
            "pcie.link.gen.max",
            &[],
            Shown::Whole,
            "Fastest PCIe generation of GPU and slot.",
        )],
    },
    Field {
        key: Key::PcieWidthMax,
        json: integer("pcie_link_width_max"),
        get: |g| whole_f(g.pcie_link_width_max),
        set: Some(|g, v| g.pcie_link_width_max = whole(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_link_width_max",
            "Widest PCIe link (lanes) the GPU and its slot support.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", Scale::Same),
        smi: &[smi(
            "pcie.link.width.max",
            &[],
            Shown::Whole,
            "Widest PCIe link of GPU and slot.",
        )],
    },
    Field {
        key: Key::PcieTx,
        json: integer("pcie_tx_throughput"),
        get: |g| bytes(g.pcie_tx_per_second),
        set: Some(|g, v| g.pcie_tx_per_second = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_transmit_bytes_per_second",
            "PCIe traffic out of the GPU over NVML's last ~20 ms window.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::PcieRx,
        json: integer("pcie_rx_throughput"),
        get: |g| bytes(g.pcie_rx_per_second),
        set: Some(|g, v| g.pcie_rx_per_second = to_bytes(v)),
        native: gauge(
            "gpuwatch_gpu_pcie_receive_bytes_per_second",
            "PCIe traffic into the GPU over NVML's last ~20 ms window.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::EccUncorrected,
        json: integer("ecc_errors_uncorrected_volatile"),
        get: |g| count(g.ecc_errors_uncorrected),
        set: Some(|g, v| g.ecc_errors_uncorrected = to_count(v)),
        native: counter(
            "gpuwatch_gpu_ecc_uncorrected_errors_total",
            "Uncorrected ECC errors since the driver was loaded.",
        ),
        dcgm: dcgm_read("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Scale::Same),
        smi: &[smi(
            "ecc.errors.uncorrected.volatile.total",
            &[],
            Shown::Whole,
            "Uncorrected ECC errors since the driver loaded.",
        )],
    },
    Field {
        key: Key::Mig,
        json: boolean("mig_enabled"),
        get: |g| g.mig_enabled.map(flag),
        set: Some(|g, v| g.mig_enabled = Some(v != 0.0)),
        native: gauge(
            "gpuwatch_gpu_mig_enabled",
            "1 when MIG (multi-instance GPU) mode is on, else 0.",
        ),
        dcgm: None,
        smi: &[],
    },
    Field {
        key: Key::PersistenceMode,
        json: boolean("persistence_mode"),
        get: |g| g.persistence_mode.map(flag),
        set: Some(|g, v| g.persistence_mode = Some(v != 0.0)),
        native: gauge(
            "gpuwatch_gpu_persistence_mode",
            "1 when persistence mode is on (the driver stays loaded with no client), else 0.",
        ),
        dcgm: None,
        smi: &[],
    },
];
