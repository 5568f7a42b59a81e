//! gpuwatch against a real Docker engine (issue 22): Debian's `dockerd` (docker.io) started
//! by this test binary in a temp dir (vfs storage, no iptables, no bridge, the cgroupfs
//! driver), an image made by `docker import` from a tiny local tree (`sleep` and its libc:
//! no registry is reachable), a named container and a Compose-labelled one, each running
//! `sleep`. The fake NVML lists their host PIDs, so the real cgroup path a real engine made
//! and the real engine API's answer meet in `--once --json`. The same containers then meet
//! engines that fail (stand-in sockets that answer 403, garbage, or nothing, and the real
//! socket refused to a non-root user): each failure is said on stderr, in the JSON's
//! `lookups` and on /metrics. One engine per test binary; skipped (with the reason) where
//! dockerd cannot run: not root, no docker.io.

use crate::common;
use crate::serve_support;

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::real::{self, Keeper};
use serde_json::{Value, json};

const IMAGE: &str = "gpuwatch-test/sleep:1";

/// The engine of this test binary and its two containers' host PIDs.
struct Engine {
    dir: tempfile::TempDir,
    /// Stops the containers and dockerd when the test binary exits.
    _keeper: Keeper,
    trainer: u32,
    worker: u32,
}

impl Engine {
    fn socket(&self) -> PathBuf {
        self.dir.path().join("docker.sock")
    }

    fn docker(&self, args: &[&str]) -> Result<String, String> {
        docker(&self.socket(), args)
    }
}

fn docker(socket: &Path, args: &[&str]) -> Result<String, String> {
    real::cli_stdout(
        Command::new("docker")
            .env("DOCKER_HOST", format!("unix://{}", socket.display()))
            .args(args),
        &format!("docker {args:?}"),
    )
}

fn engine() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE.get_or_init(start).as_ref().map_err(Clone::clone)
}

fn start() -> Result<Engine, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: dockerd needs root".into());
    }
    for tool in ["dockerd", "docker"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(format!("{tool} not installed (apt-get install docker.io)"));
        }
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path().display();
    // The keeper: dockerd in the background; at EOF on stdin, the containers and the
    // engine are stopped and the data root removed.
    let script = format!(
        "dockerd --storage-driver vfs --iptables=false --bridge=none \
           --exec-opt native.cgroupdriver=cgroupfs --data-root {d}/root --exec-root {d}/exec \
           --pidfile {d}/docker.pid -H unix://{d}/docker.sock >{d}/dockerd.log 2>&1 &
         engine=$!
         echo started
         cat >/dev/null
         DOCKER_HOST=unix://{d}/docker.sock docker rm -f gpuwatch-trainer ml-worker-1 >/dev/null 2>&1
         kill $engine; wait $engine
         rm -rf {d}"
    );
    let (keeper, _) = Keeper::start(Command::new("sh").args(["-c", &script]))?;
    let socket = dir.path().join("docker.sock");
    let deadline = Instant::now() + Duration::from_secs(90);
    while docker(&socket, &["version"]).is_err() {
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.path().join("dockerd.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            return Err(format!("dockerd did not start here: {tail:?}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut engine = Engine {
        dir,
        _keeper: keeper,
        trainer: 0,
        worker: 0,
    };
    import_image(&engine)?;
    engine.trainer = run(&engine, "gpuwatch-trainer", &[])?;
    engine.worker = run(
        &engine,
        "ml-worker-1",
        &[
            "--label=com.docker.compose.project=ml",
            "--label=com.docker.compose.service=worker",
            "--label=com.docker.compose.container-number=1",
        ],
    )?;
    Ok(engine)
}

/// `docker import` of a tree holding `sleep` and the libraries it links.
fn import_image(engine: &Engine) -> Result<(), String> {
    let tree = real::sleep_tree(engine.dir.path())?;
    let script = format!(
        "tar -C {} -c . | DOCKER_HOST=unix://{} docker import - {IMAGE}",
        tree.display(),
        engine.socket().display()
    );
    let out = Command::new("sh").args(["-c", &script]).output();
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "docker import: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("sh: {e}")),
    }
}

