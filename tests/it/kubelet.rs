//! GPUs held by pods whose processes gpuwatch cannot see (it runs in its own container, or
//! the PIDs are in another namespace): the kubelet's pod-resources API says which pod each
//! GPU is allocated to, and the binary shows it — on the owners line, in `pick`, and on
//! the exporter's per-GPU series. A small stand-in kubelet (gRPC over HTTP/2 on a unix
//! socket in a temp dir) answers every connection with one node's allocations.

use crate::common;
use crate::serve_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const H100: &str = "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a";

/// Protobuf by hand: a key, then a length-delimited payload (all the answer needs).
fn field(out: &mut Vec<u8>, number: u8, payload: &[u8]) {
    out.push((number << 3) | 2);
    let mut n = payload.len();
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(payload);
}

/// `ListPodResourcesResponse` with pod ml/trainer-0, container trainer, holding the H100.
fn answer() -> Vec<u8> {
    let mut devices = Vec::new();
    field(&mut devices, 1, b"nvidia.com/gpu");
    field(&mut devices, 2, H100.as_bytes());
    let mut container = Vec::new();
    field(&mut container, 1, b"trainer");
    field(&mut container, 2, &devices);
    let mut pod = Vec::new();
    field(&mut pod, 1, b"trainer-0");
    field(&mut pod, 2, b"ml");
    field(&mut pod, 3, &container);
    let mut message = Vec::new();
    field(&mut message, 1, &pod);
    let mut framed = vec![0];
    framed.extend((message.len() as u32).to_be_bytes());
    framed.extend(message);
    framed
}

/// How the stand-in answers `List`.
#[derive(Clone, Copy)]
enum Reply {
    /// The node's allocations (`answer()`), status 0.
    Pods,
    /// No message, this gRPC status in the trailers (a refusal).
    Status(&'static str),
    /// The allocations, after this long (past gpuwatch's budget for a call).
    After(Duration),
}

/// A kubelet stand-in answering every connection, for as long as the test holds it.
struct Kubelet {
    dir: tempfile::TempDir,
}

impl Kubelet {
    fn start() -> Kubelet {
        Self::answering(Reply::Pods)
    }

    fn answering(reply: Reply) -> Kubelet {
        let dir = tempfile::tempdir().unwrap();
        let listener =
            std::os::unix::net::UnixListener::bind(dir.path().join("kubelet.sock")).expect("bind");
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::UnixListener::from_std(listener).unwrap();
                // Bounded: the stand-in gives up by itself after a minute.
                let serve = async {
                    while let Ok((io, _)) = listener.accept().await {
                        tokio::spawn(answer_one(io, reply));
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(60), serve).await;
            });
        });
        Kubelet { dir }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("kubelet.sock")
    }
}

async fn answer_one(io: tokio::net::UnixStream, reply: Reply) -> Option<()> {
    let mut conn = h2::server::handshake(io).await.ok()?;
    let (_request, mut respond) = conn.accept().await?.ok()?;
    if let Reply::After(wait) = reply {
        // The connection must keep being driven while the answer waits.
        let _ = tokio::time::timeout(wait, async {
            while let Some(Ok(_)) = conn.accept().await {}
        })
        .await;
    }
    let response = http::Response::builder()
        .header("content-type", "application/grpc")
        .body(())
        .ok()?;
    let mut stream = respond.send_response(response, false).ok()?;
    let status = match reply {
        Reply::Status(code) => code,
        Reply::Pods | Reply::After(_) => {
            stream.send_data(bytes::Bytes::from(answer()), false).ok()?;
            "0"
        }
    };
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static(status));
    stream.send_trailers(trailers).ok()?;
    while let Some(Ok(_)) = conn.accept().await {}
    Some(())
}

/// The fake NVML's two GPUs with no processes listed: the pod's PIDs are invisible.
fn scenario(dir: &Path) -> PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!([]);
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

