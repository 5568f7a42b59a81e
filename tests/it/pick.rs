//! `gpuwatch pick` through the binary (issue 10, "`pick` follows the rules too"): the choice
//! on the demo fleet and on the fake NVML library, an inherited `CUDA_VISIBLE_DEVICES`
//! (indices, UUIDs, bad values), GPUs other users hold, the explanations on stderr, and
//! `--wait` (giving up, succeeding once a GPU frees up, ended by a signal). Owns these tests
//! only; the rules themselves are unit-tested in `src/pick/`.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{Value, json};

/// The demo fleet (seed 42) at its first sample: GPUs 0-3 run other users' jobs, 4 and 7
/// hold dave's notebooks, 5 has 12.9 GiB held by no process, 6 is free. With 16 GPUs the
/// pattern repeats: 14 is free too.
fn demo(args: &[&str]) -> Command {
    let mut cmd = common::clean_command();
    cmd.args(["--demo", "pick"]).args(args);
    cmd
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

const UUID_6: &str = "GPU-5e0c0006-1a2b-4c3d-8e9f-0000002a0006";

#[test]
fn pick_on_the_demo_fleet_takes_only_gpus_nobody_else_holds() {
    assert_eq!(stdout_of(&mut demo(&[])), "6\n");
    assert_eq!(
        stdout_of(&mut demo(&["-n", "2", "--demo-gpus", "16"])),
        "6,14\n"
    );
    assert_eq!(
        stdout_of(&mut demo(&["--format", "env"])),
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=6\n"
    );
    assert_eq!(
        stdout_of(&mut demo(&["--format", "uuids"])),
        format!("{UUID_6}\n")
    );
    // Success is quiet on stderr unless asked.
    demo(&[]).assert().success().stderr("");
    demo(&["-v"])
        .assert()
        .success()
        .stdout("6\n")
        .stderr(predicate::str::contains(
            "gpuwatch pick: GPU 4 skipped: held by dave (30.2 GiB)\n",
        ));
}

#[test]
fn too_few_gpus_say_why_each_other_one_was_skipped() {
    demo(&["-n", "2"]).assert().code(1).stdout("").stderr(
        "gpuwatch pick: need 2 GPUs with ≤10% util, no warning and nobody else's memory; \
             1 qualifies (6)\n\
             gpuwatch pick: GPU 0 skipped: held by alice (64.0 GiB), erin (2.5 GiB), frank (1.0 GiB)\n\
             gpuwatch pick: GPU 1 skipped: held by alice (64.3 GiB)\n\
             gpuwatch pick: GPU 2 skipped: held by bob (40.0 GiB)\n\
             gpuwatch pick: GPU 3 skipped: held by carol (52.3 GiB)\n\
             gpuwatch pick: GPU 4 skipped: held by dave (30.2 GiB)\n\
             gpuwatch pick: GPU 5 skipped: 12.9 GiB held by no process\n\
             gpuwatch pick: GPU 7 skipped: held by dave (1.1 GiB)\n",
    );
    demo(&["--min-free", "90GiB"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "GPU 6 skipped: 79.1 GiB free, 90.0 GiB needed",
        ));
    demo(&["--min-free", "lots"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --min-free: \"lots\" is not a size like 20GiB or 512MiB\n");
}

#[test]
fn an_inherited_cuda_visible_devices_restricts_the_choice() {
    let sixteen = |cvd: &str, args: &[&str]| {
        let mut cmd = demo(&["--demo-gpus", "16"]);
        cmd.env("CUDA_VISIBLE_DEVICES", cvd).args(args);
        cmd
    };
    // Indices, in any order; the output is this host's numbering, not positions in the list.
    assert_eq!(stdout_of(&mut sixteen("14,2", &[])), "14\n");
    assert_eq!(stdout_of(&mut sixteen("14,6", &["-n", "2"])), "6,14\n");
    sixteen("14", &["-v"])
        .assert()
        .success()
        .stdout("14\n")
        .stderr(predicate::str::contains(
            "gpuwatch pick: GPU 6 skipped: not in CUDA_VISIBLE_DEVICES\n",
        ));
    // UUIDs, whole or a unique prefix (as CUDA takes them).
    assert_eq!(stdout_of(&mut sixteen("GPU-5e0c000e", &[])), "14\n");
    assert_eq!(
        stdout_of(&mut sixteen(UUID_6, &["--format", "uuids"])),
        format!("{UUID_6}\n")
    );
    // Only held GPUs in the allocation: nothing to pick, and each one says why.
    sixteen("0,4", &[])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("0 qualify (none)"))
        .stderr(predicate::str::contains(
            "GPU 4 skipped: held by dave (30.2 GiB)",
        ));
    // The list is checked against every GPU, not only those --only shows.
    let mut only = demo(&["--only", "0,7"]);
    only.env("CUDA_VISIBLE_DEVICES", "6")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "GPU 7 skipped: not in CUDA_VISIBLE_DEVICES",
        ));
}

