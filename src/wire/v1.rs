//! Legacy readers for schema major 1, kept so recordings made before version 2 still replay
//! and a `--remote` host still on version 1 can still be watched. Read only: nothing writes
//! version 1 any more. Its shapes are frozen here, apart from the internal types, so
//! changing those never breaks an old file. Version 1 had two process shapes: the
//! snapshot's (`gpu_uuid`, `type`, flat visibility) and the recording's (`gpu`, `kind`,
//! and the host facts nested under `host` with a `visibility` tag).

use std::time::SystemTime;

use serde::Deserialize;

use super::epoch;
use super::gpu::throttle_reasons_from_names;
use super::process::{ProcType, visibility_name};
use crate::reading::{
    GpuId, GpuReading, GpuStatus, HostInfo, HostProc, HostStatus, ProcDetails, ProcReading, Sample,
    Visibility,
};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

#[derive(Deserialize)]
struct Host {
    hostname: String,
    driver_version: Option<String>,
    cuda_version: Option<String>,
}

impl From<Host> for HostInfo {
    fn from(h: Host) -> Self {
        HostInfo {
            hostname: h.hostname,
            driver_version: h.driver_version,
            cuda_version: h.cuda_version,
            load: Default::default(),
            lookups: Vec::new(),
            cuts: Vec::new(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Ok,
    Lost,
}

/// A GPU in version 1: the internal reading's field names of the time.
#[derive(Deserialize)]
struct Gpu {
    id: String,
    #[serde(default)]
    host: Option<String>,
    index: u32,
    name: String,
    status: Status,
    util: Option<u32>,
    memory_util: Option<u32>,
    memory_total: Option<u64>,
    memory_used: Option<u64>,
    temperature: Option<u32>,
    temperature_slowdown: Option<u32>,
    power: Option<f64>,
    power_limit: Option<f64>,
    fan: Option<u32>,
    sm_clock: Option<u32>,
    memory_clock: Option<u32>,
    pstate: Option<u32>,
    pci_bus_id: Option<String>,
    memory_reserved: Option<u64>,
    memory_free: Option<u64>,
    temperature_shutdown: Option<u32>,
    energy_joules: Option<f64>,
    sm_clock_max: Option<u32>,
    memory_clock_max: Option<u32>,
    encoder_util: Option<u32>,
    decoder_util: Option<u32>,
    pcie_link_gen: Option<u32>,
    pcie_link_width: Option<u32>,
    pcie_tx_per_second: Option<u64>,
    pcie_rx_per_second: Option<u64>,
    throttle_reasons: Option<Vec<String>>,
    ecc_errors_uncorrected: Option<u64>,
    mig_enabled: Option<bool>,
}

impl From<Gpu> for GpuReading {
    fn from(v: Gpu) -> Self {
        let mut g = GpuReading::absent(GpuId(v.id), v.index, v.name);
        g.host = v.host;
        g.status = match v.status {
            Status::Ok => GpuStatus::Ok,
            Status::Lost => GpuStatus::Lost,
        };
        g.util = v.util.map(Percent);
        g.memory_util = v.memory_util.map(Percent);
        g.memory_total = v.memory_total.map(Bytes);
        g.memory_used = v.memory_used.map(Bytes);
        g.temperature = v.temperature.map(Celsius);
        g.temperature_slowdown = v.temperature_slowdown.map(Celsius);
        g.power = v.power.map(Watts);
        g.power_limit = v.power_limit.map(Watts);
        g.fan = v.fan.map(Percent);
        g.sm_clock = v.sm_clock.map(MegaHertz);
        g.memory_clock = v.memory_clock.map(MegaHertz);
        g.pstate = v.pstate;
        g.pci_bus_id = v.pci_bus_id;
        g.memory_reserved = v.memory_reserved.map(Bytes);
        g.memory_free = v.memory_free.map(Bytes);
        g.temperature_shutdown = v.temperature_shutdown.map(Celsius);
        g.energy_joules = v.energy_joules;
        g.sm_clock_max = v.sm_clock_max.map(MegaHertz);
        g.memory_clock_max = v.memory_clock_max.map(MegaHertz);
        g.encoder_util = v.encoder_util.map(Percent);
        g.decoder_util = v.decoder_util.map(Percent);
        g.pcie_link_gen = v.pcie_link_gen;
        g.pcie_link_width = v.pcie_link_width;
        g.pcie_tx_per_second = v.pcie_tx_per_second.map(Bytes);
        g.pcie_rx_per_second = v.pcie_rx_per_second.map(Bytes);
        g.throttle_reasons = throttle_reasons_from_names(v.throttle_reasons);
        g.ecc_errors_uncorrected = v.ecc_errors_uncorrected;
        g.mig_enabled = v.mig_enabled;
        g
    }
}

/// A process in a version 1 recording.
#[derive(Deserialize)]
struct RecordedProc {
    pid: u32,
    gpu: String,
    kind: ProcType,
    gpu_memory: Option<u64>,
    sm_util: Option<u32>,
    host: RecordedHostProc,
}

#[derive(Deserialize)]
#[serde(tag = "visibility", rename_all = "snake_case")]
enum RecordedHostProc {
    Visible(RecordedDetails),
    OtherNamespace,
    Hidden,
    Exited,
}

#[derive(Deserialize)]
struct RecordedDetails {
    user: String,
    uid: u32,
    command: String,
    cpu_percent: Option<f32>,
    host_memory: Option<u64>,
    started: f64,
}

#[derive(Deserialize)]
struct RecordedHostStatus {
    name: String,
    error: Option<String>,
}

#[derive(Deserialize)]
struct RecordedSample {
    time: f64,
    host: Host,
    gpus: Vec<Gpu>,
    processes: Vec<RecordedProc>,
    #[serde(default)]
    hosts: Vec<RecordedHostStatus>,
}

/// One sample line of a version 1 recording.
pub fn read_recorded_sample(line: &str) -> Result<Sample, String> {
    let s: RecordedSample = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let processes = s
        .processes
        .into_iter()
        .map(|p| {
            let host = match p.host {
                RecordedHostProc::Visible(d) => HostProc::Visible(ProcDetails {
                    user: d.user.into(),
                    uid: d.uid,
                    command: d.command.into(),
                    cpu_percent: d.cpu_percent,
                    host_memory: d.host_memory.map(Bytes),
                    started: epoch(d.started)?,
                    context: Default::default(),
                }),
                RecordedHostProc::OtherNamespace => HostProc::OtherNamespace,
                RecordedHostProc::Hidden => HostProc::Hidden,
                RecordedHostProc::Exited => HostProc::Exited,
            };
            Ok(ProcReading {
                peak_gpu_memory: None,
                pid: p.pid,
                gpu: GpuId(p.gpu),
                kind: p.kind.into(),
                gpu_memory: p.gpu_memory.map(Bytes),
                sm_util: p.sm_util.map(Percent),
                host,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Sample {
        time: epoch(s.time)?,
        host: s.host.into(),
        gpus: s.gpus.into_iter().map(GpuReading::from).collect(),
        processes,
        hosts: s
            .hosts
            .into_iter()
            .map(|h| HostStatus {
                name: h.name,
                error: h.error,
            })
            .collect(),
        history: None,
    })
}

/// A process in a version 1 snapshot (`--once --json`, `/api/v1/snapshot`).
#[derive(Deserialize)]
struct SnapshotProc {
    gpu_uuid: String,
    pid: u32,
    user: Option<String>,
    #[serde(rename = "type")]
    kind: ProcType,
    gpu_memory: Option<u64>,
    gpu_util: Option<u32>,
    cpu_percent: Option<f32>,
    host_memory: Option<u64>,
    started: Option<f64>,
    uid: Option<u32>,
    command: String,
    #[serde(with = "visibility_name")]
    visibility: Visibility,
}

#[derive(Deserialize)]
struct Snapshot {
    time: Option<f64>,
    host: Host,
    gpus: Vec<Gpu>,
    processes: Vec<SnapshotProc>,
}

/// A version 1 snapshot document; `fallback_time` stamps one without a time.
pub fn read_snapshot(text: &str, fallback_time: SystemTime) -> Result<Sample, String> {
    let doc: Snapshot =
        serde_json::from_str(text).map_err(|e| format!("not a gpuwatch snapshot: {e}"))?;
    let processes = doc
        .processes
        .into_iter()
        .map(|p| {
            let pid = p.pid;
            let missing = |what: &str| format!("process {pid} is visible but has no {what}");
            let host = match p.visibility {
                Visibility::Visible => HostProc::Visible(ProcDetails {
                    user: p.user.ok_or_else(|| missing("user"))?.into(),
                    uid: p.uid.ok_or_else(|| missing("uid"))?,
                    command: p.command.into(),
                    cpu_percent: p.cpu_percent,
                    host_memory: p.host_memory.map(Bytes),
                    started: epoch(p.started.ok_or_else(|| missing("start time"))?)?,
                    context: Default::default(),
                }),
                Visibility::OtherNamespace => HostProc::OtherNamespace,
                Visibility::Hidden => HostProc::Hidden,
                Visibility::Exited => HostProc::Exited,
            };
            Ok(ProcReading {
                peak_gpu_memory: None,
                pid,
                gpu: GpuId(p.gpu_uuid),
                kind: p.kind.into(),
                gpu_memory: p.gpu_memory.map(Bytes),
                sm_util: p.gpu_util.map(Percent),
                host,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Sample {
        time: doc.time.map(epoch).transpose()?.unwrap_or(fallback_time),
        host: doc.host.into(),
        gpus: doc.gpus.into_iter().map(GpuReading::from).collect(),
        processes,
        hosts: Vec::new(),
        history: None,
    })
}