/// gpuwatch on the fake NVML's two GPUs (no processes) asking the kubelet at `socket`.
fn gpuwatch_asking(socket: &Path, scenario: &Path) -> assert_cmd::Command {
    let mut cmd = common::clean_command();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .arg("--kubelet-socket")
        .arg(socket);
    cmd
}

/// The same gpuwatch as an exporter (`serve ARGS`).
fn exporter_asking(socket: &Path, scenario: &Path, args: &[&str]) -> serve_support::Exporter {
    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .arg("--kubelet-socket")
        .arg(socket);
    serve_support::Exporter::start(cmd, args)
}

#[test]
fn a_gpu_allocated_to_a_pod_is_held_by_it_even_with_no_visible_process() {
    let kubelet = Kubelet::start();
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let gpuwatch = || gpuwatch_asking(&kubelet.socket(), &scenario);
    let out = gpuwatch().arg("--once").assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let h100 = text
        .lines()
        .find(|l| l.contains("H100"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(h100.contains("k8s ml/trainer-0 10.0G"), "{text}");
    assert!(!h100.contains("no process"), "the pod holds it: {text}");
    assert!(text.contains("free: 1"), "only the T4 is free: {text}");

    // The document names the pod on the GPU (and reads it back on a remote watcher).
    let out = gpuwatch().args(["--once", "--json"]).assert().success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        doc["gpus"][0]["pods"],
        json!([{"namespace": "ml", "pod": "trainer-0", "container": "trainer"}])
    );
    assert_eq!(doc["gpus"][1]["pods"], json!([]));
    assert_eq!(
        doc["lookups"],
        json!([{"kind": "kubelet", "state": "ok", "error": null}])
    );

    // pick passes over the pod's GPU and says why.
    gpuwatch()
        .args(["pick", "-n", "2"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "GPU 0 skipped: held by k8s ml/trainer-0 (VRAM unknown)",
        ));

    // dcgm-exporter's labels for the pod a GPU is allocated to.
    let exporter = exporter_asking(&kubelet.socket(), &scenario, &["--dcgm-compat"]);
    exporter.wait_ready();
    let metrics = exporter.get("/metrics").body;
    let temp0 = metrics
        .lines()
        .find(|l| l.starts_with("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(
        temp0.contains(r#"pod="trainer-0",namespace="ml",container="trainer""#),
        "{temp0}"
    );
    assert!(
        metrics.contains("gpuwatch_lookup_up{kind=\"kubelet\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gpuwatch_lookup_errors_total{kind=\"kubelet\"} 0\n"),
        "{metrics}"
    );
    assert!(
        !exporter.stderr().contains("kubelet"),
        "a working kubelet is not news: {}",
        exporter.stderr()
    );
}

/// Each way the kubelet can fail is said — on stderr, in the JSON's `lookups` and on
/// /metrics — and leaves the GPU unnamed rather than wrongly named. They all used to give
/// "no pods" with nothing printed (issue 22).
#[test]
fn every_kubelet_failure_is_said_on_stderr_in_json_and_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let cases = [
        (
            Reply::Status("7"),
            "gRPC status 7 (PERMISSION_DENIED; run gpuwatch as root)",
        ),
        (Reply::Status("12"), "gRPC status 12 (UNIMPLEMENTED"),
        (Reply::Status("8"), "gRPC status 8 (RESOURCE_EXHAUSTED"),
        (Reply::Status("14"), "gRPC status 14 (UNAVAILABLE)"),
        (
            // Past the first call's budget (2 s since issue 22; it was 200 ms).
            Reply::After(Duration::from_secs(4)),
            "did not answer within 2000 ms",
        ),
    ];
    for (reply, said) in cases {
        let kubelet = Kubelet::answering(reply);
        let out = gpuwatch_asking(&kubelet.socket(), &scenario)
            .args(["--once", "--json"])
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("kubelet")).collect();
        assert_eq!(lines.len(), 1, "said once: {stderr}");
        assert!(
            lines[0].starts_with("gpuwatch: kubelet lookup failed: "),
            "{stderr}"
        );
        assert!(lines[0].contains(said), "{said}: {stderr}");
        let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(doc["lookups"][0]["kind"], "kubelet", "{doc:#}");
        assert_eq!(doc["lookups"][0]["state"], "failed", "{doc:#}");
        let error = doc["lookups"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(said), "{said}: {error}");
        assert_eq!(doc["gpus"][0]["pods"], json!([]), "no pods, not stale ones");
    }

    // The exporter says it once on stderr and keeps saying it on /metrics.
    let kubelet = Kubelet::answering(Reply::Status("7"));
    let exporter = exporter_asking(&kubelet.socket(), &scenario, &[]);
    exporter.wait_ready();
    let metrics = exporter.get("/metrics").body;
    assert!(
        metrics.contains("gpuwatch_lookup_up{kind=\"kubelet\"} 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gpuwatch_lookup_errors_total{kind=\"kubelet\"} 1\n"),
        "the first call failed: {metrics}"
    );
    let stderr = exporter.stderr();
    assert!(
        stderr.contains("gpuwatch: kubelet lookup failed: ")
            && stderr.contains("PERMISSION_DENIED"),
        "{stderr}"
    );
}

/// A `--kubelet-socket` someone gave must be a socket: a missing path or a plain file is
/// an error at start (exit 2, one line), not a lookup that fails silently forever.
#[test]
fn a_kubelet_socket_given_that_is_not_a_socket_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let file = dir.path().join("kubelet.sock");
    std::fs::write(&file, "").unwrap();
    for (path, said) in [
        (dir.path().join("no-kubelet.sock"), "cannot use"),
        (file, "is not a socket"),
    ] {
        let out = gpuwatch_asking(&path, &scenario)
            .arg("--once")
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains("--kubelet-socket") && stderr.contains(said),
            "{stderr}"
        );
        assert!(out.get_output().stdout.is_empty());
    }
}

