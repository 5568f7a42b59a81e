//! The wire document both ways: what is written reads back as the same sample; the version
//! rule (any minor, unknown fields ignored, another major refused by name); version 1.

use std::time::{Duration, SystemTime};

use super::*;
use crate::source::GpuSource;
use crate::source::sim::{SimClock, SimSource};

fn sim_sample() -> Sample {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let mut sim = SimSource::new(8, 42, Duration::from_secs(1), SimClock::Virtual { start });
    // A few ticks in, so CPU use (a delta) is known.
    sim.sample().unwrap();
    sim.sample().unwrap()
}

/// A snapshot of a sample without going through the state (headless does that).
fn snapshot_of(sample: &Sample) -> Snapshot {
    Snapshot {
        schema_version: SCHEMA_MAJOR,
        schema_minor: SCHEMA_MINOR,
        time: epoch_secs(sample.time),
        host: Host::from_info(&sample.host),
        gpus: sample
            .gpus
            .iter()
            .map(|g| SnapshotGpu {
                gpu: Gpu::from_reading(g),
                unattributed_memory: None,
            })
            .collect(),
        processes: processes(sample),
        warnings: Vec::new(),
        free_gpus: Vec::new(),
        lookups: Vec::new(),
    }
}

#[test]
fn a_snapshot_reads_back_into_the_same_sample() {
    let sample = sim_sample();
    let text = snapshot_of(&sample).to_json();
    let back = read_snapshot(&text, SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(back.time, sample.time);
    assert_eq!(back.host, sample.host);
    assert_eq!(back.gpus, sample.gpus);
    assert_eq!(back.processes, sample.processes);
}

#[test]
fn a_recorded_sample_reads_back_identically() {
    let mut sample = sim_sample();
    sample.hosts.push(HostStatus {
        name: "gpu2".into(),
        error: Some("connection refused".into()),
    });
    let line = recorded_sample_line(&sample, |_| None);
    assert!(!line.contains('\n'));
    assert_eq!(read_recorded_sample(SCHEMA_MAJOR, &line).unwrap(), sample);
}

#[test]
fn field_names_follow_nvidia_smi_and_nulls_stay_null() {
    let sample = sim_sample();
    let doc: serde_json::Value = serde_json::from_str(&snapshot_of(&sample).to_json()).unwrap();
    let g = &doc["gpus"][0];
    for key in [
        "uuid",
        "index",
        "utilization_gpu",
        "memory_used",
        "memory_total",
        "temperature_gpu",
        "power_draw",
        "enforced_power_limit",
        "fan_speed",
        "clocks_sm",
        "pstate",
        "pci_bus_id",
    ] {
        assert!(!g[key].is_null(), "gpus[0].{key} in {g}");
    }
    assert!(g.get("id").is_none(), "the UUID is `uuid` now");
    assert!(
        g["memory_reserved"].is_null(),
        "unknown is null, not absent or 0"
    );
    let p = &doc["processes"][0];
    assert_eq!(p["visibility"], "visible");
    assert!(p["used_gpu_memory"].as_u64().unwrap() > 0);
    assert!(p["elapsed"].as_f64().unwrap() > 0.0);
}

/// A minimal document with the given major and minor and one extra field.
fn doc(major: u32, minor: u32) -> String {
    format!(
        r#"{{"schema_version": {major}, "schema_minor": {minor}, "from_the_future": {{"x": 1}},
            "time": 1767603600.5, "host": {{"hostname": "h", "new_host_fact": true}},
            "gpus": [{{"index": 0, "uuid": "GPU-a", "name": "g", "status": "ok",
                       "utilization_gpu": 0, "quantum_flux": 3}}],
            "processes": [{{"gpu_uuid": "GPU-a", "gpu_index": 0, "pid": 7, "type": "C",
                            "visibility": "other_namespace", "new": 1}}],
            "warnings": [{{"kind": "a_kind_from_the_future", "severity": "apocalyptic"}}],
            "free_gpus": []}}"#
    )
}