/// A container running `sleep`, by name; its host PID.
fn run(engine: &Engine, name: &str, labels: &[&str]) -> Result<u32, String> {
    // The binary's path inside the image is the host's (the tree copies it there).
    let sleep = real::which("sleep")?;
    let sleep = sleep.to_string_lossy();
    let mut args = vec!["run", "-d", "--name", name];
    args.extend_from_slice(labels);
    args.extend([IMAGE, &sleep, "600"]);
    engine.docker(&args)?;
    engine
        .docker(&["inspect", "-f", "{{.State.Pid}}", name])?
        .parse()
        .map_err(|e| format!("{name}'s PID: {e}"))
}

fn engine_or_skip() -> Option<&'static Engine> {
    engine().map_err(|why| common::skip(&why)).ok()
}

/// The fake NVML listing both containers' `sleep`s on the H100.
fn scenario(engine: &Engine) -> PathBuf {
    real::scenario(
        engine.dir.path(),
        json!([
            {"pid": engine.trainer, "kind": "compute", "used_memory": 4_294_967_296u64},
            {"pid": engine.worker, "kind": "compute", "used_memory": 2_147_483_648u64},
        ]),
    )
}

/// `gpuwatch --once --json` with `DOCKER_HOST` at `socket`, as `uid` when given.
fn once_json(engine: &Engine, socket: &Path, uid: Option<u32>) -> (Value, String) {
    real::json_doc(
        real::gpuwatch(&scenario(engine), uid)
            .env("DOCKER_HOST", format!("unix://{}", socket.display()))
            .args(["--once", "--json"]),
    )
}

fn workload_of(doc: &Value, pid: u32) -> Value {
    doc["processes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pid"] == pid))
        .unwrap_or_else(|| panic!("no process {pid}: {doc:#}"))["workload"]
        .clone()
}

#[test]
fn a_real_engine_names_its_containers() {
    let Some(engine) = engine_or_skip() else {
        return;
    };
    let (doc, stderr) = once_json(engine, &engine.socket(), None);
    let trainer = workload_of(&doc, engine.trainer);
    let full_id = engine
        .docker(&["inspect", "-f", "{{.Id}}", "gpuwatch-trainer"])
        .unwrap();
    assert_eq!(trainer["kind"], "container", "{trainer:#}");
    assert_eq!(trainer["engine"], "docker");
    assert_eq!(trainer["container_id"], full_id.as_str());
    assert_eq!(trainer["container"], "gpuwatch-trainer");
    assert_eq!(trainer["image"], IMAGE);
    let worker = workload_of(&doc, engine.worker);
    assert_eq!(worker["container"], "ml-worker-1", "{worker:#}");
    assert_eq!(worker["compose_project"], "ml");
    assert_eq!(worker["compose_service"], "worker");
    assert_eq!(
        doc["lookups"],
        json!([{"kind": "docker", "state": "ok", "error": null}])
    );
    assert!(
        !stderr.contains("docker"),
        "an answer is not news: {stderr}"
    );
}

/// A stand-in engine on a unix socket: answers every request with `reply` (or, with
/// `None`, reads and never answers), for as long as the test holds it.
fn stand_in(reply: Option<&'static [u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let socket = dir.path().join("docker.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0; 4096];
            let _ = conn.read(&mut buf);
            match reply {
                Some(reply) => {
                    let _ = conn.write_all(reply);
                }
                // Held open, unanswered, until the test ends.
                None => std::mem::forget(conn),
            }
        }
    });
    (dir, socket)
}

