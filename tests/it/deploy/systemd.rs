//! deploy/systemd/gpuwatch.service as an admin installs it: its own ExecStart, with its own
//! Environment, starts on a fresh install (no /etc/gpuwatch) on the fake NVML and serves
//! metrics; the optional config file is read; the listen address is set in one place. Also
//! the unit's parsing and running, for systemd_hardening.rs. Reads the unit; changes nothing.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::serve_support::{STARTUP, free_port, request, wait_until};

pub(super) const UNIT: &str = "deploy/systemd/gpuwatch.service";
/// Where the unit's ExecStart expects the binary (the install steps put it there).
pub(super) const INSTALLED: &str = "/usr/local/bin/gpuwatch";
/// The `[Service]` settings a test needs, with systemd's specifiers expanded as for a
/// system unit.
pub(super) struct Service {
    exec_start: Vec<String>,
    environment: Vec<(String, String)>,
    /// Every other `Key=value` line, in order.
    settings: Vec<(String, String)>,
}

impl Service {
    fn parse(text: &str) -> Service {
        let mut section = "";
        let (mut exec_start, mut environment, mut settings) = (None, Vec::new(), Vec::new());
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line;
                continue;
            }
            if section != "[Service]" || line.starts_with('#') {
                continue;
            }
            // Quoting and escapes would need systemd's full word splitting: the unit uses none.
            assert!(!line.contains(['"', '\'', '\\']), "{UNIT}: quoted: {line}");
            if let Some(cmd) = line.strip_prefix("ExecStart=") {
                let words = expand(cmd).split_whitespace().map(String::from).collect();
                assert!(exec_start.replace(words).is_none(), "two ExecStart lines");
            } else if let Some(vars) = line.strip_prefix("Environment=") {
                for pair in expand(vars).split_whitespace() {
                    let (k, v) = pair.split_once('=').expect("Environment=NAME=VALUE");
                    environment.push((k.to_string(), v.to_string()));
                }
            } else if let Some((k, v)) = line.split_once('=') {
                settings.push((k.to_string(), expand(v)));
            }
        }
        Service {
            exec_start: exec_start.expect("an ExecStart line"),
            environment,
            settings,
        }
    }

    pub(super) fn setting(&self, key: &str) -> Option<&str> {
        let mut found = self.settings.iter().filter(|(k, _)| k == key);
        let value = found.next().map(|(_, v)| v.as_str());
        assert!(found.next().is_none(), "{key} set twice in {UNIT}");
        value
    }

    fn env(&self, name: &str) -> Option<&str> {
        let mut found = self.environment.iter().filter(|(k, _)| k == name);
        let value = found.next().map(|(_, v)| v.as_str());
        assert!(found.next().is_none(), "{name} set twice in {UNIT}");
        value
    }
}

/// systemd's specifiers the unit may use; any other `%` would be run verbatim here but not
/// by systemd, so it fails the test rather than testing something else.
fn expand(value: &str) -> String {
    let out = value.replace("%E", "/etc");
    assert!(
        !out.contains('%'),
        "{UNIT}: a specifier this test cannot expand: {value}"
    );
    out
}

pub(super) fn unit() -> Service {
    Service::parse(&super::read(UNIT))
}

/// The config file the service reads when present: gpuwatch's usual place under the
/// unit's `XDG_CONFIG_HOME`, or the file `GPUWATCH_CONFIG` names (which must exist).
fn config_file(service: &Service) -> Option<PathBuf> {
    if let Some(named) = service.env("GPUWATCH_CONFIG") {
        return Some(named.into());
    }
    let base = service.env("XDG_CONFIG_HOME")?;
    Some(Path::new(base).join("gpuwatch/config.toml"))
}

/// A folder holding the fake NVML as `libnvidia-ml.so.1` and its scenario beside it: on
/// `LD_LIBRARY_PATH` it stands in for the driver's library, so the ExecStart runs unchanged
/// (no `--nvml-lib`) and loads NVML as it would on a GPU node.
pub(super) fn fake_driver() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        crate::common::fake_lib(),
        dir.path().join("libnvidia-ml.so.1"),
    )
    .unwrap();
    let scenario = Path::new(super::ROOT).join("tests/fixtures/nvml/two_gpus.json");
    std::fs::copy(scenario, dir.path().join("scenario.json")).unwrap();
    dir
}

