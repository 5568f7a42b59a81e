//! `gpuwatch serve`'s HTTP behaviour through the real binary and real sockets on 127.0.0.1:
//! gzip and OpenMetrics by negotiation (and `promtool check metrics` on what promtool reads),
//! TLS with basic auth from an exporter-toolkit web config, `--redact`, `--hostname` and
//! `NODE_NAME`, and that half-open connections beyond the cap neither exhaust the exporter
//! nor stop a real scrape. The TLS fixtures (tests/fixtures/tls) are a throwaway CA's
//! certificate and a localhost/127.0.0.1 server certificate it signed (the CA key was
//! discarded), valid for 100 years.

use crate::serve_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use serve_support::tls::{https, web_config};
use serve_support::{Exporter, gpuwatch, request_with};

const OPENMETRICS: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

fn get(e: &Exporter, path: &str, headers: &[(&str, &str)]) -> serve_support::Response {
    e.wait_ready();
    request_with(e.addr, "GET", path, headers).unwrap_or_else(|err| panic!("GET {path}: {err}"))
}

fn gunzip(bytes: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut out)
        .expect("a gzip body");
    out
}

#[test]
fn gzip_only_when_asked() {
    let e = Exporter::demo(&[]);
    let packed = get(&e, "/metrics", &[("Accept-Encoding", "deflate, gzip")]);
    assert_eq!(packed.status, 200);
    assert_eq!(packed.header("content-encoding"), Some("gzip"));
    let text = gunzip(&packed.raw_body);
    assert!(text.contains("gpuwatch_gpu_info{"), "{text}");
    assert!(
        packed.raw_body.len() * 4 < text.len(),
        "gzip should shrink the text"
    );
    let plain = get(&e, "/metrics", &[("Accept-Encoding", "gzip;q=0")]);
    assert_eq!(plain.header("content-encoding"), None);
    assert!(plain.body.contains("gpuwatch_gpu_info{"));
    let snapshot = get(&e, "/api/v1/snapshot", &[("Accept-Encoding", "gzip")]);
    let doc: Value = serde_json::from_str(&gunzip(&snapshot.raw_body)).unwrap();
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 8);
}

/// The checks of the OpenMetrics text that matter to a parser: ends with `# EOF`, every
/// family's TYPE comes before its samples, counters' samples are `<family>_total`.
fn check_openmetrics(text: &str) {
    assert!(text.ends_with("\n# EOF\n"), "no # EOF at the end");
    assert_eq!(text.matches("# EOF").count(), 1);
    let mut family: Option<(String, String)> = None;
    let mut seen = std::collections::HashSet::new();
    for line in text.lines().filter(|l| *l != "# EOF") {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(seen.insert(name.to_string()), "family {name} twice");
            family = Some((name.to_string(), kind.to_string()));
        } else if !line.starts_with('#') {
            let name = line.split(['{', ' ']).next().unwrap();
            let (fam, kind) = family.clone().expect("a sample before any TYPE");
            let expected = if kind == "counter" {
                format!("{fam}_total")
            } else {
                fam
            };
            assert_eq!(name, expected, "{line}");
        }
    }
}

#[test]
fn openmetrics_when_asked_and_both_formats_carry_the_same_series() {
    let e = Exporter::demo(&["--dcgm-compat", "--process-metrics"]);
    let om = get(&e, "/metrics", &[("Accept", OPENMETRICS)]);
    assert_eq!(
        om.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    check_openmetrics(&om.body);
    assert!(
        om.body
            .contains("# TYPE gpuwatch_gpu_energy_joules counter\n")
    );
    let text = get(&e, "/metrics", &[("Accept", "text/plain;version=0.0.4")]);
    assert_eq!(
        text.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!text.body.contains("# EOF"));
    let names = |body: &str| -> std::collections::BTreeSet<String> {
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&om.body), names(&text.body));
    for name in [
        "gpuwatch_exporter_sample_age_seconds",
        "gpuwatch_exporter_poll_duration_seconds",
        "gpuwatch_exporter_render_duration_seconds",
        "gpuwatch_exporter_sampler_errors_total",
        "gpuwatch_exporter_scrapes_total",
        "gpuwatch_exporter_connections",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "gpuwatch_user_gpu_memory_bytes",
        "gpuwatch_workload_gpu_memory_bytes",
        "gpuwatch_process_gpu_memory_bytes",
    ] {
        assert!(names(&text.body).contains(name), "{name} missing");
    }
    // The second scrape counted the first, in its format.
    assert!(
        text.body
            .contains("gpuwatch_exporter_scrapes_total{format=\"openmetrics\"} 1\n"),
        "{}",
        text.body
    );
}

