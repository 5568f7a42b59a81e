//! MIG through the fake NVML: a GPU whose instances (MIG devices) come from the scenario,
//! read by the real `NvmlSource` and written by the real binary's `--once --json`: their
//! ids, profiles, memory and processes; utilisation `null`, never 0; a GPU whose MIG mode
//! flips on between two samples.

use crate::common;
use crate::serve_support;

use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use serde_json::{Value, json};

const MIG_A: &str = "MIG-4b6f1c2d-0a1b-5c3d-9e8f-112233445566";
const MIG_B: &str = "MIG-9a8b7c6d-5e4f-5a3b-8c2d-665544332211";

/// An H100 whose MIG mode reads `mode` per tick, with a 3g.40gb and a 2g.20gb instance,
/// a process on each and one on no instance (listed before MIG came on).
fn scenario(mode: Value) -> Value {
    json!({
        "driver_version": "550.54.15",
        "cuda_version": 12040,
        "gpus": [{
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a",
            "fields": {
                "memory_total": 85_899_345_920u64, "memory_used": 30_064_771_072u64,
                "util_gpu": 0, "util_memory": 0,
                "mig_mode_current": mode, "mig_mode_pending": 1
            },
            "mig_devices": [
                {"uuid": MIG_A, "name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                 "gpu_instance_id": 1, "compute_instance_id": 0,
                 "memory_total": 42_949_672_960u64, "memory_used": 21_474_836_480u64},
                {"uuid": MIG_B, "name": "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
                 "gpu_instance_id": 5, "compute_instance_id": 0,
                 "memory_total": 21_474_836_480u64, "memory_used": 8_589_934_592u64}
            ],
            "processes": [
                {"pid": 4_000_001, "used_memory": 21_474_836_480u64,
                 "gpu_instance_id": 1, "compute_instance_id": 0},
                {"pid": 4_000_002, "used_memory": 8_589_934_592u64,
                 "gpu_instance_id": 5, "compute_instance_id": 0}
            ]
        }]
    })
}

fn write(dir: &tempfile::TempDir, scenario: &Value) -> std::path::PathBuf {
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, serde_json::to_string(scenario).unwrap()).unwrap();
    path
}

/// The binary on the fake NVML playing the scenario at `path`, with `args`.
fn on_fake(path: &std::path::Path, args: &[&str]) -> std::process::Output {
    common::clean_command()
        .env("GPUWATCH_FAKE_NVML_SCENARIO", path)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(args)
        .output()
        .unwrap()
}

/// `--once --json` (and `args`) on the scenario, which must succeed.
fn once_json(path: &std::path::Path, args: &[&str]) -> Value {
    let out = on_fake(path, &[&["--once", "--json"], args].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn once_json_lists_the_instances_with_their_ids_profiles_memory_and_processes() {
    let dir = tempfile::tempdir().unwrap();
    let doc = once_json(&write(&dir, &scenario(json!(1))), &[]);
    let g = &doc["gpus"][0];
    assert_eq!(g["mig_enabled"], true);
    let migs = g["mig_devices"].as_array().unwrap();
    assert_eq!(migs.len(), 2);
    assert_eq!(
        migs[0],
        json!({"uuid": MIG_A, "gpu_instance_id": 1, "compute_instance_id": 0,
               "profile": "3g.40gb", "memory_total": 42_949_672_960u64,
               "memory_used": 21_474_836_480u64, "utilization_gpu": null,
               "pids": [4_000_001]})
    );
    assert_eq!(migs[1]["profile"], "2g.20gb");
    assert_eq!(migs[1]["pids"], json!([4_000_002]));
}

#[test]
fn a_gpu_whose_mig_mode_flips_on_gains_its_instances() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir, &scenario(json!([0, 1])));
    let lib = dir.path().join("libnvidia-ml.so.1");
    std::fs::copy(common::fake_lib(), &lib).unwrap();
    let mut source = NvmlSource::open(Some(&lib)).unwrap();
    let first = source.sample().unwrap();
    assert_eq!(first.gpus[0].mig_enabled, Some(false));
    assert!(first.gpus[0].mig_devices.is_empty());
    let second = source.sample().unwrap();
    let g = &second.gpus[0];
    assert_eq!(g.mig_enabled, Some(true));
    let ids: Vec<_> = g.mig_devices.iter().map(|m| m.id.0.as_str()).collect();
    assert_eq!(ids, [MIG_A, MIG_B]);
    assert!(
        g.mig_devices.iter().all(|m| m.util.is_none()),
        "N/A, never 0"
    );
}

