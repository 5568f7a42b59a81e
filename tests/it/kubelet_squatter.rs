//! The squatter warning through the binary (issue 22): a real `sleep` in a real pod-shaped
//! cgroup (`kubepods/besteffort/pod<uid>/<cid>`), named `ml/squatter` by a stand-in Docker
//! engine's `io.kubernetes.*` labels (cri-dockerd), sits on the H100 the stand-in kubelet
//! allocated to ml/trainer-0. `--once --json` carries a `squatter` warning and `--once`
//! says it. Making cgroups needs root (CI runs as root); skipped with a printed reason
//! otherwise.

use super::{H100, Kubelet};
use crate::common;
use crate::common::cgroups::{Placed, gpuwatch_in, writable_hierarchy};

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

const SQUATTER_UID: &str = "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const CID: &str = "5e5e5e5e0f9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829305";
/// 2.7 GiB, as the sentence rounds it.
const HELD: u64 = 2_899_102_924;

/// A stand-in Docker engine (cri-dockerd's) that knows every container as the squatter pod's.
struct Engine {
    dir: tempfile::TempDir,
}

impl Engine {
    fn start() -> Engine {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("docker.sock")).unwrap();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.ends_with(b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let body = format!(
                    r#"{{"Name":"/k8s_main_squatter_ml_{SQUATTER_UID}_0","Config":{{"Image":"pytorch",
                    "Labels":{{"io.kubernetes.pod.name":"squatter","io.kubernetes.pod.namespace":"ml",
                    "io.kubernetes.pod.uid":"{SQUATTER_UID}","io.kubernetes.container.name":"main"}}}}}}"#
                );
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Engine { dir }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.dir.path().join("docker.sock").display())
    }
}

/// The fake NVML's two GPUs, `pid` holding `HELD` on the H100 (GPU 0).
fn scenario(dir: &Path, pid: u32) -> PathBuf {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvml/two_gpus.json"
    );
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!([{"pid": pid, "kind": "compute", "used_memory": HELD}]);
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

#[test]
fn a_pod_on_a_gpu_allocated_to_another_pod_is_warned_about() {
    let root = match writable_hierarchy() {
        Ok(r) => r,
        Err(why) => return common::skip(&why),
    };
    let kubelet = Kubelet::start();
    let engine = Engine::start();
    let tag = format!("gpuwatch-squatter-{}", std::process::id());
    let squatter = Placed::new(
        &root,
        &format!("{tag}/kubepods/besteffort/pod{SQUATTER_UID}/{CID}"),
    );
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path(), squatter.pid());
    let host = engine.host();
    let run = |args: &str| {
        let args = format!("--kubelet-socket {} {args}", kubelet.socket().display());
        let out = gpuwatch_in("", "", &args, &scenario, &[("DOCKER_HOST", &host)]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (String::from_utf8(out.stdout).unwrap(), stderr)
    };
    let sentence =
        "GPU 0 is allocated to ml/trainer-0, but pod ml/squatter (9a9a9a9a) holds 2.7 GiB on it";

    let (json_out, stderr) = run("--once --json");
    let doc: Value = serde_json::from_str(&json_out).unwrap();
    let warnings = doc["warnings"].as_array().unwrap();
    let warning = warnings
        .iter()
        .find(|w| w["kind"] == "squatter")
        .unwrap_or_else(|| panic!("no squatter warning: {doc:#}\n{stderr}"));
    assert_eq!(
        warning,
        &json!({
            "subject": "gpu", "gpu_uuid": H100, "gpu_index": 0, "host": null,
            "severity": "warning", "kind": "squatter",
            "pod_uid": SQUATTER_UID, "pod_namespace": "ml", "pod_name": "squatter",
            "gpu_memory": HELD, "allocated_to": ["ml/trainer-0"],
            "message": sentence,
        })
    );
    assert_eq!(
        warnings.iter().filter(|w| w["kind"] == "squatter").count(),
        1
    );
    // Named as itself, never as the pod the GPU is allocated to.
    let proc = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == json!(squatter.pid()))
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(proc["workload"]["pod"], "squatter", "{proc:#}");
    // Said as a warning, not (also) as a once-only notice on stderr.
    assert!(!stderr.contains("allocated to"), "{stderr}");

    let (text, _) = run("--once");
    assert!(text.contains(sentence), "{text}");
}
