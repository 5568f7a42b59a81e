//! Shared by tests/it/serve.rs and tests/it/prometheus.rs: runs `gpuwatch serve` as a child on a
//! loopback port and speaks just enough HTTP/1.1 over a std `TcpStream` to test it. Only
//! 127.0.0.1 is ever contacted; every wait is bounded.
#![allow(dead_code)]

pub mod prometheus;
pub mod tls;
pub mod webhook;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Long enough for a loaded CI machine, short enough to fail a hung test quickly.
pub const STARTUP: Duration = Duration::from_secs(20);

/// The binary with a clean environment: PATH only, and a HOME with no config file.
pub fn gpuwatch() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent/gpuwatch-test-home");
    cmd
}

/// A running `gpuwatch serve`; killed (if still running) when dropped, pass or fail.
pub struct Exporter {
    child: Child,
    pub addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Exporter {
    /// `gpuwatch --demo serve --listen 127.0.0.1:0 ARGS`.
    pub fn demo(args: &[&str]) -> Self {
        let mut cmd = gpuwatch();
        cmd.arg("--demo");
        Self::start(cmd, args)
    }

    /// `CMD serve --listen 127.0.0.1:0 ARGS`, waiting for the line that names the address.
    pub fn start(mut cmd: Command, args: &[&str]) -> Self {
        cmd.args(["serve", "--listen", "127.0.0.1:0"]);
        Self::start_serving(cmd, args)
    }

    /// `CMD ARGS` (ARGS saying where to listen), waiting for the first line that names an
    /// address.
    pub fn start_serving(mut cmd: Command, args: &[&str]) -> Self {
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn gpuwatch serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let lines = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::clone(&stderr);
        // Keeps draining stderr so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                // Logged before the address is sent, so the line is in `stderr()` by the
                // time `start_serving` returns.
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
                if let Some(addr) = serving_addr(&line) {
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = match rx.recv_timeout(STARTUP) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "gpuwatch serve never said where it listens; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        };
        Exporter {
            child,
            addr,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path).unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// Waits until `/-/ready` says 200 (the first sample is in).
    pub fn wait_ready(&self) {
        wait_until("the exporter to be ready", STARTUP, || {
            request(self.addr, "GET", "/-/ready")
                .ok()
                .filter(|r| r.status == 200)
        });
    }

    /// Sends a signal and waits (bounded) for the exit.
    pub fn signal(&mut self, sig: libc::c_int) -> ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on our own child's PID; it has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill failed");
        self.wait_exit()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        wait_until("gpuwatch serve to exit", STARTUP, || {
            self.child.try_wait().expect("try_wait")
        })
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `gpuwatch: serving http://ADDR/metrics` (or `https://`, or another path) → ADDR.
pub fn serving_addr(line: &str) -> Option<SocketAddr> {
    let rest = line.strip_prefix("gpuwatch: serving ")?;
    let rest = rest
        .strip_prefix("http://")
        .or_else(|| rest.strip_prefix("https://"))?;
    rest.split_once('/')?.0.parse().ok()
}

/// Polls `f` every 100 ms until it returns something; panics after `timeout`.
pub fn wait_until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body's bytes as sent (after de-chunking, which text bodies only use).
    pub raw_body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request on a fresh connection (`Connection: close`, so the body ends at EOF).
pub fn request(addr: SocketAddr, method: &str, target: &str) -> std::io::Result<Response> {
    request_with(addr, method, target, &[])
}

/// The same with extra header lines (`("Accept-Encoding", "gzip")`).
pub fn request_with(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    let raw = exchange(addr, method, target, headers)?;
    parse_bytes(&raw).ok_or_else(|| std::io::Error::other("malformed HTTP response"))
}

/// The raw bytes of the answer to one request.
pub fn exchange(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.write_all(request_text(addr, method, target, headers).as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(raw)
}

/// The request as sent, ending the head.
pub fn request_text(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
) -> String {
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n")
}

/// A response whose head is text and whose body may be bytes (gzip): the body is kept raw
/// in `raw_body` and as (lossy) text in `body`.
pub fn parse_bytes(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut r = parse(&format!("{head}\r\n\r\n{}", String::from_utf8_lossy(body)))?;
    let chunked = r
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"));
    r.raw_body = if chunked {
        r.body.clone().into_bytes()
    } else {
        body.to_vec()
    };
    Some(r)
}

fn parse(raw: &str) -> Option<Response> {
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_string()
    };
    Some(Response {
        status,
        headers,
        raw_body: body.clone().into_bytes(),
        body,
    })
}

fn dechunk(mut rest: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn encode_query(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A port nothing listens on right now (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

/// Whether `name` is an executable on PATH.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
}

/// Whether a test must skip because `tool` is not on PATH: locally it says so and why, and
/// skips; under `CI=true` (where .ci/run installs the tool) a missing tool fails the test
/// instead, so a broken install cannot turn a check into a silent pass.
pub fn skip_without(tool: &str, what_it_checks: &str) -> bool {
    if on_path(tool) {
        return false;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{tool} is not installed under CI=true: cannot check {what_it_checks}"
    );
    eprintln!("skipped: {tool} is not installed, so {what_it_checks} is not checked");
    true
}

/// Problems `promtool check metrics` finds in `text` (its output lines; empty when clean);
/// `None` when promtool is not installed (a skip: a failure under CI=true, which installs it).
pub fn promtool_check_metrics(text: &str) -> Option<Vec<String>> {
    if skip_without("promtool", "`promtool check metrics`") {
        return None;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut problems: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if !out.status.success() && problems.is_empty() {
        problems.push(format!("promtool failed: {}", out.status));
    }
    Some(problems)
}