#[test]
fn promtool_finds_the_new_series_clean() {
    let e = Exporter::demo(&["--process-metrics"]);
    let text = get(&e, "/metrics", &[]).body;
    if let Some(problems) = serve_support::promtool_check_metrics(&text) {
        assert!(problems.is_empty(), "{problems:#?}\n{text}");
    }
}

#[test]
fn per_pid_series_are_capped() {
    let e = Exporter::demo(&["--process-metrics", "--process-metrics-limit", "3"]);
    let text = get(&e, "/metrics", &[]).body;
    let pids = text
        .lines()
        .filter(|l| l.starts_with("gpuwatch_process_gpu_memory_bytes{"))
        .count();
    assert_eq!(pids, 3, "{text}");
    let left = text
        .lines()
        .find_map(|l| l.strip_prefix("gpuwatch_process_series_left_out "))
        .unwrap();
    assert!(left.parse::<f64>().unwrap() > 0.0, "{left}");
}

#[test]
fn redact_leaves_out_users_and_commands() {
    let users = |doc: &Value| -> usize {
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| !p["user"].is_null() || !p["command"].is_null())
            .count()
    };
    let plain = Exporter::demo(&["--process-metrics"]);
    let doc: Value = serde_json::from_str(&get(&plain, "/api/v1/snapshot", &[]).body).unwrap();
    assert!(users(&doc) > 0, "the demo should have named processes");
    let text = get(&plain, "/metrics", &[]).body;
    assert!(text.contains("user=\"") && text.contains("comm=\""));

    let redacted = Exporter::demo(&["--process-metrics", "--redact"]);
    let body = get(&redacted, "/api/v1/snapshot", &[]).body;
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert!(!doc["processes"].as_array().unwrap().is_empty());
    assert_eq!(users(&doc), 0, "{body}");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["message"].is_null()),
        "{body}"
    );
    // Still a valid snapshot document: the fields are null, as for an unknown process.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/gpuwatch-snapshot.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let text = get(&redacted, "/metrics", &[]).body;
    assert!(
        !text.contains("user=\"") && !text.contains("comm=\""),
        "{text}"
    );
    assert!(text.contains("gpuwatch_process_gpu_memory_bytes{"));
}

