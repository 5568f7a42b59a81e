//! The scenario a test hands the fake NVML: GPUs, their readings per tick, processes, and
//! which calls fail. Owns parsing and "what does field F say at tick T"; no FFI here.
//!
//! A *tick* is one `nvmlDeviceGetCount_v2` call (gpuwatch calls it once per sample), so the
//! first sample sees tick 0. A reading is either one value for every tick or a list indexed
//! by tick (the last entry repeats). Any entry may instead be an error name such as
//! `"not_supported"`, and a field missing from `fields` answers NOT_SUPPORTED, like a GPU
//! that lacks the sensor.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// NVML return codes the scenario can ask for (values from nvml.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorName {
    Uninitialized,
    InvalidArgument,
    NotSupported,
    NoPermission,
    NotFound,
    DriverNotLoaded,
    LibraryNotFound,
    FunctionNotFound,
    GpuIsLost,
    Unknown,
}

impl ErrorName {
    pub fn code(self) -> u32 {
        match self {
            ErrorName::Uninitialized => 1,
            ErrorName::InvalidArgument => 2,
            ErrorName::NotSupported => 3,
            ErrorName::NoPermission => 4,
            ErrorName::NotFound => 6,
            ErrorName::DriverNotLoaded => 9,
            ErrorName::LibraryNotFound => 12,
            ErrorName::FunctionNotFound => 13,
            ErrorName::GpuIsLost => 15,
            ErrorName::Unknown => 999,
        }
    }
}

/// One tick's answer: a number, or an error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Step {
    Value(u64),
    Error(ErrorName),
}

/// A reading over time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Reading {
    Fixed(Step),
    PerTick(Vec<Step>),
}

impl Reading {
    pub fn at(&self, tick: u64) -> Step {
        match self {
            Reading::Fixed(s) => *s,
            Reading::PerTick(steps) => {
                let i = usize::try_from(tick).unwrap_or(usize::MAX);
                // An empty list has nothing to say: treat it as unsupported.
                steps
                    .get(i)
                    .or(steps.last())
                    .copied()
                    .unwrap_or(Step::Error(ErrorName::NotSupported))
            }
        }
    }
}

/// Field names a GPU's `fields` map may hold, with the unit NVML reports them in.
/// Unknown names are rejected so a typo in a test fails loudly instead of reading N/A.
pub const FIELDS: &[&str] = &[
    "util_gpu",                    // %
    "util_memory",                 // %
    "memory_total",                // bytes
    "memory_reserved",             // bytes
    "memory_used",                 // bytes (free = total - reserved - used)
    "temperature",                 // °C
    "temperature_slowdown",        // °C
    "temperature_shutdown",        // °C
    "power_usage_mw",              // mW
    "power_limit_mw",              // mW (enforced)
    "energy_mj",                   // mJ since the driver loaded
    "fan_speed",                   // % (fan 0)
    "clock_sm",                    // MHz
    "clock_memory",                // MHz
    "max_clock_sm",                // MHz
    "max_clock_memory",            // MHz
    "clock_graphics",              // MHz (NVML_CLOCK_GRAPHICS)
    "max_clock_graphics",          // MHz
    "clock_video",                 // MHz (NVML_CLOCK_VIDEO)
    "pstate",                      // 0..15 (32 = unknown)
    "encoder_util",                // %
    "decoder_util",                // %
    "pcie_link_gen",               // generation
    "pcie_link_width",             // lanes
    "pcie_link_gen_max",           // generation
    "pcie_link_width_max",         // lanes
    "pcie_tx_kbps",                // KB/s
    "pcie_rx_kbps",                // KB/s
    "throttle_reasons",            // nvmlClocksThrottleReason* bit mask
    "ecc_uncorrected_volatile",    // count
    "mig_mode_current",            // 0/1
    "mig_mode_pending",            // 0/1
    "memory_temperature",          // °C (field value MEMORY_TEMP)
    "pcie_replay_counter",         // count (field value PCIE_REPLAY_COUNTER)
    "ecc_corrected_volatile",      // count (field value ECC_SBE_VOL_TOTAL)
    "retired_pages_sbe",           // count
    "retired_pages_dbe",           // count
    "retired_pages_pending",       // 0/1
    "remapped_rows_correctable",   // count
    "remapped_rows_uncorrectable", // count
    "remapped_rows_pending",       // 0/1
    "remapped_rows_failed",        // 0/1
    "supported_event_types",       // nvmlEventType* bit mask (8 = critical XID)
    "compute_mode", // nvmlComputeMode_t: 0 default, 2 prohibited, 3 exclusive process
    "persistence_mode", // 0/1
    "field_values", // 0: nvmlDeviceGetFieldValues answers NOT_SUPPORTED
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcKind {
    #[default]
    Compute,
    Graphics,
    Both,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    #[serde(default)]
    pub kind: ProcKind,
    /// Bytes; `null` or missing reports NVML_VALUE_NOT_AVAILABLE (as under WDDM or MIG).
    #[serde(default)]
    pub used_memory: Option<u64>,
    /// First tick the process is listed.
    #[serde(default)]
    pub from_tick: u64,
    /// First tick it is gone (it exited); `None` for the whole run.
    #[serde(default)]
    pub until_tick: Option<u64>,
    /// SM utilization samples per tick; an error entry (or a missing field) means the
    /// driver has no sample for this process at that tick.
    #[serde(default)]
    pub sm_util: Option<Reading>,
    /// The start (at `from_tick`) or exit (at `until_tick`) happens *between* NVML's two
    /// list calls of that tick: the first call (the size query) still sees the old list,
    /// later calls the new one — the race real drivers have with processes that come and go.
    #[serde(default)]
    pub between_calls: bool,
    /// On a GPU in MIG mode: the GPU and compute instance the process runs on (the MIG
    /// device in `Gpu::mig_devices` with these ids).
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    #[serde(default)]
    pub compute_instance_id: Option<u32>,
}

impl Process {
    pub fn alive_at(&self, tick: u64) -> bool {
        tick >= self.from_tick && self.until_tick.is_none_or(|end| tick < end)
    }

    /// Whether the `call`-th list call (1-based) of this tick lists the process.
    pub fn listed_at(&self, tick: u64, call: u32) -> bool {
        if self.between_calls && call <= 1 && tick > 0 {
            // The size query answers as the list stood at the end of the previous tick.
            return self.alive_at(tick - 1);
        }
        self.alive_at(tick)
    }
}

/// Which process-list calls the fake "driver" has (drivers since R470 differ here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessApi {
    /// `_v3`, `_v2` and the unversioned call, with the 24-byte `_v3` struct.
    #[default]
    V3,
    /// `_v3` fills 32-byte entries (`usedGpuCcProtectedMemory` appended), as some
    /// 535–545 drivers did.
    V3Wide,
    /// No `_v3` (FUNCTION_NOT_FOUND): `_v2` and the unversioned call only.
    V2,
    /// Only the unversioned call (16-byte `nvmlProcessInfo_v1_t`).
    V1,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub name: String,
    pub uuid: String,
    #[serde(default = "default_bus_id")]
    pub pci_bus_id: String,
    /// Ticks at which every call on this GPU answers GPU_IS_LOST.
    #[serde(default)]
    pub lost_ticks: Vec<u64>,
    /// Lost from this tick on (and for good).
    #[serde(default)]
    pub lost_from: Option<u64>,
    /// While lost, also fail `nvmlDeviceGetHandleByIndex_v2` (otherwise only the queries fail).
    #[serde(default)]
    pub lost_handle: bool,
    #[serde(default)]
    pub fields: BTreeMap<String, Reading>,
    #[serde(default)]
    pub processes: Vec<Process>,
    /// What `nvmlDeviceGetProcessUtilization` answers instead of samples, if anything.
    #[serde(default)]
    pub process_utilization_error: Option<ErrorName>,
    /// Every query on this device (name, UUID and PCI info included, not just `fields`)
    /// answers NOT_SUPPORTED: the most a board can refuse while still being enumerated.
    #[serde(default)]
    pub all_not_supported: bool,
    /// Which process-list calls answer (see `ProcessApi`).
    #[serde(default)]
    pub process_api: ProcessApi,
    /// Its MIG devices, listed while `mig_mode_current` reads 1 (see `mig`).
    #[serde(default)]
    pub mig_devices: Vec<crate::mig::MigDevice>,
    /// Critical XID errors, each due from its tick on; an event set registered on this GPU
    /// (which needs `supported_event_types` to include 8) hands each out once, in order.
    #[serde(default)]
    pub xid_events: Vec<XidEvent>,
}

