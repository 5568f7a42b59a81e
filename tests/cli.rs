//! The binary as a user runs it: headless output, errors and exit codes.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

mod common;

fn gpuwatch() -> Command {
    common::clean_command()
}

fn json(args: &[&str]) -> Value {
    let out = gpuwatch()
        .args(args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("valid JSON")
}

#[test]
fn once_prints_a_text_snapshot() {
    gpuwatch()
        .args(["--demo", "--once"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "demo-gpu-server  driver 550.54.15  CUDA 12.4  8 GPUs  free: 6",
        ))
        .stdout(predicate::str::contains("NVIDIA H100 80GB HBM3"))
        .stdout(predicate::str::contains("alice"))
        .stdout(predicate::str::contains("python train.py"))
        .stdout(predicate::str::contains("no process 12.9G"));
}

#[test]
fn not_a_terminal_implies_once() {
    // assert_cmd captures stdout through a pipe, so no --once is needed.
    gpuwatch()
        .args(["--demo", "--demo-gpus", "2"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stdout(predicate::str::contains("2 GPUs"));
}

#[test]
fn json_has_real_numbers_and_nulls() {
    let doc = json(&["--demo", "--demo-gpus", "3"]);
    assert_eq!(doc["schema_version"], 2);
    assert!(doc["schema_minor"].is_u64());
    let gpus = doc["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 3);
    let g0 = &gpus[0];
    assert_eq!(g0["index"], 0);
    assert!(g0["uuid"].as_str().unwrap().starts_with("GPU-"));
    assert!(
        g0["memory_total"].as_u64().unwrap() > 80_000_000_000,
        "bytes, not GiB"
    );
    assert!(
        g0["temperature_gpu"].is_u64(),
        "°C as a number: {}",
        g0["temperature_gpu"]
    );
    assert!(g0["power_draw"].is_f64() && g0["enforced_power_limit"] == 700.0);
    assert!(g0["utilization_gpu"].as_u64().unwrap() <= 100);
    assert_eq!(g0["status"], "ok");
    let procs = doc["processes"].as_array().unwrap();
    let p = procs.iter().find(|p| p["user"] == "alice").unwrap();
    assert!(p["used_gpu_memory"].as_u64().unwrap() > 1 << 30);
    assert_eq!(p["type"], "C");
    assert!(p["elapsed"].as_f64().unwrap() >= 5.0 * 3600.0);
    assert!(doc["warnings"].is_array());
    assert_eq!(doc["free_gpus"], serde_json::json!([]));
}

#[test]
fn same_seed_same_readings_other_seed_other_readings() {
    let readings = |seed: &str| {
        let doc = json(&["--demo", "--seed", seed]);
        doc["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["utilization_gpu"].clone(), g["power_draw"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(readings("7"), readings("7"));
    assert_ne!(readings("7"), readings("8"));
}

#[test]
fn demo_gpu_count_is_checked() {
    assert_eq!(
        json(&["--demo", "--demo-gpus", "64"])["gpus"]
            .as_array()
            .unwrap()
            .len(),
        64
    );
    gpuwatch()
        .args(["--demo", "--demo-gpus", "65"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --demo-gpus: must be between 1 and 64 (got \"65\")\n");
}

#[test]
fn bad_interval_is_one_clear_line() {
    gpuwatch()
        .args(["--demo", "--interval", "50ms"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --interval: must be at least 100ms (got \"50ms\")\n");
}

#[test]
fn without_nvml_it_says_so_and_points_at_demo() {
    let out = gpuwatch()
        .args(["--once", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .assert()
        .code(2)
        .stdout("")
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("gpuwatch: cannot load the NVML library"),
        "{err}"
    );
    assert!(
        err.contains("is the NVIDIA driver installed?") && err.contains("try: gpuwatch --demo"),
        "{err}"
    );
}

#[test]
fn source_auto_falls_back_to_the_demo() {
    gpuwatch()
        .args([
            "--source",
            "auto",
            "--once",
            "--nvml-lib",
            "/nonexistent/libnvidia-ml.so.1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("showing the simulated demo fleet"))
        .stdout(predicate::str::contains("demo-gpu-server"));
}

#[test]
fn only_restricts_what_is_shown() {
    let doc = json(&["--demo", "--only", "0,GPU-5e0c0002"]);
    let indices: Vec<u64> = doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, vec![0, 2]);
    assert!(
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["gpu_index"] == 0 || p["gpu_index"] == 2)
    );
    gpuwatch()
        .args(["--demo", "--once", "--only", "0,,2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--only").and(predicate::str::contains("empty")));
}
