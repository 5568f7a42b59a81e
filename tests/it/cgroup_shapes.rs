//! The cgroup shapes real installations make (issue 22) and a user's delegated subtree
//! (issue 26, point 3), end to end: real `sleep`s in real cgroups of those shapes, listed
//! by the fake NVML, read by the real binary through `--once --json`. Needs root to make
//! cgroups (CI runs as root); skipped with a printed reason otherwise.

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::{Arc, Mutex};

use common::cgroups::{Placed, gpuwatch_in, writable_hierarchy};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const CID: &str = "0924303130f9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f607182930";
const CID2: &str = "4ef27d6f859f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293";
const POD_ID: &str = "9999999999999999999999999999999999999999999999999999999999999999";
const POD_UID: &str = "0f9c2b1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";

/// A cgroup hierarchy, or `None` after saying why the test is skipped.
fn hierarchy() -> Option<PathBuf> {
    writable_hierarchy().map_err(|why| common::skip(&why)).ok()
}

/// A top-level test cgroup name, unique per call (the tests of this file run at once).
fn tag(test: &str) -> String {
    format!("gpuwatch-shapes-{}-{test}", std::process::id())
}

/// A scenario with `pids` on GPU 0 (4 GiB each) and nothing on GPU 1.
fn scenario(dir: &Path, pids: &[u32]) -> PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!(
        pids.iter()
            .map(|p| json!({"pid": p, "kind": "compute", "used_memory": 4_294_967_296u64}))
            .collect::<Vec<_>>()
    );
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

/// `gpuwatch --once --json` run by `sh -c "{enter}exec {wrap}gpuwatch …"`, with `env`.
fn once_json(scenario: &Path, enter: &str, wrap: &str, env: &[(&str, &str)]) -> Value {
    let out = gpuwatch_in(enter, wrap, "--once --json", scenario, env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON document")
}

fn workload_of(doc: &Value, pid: u32) -> Value {
    doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == json!(pid))
        .unwrap_or_else(|| panic!("pid {pid} missing: {doc:#}"))["workload"]
        .clone()
}

#[test]
fn debian_slurm_podman_pods_and_slurm_without_cgroups() {
    let Some(root) = hierarchy() else { return };
    let t = tag("a");
    // Debian's MULTIPLE_SLURMD build names the node in the step scope.
    let debian = Placed::new(
        &root,
        &format!("{t}-1/system.slice/vm_slurmstepd.scope/job_8/step_0/user/task_0"),
    );
    let podman = Placed::new(&root, &format!("{t}-2/libpod_parent/{POD_ID}/libpod-{CID}"));
    // proctrack/linuxproc: the task stays in slurmd's cgroup; its environment says the job.
    let mut task = StdCommand::new("sleep");
    task.arg("600")
        .env("SLURM_JOB_ID", "77")
        .env("SLURM_STEP_ID", "0")
        .env("SLURM_ARRAY_JOB_ID", "70")
        .env("SLURM_ARRAY_TASK_ID", "7");
    let linuxproc = Placed::spawn(task, &root, &format!("{t}-3/system.slice/slurmd.service"));
    let dir = tempfile::tempdir().unwrap();
    let pids = [debian.pid(), podman.pid(), linuxproc.pid()];
    let doc = once_json(&scenario(dir.path(), &pids), "", "", &[]);

    let job = workload_of(&doc, debian.pid());
    assert_eq!(
        (&job["kind"], &job["hpc_job"], &job["slurm_step"]),
        (&json!("slurm"), &json!("8"), &json!("0")),
        "{job:#}"
    );
    let ctr = workload_of(&doc, podman.pid());
    assert_eq!(
        (&ctr["kind"], &ctr["engine"], &ctr["container_id"]),
        (&json!("container"), &json!("podman"), &json!(CID)),
        "the libpod- component, not the pod's id: {ctr:#}"
    );
    let env_job = workload_of(&doc, linuxproc.pid());
    assert_eq!(
        (
            &env_job["kind"],
            &env_job["hpc_job"],
            &env_job["slurm_step"]
        ),
        (&json!("slurm"), &json!("77"), &json!("0")),
        "{env_job:#}"
    );
    // An array task is in the JSON as users know it (70_7), beside its own job id.
    assert_eq!(
        (&env_job["slurm_array_job"], &env_job["slurm_array_task"]),
        (&json!("70"), &json!(7)),
        "{env_job:#}"
    );
    assert!(
        job.get("slurm_array_job").is_none(),
        "not an array task: {job:#}"
    );
    crate::json_schema::assert_conforms(&doc, "Slurm shapes");
}

