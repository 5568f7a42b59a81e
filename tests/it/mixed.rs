//! The demo's `mixed` scenario end to end: an H100 in MIG mode, an AMD MI300X and an Intel
//! Arc after the default fleet, so MIG and other vendors show without their hardware. The
//! JSON document from the binary (vendors, MIG instances and their processes, AMD's and
//! Intel's unknowns `null`), the exporter over a real socket (the `vendor` label, unknowns
//! left out), the screens (insta, 80x24 and 200x60, and a real terminal), and a bad
//! scenario name as one line with exit 2.

use crate::common;
use crate::serve_support;

use std::time::Duration;

use common::{clean_command, config, epoch, screen};
use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{Scenario, SimClock, SimSource};
use gpuwatch::state::{Msg, State, update};
use insta::assert_snapshot;
use serde_json::Value;

/// 75 s into the mixed demo with `gpus` GPUs of the default story before the three.
fn mixed_state(gpus: usize, w: u16, h: u16) -> State {
    let source = SimSource::new(
        gpus,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: epoch() },
    )
    .with_scenario(Scenario::Mixed);
    common::state_after(source, config(), 76, w, h)
}

#[test]
fn mixed_fleet_at_80x24() {
    let text = screen(&mixed_state(1, 80, 24), 80, 24);
    // Too narrow for names: the AMD and Intel lines are tagged, NVIDIA's are not.
    let line = |gpu: &str| {
        let start = format!("\"  {gpu} ");
        text.lines()
            .find(|l| l.starts_with(&start))
            .unwrap()
            .to_string()
    };
    assert!(line("2").contains("W AMD slurm 48200 (heidi)"), "{text}");
    assert!(line("3").contains("W Intel ivan"), "{text}");
    assert!(
        !line("0").contains("AMD") && !line("1").contains("NVIDIA"),
        "{text}"
    );
    assert_snapshot!(text);
}

#[test]
fn mixed_fleet_at_200x60() {
    let text = screen(&mixed_state(1, 200, 60), 200, 60);
    for title in [
        "2 · AMD Instinct MI300X",
        "3 · Intel GPU 0x56a0",
        "1 · NVIDIA H100",
    ] {
        assert!(text.contains(title), "{title} not on\n{text}");
    }
    assert_snapshot!(text);
}

/// The AMD GPU's detail view lists every field, the ones amdgpu cannot give as `N/A`.
#[test]
fn amd_gpu_detail_at_200x60() {
    use gpuwatch::state::Action;
    let mut state = mixed_state(1, 200, 60);
    update(&mut state, Msg::Action(Action::FocusGpu(2)));
    update(&mut state, Msg::Action(Action::GpuDetail));
    assert_snapshot!(screen(&state, 200, 60));
}

fn once_json(args: &[&str]) -> Value {
    let out = clean_command()
        .args(["--demo", "--once", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn gpu_of<'a>(doc: &'a Value, vendor: &str) -> &'a Value {
    let found = doc["gpus"].as_array().unwrap().iter();
    let mut of = found.filter(|g| g["vendor"] == vendor && g["mig_enabled"] != true);
    of.next()
        .unwrap_or_else(|| panic!("no {vendor} GPU in {doc:#}"))
}

fn processes_on<'a>(doc: &'a Value, gpu: &Value) -> Vec<&'a Value> {
    let all = doc["processes"].as_array().unwrap();
    all.iter()
        .filter(|p| p["gpu_uuid"] == gpu["uuid"])
        .collect()
}

