//! NVML end to end without a GPU: the real `NvmlSource` (and the real binary) against the
//! fake libnvidia-ml built from `fake-nvml/`, driven by JSON scenarios. Owns these tests and
//! their helpers only; the scenario format is documented in `fake-nvml/src/scenario.rs`.
//!
//! The fake is a workspace member, so `cargo test --workspace` builds it; `fake_lib` makes
//! sure of it for a plain `cargo test` too.

use crate::common;

use std::path::PathBuf;
use std::process::{Child, Command as StdCommand};

use assert_cmd::Command;
use gpuwatch::reading::{GpuStatus, HostProc, ProcKind, Sample};
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const H100: &str = "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a";
const T4: &str = "GPU-5b6a1f2e-3d4c-4b3e-9a5c-0e8f6c1a7d55";
/// Far above any pid_max: never a process in this PID namespace.
const FOREIGN_PID: u32 = 3_999_999;

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// A `sleep` child whose PID goes into a scenario; killed when the test ends, pass or fail.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Self {
        Sleeper(
            StdCommand::new("sleep")
                .arg("30")
                .spawn()
                .expect("spawn sleep"),
        )
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scenario on disk, plus (for in-process tests) a private copy of the fake next to it:
/// the loader treats each copy as its own library, so parallel tests share no state.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(scenario: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let text = serde_json::to_string_pretty(scenario).unwrap();
        std::fs::write(dir.path().join("scenario.json"), text).unwrap();
        Setup { dir }
    }

    fn scenario(&self) -> PathBuf {
        self.dir.path().join("scenario.json")
    }

    /// Opens the real NVML source on a private copy of the fake (scenario.json beside it).
    fn open(&self) -> NvmlSource {
        let lib = self.dir.path().join("libnvidia-ml.so.1");
        std::fs::copy(common::fake_lib(), &lib).unwrap();
        NvmlSource::open(Some(&lib)).expect("the fake NVML opens")
    }

    /// The binary with `--nvml-lib` on the shared fake and the scenario named by env var.
    fn gpuwatch(&self) -> Command {
        let mut cmd = common::clean_command();
        cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", self.scenario())
            .arg("--nvml-lib")
            .arg(common::fake_lib())
            .arg("--once");
        cmd
    }

    fn once_json(&self) -> Value {
        let out = self.gpuwatch().arg("--json").assert().success();
        serde_json::from_slice(&out.get_output().stdout).expect("valid JSON")
    }
}

fn sample(source: &mut NvmlSource) -> Sample {
    source.sample().expect("a sample")
}

fn current_user() -> String {
    uzers::get_current_username()
        .map(|u| u.to_string_lossy().into_owned())
        .unwrap_or_else(|| uzers::get_current_uid().to_string())
}

fn proc_for(doc: &Value, pid: u32) -> &Value {
    doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == json!(pid))
        .unwrap_or_else(|| panic!("pid {pid} missing from {doc:#}"))
}

