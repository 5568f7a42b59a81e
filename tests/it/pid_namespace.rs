//! gpuwatch inside a child PID namespace (issue 10's safety bug): NVML reports host PIDs,
//! and a local process that happens to have the same number must never be shown or
//! signalled as the GPU process. Runs the real binary under `unshare --pid --fork
//! --mount-proc` against the fake NVML; needs root (CI runs as root) and is skipped with a
//! printed reason otherwise.

use crate::common;

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

/// Why this machine cannot run the namespace test, if it cannot.
fn cannot_unshare() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: creating a PID namespace needs CAP_SYS_ADMIN".into());
    }
    let probe = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    match probe {
        Ok(s) if s.success() => None,
        Ok(s) => Some(format!(
            "unshare --pid --fork --mount-proc true failed ({s})"
        )),
        Err(e) => Some(format!("unshare not available: {e}")),
    }
}

/// A scenario whose first GPU lists host PIDs 1 and 2: inside the new namespace those are
/// the local `sh` and `sleep`.
fn scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!([
        {"pid": 1, "kind": "compute", "used_memory": 4_294_967_296u64},
        {"pid": 2, "kind": "compute", "used_memory": 1_073_741_824u64},
    ]);
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

/// `gpuwatch --once ARGS` run as the third process of a fresh PID namespace, after `sh`
/// (PID 1) and `sleep` (PID 2).
fn once_in_namespace(extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let inner = format!(
        "sleep 100 & GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {} --once {extra}; kill $!",
        scenario.display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    let out = std::process::Command::new("timeout")
        .args([
            "60",
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
        ])
        .arg(&inner)
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "{inner}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn host_pids_1_and_2_are_not_the_local_sh_and_sleep() {
    if let Some(why) = cannot_unshare() {
        common::skip(&why);
        return;
    }
    let doc: Value = serde_json::from_str(&once_in_namespace("--json")).unwrap();
    let procs = doc["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2, "both rows are kept: {doc:#}");
    for p in procs {
        assert_eq!(p["visibility"], "other_namespace", "{p:#}");
        assert_eq!(p["user"], Value::Null, "no local user is borrowed: {p:#}");
        let command = p["command"].as_str().unwrap_or_default();
        assert!(
            !command.contains("sh") && !command.contains("sleep"),
            "no local command is borrowed: {p:#}"
        );
    }
    let text = once_in_namespace("");
    assert!(
        text.contains("not visible from this PID namespace; host PID 1")
            && text.contains("host PID 2"),
        "{text}"
    );
    assert!(!text.contains("sleep 100"), "{text}");
}

#[test]
fn the_tui_in_a_child_namespace_refuses_to_signal_host_pids() {
    if let Some(why) = cannot_unshare() {
        common::skip(&why);
        return;
    }
    let Some(t) = common::tmux::Tmux::start("pidns", 120, 40) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario(dir.path());
    let cmd = format!(
        "unshare --pid --fork --mount-proc sh -c 'sleep 100 & GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {}; kill $!'",
        scenario.display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for("host PID 2", std::time::Duration::from_secs(15));
    assert!(!screen.contains("sleep 100"), "{screen}");
    // Select the first row and ask to send SIGTERM: refused, no dialog.
    t.send(&["Down"]);
    t.send(&["T"]);
    let screen = t.wait_for("refusing to signal it", std::time::Duration::from_secs(10));
    assert!(
        !screen.contains("Send SIGTERM to this process?"),
        "{screen}"
    );
    t.send(&["q"]);
    t.wait_restored();
}

/// Why this machine cannot run gpuwatch in a child namespace that reads the host's /proc
/// (`unshare --pid --fork` without `--mount-proc`) beside a job of `nobody`'s, if it cannot.
fn cannot_share_host_proc() -> Option<String> {
    if let Some(why) = cannot_unshare() {
        return Some(why);
    }
    match std::process::Command::new("setpriv")
        .arg("--version")
        .output()
    {
        Ok(o) if o.status.success() => None,
        _ => Some("setpriv (util-linux) is not available to run a job as nobody".into()),
    }
}

/// A PID the scenario template carries where the job's host PID goes.
const JOB_PID_PLACEHOLDER: u32 = 999_999_999;

/// The script run as PID 1 of a fresh PID namespace that still sees the host's /proc: a
/// job of `nobody`'s (`sleep 100`, PID 2 here) writes its host PID, the scenario lists that
/// PID beside host PIDs 1 and 2 (the host's init and kthreadd: not ours), then gpuwatch runs
/// with `args`. The job's exit status is written to `dir/job` afterwards.
fn host_proc_script(dir: &std::path::Path, args: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = json!([
        {"pid": JOB_PID_PLACEHOLDER, "kind": "compute", "used_memory": 4_294_967_296u64},
        {"pid": 2, "kind": "compute", "used_memory": 1_073_741_824u64},
    ]);
    s["gpus"][1]["processes"] = json!([
        {"pid": 1, "kind": "compute", "used_memory": 2_147_483_648u64},
    ]);
    std::fs::write(
        dir.join("template.json"),
        serde_json::to_string(&s).unwrap(),
    )
    .unwrap();
    // The job runs as nobody and writes its host PID here: its parent's PID as the host's
    // /proc numbers it (`cut`'s parent is the shell that then execs sleep, keeping the PID).
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = dir.display();
    let script = format!(
        r#"setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cut -d" " -f4 /proc/self/stat > {d}/hostpid; exec sleep 100' &
job=$!
i=0
while [ ! -s {d}/hostpid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
sed "s/{JOB_PID_PLACEHOLDER}/$(cat {d}/hostpid)/" {d}/template.json > {d}/scenario.json
echo "$job" > {d}/localpid
GPUWATCH_FAKE_NVML_SCENARIO={d}/scenario.json {bin} --nvml-lib {lib} {args}
kill $job 2>/dev/null
wait $job
echo $? > {d}/job
"#,
        bin = env!("CARGO_BIN_EXE_gpuwatch"),
        lib = common::fake_lib().display(),
    );
    let path = dir.join("run.sh");
    std::fs::write(&path, script).unwrap();
    path
}

fn read_number(path: std::path::PathBuf) -> u32 {
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{} holds {text:?}", path.display()))
}

#[test]
fn with_the_hosts_proc_our_namespaces_job_is_shown_and_host_processes_are_not() {
    if let Some(why) = cannot_share_host_proc() {
        common::skip(&why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = host_proc_script(dir.path(), "--once --json");
    let out = std::process::Command::new("timeout")
        .args(["60", "unshare", "--pid", "--fork", "sh"])
        .arg(&script)
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host_pid = read_number(dir.path().join("hostpid"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let procs = doc["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 3, "every row is kept: {doc:#}");
    let row = |pid: u32| {
        procs
            .iter()
            .find(|p| p["pid"] == pid)
            .unwrap_or_else(|| panic!("no row for PID {pid}: {doc:#}"))
    };
    let job = row(host_pid);
    assert_eq!(job["visibility"], "visible", "{job:#}");
    assert_eq!(job["user"], "nobody", "{job:#}");
    assert_eq!(job["command"], "sleep 100", "{job:#}");
    // Host PIDs 1 and 2 are the host's init and kthreadd, outside our namespace (where PID
    // 1 is our sh and 2 the job): neither is borrowed.
    for pid in [1, 2] {
        assert_eq!(row(pid)["visibility"], "other_namespace", "{doc:#}");
        assert_eq!(row(pid)["user"], Value::Null, "{doc:#}");
    }
}

#[test]
fn with_the_hosts_proc_a_confirmed_signal_goes_to_the_jobs_pid_here() {
    if let Some(why) = cannot_share_host_proc() {
        common::skip(&why);
        return;
    }
    let Some(t) = common::tmux::Tmux::start("pidns-hostproc", 160, 40) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = host_proc_script(dir.path(), "");
    t.send(&[
        &format!("unshare --pid --fork sh {}", script.display()),
        "Enter",
    ]);
    t.wait_for("sleep 100", std::time::Duration::from_secs(20));
    let (host_pid, local_pid) = (
        read_number(dir.path().join("hostpid")),
        read_number(dir.path().join("localpid")),
    );
    assert_ne!(host_pid, local_pid, "the job has another PID here");
    // Select the job's row (the filter leaves only it), then SIGTERM, confirmed twice:
    // root signalling nobody's process.
    t.send(&["/"]);
    t.send(&["sleep", "Enter"]);
    t.send(&["Down"]);
    t.send(&["T"]);
    t.wait_for(
        "Send SIGTERM to this process?",
        std::time::Duration::from_secs(10),
    );
    t.send(&["y"]);
    t.wait_for("Press y AGAIN", std::time::Duration::from_secs(10));
    t.send(&["y"]);
    let sent = format!("sent SIGTERM to PID {host_pid}, PID {local_pid} in this namespace");
    t.wait_for(&sent, std::time::Duration::from_secs(10));
    t.send(&["q"]);
    t.wait_restored();
    // The job died of that SIGTERM (128 + 15), not of the script's own kill afterwards:
    // `kill` would also be a TERM, so check it was already gone when the script got there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !dir.path().join("job").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(read_number(dir.path().join("job")), 143);
}

/// `(pid, ppid, state)` of every process on the host.
fn processes() -> Vec<(i32, i32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?.chars().next()?;
            Some((pid, fields.next()?.parse().ok()?, state))
        })
        .collect()
}

/// Issue 26 §14: gpuwatch as its container's PID 1 (`unshare --pid --fork --mount-proc`,
/// the shape of an ENTRYPOINT without `--init`) with an alert command that puts children in
/// the background: once they have exited, none stays a zombie. Zombies are counted from the
/// host's /proc among the children of the namespace's PID 1, and only those that are still
/// zombies a second later (one being reaped right now is not a leak).
#[test]
fn as_pid_1_the_orphans_of_alert_commands_are_reaped() {
    if let Some(why) = cannot_unshare() {
        return common::skip(&why);
    }
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let command = format!(
        "for i in 1 2 3 4 5; do sleep 0.2 & done; echo run >> {}",
        ran.display()
    );
    let mut unshare = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child"])
        .arg(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["--demo", "serve", "--listen", "127.0.0.1:0"])
        .args(["--interval", "100ms", "--demo-speed", "20"])
        .args(["--temp-hold", "2s", "--alert-on", "overheating"])
        .args(["--alert-resolve-after", "1s", "--alert-command", &command])
        .env("HOME", common::EMPTY_HOME)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run unshare");
    let unshare_pid = i32::try_from(unshare.id()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ran.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the alert command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The backgrounded sleeps have ended by now.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let init = processes()
        .into_iter()
        .find(|(_, ppid, _)| *ppid == unshare_pid)
        .map(|(pid, _, _)| pid)
        .expect("the namespace's PID 1");
    let zombies = || -> std::collections::BTreeSet<i32> {
        processes()
            .into_iter()
            .filter(|(_, ppid, state)| *ppid == init && *state == 'Z')
            .map(|(pid, _, _)| pid)
            .collect()
    };
    let first = zombies();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let lasting: Vec<i32> = zombies().intersection(&first).copied().collect();
    // `docker stop`: SIGTERM to PID 1 reaches gpuwatch, which stops cleanly (exit 0).
    // SAFETY: kill(2) on the namespace's PID 1, a descendant of ours still running.
    unsafe { libc::kill(init, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let stopped = loop {
        if let Some(status) = unshare.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = unshare.kill();
            let _ = unshare.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(lasting.is_empty(), "zombies left under PID 1: {lasting:?}");
    assert!(
        stopped.is_some_and(|s| s.success()),
        "SIGTERM to PID 1: {stopped:?}"
    );
}
