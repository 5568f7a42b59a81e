//! gpuwatch against a real Slurm (issue 22): Debian's slurm-wlm (slurmctld, slurmd) and
//! munge, a one-node cluster on 127.0.0.1 in a temp dir (ProctrackType=proctrack/cgroup,
//! TaskPlugin=task/cgroup, CgroupPlugin=cgroup/v1: the hybrid hosts CI runs on), a job
//! submitted with `sbatch --wrap` as `nobody`, and gpuwatch on the fake NVML with that job's
//! `sleep`: the JOB column and the JSON carry the real `scontrol` answer (name, user,
//! account) for the real cgroup path slurmd made. Debian builds Slurm with
//! MULTIPLE_SLURMD, so on cgroup v1 that path is `/slurm_<node>/uid_<u>/job_<j>/step_<s>`
//! (upstream: `/slurm/…`); this test is what keeps it recognised. One cluster per test
//! binary, skipped with the reason where it cannot start (not root, no slurm-wlm, no
//! cgroup v1 freezer).

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::real::{self, Keeper};
use serde_json::{Value, json};

/// The cluster of this test binary and its one job.
struct Cluster {
    dir: tempfile::TempDir,
    /// Stops the job and the daemons when the test binary exits.
    _keeper: Keeper,
    job: u64,
    /// The job's `sleep`, as the host sees it.
    pid: u32,
}

impl Cluster {
    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }
}

fn cluster() -> Result<&'static Cluster, String> {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    CLUSTER.get_or_init(start).as_ref().map_err(Clone::clone)
}

fn cluster_or_skip() -> Option<&'static Cluster> {
    cluster().map_err(|why| common::skip(&why)).ok()
}

/// slurm.conf for one node named `node` on 127.0.0.1, everything under `d`.
fn slurm_conf(d: &str, node: &str, port: u32) -> String {
    format!(
        "ClusterName=gpuwatch\nSlurmctldHost=localhost(127.0.0.1)\nSlurmUser=root\n\
         SlurmdUser=root\nAuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\n\
         CredType=cred/munge\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldPort={port}\nSlurmdPort={}\nProctrackType=proctrack/cgroup\n\
         TaskPlugin=task/cgroup\nSchedulerType=sched/builtin\nSelectType=select/linear\n\
         ReturnToService=2\nMpiDefault=none\nJobCompType=jobcomp/none\n\
         AccountingStorageType=accounting_storage/none\n\
         SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
        port + 1
    )
}

fn start() -> Result<Cluster, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: slurmd and munged need root".into());
    }
    for tool in ["slurmctld", "slurmd", "munged", "sbatch", "scontrol"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Err(format!(
                "{tool} not installed (apt-get install slurm-wlm munge)"
            ));
        }
    }
    if !Path::new("/sys/fs/cgroup/freezer").is_dir() {
        return Err("no cgroup v1 freezer: Slurm's cgroup/v2 needs systemd".into());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .map_err(|e| e.to_string())?;
    let d = dir.path().display().to_string();
    // Unique per run, so two clusters on one host (parallel CI jobs) do not meet: ports
    // and the node's name, which Debian's slurmd puts in its cgroup path.
    let pid = std::process::id();
    let node = format!("gw{pid}");
    let port = 20000 + (pid % 20000) * 2;
    for sub in ["state", "spool"] {
        std::fs::create_dir(dir.path().join(sub)).map_err(|e| e.to_string())?;
    }
    std::fs::write(dir.path().join("slurm.conf"), slurm_conf(&d, &node, port))
        .map_err(|e| e.to_string())?;
    std::fs::write(
        dir.path().join("cgroup.conf"),
        "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n",
    )
    .map_err(|e| e.to_string())?;
    // munged checks its key's owner and mode; --force: root is fine for a test.
    let script = format!(
        "set -e
         head -c 1024 /dev/urandom >{d}/munge.key; chmod 400 {d}/munge.key
         munged --force --socket={d}/munge.sock --key-file={d}/munge.key \
           --pid-file={d}/munged.pid --log-file={d}/munged.log --seed-file={d}/munge.seed
         export SLURM_CONF={d}/slurm.conf
         slurmctld -c -i
         slurmd -c -N {node}
         echo started
         cat >/dev/null || true
         set +e
         scancel --full $(squeue -h -o %i) 2>/dev/null
         sleep 1
         for p in slurmd slurmctld munged; do kill $(cat {d}/$p.pid); done
         sleep 2
         rm -rf {d}"
    );
    let (keeper, started) = Keeper::start(Command::new("sh").args(["-c", &script]))?;
    if started != "started" {
        return Err(format!("the cluster did not start: {}", log_tail(&d)));
    }
    let job = submit(&d)?;
    let pid = job_sleep(&d, job).map_err(|e| format!("{e}; {}", log_tail(&d)))?;
    Ok(Cluster {
        dir,
        _keeper: keeper,
        job,
        pid,
    })
}

