//! Reading a snapshot document (`--once --json`, `/api/v1/snapshot`) back into a `Sample`,
//! so another gpuwatch can show a remote host's GPUs through the same pipeline. Parsing
//! only; anything malformed is an error naming what was wrong, never a panic.

use std::time::SystemTime;

use serde::Deserialize;

use crate::headless::JSON_SCHEMA_VERSION;
use crate::source::{
    GpuId, GpuReading, HostInfo, HostProc, ProcDetails, ProcKind, ProcReading, Sample, Visibility,
};
use crate::units::{Bytes, Percent};

#[derive(Debug, Deserialize)]
struct Doc {
    schema_version: u32,
    time: Option<f64>,
    host: HostInfo,
    gpus: Vec<GpuReading>,
    processes: Vec<Proc>,
}

#[derive(Debug, Deserialize)]
struct Proc {
    gpu_uuid: String,
    pid: u32,
    user: Option<String>,
    #[serde(rename = "type")]
    kind: ProcKind,
    gpu_memory: Option<u64>,
    gpu_util: Option<u32>,
    cpu_percent: Option<f32>,
    host_memory: Option<u64>,
    #[serde(default)]
    started: Option<f64>,
    #[serde(default)]
    uid: Option<u32>,
    command: String,
    visibility: String,
}

fn epoch(secs: f64) -> Result<SystemTime, String> {
    crate::source::epoch_seconds::from_secs(secs)
        .ok_or_else(|| format!("time {secs} is not a valid number of seconds"))
}

/// Parses a snapshot document. `fallback_time` stamps a document without a time.
pub fn parse(text: &str, fallback_time: SystemTime) -> Result<Sample, String> {
    let doc: Doc =
        serde_json::from_str(text).map_err(|e| format!("not a gpuwatch snapshot: {e}"))?;
    if doc.schema_version != JSON_SCHEMA_VERSION {
        return Err(format!(
            "snapshot schema version {} is not the {JSON_SCHEMA_VERSION} this gpuwatch reads",
            doc.schema_version
        ));
    }
    let time = doc.time.map(epoch).transpose()?.unwrap_or(fallback_time);
    let processes = doc
        .processes
        .into_iter()
        .map(proc_reading)
        .collect::<Result<_, _>>()?;
    Ok(Sample {
        time,
        host: doc.host,
        gpus: doc.gpus,
        processes,
        hosts: Vec::new(),
    })
}

fn proc_reading(p: Proc) -> Result<ProcReading, String> {
    let visibility = Visibility::from_name(&p.visibility)
        .ok_or_else(|| format!("process {}: unknown visibility {:?}", p.pid, p.visibility))?;
    let host = match visibility {
        Visibility::Visible => HostProc::Visible(ProcDetails {
            user: p.user.unwrap_or_else(|| "?".into()),
            uid: p.uid.unwrap_or(u32::MAX),
            command: p.command,
            cpu_percent: p.cpu_percent,
            host_memory: p.host_memory.map(Bytes),
            started: epoch(
                p.started
                    .ok_or_else(|| format!("process {} has no start time", p.pid))?,
            )?,
            context: Default::default(),
        }),
        Visibility::OtherNamespace => HostProc::OtherNamespace,
        Visibility::Hidden => HostProc::Hidden,
        Visibility::Exited => HostProc::Exited,
    };
    Ok(ProcReading {
        pid: p.pid,
        gpu: GpuId(p.gpu_uuid),
        kind: p.kind,
        gpu_memory: p.gpu_memory.map(Bytes),
        sm_util: p.gpu_util.map(Percent),
        host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::GpuSource;
    use crate::source::sim::{SimClock, SimSource};
    use crate::state::{Msg, State, ViewConfig, update};
    use std::time::Duration;

    #[test]
    fn a_snapshot_reads_back_into_the_same_sample() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        let mut sim = SimSource::new(8, 42, Duration::from_secs(1), SimClock::Virtual { start });
        let sample = sim.sample().unwrap();
        let mut state = State::new(ViewConfig::default());
        update(&mut state, Msg::Sample(Box::new(sample.clone())));
        let text = crate::headless::render_json(&state);
        let back = parse(&text, SystemTime::UNIX_EPOCH).unwrap();
        assert_eq!(back.time, sample.time);
        assert_eq!(back.host, sample.host);
        assert_eq!(back.gpus, sample.gpus);
        // The document lists processes sorted by VRAM; compare as sets.
        let mut want = sample.processes.clone();
        let mut got = back.processes.clone();
        let key = |p: &ProcReading| (p.gpu.clone(), p.pid);
        want.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got, want);
    }

    #[test]
    fn malformed_documents_are_errors() {
        let t = SystemTime::UNIX_EPOCH;
        assert!(
            parse("", t)
                .unwrap_err()
                .starts_with("not a gpuwatch snapshot")
        );
        assert!(parse("{\"schema_version\": 1}", t).is_err());
        let v2 = r#"{"schema_version": 2, "time": 1, "host": {"hostname": "h"}, "gpus": [], "processes": []}"#;
        assert!(parse(v2, t).unwrap_err().contains("schema version 2"));
        let bad_time = r#"{"schema_version": 1, "time": -5, "host": {"hostname": "h"}, "gpus": [], "processes": []}"#;
        assert!(
            parse(bad_time, t)
                .unwrap_err()
                .contains("not a valid number")
        );
        let ok = r#"{"schema_version": 1, "time": null, "host": {"hostname": "h"}, "gpus": [], "processes": []}"#;
        assert_eq!(parse(ok, t).unwrap().time, t);
    }
}
