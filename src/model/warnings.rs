//! Warnings: OOM risk, overheating, lost GPUs and health events (`health`), evaluated from one GPU's reading and
//! history. Pure functions with hysteresis: each evaluation takes the previous alarm state
//! so a reading hovering at a threshold does not make the warning flicker.

use std::time::{Duration, SystemTime};

use crate::history::GpuHistory;
use crate::reading::health::{RemappedRows, RetiredPages};
use crate::reading::throttle::ThrottleReason;
use crate::reading::{GpuId, GpuReading, GpuStatus, ProcReading};
use crate::units::{Bytes, Celsius};
use crate::wire::WarningCode;

/// Thresholds; all are settings (flags now, a config file later).
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    pub oom_warn_percent: f64,
    pub oom_critical_percent: f64,
    /// Warn when VRAM at its recent growth rate would be full within this long.
    pub oom_time_to_full: Duration,
    pub temp_warn: u32,
    pub temp_critical: u32,
    /// How long the temperature must stay at or above the critical level to be critical.
    pub temp_hold: Duration,
    /// A process holding at least this much VRAM on a GPU idle for `idle_after` is an idle holder.
    pub idle_min_vram: Bytes,
    pub idle_after: Duration,
    /// VRAM in use with no process for `stale_after` is a stale allocation, from this much.
    pub stale_min_vram: Bytes,
    pub stale_after: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            oom_warn_percent: 90.0,
            oom_critical_percent: 97.0,
            oom_time_to_full: Duration::from_secs(120),
            temp_warn: 85,
            temp_critical: 90,
            temp_hold: Duration::from_secs(30),
            idle_min_vram: Bytes(Bytes::GIB),
            idle_after: Duration::from_secs(30 * 60),
            stale_min_vram: Bytes(Bytes::GIB),
            stale_after: Duration::from_secs(60),
        }
    }
}

/// How far a reading must fall back below a threshold before its warning clears.
const OOM_CLEAR_MARGIN_PERCENT: f64 = 2.0;
const TEMP_CLEAR_MARGIN_C: u32 = 3;
/// Once predicted, a time-to-full warning clears only when the prediction is this much longer.
const TTF_CLEAR_FACTOR: f64 = 1.5;
/// The VRAM trend is fitted over this much recent history.
const TREND_WINDOW: Duration = Duration::from_secs(30);
/// Growth slower than this is noise, not a trend (1 MiB/s).
const MIN_GROWTH_BYTES_PER_SEC: f64 = 1024.0 * 1024.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Critical,
}

/// What a warning is about, with the numbers it was raised on (no text: the words are
/// `present::warnings::warning_line`'s, the names `WarningCode`'s, the JSON `wire`'s).
#[derive(Debug, Clone, PartialEq)]
pub enum WarningKind {
    OomRisk {
        used: Bytes,
        total: Bytes,
        percent: f64,
        /// Predicted time until VRAM is full at the recent growth rate.
        time_to_full: Option<Duration>,
        /// The MIG instance whose memory this is, when it is one instance's rather than the
        /// whole GPU's: a job on an instance runs out of the instance's memory even when the
        /// GPU as a whole has plenty.
        instance: Option<super::mig::InstanceTag>,
    },
    Overheating {
        temperature: Celsius,
        /// How long it has been at or above the critical level (zero if not yet there).
        held_for: Duration,
        critical_at: Celsius,
        slowdown: Option<Celsius>,
    },
    Lost,
    /// A process holding VRAM on a GPU that has been idle for a long time. The process is
    /// named here; the subject stays its GPU, so the GPU panel and sort see it.
    IdleHolder {
        pid: u32,
        /// `None` when the process is not visible from here (another PID namespace).
        user: Option<String>,
        command: Option<String>,
        vram: Bytes,
        idle_for: Duration,
    },
    /// A watched remote host does not answer (or answers nonsense); the subject is the host.
    HostDown {
        reason: String,
    },
    /// VRAM in use on a GPU where no process is listed.
    StaleVram {
        used: Bytes,
        held_for: Duration,
    },
    /// Processes of several users or jobs share GPU 0 and some were started without
    /// `CUDA_VISIBLE_DEVICES` while other GPUs are free (`model::pileup`).
    PileUp {
        /// PIDs of the processes known to run unpinned.
        unpinned: Vec<u32>,
        /// How many users or jobs those belong to.
        owners: usize,
        /// Indices of the free GPUs on the same host.
        free: Vec<u32>,
    },
    /// A critical XID error arrived (`model::health`): the latest one's number, how many
    /// the GPU reported since gpuwatch started, and how long ago the latest came.
    Xid {
        code: u64,
        count: u64,
        ago: Duration,
    },
    /// A row remapping waits for a GPU reset (warning) or failed (critical).
    RemappedRows(RemappedRows),
    /// A page retirement waits for the driver to reload.
    RetiredPages(RetiredPages),
    /// The PCIe replay counter grew by `growth` lately (a flaky link or riser).
    PcieReplays {
        total: u64,
        growth: u64,
    },
    /// Corrected ECC errors grew by `growth` lately (memory wearing out, often before
    /// uncorrectable ones).
    EccCorrected {
        total: u64,
        growth: u64,
    },
    /// The hardware has held the clocks down (HW slowdown or power brake) for `held_for`.
    HwSlowdown {
        reason: ThrottleReason,
        held_for: Duration,
    },
    /// A pod's processes hold `vram` on a GPU the kubelet allocated to other pods only
    /// (`model::squatter`): a pod that asked for no GPU but sees them all.
    Squatter {
        /// The squatting pod's UID, and its names when a record ties the UID to them.
        uid: String,
        namespace: Option<String>,
        pod: Option<String>,
        /// What its processes on this GPU hold; `None` when none reported a number.
        vram: Option<Bytes>,
        /// The pods the GPU is allocated to, as `namespace/pod`.
        allocated_to: Vec<String>,
    },
}

