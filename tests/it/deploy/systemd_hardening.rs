//! deploy/systemd/gpuwatch.service's hardening holds up: `systemd-analyze verify` passes,
//! `security --offline` scores below a threshold (and a bare unit does not), and the
//! SystemCallFilter allows every call the exporter makes. Runs the unit as systemd.rs does.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use super::systemd::{INSTALLED, Running, UNIT, fake_driver, ready_or_exit, start, unit};
use crate::serve_support::{STARTUP, free_port, request, skip_without, wait_until};

/// `systemd-analyze security`'s exposure in tenths, as `--threshold` takes it: 0 (locked
/// down) to 100 (none). The unit scores 22 (printed as 2.2); the slack is for systemd
/// versions that weigh a setting differently. Without hardening a unit scores 96.
const MAX_EXPOSURE: u32 = 30;

/// The unit with ExecStart pointed at the binary under test (verify checks that it exists).
fn unit_for_analyze() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpuwatch.service");
    let text = super::read(UNIT).replace(INSTALLED, env!("CARGO_BIN_EXE_gpuwatch"));
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn the_systemd_unit_verifies() {
    if skip_without("systemd-analyze", "the systemd unit") {
        return;
    }
    let (_dir, path) = unit_for_analyze();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    // Outside a booted systemd (a container), verify still checks the unit and says so.
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("gpuwatch.service:"), "{said}");
}

#[test]
fn the_systemd_unit_is_hardened_below_the_exposure_threshold() {
    if skip_without("systemd-analyze", "the unit's hardening") {
        return;
    }
    let (_dir, path) = unit_for_analyze();
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--no-pager"])
        .arg(format!("--threshold={MAX_EXPOSURE}"))
        .arg(&path)
        .output()
        .unwrap();
    // The table goes to stdout, the overall line to stderr (systemd 252).
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    let score = said
        .lines()
        .find_map(|l| l.split("gpuwatch.service: ").nth(1))
        .unwrap_or_else(|| panic!("no overall exposure in:\n{said}"));
    eprintln!("systemd-analyze security: {score}");
    assert!(
        out.status.success(),
        "exposure above {MAX_EXPOSURE}/10:\n{said}"
    );
    // The control: the same check fails a unit with none of the hardening.
    let bare_path = path.with_file_name("bare.service");
    let bare = format!(
        "[Service]\nExecStart={} serve\n",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    std::fs::write(&bare_path, bare).unwrap();
    let status = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", "--no-pager"])
        .arg(format!("--threshold={MAX_EXPOSURE}"))
        .arg(&bare_path)
        .output()
        .unwrap()
        .status;
    assert!(!status.success(), "the threshold check is live");
}

/// The system calls a `SystemCallFilter=` allow list lets through, its @groups expanded as
/// this machine's systemd defines them.
fn allowed_calls(list: &str, out: &mut BTreeSet<String>) {
    for item in list.split_whitespace() {
        assert!(
            !item.starts_with('~'),
            "{UNIT}: a deny list is not checked here"
        );
        if !out.insert(item.to_string()) || !item.starts_with('@') {
            continue;
        }
        let shown = Command::new("systemd-analyze")
            .args(["syscall-filter", item])
            .output()
            .unwrap();
        // The group's name, then its members indented (comments start with #).
        let text = String::from_utf8(shown.stdout).unwrap();
        let members: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(' '))
            .map(str::trim)
            .filter(|m| !m.is_empty() && !m.starts_with('#'))
            .collect();
        assert!(!members.is_empty(), "systemd-analyze knows no {item}");
        allowed_calls(&members.join(" "), out);
    }
}

/// systemd kills a service that makes a call outside its SystemCallFilter (SIGSYS), which no
/// test outside systemd would see: run the unit's ExecStart under strace through start-up,
/// scrapes (plain and gzip) and a SIGTERM shutdown, and check every call it made is allowed.
/// On the fake NVML: the real driver's library also calls ioctl and mmap, both allowed.
#[test]
fn the_system_call_filter_allows_every_call_the_exporter_makes() {
    if skip_without("strace", "the unit's system-call filter")
        || skip_without("systemd-analyze", "the unit's system-call filter")
    {
        return;
    }
    let service = unit();
    let mut allowed = BTreeSet::new();
    allowed_calls(service.setting("SystemCallFilter").unwrap(), &mut allowed);
    let driver = fake_driver();
    let trace = driver.path().join("trace");
    let under = [OsStr::new("strace"), OsStr::new("-f"), OsStr::new("-qq")];
    let under = [&under[..], &[OsStr::new("-o"), trace.as_os_str()]].concat();
    let port = free_port();
    let mut strace = Running(start(&service, driver.path(), port, &under));
    ready_or_exit(&mut strace, port).unwrap_or_else(|e| panic!("no start under strace: {e}"));
    let addr = ([127, 0, 0, 1], port).into();
    assert_eq!(request(addr, "GET", "/metrics").unwrap().status, 200);
    let gzip = [("Accept-Encoding", "gzip")];
    let zipped = crate::serve_support::request_with(addr, "GET", "/metrics", &gzip).unwrap();
    assert_eq!(zipped.status, 200);
    // SIGTERM to gpuwatch itself (strace's child), for the shutdown path; strace follows.
    let child = strace.children()[0];
    // SAFETY: kill(2) on the process strace started for this test and still traces.
    assert_eq!(unsafe { libc::kill(child, libc::SIGTERM) }, 0);
    wait_until("strace to exit", STARTUP, || strace.0.try_wait().unwrap());
    let text = std::fs::read_to_string(&trace).unwrap();
    let used: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(_, call)| call.trim_start()))
        .filter_map(|call| call.split_once('(').map(|(name, _)| name))
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect();
    assert!(used.len() > 20 && used.contains("accept4"), "{used:?}");
    let refused: Vec<&&str> = used.iter().filter(|c| !allowed.contains(**c)).collect();
    assert!(
        refused.is_empty(),
        "SystemCallFilter would kill gpuwatch at {refused:?}"
    );
}