#[test]
fn once_json_reports_the_scenario_in_base_units() {
    let job = Sleeper::start();
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        {"pid": job.pid(), "kind": "compute", "used_memory": 4_294_967_296u64, "sm_util": 55},
        {"pid": FOREIGN_PID, "kind": "both", "used_memory": 1_073_741_824u64},
    ]);
    s["gpus"][1]["processes"] = json!([{"pid": job.pid(), "kind": "graphics"}]);
    let doc = Setup::new(&s).once_json();

    assert_eq!(doc["host"]["driver_version"], "550.54.15");
    assert_eq!(doc["host"]["cuda_version"], "12.4");
    let g = &doc["gpus"][0];
    let expect = json!({
        "uuid": H100, "index": 0, "name": "NVIDIA H100 80GB HBM3", "status": "ok",
        "utilization_gpu": 37, "utilization_memory": 12,
        "memory_total": 85_899_345_920u64, "memory_used": 10_737_418_240u64,
        "memory_reserved": 536_870_912u64,
        "memory_free": 85_899_345_920u64 - 536_870_912 - 10_737_418_240,
        "temperature_gpu": 61, "temperature_slowdown": 87, "temperature_shutdown": 92,
        "power_draw": 312.5, "enforced_power_limit": 700.0,
        "total_energy_consumption": 123_456.789,
        "fan_speed": 45, "clocks_sm": 1755, "clocks_mem": 2619,
        "clocks_max_sm": 1980, "clocks_max_mem": 2619, "pstate": 0,
        "clocks_gr": 1740, "clocks_max_gr": 1985, "clocks_video": 1635,
        "utilization_encoder": 0, "utilization_decoder": 5,
        "pcie_link_gen_current": 5, "pcie_link_width_current": 16,
        "pcie_link_gen_max": 5, "pcie_link_width_max": 16,
        "pcie_tx_throughput": 1000 * 1024, "pcie_rx_throughput": 2000 * 1024,
        // 68 = 4 (SW power cap) | 64 (HW thermal slowdown).
        "clocks_throttle_reasons": ["sw_power_cap", "hw_thermal_slowdown"],
        "ecc_errors_uncorrected_volatile": 0, "ecc_errors_corrected_volatile": 12,
        "mig_enabled": false,
        "pci_bus_id": "00000000:17:00.0",
    });
    for (key, want) in expect.as_object().unwrap() {
        assert_eq!(&g[key], want, "gpus[0].{key}");
    }

    let mine = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"] == json!(job.pid()))
        .collect::<Vec<_>>();
    assert_eq!(mine.len(), 2, "one row per (process, GPU)");
    let on_h100 = mine.iter().find(|p| p["gpu_index"] == 0).unwrap();
    assert_eq!(on_h100["type"], "C");
    assert_eq!(on_h100["user"], json!(current_user()));
    assert_eq!(on_h100["command"], "sleep 30");
    assert_eq!(on_h100["visibility"], "visible");
    assert_eq!(on_h100["used_gpu_memory"], 4_294_967_296u64);
    assert_eq!(on_h100["utilization_sm"], 55);
    assert_eq!(on_h100["gpu_uuid"], H100);
    assert!(on_h100["host_memory"].as_u64().unwrap() > 0);
    let on_t4 = mine.iter().find(|p| p["gpu_index"] == 1).unwrap();
    assert_eq!(on_t4["type"], "G");
    assert_eq!(
        on_t4["used_gpu_memory"],
        Value::Null,
        "NVML_VALUE_NOT_AVAILABLE is null"
    );

    let foreign = proc_for(&doc, FOREIGN_PID);
    // On the host a PID NVML lists but /proc lacks has exited (issue 10): it is not
    // "another namespace" just because it is missing.
    assert_eq!(foreign["visibility"], "exited");
    assert_eq!(foreign["type"], "C+G");
    assert_eq!(foreign["used_gpu_memory"], 1_073_741_824u64);
    assert_eq!(foreign["user"], Value::Null);
    assert_eq!(
        foreign["command"],
        Value::Null,
        "unknown from this namespace"
    );
}

#[test]
fn unsupported_fields_are_null_in_json_and_na_in_text() {
    let setup = Setup::new(&fixture());
    let doc = setup.once_json();
    let t4 = &doc["gpus"][1];
    assert_eq!(t4["uuid"], T4);
    assert_eq!(t4["status"], "ok");
    for key in [
        "fan_speed",                       // "not_supported"
        "ecc_errors_uncorrected_volatile", // "no_permission"
        "ecc_errors_corrected_volatile",   // left out of the scenario
        "pcie_link_gen_max",
        "temperature_slowdown", // left out of the scenario
        "total_energy_consumption",
        "clocks_throttle_reasons",
        "mig_enabled",
        "pcie_tx_throughput",
        "clocks_gr", // left out of the scenario
        "clocks_max_gr",
        "clocks_video",
    ] {
        assert_eq!(
            t4.get(key),
            Some(&Value::Null),
            "gpus[1].{key}: present, null"
        );
    }
    // Real zeros stay zeros.
    assert_eq!(t4["utilization_gpu"], 0);
    assert_eq!(t4["memory_used"], 0);
    assert_eq!(t4["power_draw"], 9.0);

    let out = setup.gpuwatch().assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let row = text
        .lines()
        .find(|l| l.contains("Tesla T4"))
        .unwrap_or_else(|| panic!("no T4 row in:\n{text}"));
    assert!(row.contains("N/A"), "the fan column shows N/A: {row}");
    assert!(row.contains(" 0%"), "zero utilization shows as 0%: {row}");
}