impl WarningKind {
    /// Which kind this is, as every output names it (`WarningCode::name`).
    pub fn code(&self) -> WarningCode {
        match self {
            WarningKind::OomRisk { .. } => WarningCode::OomRisk,
            WarningKind::Overheating { .. } => WarningCode::Overheating,
            WarningKind::Lost => WarningCode::Lost,
            WarningKind::IdleHolder { .. } => WarningCode::IdleHolder,
            WarningKind::HostDown { .. } => WarningCode::HostDown,
            WarningKind::StaleVram { .. } => WarningCode::StaleVram,
            WarningKind::PileUp { .. } => WarningCode::PileUp,
            WarningKind::Xid { .. } => WarningCode::Xid,
            WarningKind::RemappedRows(_) => WarningCode::RemappedRows,
            WarningKind::RetiredPages(_) => WarningCode::RetiredPages,
            WarningKind::PcieReplays { .. } => WarningCode::PcieReplays,
            WarningKind::EccCorrected { .. } => WarningCode::EccCorrected,
            WarningKind::HwSlowdown { .. } => WarningCode::HwSlowdown,
            WarningKind::Squatter { .. } => WarningCode::Squatter,
        }
    }
}

/// Who a warning is about. A host-wide warning names the host, not a made-up GPU.
/// (A process subject can join here when a warning is about a process alone.)
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    Gpu {
        id: GpuId,
        index: u32,
        /// The GPU's host when watching several (`--remote`); `None` for one host.
        host: Option<String>,
    },
    Host {
        name: String,
    },
}

impl Subject {
    /// GPUs by index first, then host-wide warnings (equal among themselves, so a stable
    /// sort keeps them in the order the hosts were listed).
    fn order(&self, other: &Subject) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (Subject::Gpu { index: a, .. }, Subject::Gpu { index: b, .. }) => a.cmp(b),
            (Subject::Gpu { .. }, Subject::Host { .. }) => Ordering::Less,
            (Subject::Host { .. }, Subject::Gpu { .. }) => Ordering::Greater,
            (Subject::Host { .. }, Subject::Host { .. }) => Ordering::Equal,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub severity: Severity,
    pub subject: Subject,
    pub kind: WarningKind,
}

impl Warning {
    /// The GPU this warning is about, if it is about one.
    pub fn gpu(&self) -> Option<&GpuId> {
        match &self.subject {
            Subject::Gpu { id, .. } => Some(id),
            Subject::Host { .. } => None,
        }
    }

