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
        cuts: Vec::new(),
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
    assert_eq!((&*d.user, d.uid, s.processes[0].pid), ("alice", 1001, 42));
    assert_eq!(s.processes[0].sm_util.map(|u| u.0), Some(50));
}

/// An array task travels both ways (a `--remote` watcher shows `70_7` too); a plain job has
/// no array fields at all.
#[test]
fn a_slurm_array_task_round_trips() {
    use crate::reading::workload::{ArrayTask, SlurmNames, Workload};
    use workload::WorkloadDoc;
    let task = Workload::Slurm {
        job: 77,
        step: Some("0".into()),
        uid: None,
        names: SlurmNames {
            array: Some(ArrayTask { job: 70, task: 7 }),
            ..SlurmNames::default()
        },
    };
    let text = serde_json::to_string(&WorkloadDoc::from_workload(&task)).unwrap();
    assert!(
        text.contains(r#""slurm_array_job":"70","slurm_array_task":7"#),
        "{text}"
    );
    let back: WorkloadDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(back.into_workload(), Some(task));
    let plain = Workload::Slurm {
        job: 8,
        step: None,
        uid: None,
        names: SlurmNames::default(),
    };
    let text = serde_json::to_string(&WorkloadDoc::from_workload(&plain)).unwrap();
    assert!(!text.contains("array"), "{text}");
}

/// Every row of the field table with a JSON member goes through the document and back: it
/// is written where its name says (a dotted name inside its nested object), as its JSON
/// type (a whole number is `42`, never `42.0`), and reads back as the same reading.
#[test]
fn every_json_field_of_the_table_round_trips_as_its_json_type() {
    use crate::reading::fields::{self, JsonKind, TABLE};
    let full = fields::tests::every_field_known();
    let text = serde_json::to_string(&Gpu::from_reading(&full)).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let back = serde_json::from_str::<Gpu>(&text).unwrap().into_reading();
    for f in TABLE {
        let Some(json) = f.json else { continue };
        let at = json.name.split('.').fold(&doc, |v, part| {
            v.get(part).unwrap_or(&serde_json::Value::Null)
        });
        let typed = match json.kind {
            JsonKind::Integer => at.is_u64(),
            JsonKind::Float => at.is_f64(),
            JsonKind::Bool => at.is_boolean(),
        };
        assert!(typed, "{}: {at} is not {:?}\n{text}", json.name, json.kind);
        assert_eq!((f.get)(&back), (f.get)(&full), "{}", json.name);
    }
}

/// Absent is not zero: a GPU that knows nothing writes `null` for every reading (present,
/// not left out) and reads back knowing nothing.
#[test]
fn unknown_readings_are_written_as_null_and_read_back_unknown() {
    use crate::reading::fields::TABLE;
    use crate::reading::{GpuId, GpuReading};
    let none = GpuReading::absent(GpuId("GPU-a".into()), 0, "g");
    let text = serde_json::to_string(&Gpu::from_reading(&none)).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let back = serde_json::from_str::<Gpu>(&text).unwrap().into_reading();
    assert_eq!(back, none);
    for f in TABLE {
        let Some(json) = f.json else { continue };
        // A nested member's object is `null` as a whole.
        let top = json.name.split('.').next().unwrap();
        assert_eq!(
            doc.get(top),
            Some(&serde_json::Value::Null),
            "{}",
            json.name
        );
    }
}

/// The members of 2.4 keep their order (the table's readings sit among the other members
/// where they always did); a reading added later may come anywhere.
#[test]
fn the_gpu_objects_members_keep_their_order() {
    #[rustfmt::skip]
    const V2_4: &[&str] = &[
        "index", "uuid", "host", "name", "vendor", "status", "pci_bus_id",
        "utilization_gpu", "utilization_memory", "utilization_encoder", "utilization_decoder",
        "memory_total", "memory_used", "memory_free", "memory_reserved", "temperature_gpu",
        "temperature_slowdown", "temperature_shutdown", "power_draw", "enforced_power_limit",
        "total_energy_consumption", "fan_speed", "clocks_sm", "clocks_mem", "clocks_max_sm",
        "clocks_max_mem", "clocks_gr", "clocks_max_gr", "pstate", "pcie_link_gen_current",
        "pcie_link_width_current", "pcie_link_gen_max", "pcie_link_width_max",
        "pcie_tx_throughput", "pcie_rx_throughput", "clocks_throttle_reasons",
        "ecc_errors_uncorrected_volatile", "mig_enabled", "compute_mode", "persistence_mode",
        "mig_devices", "pods", "temperature_memory", "pcie_replay_counter",
        "ecc_errors_corrected_volatile", "retired_pages", "remapped_rows", "xid_errors",
    ];
    let full = crate::reading::fields::tests::every_field_known();
    let text = serde_json::to_string(&Gpu::from_reading(&full)).unwrap();
    let keys = top_level_keys(&text);
    let old: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .filter(|k| V2_4.contains(k))
        .collect();
    assert_eq!(old, V2_4);
    let unique: std::collections::HashSet<&String> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "a member written twice: {keys:?}");
}

/// A JSON object's keys in the order written.
fn top_level_keys(text: &str) -> Vec<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_str(text)
        .deserialize_map(Keys)
        .unwrap()
}

/// A value of the wrong type, or one the reading cannot hold, is an error naming the
/// member, as the typed fields were; an older document's missing members are unknown.
#[test]
fn a_reading_of_the_wrong_type_or_range_is_an_error_naming_it() {
    let gpu = |member: &str| {
        format!(r#"{{"index": 0, "uuid": "GPU-a", "name": "g", "status": "ok", {member}}}"#)
    };
    for (member, why) in [
        (
            r#""utilization_gpu": 42.5"#,
            "utilization_gpu: expected a whole number",
        ),
        (
            r#""utilization_gpu": -1"#,
            "utilization_gpu: expected a whole number",
        ),
        (
            r#""temperature_gpu": 4294967296"#,
            "temperature_gpu: 4294967296 is out of range",
        ),
        (r#""power_draw": "300""#, "power_draw: expected a number"),
        (r#""mig_enabled": 1"#, "mig_enabled: expected true or false"),
    ] {
        let err = serde_json::from_str::<Gpu>(&gpu(member))
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{member}: {err}");
    }
    let g = serde_json::from_str::<Gpu>(&gpu(r#""power_draw": 300, "clocks_sm": 1980"#))
        .unwrap()
        .into_reading();
    assert_eq!(
        g.power,
        Some(crate::units::Watts(300.0)),
        "an integer is a number"
    );
    assert_eq!(g.sm_clock, Some(crate::units::MegaHertz(1980)));
    assert_eq!(
        (g.util, g.graphics_clock),
        (None, None),
        "absent is unknown"
    );
}