/// Every way an engine can fail to name the real containers is said once on stderr and
/// kept in the JSON's `lookups` (they used to leave the short id with nothing said).
#[test]
fn an_engine_that_fails_is_said() {
    let Some(engine) = engine_or_skip() else {
        return;
    };
    let forbidden: &[u8] = b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\
        Content-Length: 32\r\nConnection: close\r\n\r\n{\"message\":\"authorization denied\"}";
    let garbage: &[u8] = b"SSH-2.0-OpenSSH_9.2\r\n";
    let cases = [
        (stand_in(Some(forbidden)), "403"),
        (stand_in(Some(garbage)), "naming container"),
        (stand_in(None), "no answer within"),
    ];
    for ((_dir, socket), said) in &cases {
        let (doc, stderr) = once_json(engine, socket, None);
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("docker")).collect();
        assert_eq!(lines.len(), 1, "said once: {stderr}");
        assert!(
            lines[0].starts_with("gpuwatch: docker lookup failed: naming container ")
                && lines[0].contains(said),
            "{said}: {stderr}"
        );
        assert_eq!(doc["lookups"][0]["kind"], "docker", "{doc:#}");
        assert_eq!(doc["lookups"][0]["state"], "failed", "{doc:#}");
        let error = doc["lookups"][0]["error"].as_str().unwrap_or_default();
        assert!(error.contains(said), "{said}: {error}");
        // Unnamed, but still the container: the short id, never someone else's name.
        let trainer = workload_of(&doc, engine.trainer);
        assert_eq!(trainer["kind"], "container", "{trainer:#}");
        assert!(trainer["container"].is_null(), "{trainer:#}");
    }
}

/// A user outside the docker group cannot open the real engine's socket: told so.
#[test]
fn the_real_socket_refused_to_a_non_root_user_is_said() {
    let Some(engine) = engine_or_skip() else {
        return;
    };
    let (doc, stderr) = once_json(engine, &engine.socket(), Some(65534));
    let why = format!(
        "permission denied on {} (is this user in the docker group?)",
        engine.socket().display()
    );
    assert!(
        stderr.contains("gpuwatch: docker lookup failed: naming container ")
            && stderr.contains(&why),
        "{stderr}"
    );
    assert_eq!(doc["lookups"][0]["state"], "failed", "{doc:#}");
}

/// The exporter keeps a failed engine lookup on /metrics.
#[test]
fn the_exporter_counts_the_failed_engine_lookup() {
    let Some(engine) = engine_or_skip() else {
        return;
    };
    let (_dir, socket) = stand_in(Some(b"HTTP/1.1 500 Internal Server Error\r\n\r\n"));
    let mut cmd = serve_support::gpuwatch();
    cmd.env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .env("GPUWATCH_FAKE_NVML_SCENARIO", scenario(engine))
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    let exporter = serve_support::Exporter::start(cmd, &[]);
    exporter.wait_ready();
    let deadline = Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let body = exporter.get("/metrics").body;
        if body.contains("gpuwatch_lookup_up{kind=\"docker\"}") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        metrics.contains("gpuwatch_lookup_up{kind=\"docker\"} 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("gpuwatch_lookup_errors_total{kind=\"docker\"} "),
        "{metrics}"
    );
    let stderr = exporter.stderr();
    assert!(
        stderr.contains("gpuwatch: docker lookup failed: naming container "),
        "{stderr}"
    );
}

/// The TUI says a failed engine lookup too (its status line), as it says the kubelet's.
#[test]
fn the_tui_says_the_failed_engine_lookup() {
    let Some(engine) = engine_or_skip() else {
        return;
    };
    let Some(t) = common::tmux::Tmux::start("real-docker", 200, 40) else {
        return;
    };
    let forbidden: &[u8] = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
    let (_dir, socket) = stand_in(Some(forbidden));
    let cmd = format!(
        "DOCKER_HOST=unix://{} GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        socket.display(),
        scenario(engine).display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for(
        "docker lookup failed: naming container",
        Duration::from_secs(20),
    );
    assert!(screen.contains("docker API answered HTTP 403"), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}
