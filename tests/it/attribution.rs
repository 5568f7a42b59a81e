//! Who really holds a GPU, end to end (issue 10): real `sleep` processes placed in real
//! cgroups shaped like Docker's, Slurm's and Kubernetes' paths, listed by the fake NVML,
//! then read by the real binary. Creating cgroups needs root (CI runs as root); without it
//! the test is skipped with a printed reason.

use crate::common;
use crate::serve_support;

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::Duration;

use common::cgroups::{Placed, writable_hierarchy};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const CONTAINER: &str = "7d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e";
const POD_UID: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

/// Three sleepers in Docker-, Slurm- and kubepods-shaped cgroups on the first fake GPU.
fn placed(root: &Path) -> [Placed; 3] {
    // Unique per call: the tests of this file run at once in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("{}-{call}", std::process::id());
    [
        // One top-level group each, so each removes all it made.
        Placed::new(root, &format!("gpuwatch-test-{tag}-a/docker/{CONTAINER}")),
        Placed::new(
            root,
            &format!("gpuwatch-test-{tag}-b/slurm/uid_1000/job_48121/step_0"),
        ),
        Placed::new(
            root,
            &format!("gpuwatch-test-{tag}-c/kubepods/burstable/pod{POD_UID}/{CONTAINER}"),
        ),
    ]
}

fn scenario(dir: &Path, procs: &[Placed; 3]) -> PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!(
        procs
            .iter()
            .map(|p| json!({"pid": p.pid(), "kind": "compute", "used_memory": 4_294_967_296u64}))
            .collect::<Vec<_>>()
    );
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

#[test]
fn containers_slurm_jobs_and_pods_show_in_the_job_column() {
    let root = match writable_hierarchy() {
        Ok(r) => r,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    let Some(t) = common::tmux::Tmux::start("attribution", 160, 40) else {
        return;
    };
    let procs = placed(&root);
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}",
        scenario(dir.path(), &procs).display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("slurm 48121", Duration::from_secs(15));
    let row_of = |p: &Placed| {
        screen
            .lines()
            .find(|l| l.contains(&format!(" {} ", p.pid())))
            .unwrap_or_else(|| panic!("no row for {}:\n{screen}", p.pid()))
            .to_string()
    };
    assert!(
        row_of(&procs[0]).contains("docker 7d9e0f1a2b3c"),
        "{screen}"
    );
    assert!(row_of(&procs[1]).contains("slurm 48121"), "{screen}");
    assert!(
        row_of(&procs[2]).contains("k8s pod 1c2d3e4f-5a6"),
        "{screen}"
    );
    assert!(screen.contains("JOB"), "{screen}");
    // The GPU's owners line names jobs with their user.
    assert!(
        screen.contains("docker 7d9e0f1a2b3c (root) 4.0G"),
        "{screen}"
    );
    // The filter narrows to one job.
    t.send(&["/", "job:48121", "Enter"]);
    let narrowed = t.wait_for("1 of 3", Duration::from_secs(10));
    assert!(narrowed.contains(&procs[1].pid().to_string()), "{narrowed}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn the_json_document_and_the_exporter_carry_the_same_workloads() {
    let root = match writable_hierarchy() {
        Ok(r) => r,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    let procs = placed(&root);
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path(), &procs);
    let lib = common::fake_lib();

    let out = common::clean_command()
        .env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
        .arg("--nvml-lib")
        .arg(lib)
        .args(["--once", "--json"])
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let workload_of = |p: &Placed| {
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["pid"] == json!(p.pid()))
            .unwrap_or_else(|| panic!("pid {} missing: {doc:#}", p.pid()))["workload"]
            .clone()
    };
    let docker = workload_of(&procs[0]);
    assert_eq!(docker["kind"], "container", "{docker:#}");
    assert_eq!(docker["engine"], "docker");
    assert_eq!(docker["container_id"], CONTAINER);
    let slurm = workload_of(&procs[1]);
    assert_eq!(
        (slurm["kind"].clone(), slurm["hpc_job"].clone()),
        (json!("slurm"), json!("48121"))
    );
    assert_eq!(slurm["slurm_step"], "0");
    let pod = workload_of(&procs[2]);
    assert_eq!(pod["kind"], "pod", "{pod:#}");
    assert_eq!(pod["pod_uid"], POD_UID);
    assert_eq!(pod["pod_qos"], "burstable");

    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
        .arg("--nvml-lib")
        .arg(lib);
    let exporter = serve_support::Exporter::start(cmd, &["--process-metrics"]);
    exporter.wait_ready();
    let metrics = exporter.get("/metrics").body;
    let series = |pid: u32| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with("gpuwatch_process_gpu_memory_bytes{")
                    && l.contains(&format!("pid=\"{pid}\""))
            })
            .unwrap_or_else(|| panic!("no series for {pid}:\n{metrics}"))
            .to_string()
    };
    assert!(
        series(procs[0].pid()).contains("docker_container=\"7d9e0f1a2b3c\""),
        "{metrics}"
    );
    assert!(
        series(procs[1].pid()).contains("hpc_job=\"48121\""),
        "{metrics}"
    );
    assert!(
        series(procs[2].pid()).contains(&format!("pod=\"{POD_UID}\"")),
        "{metrics}"
    );
}