/// Every string in a snapshot document (and every UID), by path with array indices
/// dropped (`.processes[].workload.unit_uid`), with one value seen there.
fn string_fields(v: &Value, path: String, out: &mut std::collections::BTreeMap<String, String>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| string_fields(x, format!("{path}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .for_each(|x| string_fields(x, format!("{path}[]"), out)),
        Value::String(s) => {
            out.entry(path).or_insert_with(|| s.clone());
        }
        Value::Number(n) if path.ends_with("uid") => {
            out.entry(path).or_insert_with(|| n.to_string());
        }
        _ => {}
    }
}

/// Issue 26 item 17: under `--redact`, each string field the snapshot still carries is one
/// that names hardware, the host or where GPU time goes (the metrics' labels) — never a
/// person or their commands. A new string field fails this test until it is placed.
#[test]
fn redact_leaves_no_string_field_that_names_a_person_or_a_command() {
    // What may stay: the GPUs and host, the process's GPU and kind, the workload as the
    // metrics label it (container, pod, namespace, job id, system service) and the warnings'
    // typed codes. Container and pod names are their creators' choice and stay, as in the
    // metrics' `container`/`pod` labels.
    const KEPT: [&str; 25] = [
        ".gpus[].clocks_throttle_reasons[]",
        ".gpus[].compute_mode",
        ".gpus[].name",
        ".gpus[].pci_bus_id",
        ".gpus[].status",
        ".gpus[].uuid",
        ".gpus[].vendor",
        ".host.cuda_version",
        ".host.driver_version",
        ".host.hostname",
        ".processes[].gpu_uuid",
        ".processes[].type",
        ".processes[].visibility",
        ".processes[].workload.container",
        ".processes[].workload.container_id",
        ".processes[].workload.engine",
        ".processes[].workload.hpc_job",
        ".processes[].workload.image",
        ".processes[].workload.kind",
        ".processes[].workload.namespace",
        ".processes[].workload.pod",
        ".processes[].workload.pod_qos",
        ".processes[].workload.pod_uid",
        ".processes[].workload.service",
        ".processes[].workload.slurm_step",
    ];
    const WARNINGS_KEPT: [&str; 4] = [
        ".warnings[].gpu_uuid",
        ".warnings[].kind",
        ".warnings[].severity",
        ".warnings[].subject",
    ];
    let fields = |e: &Exporter| {
        let body = get(e, "/api/v1/snapshot", &[]).body;
        let mut out = std::collections::BTreeMap::new();
        string_fields(
            &serde_json::from_str(&body).unwrap(),
            String::new(),
            &mut out,
        );
        out
    };
    let plain = fields(&Exporter::demo(&[]));
    // The demo fills the fields that used to leak, so their absence below means something.
    for leaked in [
        ".processes[].user",
        ".processes[].uid",
        ".processes[].command",
        ".processes[].parents[]",
        ".processes[].environment.SLURM_JOB_NAME",
        ".processes[].workload.unit_uid",
        ".processes[].workload.hpc_job_name",
        ".processes[].workload.hpc_account",
        ".warnings[].message",
    ] {
        assert!(plain.contains_key(leaked), "the demo has no {leaked}");
    }
    let redacted = fields(&Exporter::demo(&["--redact"]));
    let left: Vec<String> = redacted
        .iter()
        .filter(|(path, _)| {
            !KEPT.contains(&path.as_str()) && !WARNINGS_KEPT.contains(&path.as_str())
        })
        .map(|(path, value)| format!("{path} = {value:?}"))
        .collect();
    assert!(left.is_empty(), "left under --redact: {left:#?}");
    assert!(redacted.contains_key(".processes[].workload.hpc_job"));
}

#[test]
fn hostname_is_node_name_unless_given() {
    let mut cmd = gpuwatch();
    cmd.env("NODE_NAME", "k8s-node-7").arg("--demo");
    let e = Exporter::start(cmd, &["--dcgm-compat"]);
    let text = get(&e, "/metrics", &[]).body;
    assert!(text.contains("hostname=\"k8s-node-7\""), "{text}");
    assert!(text.contains("Hostname=\"k8s-node-7\""));
    let doc: Value = serde_json::from_str(&get(&e, "/api/v1/snapshot", &[]).body).unwrap();
    assert_eq!(doc["host"]["hostname"], "k8s-node-7");

    let mut cmd = gpuwatch();
    cmd.env("NODE_NAME", "k8s-node-7").arg("--demo");
    let e = Exporter::start(cmd, &["--hostname", "gpu-a"]);
    assert!(get(&e, "/metrics", &[]).body.contains("hostname=\"gpu-a\""));
}

/// The demo exporter over TLS with one basic-auth user, alice (password `s3cret`), whose
/// hash has cost 4 to keep the tests fast (the exporter takes costs up to 14).
fn alice_over_tls(dir: &std::path::Path) -> Exporter {
    let hash = bcrypt::hash_with_salt("s3cret", 4, [3; 16])
        .unwrap()
        .to_string();
    let config = web_config(dir, &format!("basic_auth_users:\n  alice: {hash}\n"));
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    Exporter::start(cmd, &["--web.config.file", config.to_str().unwrap()])
}

#[test]
fn tls_with_basic_auth_from_a_web_config() {
    let dir = tempfile::tempdir().unwrap();
    let e = alice_over_tls(dir.path());
    let denied = https(e.addr, "/metrics", None);
    assert_eq!(denied.status, 401);
    assert!(denied.header("www-authenticate").is_some());
    assert_eq!(https(e.addr, "/metrics", Some("alice:wrong")).status, 401);
    assert_eq!(
        https(e.addr, "/metrics", Some("mallory:s3cret")).status,
        401
    );
    let ok = serve_support::wait_until("a scrape over TLS", Duration::from_secs(20), || {
        Some(https(e.addr, "/metrics", Some("alice:s3cret")))
            .filter(|r| r.body.contains("gpuwatch_gpu_info{"))
    });
    assert_eq!(ok.status, 200);
    // Plain HTTP to the TLS port gets no metrics.
    let plain = request_with(e.addr, "GET", "/metrics", &[]);
    assert!(plain.map_or(true, |r| !r.body.contains("gpuwatch_gpu_info")));
}

/// Issue 26 item 9: over a real socket, an unknown user's answer takes no longer than a
/// known user's wrong password (the dummy hash has the configured cost, 4 here, not bcrypt's
/// default of 12: 256 times the work, over a second in a debug build).
#[test]
fn an_unknown_user_answers_as_fast_as_a_wrong_password() {
    let dir = tempfile::tempdir().unwrap();
    let e = alice_over_tls(dir.path());
    // The fastest of five each: scheduling noise only ever adds time.
    let fastest = |auth: &str| {
        (0..5)
            .map(|_| {
                let start = Instant::now();
                assert_eq!(https(e.addr, "/metrics", Some(auth)).status, 401);
                start.elapsed()
            })
            .min()
            .unwrap()
    };
    let known = fastest("alice:wrong");
    let unknown = fastest("mallory:wrong");
    assert!(
        unknown < known * 3 + Duration::from_millis(50),
        "unknown user {unknown:?}, known user's wrong password {known:?}"
    );
}

/// `gpuwatch --demo serve` on a free port with the web config at `path`.
fn serve_with_web_config(path: &std::path::Path) -> std::process::Command {
    let mut cmd = gpuwatch();
    cmd.args([
        "--demo",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--web.config.file",
    ])
    .arg(path);
    cmd
}

#[test]
fn a_bad_web_config_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("web.yml");
    std::fs::write(
        &path,
        "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n",
    )
    .unwrap();
    let out = serve_with_web_config(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cert_file") && err.contains("x.crt"), "{err}");
}

/// Issue 26 item 8, through the binary: a web config that is a device, names a FIFO as its
/// certificate, or sets a bcrypt cost above 14 is one line and exit 2, within seconds
/// (`/dev/zero` took 3 GB in 4 s; a FIFO hung start-up).
#[test]
fn an_unbounded_web_config_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cert.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo_config = dir.path().join("fifo.yml");
    let cert = "tls_server_config:\n  cert_file: cert.fifo\n  key_file: cert.fifo\n";
    std::fs::write(&fifo_config, cert).unwrap();
    let costly = bcrypt::hash_with_salt("x", 4, [1; 16])
        .unwrap()
        .to_string()
        .replacen("$04$", "$31$", 1);
    let cost_config = dir.path().join("cost.yml");
    std::fs::write(
        &cost_config,
        format!("basic_auth_users:\n  bob: '{costly}'\n"),
    )
    .unwrap();
    for (config, says) in [
        (std::path::PathBuf::from("/dev/zero"), "not a regular file"),
        (fifo_config, "cert_file"),
        (
            cost_config,
            "basic_auth_users.bob: bcrypt cost 31 is above 14",
        ),
    ] {
        let started = Instant::now();
        let mut child = serve_with_web_config(&config)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{} still starting after 10 s", config.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{}: {err}", config.display());
    }
}