#[test]
fn a_lost_gpu_is_reported_lost_while_the_others_report() {
    let mut s = fixture();
    s["gpus"][1]["lost_from"] = json!(0);
    let doc = Setup::new(&s).once_json();
    assert_eq!(doc["gpus"][0]["status"], "ok");
    assert_eq!(doc["gpus"][0]["utilization_gpu"], 37);
    let lost = &doc["gpus"][1];
    assert_eq!(lost["status"], "lost");
    assert_eq!(lost["index"], 1);
    assert_eq!(lost["utilization_gpu"], Value::Null);
}

#[test]
fn init_failure_exits_2_with_one_clear_line() {
    let mut s = fixture();
    s["init_error"] = json!("driver_not_loaded");
    let out = Setup::new(&s)
        .gpuwatch()
        .arg("--json")
        .assert()
        .code(2)
        .stdout("");
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr:?}");
    assert!(lines[0].starts_with("gpuwatch: "), "{stderr}");
    assert!(lines[0].contains("driver is not loaded"), "{stderr}");
    assert!(lines[0].contains("try: gpuwatch --demo"), "{stderr}");
}

#[test]
fn a_gpu_lost_mid_run_keeps_its_slot_and_identity_and_resumes() {
    let mut s = fixture();
    s["gpus"][0]["fields"]["util_gpu"] = json!([10, 20, 30, 40]);
    s["gpus"][1]["lost_ticks"] = json!([1, 2]);
    let setup = Setup::new(&s);
    let mut src = setup.open();

    let first = sample(&mut src);
    assert_eq!(first.gpus[1].status, GpuStatus::Ok);
    let lost = sample(&mut src);
    assert_eq!(lost.gpus.len(), 2);
    assert_eq!(lost.gpus[1].status, GpuStatus::Lost);
    assert_eq!(
        lost.gpus[1].id.0, T4,
        "the UUID seen earlier keeps its history"
    );
    assert_eq!(lost.gpus[1].name, "Tesla T4");
    assert_eq!(lost.gpus[1].temperature, None);
    // The other GPU keeps updating.
    assert_eq!(lost.gpus[0].util.map(|u| u.0), Some(20));
    let still = sample(&mut src);
    assert_eq!(still.gpus[1].status, GpuStatus::Lost);
    assert_eq!(still.gpus[0].util.map(|u| u.0), Some(30));
    let back = sample(&mut src);
    assert_eq!(back.gpus[1].status, GpuStatus::Ok);
    assert_eq!(back.gpus[1].temperature.map(|t| t.0), Some(34));
    assert_eq!(back.gpus[0].util.map(|u| u.0), Some(40));
}

#[test]
fn fixed_facts_are_read_once_and_again_when_a_lost_gpu_answers() {
    let mut s = fixture();
    let calls_dir = tempfile::tempdir().unwrap();
    let calls = calls_dir.path().join("calls.json");
    s["calls_file"] = json!(calls);
    // What the H100 answers from tick 1 on is what a reset (tick 2, lost) brings out.
    s["gpus"][0]["fields"]["max_clock_sm"] = json!([1980, 2100, 2100, 2100]);
    s["gpus"][0]["fields"]["temperature_slowdown"] = json!([87, 80, 80, 80]);
    s["gpus"][0]["lost_ticks"] = json!([2]);
    let setup = Setup::new(&s);
    let mut src = setup.open();
    let fixed = |s: &Sample| {
        let g = &s.gpus[0];
        (
            g.sm_clock_max.map(|c| c.0),
            g.temperature_slowdown.map(|t| t.0),
        )
    };
    assert_eq!(fixed(&sample(&mut src)), (Some(1980), Some(87)));
    assert_eq!(
        fixed(&sample(&mut src)),
        (Some(1980), Some(87)),
        "read once, not every sample"
    );
    assert_eq!(sample(&mut src).gpus[0].status, GpuStatus::Lost);
    assert_eq!(
        fixed(&sample(&mut src)),
        (Some(2100), Some(80)),
        "the GPU that came back is read again"
    );
    drop(src); // nvmlShutdown writes the call counts.
    let counts: Value = serde_json::from_str(&std::fs::read_to_string(&calls).unwrap()).unwrap();
    // The name too: the H100's at the start and after the loss, the T4's once.
    assert_eq!(counts["nvmlDeviceGetName"], 3, "{counts:#}");
    assert_eq!(counts["nvmlDeviceGetPciInfo_v3"], 3, "{counts:#}");
}

