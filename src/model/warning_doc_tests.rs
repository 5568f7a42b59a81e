//! Unit tests of the warning document: every model kind is written with its code's name as
//! the `kind` tag, its numbers in base units, and its subject.

use std::time::Duration;

use super::*;
use crate::model::mig::InstanceTag;
use crate::reading::GpuId;
use crate::reading::health::{RemappedRows, RetiredPages};
use crate::reading::throttle::ThrottleReason;
use crate::units::{Bytes, Celsius};
use crate::wire::WarningCode;

/// One model kind of every code (the test below fails when a code has none here).
fn one_of_each() -> Vec<model::WarningKind> {
    use model::WarningKind as K;
    vec![
        K::OomRisk {
            used: Bytes(1),
            total: Bytes(2),
            percent: 50.0,
            time_to_full: Some(Duration::from_secs(90)),
            instance: None,
        },
        K::Overheating {
            temperature: Celsius(91),
            held_for: Duration::from_secs(40),
            critical_at: Celsius(90),
            slowdown: None,
        },
        K::Lost,
        K::IdleHolder {
            pid: 1,
            user: Some("u".into()),
            command: None,
            vram: Bytes(1),
            idle_for: Duration::from_secs(1),
        },
        K::HostDown { reason: "r".into() },
        K::StaleVram {
            used: Bytes(1),
            held_for: Duration::from_secs(1),
        },
        K::PileUp {
            unpinned: vec![7],
            owners: 2,
            free: vec![1],
        },
        K::Xid {
            code: 79,
            count: 1,
            ago: Duration::ZERO,
        },
        K::RemappedRows(RemappedRows {
            correctable: 0,
            uncorrectable: 1,
            pending: true,
            failed: false,
        }),
        K::RetiredPages(RetiredPages {
            single_bit: 0,
            double_bit: 1,
            pending: true,
        }),
        K::PcieReplays {
            total: 2,
            growth: 1,
        },
        K::EccCorrected {
            total: 2,
            growth: 1,
        },
        K::HwSlowdown {
            reason: ThrottleReason::HwSlowdown,
            held_for: Duration::from_secs(30),
        },
        K::Squatter {
            uid: "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee".into(),
            namespace: Some("ml".into()),
            pod: Some("squatter".into()),
            vram: None,
            allocated_to: vec!["ml/trainer-0".into()],
        },
    ]
}

/// The document's critical warning about GPU 0 for `kind`, with no message.
fn on_gpu_0(kind: model::WarningKind) -> Warning {
    let w = model::Warning {
        severity: model::Severity::Critical,
        subject: model::Subject::Gpu {
            id: GpuId("GPU-0".into()),
            index: 0,
            host: None,
        },
        kind,
    };
    Warning::of(&w, None)
}

/// The same as JSON.
fn written(kind: model::WarningKind) -> serde_json::Value {
    serde_json::to_value(on_gpu_0(kind)).unwrap()
}

#[test]
fn every_kind_is_written_under_its_codes_name_with_its_own_fields() {
    let mut covered = std::collections::BTreeSet::new();
    for kind in one_of_each() {
        let code = kind.code();
        let v = written(kind);
        assert_eq!(v["kind"], code.name(), "{v}");
        covered.insert(code);
    }
    let all = WarningCode::ALL.iter().copied().collect();
    assert_eq!(covered, all, "a code with no example here");
}

#[test]
fn a_kinds_own_fields_follow_its_name_and_a_lost_gpu_has_none() {
    let text = |kind| serde_json::to_string(&on_gpu_0(kind)).unwrap();
    let common = r#"{"subject":"gpu","gpu_uuid":"GPU-0","gpu_index":0,"host":null,"severity":"critical","kind":"#;
    assert_eq!(
        text(model::WarningKind::Lost),
        format!(r#"{common}"lost","message":null}}"#)
    );
    let replays = model::WarningKind::PcieReplays {
        total: 2,
        growth: 1,
    };
    assert_eq!(
        text(replays),
        format!(r#"{common}"pcie_replays","total":2,"growth":1,"message":null}}"#)
    );
}

#[test]
fn a_gpu_warning_carries_its_subject_severity_numbers_and_message() {
    let w = model::Warning {
        severity: model::Severity::Critical,
        subject: model::Subject::Gpu {
            id: GpuId("GPU-1".into()),
            index: 3,
            host: Some("node7".into()),
        },
        kind: one_of_each().swap_remove(1),
    };
    let v = serde_json::to_value(Warning::of(&w, Some("hot".into()))).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "subject": "gpu", "gpu_uuid": "GPU-1", "gpu_index": 3, "host": "node7",
            "severity": "critical", "kind": "overheating", "temperature": 91,
            "held_for": 40.0, "critical_at": 90, "slowdown": null, "message": "hot",
        })
    );
}

#[test]
fn a_host_warning_names_the_host_and_no_gpu() {
    let w = model::host_down("node9", "connection refused");
    let v = serde_json::to_value(Warning::of(&w, None)).unwrap();
    assert_eq!(v["subject"], "host");
    assert_eq!(v["host"], "node9");
    assert_eq!(v["gpu_uuid"], serde_json::Value::Null);
    assert_eq!(v["reason"], "connection refused");
    assert_eq!(v["message"], serde_json::Value::Null);
}

#[test]
fn an_instance_oom_names_its_mig_device() {
    let kind = model::WarningKind::OomRisk {
        used: Bytes(9),
        total: Bytes(10),
        percent: 90.0,
        time_to_full: None,
        instance: Some(InstanceTag {
            id: GpuId("MIG-a".into()),
            gpu_instance: Some(5),
            compute_instance: Some(0),
            profile: Some("1g.10gb".into()),
        }),
    };
    let v = written(kind);
    assert_eq!(v["kind"], "oom_risk");
    assert_eq!(v["mig_uuid"], "MIG-a");
    assert_eq!(v["gpu_instance_id"], 5);
    assert_eq!(v["mig_profile"], "1g.10gb");
    assert_eq!(v["time_to_full"], serde_json::Value::Null);
}