/// The exporter's open sockets (its listener and the connections it holds).
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|f| std::fs::read_link(f.path()).ok())
                .filter(|l| l.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn half_open_connections_beyond_the_cap_do_not_stop_a_scrape() {
    const CAP: usize = 4;
    let e = Exporter::demo(&["--max-connections", "4", "--http-header-timeout", "2s"]);
    e.wait_ready();
    // Its own sockets (listener, the runtime's signal pipe) before any client holds one.
    std::thread::sleep(Duration::from_millis(500));
    let idle = sockets(e.pid());
    // Three times the cap of clients that send half a request and then nothing.
    let mut slow: Vec<TcpStream> = (0..3 * CAP)
        .map(|_| {
            let mut s = TcpStream::connect(e.addr).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // The exporter holds at most the cap (plus its listener), however many wait.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sockets(e.pid()) < idle + CAP && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let held = sockets(e.pid());
    assert!(
        held <= idle + CAP,
        "{held} sockets, {idle} before the clients came"
    );
    // A real scrape still gets its answer: the header timeout frees the slots.
    let r = request_with(e.addr, "GET", "/metrics", &[]).expect("a scrape behind slow clients");
    assert_eq!(r.status, 200);
    assert!(r.body.contains("gpuwatch_gpu_info{"));
    // And the half-open clients were hung up on, not kept.
    for s in &mut slow {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = Vec::new();
        // EOF (perhaps after a 408) or a reset: closed by the exporter, not left waiting.
        match s.read_to_end(&mut buf) {
            Ok(_) => {}
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
        assert!(!String::from_utf8_lossy(&buf).contains("gpuwatch_gpu_info"));
    }
}