#[test]
fn a_bad_cuda_visible_devices_exits_2_naming_the_entry() {
    for (value, why) in [
        ("9", "9 matches no GPU (this host has 0-7)"),
        (
            "2,x",
            "\"x\" is neither a GPU index nor a GPU UUID like GPU-8932f937",
        ),
        ("GPU-ffff", "GPU-ffff matches no GPU (this host has 0-7)"),
        ("GPU-5e0c", "GPU-5e0c names 8 GPUs; give more of the UUID"),
        (
            "",
            "hides every GPU from this job: there is nothing to pick from",
        ),
        (
            "MIG-1/2/0",
            "\"MIG-1/2/0\" is not a MIG instance UUID like MIG-4b6f1c2d (see nvidia-smi -L)",
        ),
        ("MIG-ffff", "MIG-ffff matches no GPU (this host has 0-7)"),
    ] {
        demo(&[])
            .env("CUDA_VISIBLE_DEVICES", value)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!(
                "gpuwatch: CUDA_VISIBLE_DEVICES: {why} (got {value:?})\n"
            ));
    }
}

#[test]
fn timeout_needs_wait() {
    demo(&["--timeout", "1s"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --timeout: only means something with --wait (got \"1s\")\n");
    demo(&["--wait", "--timeout", "soon"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "gpuwatch: --timeout: not a duration",
        ));
}

#[test]
fn wait_with_a_timeout_gives_up_with_the_reasons() {
    let start = Instant::now();
    let out = demo(&[
        "-n",
        "2",
        "--wait",
        "--timeout",
        "1s",
        "--interval",
        "100ms",
    ])
    .timeout(Duration::from_secs(60))
    .assert()
    .code(1)
    .stdout("");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(900), "gave up after {took:?}");
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    // One status line while nothing changed (about ten samples), then the verdict.
    assert_eq!(
        lines[0],
        "gpuwatch pick: waiting: need 2 GPUs with ≤10% util, no warning and nobody else's \
         memory; 1 qualifies (6); skipped: 0 held by alice, erin, frank; 1 held by alice; \
         2 held by bob; 3 held by carol; 4,7 held by dave; 5 VRAM held by no process"
    );
    assert!(
        lines[1].starts_with("gpuwatch pick: gave up after 1s: need 2 GPUs"),
        "{stderr}"
    );
    assert_eq!(lines.len(), 2 + 7, "{stderr}");
}

/// The fake NVML's two GPUs (an H100 at 37 % and an idle T4) with the given scenario edits.
struct Fake {
    dir: tempfile::TempDir,
}

const FOREIGN_PID: u32 = 3_999_999;
const T4: &str = "GPU-5b6a1f2e-3d4c-4b3e-9a5c-0e8f6c1a7d55";
const GIB: u64 = 1 << 30;

impl Fake {
    fn new(edit: impl FnOnce(&mut Value)) -> Self {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/nvml/two_gpus.json"
        );
        let mut scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        edit(&mut scenario);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("scenario.json"), scenario.to_string()).unwrap();
        Fake { dir }
    }

    fn pick(&self, args: &[&str]) -> Command {
        let mut cmd = common::clean_command();
        cmd.env(
            "GPUWATCH_FAKE_NVML_SCENARIO",
            self.dir.path().join("scenario.json"),
        )
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .arg("pick")
        .args(args);
        cmd
    }
}

