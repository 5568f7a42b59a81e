//! The public JSON document, both ways: the snapshot (`--once --json`, `/api/v1/snapshot`,
//! read back by `--remote`) and the sample lines of a recording share its types, which are
//! separate from the internal ones so the format changes only on purpose. Owns the field
//! names, the units (base units: bytes, °C, W, %, MHz, J, seconds) and the version rule; a
//! GPU's numeric readings are named, scaled and typed by the field table (`readings`);
//! must not know the words shown to people (the caller passes a warning's message in).
//! docs/json.md and docs/gpuwatch-snapshot.schema.json describe it. A warning's kind is
//! named by its `WarningCode` everywhere. Imports only the readings vocabulary and units:
//! the model writes itself into the document from above (`model::snapshot_of`,
//! `model::warning_doc`: `Snapshot::of`, `Warning::of`).
//!
//! Version rule: `schema_version` is the major version and `schema_minor` the minor. A
//! reader accepts every document of its major version whatever the minor and ignores
//! fields it does not know, so hosts can be upgraded one at a time; a minor version only
//! adds fields (or warning kinds). Renaming, removing or retyping a field bumps the major.
//! Major 1 is still read by `v1`.

mod code;
mod cut;
mod gpu;
mod gpu_json;
mod lookup;
mod process;
mod readings;
pub mod recording;
mod v1;
mod warning;
pub mod workload;

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

pub use code::WarningCode;
pub use cut::CutDoc;
pub use gpu::{
    Gpu, RemappedRowsDoc, RetiredPagesDoc, Status, XidDoc, throttle_reason_names,
    throttle_reasons_from_names,
};
pub use lookup::Lookup;
pub use process::{ContextDoc, Proc, ProcType};
pub use readings::Readings;
pub use warning::{Severity, SubjectKind, Warning, WarningKind};

use crate::reading::{HostInfo, HostStatus, Sample};

/// The major version this gpuwatch writes and reads (besides the legacy major 1).
pub const SCHEMA_MAJOR: u32 = 2;
/// The minor version this gpuwatch writes; any minor of `SCHEMA_MAJOR` is read.
/// Minor 2 added the host's load, GPU health counters and warnings, vendors, MIG
/// instances, PCIe maxima, per-process peaks and parents; minor 3 the outside lookups;
/// minor 4 the source's cuts, Slurm array tasks and the `squatter` warning; minor 5 the video
/// clock.
pub const SCHEMA_MINOR: u32 = 5;

/// The host that took the sample. The load fields came with minor 2: an older document
/// lacks them, which reads as unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    #[serde(default)]
    pub cpu_count: Option<u32>,
    #[serde(default)]
    pub memory_total: Option<u64>,
    #[serde(default)]
    pub memory_used: Option<u64>,
    #[serde(default)]
    pub swap_total: Option<u64>,
    #[serde(default)]
    pub swap_used: Option<u64>,
    #[serde(default)]
    pub load_average: Option<[f64; 3]>,
}

impl Host {
    pub fn from_info(h: &HostInfo) -> Host {
        let l = &h.load;
        Host {
            hostname: h.hostname.clone(),
            driver_version: h.driver_version.clone(),
            cuda_version: h.cuda_version.clone(),
            // Rounded to a hundredth: the document is read by people too.
            cpu_percent: l.cpu_percent.map(|p| (p * 100.0).round() / 100.0),
            cpu_count: l.cpus,
            memory_total: l.memory_total.map(|b| b.0),
            memory_used: l.memory_used.map(|b| b.0),
            swap_total: l.swap_total.map(|b| b.0),
            swap_used: l.swap_used.map(|b| b.0),
            load_average: l.load_average,
        }
    }

    fn into_info(self) -> HostInfo {
        use crate::units::Bytes;
        HostInfo {
            hostname: self.hostname,
            driver_version: self.driver_version,
            cuda_version: self.cuda_version,
            load: crate::reading::HostLoad {
                // A garbled number (negative, past 100) is unknown, not a reading.
                cpu_percent: self.cpu_percent.filter(|p| (0.0..=100.0).contains(p)),
                cpus: self.cpu_count,
                memory_total: self.memory_total.map(Bytes),
                memory_used: self.memory_used.map(Bytes),
                swap_total: self.swap_total.map(Bytes),
                swap_used: self.swap_used.map(Bytes),
                load_average: self
                    .load_average
                    .filter(|l| l.iter().all(|v| v.is_finite() && *v >= 0.0)),
            },
            // A remote host's lookups and cuts are its own business: not read back (yet).
            lookups: Vec::new(),
            cuts: Vec::new(),
        }
    }
}

/// A watched remote host and why it does not answer (`null` while it does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watched {
    pub name: String,
    pub error: Option<String>,
}

/// A GPU in a snapshot: the reading plus what gpuwatch derived from the processes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotGpu {
    #[serde(flatten)]
    pub gpu: Gpu,
    /// Bytes of VRAM in use that no listed process accounts for; `null` when there is
    /// none worth naming or the use is unknown.
    pub unattributed_memory: Option<u64>,
}

/// The snapshot document as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    pub schema_version: u32,
    pub schema_minor: u32,
    /// Seconds since the Unix epoch; `null` before the first sample.
    pub time: Option<f64>,
    pub host: Host,
    pub gpus: Vec<SnapshotGpu>,
    pub processes: Vec<Proc>,
    pub warnings: Vec<Warning>,
    /// Indices of the GPUs nobody is using.
    pub free_gpus: Vec<u32>,
    /// How each outside lookup naming GPU holders last went (minor 3); empty where none
    /// is made.
    pub lookups: Vec<Lookup>,
    /// What the source left out of this sample to stay within its bounds (minor 4); empty
    /// when nothing was.
    pub cuts: Vec<CutDoc>,
}

