//! GPU health events end to end through the real `NvmlSource` on the fake NVML: XID errors
//! delivered by NVML event sets and the health counters (memory temperature, PCIe replays,
//! corrected ECC, retired pages, remapped rows) read by field values reach the readings,
//! the warnings, the `--once` text and JSON, the exporter (native and dcgm names) and the
//! TUI in a real terminal.

use crate::common;
use crate::serve_support;

use std::path::PathBuf;
use std::time::Duration;

use gpuwatch::reading::Sample;
use gpuwatch::reading::health::{RemappedRows, RetiredPages};
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use gpuwatch::units::Celsius;
use serde_json::{Value, json};
use serve_support::{Exporter, gpuwatch, on_path};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/gpuwatch-snapshot.schema.json"
);

/// The two-GPU fixture with health: the H100 delivers XID events (79 at once, then 13 and
/// 31 at tick 2), has a remapping pending and its PCIe replays grow; the T4 delivers no
/// events and has a page retirement pending.
fn scenario() -> Value {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let h100 = &mut s["gpus"][0];
    for (k, v) in [
        ("supported_event_types", json!(8)),
        ("memory_temperature", json!(71)),
        ("pcie_replay_counter", json!([0, 0, 5, 5])),
        ("ecc_corrected_volatile", json!(3)),
        ("remapped_rows_correctable", json!(1)),
        ("remapped_rows_uncorrectable", json!(2)),
        ("remapped_rows_pending", json!(1)),
        ("remapped_rows_failed", json!(0)),
    ] {
        h100["fields"][k] = v;
    }
    h100["xid_events"] = json!([
        {"tick": 0, "xid": 79},
        {"tick": 2, "xid": 13},
        {"tick": 2, "xid": 31},
    ]);
    let t4 = &mut s["gpus"][1];
    for (k, v) in [
        ("retired_pages_sbe", json!(0)),
        ("retired_pages_dbe", json!(1)),
        ("retired_pages_pending", json!(1)),
        ("memory_temperature", json!("not_supported")),
    ] {
        t4["fields"][k] = v;
    }
    s
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(s: &Value) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("scenario.json"),
            serde_json::to_string_pretty(s).unwrap(),
        )
        .unwrap();
        Setup { dir }
    }

    fn scenario(&self) -> PathBuf {
        self.dir.path().join("scenario.json")
    }

    /// The real source on a private copy of the fake (its scenario.json beside it).
    fn open(&self) -> NvmlSource {
        let lib = self.dir.path().join("libnvidia-ml.so.1");
        std::fs::copy(common::fake_lib(), &lib).unwrap();
        NvmlSource::open(Some(&lib)).expect("the fake NVML opens")
    }

    fn command(&self) -> assert_cmd::Command {
        let mut cmd = common::clean_command();
        cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", self.scenario())
            .arg("--nvml-lib")
            .arg(common::fake_lib());
        cmd
    }
}

fn sample(src: &mut NvmlSource) -> Sample {
    src.sample().expect("the fake answers")
}

#[test]
fn xid_events_are_counted_per_gpu_in_the_sample_they_arrive() {
    let setup = Setup::new(&scenario());
    let mut src = setup.open();
    let xids: Vec<_> = (0..4)
        .map(|_| {
            let s = sample(&mut src);
            (s.gpus[0].health.xid, s.gpus[1].health.xid)
        })
        .collect();
    let h100 = |i: usize| xids[i].0.map(|t| (t.count, t.last.map(|x| x.code)));
    assert_eq!(
        h100(0),
        Some((1, Some(79))),
        "an XID before the first sample"
    );
    assert_eq!(h100(1), Some((1, Some(79))), "delivered once");
    assert_eq!(
        h100(2),
        Some((3, Some(31))),
        "two at tick 2; the latest named"
    );
    assert_eq!(h100(3), Some((3, Some(31))));
    assert!(
        xids.iter().all(|x| x.1.is_none()),
        "the T4 delivers no XID events: unknown, not zero"
    );
}

#[test]
fn health_counters_are_read_where_the_device_has_them() {
    let setup = Setup::new(&scenario());
    let mut src = setup.open();
    let replays: Vec<Option<u64>> = (0..3)
        .map(|_| sample(&mut src).gpus[0].health.pcie_replays)
        .collect();
    assert_eq!(replays, [Some(0), Some(0), Some(5)]);
    let s = sample(&mut src);
    let (h100, t4) = (&s.gpus[0].health, &s.gpus[1].health);
    assert_eq!(h100.memory_temperature, Some(Celsius(71)));
    assert_eq!(h100.ecc_corrected, Some(3));
    assert_eq!(
        h100.remapped_rows,
        Some(RemappedRows {
            correctable: 1,
            uncorrectable: 2,
            pending: true,
            failed: false
        })
    );
    assert_eq!(h100.retired_pages, None, "no retired-page fields");
    assert_eq!(t4.memory_temperature, None);
    assert_eq!(
        t4.retired_pages,
        Some(RetiredPages {
            single_bit: 0,
            double_bit: 1,
            pending: true
        })
    );
    assert_eq!(t4.remapped_rows, None);
}

