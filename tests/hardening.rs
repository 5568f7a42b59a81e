//! Hostile files, terminals, processes and drivers (issue 15), each through the path a user
//! takes: the real binary, real files and real processes. Owns these regression tests only;
//! the scenario format is `fake-nvml/src/scenario.rs`'s.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand};

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