#[test]
fn indices_on_a_host_with_mixed_models_need_the_pci_order() {
    let fake = Fake::new(|_| {});
    fake.pick(&[])
        .env("CUDA_VISIBLE_DEVICES", "1")
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: CUDA_VISIBLE_DEVICES: indices count fastest-first unless \
             CUDA_DEVICE_ORDER=PCI_BUS_ID, and this host mixes models (NVIDIA H100 80GB HBM3, \
             Tesla T4), so they may not be the GPUs gpuwatch numbers so: set \
             CUDA_DEVICE_ORDER=PCI_BUS_ID or list UUIDs (got \"1\")\n",
        );
    let pinned = fake
        .pick(&[])
        .env("CUDA_VISIBLE_DEVICES", "1")
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .assert()
        .success();
    assert_eq!(pinned.get_output().stdout, b"1\n");
    fake.pick(&["--format", "uuids"])
        .env("CUDA_VISIBLE_DEVICES", T4)
        .assert()
        .success()
        .stdout(format!("{T4}\n"));
}

#[test]
fn own_processes_do_not_disqualify_but_rank_after_clean_gpus() {
    let mut job = StdCommand::new("sleep").arg("30").spawn().unwrap();
    let pid = job.id();
    let fake = Fake::new(|s| {
        // The H100 idle, holding 4 GiB for our own `sleep`.
        s["gpus"][0]["fields"]["util_gpu"] = json!(0);
        s["gpus"][0]["fields"]["memory_used"] = json!(4 * GIB);
        s["gpus"][0]["processes"] = json!([{"pid": pid, "used_memory": 4 * GIB}]);
    });
    let two = fake.pick(&["-n", "2"]).assert().success();
    assert_eq!(two.get_output().stdout, b"1,0\n", "the clean T4 first");
    let _ = job.kill();
    let _ = job.wait();
    // A process whose user cannot be told is someone else's.
    let fake = Fake::new(|s| {
        s["gpus"][1]["fields"]["memory_used"] = json!(2 * GIB);
        s["gpus"][1]["processes"] = json!([{"pid": FOREIGN_PID, "used_memory": 2 * GIB}]);
    });
    fake.pick(&[])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "GPU 1 skipped: held by pid {FOREIGN_PID} of an unknown user (2.0 GiB)"
        )));
}

#[test]
fn wait_succeeds_once_the_other_job_exits() {
    // Someone else's job holds the T4 for three samples, then exits and frees its memory.
    let fake = Fake::new(|s| {
        let gib3 = 3 * GIB;
        s["gpus"][1]["fields"]["memory_used"] = json!([gib3, gib3, gib3, 0]);
        s["gpus"][1]["processes"] =
            json!([{"pid": FOREIGN_PID, "used_memory": gib3, "until_tick": 3}]);
    });
    let out = fake
        .pick(&["--wait", "--timeout", "60s", "--interval", "100ms"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .stdout("1\n");
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    // One status line for three samples with the same reasons.
    assert_eq!(
        stderr,
        format!(
            "gpuwatch pick: waiting: need 1 GPU with ≤10% util, no warning and nobody else's \
             memory; 0 qualify (none); skipped: 0 VRAM held by no process; 1 held by pid {FOREIGN_PID}\n"
        )
    );
}

#[test]
fn a_signal_while_waiting_exits_quietly_with_128_plus_its_number() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .env_clear()
            .env("HOME", common::EMPTY_HOME)
            // A timeout of its own, so a broken signal path ends the test instead of hanging it.
            .args(["--demo", "pick", "-n", "2", "--wait", "--timeout", "60s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The status line comes after the handlers are installed: no guessing how long to wait.
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        assert!(line.starts_with("gpuwatch pick: waiting: "), "{line}");
        // SAFETY: kill(2) on our own child's PID, which has not been waited for yet.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code));
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        assert_eq!(rest, "", "nothing more after the signal");
    }
}