#[test]
fn growing_pcie_replays_become_a_warning_through_the_pipeline() {
    use gpuwatch::model::warnings::WarningKind;
    use gpuwatch::state::{Msg, State, update};
    let setup = Setup::new(&scenario());
    let mut src = setup.open();
    let mut state = State::new(common::config());
    let replays: Vec<Option<(u64, u64)>> = (0..3)
        .map(|_| {
            update(&mut state, Msg::Sample(Box::new(sample(&mut src))));
            state.model.warnings().iter().find_map(|w| match w.kind {
                WarningKind::PcieReplays { total, growth } => Some((total, growth)),
                _ => None,
            })
        })
        .collect();
    assert_eq!(replays, [None, None, Some((5, 5))], "0, 0, then 5");
}

#[test]
fn once_text_shows_the_xid_and_remapped_rows_warnings() {
    let setup = Setup::new(&scenario());
    let out = setup.command().arg("--once").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} line:\n{text}"))
            .to_string()
    };
    let xid = line("XID 79");
    assert!(xid.contains("CRIT"), "{xid}");
    assert!(
        xid.contains("GPU 0 XID 79 (GPU has fallen off the bus)")
            && xid.contains("1 XID error since gpuwatch started"),
        "{xid}"
    );
    let remap = line("row remapping pending");
    assert!(remap.contains("WARN") && remap.contains("GPU 0"), "{remap}");
    let retire = line("page retirement pending");
    assert!(retire.contains("GPU 1"), "{retire}");
    // The readings too, with N/A where the device has none.
    let h100 = line("  0  mem 71C");
    assert!(
        h100.contains("PCIe replays 0")
            && h100.contains("ECC corrected 3")
            && h100.contains("remapped rows 2 unc/1 cor (pending)")
            && h100.contains("XID 1 (last 79)"),
        "{h100}"
    );
    let t4 = line("  1  mem N/A");
    assert!(t4.contains("XID N/A") && t4.contains("retired pages 1 dbe/0 sbe (pending)"));
}

#[test]
fn once_json_carries_the_health_readings_and_warnings_and_fits_the_schema() {
    let setup = Setup::new(&scenario());
    let out = setup
        .command()
        .args(["--once", "--json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["schema_minor"], gpuwatch::wire::SCHEMA_MINOR);
    let (h100, t4) = (&doc["gpus"][0], &doc["gpus"][1]);
    assert_eq!(h100["temperature_memory"], 71);
    assert_eq!(h100["pcie_replay_counter"], 0);
    assert_eq!(h100["ecc_errors_corrected_volatile"], 3);
    assert_eq!(
        h100["remapped_rows"],
        json!({"correctable": 1, "uncorrectable": 2, "pending": true, "failure": false})
    );
    assert_eq!(h100["xid_errors"]["count"], 1);
    assert_eq!(h100["xid_errors"]["last"], 79);
    assert!(h100["xid_errors"]["last_time"].as_f64().unwrap() > 1.7e9);
    assert_eq!(h100["retired_pages"], Value::Null);
    assert_eq!(t4["temperature_memory"], Value::Null);
    assert_eq!(t4["xid_errors"], Value::Null);
    assert_eq!(t4["retired_pages"]["pending"], true);
    let kinds: Vec<(&str, &str, u64)> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["kind"].as_str().unwrap(),
                w["severity"].as_str().unwrap(),
                w["gpu_index"].as_u64().unwrap(),
            )
        })
        .collect();
    for want in [
        ("xid", "critical", 0),
        ("remapped_rows", "warning", 0),
        ("retired_pages", "warning", 1),
    ] {
        assert!(kinds.contains(&want), "{want:?} not in {kinds:?}");
    }
    let xid = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "xid")
        .unwrap();
    assert_eq!(xid["xid"], 79);
    assert_eq!(xid["count"], 1);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(SCHEMA).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    for key in h100.as_object().unwrap().keys() {
        if key != "unattributed_memory" {
            assert!(
                schema["$defs"]["gpu"]["properties"].get(key).is_some(),
                "gpus.{key} is not in the schema"
            );
        }
    }
    for key in xid.as_object().unwrap().keys() {
        assert!(
            schema["$defs"]["warning"]["properties"].get(key).is_some(),
            "warnings.{key} is not in the schema"
        );
    }
}

/// The sample lines of `name` on GPU `gpu`.
fn series<'a>(text: &'a str, name: &str, gpu: &str) -> Vec<&'a str> {
    let label = format!("gpu=\"{gpu}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label))
        .collect()
}

