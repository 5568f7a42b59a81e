//! A warning in the public JSON document: kind, severity, subject and the numbers it was
//! raised on, in base units. Written only — nothing reads warnings back (a reader
//! re-evaluates them from the readings), so a newer kind never breaks an older reader.
//! The model writes its warnings into these (`model::warning_doc`, above this layer); the
//! kind's name is `WarningCode`'s.

use serde::Serialize;

use super::WarningCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Critical,
}

/// What the warning is about: a GPU (`gpu_uuid`, `gpu_index`, and `host` when watching
/// several) or a whole host (`host` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    Gpu,
    Host,
}

/// A warning's numbers, by kind. Untagged: the document's `kind` is the warning's
/// `code`, so the name has one spelling (`WarningCode::name`), not a second one derived
/// from these variants.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum WarningKind {
    /// VRAM nearly full, or filling fast. Bytes, %, seconds.
    OomRisk {
        memory_used: u64,
        memory_total: u64,
        memory_percent: f64,
        /// Seconds until full at the recent growth rate; `null` when not filling fast.
        time_to_full: Option<f64>,
        /// (2.2) The MIG instance whose memory this is (`MIG-…`), its GPU instance id and
        /// profile; all `null` for the whole GPU's memory.
        mig_uuid: Option<String>,
        gpu_instance_id: Option<u32>,
        mig_profile: Option<String>,
    },
    /// °C; `held_for` in seconds at or above `critical_at` (0 while only running hot).
    Overheating {
        temperature: u32,
        held_for: f64,
        critical_at: u32,
        /// The device's own slowdown temperature, when it reports one.
        slowdown: Option<u32>,
    },
    Lost,
    /// A process holding VRAM (bytes) on a GPU idle for `idle_for` seconds.
    IdleHolder {
        pid: u32,
        /// `null` when the process is not visible from the host (another PID namespace).
        user: Option<String>,
        command: Option<String>,
        gpu_memory: u64,
        idle_for: f64,
    },
    HostDown {
        reason: String,
    },
    /// VRAM (bytes) in use with no process listed, for `held_for` seconds.
    StaleVram {
        memory_used: u64,
        held_for: f64,
    },
    /// Processes started without `CUDA_VISIBLE_DEVICES` share GPU 0 with other users' or
    /// jobs' while GPUs are free (2.1).
    PileUp {
        /// PIDs of the processes known to run unpinned.
        unpinned_pids: Vec<u32>,
        /// How many users or jobs they belong to.
        owners: usize,
        /// Indices of the free GPUs on the same host.
        free_gpus: Vec<u32>,
    },
    /// A critical XID error (2.2): the latest one's number, how many the GPU reported since
    /// gpuwatch started, and seconds since the latest.
    Xid {
        xid: u64,
        count: u64,
        ago: f64,
    },
    /// A row remapping pending a GPU reset (warning) or failed (critical) (2.2).
    RemappedRows {
        correctable: u64,
        uncorrectable: u64,
        pending: bool,
        failed: bool,
    },
    /// A page retirement pending a driver reload (2.2).
    RetiredPages {
        single_bit: u64,
        double_bit: u64,
        pending: bool,
    },
    /// The PCIe replay counter grew by `growth` lately; `total` since the driver loaded (2.2).
    PcieReplays {
        total: u64,
        growth: u64,
    },
    /// Corrected ECC errors grew by `growth` lately; `total` since the driver loaded (2.2).
    EccCorrected {
        total: u64,
        growth: u64,
    },
    /// The hardware held the clocks down (`reason`: `hw_slowdown` or
    /// `hw_power_brake_slowdown`) for `held_for` seconds (2.2).
    HwSlowdown {
        reason: String,
        held_for: f64,
    },
    /// A pod's processes hold `gpu_memory` bytes (`null`: not reported) on a GPU the kubelet
    /// allocated to other pods only (`allocated_to`, as `namespace/pod`). `pod_namespace` and
    /// `pod_name` are `null` when no record ties the UID to its names.
    Squatter {
        pod_uid: String,
        pod_namespace: Option<String>,
        pod_name: Option<String>,
        gpu_memory: Option<u64>,
        allocated_to: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub subject: SubjectKind,
    pub gpu_uuid: Option<String>,
    pub gpu_index: Option<u32>,
    pub host: Option<String>,
    pub severity: Severity,
    /// `oom_risk`, `overheating`, … (the model's `WarningKind::code`).
    #[serde(rename = "kind")]
    pub code: WarningCode,
    /// Its numbers, written after the `kind`.
    #[serde(flatten)]
    pub kind: WarningKind,
    /// The sentence gpuwatch shows for it, for people reading the JSON; programs should use
    /// the fields above (its words may change in any version).
    pub message: Option<String>,
}