    /// The index of the GPU this warning is about, if it is about one.
    pub fn gpu_index(&self) -> Option<u32> {
        match &self.subject {
            Subject::Gpu { index, .. } => Some(*index),
            Subject::Host { .. } => None,
        }
    }
}

/// Critical first, then by GPU, then host-wide ones, so the most urgent line is the top one.
/// Stable: warnings that compare equal keep the order they were raised in.
pub fn sort(warnings: &mut [Warning]) {
    warnings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.subject.order(&b.subject))
    });
}

/// Per-GPU memory of what was active, for hysteresis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Alarm {
    oom: Option<Severity>,
    /// The same per MIG instance (by `MIG-` UUID), for its own hysteresis.
    instance_oom: Vec<(GpuId, Severity)>,
    time_to_full_active: bool,
    heat: Option<Severity>,
    /// When the temperature first reached the critical level in the current hot spell.
    hot_since: Option<SystemTime>,
    /// Since when the GPU has been idle / had VRAM used with no process (see `etiquette`).
    pub(super) idle_since: Option<SystemTime>,
    pub(super) stale_since: Option<SystemTime>,
    /// XIDs, remapped rows, counter growth, hardware slowdowns (`model::health`).
    health: super::health::HealthMemory,
}

/// Evaluates one GPU: returns its new alarm state and the warnings it raises now.
pub fn evaluate(
    prev: &Alarm,
    gpu: &GpuReading,
    procs: &[&ProcReading],
    history: &GpuHistory,
    th: &Thresholds,
    now: SystemTime,
) -> (Alarm, Vec<Warning>) {
    let mut alarm = Alarm::default();
    let mut out = Vec::new();
    let warn = |severity, kind: WarningKind| Warning {
        severity,
        subject: Subject::Gpu {
            id: gpu.id.clone(),
            index: gpu.index,
            host: gpu.host.clone(),
        },
        kind,
    };
    if gpu.status == GpuStatus::Lost {
        out.push(warn(Severity::Critical, WarningKind::Lost));
        // The XID that often comes with a GPU falling off the bus (79) stays shown.
        let mut health = super::health::HealthMemory::default();
        for (severity, kind) in super::health::evaluate(&prev.health, gpu, now, &mut health) {
            out.push(warn(severity, kind));
        }
        return (alarm, out);
    }
    if let Some((severity, kind)) = oom(prev, gpu, history, th, now, &mut alarm) {
        out.push(warn(severity, kind));
    }
    for m in &gpu.mig_devices {
        if let Some((severity, kind)) = instance_oom(prev, m, th, &mut alarm) {
            out.push(warn(severity, kind));
        }
    }
    if let Some((severity, kind)) = heat(prev, gpu, th, now, &mut alarm) {
        out.push(warn(severity, kind));
    }
    for kind in super::etiquette::evaluate(prev, gpu, procs, th, now, &mut alarm) {
        out.push(warn(Severity::Warning, kind));
    }
    for (severity, kind) in super::health::evaluate(&prev.health, gpu, now, &mut alarm.health) {
        out.push(warn(severity, kind));
    }
    for kind in super::squatter::evaluate(gpu, procs) {
        out.push(warn(Severity::Warning, kind));
    }
    (alarm, out)
}

fn oom(
    prev: &Alarm,
    gpu: &GpuReading,
    history: &GpuHistory,
    th: &Thresholds,
    now: SystemTime,
    alarm: &mut Alarm,
) -> Option<(Severity, WarningKind)> {
    let (used, total) = (gpu.memory_used?, gpu.memory_total?);
    let percent = gpu.memory_ratio()? * 100.0;
    let level = memory_level(percent, prev.oom, th);

    let time_to_full = history
        .memory_growth_per_sec(
            now.checked_sub(TREND_WINDOW)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        )
        .filter(|rate| *rate >= MIN_GROWTH_BYTES_PER_SEC)
        .map(|rate| Duration::from_secs_f64(total.saturating_sub(used).0 as f64 / rate));
    let limit = th.oom_time_to_full.as_secs_f64();
    let filling = time_to_full.is_some_and(|ttf| {
        let secs = ttf.as_secs_f64();
        secs < limit || (prev.time_to_full_active && secs < limit * TTF_CLEAR_FACTOR)
    });
    alarm.time_to_full_active = filling;

    let severity = match level {
        Some(severity) => severity,
        None if filling => Severity::Warning,
        None => return None,
    };
    alarm.oom = Some(severity);
    Some((
        severity,
        WarningKind::OomRisk {
            used,
            total,
            percent,
            time_to_full: time_to_full.filter(|_| filling),
            instance: None,
        },
    ))
}

