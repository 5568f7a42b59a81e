//! Hostile files, text, environments and processes (issue 15), each through the path a user
//! takes: the real binary, real files and real processes. Owns these regression tests only
//! (tests/it/hardening_tui.rs has the terminal and wedged-driver ones); the scenario format is
//! `fake-nvml/src/scenario.rs`'s.

use crate::common;
use crate::serve_support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command as StdCommand};
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// A child process killed when the test ends, pass or fail.
struct Reaped(Child);

impl Reaped {
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Writes `scenario` into `dir` and returns the binary pointed at the fake NVML with it.
fn gpuwatch_on(dir: &Path, scenario: &Value) -> Command {
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(scenario).unwrap()).unwrap();
    let mut cmd = common::clean_command();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", &path)
        .arg("--nvml-lib")
        .arg(common::fake_lib());
    cmd
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Item 3: a process whose argv[0] is a terminal escape, on a GPU whose name is another,
/// must come out of `--once` text escaped, with no raw ESC or BEL byte anywhere.
#[test]
fn once_text_escapes_control_characters_in_names_and_commands() {
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J";
    common::fake_lib(); // built first: a slow build must not outlast the sleeper
    let sleeper = Reaped(
        StdCommand::new("sleep")
            .arg0(hostile)
            .arg("300")
            .spawn()
            .expect("spawn sleep"),
    );
    let mut s = fixture();
    s["gpus"][0]["name"] = json!(format!("H100{hostile}"));
    s["gpus"][0]["processes"] =
        json!([{"pid": sleeper.pid(), "kind": "compute", "used_memory": 1_073_741_824u64}]);
    let dir = tempfile::tempdir().unwrap();
    let out = gpuwatch_on(dir.path(), &s)
        .arg("--once")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        !text.bytes().any(|b| b == 0x1b || b == 0x07),
        "raw control bytes in:\n{text}"
    );
    assert!(text.contains("\\e]0;owned\\x07\\e[2J 300"), "{text}");
    assert!(text.contains("H100\\e]0;owned"), "{text}");
}

