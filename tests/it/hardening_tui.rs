//! Hostile terminals and drivers (issue 15): a wedged NVML call, signals beyond TERM/HUP/INT
//! and a long paste, each through a real terminal (tmux) or a real exporter process. Owns
//! these regression tests only; tests/it/hardening.rs has the file, text and process ones.

use crate::common;
use crate::serve_support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// The two-GPU fixture whose driver wedges (never returns) from the third sample on.
fn wedging(dir: &Path) -> std::path::PathBuf {
    let mut s = fixture();
    s["hang_from_tick"] = json!(2);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    path
}

/// Item 9: with a driver call that never returns, the TUI says so in its header, and `q`
/// still quits (the terminal restored, exit 0); SIGTERM does too (exit 143).
#[test]
fn a_wedged_driver_is_shown_and_quit_still_quits() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = wedging(dir.path());
    let Some(t) = common::tmux::Tmux::start("wedged", 200, 40) else {
        return;
    };
    let cmd = format!(
        "GPUWATCH_FAKE_NVML_SCENARIO={} {} --nvml-lib {} --interval 500ms",
        scenario.display(),
        env!("CARGO_BIN_EXE_gpuwatch"),
        common::fake_lib().display()
    );
    for (key, code) in [("q", 0), ("TERM", 143)] {
        t.send(&[&cmd, "Enter"]);
        t.wait_for("GPU source not answering for", Duration::from_secs(30));
        if key == "q" {
            t.send(&["q"]);
        } else {
            t.signal_child(key);
        }
        t.wait_restored();
        t.exit_status_is(code);
    }
}

/// Item 9 for the exporter: while the poll is overdue `/-/ready` is 503 and
/// `gpuwatch_source_stalled_seconds` counts; SIGTERM still ends it.
#[test]
fn a_wedged_driver_makes_serve_unready_and_it_still_exits() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = wedging(dir.path());
    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["--interval", "500ms"]);
    let mut exporter = serve_support::Exporter::start(cmd, &[]);
    exporter.wait_ready();
    let stalled = serve_support::wait_until("the stall to show", Duration::from_secs(60), || {
        let ready = exporter.get("/-/ready");
        let metrics = exporter.get("/metrics").body;
        let secs: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("gpuwatch_source_stalled_seconds "))?
            .parse()
            .ok()?;
        (ready.status == 503 && secs >= 3.0).then_some(secs)
    });
    assert!(stalled >= 3.0);
    assert!(
        exporter
            .stderr()
            .contains("gpuwatch: GPU source not answering for"),
        "{}",
        exporter.stderr()
    );
    let status = exporter.signal(libc::SIGTERM);
    assert!(status.success(), "{status:?}");
}

/// The one-letter state of `pid` from /proc/PID/stat ('T' when stopped).
fn proc_state(pid: &str) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
        .unwrap_or('?')
}

/// Item 12: USR1/USR2 are ignored; TSTP (and Ctrl-Z) give the terminal back and stop, `fg`
/// takes it again and redraws; QUIT restores the terminal and exits 131.
#[test]
fn stop_continue_quit_and_user_signals_leave_the_terminal_sane() {
    let Some(t) = common::tmux::Tmux::start("signals", 120, 40) else {
        return;
    };
    t.launch_demo("");
    let pid = t.child_pid();
    for sig in ["USR1", "USR2"] {
        t.signal_child(sig);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        t.display("#{alternate_on}"),
        "1",
        "still running after USR1/USR2"
    );
    assert_ne!(proc_state(&pid), 'Z');
    t.signal_child("TSTP");
    t.wait_restored();
    serve_support::wait_until("the process to stop", Duration::from_secs(10), || {
        (proc_state(&pid) == 'T').then_some(())
    });
    t.send(&["fg", "Enter"]);
    serve_support::wait_until("the screen to come back", Duration::from_secs(10), || {
        (t.display("#{alternate_on}") == "1").then_some(())
    });
    t.wait_for("Processes (", Duration::from_secs(10));
    assert_eq!(t.child_pid(), pid);
    // Ctrl-Z, which raw mode delivers as a key, stops it the same way.
    t.send(&["C-z"]);
    t.wait_restored();
    serve_support::wait_until("the process to stop again", Duration::from_secs(10), || {
        (proc_state(&pid) == 'T').then_some(())
    });
    t.send(&["fg", "Enter"]);
    t.wait_for("Processes (", Duration::from_secs(10));
    serve_support::wait_until(
        "the screen to come back again",
        Duration::from_secs(10),
        || (t.display("#{alternate_on}") == "1").then_some(()),
    );
    t.signal_child("QUIT");
    t.wait_restored();
    t.exit_status_is(131);
}

/// Item 7 in a real terminal: a 10 KB bracketed paste into the filter prompt arrives as one
/// event, is cut at the cap, and the keys after it still work (Enter, then q quits).
#[test]
fn a_long_paste_into_the_filter_prompt_is_one_event() {
    let Some(t) = common::tmux::Tmux::start("paste", 330, 40) else {
        return;
    };
    t.launch_demo("");
    t.send(&["/"]);
    let buffer = "x".repeat(10_000);
    assert!(t.cmd(&["set-buffer", &buffer]).status().unwrap().success());
    assert!(
        t.cmd(&["paste-buffer", "-p", "-t", "0"])
            .status()
            .unwrap()
            .success()
    );
    t.send(&["Enter"]);
    // Wide enough for the whole capped line and the status after it.
    let screen = t.wait_for(
        "the filter is limited to 256 characters",
        Duration::from_secs(20),
    );
    let line = screen.lines().find(|l| l.contains(" filter ")).unwrap();
    assert_eq!(line.matches('x').count(), 256, "{line}");
    t.send(&["q"]);
    t.wait_restored();
    t.exit_status_is(0);
}
