//! A pseudo-terminal the test drives itself: the binary runs on the slave side as its
//! controlling terminal, the test writes keys to the master and timestamps every chunk the
//! program writes back. tmux's `capture-pane` cannot say *when* a frame arrived; this can,
//! so key-to-frame latency is measured here. Closing the master is what closing a tmux pane
//! does to the program inside.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the program has written so far: every chunk with the time it was read.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    chunks: Vec<(Instant, usize)>,
}

pub struct Pty {
    master: Option<Arc<File>>,
    child: Child,
    output: Arc<Mutex<Output>>,
    stop_reading: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

impl Pty {
    /// Runs the gpuwatch binary with `args` on a new `w`x`h` pseudo-terminal, in a clean
    /// environment (PATH, an empty HOME, TERM), as the leader of its own session with the
    /// pty as its controlling terminal (as a shell in a tmux pane would start it).
    pub fn spawn(args: &[&str], w: u16, h: u16) -> Pty {
        Pty::spawn_with(args, w, h, true)
    }

    /// The same; with `controlling` false the pty is only its standard input and output, so
    /// closing the master sends no SIGHUP: all the program sees is the end of its input.
    pub fn spawn_with(args: &[&str], w: u16, h: u16, controlling: bool) -> Pty {
        let (master, slave) = open_pty(w, h);
        let slave_io = |f: &File| Stdio::from(f.try_clone().expect("dup the pty slave"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", super::EMPTY_HOME)
            .env("TERM", "xterm-256color")
            .stdin(slave_io(&slave))
            .stdout(slave_io(&slave))
            .stderr(slave_io(&slave));
        // SAFETY: setsid and ioctl are async-signal-safe; nothing is allocated in the child.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 || (controlling && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0) {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start gpuwatch on the pty");
        drop(slave);
        let master = Arc::new(master);
        let output = Arc::new(Mutex::new(Output::default()));
        let stop_reading = Arc::new(AtomicBool::new(false));
        let reader = std::thread::spawn({
            let (master, output, stop) = (master.clone(), output.clone(), stop_reading.clone());
            move || read_master(&master, &output, &stop)
        });
        Pty {
            master: Some(master),
            child,
            output,
            stop_reading,
            reader: Some(reader),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Types `bytes`; returns the moment just before they were written, the earliest an
    /// answer can come. Read after the write, the clock missed answers: under load the test
    /// thread was descheduled between `write` and `Instant::now()` for longer than gpuwatch
    /// took to answer (3 ms), so the answer was stamped "before the key" and the key counted
    /// as never drawn (strace of both sides, three busy loops on two cores).
    pub fn write(&self, bytes: &[u8]) -> Instant {
        let mut master: &File = self.master.as_ref().expect("the pty is open");
        let sent = Instant::now();
        master.write_all(bytes).expect("write to the pty");
        sent
    }

    /// Everything written so far, lossily as text (escape sequences included).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap().bytes).into_owned()
    }

    /// How many bytes the program has written so far.
    pub fn written(&self) -> usize {
        self.output.lock().unwrap().bytes.len()
    }

    /// Waits until the output contains `needle`; panics after `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) {
        let start = Instant::now();
        while !self.text().contains(needle) {
            assert!(
                start.elapsed() < timeout,
                "{needle:?} not written within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until nothing has been written for `quiet` (a frame is written in several
    /// chunks; the next key must not be timed against the tail of the last frame).
    pub fn wait_quiet(&self, quiet: Duration, timeout: Duration) {
        let start = Instant::now();
        loop {
            let last = self.output.lock().unwrap().chunks.last().map(|c| c.0);
            if last.is_none_or(|t| t.elapsed() >= quiet) {
                return;
            }
            assert!(start.elapsed() < timeout, "output never went quiet");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The time from `since` to the first chunk written after it, if one comes within `limit`.
    pub fn first_output_after(&self, since: Instant, limit: Duration) -> Option<Duration> {
        let deadline = since + limit + Duration::from_millis(50);
        loop {
            let first = {
                let out = self.output.lock().unwrap();
                out.chunks.iter().find(|c| c.0 >= since).map(|c| c.0)
            };
            if let Some(t) = first {
                return Some(t - since);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// How long until `needle` appears in what is written after the first `offset` bytes,
    /// if it does within `timeout`.
    pub fn time_to(&self, offset: usize, needle: &str, timeout: Duration) -> Option<Duration> {
        let start = Instant::now();
        loop {
            let found = {
                let out = self.output.lock().unwrap();
                let tail = out.bytes.get(offset..).unwrap_or_default();
                String::from_utf8_lossy(tail).contains(needle)
            };
            if found {
                return Some(start.elapsed());
            }
            if start.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Changes the terminal's size, as a window manager or tmux does: the kernel sends
    /// SIGWINCH to the program (its foreground process group).
    pub fn resize(&self, w: u16, h: u16) {
        let size = libc::winsize {
            ws_row: h,
            ws_col: w,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let fd = self.master.as_ref().expect("the pty is open").as_raw_fd();
        // SAFETY: TIOCSWINSZ reads one winsize.
        assert_eq!(unsafe { libc::ioctl(fd, libc::TIOCSWINSZ, &size) }, 0);
    }

    /// Closes the master side, as tmux does when its pane is closed: the program's terminal
    /// hangs up.
    pub fn close(&mut self) {
        self.stop_reading.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the pty reader");
        }
        self.master = None;
    }

    /// The program's exit status, if it exits within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for gpuwatch") {
                return Some(status);
            }
            if start.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.close();
    }
}

/// A new pseudo-terminal pair of `w`x`h` cells: (master, slave).
fn open_pty(w: u16, h: u16) -> (File, File) {
    // SAFETY: plain libc calls on descriptors this function owns; ptsname_r writes into a
    // buffer of the length it is given.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(master >= 0, "posix_openpt");
        let master = File::from(OwnedFd::from_raw_fd(master));
        let fd = master.as_raw_fd();
        assert_eq!(libc::grantpt(fd), 0, "grantpt");
        assert_eq!(libc::unlockpt(fd), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_str().unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name)
            .expect("open the pty slave");
        let size = libc::winsize {
            ws_row: h,
            ws_col: w,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        assert_eq!(libc::ioctl(fd, libc::TIOCSWINSZ, &size), 0, "TIOCSWINSZ");
        (master, slave)
    }
}

/// Reads the master until told to stop or the slave side is gone, stamping each chunk.
fn read_master(master: &File, output: &Mutex<Output>, stop: &AtomicBool) {
    let mut buf = [0u8; 65536];
    while !stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd {
            fd: master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut pfd, 1, 20) };
        if ready <= 0 {
            continue;
        }
        let mut reader: &File = master;
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => {
                // The slave side is closed (the program exited): nothing more will come.
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(n) => {
                let mut out = output.lock().unwrap();
                out.bytes.extend_from_slice(&buf[..n]);
                out.chunks.push((Instant::now(), n));
            }
        }
    }
}
