//! gpuwatch against a real Podman engine (issue 22): Debian's `podman` (rootful, its own
//! storage root in a temp dir, vfs storage, the cgroupfs manager, no network), an image made
//! by `podman import` from a tiny local tree (`sleep` and its libc: no registry is
//! reachable), a named container running `sleep`, and Podman's Docker-compatible API served
//! by `podman system service` on a unix socket that `$CONTAINER_HOST` names (as Podman's
//! remote client takes it). The fake NVML lists the container's host PID, so the cgroup path
//! a real Podman made (`/libpod_parent/libpod-<id>` under cgroupfs) and the real API's
//! answer meet in `--once --json`. Skipped (with the reason) where Podman cannot run: not
//! root, no podman.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::real::{self, Keeper};
use serde_json::{Value, json};

const IMAGE: &str = "localhost/gpuwatch-test/sleep:1";
const NAME: &str = "gpuwatch-podman-trainer";

/// The engine of this test binary and its container's host PID.
struct Engine {
    dir: tempfile::TempDir,
    /// Stops the container and the API service when the test binary exits.
    _keeper: Keeper,
    pid: u32,
}

impl Engine {
    fn socket(&self) -> PathBuf {
        self.dir.path().join("podman.sock")
    }
}

/// Podman's global flags: this test's own storage, nothing of the host's.
fn globals(dir: &Path) -> Vec<String> {
    let d = dir.display();
    [
        format!("--root={d}/root"),
        format!("--runroot={d}/run"),
        "--storage-driver=vfs".into(),
        "--cgroup-manager=cgroupfs".into(),
        "--events-backend=file".into(),
        // runc (docker.io brings it): crun refuses a host with hybrid cgroups ("drop all
        // controllers from cgroupv2"), which CI machines can be.
        "--runtime=runc".into(),
    ]
    .into()
}

fn podman(dir: &Path, args: &[&str]) -> Result<String, String> {
    real::cli_stdout(
        Command::new("podman").args(globals(dir)).args(args),
        &format!("podman {args:?}"),
    )
}

fn engine() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE.get_or_init(start).as_ref().map_err(Clone::clone)
}

fn start() -> Result<Engine, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: rootful podman needs root".into());
    }
    if Command::new("podman").arg("--version").output().is_err() {
        return Err("podman not installed (apt-get install podman)".into());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    import_image(dir.path())?;
    let pid = run(dir.path())?;
    // The keeper: the API service in the background; at EOF on stdin, the container and the
    // service are stopped and the storage removed.
    let flags = globals(dir.path()).join(" ");
    let d = dir.path().display();
    let script = format!(
        "podman {flags} system service --time=0 unix://{d}/podman.sock >{d}/service.log 2>&1 &
         service=$!
         echo started
         cat >/dev/null
         podman {flags} rm -f -t 0 {NAME} >/dev/null 2>&1
         kill $service; wait $service
         rm -rf {d}"
    );
    let (keeper, _) = Keeper::start(Command::new("sh").args(["-c", &script]))?;
    let engine = Engine {
        dir,
        _keeper: keeper,
        pid,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !engine.socket().exists() {
        if Instant::now() > deadline {
            let log =
                std::fs::read_to_string(engine.dir.path().join("service.log")).unwrap_or_default();
            return Err(format!("podman system service did not start here: {log}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(engine)
}

/// `podman import` of a tree holding `sleep` and the libraries it links.
fn import_image(dir: &Path) -> Result<(), String> {
    let tree = real::sleep_tree(dir)?;
    let tar = dir.join("tree.tar");
    let out = Command::new("tar")
        .arg("-C")
        .arg(&tree)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .output()
        .map_err(|e| format!("tar: {e}"))?;
    if !out.status.success() {
        return Err(format!("tar: {}", String::from_utf8_lossy(&out.stderr)));
    }
    podman(dir, &["import", &tar.to_string_lossy(), IMAGE]).map(|_| ())
}

/// The named container running `sleep`; its host PID. Podman raises the container's open-file
/// and process limits by default, which a sandbox without CAP_SYS_RESOURCE refuses
/// ("setrlimit: operation not permitted"), so both are set low and explicitly.
fn run(dir: &Path) -> Result<u32, String> {
    let sleep = real::which("sleep")?;
    let sleep = sleep.to_string_lossy();
    podman(
        dir,
        &[
            "run",
            "-d",
            "--name",
            NAME,
            "--network=none",
            "--ulimit=nofile=1024:1024",
            "--ulimit=nproc=4096:4096",
            IMAGE,
            &sleep,
            "600",
        ],
    )?;
    podman(dir, &["inspect", "-f", "{{.State.Pid}}", NAME])?
        .parse()
        .map_err(|e| format!("{NAME}'s PID: {e}"))
}

fn workload_of(doc: &Value, pid: u32) -> Value {
    doc["processes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pid"] == pid))
        .unwrap_or_else(|| panic!("no process {pid}: {doc:#}"))["workload"]
        .clone()
}

/// `gpuwatch --once --json` with `$CONTAINER_HOST` at `socket`.
fn once_json(engine: &Engine, socket: &Path) -> (Value, String) {
    let scenario = real::scenario(
        engine.dir.path(),
        json!([{"pid": engine.pid, "kind": "compute", "used_memory": 4_294_967_296u64}]),
    );
    real::json_doc(
        real::gpuwatch(&scenario, None)
            .env("CONTAINER_HOST", format!("unix://{}", socket.display()))
            .args(["--once", "--json"]),
    )
}

#[test]
fn a_real_podman_names_its_container() {
    let engine = match engine() {
        Ok(engine) => engine,
        Err(why) => return common::skip(why.as_str()),
    };
    let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", engine.pid)).unwrap();
    assert!(
        cgroup.contains("/libpod_parent/libpod-"),
        "the shape this test is about (cgroupfs): {cgroup}"
    );
    let (doc, stderr) = once_json(engine, &engine.socket());
    let workload = workload_of(&doc, engine.pid);
    let full_id = podman(engine.dir.path(), &["inspect", "-f", "{{.Id}}", NAME]).unwrap();
    assert_eq!(workload["kind"], "container", "{workload:#}");
    assert_eq!(workload["engine"], "podman", "{workload:#}");
    assert_eq!(workload["container_id"], full_id.as_str(), "{workload:#}");
    assert_eq!(workload["container"], NAME, "{workload:#}\n{stderr}");
    assert_eq!(workload["image"], IMAGE, "{workload:#}");
    let lookups = doc["lookups"].as_array().cloned().unwrap_or_default();
    assert!(
        lookups
            .iter()
            .any(|l| l["kind"] == "podman" && l["state"] == "ok"),
        "{lookups:?}"
    );
}

/// A Podman socket that is not there is not news (the default rootful one usually is not);
/// one that answers garbage is said, and the container keeps its short id, never a name.
#[test]
fn a_podman_that_fails_is_said_and_names_nothing() {
    let engine = match engine() {
        Ok(engine) => engine,
        Err(why) => return common::skip(why.as_str()),
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("podman.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
        }
    });
    let (doc, stderr) = once_json(engine, &socket);
    let workload = workload_of(&doc, engine.pid);
    assert_eq!(workload["kind"], "container", "{workload:#}");
    assert!(workload["container"].is_null(), "{workload:#}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("podman")).collect();
    assert_eq!(said.len(), 1, "said once: {stderr}");
    let failed = doc["lookups"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["kind"] == "podman"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(failed["state"], "failed", "{doc:#}");
}
