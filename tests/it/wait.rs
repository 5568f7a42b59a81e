//! `gpuwatch wait` through the binary on the fake NVML library (issue 12, "Job done,
//! memory released"): a real child process holds VRAM in the scenario until it frees it;
//! `--released PID` and `--gpu N --free` return 0 once it has, and `--timeout` exits 1
//! naming what still holds memory.

use crate::common;

use std::process::{Child, Command as StdCommand};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

const GIB: u64 = 1 << 30;

/// The fake's two GPUs, the T4 (GPU 1) held by `pid` with 3 GiB until `until_tick` (never
/// when `None`).
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(pid: u32, until_tick: Option<u64>) -> Self {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/nvml/two_gpus.json"
        );
        let mut s: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let held = 3 * GIB;
        let mut process = json!({"pid": pid, "used_memory": held});
        match until_tick {
            Some(tick) => {
                let mut used = vec![held; tick as usize];
                used.push(0);
                s["gpus"][1]["fields"]["memory_used"] = json!(used);
                process["until_tick"] = json!(tick);
            }
            None => s["gpus"][1]["fields"]["memory_used"] = json!(held),
        }
        s["gpus"][1]["processes"] = json!([process]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("scenario.json"), s.to_string()).unwrap();
        Fake { dir }
    }

    fn wait(&self, args: &[&str]) -> Command {
        let mut cmd = common::clean_command();
        cmd.env(
            "GPUWATCH_FAKE_NVML_SCENARIO",
            self.dir.path().join("scenario.json"),
        )
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["wait", "--interval", "100ms"])
        .args(args)
        .timeout(Duration::from_secs(60));
        cmd
    }
}

/// A real process for the scenario's PID (so /proc knows its user and command).
struct Job(Child);

impl Job {
    fn start() -> Job {
        Job(StdCommand::new("sleep").arg("60").spawn().unwrap())
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn released_returns_once_the_process_freed_its_memory() {
    let job = Job::start();
    let pid = job.0.id();
    let fake = Fake::new(pid, Some(5));
    fake.wait(&["--released", &pid.to_string(), "--timeout", "50s"])
        .assert()
        .success()
        .stderr(format!("gpuwatch wait: PID {pid} holds no GPU memory\n"));
    fake.wait(&["--gpu", "1", "--free", "--timeout", "50s"])
        .assert()
        .success()
        .stderr("gpuwatch wait: GPU 1 is free\n");
}

#[test]
fn a_timeout_exits_1_naming_what_still_holds_memory() {
    let job = Job::start();
    let pid = job.0.id();
    let fake = Fake::new(pid, None);
    fake.wait(&["--released", &pid.to_string(), "--timeout", "1s"])
        .assert()
        .code(1)
        .stderr(format!(
            "gpuwatch wait: gave up after 1s: PID {pid} still holds 3.0G on GPU 1\n"
        ));
    let out = fake
        .wait(&["--gpu", "1", "--free", "--timeout", "1s"])
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "gpuwatch wait: gave up after 1s: GPU 1 still held: PID {pid} ("
        )),
        "{stderr}"
    );
    // GPU 0 has 10 GiB in use and no process listed.
    let out = fake
        .wait(&["--gpu", "0", "--free", "--timeout", "1s"])
        .assert()
        .code(1);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(stderr.ends_with(" held by no process\n"), "{stderr}");
}