/// Off Kubernetes (no socket where the kubelet keeps it, and none named) nothing is asked
/// and nothing said.
#[test]
fn without_a_kubelet_nothing_changes() {
    if Path::new(gpuwatch::procinfo::kubelet::DEFAULT_SOCKET).exists() {
        common::skip("this host has a kubelet socket at the default path");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let out = common::clean_command()
        .env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["--once", "--json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["lookups"], json!([]));
    assert_eq!(doc["gpus"][0]["pods"], json!([]));
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(!stderr.contains("kubelet"), "{stderr}");
}

/// On a Kubernetes node whose kubelet cannot be asked, a GPU allocated to a pod looks
/// free: `pick` refuses and says why (exit 1) rather than hand it out, unless told
/// `--ignore-kubelet` (issue 22: a non-root `pick` once chose a GPU the kubelet had given
/// to a pod).
#[test]
fn pick_refuses_when_the_kubelet_of_this_node_cannot_be_asked() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let kubelet = Kubelet::answering(Reply::Status("7"));
    let out = gpuwatch_asking(&kubelet.socket(), &scenario)
        .arg("pick")
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(out.get_output().stdout.is_empty(), "nothing picked");
    assert!(
        stderr.contains(
            "gpuwatch pick: not picking on a Kubernetes node whose kubelet could not be asked"
        ) && stderr.contains("PERMISSION_DENIED")
            && stderr.contains("--ignore-kubelet picks anyway"),
        "{stderr}"
    );

    // Told to, it picks as off Kubernetes (the H100's VRAM held by no process keeps it out).
    gpuwatch_asking(&kubelet.socket(), &scenario)
        .args(["pick", "--ignore-kubelet"])
        .assert()
        .success()
        .stdout("1\n");

    // A kubelet that answers is no reason to refuse: the pod's GPU is skipped, the other
    // picked.
    let kubelet = Kubelet::start();
    gpuwatch_asking(&kubelet.socket(), &scenario)
        .arg("pick")
        .assert()
        .success()
        .stdout("1\n");
}

#[path = "kubelet_squatter.rs"]
mod squatter;