#[test]
fn real_unpinned_processes_sharing_gpu_0_with_a_job_raise_the_pile_up() {
    let root = match writable_hierarchy() {
        Ok(r) => r,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    // A pinned process in a Docker-shaped cgroup, and a plain one started without
    // CUDA_VISIBLE_DEVICES: two owners on GPU 0 while the T4 (GPU 1) is free.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(100);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut pinned = StdCommand::new("sleep");
    pinned.arg("60").env("CUDA_VISIBLE_DEVICES", "0");
    let pinned = Placed::spawn(
        pinned,
        &root,
        &format!(
            "gpuwatch-test-{}-{call}/docker/{CONTAINER}",
            std::process::id()
        ),
    );
    let mut loose = StdCommand::new("sleep");
    loose.arg("60").env_remove("CUDA_VISIBLE_DEVICES");
    let loose = loose.spawn().expect("sleep");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!([
        {"pid": pinned.pid(), "kind": "compute", "used_memory": 4_294_967_296u64},
        {"pid": loose.id(), "kind": "compute", "used_memory": 1_073_741_824u64},
    ]);
    s["gpus"][1]["processes"] = json!([]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let out = common::clean_command()
        .env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["--once", "--json"])
        .assert()
        .success();
    let mut loose = loose;
    let _ = loose.kill();
    let _ = loose.wait();
    let doc: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let pileup = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "pile_up")
        .unwrap_or_else(|| panic!("no pile-up: {doc:#}"));
    assert_eq!(pileup["gpu_index"], 0);
    assert_eq!(pileup["unpinned_pids"], json!([loose.id()]));
    assert_eq!(pileup["free_gpus"], json!([1]));
    let by_pid = |pid: u32| {
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == json!(pid))
            .unwrap()["environment"]
            .clone()
    };
    assert_eq!(by_pid(pinned.pid())["CUDA_VISIBLE_DEVICES"], "0");
    assert_eq!(
        by_pid(loose.id()),
        json!({}),
        "readable, and nothing pins it"
    );
}

#[test]
fn pick_counts_the_callers_other_job_as_someone_else_and_its_own_job_as_its_own() {
    let root = match writable_hierarchy() {
        Ok(r) => r,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    // A sleep of ours (root) in step 0 of Slurm job 48121 holds 4 GiB on GPU 0.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(200);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let job = format!(
        "gpuwatch-test-{}-{call}/slurm/uid_0/job_48121",
        std::process::id()
    );
    let held = Placed::new(&root, &format!("{job}/step_0"));
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] =
        json!([{"pid": held.pid(), "kind": "compute", "used_memory": 4_294_967_296u64}]);
    // All of GPU 0's used memory is the job's, and it is idle: only the owner rule decides.
    s["gpus"][0]["fields"]["memory_used"] = json!(4_294_967_296u64);
    s["gpus"][0]["fields"]["util_gpu"] = json!(0);
    s["gpus"][1]["processes"] = json!([]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    let pick = |cgroup: Option<&Path>| {
        // pick moves itself into `cgroup` before it starts, so it reads its job from there.
        let enter = cgroup.map_or(String::new(), |c| {
            format!("echo $$ > {}/cgroup.procs && ", c.display())
        });
        let out = common::cgroups::gpuwatch_in(&enter, "", "pick -n 2", &path, &[]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // From outside the job (the test's own cgroup), the job is another job, though ours.
    let (code, _, stderr) = pick(None);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("GPU 0 skipped: held by slurm 48121 (root)"),
        "{stderr}"
    );
    // From another step of the same job, GPU 0's memory is the caller's own.
    let step = root.join(&job).join("step_batch");
    std::fs::create_dir(&step).unwrap();
    let (code, stdout, stderr) = pick(Some(&step));
    let _ = std::fs::remove_dir(&step);
    assert_eq!((code, stdout.as_str()), (Some(0), "1,0"), "{stderr}");
}