fn log_tail(d: &str) -> String {
    let mut tail = String::new();
    for log in ["slurmctld.log", "slurmd.log", "munged.log"] {
        let text = std::fs::read_to_string(format!("{d}/{log}")).unwrap_or_default();
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        tail += &format!("{log}: {last:?} ");
    }
    tail
}

/// `sbatch --wrap 'sleep 300'` as nobody, in account `ml`; the job's id.
fn submit(d: &str) -> Result<u64, String> {
    let out = Command::new("sbatch")
        .env("SLURM_CONF", format!("{d}/slurm.conf"))
        .args([
            "--parsable",
            "--chdir=/tmp",
            "--output=/dev/null",
            "--job-name=lr-sweep",
            "--account=ml",
            "--wrap",
            "sleep 300",
        ])
        .uid(65534)
        .gid(65534)
        .output()
        .map_err(|e| format!("sbatch: {e}"))?;
    let said = String::from_utf8_lossy(&out.stdout);
    said.trim()
        .split(';')
        .next()
        .and_then(|j| j.parse().ok())
        .ok_or_else(|| {
            format!(
                "sbatch said {said:?} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// The job's `sleep`, once slurmd has started it (`scontrol listpids`).
fn job_sleep(d: &str, job: u64) -> Result<u32, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("scontrol")
            .env("SLURM_CONF", format!("{d}/slurm.conf"))
            .args(["listpids", &job.to_string()])
            .output()
            .map_err(|e| format!("scontrol: {e}"))?;
        let pids = String::from_utf8_lossy(&out.stdout);
        let sleep = pids
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
            .find(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            });
        if let Some(pid) = sleep {
            return Ok(pid);
        }
        if Instant::now() > deadline {
            return Err(format!("job {job} never ran a sleep: {pids}"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// gpuwatch on the fake NVML listing the job's sleep, with `path` as PATH (scontrol).
fn gpuwatch(cluster: &Cluster, path: &std::ffi::OsStr, args: &[&str]) -> (String, String) {
    let scenario = real::scenario(
        cluster.dir.path(),
        json!([{"pid": cluster.pid, "kind": "compute", "used_memory": 4_294_967_296u64}]),
    );
    real::output(
        real::gpuwatch(&scenario, None)
            .env("PATH", path)
            .env("SLURM_CONF", cluster.conf())
            .args(args),
    )
}

fn system_path() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

#[test]
fn a_real_slurm_job_is_named_by_the_real_scontrol() {
    let Some(cluster) = cluster_or_skip() else {
        return;
    };
    let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", cluster.pid)).unwrap();
    let (out, stderr) = gpuwatch(cluster, &system_path(), &["--once", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let proc = doc["processes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pid"] == cluster.pid))
        .unwrap_or_else(|| panic!("{doc:#}"));
    let job = cluster.job.to_string();
    assert_eq!(
        proc["workload"],
        json!({
            "kind": "slurm",
            "hpc_job": job,
            "hpc_job_name": "lr-sweep",
            "hpc_job_user": "nobody",
            "hpc_account": "ml",
            "slurm_step": "batch",
            "unit_uid": 65534,
        }),
        "cgroup: {cgroup} stderr: {stderr}"
    );
    assert_eq!(proc["user"], "nobody");
    assert_eq!(
        doc["lookups"],
        json!([{"kind": "slurm", "state": "ok", "error": null}])
    );

    let (text, _) = gpuwatch(cluster, &system_path(), &["--once"]);
    let row = text
        .lines()
        .find(|l| l.contains(&format!(" {} ", cluster.pid)))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(&format!("slurm {job} lr-sweep")), "{text}");
    assert!(
        text.contains(&format!("slurm {job} (nobody) 4.0G")),
        "{text}"
    );
}

/// An `scontrol` that fails (a controller that does not answer) is said once on stderr and
/// kept in the JSON's `lookups`.
#[test]
fn a_failing_scontrol_is_said() {
    let Some(cluster) = cluster_or_skip() else {
        return;
    };
    let bin = tempfile::tempdir().unwrap();
    let scontrol = bin.path().join("scontrol");
    std::fs::write(
        &scontrol,
        "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller \
         (connect failure)' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &scontrol,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_path_buf()).chain(std::env::split_paths(&system_path())),
    )
    .unwrap();
    let (out, stderr) = gpuwatch(cluster, &path, &["--once", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("slurm")).collect();
    assert_eq!(lines.len(), 1, "said once: {stderr}");
    let said = format!(
        "gpuwatch: slurm lookup failed: naming job {}: ",
        cluster.job
    );
    // scontrol's own reason is said with its status.
    let reason = "scontrol exit status: 1: slurm_load_jobs error: Unable to contact slurm \
                  controller (connect failure)";
    assert!(
        lines[0].starts_with(&said) && lines[0].contains(reason),
        "{stderr}"
    );
    assert_eq!(doc["lookups"][0]["kind"], "slurm", "{doc:#}");
    assert_eq!(doc["lookups"][0]["state"], "failed", "{doc:#}");
    let error = doc["lookups"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains(reason), "{doc:#}");
}