/// Anyone can set `SLURM_JOB_ID`: outside a job's cgroup (Slurm without cgroups), a job the
/// environment names is believed only while its user is the process's own. `nobody`
/// claiming a job of root's is shown as nobody's, with no job; claiming its own, as that job.
#[test]
fn a_job_only_the_environment_names_must_be_the_owners_own() {
    let Some(root) = hierarchy() else { return };
    let t = tag("claims");
    let claim = |job: &str, user: &str, n: u32| {
        let mut task = StdCommand::new("sleep");
        task.arg("600")
            .env("SLURM_JOB_ID", job)
            .env("SLURM_JOB_USER", user)
            .uid(65534)
            .gid(65534);
        Placed::spawn(task, &root, &format!("{t}-{n}/system.slice/slurmd.service"))
    };
    // Job ids no test cluster hands out, so a running slurmctld cannot answer for them.
    let (forged, own) = (claim("987654", "root", 1), claim("987655", "nobody", 2));
    let dir = tempfile::tempdir().unwrap();
    let doc = once_json(
        &scenario(dir.path(), &[forged.pid(), own.pid()]),
        "",
        "",
        &[],
    );
    let forged_doc = |key: &str| {
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == json!(forged.pid()))
            .unwrap()[key]
            .clone()
    };
    assert_eq!(forged_doc("user"), json!("nobody"), "{doc:#}");
    assert!(forged_doc("workload").is_null(), "{doc:#}");
    let job = workload_of(&doc, own.pid());
    assert_eq!(
        (&job["hpc_job"], &job["hpc_job_user"]),
        (&json!("987655"), &json!("nobody")),
        "{job:#}"
    );
}

/// gpuwatch in a private cgroup namespace (`unshare --cgroup`, as in a container on a
/// cgroup v2 host or any pod) reads other containers' paths relative to its own.
#[test]
fn paths_relative_to_a_private_cgroup_namespace_are_attributed() {
    let Some(root) = hierarchy() else { return };
    if StdCommand::new("unshare").arg("--help").output().is_err() {
        common::skip("unshare not installed");
        return;
    }
    let t = tag("b");
    let base = format!("{t}/kubepods");
    // Our own container, a sibling of it, and another pod's container.
    let own = root.join(format!("{base}/burstable/pod{POD_UID}-self"));
    let sibling = Placed::new(&root, &format!("{base}/burstable/pod{POD_UID}-self/{CID}"));
    let other = Placed::new(&root, &format!("{base}/besteffort/pod{POD_UID}/{CID2}"));
    let own = OwnCgroup::make(own.join("gpuwatch"));
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path(), &[sibling.pid(), other.pid()]);
    let enter = format!("echo $$ > {}/cgroup.procs && ", own.0.display());
    let doc = once_json(&scenario, &enter, "unshare --cgroup ", &[]);
    drop(own);
    // Read from the namespace: `0::/../<CID>` and `/../../../besteffort/pod<UID>/<CID2>`.
    let ctr = workload_of(&doc, sibling.pid());
    assert_eq!(
        (&ctr["kind"], &ctr["container_id"]),
        (&json!("container"), &json!(CID)),
        "{ctr:#}"
    );
    let pod = workload_of(&doc, other.pid());
    assert_eq!(
        (&pod["kind"], &pod["pod_uid"], &pod["pod_qos"]),
        (&json!("pod"), &json!(POD_UID), &json!("besteffort")),
        "{pod:#}"
    );
    assert_eq!(pod["container_id"], CID2);
}

