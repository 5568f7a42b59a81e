//! A private tmux server and pane for end-to-end tests: start a shell with a known
//! prompt, type with `send-keys`, read with `capture-pane`, check the terminal came back.

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
    /// Shell prompts on screen (with history) when a command was last entered: the
    /// program has left only once a later prompt appears. A bare `READY$` alone is not
    /// enough — it is also what the screen shows before the typed command even echoes.
    prompts_at_enter: std::cell::Cell<usize>,
}

impl Tmux {
    /// A private tmux server with one `w`x`h` pane running a plain shell with a known prompt.
    pub fn start(name: &str, w: u16, h: u16) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            super::skip(&format!("tmux is not installed, so {name} is not run"));
            return None;
        }
        let t = Tmux {
            socket: format!("gpuwatch-test-{name}-{}", std::process::id()),
            prompts_at_enter: std::cell::Cell::new(0),
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
                // A clean environment: no NO_COLOR, RUST_BACKTRACE or GPUWATCH_* from the
                // caller, and a HOME without a config file.
                "env",
                "-i",
                &format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
                &format!("HOME={}", super::EMPTY_HOME),
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

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]).args(args);
        c
    }

    pub fn send(&self, keys: &[&str]) {
        if keys.contains(&"Enter") {
            self.prompts_at_enter.set(self.prompts());
        }
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status().unwrap().success());
    }

    /// The visible screen plus what scrolled off above it.
    pub fn capture_with_history(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "0", "-S", "-500"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn capture(&self) -> String {
        let out = self
            .cmd(&["capture-pane", "-p", "-t", "0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn display(&self, format: &str) -> String {
        let out = self
            .cmd(&["display-message", "-p", "-t", "0", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Waits until `needle` is on screen and the screen has settled: a frame is written in
    /// several chunks, so a capture can catch half of one; two equal captures 60 ms apart
    /// mean the frame is whole, and whatever else the test reads from it is there too.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                std::thread::sleep(Duration::from_millis(60));
                if self.capture() == screen {
                    return screen;
                }
                continue;
            }
            assert!(
                start.elapsed() < timeout,
                "{needle:?} did not appear within {timeout:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many shell prompts the pane shows, history included.
    fn prompts(&self) -> usize {
        self.capture_with_history()
            .lines()
            .filter(|l| l.starts_with("READY$"))
            .count()
    }

    /// Waits until the app has left: alternate screen off and a new shell prompt back.
    pub fn wait_restored(&self) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            let last = screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            if self.display("#{alternate_on}") == "0"
                && last.trim_end() == "READY$"
                && self.prompts() > self.prompts_at_enter.get()
            {
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
    pub fn child_pid(&self) -> String {
        let shell = self.display("#{pane_pid}");
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .expect("a child of the shell")
            .to_string()
    }

    /// Starts `gpuwatch --demo EXTRA` in the pane and waits for a frame with real data (the
    /// owners appear), not just the first empty one.
    pub fn launch_demo(&self, extra: &str) {
        let cmd = format!("{} --demo {extra}", env!("CARGO_BIN_EXE_gpuwatch"));
        self.send(&[&cmd, "Enter"]);
        self.wait_for("Processes (", Duration::from_secs(15));
        self.wait_for("alice", Duration::from_secs(15));
    }

    /// Sends `signal` (e.g. "TERM") to the program running in the pane.
    pub fn signal_child(&self, signal: &str) {
        let pid = self.child_pid();
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{signal} {pid}");
    }

    pub fn resize(&self, w: u16, h: u16) {
        let (w, h) = (w.to_string(), h.to_string());
        let ok = self
            .cmd(&["resize-window", "-t", "0", "-x", &w, "-y", &h])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux resize-window {w}x{h}");
    }

    /// Asks the shell for the last exit status and waits until it is `code`.
    pub fn exit_status_is(&self, code: u32) {
        self.send(&["echo exit=$?", "Enter"]);
        self.wait_for(&format!("exit={code}"), Duration::from_secs(10));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}