#[test]
fn a_higher_minor_and_unknown_fields_are_read() {
    let s = read_snapshot(&doc(SCHEMA_MAJOR, SCHEMA_MINOR + 7), SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(s.gpus.len(), 1);
    assert_eq!(
        s.gpus[0].util,
        Some(crate::units::Percent(0)),
        "a real zero"
    );
    assert_eq!(s.gpus[0].temperature, None, "absent is unknown");
    assert_eq!(
        s.processes[0].host,
        crate::reading::HostProc::OtherNamespace
    );
    // A host before minor 2 carries no load: unknown, not zero.
    assert_eq!(s.host.load, crate::reading::HostLoad::default());
}

#[test]
fn the_host_load_reads_back_and_garbage_is_unknown() {
    let sample = sim_sample();
    assert!(
        sample.host.load.cpu_percent.is_some(),
        "the demo has a load"
    );
    let back = read_snapshot(&snapshot_of(&sample).to_json(), SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(back.host.load, sample.host.load);
    let text = doc(SCHEMA_MAJOR, 2).replace(
        r#""new_host_fact": true"#,
        r#""cpu_percent": 150, "load_average": [1, -2, 3], "memory_total": 1024"#,
    );
    let load = read_snapshot(&text, SystemTime::UNIX_EPOCH)
        .unwrap()
        .host
        .load;
    assert_eq!((load.cpu_percent, load.load_average), (None, None));
    assert_eq!(load.memory_total, Some(crate::units::Bytes(1024)));
}

#[test]
fn another_major_is_refused_by_name() {
    let err = read_snapshot(&doc(SCHEMA_MAJOR + 1, 0), SystemTime::UNIX_EPOCH).unwrap_err();
    assert_eq!(
        err,
        format!(
            "snapshot schema version {} is not one this gpuwatch reads ({SCHEMA_MAJOR}.x, or 1); \
             run the same major version of gpuwatch on both sides",
            SCHEMA_MAJOR + 1
        )
    );
    assert!(
        read_recorded_sample(9, "{}")
            .unwrap_err()
            .contains("version 9")
    );
}

#[test]
fn malformed_documents_are_errors() {
    let t = SystemTime::UNIX_EPOCH;
    assert!(
        read_snapshot("", t)
            .unwrap_err()
            .starts_with("not a gpuwatch snapshot")
    );
    assert!(read_snapshot("{\"schema_version\": 2}", t).is_err());
    let bad_time = r#"{"schema_version": 2, "time": -5, "host": {"hostname": "h"}, "gpus": [], "processes": []}"#;
    assert!(
        read_snapshot(bad_time, t)
            .unwrap_err()
            .contains("not a valid number")
    );
    let no_time = r#"{"schema_version": 2, "time": null, "host": {"hostname": "h"}, "gpus": [], "processes": []}"#;
    assert_eq!(read_snapshot(no_time, t).unwrap().time, t);
    let nameless = r#"{"schema_version": 2, "time": 1, "host": {"hostname": "h"}, "gpus": [],
        "processes": [{"gpu_uuid": "GPU-a", "gpu_index": 0, "pid": 7, "type": "C", "visibility": "visible", "started": 1}]}"#;
    assert_eq!(
        read_snapshot(nameless, t).unwrap_err(),
        "process 7 is visible but has no user"
    );
}

#[test]
fn a_version_1_snapshot_is_still_read() {
    let v1 = r#"{"schema_version": 1, "time": 1767603600.0,
        "host": {"hostname": "old", "driver_version": "550.54.15", "cuda_version": null},
        "gpus": [{"id": "GPU-a", "index": 0, "name": "g", "status": "ok", "util": 37,
                  "memory_total": 100, "memory_used": 10, "temperature": 61, "power": 300.5,
                  "throttle_reasons": ["sw_power_cap"], "unattributed_memory": null}],
        "processes": [{"gpu_index": 0, "gpu_uuid": "GPU-a", "pid": 42, "user": "alice",
                       "type": "C", "gpu_memory": 5, "gpu_util": 50, "cpu_percent": 99.5,
                       "host_memory": 7, "elapsed_seconds": 60, "started": 1767603540.0,
                       "uid": 1001, "command": "train", "visibility": "visible"}],
        "warnings": [{"gpu_index": 0, "gpu": "GPU-a", "severity": "warning", "kind": "lost",
                      "message": "x"}],
        "free_gpus": []}"#;
    let s = read_snapshot(v1, SystemTime::UNIX_EPOCH).unwrap();
    assert_eq!(s.host.hostname, "old");
    let g = &s.gpus[0];
    assert_eq!((g.id.0.as_str(), g.util.map(|u| u.0)), ("GPU-a", Some(37)));
    assert_eq!(g.power.map(|w| w.0), Some(300.5));
    assert_eq!(
        g.throttle_reasons,
        Some(vec![crate::reading::throttle::ThrottleReason::SwPowerCap])
    );
    let d = s.processes[0].details().expect("visible");
    assert_eq!(
        (d.user.as_str(), d.uid, s.processes[0].pid),
        ("alice", 1001, 42)
    );
    assert_eq!(s.processes[0].sm_util.map(|u| u.0), Some(50));
}
