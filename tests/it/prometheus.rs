//! A real Prometheus scrapes `gpuwatch serve --demo` on loopback, and PromQL through its
//! HTTP API sees the fleet: the exporter works with the real consumer, not just a parser.
//! Also the deployment side: the ServiceMonitor's scrape keeps workload labels, and the
//! shipped alert rules evaluate on real series.
//! Skipped, with a message, only when `prometheus` is not installed (CI installs it).

use crate::common;
use crate::serve_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

use serde_json::Value;
use serve_support::prometheus::{Prometheus, SCRAPED};
use serve_support::{Exporter, gpuwatch, on_path, request, wait_until};

#[test]
fn prometheus_scrapes_the_exporter_and_promql_sees_the_fleet() {
    if !on_path("prometheus") {
        common::skip("prometheus is not installed: the real-Prometheus scrape test not run");
        return;
    }
    let exporter = Exporter::demo(&["--dcgm-compat"]);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(dir.path(), &exporter.addr.to_string());
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();

    let gpus = wait_until("8 GPUs in Prometheus", SCRAPED, || {
        let rows = prometheus.query("count(gpuwatch_gpu_info)")?;
        rows.first().map(|r| r.1).filter(|n| *n == 8.0)
    });
    assert_eq!(gpus, 8.0, "{}", log());

    let total = prometheus.single_value(r#"gpuwatch_gpu_memory_total_bytes{gpu="0"}"#);
    let gib = total / f64::from(1u32 << 30);
    assert!((79.0..80.0).contains(&gib), "{total} bytes is {gib} GiB");
    let limit = prometheus.single_value(r#"gpuwatch_gpu_power_limit_watts{gpu="0"}"#);
    assert_eq!(limit, 700.0);
    // The dcgm-exporter names are ingested too, in their own units (whole MiB). One query,
    // so both series come from the same scrape.
    let mib_gap = prometheus.single_value(
        r#"DCGM_FI_DEV_FB_USED{gpu="0"} - on(gpu) floor(gpuwatch_gpu_memory_used_bytes{gpu="0"} / 1048576)"#,
    );
    assert_eq!(mib_gap, 0.0);
    assert_eq!(prometheus.single_value("up"), 1.0);
    // Prometheus asks for OpenMetrics first, so what it ingested was the OpenMetrics text
    // (the exporter counts the scrapes it answered in each format).
    let om = wait_until("an OpenMetrics scrape counted", SCRAPED, || {
        let rows = prometheus.query(r#"gpuwatch_exporter_scrapes_total{format="openmetrics"}"#)?;
        rows.first().map(|r| r.1).filter(|n| *n > 0.0)
    });
    assert!(om > 0.0);
}

/// What dcgm-exporter serves for two GPUs of a Kubernetes node (its names, units and labels,
/// trimmed to a few of its default counters).
fn dcgm_text() -> String {
    let mut out = String::new();
    let families = [
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %).",
            [87.0, 0.0],
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            "gauge",
            "Framebuffer memory used (in MiB).",
            [30_000.0, 0.0],
        ),
        (
            "DCGM_FI_DEV_FB_FREE",
            "gauge",
            "Framebuffer memory free (in MiB).",
            [10_960.0, 40_960.0],
        ),
        (
            "DCGM_FI_DEV_GPU_TEMP",
            "gauge",
            "GPU temperature (in C).",
            [66.0, 31.0],
        ),
        (
            "DCGM_FI_DEV_POWER_USAGE",
            "gauge",
            "Power draw (in W).",
            [301.5, 52.25],
        ),
        (
            "DCGM_FI_DEV_SM_CLOCK",
            "gauge",
            "SM clock frequency (in MHz).",
            [1410.0, 210.0],
        ),
    ];
    for (name, kind, help, values) in families {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (gpu, value) in values.iter().enumerate() {
            let pod = if gpu == 0 {
                r#",container="main",namespace="ml",pod="trainer-0""#
            } else {
                ""
            };
            out.push_str(&format!(
                "{name}{{gpu=\"{gpu}\",UUID=\"GPU-dcgm-{gpu}\",pci_bus_id=\"00000000:0{gpu}:00.0\",\
                 device=\"nvidia{gpu}\",modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"dcgm-node\",\
                 DCGM_FI_DRIVER_VERSION=\"550.54.15\"{pod}}} {value}\n"
            ));
        }
    }
    out
}

/// A stand-in dcgm-exporter on 127.0.0.1: every request gets `dcgm_text()`.
fn dcgm_stand_in() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let body = dcgm_text();
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
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    address
}