#[test]
fn a_gpu_whose_handle_fails_is_lost_too() {
    let mut s = fixture();
    s["gpus"][0]["lost_ticks"] = json!([1]);
    s["gpus"][0]["lost_handle"] = json!(true);
    let setup = Setup::new(&s);
    let mut src = setup.open();
    sample(&mut src);
    let lost = sample(&mut src);
    assert_eq!(lost.gpus[0].status, GpuStatus::Lost);
    assert_eq!(lost.gpus[0].id.0, H100);
    assert_eq!(lost.gpus[0].pci_bus_id.as_deref(), Some("00000000:17:00.0"));
    assert_eq!(lost.gpus[1].status, GpuStatus::Ok);
    assert_eq!(sample(&mut src).gpus[0].status, GpuStatus::Ok);
}

#[test]
fn unsupported_queries_are_asked_once_and_failing_ones_every_sample() {
    let mut s = fixture();
    let calls_dir = tempfile::tempdir().unwrap();
    let calls = calls_dir.path().join("calls.json");
    s["calls_file"] = json!(calls);
    // A transient failure on the H100: not remembered, asked again each sample.
    s["gpus"][0]["fields"]["power_usage_mw"] = json!("unknown");
    let setup = Setup::new(&s);
    let mut src = setup.open();
    for _ in 0..3 {
        let got = sample(&mut src);
        assert_eq!(got.gpus[0].power, None);
        assert_eq!(got.gpus[1].fan, None);
    }
    drop(src); // nvmlShutdown writes the call counts.
    let counts: Value = serde_json::from_str(&std::fs::read_to_string(&calls).unwrap()).unwrap();
    // Fan: the H100 answers each sample (3), the T4 said NOT_SUPPORTED once (1).
    assert_eq!(counts["nvmlDeviceGetFanSpeed_v2"], 4, "{counts:#}");
    // ECC uncorrected: H100 3, T4 NO_PERMISSION once. Corrected comes with the health
    // counters' one field-values call; where that has none (the T4) it is asked of
    // TotalEccErrors, as nvidia-smi does, which the T4 refuses once: 5 in all.
    assert_eq!(counts["nvmlDeviceGetTotalEccErrors"], 5, "{counts:#}");
    // The link's maximum is the board's and the slot's: read once per GPU, not each sample.
    assert_eq!(
        counts["nvmlDeviceGetMaxPcieLinkGeneration"], 2,
        "{counts:#}"
    );
    // The thresholds are the board's: the H100's two read once, the T4 lacks both (asked
    // once each): 2 + 2, not one call per GPU per sample.
    assert_eq!(counts["nvmlDeviceGetTemperatureThreshold"], 4, "{counts:#}");
    // Maximum clocks (SM, memory, graphics) likewise: the H100's 3 once, the T4's 3 refusals.
    assert_eq!(counts["nvmlDeviceGetMaxClockInfo"], 6, "{counts:#}");
    // The enforced power limit is not the board's: an administrator moves it any time.
    assert_eq!(counts["nvmlDeviceGetEnforcedPowerLimit"], 6, "{counts:#}");
    // Power usage fails transiently on the H100 and works on the T4: 3 + 3.
    assert_eq!(counts["nvmlDeviceGetPowerUsage"], 6, "{counts:#}");
    assert_eq!(counts["nvmlDeviceGetCount_v2"], 3, "{counts:#}");
    // The name is identity: read once per GPU, not every second.
    assert_eq!(counts["nvmlDeviceGetName"], 2, "{counts:#}");
}