/// Item 14: a `GPUWATCH_*` value that is not UTF-8 is an error naming the variable, not a
/// setting silently ignored.
#[test]
fn a_non_utf8_environment_value_is_an_error_naming_the_variable() {
    use std::os::unix::ffi::OsStrExt;
    let out = common::clean_command()
        .env("GPUWATCH_INTERVAL", std::ffi::OsStr::from_bytes(b"\xff"))
        .args(["--demo", "--once"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "gpuwatch: GPUWATCH_INTERVAL: the value is not valid UTF-8 (got \"\\xff\")\n"
    );
}

/// The binary as a plain std `Command` (for `uid`/`gid`), with the clean environment.
fn std_gpuwatch() -> StdCommand {
    let mut cmd = StdCommand::new(env!("CARGO_BIN_EXE_gpuwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", common::EMPTY_HOME);
    cmd
}

/// `nobody` on Debian and most others.
const NOBODY: u32 = 65534;

/// Item 13: run as another user with `HOME` at a home that user cannot enter (as `sudo -u`
/// leaves it), the default config path is "no config file" with a note, not an error; the
/// same file named with `--config` is an error.
#[test]
fn an_unsearchable_default_config_path_is_no_config_file() {
    if !is_root() {
        common::skip("needs root to run a child as nobody");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    // Root's and private, as /root is: nobody cannot search it.
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let as_nobody = |extra: &[&str]| {
        let mut cmd = std_gpuwatch();
        cmd.env("HOME", home.path())
            .args(["--demo", "--once"])
            .args(extra)
            .uid(NOBODY)
            .gid(NOBODY);
        cmd.output().unwrap()
    };
    let out = as_nobody(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("gpuwatch: note: no config file read (")
            && stderr.contains("Permission denied"),
        "{stderr}"
    );
    let named = home.path().join(".config/gpuwatch/config.toml");
    let out = as_nobody(&["--config", named.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("gpuwatch: --config: cannot read ")
            && stderr.contains("Permission denied"),
        "{stderr}"
    );
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Item 6: files meant to be regular that are not (a device that never ends, a FIFO with
/// no writer) or are huge are refused at once with the reason, never read forever.
#[test]
fn config_hosts_and_recording_files_must_be_regular_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let big = dir.path().join("big.toml");
    std::fs::write(&big, "# comment\n".repeat(200_000)).unwrap();
    let cases: Vec<(Vec<&std::ffi::OsStr>, String)> = vec![
        (
            vec!["--config".as_ref(), "/dev/urandom".as_ref()],
            "--config: cannot read /dev/urandom: not a regular file (a character device)".into(),
        ),
        (
            vec!["--config".as_ref(), fifo.as_os_str()],
            format!(
                "--config: cannot read {}: not a regular file (a FIFO)",
                fifo.display()
            ),
        ),
        (
            vec!["--config".as_ref(), big.as_os_str()],
            format!(
                "--config: cannot read {}: larger than 1 MiB (the limit for this file)",
                big.display()
            ),
        ),
        (
            vec!["--hosts-file".as_ref(), "/dev/zero".as_ref()],
            "/dev/zero: not a regular file (a character device)".into(),
        ),
        (
            vec!["replay".as_ref(), "/dev/zero".as_ref()],
            "/dev/zero: not a regular file (a character device)".into(),
        ),
        (
            vec!["replay".as_ref(), fifo.as_os_str()],
            format!("{}: not a regular file (a FIFO)", fifo.display()),
        ),
    ];
    for (args, want) in cases {
        let out = common::clean_command()
            .args(&args)
            .arg("--once")
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone();
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("gpuwatch: {want}\n"),
            "{args:?}"
        );
    }
}

/// `gpuwatch --demo --once ARGS` must exit 2: its standard error.
fn demo_once_refused(args: &[&std::ffi::OsStr]) -> String {
    let out = common::clean_command()
        .args(["--demo", "--once"])
        .args(args)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    String::from_utf8_lossy(&out).into_owned()
}

/// Items 1 and 10: `--record` onto a planted symbolic link, a FIFO or someone else's file is
/// refused at once with the reason, and the link's target is left untouched.
#[test]
fn record_refuses_links_fifos_and_other_users_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("passwd-like");
    std::fs::write(&target, "root:x:0:0\n").unwrap();
    let link = dir.path().join("rec.ndjson");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = dir.path().join("fifo.ndjson");
    mkfifo(&fifo);
    let theirs = dir.path().join("theirs.ndjson");
    std::fs::write(&theirs, "").unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).ok();
    let mut cases = vec![
        (
            link.clone(),
            "it is a symbolic link: refusing to follow it".to_string(),
        ),
        (fifo.clone(), "not a regular file (a FIFO)".to_string()),
    ];
    if is_root() {
        cases.push((
            theirs.clone(),
            format!("it belongs to uid {NOBODY}, not to this user: refusing to write into it"),
        ));
    }
    for (path, why) in cases {
        let args = ["--record".as_ref(), path.as_os_str()];
        assert_eq!(
            demo_once_refused(&args),
            format!("gpuwatch: cannot record to {}: {why}\n", path.display())
        );
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root:x:0:0\n");
}

/// Round 3, item 1: `--record` (or `[record] path`) naming an existing file that is not a
/// gpuwatch recording — root's /etc/passwd, an empty /etc/cron.deny — is refused with one
/// line and left byte for byte as it was; an earlier recording is still replaced.
#[test]
fn record_never_overwrites_a_file_that_is_not_a_recording() {
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    let content = "root:x:0:0:root:/root:/bin/bash\n";
    std::fs::write(&passwd, content).unwrap();
    let empty = dir.path().join("cron.deny");
    std::fs::write(&empty, "").unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[record]\npath = {:?}\n", passwd.to_str().unwrap()),
    )
    .unwrap();
    let refusal = |path: &Path, what: &str| {
        format!(
            "gpuwatch: cannot record to {}: it exists and is not a gpuwatch recording ({what}): \
             refusing to overwrite it; choose a new file name\n",
            path.display()
        )
    };
    let runs: [(Vec<&std::ffi::OsStr>, &Path, &str); 3] = [
        (
            vec!["--record".as_ref(), passwd.as_os_str()],
            &passwd,
            "its first line is not a recording header",
        ),
        (
            vec!["--config".as_ref(), config.as_os_str()],
            &passwd,
            "its first line is not a recording header",
        ),
        (
            vec!["--record".as_ref(), empty.as_os_str()],
            &empty,
            "an empty file",
        ),
    ];
    for (args, path, what) in runs {
        assert_eq!(demo_once_refused(&args), refusal(path, what), "{args:?}");
    }
    assert_eq!(std::fs::read_to_string(&passwd).unwrap(), content);
    assert_eq!(std::fs::read_to_string(&empty).unwrap(), "");
    // A recording is replaced by the next one, as before.
    let rec = dir.path().join("rec.ndjson");
    for _ in 0..2 {
        common::clean_command()
            .args(["--demo", "--once", "--record"])
            .arg(&rec)
            .timeout(Duration::from_secs(60))
            .assert()
            .success();
    }
    assert!(gpuwatch::record::read(&rec).unwrap().samples.len() > 1);
}

/// Item 11: on a full disk the recording pauses (said once), sampling goes on, and it
/// resumes when space returns, appending: nothing written before is lost. Needs root for
/// a small tmpfs.
#[test]
fn a_full_disk_pauses_the_recording_and_loses_nothing() {
    if !is_root() {
        common::skip("needs root to mount a small tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        common::skip("cannot mount a tmpfs here");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = StdCommand::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(dir.path());
    let rec = dir.path().join("rec.ndjson");
    let mut cmd = serve_support::gpuwatch();
    cmd.args([
        "--demo",
        "--demo-gpus",
        "1",
        "--interval",
        "100ms",
        "--record",
    ])
    .arg(&rec);
    let mut exporter = serve_support::Exporter::start(cmd, &[]);
    exporter.wait_ready();
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .count()
    };
    serve_support::wait_until("a few samples", Duration::from_secs(30), || {
        (lines(&rec) >= 4).then_some(())
    });
    // Fill the rest of the disk.
    let filler = dir.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    serve_support::wait_until("the pause notice", Duration::from_secs(30), || {
        exporter
            .stderr()
            .contains("gpuwatch: recording paused: disk full")
            .then_some(())
    });
    let before = lines(&rec);
    let metrics_during = exporter.get("/metrics");
    assert_eq!(metrics_during.status, 200, "sampling goes on");
    std::fs::remove_file(&filler).unwrap();
    serve_support::wait_until("the resume notice", Duration::from_secs(30), || {
        exporter
            .stderr()
            .contains("gpuwatch: recording resumed")
            .then_some(())
    });
    serve_support::wait_until("more samples", Duration::from_secs(30), || {
        (lines(&rec) > before + 3).then_some(())
    });
    exporter.signal(libc::SIGTERM);
    let stderr = exporter.stderr();
    assert_eq!(stderr.matches("recording paused").count(), 1, "{stderr}");
    let back = gpuwatch::record::read(&rec).unwrap();
    assert!(
        back.samples.len() > before,
        "{} samples",
        back.samples.len()
    );
    // At most the one torn line the full disk cut short is skipped.
    assert!(back.skipped.len() <= 1, "{:?}", back.skipped);
}

/// Item 6: a history window of more than a million samples per GPU is an error before
/// anything is allocated (it used to allocate 57.6 GB and abort).
#[test]
fn a_huge_history_window_is_an_error_not_an_abort() {
    let out = common::clean_command()
        .args([
            "--demo",
            "--once",
            "--history",
            "100000h",
            "--interval",
            "100ms",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "gpuwatch: --history: is 3600000000 samples per GPU at this interval; at most 1000000 \
         (1day 3h 46m 40s at this interval) (got \"100000h\")\n"
    );
}

/// A `sleep` with real uid nobody and effective and saved uid root, as a setuid-root
/// program started by nobody runs (made with setresuid before exec; needs root).
fn setuid_style_sleeper() -> Reaped {
    let mut cmd = StdCommand::new("sleep");
    cmd.arg("300");
    // SAFETY: setresuid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setresuid(NOBODY, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Reaped(cmd.spawn().expect("spawn the setuid-style sleep"))
}

/// Item 2: a process whose real uid is nobody but whose effective uid is root is shown as
/// root's (the real user beside it) and is never signalled, even by a request that names
/// it as nobody's (what the real-uid check used to let through).
#[test]
fn a_setuid_root_process_is_roots_and_never_signalled() {
    use gpuwatch::signals::{Signaller, SystemSignaller};
    use gpuwatch::state::signal::{Sig, SignalRequest};
    if !is_root() {
        common::skip("needs root to make a setuid-style process");
        return;
    }
    common::fake_lib();
    let mut sleeper = setuid_style_sleeper();
    let pid = sleeper.pid();
    let mut s = fixture();
    s["gpus"][0]["processes"] =
        json!([{"pid": pid, "kind": "compute", "used_memory": 1_073_741_824u64}]);
    let dir = tempfile::tempdir().unwrap();
    let out = gpuwatch_on(dir.path(), &s)
        .args(["--once", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let row = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == json!(pid))
        .expect("the sleeper's row");
    assert_eq!(
        (&row["user"], &row["uid"]),
        (&json!("root (real nobody)"), &json!(0))
    );

    let started = gpuwatch::procinfo::ProcInfo::system()
        .identity(pid)
        .unwrap()
        .started;
    for uid in [NOBODY, 0] {
        let request = SignalRequest {
            signal: Sig::Term,
            pid,
            started,
            uid,
            user: "nobody".into(),
            gpu_index: 0,
            vram: None,
            command: "sleep 300".into(),
        };
        let outcome = SystemSignaller::default().send(&request);
        assert!(
            outcome.contains("no SIGTERM sent") || outcome.contains("never signals root"),
            "{outcome}"
        );
    }
    assert!(sleeper.0.try_wait().unwrap().is_none(), "still running");
}

/// Round 3, item 16: a newline in a version string (a remote's, a Prometheus series', a
/// recording's) is escaped in `--once` text, never a forged header line.
#[test]
fn once_text_escapes_newlines_in_version_strings() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.ndjson");
    common::clean_command()
        .args(["--demo", "--once", "--record"])
        .arg(&rec)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let text = std::fs::read_to_string(&rec).unwrap();
    let forged = text
        .replace(
            "\"driver_version\":\"550.54.15\"",
            "\"driver_version\":\"550\\nFORGED driver line\"",
        )
        .replace(
            "\"cuda_version\":\"12.4\"",
            "\"cuda_version\":\"12.4\\rFORGED cuda line\"",
        );
    assert_ne!(forged, text, "the recording names the demo's versions");
    std::fs::write(&rec, forged).unwrap();
    let out = common::clean_command()
        .arg("replay")
        .arg(&rec)
        .arg("--once")
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let header = out.lines().next().unwrap();
    assert!(
        header.contains("driver 550\\nFORGED driver line")
            && header.contains("CUDA 12.4\\rFORGED cuda line"),
        "{header}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("FORGED")) && !out.contains('\r'),
        "{out}"
    );
}

/// Round 3, item 13: 30 GPU processes each carrying 1.2 MB of `CUDA_*` variables made a
/// 37 MB snapshot, past what `--remote` watchers take (32 MiB), so the host showed as lost.
/// Each process's kept environment is now capped (4 KiB a value, 16 KiB in all, the
/// variables gpuwatch reads first): the document stays small and the pinning still reads.
#[test]
fn huge_cuda_variables_keep_the_snapshot_small_and_the_pinning_read() {
    let junk = "x".repeat(30_000);
    let procs: Vec<Reaped> = (0..30)
        .map(|_| {
            let mut sleep = StdCommand::new("sleep");
            sleep.arg("60").env_clear();
            for i in 0..40 {
                sleep.env(format!("CUDA_JUNK_{i:02}"), &junk);
            }
            sleep.env("CUDA_VISIBLE_DEVICES", "1");
            Reaped(sleep.spawn().expect("sleep"))
        })
        .collect();
    let mut s = fixture();
    s["gpus"][0]["processes"] = procs
        .iter()
        .map(|p| json!({"pid": p.pid(), "kind": "compute", "used_memory": 1u64 << 30}))
        .collect();
    s["gpus"][1]["processes"] = json!([]);
    let dir = tempfile::tempdir().unwrap();
    let out = gpuwatch_on(dir.path(), &s)
        .args(["--once", "--json"])
        .timeout(Duration::from_secs(30))
        .assert()
        .success();
    let stdout = &out.get_output().stdout;
    eprintln!("snapshot of 30 processes: {} KiB", stdout.len() >> 10);
    assert!(stdout.len() < 1 << 20, "{} bytes", stdout.len());
    let doc: Value = serde_json::from_slice(stdout).unwrap();
    let rows = doc["processes"].as_array().unwrap();
    assert_eq!(rows.len(), 30);
    for row in rows {
        let env = row["environment"].as_object().unwrap();
        assert_eq!(
            env["CUDA_VISIBLE_DEVICES"], "1",
            "the used variable is kept"
        );
        let total: usize = env
            .iter()
            .map(|(k, v)| k.len() + v.as_str().unwrap().len())
            .sum();
        assert!(total <= 16 << 10, "{total} bytes of environment kept");
        let cut = env["CUDA_JUNK_00"].as_str().unwrap();
        assert!(cut.len() <= 4 << 10 && cut.ends_with('…'), "{}", cut.len());
    }
}
