//! End to end in a real terminal: the binary runs in a tmux pane, keys are typed with
//! `send-keys`, the screen is read with `capture-pane`. Skipped (with a message) only when
//! tmux is not installed; CI installs it. Where the time a frame arrives matters (key to
//! frame) or the terminal must vanish under the program, a pseudo-terminal driven by the
//! test itself (`common::pty`) stands in for tmux.

use crate::common;

use std::time::{Duration, Instant};

use common::pty::Pty;
use common::tmux::Tmux;

/// Instant and truthful §1: every key is drawn at once whatever the interval, not at the
/// next sample. At `-i 15s` no sample comes during the keys, so any output after a key is
/// that key's frame. Before the fix the 2nd and later keys waited for the next sample
/// (up to 15 s) and `q` after a key took as long.
#[test]
fn every_key_is_drawn_at_once_at_a_long_interval() {
    let pty = Pty::spawn(&["--demo", "--interval", "15s"], 120, 40);
    pty.wait_for("alice", Duration::from_secs(20));
    pty.wait_quiet(Duration::from_millis(300), Duration::from_secs(10));
    let limit = Duration::from_millis(150);
    let mut seen = Vec::new();
    for i in 0..10 {
        // Down and up again: each moves the selection, so each changes the screen.
        let key: &[u8] = if i % 2 == 0 { b"j" } else { b"k" };
        let sent = pty.write(key);
        seen.push(pty.first_output_after(sent, Duration::from_secs(1)));
        std::thread::sleep(
            (sent + Duration::from_millis(300)).saturating_duration_since(Instant::now()),
        );
    }
    // Each key within 150 ms; one of the ten may take up to a second, since CI runs this
    // beside other tests on two cores (seen once at 153 ms under a load of 7). The defect
    // this guards against leaves keys for the next sample: 15 s here.
    let late: Vec<_> = seen
        .iter()
        .enumerate()
        .filter(|(_, d)| d.is_none_or(|d| d > limit))
        .collect();
    let very_late = late
        .iter()
        .any(|(_, d)| d.is_none_or(|d| d > Duration::from_secs(1)));
    assert!(
        late.len() <= 1 && !very_late,
        "keys drawn late or never (key, delay): {late:?}; all: {seen:?}"
    );
    let mut pty = pty;
    let sent = pty.write(b"q");
    let status = pty.wait_exit(Duration::from_millis(300));
    assert!(
        status.is_some_and(|s| s.success()),
        "q did not exit within 300 ms ({:?} after the key)",
        sent.elapsed()
    );
}

