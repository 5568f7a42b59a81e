//! The published JSON Schema (docs/gpuwatch-snapshot.schema.json) describes what the binary
//! really prints: `--once --json` of the demo fleet, of the real NVML source on the fake
//! library, and of `--remote` with a live and a dead host validate against it, and every
//! field they carry is one the schema documents.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use serde_json::{Value, json};

const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/gpuwatch-snapshot.schema.json"
);
const NVML_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

fn schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).expect("the schema is JSON")
}

/// Validates `doc` and checks that every key it has is documented (the schema itself lets
/// a later minor version add fields, so this is checked here, not there).
fn assert_conforms(doc: &Value, what: &str) {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}\n{doc:#}");
    let documented = |path: &str, v: &Value, props: &Value| {
        for key in v.as_object().expect("an object").keys() {
            assert!(
                props.get(key).is_some(),
                "{what}: {path}.{key} is not in the schema"
            );
        }
    };
    documented("", doc, &schema["properties"]);
    documented("host", &doc["host"], &schema["$defs"]["host"]["properties"]);
    for g in doc["gpus"].as_array().unwrap() {
        let mut g = g.clone();
        // The snapshot's one derived field is documented beside the readings.
        g.as_object_mut().unwrap().remove("unattributed_memory");
        documented("gpus", &g, &schema["$defs"]["gpu"]["properties"]);
    }
    for (list, def) in [
        ("processes", "process"),
        ("warnings", "warning"),
        ("lookups", "lookup"),
    ] {
        for item in doc[list].as_array().unwrap() {
            documented(list, item, &schema["$defs"][def]["properties"]);
        }
    }
}

fn once_json(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.args(["--once", "--json"]).assert().success();
    serde_json::from_slice(&out.get_output().stdout).expect("valid JSON")
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let schema = schema();
    jsonschema::meta::validate(&schema).expect("valid against its meta-schema");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    // Every field carries a description (with its unit, where it has one).
    for def in [
        "gpu",
        "process",
        "warning",
        "lookup",
        "recording_header",
        "recorded_sample",
    ] {
        for (key, prop) in schema["$defs"][def]["properties"].as_object().unwrap() {
            assert!(prop["description"].is_string(), "{def}.{key}");
        }
    }
}

#[test]
fn demo_once_json_conforms() {
    let doc = once_json(common::clean_command().arg("--demo"));
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 8);
    assert_conforms(&doc, "--demo");
}

/// The mixed scenario: MIG instances, an AMD and an Intel GPU with their unknowns `null`.
#[test]
fn mixed_demo_once_json_conforms() {
    let doc = once_json(common::clean_command().args(["--demo", "--demo-scenario", "mixed"]));
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 11);
    assert_conforms(&doc, "--demo-scenario mixed");
}

#[test]
fn a_late_demo_with_every_kind_of_warning_conforms() {
    // Far enough into the demo scenario that the OOM, heat, stale and idle warnings fire.
    let state = common::demo_state(8, 100, 0, 0);
    assert!(!state.model.warnings().is_empty());
    let doc: Value = serde_json::from_str(&gpuwatch::headless::render_json(&state)).unwrap();
    let kinds: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"overheating"), "{kinds:?}");
    assert_conforms(&doc, "late demo");
}

#[test]
fn fake_nvml_once_json_conforms_including_a_lost_gpu() {
    let mut cmd = common::clean_command();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", NVML_FIXTURE)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let doc = once_json(&mut cmd);
    assert_eq!(doc["gpus"][1]["fan_speed"], Value::Null, "unsupported");
    assert_conforms(&doc, "fake NVML");

    let mut scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(NVML_FIXTURE).unwrap()).unwrap();
    scenario["gpus"][1]["lost_from"] = json!(0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let mut cmd = common::clean_command();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let doc = once_json(&mut cmd);
    assert_eq!(doc["gpus"][1]["status"], "lost");
    let lost = &doc["warnings"][0];
    assert_eq!(
        (&lost["kind"], &lost["subject"], &lost["gpu_index"]),
        (&json!("lost"), &json!("gpu"), &json!(1))
    );
    assert_conforms(&doc, "fake NVML, GPU 1 lost");
}

/// Serves `body` to every request on 127.0.0.1 (a stand-in `gpuwatch serve`).
fn serve(body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    address
}

#[test]
fn remote_once_json_with_a_dead_host_conforms_and_names_the_host() {
    let snapshot = common::clean_command()
        .args(["--demo", "--demo-gpus", "2", "--once", "--json"])
        .output()
        .unwrap();
    assert!(snapshot.status.success());
    let live = serve(String::from_utf8(snapshot.stdout).unwrap());
    // A port with nothing listening: bound, then released.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let hosts = format!("{live},{dead}");
    // A host down makes `--once` exit 1 (after printing the document).
    let out = common::clean_command()
        .args(["--remote", &hosts, "--once", "--json"])
        .assert()
        .code(1);
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).expect("valid JSON");
    assert_conforms(&doc, "--remote with a dead host");
    assert!(doc["gpus"].as_array().unwrap().len() >= 2, "{doc:#}");
    assert!(doc["gpus"][0]["host"].is_string(), "tagged with its host");
    let down: Vec<&Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "host_down")
        .collect();
    assert_eq!(down.len(), 1, "{doc:#}");
    let w = down[0];
    assert_eq!(w["subject"], "host");
    assert!(w["host"].is_string());
    assert_eq!(w["gpu_index"], Value::Null, "a host warning names no GPU");
    assert_eq!(w["gpu_uuid"], Value::Null);
    assert_eq!(w["severity"], "critical");
    assert!(w["reason"].as_str().unwrap().len() > 3);
}

