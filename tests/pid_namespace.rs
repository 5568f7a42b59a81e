//! gpuwatch inside a child PID namespace (issue 10's safety bug): NVML reports host PIDs,
//! and a local process that happens to have the same number must never be shown or
//! signalled as the GPU process. Runs the real binary under `unshare --pid --fork
//! --mount-proc` against the fake NVML; needs root (CI runs as root) and is skipped with a
//! printed reason otherwise.

mod common;

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
        eprintln!("skipped: {why}");
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
        eprintln!("skipped: {why}");
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