/// The cgroup gpuwatch runs in, removed (once gpuwatch has exited) even when a test fails,
/// so the sleepers' cgroups above it can be removed too.
struct OwnCgroup(PathBuf);

impl OwnCgroup {
    fn make(path: PathBuf) -> OwnCgroup {
        std::fs::create_dir(&path).expect("make our own cgroup");
        OwnCgroup(path)
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A stand-in system Docker engine that calls every container `coredns` and counts the ids
/// it was asked about.
struct SystemEngine {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    asked: Arc<Mutex<HashMap<String, usize>>>,
}

impl SystemEngine {
    fn start() -> SystemEngine {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let asked: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let seen = Arc::clone(&asked);
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
                let line = String::from_utf8_lossy(&request).to_string();
                if let Some(id) = line
                    .split("/containers/")
                    .nth(1)
                    .and_then(|r| r.split('/').next())
                {
                    *seen.lock().unwrap().entry(id.to_string()).or_default() += 1;
                }
                let body = r#"{"Name":"/coredns","Config":{"Image":"coredns:1.11","Labels":{}}}"#;
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        SystemEngine {
            _dir: dir,
            socket,
            asked,
        }
    }

    fn asked(&self, id: &str) -> usize {
        self.asked.lock().unwrap().get(id).copied().unwrap_or(0)
    }
}

/// Issue 26, point 3: `nobody` makes a `docker-<CID>.scope` and a `kubepods…pod<uid>` in its
/// own delegated subtree. Neither takes the system engine's container name or a pod: the
/// container is nobody's (its rootless engine's), the system engine is never asked.
#[test]
fn container_and_pod_paths_in_a_users_subtree_are_that_users() {
    let Some(root) = hierarchy() else { return };
    let engine = SystemEngine::start();
    let t = tag("c");
    let subtree = format!("{t}-1/user.slice/user-65534.slice/user@65534.service/app.slice");
    let as_nobody = || {
        let mut sleep = StdCommand::new("sleep");
        sleep.arg("600").uid(65534).gid(65534);
        sleep
    };
    let squatter = Placed::spawn(as_nobody(), &root, &format!("{subtree}/docker-{CID}.scope"));
    let fake_pod = Placed::spawn(
        as_nobody(),
        &root,
        &format!("{subtree}/kubepods/burstable/pod{POD_UID}/{CID}"),
    );
    // The system engine's real container: named through it (the stand-in works).
    let system = Placed::new(&root, &format!("{t}-2/system.slice/docker-{CID2}.scope"));
    let dir = tempfile::tempdir().unwrap();
    let pids = [squatter.pid(), fake_pod.pid(), system.pid()];
    let host = format!("unix://{}", engine.socket.display());
    let doc = once_json(
        &scenario(dir.path(), &pids),
        "",
        "",
        &[("DOCKER_HOST", &host)],
    );

    let named = workload_of(&doc, system.pid());
    assert_eq!(named["container"], "coredns", "{named:#}");
    let ctr = workload_of(&doc, squatter.pid());
    assert_eq!(
        (&ctr["kind"], &ctr["container_id"], &ctr["unit_uid"]),
        (&json!("container"), &json!(CID), &json!(65534)),
        "{ctr:#}"
    );
    assert!(ctr["container"].is_null(), "not coredns: {ctr:#}");
    assert_eq!(engine.asked(CID), 0, "the system engine is never asked");
    let not_pod = workload_of(&doc, fake_pod.pid());
    assert_ne!(not_pod["kind"], "pod", "{not_pod:#}");
    assert!(not_pod["pod_uid"].is_null(), "{not_pod:#}");
}