#[test]
fn processes_come_and_go_with_their_utilization_and_cpu() {
    let job = Sleeper::start();
    let other = Sleeper::start();
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        // SM samples at ticks 0 and 2; none at tick 1 (NVML lists only busy processes).
        {"pid": job.pid(), "used_memory": 1024, "sm_util": [40, "not_found", 70]},
        // Exits (leaves NVML's list) at tick 1.
        {"pid": other.pid(), "used_memory": 2048, "until_tick": 1, "sm_util": 5},
    ]);
    s["gpus"][1]["processes"] = json!([{"pid": job.pid(), "used_memory": 4096}]);
    s["gpus"][1]["process_utilization_error"] = json!("not_supported");
    let setup = Setup::new(&s);
    let mut src = setup.open();

    let find = |smp: &Sample, pid: u32, gpu: &str| {
        smp.processes
            .iter()
            .find(|p| p.pid == pid && p.gpu.0 == gpu)
            .cloned()
    };
    let t0 = sample(&mut src);
    assert_eq!(t0.processes.len(), 3);
    let p = find(&t0, job.pid(), H100).unwrap();
    assert_eq!(p.kind, ProcKind::Compute);
    assert_eq!(p.sm_util.map(|u| u.0), Some(40));
    let HostProc::Visible(d) = &p.host else {
        panic!("sleep is visible: {:?}", p.host)
    };
    assert_eq!(d.cpu_percent, None, "no CPU% on first sighting");
    assert_eq!(&*d.command, "sleep 30");
    // The T4 cannot sample per-process utilization: unknown, not zero.
    assert_eq!(find(&t0, job.pid(), T4).unwrap().sm_util, None);

    let t1 = sample(&mut src);
    assert!(
        find(&t1, other.pid(), H100).is_none(),
        "the exited process is gone"
    );
    let p = find(&t1, job.pid(), H100).unwrap();
    assert_eq!(p.sm_util.map(|u| u.0), Some(0), "no new sample: idle");
    let HostProc::Visible(d) = &p.host else {
        panic!("sleep is visible: {:?}", p.host)
    };
    assert!(d.cpu_percent.is_some(), "CPU% from the second sighting on");

    let t2 = sample(&mut src);
    let p = find(&t2, job.pid(), H100).unwrap();
    assert_eq!(p.sm_util.map(|u| u.0), Some(70));
}

#[test]
fn a_bad_scenario_fails_to_open_with_the_reason() {
    let mut s = fixture();
    s["gpus"][0]["fields"]["temprature"] = json!(50);
    let out = Setup::new(&s).gpuwatch().assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("unknown field \"temprature\""), "{stderr}");
    assert!(stderr.contains("try: gpuwatch --demo"), "{stderr}");
}