fn value(line: &str) -> f64 {
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn the_exporter_has_the_health_series_native_and_dcgm_and_promtool_finds_them_clean() {
    let setup = Setup::new(&scenario());
    let mut cmd = gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", setup.scenario())
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = Exporter::start(cmd, &["--dcgm-compat"]);
    exporter.wait_ready();
    let text = exporter.get("/metrics").body;
    let one = |name: &str, gpu: &str| -> Option<f64> {
        let lines = series(&text, name, gpu);
        assert!(lines.len() <= 1, "{lines:?}");
        lines.first().map(|l| value(l))
    };
    assert_eq!(one("gpuwatch_gpu_xid_errors_total", "0"), Some(1.0));
    assert_eq!(one("gpuwatch_gpu_last_xid", "0"), Some(79.0));
    assert_eq!(
        one("gpuwatch_gpu_xid_errors_total", "1"),
        None,
        "no events: absent"
    );
    assert_eq!(
        one("gpuwatch_gpu_memory_temperature_celsius", "0"),
        Some(71.0)
    );
    assert_eq!(one("gpuwatch_gpu_memory_temperature_celsius", "1"), None);
    assert_eq!(one("gpuwatch_gpu_remapped_rows_pending", "0"), Some(1.0));
    assert_eq!(
        one("gpuwatch_gpu_remapped_rows_uncorrectable", "0"),
        Some(2.0)
    );
    assert_eq!(one("gpuwatch_gpu_retired_pages_pending", "1"), Some(1.0));
    assert_eq!(one("gpuwatch_gpu_pcie_replays_total", "0"), Some(0.0));
    assert_eq!(
        one("gpuwatch_gpu_ecc_corrected_errors_total", "0"),
        Some(3.0)
    );
    assert_eq!(one("DCGM_FI_DEV_XID_ERRORS", "0"), Some(79.0));
    assert_eq!(one("DCGM_FI_DEV_MEMORY_TEMP", "0"), Some(71.0));
    assert_eq!(
        one("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "0"),
        Some(2.0)
    );
    assert_eq!(one("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "0"), Some(1.0));
    assert_eq!(one("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0"), Some(0.0));
    assert_eq!(one("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0"), Some(0.0));
    assert!(
        series(&text, "DCGM_FI_DEV_GPU_TEMP", "0")[0]
            .contains("DCGM_FI_DRIVER_VERSION=\"550.54.15\""),
        "{text}"
    );
    let warning = |kind: &str, gpu: &str| {
        series(&text, "gpuwatch_gpu_warnings", gpu)
            .into_iter()
            .any(|l| l.contains(&format!("kind=\"{kind}\"")))
    };
    assert!(
        warning("xid", "0") && warning("remapped_rows", "0"),
        "{text}"
    );
    assert!(warning("retired_pages", "1"), "{text}");
    assert!(
        series(&text, "gpuwatch_gpu_owners_info", "1")[0].contains("owners=\"\""),
        "{text}"
    );
    if !on_path("promtool") {
        common::skip("promtool is not installed: `promtool check metrics` not run");
        return;
    }
    let native: String = text
        .lines()
        .filter(|l| !l.contains("DCGM_FI_"))
        .map(|l| format!("{l}\n"))
        .collect();
    if let Some(problems) = serve_support::promtool_check_metrics(&native) {
        assert!(problems.is_empty(), "{problems:#?}");
    }
}

#[test]
fn the_tui_in_tmux_shows_the_xid_in_the_warnings_bar() {
    let Some(t) = common::tmux::Tmux::start("health", 160, 40) else {
        return;
    };
    let setup = Setup::new(&scenario());
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        setup.scenario().display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("XID 79", Duration::from_secs(20));
    assert!(
        screen.contains("GPU 0 XID 79 (GPU has fallen off the bus)"),
        "{screen}"
    );
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn xid_and_remapped_rows_from_the_fake_reach_the_alert_webhook() {
    let setup = Setup::new(&scenario());
    let receiver = serve_support::webhook::Receiver::start(serve_support::webhook::Answer::Ok);
    let url = format!("http://{}/hook", receiver.addr);
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GPUWATCH_FAKE_NVML_SCENARIO", setup.scenario())
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["--interval", "200ms", "--alert-webhook", &url])
        // A pending remapping is a warning: sent when asked for, after its `for` time.
        .args([
            "--alert-on",
            "xid,remapped_rows=warning",
            "--alert-for",
            "1s",
        ])
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut kinds = std::collections::BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline
        && !(kinds.contains_key("xid") && kinds.contains_key("remapped_rows"))
    {
        if let Some((_, body)) = receiver.next(Duration::from_secs(1))
            && body["status"] == "firing"
        {
            kinds.insert(body["kind"].as_str().unwrap_or_default().to_string(), body);
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let xid = kinds
        .get("xid")
        .unwrap_or_else(|| panic!("no XID alert: {kinds:#?}"));
    assert_eq!(xid["severity"], "critical", "{xid}");
    assert_eq!(xid["gpu_index"], 0, "{xid}");
    assert_eq!(xid["warning"]["xid"], 79, "{xid}");
    assert!(xid["message"].as_str().unwrap().contains("XID 79"), "{xid}");
    let rows = kinds
        .get("remapped_rows")
        .unwrap_or_else(|| panic!("no remapped-rows alert: {kinds:#?}"));
    assert_eq!(rows["gpu_index"], 0, "{rows}");
}