/// Quitting with an alert message still being delivered waits for it (bounded), saying so
/// on screen, and exits once it is delivered: before, q ended the process and the sinks'
/// threads with it, and whatever was queued was lost (a "resolved" among it keeps the
/// receiver's alert firing). The command waits for a gate file the test opens after q.
#[test]
fn quitting_delivers_the_alert_message_still_being_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (gate, started, done) = (
        dir.path().join("gate"),
        dir.path().join("started"),
        dir.path().join("done"),
    );
    let command = format!(
        "echo \"$GPUWATCH_ALERT_KIND\" >> {started}; while [ ! -e {gate} ]; do sleep 0.02; done; echo \"$GPUWATCH_ALERT_KIND\" >> {done}",
        started = started.display(),
        gate = gate.display(),
        done = done.display()
    );
    let args = ["--demo", "--interval", "100ms", "--alert-command", &command];
    let mut pty = Pty::spawn(&args, 120, 40);
    pty.wait_for("alice", Duration::from_secs(20));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !started.exists() {
        assert!(Instant::now() < deadline, "no alert was sent within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    pty.write(b"q");
    pty.wait_for("queued alert message", Duration::from_secs(2));
    assert_eq!(
        pty.wait_exit(Duration::from_millis(300)),
        None,
        "exited without delivering"
    );
    std::fs::write(&gate, "").unwrap();
    let status = pty.wait_exit(Duration::from_secs(2));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let sent = std::fs::read_to_string(&started).unwrap();
    assert_eq!(std::fs::read_to_string(&done).unwrap(), sent);
}

/// Hardening round 3 §5: a closed pane (its pty's master closed right after a key) ends
/// gpuwatch within a second, with exit status 129 as a hang-up, whether the kernel's SIGHUP reaches it (the pty is its
/// controlling terminal) or only the end of input does (it is not). Before, crossterm's
/// reader spun on `read() = 0` holding its input lock, the loop blocked on that lock, and
/// gpuwatch ran on at 100 % CPU ignoring SIGTERM.
#[test]
fn closing_the_terminal_right_after_a_key_ends_gpuwatch() {
    for controlling in [true, false] {
        for attempt in 0..3 {
            let mut pty = Pty::spawn_with(&["--demo"], 120, 40, controlling);
            pty.wait_for("alice", Duration::from_secs(20));
            pty.write(b"j");
            pty.close();
            let pid = pty.pid();
            let status = pty.wait_exit(Duration::from_secs(1));
            // 129 as for SIGHUP, and no abort: with the terminal gone, a failed write
            // of the restore sequences must not panic (eprintln! on a closed stderr did).
            assert_eq!(
                status.map(|s| (s.code(), std::os::unix::process::ExitStatusExt::signal(&s))),
                Some((Some(129), None)),
                "PID {pid} 1 s after its terminal closed \
                 (controlling terminal: {controlling}, attempt {attempt})"
            );
        }
    }
}

/// Hardening round 3 §6: a flood of resizes (a window dragged, or SIGWINCH sent in a loop)
/// is coalesced, not drawn one full frame per size (which a slow terminal such as tmux
/// then has to take in before the next key shows), and the key typed after it is answered
/// at once. Measured before: 2,000 resizes over ~2.5 s wrote 6.2 MB of frames.
#[test]
fn a_flood_of_resizes_is_drawn_once_and_the_next_key_answered() {
    let pty = Pty::spawn(&["--demo"], 120, 40);
    pty.wait_for("alice", Duration::from_secs(20));
    pty.wait_quiet(Duration::from_millis(200), Duration::from_secs(10));
    let before = pty.written();
    for i in 0..2000 {
        let (w, h) = if i % 2 == 0 { (100, 30) } else { (120, 40) };
        pty.resize(w, h);
        std::thread::sleep(Duration::from_millis(1));
    }
    let offset = pty.written();
    pty.write(b"?");
    let answered = pty.time_to(offset, "Help — keys", Duration::from_secs(10));
    let drawn = offset - before;
    assert!(
        drawn < 500_000,
        "{drawn} bytes drawn for 2,000 resizes: one frame per size"
    );
    assert!(
        answered.is_some_and(|d| d < Duration::from_millis(500)),
        "help drawn {answered:?} after the key"
    );
}

#[test]
fn help_then_quit_restores_the_shell() {
    let Some(t) = Tmux::start("help", 120, 40) else {
        return;
    };
    t.launch_demo("");
    assert_eq!(t.display("#{alternate_on}"), "1");
    let screen = t.capture();
    assert!(screen.contains("gpuwatch · demo-gpu-server"), "{screen}");
    t.send(&["?"]);
    let screen = t.wait_for("Help — keys", Duration::from_secs(10));
    assert!(screen.contains("sort by VRAM"), "{screen}");
    t.send(&["q"]);
    let screen = t.wait_restored();
    assert!(
        !screen.contains("Help — keys"),
        "alternate screen gone:\n{screen}"
    );
    t.exit_status_is(0);
}

#[test]
fn keys_sort_and_compact_toggle_in_a_real_terminal() {
    let Some(t) = Tmux::start("keys", 80, 24) else {
        return;
    };
    t.launch_demo("");
    t.send(&["N"]);
    t.wait_for("PID▲", Duration::from_secs(10));
    t.send(&["r"]);
    t.wait_for("PID▼", Duration::from_secs(10));
    t.send(&["c"]);
    // Full panels again: their readings line (compact lines have no slowdown point).
    t.wait_for("(slow 94)", Duration::from_secs(10));
    t.send(&["C-c"]);
    t.wait_restored();
}

#[test]
fn the_demo_opens_mid_story_with_full_charts_warnings_and_the_host_line() {
    let Some(t) = Tmux::start("story", 200, 60) else {
        return;
    };
    t.launch_demo("");
    let screen = t.capture();
    // The warnings that take time are already up on the first frames; the bar may have no
    // room for all of them, `w` lists every one.
    t.send(&["w"]);
    let listed = t.wait_for("Warnings:", Duration::from_secs(10));
    for needle in ["overheating", "OOM risk", "idle for 3", "stale"] {
        assert!(listed.contains(needle), "{needle}:\n{listed}");
    }
    assert!(screen.contains("no process 12.9G"), "{screen}");
    t.send(&["w"]);
    // A panel whose charts are full: every column of its bottom chart row is filled.
    let full = "█".repeat(14);
    assert!(
        screen
            .lines()
            .any(|l| l.matches(full.as_str()).count() >= 3),
        "full charts:\n{screen}"
    );
    assert!(screen.lines().next().unwrap().contains("CPU "), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn sigterm_restores_the_terminal_and_exits_nonzero() {
    let Some(t) = Tmux::start("term", 100, 30) else {
        return;
    };
    t.launch_demo("");
    t.signal_child("TERM");
    t.wait_restored();
    t.exit_status_is(143);
}

#[test]
fn sighup_restores_the_terminal() {
    let Some(t) = Tmux::start("hup", 100, 30) else {
        return;
    };
    t.launch_demo("");
    t.signal_child("HUP");
    t.wait_restored();
    t.exit_status_is(129);
}

#[test]
fn resizing_to_too_small_and_back() {
    let Some(t) = Tmux::start("resize", 120, 40) else {
        return;
    };
    t.launch_demo("");
    t.resize(40, 10);
    t.wait_for("terminal too small", Duration::from_secs(10));
    t.resize(120, 40);
    t.wait_for("Processes (", Duration::from_secs(10));
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn panic_restores_the_terminal_and_reports() {
    let Some(t) = Tmux::start("panic", 100, 30) else {
        return;
    };
    let cmd = format!(
        "{} --demo --debug-panic-after 2",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    t.send(&[&cmd, "Enter"]);
    t.wait_restored();
    let screen = t.capture_with_history();
    assert!(
        screen.contains("deliberate panic after 2 samples"),
        "the panic is reported:\n{screen}"
    );
    t.exit_status_is(101);
}

#[test]
fn filter_users_and_focus_by_keys() {
    let Some(t) = Tmux::start("etiquette", 120, 40) else {
        return;
    };
    t.launch_demo("");
    t.send(&["/"]);
    t.wait_for(" filter ", Duration::from_secs(10));
    t.send(&["-l", "user:bob"]);
    // Keys arrive one at a time; wait for the whole text before looking at the table.
    t.wait_for(" filter  user:bob█", Duration::from_secs(10));
    let screen = t.wait_for("Processes (1 of 9)", Duration::from_secs(10));
    assert!(screen.contains("python finetune.py"), "{screen}");
    // While typing, letters are text, not commands: `q` did not quit.
    t.send(&["-l", " q"]);
    t.wait_for(" filter  user:bob q█", Duration::from_secs(10));
    t.wait_for("Processes (0 of 9)", Duration::from_secs(10));
    t.send(&["Escape"]);
    t.wait_for("Processes (9)", Duration::from_secs(10));
    t.send(&["u"]);
    t.wait_for("Users (7)", Duration::from_secs(10));
    // alice, her job, carol, her pod, bob, his container, then dave.
    t.send(&["Down", "Down", "Down", "Down", "Down", "Down", "Enter"]);
    t.wait_for("user dave", Duration::from_secs(10));
    t.send(&["Escape", "3"]);
    let screen = t.wait_for("GPU 3 only", Duration::from_secs(10));
    assert!(screen.contains("▶ 3 · NVIDIA"), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn readonly_refuses_signal_keys() {
    let Some(t) = Tmux::start("readonly", 120, 40) else {
        return;
    };
    t.launch_demo("--readonly");
    t.wait_for("READ-ONLY", Duration::from_secs(10));
    t.send(&["Down", "T"]);
    t.wait_for(
        "read-only mode (--readonly): signals are disabled",
        Duration::from_secs(10),
    );
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn mouse_clicks_sort_and_focus_when_enabled() {
    let Some(t) = Tmux::start("mouse", 120, 40) else {
        return;
    };
    t.launch_demo("--mouse");
    let screen = t.capture();
    let (x, y) = screen
        .lines()
        .enumerate()
        .find_map(|(y, l)| l.find("USER ").map(|b| (l[..b].chars().count(), y)))
        .expect("the USER column title");
    // An SGR mouse press and release at that cell, as a terminal reports a click.
    let click = format!("\x1b[<0;{};{}M\x1b[<0;{};{}m", x + 1, y + 1, x + 1, y + 1);
    t.send(&["-l", &click]);
    t.wait_for("USER▲", Duration::from_secs(10));
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn source_auto_without_a_driver_says_it_shows_the_demo() {
    let Some(t) = Tmux::start("auto", 100, 30) else {
        return;
    };
    let cmd = format!(
        "{} --source auto --nvml-lib /nonexistent/libnvidia-ml.so.1",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    t.send(&[&cmd, "Enter"]);
    t.wait_for(
        "no usable GPU here: showing the simulated demo fleet",
        Duration::from_secs(10),
    );
    // The notice can be drawn before the first sample lands (a loaded machine): wait for
    // the demo's host name rather than expecting it in the same frame.
    let screen = t.wait_for("demo-gpu-server", Duration::from_secs(10));
    assert!(
        screen.contains("no usable GPU here: showing the simulated demo fleet"),
        "{screen}"
    );
    t.send(&["q"]);
    t.wait_restored();
}

/// Issue 20 §5 and §3 in a real terminal: the F-keys htop and nvtop users press (F1 help,
/// F3 filter, F10 quit) work, and 16 GPUs at 80x24 all show, in two columns of short lines.
#[test]
fn f_keys_work_as_in_htop_and_sixteen_gpus_fit_at_80x24() {
    let Some(t) = Tmux::start("fkeys", 80, 24) else {
        return;
    };
    t.launch_demo("--demo-gpus 16");
    let screen = t.wait_for(" 15 ", Duration::from_secs(10));
    assert!(
        !screen.contains("hidden") && !screen.contains("scroll"),
        "{screen}"
    );
    t.send(&["F1"]);
    t.wait_for("Help — keys", Duration::from_secs(10));
    // F1 again rather than Esc: an Esc right before an F-key's own escape sequence reads
    // as one Alt-key in any terminal.
    t.send(&["F1", "F3"]);
    t.wait_for("Enter: keep · Esc: clear", Duration::from_secs(10));
    t.send(&["Enter", "F10"]);
    t.wait_restored();
    t.exit_status_is(0);
}