/// Runs the unit's ExecStart with the unit's Environment (and what systemd itself sets for a
/// DynamicUser: HOME=/), changing one thing: GPUWATCH_LISTEN becomes 127.0.0.1:PORT on a free
/// port, because a test must not open an exporter on every interface of a shared machine
/// and 19445 may be taken there. `under` runs it under another program (strace) first.
pub(super) fn start(service: &Service, driver: &Path, port: u16, under: &[&OsStr]) -> Child {
    let (program, args) = service.exec_start.split_first().unwrap();
    assert_eq!(program, INSTALLED, "the install steps put the binary there");
    let binary = OsStr::new(env!("CARGO_BIN_EXE_gpuwatch"));
    let mut cmd = Command::new(under.first().unwrap_or(&binary));
    if !under.is_empty() {
        cmd.args(&under[1..]).arg(binary);
    }
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", "/")
        .env("LD_LIBRARY_PATH", driver);
    for (k, v) in &service.environment {
        cmd.env(k, v);
    }
    cmd.env("GPUWATCH_LISTEN", format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd.spawn().expect("spawn the unit's ExecStart")
}

/// Killed when dropped, pass or fail, with its children first: a process strace traces
/// outlives a killed strace.
pub(super) struct Running(pub(super) Child);

impl Running {
    pub(super) fn children(&self) -> Vec<libc::pid_t> {
        let pid = self.0.id();
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for child in self.children() {
            // SAFETY: kill(2) on a child of the process this test started.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Until /-/ready says 200, or the process exits: then its status and stderr.
pub(super) fn ready_or_exit(child: &mut Running, port: u16) -> Result<(), String> {
    let addr = ([127, 0, 0, 1], port).into();
    wait_until("the unit's exporter to be ready or exit", STARTUP, || {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut said = String::new();
            std::io::Read::read_to_string(child.0.stderr.as_mut().unwrap(), &mut said).unwrap();
            return Some(Err(format!("exited with {status}: {said}")));
        }
        let ok = request(addr, "GET", "/-/ready").is_ok_and(|r| r.status == 200);
        ok.then_some(Ok(()))
    })
}

#[test]
fn a_fresh_install_starts_the_units_own_exec_start_and_serves_nvml_metrics() {
    let service = unit();
    if let Some(file) = config_file(&service).filter(|f| f.exists()) {
        // Not a fresh install: this machine's own file would decide the outcome.
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "{} exists on the CI machine",
            file.display()
        );
        eprintln!("skipped: {} exists, not a fresh install", file.display());
        return;
    }
    let driver = fake_driver();
    let port = free_port();
    let mut child = Running(start(&service, driver.path(), port, &[]));
    ready_or_exit(&mut child, port).unwrap_or_else(|e| panic!("the unit does not start: {e}"));
    let metrics = request(([127, 0, 0, 1], port).into(), "GET", "/metrics").unwrap();
    assert_eq!(metrics.status, 200);
    // The fake driver's H100, read through NVML (not the demo fleet), with the source up.
    assert!(
        metrics.body.contains(
            r#"gpuwatch_gpu_temperature_celsius{gpu="0",uuid="GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a""#
        ),
        "{}",
        metrics.body
    );
    assert!(metrics.body.contains("\ngpuwatch_source_up"));
}

/// The control: the unit as it shipped before (GPUWATCH_CONFIG naming a file no install
/// step creates) fails this same start, so the test above can catch that defect.
#[test]
fn naming_an_absent_config_file_would_fail_the_same_start() {
    let old = super::read(UNIT).replace(
        "Environment=XDG_CONFIG_HOME=%E",
        "Environment=GPUWATCH_CONFIG=/nonexistent/gpuwatch/config.toml",
    );
    let service = Service::parse(&old);
    assert!(config_file(&service).is_some_and(|f| !f.exists()));
    let driver = fake_driver();
    let port = free_port();
    let mut child = Running(start(&service, driver.path(), port, &[]));
    let err = ready_or_exit(&mut child, port).expect_err("an absent named file is refused");
    assert!(
        err.contains("exit status: 2") && err.contains("GPUWATCH_CONFIG"),
        "{err}"
    );
}

/// The config example docs/deploy.md tells the admin to write (its heredoc).
fn documented_config() -> String {
    let doc = super::read("docs/deploy.md");
    let start = doc
        .find("<<'EOF'\n")
        .expect("a config example in docs/deploy.md")
        + 8;
    let len = doc[start..].find("\nEOF\n").unwrap();
    doc[start..=start + len].to_string()
}

/// With /etc/gpuwatch/config.toml present, the service reads it (the documented example
/// turns on per-process series), and a `listen` in it does not move the exporter: the
/// unit's GPUWATCH_LISTEN wins, as docs/deploy.md says. XDG_CONFIG_HOME is pointed at a
/// temporary folder standing in for /etc, which a test must not write.
#[test]
fn the_optional_config_file_is_read_and_the_units_listen_address_wins() {
    let example = documented_config();
    let sets_listen = example
        .lines()
        .any(|l| l.trim_start().starts_with("listen"));
    assert!(!sets_listen, "the example must not set listen");
    let etc = tempfile::tempdir().unwrap();
    let ignored_port = free_port();
    let file = example.replacen(
        "[serve]\n",
        &format!("[serve]\nlisten = \"127.0.0.1:{ignored_port}\"\n"),
        1,
    );
    std::fs::create_dir(etc.path().join("gpuwatch")).unwrap();
    std::fs::write(etc.path().join("gpuwatch/config.toml"), file).unwrap();
    let mut service = unit();
    for (k, v) in &mut service.environment {
        if k == "XDG_CONFIG_HOME" {
            *v = etc.path().to_str().unwrap().to_string();
        }
    }
    let driver = fake_driver();
    let port = free_port();
    let mut child = Running(start(&service, driver.path(), port, &[]));
    ready_or_exit(&mut child, port).unwrap_or_else(|e| panic!("the unit does not start: {e}"));
    let metrics = request(([127, 0, 0, 1], port).into(), "GET", "/metrics").unwrap();
    assert!(
        metrics.body.contains("\ngpuwatch_process_series_left_out "),
        "{}",
        metrics.body
    );
    assert!(request(([127, 0, 0, 1], ignored_port).into(), "GET", "/metrics").is_err());
}

/// The address lives in GPUWATCH_LISTEN only: a `--listen` on ExecStart would silently beat
/// it (and any config file's `[serve] listen`), which is what the unit used to do.
#[test]
fn the_listen_address_is_set_in_one_place_on_the_default_port() {
    let service = unit();
    assert!(
        !service.exec_start.iter().any(|a| a.starts_with("--listen")),
        "{:?}",
        service.exec_start
    );
    let listen = service.env("GPUWATCH_LISTEN").expect("GPUWATCH_LISTEN");
    let addr: std::net::SocketAddr = listen.parse().unwrap();
    assert!(
        addr.ip().is_unspecified(),
        "Prometheus scrapes from elsewhere"
    );
    assert_eq!(addr.port(), gpuwatch::config::DEFAULT_PORT);
}