#[test]
fn wait_needs_a_target() {
    let fake = Fake::new(1, None);
    fake.wait(&[])
        .assert()
        .code(2)
        .stderr("gpuwatch: gpuwatch wait: needs either --released PID or --gpu N --free\n");
    fake.wait(&["--gpu", "0"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --gpu: needs --free (wait until nothing holds it) (got \"0\")\n");
    fake.wait(&["--gpu", "7", "--free"])
        .assert()
        .code(1)
        .stderr("gpuwatch wait: no GPU 7 here\n");
}

/// A PID no process has now: one that has just exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = StdCommand::new("true").spawn().unwrap();
    child.wait().unwrap();
    child.id()
}

/// Issue 20: `--released` with a PID that names no process and holds no GPU memory (a
/// typo) exits 2 instead of 0, so a script does not go ahead on a busy GPU; a running
/// process holding nothing is released at once as before; a PID gone from /proc that NVML
/// still lists is waited for.
#[test]
fn released_refuses_a_pid_that_names_no_process_and_holds_nothing() {
    let job = Job::start();
    let fake = Fake::new(job.0.id(), None);
    let typo = dead_pid();
    fake.wait(&["--released", &typo.to_string(), "--timeout", "50s"])
        .assert()
        .code(2)
        .stderr(format!(
            "gpuwatch wait: no such process: PID {typo} is not running and holds no GPU memory\n"
        ));
    let idle = Job::start();
    let pid = idle.0.id();
    fake.wait(&["--released", &pid.to_string(), "--timeout", "50s"])
        .assert()
        .success()
        .stderr(format!("gpuwatch wait: PID {pid} holds no GPU memory\n"));
    let gone = dead_pid();
    let held_by_gone = Fake::new(gone, None);
    held_by_gone
        .wait(&["--released", &gone.to_string(), "--timeout", "1s"])
        .assert()
        .code(1)
        .stderr(format!(
            "gpuwatch wait: gave up after 1s: PID {gone} still holds 3.0G on GPU 1\n"
        ));
}

/// A `sleep` given exactly `pid`, by setting the kernel's last PID (root only); `None` where
/// that cannot be set. Other tests spawn processes meanwhile, so it tries a few times.
fn sleep_with_pid(pid: u32) -> Option<Child> {
    const LAST_PID: &str = "/proc/sys/kernel/ns_last_pid";
    for _ in 0..50 {
        std::fs::write(LAST_PID, (pid - 1).to_string()).ok()?;
        let mut child = StdCommand::new("sleep").arg("60").spawn().unwrap();
        if child.id() == pid {
            return Some(child);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("PID {pid} was not given back in 50 tries");
}

/// Whether the process `waiter` has `/proc/PID/stat` of `pid` open: gpuwatch keeps it
/// between samples, so it has sampled (and looked the PID up before that).
fn has_sampled(waiter: u32, pid: u32) -> bool {
    let want = std::path::PathBuf::from(format!("/proc/{pid}/stat"));
    std::fs::read_dir(format!("/proc/{waiter}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|to| to == want))
}

/// Issue 26 item 4: `--released` follows the process by PID and start time, as signals do.
/// When the job exits and a new process gets its PID (still listed by NVML here), the job's
/// exit is the release: the wait ends with 0 instead of waiting on the newcomer.
#[test]
fn released_follows_the_process_not_its_number() {
    let mut job = Job::start();
    let pid = job.0.id();
    let fake = Fake::new(pid, None);
    let mut waiter = StdCommand::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", common::EMPTY_HOME)
        .env(
            "GPUWATCH_FAKE_NVML_SCENARIO",
            fake.dir.path().join("scenario.json"),
        )
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["wait", "--interval", "100ms", "--timeout", "30s"])
        .args(["--released", &pid.to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Not a `Job`: it ends by itself (its --timeout), and its output is read below.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !has_sampled(waiter.id(), pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the wait never sampled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = job.0.kill();
    let _ = job.0.wait();
    let Some(newcomer) = sleep_with_pid(pid) else {
        let why = "cannot set /proc/sys/kernel/ns_last_pid (needs root)";
        assert!(std::env::var_os("CI").is_none(), "CI must run this: {why}");
        eprintln!("skipped: {why}");
        let _ = waiter.kill();
        let _ = waiter.wait();
        return;
    };
    let _newcomer = Job(newcomer);
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "gpuwatch wait: PID {pid} has exited and holds no GPU memory (its number is \
             another process's now)\n"
        )
    );
    assert_eq!(out.status.code(), Some(0));
}