#[test]
fn the_gpu_panel_lists_each_instance_with_its_memory_and_util_na() {
    use gpuwatch::state::{Msg, State, update};
    let dir = tempfile::tempdir().unwrap();
    write(&dir, &scenario(json!(1)));
    let lib = dir.path().join("libnvidia-ml.so.1");
    std::fs::copy(common::fake_lib(), &lib).unwrap();
    let mut source = NvmlSource::open(Some(&lib)).unwrap();
    let mut state = State::new(common::config());
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    let screen = common::screen(&state, 200, 40);
    assert!(screen.contains("MIG on"), "{screen}");
    // Each instance a line of its own inside the panel: profile, ids, a memory bar,
    // used/total, util N/A (never 0), processes, the short UUID and who holds it.
    assert!(screen.contains("MIG on · 2 instances"), "{screen}");
    assert!(
        screen.contains(
            "├ 3g.40gb  gi1 ci0 ████░░░░ 20.0/40.0G util N/A 1 proc MIG-4b6f1c2d · pid 4000001 20.0G"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("└ 2g.20gb  gi5 ci0 ███▎░░░░ 8.0/20.0G util N/A 1 proc MIG-9a8b7c6d"),
        "{screen}"
    );
    // Process rows say which instance: GPU 0, GPU instance 1 / 5.
    assert!(screen.contains("0/1  4000001"), "{screen}");
    assert!(screen.contains("0/5  4000002"), "{screen}");
}

/// The scenario with a real process (so it has a user and a command) on the 3g.40gb
/// instance, which is `used_gib` full.
fn scenario_with(pid: u32, used_gib: u64) -> Value {
    let mut s = scenario(json!(1));
    let gib = 1u64 << 30;
    s["gpus"][0]["mig_devices"][0]["memory_used"] = json!(used_gib * gib);
    s["gpus"][0]["processes"][0]["pid"] = json!(pid);
    s["gpus"][0]["processes"][0]["used_memory"] = json!(used_gib * gib);
    s
}

struct Sleeper(std::process::Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Sleeper {
    Sleeper(
        std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap(),
    )
}

#[test]
fn the_tui_in_tmux_shows_instances_in_panels_and_compact_rows_and_filters_by_profile() {
    let Some(t) = common::tmux::Tmux::start("mig", 160, 40) else {
        return;
    };
    let job = sleeper();
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, &scenario_with(job.0.id(), 20));
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        path.display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("2g.20gb", std::time::Duration::from_secs(20));
    let me = String::from_utf8(
        std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let me = me.trim();
    let line = screen
        .lines()
        .find(|l| l.contains("3g.40gb"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(line.contains("gi1 ci0"), "{line}");
    assert!(line.contains("20.0/40.0G util N/A 1 proc"), "{line}");
    assert!(line.contains("MIG-4b6f1c2d"), "{line}");
    assert!(line.contains(&format!("· {me} 20.0G")), "{line}");
    assert!(
        screen.contains(&format!("0/1  {:>7}", job.0.id())),
        "{screen}"
    );

    // The per-user view names the instance the user holds (GPU/GI), as the table does.
    t.send(&["u"]);
    let screen = t.wait_for("IDLE VRAM", std::time::Duration::from_secs(10));
    let row = screen
        .lines()
        .find(|l| l.trim_start().starts_with(me))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains(" 0/1 "), "{row}");
    t.send(&["u"]);

    // Compact: the instances on lines of their own under the GPU's line.
    t.send(&["c"]);
    let screen = t.wait_for("VRAM GiB", std::time::Duration::from_secs(10));
    let lines: Vec<&str> = screen.lines().collect();
    let gpu = lines
        .iter()
        .position(|l| l.contains("H100 80GB"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(lines[gpu + 1].contains("└ 3g.40gb"), "{screen}");
    assert!(lines[gpu + 2].contains("└ 2g.20gb"), "{screen}");
    assert!(lines[gpu + 1].contains("util N/A"), "{screen}");

    // The filter matches the instance's profile (and its UUID).
    t.send(&["/", "2g.20gb", "Enter"]);
    let screen = t.wait_for("Processes (1 of 2)", std::time::Duration::from_secs(10));
    assert!(screen.contains("0/5  4000002"), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn only_a_mig_uuid_selects_that_instance_and_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, &scenario(json!(1)));
    let doc = once_json(&path, &["--only", "MIG-9a8b7c6d"]);
    let migs = doc["gpus"][0]["mig_devices"].as_array().unwrap();
    let ids: Vec<&str> = migs.iter().map(|m| m["uuid"].as_str().unwrap()).collect();
    assert_eq!(ids, [MIG_B]);
    let pids: Vec<u64> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, [4_000_002]);
    // A MIG UUID that names nothing is a typo, said as for GPUs.
    let out = on_fake(&path, &["--once", "--only", "MIG-ffff"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MIG-ffff matches no GPU"), "{err}");
}

#[test]
fn a_nearly_full_instance_is_an_oom_risk_named_by_instance_while_the_gpu_is_not() {
    // 39 of the 3g.40gb instance's 40 GiB (97.5%: critical), the GPU 28 of 80 GiB.
    let dir = tempfile::tempdir().unwrap();
    let mut s = scenario(json!(1));
    s["gpus"][0]["mig_devices"][0]["memory_used"] = json!(39u64 << 30);
    let path = write(&dir, &s);
    let doc = once_json(&path, &[]);
    let ooms: Vec<&Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "oom_risk")
        .collect();
    assert_eq!(ooms.len(), 1, "{ooms:?}");
    let w = ooms[0];
    assert_eq!(w["severity"], "critical");
    assert_eq!(w["gpu_index"], 0);
    assert_eq!(w["mig_uuid"], MIG_A);
    assert_eq!(w["gpu_instance_id"], 1);
    assert_eq!(w["mig_profile"], "3g.40gb");
    assert_eq!(w["memory_total"], 42_949_672_960u64);
    assert_eq!(
        w["message"],
        "GPU 0 MIG 3g.40gb gi1 (MIG-4b6f1c2d) VRAM 98% (39.0/40.0 GiB) — OOM risk"
    );
    let out = on_fake(&path, &["--once"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("GPU 0 MIG 3g.40gb gi1 (MIG-4b6f1c2d) VRAM 98%"),
        "{text}"
    );
    // The text tables: a row per instance under its GPU (GPU/GI, profile, util N/A,
    // memory, holder, UUID), and process rows on their instance.
    let row = text
        .lines()
        .find(|l| l.starts_with("0/1  └ 3g.40gb ci0"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(" N/A "), "{row}");
    assert!(row.contains("39.0/40.0"), "{row}");
    assert!(
        row.ends_with(&format!("pid 4000001 20.0G · {MIG_A}")),
        "{row}"
    );
    assert!(text.contains("0/5  4000002"), "{text}");
}

#[test]
fn pick_on_a_mig_gpu_chooses_a_free_instance_and_prints_its_mig_uuid() {
    // The 3g.40gb instance has a process; the 2g.20gb one is emptied: the free one.
    let dir = tempfile::tempdir().unwrap();
    let mut s = scenario(json!(1));
    s["gpus"][0]["mig_devices"][1]["memory_used"] = json!(16u64 << 20);
    s["gpus"][0]["processes"] = json!([s["gpus"][0]["processes"][0].clone()]);
    let path = write(&dir, &s);
    let pick = |args: &[&str], visible: Option<&str>| {
        let mut cmd = common::clean_command();
        cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
            .arg("--nvml-lib")
            .arg(common::fake_lib())
            .arg("pick")
            .args(args);
        if let Some(v) = visible {
            cmd.env("CUDA_VISIBLE_DEVICES", v);
        }
        cmd.output().unwrap()
    };
    let out = pick(&["--format", "env", "-v"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={MIG_B}")
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GPU 0/1 skipped: held by pid 4000001 of an unknown user (20.0 GiB)"),
        "{err}"
    );
    // Two are asked for, one instance is free: said per instance.
    let out = pick(&["--count", "2"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 qualifies (0/5)"), "{err}");
    // An inherited CUDA_VISIBLE_DEVICES naming an instance restricts to it.
    let out = pick(&[], Some(&MIG_A[..12]));
    assert_eq!(out.status.code(), Some(1), "the named instance is taken");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("GPU 0/5 skipped: not in CUDA_VISIBLE_DEVICES"),
        "{err}"
    );
    let out = pick(&["--format", "uuids"], Some(MIG_B));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), MIG_B);
}

#[test]
fn the_exporter_serves_per_instance_series_with_dcgm_exporters_instance_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, &scenario(json!(1)));
    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = serve_support::Exporter::start(cmd, &["--dcgm-compat", "--process-metrics"]);
    exporter.wait_ready();
    let text = exporter.get("/metrics").body;
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix) && l.contains("GPU_I_ID=\"1\""))
            .unwrap_or_else(|| panic!("no {prefix} for GI 1 in\n{text}"))
            .to_string()
    };
    let used = line("gpuwatch_mig_memory_used_bytes{");
    assert!(used.contains("GPU_I_PROFILE=\"3g.40gb\""), "{used}");
    assert!(used.contains(&format!("mig_uuid=\"{MIG_A}\"")), "{used}");
    assert!(
        used.contains("uuid=\"GPU-0e8f6c1a"),
        "the parent GPU: {used}"
    );
    assert!(used.ends_with(" 21474836480"), "{used}");
    assert!(line("gpuwatch_mig_memory_total_bytes{").ends_with(" 42949672960"));
    assert!(line("gpuwatch_mig_memory_free_bytes{").ends_with(" 21474836480"));
    assert!(line("gpuwatch_mig_processes{").ends_with(" 1"));
    // dcgm-exporter's names: the instance's framebuffer in MiB, with the GPU's labels.
    let fb = line("DCGM_FI_DEV_FB_USED{");
    assert!(fb.contains("UUID=\"GPU-0e8f6c1a"), "{fb}");
    assert!(fb.contains("GPU_I_PROFILE=\"3g.40gb\""), "{fb}");
    assert!(fb.ends_with(" 20480"), "{fb}");
    assert!(line("DCGM_FI_DEV_FB_FREE{").ends_with(" 20480"));
    // One header per family, the GPU's sample and the instances' together.
    assert_eq!(text.matches("# TYPE DCGM_FI_DEV_FB_USED gauge").count(), 1);
    // Processes carry their instance.
    let p = line("gpuwatch_process_gpu_memory_bytes{");
    assert!(p.contains("pid=\"4000001\""), "{p}");
    assert!(p.contains("GPU_I_PROFILE=\"3g.40gb\""), "{p}");
    // No GPM here: no per-instance activity series at all (unknown, never 0).
    assert!(!text.contains("gpuwatch_mig_sm_activity_ratio{"), "{text}");
}

#[test]
fn gpm_gives_an_instance_its_sm_activity_from_the_second_sample_on() {
    // GPM on the 3g.40gb instance (Hopper+); the 2g.20gb one has no GPM metric.
    let dir = tempfile::tempdir().unwrap();
    let mut s = scenario(json!(1));
    s["gpus"][0]["mig_devices"][0]["sm_activity"] = json!([10, 35, 60]);
    write(&dir, &s);
    let lib = dir.path().join("libnvidia-ml.so.1");
    std::fs::copy(common::fake_lib(), &lib).unwrap();
    let mut source = NvmlSource::open(Some(&lib)).unwrap();
    let util = |sample: &gpuwatch::reading::Sample| -> Vec<Option<u32>> {
        sample.gpus[0]
            .mig_devices
            .iter()
            .map(|m| m.util.map(|u| u.0))
            .collect()
    };
    // Nothing to compare the first sample with: unknown, not 0.
    assert_eq!(util(&source.sample().unwrap()), [None, None]);
    assert_eq!(util(&source.sample().unwrap()), [Some(35), None]);
    assert_eq!(util(&source.sample().unwrap()), [Some(60), None]);
    drop(source);
    // The binary shows it where the panel said N/A.
    let Some(t) = common::tmux::Tmux::start("mig-gpm", 160, 40) else {
        return;
    };
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        dir.path().join("scenario.json").display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("util 60%", std::time::Duration::from_secs(20));
    let line = screen
        .lines()
        .find(|l| l.contains("3g.40gb"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(line.contains("20.0/40.0G util 60% 1 proc"), "{line}");
    let other = screen
        .lines()
        .find(|l| l.contains("2g.20gb"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(other.contains("util N/A"), "{other}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn with_gpm_the_exporter_serves_each_instances_sm_activity() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = scenario(json!(1));
    s["gpus"][0]["mig_devices"][0]["sm_activity"] = json!(35);
    let path = write(&dir, &s);
    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = serve_support::Exporter::start(cmd, &["--interval", "200ms"]);
    exporter.wait_ready();
    let line = serve_support::wait_until(
        "an SM activity sample",
        std::time::Duration::from_secs(20),
        || {
            let text = exporter.get("/metrics").body;
            text.lines()
                .find(|l| l.starts_with("gpuwatch_mig_sm_activity_ratio{"))
                .map(str::to_string)
        },
    );
    assert!(line.contains("GPU_I_ID=\"1\""), "{line}");
    assert!(line.ends_with(" 0.35"), "{line}");
    let text = exporter.get("/metrics").body;
    assert_eq!(
        text.matches("gpuwatch_mig_sm_activity_ratio{").count(),
        1,
        "the instance without GPM has none: {text}"
    );
}