/// Issue 13: a real Prometheus scrapes two `gpuwatch serve --demo` (4 and 2 GPUs) and a
/// stand-in dcgm-exporter (2 GPUs); `gpuwatch --prometheus URL --once --json` shows all 8
/// GPUs with their hosts and readings, nothing invented, and charts their history.
#[test]
fn the_fleet_a_real_prometheus_scrapes_is_drawn_from_it() {
    if !on_path("prometheus") {
        common::skip("prometheus is not installed: the --prometheus test not run");
        return;
    }
    let a = Exporter::demo(&["--demo-gpus", "4", "--seed", "1"]);
    let b = Exporter::demo(&["--demo-gpus", "2", "--seed", "2"]);
    let dcgm = dcgm_stand_in();
    let dir = tempfile::tempdir().unwrap();
    let (ta, tb) = (a.addr.to_string(), b.addr.to_string());
    let prometheus = Prometheus::start_many(dir.path(), &[&ta, &tb, &dcgm]);
    let url = format!("http://127.0.0.1:{}", prometheus.port);
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    // Three scrapes in, so the range query has history to give.
    wait_until("every target scraped 3 times", SCRAPED, || {
        let rows = prometheus.query("count(count_over_time(up[1m]) >= 3)")?;
        rows.first().map(|r| r.1).filter(|n| *n == 3.0)
    });
    let once = |extra: &[&str]| {
        let out = gpuwatch()
            .args(["--prometheus", &url, "--history", "30s", "--once", "--json"])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}\n{}", log());
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let doc = once(&[]);
    let gpus = doc["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 8, "{doc:#}");
    let on = |host: &str| gpus.iter().filter(|g| g["host"] == host).count();
    assert_eq!((on(&ta), on(&tb), on("dcgm-node")), (4, 2, 2), "{doc:#}");
    let d0 = gpus.iter().find(|g| g["uuid"] == "GPU-dcgm-0").unwrap();
    assert_eq!(d0["name"], "NVIDIA A100-SXM4-40GB");
    assert_eq!(d0["utilization_gpu"], 87);
    assert_eq!(d0["memory_used"], 30_000u64 << 20);
    assert_eq!(d0["memory_total"], 40_960u64 << 20, "used + free");
    assert_eq!(d0["temperature_gpu"], 66);
    assert_eq!(d0["power_draw"], 301.5);
    assert_eq!(
        d0["fan_speed"],
        Value::Null,
        "no fan series: unknown, not 0"
    );
    let native = gpus.iter().find(|g| g["host"] == ta.as_str()).unwrap();
    assert!(
        native["memory_total"].as_u64().unwrap() > 70 << 30,
        "{native:#}"
    );
    assert!(
        native["enforced_power_limit"].as_f64().is_some(),
        "{native:#}"
    );
    assert_eq!(
        doc["processes"].as_array().unwrap().len(),
        0,
        "none invented"
    );
    once_text_names_hosts_and_says_processes_are_unknown(&url, &ta);
    query_csv_names_each_gpus_host(&url, &ta);
    // --selector narrows: no GPU is in cluster b.
    let out = gpuwatch()
        .args([
            "--prometheus",
            &url,
            "--selector",
            r#"{cluster="b"}"#,
            "--once",
            "--json",
        ])
        .output()
        .unwrap();
    let narrowed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        narrowed["gpus"].as_array().unwrap().len(),
        0,
        "{narrowed:#}"
    );
    assert_eq!(
        once(&["--selector", r#"{cluster="a"}"#])["gpus"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
    the_tui_shows_them(&url);
}

/// Issue 24: nvidia-smi's query interface works over a fleet behind Prometheus too, with
/// the same field names and a host column first (GPU indices repeat across hosts).
fn query_csv_names_each_gpus_host(url: &str, host: &str) {
    let out = gpuwatch()
        .args([
            "--prometheus",
            url,
            "--query-gpu=index,uuid,memory.used,memory.total,utilization.gpu",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(", ").collect()).collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(
        rows.iter().all(|r| r.len() == 6),
        "a host column first: {text}"
    );
    let dcgm = rows
        .iter()
        .find(|r| r[2] == "GPU-dcgm-0")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(dcgm[0], "dcgm-node");
    assert_eq!(&dcgm[3..], ["30000", "40960", "87"], "MiB, MiB, %: {text}");
    assert_eq!(rows.iter().filter(|r| r[0] == host).count(), 4, "{text}");
}

/// Issue 20: `--once` text over several hosts names each GPU's host (not three GPU `0`s)
/// and says the processes are unknown, not `(no GPU processes)`: the metrics carry none.
fn once_text_names_hosts_and_says_processes_are_unknown(url: &str, host: &str) {
    let out = gpuwatch()
        .args(["--prometheus", url, "--once"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("processes unknown"), "{text}");
    assert!(!text.contains("no GPU processes"), "{text}");
    let starts = |label: &str| {
        text.lines()
            .any(|l| l.trim_start().starts_with(&format!("{label}  NVIDIA")))
    };
    assert!(starts(&format!("{host}:3")), "{text}");
    assert!(starts("dcgm-node:1"), "{text}");
    let bare = text.lines().filter(|l| l.starts_with("  0  ")).count();
    assert_eq!(bare, 0, "a GPU 0 without its host:\n{text}");
}

/// The TUI over the same Prometheus: every host's GPUs, with history charts from the range
/// queries, and the notice that process rows are unknown.
fn the_tui_shows_them(url: &str) {
    let Some(t) = common::tmux::Tmux::start("prometheus", 160, 60) else {
        return;
    };
    let cmd = format!(
        "{} --prometheus {url} --history 30s",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("dcgm-node:1", Duration::from_secs(20));
    assert!(screen.contains("prometheus 127.0.0.1:"), "{screen}");
    assert!(screen.contains("8 GPUs"), "{screen}");
    assert!(
        screen.contains("dcgm-node:0 · NVIDIA A100-SXM4-40GB"),
        "{screen}"
    );
    assert!(
        screen.contains("k8s ml/trainer-0"),
        "the pod dcgm-exporter names:\n{screen}"
    );
    assert!(screen.contains("process rows unknown"), "{screen}");
    // Unknown processes are not "VRAM held by no process".
    assert!(!screen.contains("no process "), "{screen}");
    assert!(
        screen.contains("temp") && screen.contains("util"),
        "{screen}"
    );
    t.send(&["q"]);
    t.wait_restored();
}

/// Without a server to ask, or with settings that cannot work, one line says why.
#[test]
fn a_prometheus_that_cannot_be_read_is_one_line() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = gpuwatch()
        .args([
            "--prometheus",
            &format!("http://127.0.0.1:{closed}"),
            "--once",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "gpuwatch: reading GPUs failed: Prometheus 127.0.0.1:{closed}: "
        )),
        "{err}"
    );
    assert!(
        err.to_lowercase().contains("refused") && err.lines().count() == 1,
        "{err}"
    );
    let out = gpuwatch()
        .args([
            "--prometheus",
            "http://127.0.0.1:1",
            "--remote",
            "a:1",
            "--once",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "gpuwatch: --prometheus: not with --remote/--hosts-file (pick one)\n"
    );
}

/// The `vendor` label through a real Prometheus: PromQL can group by it, and
/// `gpuwatch --prometheus URL --once --json` against `prometheus`: the document it prints.
fn once_json(prometheus: &Prometheus) -> Value {
    let url = format!("http://127.0.0.1:{}", prometheus.port);
    let out = gpuwatch()
        .args(["--prometheus", &url, "--once", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `--prometheus` reads each GPU's vendor back from it.
#[test]
fn vendors_survive_the_round_trip_through_prometheus() {
    if !on_path("prometheus") {
        common::skip("prometheus is not installed: the vendor round trip not run");
        return;
    }
    let exporter = Exporter::demo(&["--demo-gpus", "1", "--demo-scenario", "mixed"]);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(dir.path(), &exporter.addr.to_string());
    let by_vendor = wait_until("gpuwatch_gpu_info by vendor", SCRAPED, || {
        let rows = prometheus.query("count by (vendor) (gpuwatch_gpu_info)")?;
        let mut counts: Vec<(String, f64)> = rows
            .iter()
            .map(|(labels, n)| (labels["vendor"].as_str().unwrap_or("").to_string(), *n))
            .collect();
        counts.sort_by(|a, b| a.0.cmp(&b.0));
        (counts.len() == 3).then_some(counts)
    });
    let names: Vec<(&str, f64)> = by_vendor.iter().map(|(v, n)| (v.as_str(), *n)).collect();
    assert_eq!(names, [("amd", 1.0), ("intel", 1.0), ("nvidia", 2.0)]);
    let doc = once_json(&prometheus);
    let vendors: Vec<(u64, &str)> = doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["index"].as_u64().unwrap(), g["vendor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        vendors,
        [(0, "nvidia"), (1, "nvidia"), (2, "amd"), (3, "intel")],
        "{doc:#}"
    );
}

/// Issue 14: a real Prometheus scrapes `gpuwatch serve --dcgm-compat` on the fake NVML in
/// MIG mode; `--prometheus` reads the per-instance series (GPU_I_ID) back into the GPU's
/// MIG instances, and the GPU's own memory is not overwritten by an instance's.
#[test]
fn mig_instances_come_back_from_prometheus_as_the_gpus_instances() {
    if !on_path("prometheus") {
        common::skip("prometheus is not installed: the MIG --prometheus test not run");
        return;
    }
    let scenario = format!(
        "{}/tests/fixtures/nvml/mig.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut cmd = gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = Exporter::start(cmd, &["--dcgm-compat"]);
    let dir = tempfile::tempdir().unwrap();
    let target = exporter.addr.to_string();
    let prometheus = Prometheus::start(dir.path(), &target);
    prometheus.single_value("count(gpuwatch_mig_memory_used_bytes) == 2");
    let doc = once_json(&prometheus);
    let g = &doc["gpus"][0];
    assert_eq!(g["memory_used"], 30_064_771_072u64, "the GPU's own: {g:#}");
    let migs: Vec<(String, u64, String, u64)> = g["mig_devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["uuid"].as_str().unwrap().to_string(),
                m["gpu_instance_id"].as_u64().unwrap(),
                m["profile"].as_str().unwrap().to_string(),
                m["memory_used"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        migs,
        [
            (
                "MIG-4b6f1c2d-0a1b-5c3d-9e8f-112233445566".into(),
                1,
                "3g.40gb".into(),
                21_474_836_480
            ),
            (
                "MIG-9a8b7c6d-5e4f-5a3b-8c2d-665544332211".into(),
                5,
                "2g.20gb".into(),
                8_589_934_592
            ),
        ],
        "{g:#}"
    );
    assert_eq!(g["mig_devices"][0]["utilization_gpu"], Value::Null);
}

/// deploy/kubernetes's ServiceMonitor, as the Prometheus Operator turns it into a scrape job:
/// the target gets the exporter pod's own namespace/pod/container labels, and `honorLabels`
/// decides who wins. With it, the workload labels gpuwatch writes survive (the demo's GPU 3
/// is held by pod bench-7f9c); a control job without it shows what it prevents. The shipped
/// alert rules load and evaluate without error on these real series.
#[test]
fn the_service_monitor_keeps_workload_labels_and_the_rules_evaluate() {
    if serve_support::skip_without("prometheus", "the ServiceMonitor's labels and the rules") {
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{root}/deploy/kubernetes/gpuwatch.yaml"));
    let monitor = serde_yaml_ng::Deserializer::from_str(&manifest.unwrap())
        .map(|d| <serde_yaml_ng::Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|d| d["kind"] == "ServiceMonitor")
        .unwrap();
    let honor = monitor["spec"]["endpoints"][0]["honorLabels"].as_bool() == Some(true);
    let exporter = Exporter::demo(&[]);
    let job = |name: &str, honor: bool| {
        format!(
            "  - job_name: {name}\n    honor_labels: {honor}\n    static_configs:\n      \
             - targets: ['{}']\n        labels: {{namespace: monitoring, \
             pod: gpuwatch-x7k2p, container: gpuwatch}}\n",
            exporter.addr
        )
    };
    let jobs = job("gpuwatch", honor) + &job("control", false);
    let rules = format!("{root}/assets/prometheus/gpuwatch-alerts.yml");
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start_config(dir.path(), &jobs, &[&rules]);
    let held = r#"gpuwatch_gpu_temperature_celsius{job="gpuwatch",gpu="3",pod="bench-7f9c",namespace="ml"}"#;
    prometheus.single_value(held);
    let renamed = r#"gpuwatch_gpu_temperature_celsius{job="control",gpu="3",pod="gpuwatch-x7k2p",exported_pod="bench-7f9c"}"#;
    prometheus.single_value(renamed);
    let addr = ([127, 0, 0, 1], prometheus.port).into();
    let evaluated = wait_until("every rule evaluated", SCRAPED, || {
        let body = request(addr, "GET", "/api/v1/rules").ok()?.body;
        let doc: Value = serde_json::from_str(&body).ok()?;
        let rules: Vec<Value> = doc["data"]["groups"]
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let done = !rules.is_empty() && rules.iter().all(|r| r["health"] != "unknown");
        done.then_some(rules)
    });
    assert!(evaluated.len() >= 17, "{evaluated:?}");
    for rule in &evaluated {
        assert_eq!(
            rule["health"], "ok",
            "{} fails: {}",
            rule["name"], rule["lastError"]
        );
    }
}

/// Issue 21: the health series the exporter writes come back through `--prometheus` (they
/// used to be left unread): the demo's XID on GPU 1 is the same critical warning there as on
/// the host, and every GPU's health readings are the exporter's own.
#[test]
fn health_readings_and_warnings_come_back_through_prometheus() {
    if !on_path("prometheus") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have prometheus for the --prometheus health test"
        );
        common::skip("prometheus is not installed: the --prometheus health test not run");
        return;
    }
    let exporter = Exporter::demo(&["--demo-gpus", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(dir.path(), &exporter.addr.to_string());
    prometheus.single_value(r#"gpuwatch_gpu_last_xid{gpu="1"}"#);
    let doc = once_json(&prometheus);
    let host: Value = serde_json::from_str(&exporter.get("/api/v1/snapshot").body).unwrap();
    const HEALTH: [&str; 6] = [
        "xid_errors",
        "remapped_rows",
        "retired_pages",
        "pcie_replay_counter",
        "ecc_errors_corrected_volatile",
        "temperature_memory",
    ];
    for (seen, there) in doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .zip(host["gpus"].as_array().unwrap())
    {
        assert_eq!(seen["uuid"], there["uuid"]);
        for key in HEALTH {
            assert_eq!(
                seen[key], there[key],
                "GPU {} {key}\n{doc:#}",
                seen["index"]
            );
        }
    }
    let xid = |d: &Value| -> Vec<(u64, u64)> {
        d["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "xid" && w["severity"] == "critical")
            .map(|w| (w["gpu_index"].as_u64().unwrap(), w["xid"].as_u64().unwrap()))
            .collect()
    };
    assert_eq!(xid(&doc), [(1, 31)], "{doc:#}");
    assert_eq!(xid(&doc), xid(&host));
}