#[test]
fn once_json_has_every_vendor_mig_instances_with_their_processes_and_nulls_for_unknowns() {
    let doc = once_json(&["--demo-scenario", "mixed"]);
    let gpus = doc["gpus"].as_array().unwrap();
    let vendors: Vec<&str> = gpus.iter().map(|g| g["vendor"].as_str().unwrap()).collect();
    // The default fleet's eight, the MIG H100, then AMD and Intel, numbered in that order.
    assert_eq!(vendors[..9], ["nvidia"; 9]);
    assert_eq!(vendors[9..], ["amd", "intel"]);
    let indices: Vec<u64> = gpus.iter().map(|g| g["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, (0..11).collect::<Vec<u64>>());

    let mig = gpus.iter().find(|g| g["mig_enabled"] == true).unwrap();
    assert_eq!(mig["index"], 8);
    assert_eq!(
        mig["utilization_gpu"],
        Value::Null,
        "NVML gives none in MIG mode"
    );
    assert!(mig["power_draw"].as_f64().unwrap() > 100.0);
    assert!(mig["temperature_gpu"].as_u64().is_some());
    let instances = mig["mig_devices"].as_array().unwrap();
    let profiles: Vec<&str> = instances
        .iter()
        .map(|m| m["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["3g.40gb", "2g.20gb", "1g.10gb"]);
    let on_mig = processes_on(&doc, mig);
    let mut nearly_full = 0;
    for m in instances {
        assert!(m["uuid"].as_str().unwrap().starts_with("MIG-"), "{m}");
        assert_eq!(m["utilization_gpu"], Value::Null, "never 0: {m}");
        let ratio = m["memory_used"].as_f64().unwrap() / m["memory_total"].as_f64().unwrap();
        assert!(ratio < 1.0, "{m}");
        nearly_full += usize::from(ratio >= 0.95);
        let pids = m["pids"].as_array().unwrap();
        assert_eq!(pids.len(), 1, "{m}");
        // Each PID is one of the GPU's own processes, with its VRAM and owner.
        let p = on_mig
            .iter()
            .find(|p| p["pid"] == pids[0])
            .expect("a process of the GPU");
        assert!(p["used_gpu_memory"].as_u64().unwrap() > 0);
        assert!(p["user"].as_str().is_some_and(|u| !u.is_empty()));
        assert_eq!(p["utilization_sm"], Value::Null);
        let pinned = &p["environment"]["CUDA_VISIBLE_DEVICES"];
        assert_eq!(pinned, &m["uuid"], "selected by its MIG UUID: {p}");
    }
    assert_eq!(nearly_full, 1, "one instance close to full");
    assert_eq!(on_mig.len(), 3);

    let amd = gpu_of(&doc, "amd");
    assert_eq!(amd["name"], "AMD Instinct MI300X");
    for unknown in [
        "utilization_encoder",
        "utilization_decoder",
        "pstate",
        "clocks_throttle_reasons",
        "ecc_errors_uncorrected_volatile",
        "mig_enabled",
        "pcie_tx_throughput",
        "pcie_rx_throughput",
    ] {
        assert_eq!(amd[unknown], Value::Null, "{unknown} in {amd:#}");
    }
    for known in [
        "utilization_gpu",
        "memory_used",
        "memory_total",
        "temperature_gpu",
        "power_draw",
        "clocks_sm",
        "pcie_link_gen_current",
    ] {
        assert!(amd[known].is_number(), "{known} in {amd:#}");
    }
    assert_eq!(amd["mig_devices"], serde_json::json!([]));
    let on_amd = processes_on(&doc, amd);
    assert_eq!(on_amd.len(), 2);
    for p in on_amd {
        assert!(p["used_gpu_memory"].as_u64().unwrap() > 1 << 30, "{p}");
        assert!(p["utilization_sm"].is_number(), "engine % from fdinfo: {p}");
        assert!(p["user"].is_string());
    }

    let intel = gpu_of(&doc, "intel");
    for unknown in [
        "utilization_gpu",
        "memory_used",
        "memory_total",
        "fan_speed",
        "pstate",
    ] {
        assert_eq!(intel[unknown], Value::Null, "{unknown} in {intel:#}");
    }
    assert!(intel["power_draw"].is_number() && intel["temperature_gpu"].is_number());
    let on_intel = processes_on(&doc, intel);
    assert_eq!(on_intel.len(), 2);
    assert!(
        on_intel
            .iter()
            .all(|p| p["used_gpu_memory"].as_u64().unwrap() > 0)
    );
}

#[test]
fn the_default_scenario_is_the_nvidia_server_it_always_was() {
    for doc in [once_json(&[]), once_json(&["--demo-scenario", "default"])] {
        let gpus = doc["gpus"].as_array().unwrap();
        assert_eq!(gpus.len(), 8);
        assert!(gpus.iter().all(|g| g["vendor"] == "nvidia"));
        assert!(gpus.iter().all(|g| g["mig_enabled"] == false));
    }
}

#[test]
fn a_bad_scenario_is_one_line_naming_where_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, "compact = true\ndemo_scenario = \"mixd\"\n").unwrap();
    let flag = clean_command()
        .args(["--demo", "--once", "--demo-scenario", "mixd"])
        .output()
        .unwrap();
    let env = clean_command()
        .args(["--demo", "--once"])
        .env("GPUWATCH_DEMO_SCENARIO", "mixd")
        .output()
        .unwrap();
    let from_file = clean_command()
        .args(["--demo", "--once", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let why = "unknown demo scenario; use default or mixed (got \"mixd\")\n";
    for (out, at) in [
        (flag, "--demo-scenario".to_string()),
        (env, "GPUWATCH_DEMO_SCENARIO".to_string()),
        (from_file, format!("{}:2: demo_scenario", file.display())),
    ] {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("gpuwatch: {at}: {why}")
        );
    }
    // The file's key is a real setting: a good value is taken.
    std::fs::write(&file, "demo_scenario = \"mixed\"\n").unwrap();
    let out = clean_command()
        .args(["--demo", "--once", "--json", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 11);
}

#[test]
fn the_exporter_labels_each_gpu_with_its_vendor_and_leaves_unknowns_out() {
    let exporter = serve_support::Exporter::demo(&["--demo-scenario", "mixed"]);
    exporter.wait_ready();
    let r = exporter.get("/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    let text = &r.body;
    let lines = |name: &str, gpu: &str| -> Vec<&str> {
        let start = format!("{name}{{gpu=\"{gpu}\",");
        text.lines().filter(|l| l.starts_with(&start)).collect()
    };
    let vendor_of = |gpu: u32| {
        let info = lines("gpuwatch_gpu_info", &gpu.to_string());
        assert_eq!(info.len(), 1, "GPU {gpu} in\n{text}");
        let (_, rest) = info[0].split_once("vendor=\"").expect("a vendor label");
        rest.split('"').next().unwrap().to_string()
    };
    let vendors: Vec<String> = (0..11).map(vendor_of).collect();
    assert_eq!(vendors[..9], vec!["nvidia".to_string(); 9]);
    assert_eq!(vendors[9..], ["amd", "intel"]);
    // Every per-GPU series of the AMD GPU carries it, not just the info series.
    let amd: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpuwatch_gpu_") && l.contains("{gpu=\"9\","))
        .collect();
    assert!(
        amd.len() > 8 && amd.iter().all(|l| l.contains(",vendor=\"amd\"")),
        "{amd:#?}"
    );
    // What the sources cannot give is absent, not 0: utilisation of the MIG GPU and the
    // Intel one, the AMD GPU's P-state and encoder.
    assert!(
        lines("gpuwatch_gpu_utilization_ratio", "8").is_empty(),
        "{text}"
    );
    assert!(lines("gpuwatch_gpu_utilization_ratio", "10").is_empty());
    assert_eq!(lines("gpuwatch_gpu_utilization_ratio", "9").len(), 1);
    assert!(lines("gpuwatch_gpu_performance_state", "9").is_empty());
    assert!(lines("gpuwatch_gpu_encoder_utilization_ratio", "9").is_empty());
    assert_eq!(lines("gpuwatch_gpu_performance_state", "0").len(), 1);
    let mig = lines("gpuwatch_gpu_mig_enabled", "8");
    assert!(mig.len() == 1 && mig[0].ends_with(" 1"), "{mig:?}");
}

#[test]
fn a_real_terminal_shows_the_mig_amd_and_intel_gpus() {
    let Some(t) = common::tmux::Tmux::start("mixed", 200, 60) else {
        return;
    };
    t.launch_demo("--demo-gpus 1 --demo-scenario mixed");
    let screen = t.wait_for("AMD Instinct MI300X", Duration::from_secs(10));
    for needle in ["Intel GPU 0x56a0", "MIG on", "2g.20gb", "heidi", "ivan"] {
        assert!(screen.contains(needle), "{needle} not on\n{screen}");
    }
    t.send(&["c"]);
    // Compact lines at 200 columns name each GPU (under a NAME title), the vendor first.
    let screen = t.wait_for("NAME", Duration::from_secs(10));
    assert!(!screen.contains('╭'), "still panels:\n{screen}");
    for needle in ["AMD Instinct", "Intel GPU"] {
        assert!(screen.contains(needle), "{needle} not on\n{screen}");
    }
    t.send(&["q"]);
    t.wait_restored();
    t.exit_status_is(0);
}

/// The default story's GPUs read the same whether or not the mixed scenario's follow them
/// (its random draws come after theirs).
#[test]
fn the_extra_gpus_change_nothing_of_the_default_story() {
    let sim = |scenario| {
        SimSource::new(
            3,
            7,
            Duration::from_secs(1),
            SimClock::Virtual { start: epoch() },
        )
        .with_scenario(scenario)
    };
    let (mut plain, mut mixed) = (sim(Scenario::Default), sim(Scenario::Mixed));
    for _ in 0..20 {
        let (a, b) = (plain.sample().unwrap(), mixed.sample().unwrap());
        assert_eq!(b.gpus.len(), 6);
        assert_eq!(a.gpus[..], b.gpus[..3]);
        let theirs: Vec<_> = b
            .processes
            .iter()
            .filter(|p| p.pid < 7000)
            .cloned()
            .collect();
        assert_eq!(a.processes, theirs);
    }
}

/// "Instant and truthful" §5: in the per-user view a GPU% nobody could measure (the MIG
/// instances' processes) is `N/A`, or `N%+` beside known ones, never summed as 0 %.
#[test]
fn the_per_user_view_never_counts_an_unknown_gpu_percent_as_zero() {
    use gpuwatch::state::Action;
    let mut state = mixed_state(1, 120, 40);
    update(&mut state, Msg::Action(Action::ToggleUsers));
    let rows = state.model.user_rows();
    let text = screen(&state, 120, 40);
    let line_of = |job: &str| text.lines().find(|l| l.contains(job)).unwrap().to_string();
    // A job whose processes all run on MIG instances: nothing known.
    let unknown = rows
        .iter()
        .find(|u| u.job.is_some() && u.gpu_util.unknown == u.processes)
        .expect("a job on MIG instances only");
    assert_eq!(unknown.gpu_util.known, 0);
    let line = line_of(unknown.job.as_deref().unwrap());
    assert!(line.contains("N/A") && !line.contains(" 0%"), "{line}");
    // A user with a MIG process beside a measured one: at least the known sum.
    let partial = rows
        .iter()
        .find(|u| u.job.is_none() && u.gpu_util.unknown > 0 && u.gpu_util.unknown < u.processes)
        .expect("a user with a MIG process beside a measured one");
    let line = text
        .lines()
        .find(|l| l.trim_start_matches('"').starts_with(&partial.user))
        .unwrap();
    assert!(
        line.contains(&format!("{}%+", partial.gpu_util.known)),
        "{line}"
    );
}
