//! End to end in a real terminal: the binary runs in a tmux pane, keys are typed with
//! `send-keys`, the screen is read with `capture-pane`. Skipped (with a message) only when
//! tmux is not installed; CI installs it.

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    /// A private tmux server with one `w`x`h` pane running a plain shell with a known prompt.
    fn start(name: &str, w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("tmux not installed: skipping {name}");
            return None;
        }
        let t = Tmux {
            socket: format!("gpuwatch-test-{name}-{}", std::process::id()),
        };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ])
            .args([
                "env",
                "-u",
                "NO_COLOR",
                "-u",
                "RUST_BACKTRACE",
                "-u",
                "RUST_LIB_BACKTRACE",
                "PS1=READY$ ",
                "TERM=xterm-256color",
                "bash",
                "--norc",
                "--noprofile",
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        t.wait_for("READY$", Duration::from_secs(10));
        Some(t)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]).args(args);
        c
    }

    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status().unwrap().success());
    }

    /// The visible screen plus what scrolled off above it.
    fn capture_with_history(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "0", "-S", "-500"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn capture(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn display(&self, format: &str) -> String {
        let out = self
            .cmd(&["display-message", "-p", "-t", "0", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < timeout,
                "{needle:?} did not appear within {timeout:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the app has left: alternate screen off and the shell prompt back.
    fn wait_restored(&self) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            let last = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            if self.display("#{alternate_on}") == "0" && last.trim_end() == "READY$" {
                assert_eq!(self.display("#{cursor_flag}"), "1", "cursor visible again");
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "terminal not restored:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The PID of the program running in the pane's shell.
    fn child_pid(&self) -> String {
        let shell = self.display("#{pane_pid}");
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .expect("a child of the shell")
            .to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}

fn launch(t: &Tmux, extra: &str) {
    let cmd = format!("{} --demo {extra}", env!("CARGO_BIN_EXE_gpuwatch"));
    t.send(&[&cmd, "Enter"]);
    t.wait_for("Processes (", Duration::from_secs(15));
    // Wait for a real sample (the owners appear), not just the first empty frame.
    t.wait_for("alice", Duration::from_secs(15));
}

#[test]
fn help_then_quit_restores_the_shell() {
    let Some(t) = Tmux::start("help", 120, 40) else {
        return;
    };
    launch(&t, "");
    assert_eq!(t.display("#{alternate_on}"), "1");
    let screen = t.capture();
    assert!(screen.contains("gpuwatch · demo-gpu-server"), "{screen}");
    t.send(&["?"]);
    let screen = t.wait_for("Help — keys", Duration::from_secs(5));
    assert!(screen.contains("sort by VRAM"), "{screen}");
    t.send(&["q"]);
    let screen = t.wait_restored();
    assert!(
        !screen.contains("Help — keys"),
        "alternate screen gone:\n{screen}"
    );
    t.send(&["echo exit=$?", "Enter"]);
    t.wait_for("exit=0", Duration::from_secs(5));
}

#[test]
fn keys_sort_and_compact_toggle_in_a_real_terminal() {
    let Some(t) = Tmux::start("keys", 80, 24) else {
        return;
    };
    launch(&t, "");
    t.send(&["N"]);
    t.wait_for("PID▲", Duration::from_secs(5));
    t.send(&["r"]);
    t.wait_for("PID▼", Duration::from_secs(5));
    t.send(&["c"]);
    t.wait_for("╭ 0 · NVIDIA", Duration::from_secs(5));
    t.send(&["C-c"]);
    t.wait_restored();
}

#[test]
fn sigterm_restores_the_terminal_and_exits_nonzero() {
    let Some(t) = Tmux::start("term", 100, 30) else {
        return;
    };
    launch(&t, "");
    let pid = t.child_pid();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    t.wait_restored();
    t.send(&["echo exit=$?", "Enter"]);
    t.wait_for("exit=143", Duration::from_secs(5));
}

#[test]
fn sighup_restores_the_terminal() {
    let Some(t) = Tmux::start("hup", 100, 30) else {
        return;
    };
    launch(&t, "");
    let pid = t.child_pid();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    t.wait_restored();
    t.send(&["echo exit=$?", "Enter"]);
    t.wait_for("exit=129", Duration::from_secs(5));
}

#[test]
fn resizing_to_too_small_and_back() {
    let Some(t) = Tmux::start("resize", 120, 40) else {
        return;
    };
    launch(&t, "");
    assert!(
        t.cmd(&["resize-window", "-t", "0", "-x", "40", "-y", "10"])
            .status()
            .unwrap()
            .success()
    );
    t.wait_for("terminal too small", Duration::from_secs(5));
    assert!(
        t.cmd(&["resize-window", "-t", "0", "-x", "120", "-y", "40"])
            .status()
            .unwrap()
            .success()
    );
    t.wait_for("Processes (", Duration::from_secs(5));
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
    t.send(&["echo exit=$?", "Enter"]);
    t.wait_for("exit=101", Duration::from_secs(5));
}