#[test]
fn the_tui_in_tmux_shows_the_fake_gpus_and_their_users() {
    let Some(t) = common::tmux::Tmux::start("nvml", 120, 40) else {
        return;
    };
    let job = Sleeper::start();
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        {"pid": job.pid(), "kind": "compute", "used_memory": 4_294_967_296u64, "sm_util": 55},
        {"pid": FOREIGN_PID, "kind": "compute", "used_memory": 1_073_741_824u64},
    ]);
    let setup = Setup::new(&s);
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        setup.scenario().display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("(exited)", std::time::Duration::from_secs(15));
    let me = current_user();
    assert!(
        screen.contains("NVIDIA H100 80GB HBM3") && screen.contains("Tesla T4"),
        "{screen}"
    );
    assert!(screen.contains("driver 550.54.15"), "{screen}");
    // The sleeper's row carries this user's name, its VRAM and its command.
    let row = screen
        .lines()
        .find(|l| l.contains(&job.pid().to_string()) && l.contains("sleep"))
        .unwrap_or_else(|| panic!("no row for the sleeper:\n{screen}"));
    assert!(
        row.contains(&me) && row.contains("4.0G") && row.contains("55%"),
        "{row}"
    );
    // Owners on the H100's panel, the T4's unsupported fan as N/A, and the throttle reasons.
    assert!(screen.contains(&format!("{me} 4.0G")), "{screen}");
    assert!(screen.contains("fan N/A"), "{screen}");
    assert!(screen.contains("clocks: power cap, HW thermal"), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn signalling_your_own_process_from_the_tui_reaches_it() {
    let Some(t) = common::tmux::Tmux::start("nvml-signal", 120, 40) else {
        return;
    };
    // gpuwatch never signals root's processes, not even for root. Run as root (as CI
    // does), the target is an unprivileged user's process, which root may signal after a
    // second confirmation; run as anyone else, it is their own (one confirmation).
    let as_root = unsafe { libc::geteuid() } == 0;
    let mut job = if as_root {
        use std::os::unix::process::CommandExt;
        Sleeper(
            StdCommand::new("sleep")
                .arg("30")
                .uid(65534)
                .gid(65534)
                .spawn()
                .expect("spawn sleep as nobody"),
        )
    } else {
        Sleeper::start()
    };
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        {"pid": job.pid(), "kind": "compute", "used_memory": 4_294_967_296u64},
    ]);
    let setup = Setup::new(&s);
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        setup.scenario().display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    t.wait_for("sleep 30", std::time::Duration::from_secs(15));
    t.send(&["Down", "T"]);
    let screen = t.wait_for(
        "Send SIGTERM to this process?",
        std::time::Duration::from_secs(10),
    );
    assert!(
        screen.contains(&job.pid().to_string()) && screen.contains("4.0G"),
        "{screen}"
    );
    t.send(&["n"]);
    t.wait_for(
        "cancelled: no signal sent",
        std::time::Duration::from_secs(10),
    );
    assert!(job.0.try_wait().unwrap().is_none(), "n sends nothing");
    t.send(&["T"]);
    t.wait_for("Send SIGTERM", std::time::Duration::from_secs(10));
    t.send(&["y"]);
    if as_root {
        t.wait_for(
            "not yours. Press y AGAIN to send.",
            std::time::Duration::from_secs(10),
        );
        assert!(
            job.0.try_wait().unwrap().is_none(),
            "one y is not enough for someone else's process"
        );
        t.send(&["y"]);
    }
    t.wait_for(
        &format!("sent SIGTERM to PID {}", job.pid()),
        std::time::Duration::from_secs(10),
    );
    let status = job.0.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    t.send(&["q"]);
    t.wait_restored();
}

/// Drivers as they are in the field (issue 14): a GPU whose driver has only `_v2`, only the
/// unversioned call, or fills 32-byte `_v3` entries lists the same processes with the same
/// memory, never a shifted PID or a made-up size.
#[test]
fn every_driver_generation_lists_the_same_processes() {
    for api in ["v3", "v3_wide", "v2", "v1"] {
        let scenario = json!({
            "driver_version": "535.98",
            "gpus": [{
                "name": "NVIDIA A100-SXM4-80GB",
                "uuid": H100,
                "process_api": api,
                "fields": {"memory_total": 85_899_345_920u64, "memory_used": 12_884_901_888u64},
                "processes": [
                    {"pid": FOREIGN_PID, "used_memory": 4_294_967_296u64},
                    {"pid": FOREIGN_PID - 1, "used_memory": 8_589_934_592u64},
                    {"pid": FOREIGN_PID - 2, "used_memory": null}
                ]
            }]
        });
        let setup = Setup::new(&scenario);
        let mut source = setup.open();
        let s = sample(&mut source);
        let mut got: Vec<_> = s
            .processes
            .iter()
            .map(|p| (p.pid, p.gpu_memory.map(|b| b.0)))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                (FOREIGN_PID - 2, None),
                (FOREIGN_PID - 1, Some(8_589_934_592)),
                (FOREIGN_PID, Some(4_294_967_296)),
            ],
            "process_api {api}"
        );
    }
}
