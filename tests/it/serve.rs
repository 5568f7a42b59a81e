//! `gpuwatch serve` end to end: the real binary on a loopback port, scraped over HTTP.
//! Covers the metrics format and names, the snapshot document, readiness, errors, signals,
//! `promtool check metrics`, and (through the fake NVML) that unknown readings are left out.

use crate::common;
use crate::serve_support;

use std::process::Stdio;

use serde_json::Value;
use serve_support::{Exporter, Response, gpuwatch, request};

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
const NVML_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

/// Lint warnings promtool gives dcgm-exporter's own names, which dashboards need verbatim:
/// the `modelName` label is camelCase, DCGM's counters have no `_total` suffix, and its
/// `PCIE_REPLAY_COUNTER` has the type in its name.
const DCGM_ALLOWED_LINTS: &[&str] = &[
    "label names should be written in 'snake_case' not 'camelCase'",
    "counter metrics should have \"_total\" suffix",
    "metric name should not include type 'counter'",
];

fn scrape(exporter: &Exporter) -> Response {
    exporter.wait_ready();
    let r = exporter.get("/metrics");
    assert_eq!(r.status, 200, "{r:?}");
    r
}

/// The sample lines of one metric (not its HELP/TYPE lines).
fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .collect()
}

fn value(line: &str) -> f64 {
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn metrics_are_prometheus_text_in_base_units_for_every_gpu() {
    let exporter = Exporter::demo(&[]);
    let r = scrape(&exporter);
    assert_eq!(r.header("content-type"), Some(CONTENT_TYPE));
    let text = &r.body;
    for name in [
        "gpuwatch_gpu_info",
        "gpuwatch_gpu_lost",
        "gpuwatch_gpu_utilization_ratio",
        "gpuwatch_gpu_memory_total_bytes",
        "gpuwatch_gpu_memory_used_bytes",
        "gpuwatch_gpu_temperature_celsius",
        "gpuwatch_gpu_power_watts",
        "gpuwatch_gpu_power_limit_watts",
        "gpuwatch_gpu_energy_joules_total",
        "gpuwatch_gpu_sm_clock_hertz",
        "gpuwatch_gpu_processes",
    ] {
        assert_eq!(samples(text, name).len(), 8, "{name} in\n{text}");
    }
    assert!(text.contains("# TYPE gpuwatch_gpu_energy_joules_total counter\n"));
    let total = value(samples(text, "gpuwatch_gpu_memory_total_bytes")[0]);
    let gib = total / f64::from(1u32 << 30);
    assert!((79.0..80.0).contains(&gib), "{total} bytes is {gib} GiB");
    let limit = samples(text, "gpuwatch_gpu_power_limit_watts")[0];
    assert!(
        limit.starts_with(r#"gpuwatch_gpu_power_limit_watts{gpu="0",uuid="GPU-"#),
        "{limit}"
    );
    assert!(
        limit.ends_with(r#",name="NVIDIA H100 80GB HBM3",vendor="nvidia"} 700"#),
        "{limit}"
    );
    // Clocks in hertz, ratios in 0..=1.
    assert!(value(samples(text, "gpuwatch_gpu_sm_clock_hertz")[0]) > 1e8);
    for line in samples(text, "gpuwatch_gpu_utilization_ratio") {
        assert!((0.0..=1.0).contains(&value(line)), "{line}");
    }
    assert!(!text.contains("instance="));
    assert!(
        !text.contains("DCGM_"),
        "DCGM names only with --dcgm-compat"
    );
    assert!(
        !text.contains("gpuwatch_process_"),
        "process series only when asked"
    );
}

#[test]
fn dcgm_compat_and_process_metrics_add_their_series() {
    let exporter = Exporter::demo(&["--dcgm-compat", "--process-metrics"]);
    let text = scrape(&exporter).body;
    for name in [
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ] {
        assert_eq!(samples(&text, name).len(), 8, "{name} in\n{text}");
    }
    let temp = samples(&text, "DCGM_FI_DEV_GPU_TEMP")[0];
    assert!(
        temp.starts_with(r#"DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-"#),
        "{temp}"
    );
    assert!(temp.contains(r#"",pci_bus_id=""#), "{temp}");
    assert!(temp.contains(r#",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname=""#));
    // MiB, not bytes: an 80 GB card holds fewer than 81920 MiB.
    assert!(value(samples(&text, "DCGM_FI_DEV_FB_USED")[0]) < 81_920.0);
    assert!(!text.contains("DCGM_FI_PROF"));

    let procs = samples(&text, "gpuwatch_process_gpu_memory_bytes");
    assert!(!procs.is_empty(), "{text}");
    assert!(
        procs
            .iter()
            .any(|l| l.contains(r#",user="alice",comm="python",hpc_job="48121"}"#)),
        "{procs:#?}"
    );
    // GPU 3 is held by one pod alone: its per-GPU series name the pod, as dcgm-exporter's do.
    let temp3 = samples(&text, "DCGM_FI_DEV_GPU_TEMP")[3];
    assert!(
        temp3.contains(r#",pod="bench-7f9c",namespace="ml",container="bench"}"#),
        "{temp3}"
    );
    let temp0 = samples(&text, "DCGM_FI_DEV_GPU_TEMP")[0];
    assert!(!temp0.contains("pod="), "GPU 0 is shared: {temp0}");
}

#[test]
fn snapshot_is_the_once_json_document() {
    let exporter = Exporter::demo(&[]);
    exporter.wait_ready();
    let r = exporter.get("/api/v1/snapshot");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let served: Value = serde_json::from_str(&r.body).expect("valid JSON");
    let once = gpuwatch()
        .args(["--demo", "--once", "--json"])
        .output()
        .unwrap();
    assert!(once.status.success());
    let once: Value = serde_json::from_slice(&once.stdout).unwrap();
    assert_eq!(served["schema_version"], once["schema_version"]);
    assert_eq!(served["gpus"].as_array().unwrap().len(), 8);
    assert_eq!(keys(&served), keys(&once));
    assert_eq!(keys(&served["gpus"][0]), keys(&once["gpus"][0]));
    assert_eq!(served["gpus"][0]["uuid"], once["gpus"][0]["uuid"]);
    assert!(served["gpus"][0]["uuid"].is_string());
}

fn keys(v: &Value) -> Vec<&String> {
    v.as_object().expect("an object").keys().collect()
}

#[test]
fn index_readiness_unknown_paths_and_wrong_methods() {
    let exporter = Exporter::demo(&[]);
    exporter.wait_ready();
    assert_eq!(exporter.get("/-/ready").status, 200);
    let index = exporter.get("/");
    assert_eq!(index.status, 200);
    for link in ["metrics", "api/v1/snapshot", "-/ready"] {
        assert!(index.body.contains(&format!("href=\"{link}\"")), "{link}");
    }
    assert_eq!(exporter.get("/nope").status, 404);
    let post = request(exporter.addr, "POST", "/metrics").unwrap();
    assert_eq!(post.status, 405);
}

#[test]
fn sigterm_and_sigint_stop_it_cleanly() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut exporter = Exporter::demo(&[]);
        exporter.wait_ready();
        let status = exporter.signal(sig);
        assert_eq!(
            status.code(),
            Some(0),
            "signal {sig}: {}",
            exporter.stderr()
        );
    }
}

/// Runs `gpuwatch --demo serve ARGS` expecting it to fail; returns (exit code, stderr).
fn serve_fails(args: &[&str]) -> (Option<i32>, String) {
    let out = gpuwatch()
        .args(["--demo", "serve"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_bad_listen_address_is_one_line_and_exit_2() {
    let (code, err) = serve_fails(&["--listen", "nowhere:port"]);
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("gpuwatch: --listen: "), "{err}");
}

#[test]
fn a_port_in_use_is_one_line_and_exit_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = serve_fails(&["--listen", &addr]);
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&addr), "{err}");
}

#[test]
fn promtool_finds_native_metrics_clean() {
    let exporter = Exporter::demo(&["--process-metrics"]);
    let text = scrape(&exporter).body;
    if let Some(problems) = serve_support::promtool_check_metrics(&text) {
        assert!(problems.is_empty(), "{problems:#?}\n{text}");
    }
}

#[test]
fn promtool_finds_only_dcgms_own_lint_in_dcgm_compat() {
    let exporter = Exporter::demo(&["--dcgm-compat"]);
    let text = scrape(&exporter).body;
    if let Some(problems) = serve_support::promtool_check_metrics(&text) {
        let unexpected: Vec<&String> = problems
            .iter()
            .filter(|p| {
                !(p.starts_with("DCGM_FI_DEV_")
                    && DCGM_ALLOWED_LINTS.iter().any(|lint| p.ends_with(lint)))
            })
            .collect();
        assert!(unexpected.is_empty(), "{unexpected:#?}\n{text}");
    }
}

#[test]
fn readings_nvml_cannot_give_are_left_out_not_zero() {
    let mut cmd = gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", NVML_FIXTURE)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = Exporter::start(cmd, &["--dcgm-compat"]);
    let text = scrape(&exporter).body;
    let on_gpu = |name: &str, gpu: &str| {
        let label = format!("{{gpu=\"{gpu}\",");
        samples(&text, name)
            .into_iter()
            .filter(|l| l.contains(&label))
            .map(value)
            .collect::<Vec<f64>>()
    };
    // GPU 1 (a T4) answers NOT_SUPPORTED for its fan and NO_PERMISSION for ECC, and lacks
    // the fields its scenario leaves out: those series are absent, not 0.
    assert_eq!(on_gpu("gpuwatch_gpu_fan_speed_ratio", "0"), [0.45]);
    assert_eq!(on_gpu("gpuwatch_gpu_fan_speed_ratio", "1"), [] as [f64; 0]);
    assert_eq!(
        on_gpu("gpuwatch_gpu_ecc_uncorrected_errors_total", "1"),
        [] as [f64; 0]
    );
    assert_eq!(
        on_gpu("gpuwatch_gpu_energy_joules_total", "1"),
        [] as [f64; 0]
    );
    assert_eq!(
        on_gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "1"),
        [] as [f64; 0]
    );
    assert_eq!(on_gpu("gpuwatch_gpu_throttle_active", "1"), [] as [f64; 0]);
    // Real zeros stay zeros.
    assert_eq!(on_gpu("gpuwatch_gpu_utilization_ratio", "1"), [0.0]);
    assert_eq!(on_gpu("gpuwatch_gpu_memory_used_bytes", "1"), [0.0]);
    // The H100's readings, converted to base units.
    assert_eq!(on_gpu("gpuwatch_gpu_power_watts", "0"), [312.5]);
    assert_eq!(
        on_gpu("gpuwatch_gpu_energy_joules_total", "0"),
        [123_456.789]
    );
    assert_eq!(
        on_gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0"),
        [123_456_789.0]
    );
    let active: Vec<&str> = samples(&text, "gpuwatch_gpu_throttle_active")
        .into_iter()
        .filter(|l| l.ends_with(" 1"))
        .collect();
    assert_eq!(active.len(), 2, "{active:#?}");
    assert!(
        active
            .iter()
            .any(|l| l.contains(r#"reason="sw_power_cap""#))
    );
    assert!(
        active
            .iter()
            .any(|l| l.contains(r#"reason="hw_thermal_slowdown""#))
    );
    let info = samples(&text, "gpuwatch_gpu_info");
    assert!(info[0].contains(r#",pci_bus_id="00000000:17:00.0",driver_version="550.54.15""#));
}

/// Issue 25 (private memory): the exporter's threads (the sampler's poll, connections,
/// scrapes from several clients at once) share the main malloc arena; before, each
/// thread that allocated got a 64 MiB arena of its own whose first pages stayed resident.
#[test]
fn every_thread_allocates_from_the_one_main_malloc_arena() {
    let e = Exporter::demo(&["--interval", "200ms"]);
    e.wait_ready();
    let addr = e.addr;
    let scrapers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..10 {
                    let r = request(addr, "GET", "/metrics").expect("scrape");
                    assert_eq!(r.status, 200);
                }
            })
        })
        .collect();
    for s in scrapers {
        s.join().unwrap();
    }
    // Samples were taken (the poll thread allocated) while the scrapes ran.
    std::thread::sleep(std::time::Duration::from_millis(600));
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", e.pid())).unwrap();
    let arenas = glibc_arenas(&maps);
    assert!(
        arenas.is_empty(),
        "threads' own malloc arenas: {arenas:?}\n{maps}"
    );
}

/// glibc's per-thread arenas in a maps listing: an anonymous read-write mapping at a
/// 64 MiB boundary followed at once by the inaccessible rest of its 64 MiB reservation
/// (a thread's stack has its guard below it, not above).
fn glibc_arenas(maps: &str) -> Vec<String> {
    const RESERVED: u64 = 64 << 20;
    let anon: Vec<(u64, u64, &str, &str)> = maps
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (range, perms, inode) = (fields.first()?, fields.get(1)?, fields.get(4)?);
            (fields.len() == 5 && *inode == "0").then_some(())?;
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some((start, end, *perms, line))
        })
        .collect();
    anon.windows(2)
        .filter(|w| {
            let ((start, end, perms, _), (next_start, next_end, next_perms, _)) = (w[0], w[1]);
            start % RESERVED == 0
                && perms == "rw-p"
                && next_perms == "---p"
                && next_start == end
                && next_end - start == RESERVED
        })
        .map(|w| w[0].3.to_string())
        .collect()
}