/// One XID error the fake delivers through event sets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEvent {
    pub tick: u64,
    pub xid: u64,
}

fn default_bus_id() -> String {
    "00000000:01:00.0".into()
}

impl Gpu {
    pub fn lost_at(&self, tick: u64) -> bool {
        self.lost_ticks.contains(&tick) || self.lost_from.is_some_and(|from| tick >= from)
    }

    /// The field's answer at `tick`; missing fields are unsupported.
    pub fn field(&self, name: &str, tick: u64) -> Step {
        debug_assert!(
            FIELDS.contains(&name),
            "fake-nvml asked for unknown field {name}"
        );
        self.fields
            .get(name)
            .map_or(Step::Error(ErrorName::NotSupported), |r| r.at(tick))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// What `nvmlInit_v2` / `nvmlInitWithFlags` return instead of success.
    #[serde(default)]
    pub init_error: Option<ErrorName>,
    #[serde(default)]
    pub driver_version: Option<String>,
    #[serde(default)]
    pub nvml_version: Option<String>,
    /// As NVML encodes it: 1000 * major + 10 * minor (12040 is 12.4).
    #[serde(default)]
    pub cuda_version: Option<i32>,
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    /// Where `nvmlShutdown` writes `{symbol: calls}` as JSON, for tests that count calls.
    #[serde(default)]
    pub calls_file: Option<PathBuf>,
    /// From this tick on, `nvmlDeviceGetCount_v2` never returns (a wedged driver call):
    /// the calling thread sleeps for good, holding no lock of the fake's.
    #[serde(default)]
    pub hang_from_tick: Option<u64>,
    /// Ticks by the wall clock instead: tick = milliseconds since `nvmlInit` / `tick_ms`.
    /// For monitors that enumerate GPUs once and then only read (nvtop, nvitop), whose
    /// readings would otherwise never change; `scripts/overhead.sh` measures them so.
    #[serde(default)]
    pub tick_ms: Option<u64>,
}

impl Scenario {
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for gpu in &s.gpus {
            if let Some(bad) = gpu.fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
                return Err(format!(
                    "GPU {}: unknown field {bad:?} (known: {})",
                    gpu.uuid,
                    FIELDS.join(", ")
                ));
            }
        }
        Ok(s)
    }
}