/// The severity memory at `percent` full deserves by the OOM thresholds alone, given what
/// it was last sample (`was`): a level once reached holds until the memory falls
/// `OOM_CLEAR_MARGIN_PERCENT` below it, so a reading hovering at a threshold does not flap.
/// Shared by the GPU's rule and each MIG instance's.
fn memory_level(percent: f64, was: Option<Severity>, th: &Thresholds) -> Option<Severity> {
    let above = |level: f64, held: bool| {
        percent >= level || (held && percent >= level - OOM_CLEAR_MARGIN_PERCENT)
    };
    if above(th.oom_critical_percent, was == Some(Severity::Critical)) {
        Some(Severity::Critical)
    } else if above(th.oom_warn_percent, was.is_some()) {
        Some(Severity::Warning)
    } else {
        None
    }
}

/// OOM risk of one MIG instance: the GPU's thresholds and hysteresis on the instance's own
/// memory. No time-to-full: there is no per-instance history to fit a trend to.
fn instance_oom(
    prev: &Alarm,
    m: &crate::reading::mig::MigReading,
    th: &Thresholds,
    alarm: &mut Alarm,
) -> Option<(Severity, WarningKind)> {
    let (used, total) = (m.memory_used?, m.memory_total?);
    if total.0 == 0 {
        return None;
    }
    let percent = used.0 as f64 / total.0 as f64 * 100.0;
    let was = prev
        .instance_oom
        .iter()
        .find(|(id, _)| *id == m.id)
        .map(|(_, s)| *s);
    let severity = memory_level(percent, was, th)?;
    alarm.instance_oom.push((m.id.clone(), severity));
    Some((
        severity,
        WarningKind::OomRisk {
            used,
            total,
            percent,
            time_to_full: None,
            instance: Some(super::mig::InstanceTag::of(m)),
        },
    ))
}

fn heat(
    prev: &Alarm,
    gpu: &GpuReading,
    th: &Thresholds,
    now: SystemTime,
    alarm: &mut Alarm,
) -> Option<(Severity, WarningKind)> {
    let temp = gpu.temperature?.0;
    let slowdown = gpu.temperature_slowdown;
    // The device's own slowdown point wins when it is lower than our setting.
    let critical_at = slowdown.map_or(th.temp_critical, |s| s.0.min(th.temp_critical));
    let warn_at = th.temp_warn.min(critical_at.saturating_sub(1));

    let still_hot = prev.hot_since.is_some() && temp + TEMP_CLEAR_MARGIN_C >= critical_at;
    alarm.hot_since = if temp >= critical_at || still_hot {
        Some(prev.hot_since.unwrap_or(now))
    } else {
        None
    };
    let held_for = alarm
        .hot_since
        .and_then(|since| now.duration_since(since).ok())
        .unwrap_or_default();

    let severity = if alarm.hot_since.is_some() && held_for >= th.temp_hold {
        Severity::Critical
    } else if temp >= warn_at
        || alarm.hot_since.is_some()
        || (prev.heat.is_some() && temp + TEMP_CLEAR_MARGIN_C >= warn_at)
    {
        Severity::Warning
    } else {
        return None;
    };
    alarm.heat = Some(severity);
    Some((
        severity,
        WarningKind::Overheating {
            temperature: Celsius(temp),
            held_for,
            critical_at: Celsius(critical_at),
            slowdown,
        },
    ))
}

/// A critical warning for a watched host that does not answer. Its subject is the host:
/// it belongs to no GPU, and sorts after the GPUs' warnings.
pub fn host_down(host: &str, reason: &str) -> Warning {
    Warning {
        severity: Severity::Critical,
        subject: Subject::Host {
            name: host.to_string(),
        },
        kind: WarningKind::HostDown {
            reason: reason.to_string(),
        },
    }
}

#[cfg(test)]
#[path = "warnings_tests.rs"]
mod tests;