#[test]
fn the_schema_catches_wrong_documents() {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let state = common::demo_state(8, 100, 0, 0);
    let good: Value = serde_json::from_str(&gpuwatch::headless::render_json(&state)).unwrap();
    assert!(validator.is_valid(&good));
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut doc = good.clone();
        edit(&mut doc);
        !validator.is_valid(&doc)
    };
    assert!(broken(&|d| d["gpus"][0]["memory_used"] = json!("70 GiB")));
    assert!(
        broken(&|d| d["gpus"][0]["utilization_gpu"] = json!(-1)),
        "no sentinels"
    );
    assert!(broken(&|d| {
        d["gpus"][0]
            .as_object_mut()
            .unwrap()
            .remove("temperature_gpu");
    }));
    assert!(broken(&|d| d["processes"][0]["visibility"] = json!("gone")));
    assert!(broken(&|d| d["schema_version"] = json!(1)));
    assert!(
        broken(&|d| {
            d["warnings"][0]["subject"] = json!("host");
        }),
        "a host warning has no GPU"
    );
    assert!(broken(&|d| {
        d["warnings"][0].as_object_mut().unwrap().remove("severity");
    }));
    assert!(
        !broken(&|d| d["a_field_from_2_1"] = json!(true)),
        "minor additions validate"
    );
}

#[test]
fn docs_json_md_names_every_field_of_the_schema() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md")).unwrap();
    let schema = schema();
    let mut names: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    for def in [
        "gpu",
        "snapshot_gpu",
        "process",
        "warning",
        "recording_header",
    ] {
        names.extend(
            schema["$defs"][def]["properties"]
                .as_object()
                .unwrap()
                .keys(),
        );
    }
    for name in names {
        assert!(
            docs.contains(&format!("`{name}`")),
            "docs/json.md: `{name}`"
        );
    }
}

/// The schema's part for a recording line (`$defs/NAME`), as a schema of its own.
fn sub_schema(name: &str) -> jsonschema::Validator {
    let schema = schema();
    let sub = json!({
        "$schema": schema["$schema"],
        "$defs": schema["$defs"],
        "$ref": format!("#/$defs/{name}"),
    });
    jsonschema::validator_for(&sub).expect("the sub-schema compiles")
}

#[test]
fn a_recording_conforms_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ndjson");
    common::clean_command()
        .args(["--demo", "--once", "--record"])
        .arg(&path)
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let errors: Vec<String> = sub_schema("recording_header")
        .iter_errors(&header)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let sample = sub_schema("recorded_sample");
    for line in lines {
        let doc: Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = sample
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert!(!doc["processes"].as_array().unwrap().is_empty());
    }
    // The version 1 recording is not this shape: it is read by the legacy reader only.
    let v1 = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/recording-v1.ndjson"
    ))
    .unwrap();
    let v1_line: Value = serde_json::from_str(v1.lines().nth(1).unwrap()).unwrap();
    assert!(!sample.is_valid(&v1_line));
}

/// The AMD source on the MI300X tree (issue 14: `vendor`, every NVML-only field null) and a
/// MIG-mode GPU on the fake NVML (`mig_devices`) conform too.
#[test]
fn amd_and_mig_documents_conform() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/drm/amd-mi300x");
    let amd = once_json(
        common::clean_command()
            .args(["--source", "amd"])
            .args(["--sysfs-root", &format!("{root}/sys")])
            .args(["--proc-root", &format!("{root}/proc")]),
    );
    assert_eq!(amd["gpus"][0]["vendor"], "amd");
    assert_conforms(&amd, "amd");
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({"gpus": [{
        "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a",
        "fields": {"mig_mode_current": 1, "mig_mode_pending": 1},
        "mig_devices": [{"uuid": "MIG-4b6f1c2d-0a1b-5c3d-9e8f-112233445566",
            "name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "gpu_instance_id": 9,
            "compute_instance_id": 0, "memory_total": 10_737_418_240u64, "memory_used": 0}]
    }]});
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let mig = once_json(
        common::clean_command()
            .env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
            .arg("--nvml-lib")
            .arg(common::fake_lib()),
    );
    assert_eq!(mig["gpus"][0]["mig_devices"][0]["profile"], "1g.10gb");
    assert_conforms(&mig, "mig");
    let props = &schema()["$defs"]["gpu"]["properties"]["mig_devices"]["items"]["properties"];
    for key in mig["gpus"][0]["mig_devices"][0].as_object().unwrap().keys() {
        assert!(
            props.get(key).is_some(),
            "mig_devices[].{key} is not in the schema"
        );
    }
}

#[test]
fn the_schema_names_every_warning_code_and_no_other() {
    use gpuwatch::wire::WarningCode;
    let schema = schema();
    let warning = &schema["$defs"]["warning"];
    let codes: Vec<&str> = WarningCode::ALL.iter().map(|c| c.name()).collect();
    let listed: Vec<&str> = warning["properties"]["kind"]["enum"]
        .as_array()
        .expect("the kind is an enum")
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(
        listed, codes,
        "the schema's kinds in WarningCode::ALL's order"
    );
    // Each kind's own fields are required by a rule of its own.
    let ruled: Vec<&str> = warning["allOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|rule| rule["if"]["properties"]["kind"]["const"].as_str())
        .collect();
    // pile_up's fields (unpinned_pids, owners, free_gpus) have no rule yet: a gap in the
    // schema, left for whoever edits docs/ (this branch does not); drop it from here then.
    const NO_RULE_YET: [&str; 1] = ["pile_up"];
    for code in codes {
        let known_gap = NO_RULE_YET.contains(&code);
        assert_eq!(
            ruled.contains(&code),
            !known_gap,
            "{code}: a rule for its fields is {}",
            if known_gap {
                "there now: drop it from NO_RULE_YET"
            } else {
                "missing"
            }
        );
    }
}