impl Snapshot {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the snapshot document always serializes") + "\n"
    }
}

/// What this gpuwatch reads of a snapshot (warnings and derived fields are re-evaluated).
#[derive(Deserialize)]
struct SnapshotIn {
    time: Option<f64>,
    host: Host,
    gpus: Vec<Gpu>,
    processes: Vec<Proc>,
}

/// One sample line of a recording: what the source said, nothing derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedSample {
    /// Seconds since the Unix epoch.
    pub time: f64,
    pub host: Host,
    pub gpus: Vec<Gpu>,
    pub processes: Vec<Proc>,
    #[serde(default)]
    pub hosts: Vec<Watched>,
}

/// The document's processes for a sample (the GPU index looked up in the same sample).
pub fn processes(sample: &Sample) -> Vec<Proc> {
    sample
        .processes
        .iter()
        .map(|p| {
            let index = sample.gpus.iter().find(|g| g.id == p.gpu).map(|g| g.index);
            Proc::from_reading(p, index, sample.time)
        })
        .collect()
}

pub fn watched(hosts: &[HostStatus]) -> Vec<Watched> {
    hosts
        .iter()
        .map(|h| Watched {
            name: h.name.clone(),
            error: h.error.clone(),
        })
        .collect()
}

/// A sample as one recording line (no newline); `peak` says the most VRAM each process
/// has held on its GPU so far (the recorder keeps that history, not the wire format).
pub fn recorded_sample_line(
    sample: &Sample,
    peak: impl Fn(&crate::reading::ProcReading) -> Option<crate::units::Bytes>,
) -> String {
    let mut procs = processes(sample);
    for (doc, p) in procs.iter_mut().zip(&sample.processes) {
        doc.peak_gpu_memory = peak(p).map(|b| b.0);
    }
    let doc = RecordedSample {
        time: epoch_secs(sample.time).unwrap_or(0.0),
        host: Host::from_info(&sample.host),
        gpus: sample.gpus.iter().map(Gpu::from_reading).collect(),
        processes: procs,
        hosts: watched(&sample.hosts),
    };
    serde_json::to_string(&doc).expect("a sample always serializes")
}

/// Reads one sample line of a recording whose header says `major`.
pub fn read_recorded_sample(major: u32, line: &str) -> Result<Sample, String> {
    match major {
        1 => v1::read_recorded_sample(line),
        SCHEMA_MAJOR => {
            let s: RecordedSample = serde_json::from_str(line).map_err(|e| e.to_string())?;
            into_sample(Some(s.time), s.host, s.gpus, s.processes, s.hosts, None)
        }
        other => Err(version_error("recording format", other)),
    }
}

/// Whether a recording header's major version is one this gpuwatch reads.
pub fn reads_major(major: u32) -> bool {
    major == 1 || major == SCHEMA_MAJOR
}

/// Says which versions are read, naming the one that was not.
pub fn version_error(what: &str, major: u32) -> String {
    format!(
        "{what} version {major} is not one this gpuwatch reads ({SCHEMA_MAJOR}.x, or 1); \
         run the same major version of gpuwatch on both sides"
    )
}

#[derive(Deserialize)]
struct VersionProbe {
    schema_version: u32,
}

/// Reads a snapshot document into a sample; `fallback_time` stamps one without a time.
/// Anything malformed is an error saying what was wrong, never a panic.
pub fn read_snapshot(text: &str, fallback_time: SystemTime) -> Result<Sample, String> {
    let probe: VersionProbe =
        serde_json::from_str(text).map_err(|e| format!("not a gpuwatch snapshot: {e}"))?;
    match probe.schema_version {
        1 => v1::read_snapshot(text, fallback_time),
        SCHEMA_MAJOR => {
            let d: SnapshotIn =
                serde_json::from_str(text).map_err(|e| format!("not a gpuwatch snapshot: {e}"))?;
            into_sample(
                d.time,
                d.host,
                d.gpus,
                d.processes,
                Vec::new(),
                Some(fallback_time),
            )
        }
        other => Err(version_error("snapshot schema", other)),
    }
}

fn into_sample(
    time: Option<f64>,
    host: Host,
    gpus: Vec<Gpu>,
    processes: Vec<Proc>,
    hosts: Vec<Watched>,
    fallback_time: Option<SystemTime>,
) -> Result<Sample, String> {
    let time = match (time, fallback_time) {
        (Some(t), _) => epoch(t)?,
        (None, Some(f)) => f,
        (None, None) => return Err("the sample has no time".into()),
    };
    Ok(Sample {
        time,
        host: host.into_info(),
        gpus: gpus.into_iter().map(Gpu::into_reading).collect(),
        processes: processes
            .into_iter()
            .map(Proc::into_reading)
            .collect::<Result<_, _>>()?,
        hosts: hosts
            .into_iter()
            .map(|h| HostStatus {
                name: h.name,
                error: h.error,
            })
            .collect(),
        history: None,
    })
}

/// Seconds since the epoch as a time, or an error naming the number: negative, non-finite
/// or absurdly large values would overflow rather than mean anything.
fn epoch(secs: f64) -> Result<SystemTime, String> {
    Some(secs)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .and_then(|d| SystemTime::UNIX_EPOCH.checked_add(d))
        .ok_or_else(|| format!("time {secs} is not a valid number of seconds"))
}

/// A time as seconds since the epoch; `None` before 1970.
pub fn epoch_secs(t: SystemTime) -> Option<f64> {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests;
