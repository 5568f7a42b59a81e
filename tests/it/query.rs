//! `gpuwatch query` (nvidia-smi's query interface) through the binary, as scripts call it:
//! `--query-gpu` and `--query-compute-apps` on the fake NVML (values compared with what the
//! scenario holds, converted as nvidia-smi converts them), the demo, the AMD fixture, `-L`,
//! `-i`, `--format` options, `-f`, the `-l`/`-lms` loops, and the errors (exit 2).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);
const H100: &str = "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a";
const T4: &str = "GPU-5b6a1f2e-3d4c-4b3e-9a5c-0e8f6c1a7d55";
const MIB: u64 = 1 << 20;
/// Far above any pid_max: never a process in this PID namespace.
const FOREIGN_PID: u32 = 3_999_999;

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// A scenario written to a temporary directory, and the binary pointed at it.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(scenario: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("scenario.json"), scenario.to_string()).unwrap();
        Fake { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("scenario.json")
    }

    /// `gpuwatch ARGS` on the fake NVML (nvidia-smi's flags at top level, as scripts call it).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = common::clean_command();
        cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", self.path())
            .arg("--nvml-lib")
            .arg(common::fake_lib())
            .args(args);
        output(cmd)
    }
}

fn output(mut cmd: assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn demo(args: &[&str]) -> (i32, String, String) {
    let mut cmd = common::clean_command();
    cmd.arg("--demo").args(args);
    output(cmd)
}

/// The scenario's number `name` of GPU `i`.
fn held(s: &Value, i: usize, name: &str) -> u64 {
    s["gpus"][i]["fields"][name].as_u64().unwrap()
}

#[test]
fn the_done_when_query_prints_what_the_fake_nvml_holds_in_nvidia_smis_shape() {
    let s = fixture();
    let fake = Fake::new(&s);
    let (code, out, err) = fake.run(&[
        "--query-gpu=index,memory.used,memory.total,utilization.gpu",
        "--format=csv,noheader,nounits",
    ]);
    assert_eq!(code, 0, "{err}");
    let expected: String = (0..2)
        .map(|i| {
            format!(
                "{i}, {}, {}, {}\n",
                held(&s, i, "memory_used") / MIB,
                held(&s, i, "memory_total") / MIB,
                held(&s, i, "util_gpu"),
            )
        })
        .collect();
    assert_eq!(out, expected);
    assert_eq!(out, "0, 10240, 81920, 37\n1, 0, 15360, 0\n");
}

/// Every field but the time, with the header and units, on both GPUs: the T4 answers
/// NOT_SUPPORTED or nothing for many, which must be `[N/A]`, never 0.
#[test]
fn every_gpu_field_has_nvidia_smis_header_unit_and_value() {
    let fields = "index,name,uuid,pci.bus_id,driver_version,count,pstate,temperature.gpu,\
        temperature.memory,utilization.gpu,utilization.memory,utilization.encoder,\
        utilization.decoder,memory.total,memory.reserved,memory.used,memory.free,power.draw,\
        power.limit,enforced.power.limit,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,\
        fan.speed,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,\
        pcie.link.width.max,ecc.errors.corrected.volatile.total,\
        ecc.errors.uncorrected.volatile.total,mig.mode.current";
    let (code, out, err) =
        Fake::new(&fixture()).run(&[&format!("--query-gpu={fields}"), "--format=csv"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "index, name, uuid, pci.bus_id, driver_version, count, pstate, temperature.gpu, \
         temperature.memory, utilization.gpu [%], utilization.memory [%], \
         utilization.encoder [%], utilization.decoder [%], memory.total [MiB], \
         memory.reserved [MiB], memory.used [MiB], memory.free [MiB], power.draw [W], \
         power.limit [W], enforced.power.limit [W], clocks.current.sm [MHz], clocks.current.memory [MHz], \
         clocks.max.sm [MHz], clocks.max.memory [MHz], fan.speed [%], pcie.link.gen.current, \
         pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, \
         ecc.errors.corrected.volatile.total, ecc.errors.uncorrected.volatile.total, \
         mig.mode.current"
    );
    assert_eq!(
        lines[1],
        format!(
            "0, NVIDIA H100 80GB HBM3, {H100}, 00000000:17:00.0, 550.54.15, 2, P0, 61, [N/A], \
             37 %, 12 %, 0 %, 5 %, 81920 MiB, 512 MiB, 10240 MiB, 71168 MiB, 312.50 W, \
             700.00 W, 700.00 W, 1755 MHz, 2619 MHz, 1980 MHz, 2619 MHz, 45 %, 5, 5, 16, 16, \
             12, 0, Disabled"
        )
    );
    assert_eq!(
        lines[2],
        format!(
            "1, Tesla T4, {T4}, 00000000:3B:00.0, 550.54.15, 2, P8, 34, [N/A], 0 %, 0 %, \
             [N/A], [N/A], 15360 MiB, 0 MiB, 0 MiB, 15360 MiB, 9.00 W, 70.00 W, 70.00 W, \
             300 MHz, 405 MHz, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], \
             [N/A]"
        )
    );
    assert_eq!(lines.len(), 3);
}

/// Issue 24: the graphics clock and its maximum, added through the field table (issue 21
/// §1), under nvidia-smi's names and aliases; the T4's fake does not answer them: `[N/A]`.
/// The header is nvidia-smi's: it names a clock by its long name whichever was asked
/// (`nvidia-smi --query-gpu=clocks.max.gr` prints `clocks.max.graphics [MHz]`).
#[test]
fn graphics_clocks_are_nvidia_smis_clocks_gr_and_clocks_max_gr() {
    let (code, out, err) = Fake::new(&fixture()).run(&[
        "--query-gpu=index,clocks.gr,clocks.max.gr,clocks.current.graphics,clocks.max.graphics",
        "--format=csv",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "index, clocks.current.graphics [MHz], clocks.max.graphics [MHz], clocks.current.graphics [MHz], clocks.max.graphics [MHz]\n\
         0, 1740 MHz, 1985 MHz, 1740 MHz, 1985 MHz\n\
         1, [N/A], [N/A], [N/A], [N/A]\n"
    );
}

#[test]
fn aliases_answer_under_nvidia_smis_own_name_and_timestamp_is_its_shape() {
    let (code, out, err) = Fake::new(&fixture()).run(&[
        "query",
        "--query-gpu=gpu_name,gpu_bus_id,gpu_uuid,clocks.current.sm,clocks.max.memory,timestamp",
        "--format=csv",
        "-i",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "name, pci.bus_id, uuid, clocks.current.sm [MHz], clocks.max.memory [MHz], timestamp"
    );
    let (head, time) = lines[1].rsplit_once(", ").unwrap();
    assert_eq!(
        head,
        format!("Tesla T4, 00000000:3B:00.0, {T4}, 300 MHz, [N/A]")
    );
    // 2026/12/02 07:10:00.123
    let shape: String = time
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999/99/99 99:99:99.999", "{time}");
    assert_eq!(lines.len(), 2, "-i 1 selects one GPU");
}

#[test]
fn compute_apps_lists_the_fakes_processes_with_pid_name_and_mib() {
    let mut sleeper = StdCommand::new("sleep").arg("30").spawn().unwrap();
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        {"pid": sleeper.id(), "used_memory": 6_569_328_640u64},
        {"pid": FOREIGN_PID, "used_memory": 4_294_967_296u64},
        {"pid": FOREIGN_PID - 1, "used_memory": MIB, "kind": "graphics"},
    ]);
    s["gpus"][1]["processes"] = json!([{"pid": FOREIGN_PID - 2}]);
    let fake = Fake::new(&s);
    let (code, out, err) = fake.run(&[
        "--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id,gpu_name",
        "--format=csv",
    ]);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.remove(0),
        "pid, process_name, used_gpu_memory [MiB], gpu_uuid, gpu_bus_id, gpu_name"
    );
    lines.sort_unstable();
    let mut expected = vec![
        format!(
            "{}, sleep, 6265 MiB, {H100}, 00000000:17:00.0, NVIDIA H100 80GB HBM3",
            sleeper.id()
        ),
        format!("{FOREIGN_PID}, [N/A], 4096 MiB, {H100}, 00000000:17:00.0, NVIDIA H100 80GB HBM3"),
        format!(
            "{}, [N/A], [N/A], {T4}, 00000000:3B:00.0, Tesla T4",
            FOREIGN_PID - 2
        ),
    ];
    expected.sort_unstable();
    assert_eq!(
        lines, expected,
        "graphics-only processes are not compute apps"
    );
}

/// A process name with a comma (Chrome's `--type=gpu-process,…`): nvidia-smi's plain CSV
/// writes it as it is; `quoted` keeps it one cell for an RFC 4180 reader.
#[test]
fn quoted_keeps_a_process_name_with_a_comma_in_one_cell() {
    let mut child = StdCommand::new("bash")
        .args(["-c", "exec -a 'chrome,--type=gpu-process' sleep 30"])
        .spawn()
        .unwrap();
    // `exec -a` replaces the command line once bash has run; wait until it has.
    let cmdline = PathBuf::from(format!("/proc/{}/cmdline", child.id()));
    for _ in 0..200 {
        if std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"chrome")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([{"pid": child.id(), "used_memory": MIB}]);
    let fake = Fake::new(&s);
    let query = "--query-compute-apps=pid,process_name,used_memory";
    let (_, plain, _) = fake.run(&[query, "--format=csv,noheader"]);
    let (code, quoted, err) = fake.run(&[query, "--format=csv,quoted"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(code, 0, "{err}");
    let pid = child.id();
    assert_eq!(plain, format!("{pid}, chrome,--type=gpu-process, 1 MiB\n"));
    assert_eq!(
        quoted,
        format!(
            "pid,process_name,used_gpu_memory [MiB]\n{pid},\"chrome,--type=gpu-process\",1 MiB\n"
        )
    );
}

#[test]
fn list_gpus_is_nvidia_smi_l() {
    let (code, out, err) = Fake::new(&fixture()).run(&["-L"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("GPU 0: NVIDIA H100 80GB HBM3 (UUID: {H100})\nGPU 1: Tesla T4 (UUID: {T4})\n")
    );
}

#[test]
fn list_gpus_shows_mig_devices_under_their_gpu() {
    let (code, out, err) = demo(&["--demo-scenario", "mixed", "query", "--list-gpus"]);
    assert_eq!(code, 0, "{err}");
    let mig: Vec<&str> = out.lines().filter(|l| l.starts_with("  MIG")).collect();
    assert!(!mig.is_empty(), "{out}");
    let first = mig[0];
    assert!(
        first.starts_with("  MIG 3g.40gb     Device  0: (UUID: MIG-"),
        "{first}"
    );
}

#[test]
fn id_takes_index_uuid_and_bus_id_and_refuses_one_that_matches_nothing() {
    let fake = Fake::new(&fixture());
    let q = "--query-gpu=index";
    for id in ["1", T4, "0000:3b:00.0", "3B:00.0", "00000000:3B:00.0"] {
        let (code, out, err) = fake.run(&[q, "--format=csv,noheader", "-i", id]);
        assert_eq!((code, out.as_str()), (0, "1\n"), "-i {id}: {err}");
    }
    let (code, out, _) = fake.run(&[q, "--format=csv,noheader", "--id=0,1"]);
    assert_eq!((code, out.as_str()), (0, "0\n1\n"));
    let (code, out, err) = fake.run(&[q, "-i", "7"]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err, "gpuwatch: --id: 7 matches no GPU\n");
}

#[test]
fn an_unknown_field_exits_2_listing_the_supported_ones() {
    let (code, out, err) = demo(&["--query-gpu=index,memory.usd", "--format=csv"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "gpuwatch: --query-gpu: Field \"memory.usd\" is not a valid field to query (supported: "
        ),
        "{err}"
    );
    assert!(
        err.contains("memory.used,") && err.contains("gpuwatch.free"),
        "{err}"
    );
    let (code, _, err) = demo(&["--query-compute-apps=pid,cmd"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Field \"cmd\"") && err.contains("used_gpu_memory"),
        "{err}"
    );
    for (args, says) in [
        (&["--query-gpu=index", "--format=xml"][..], "--format"),
        (
            &["--query-gpu=index", "--format=csv,nohead"][..],
            "--format",
        ),
        (&["--query-gpu=index", "-lms", "10"][..], "--loop-ms"),
        (&["--query-gpu=index", "-L"][..], "only one of"),
        (&["query"][..], "say what to print"),
    ] {
        let (code, _, err) = demo(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_demo_fleet_answers_the_same_query() {
    let (code, out, err) = demo(&[
        "--query-gpu=index,uuid,memory.used,gpuwatch.free,gpuwatch.owners",
        "--format=csv,noheader,nounits",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split(", ").collect()).collect();
    assert_eq!(rows.len(), 8);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], i.to_string());
        assert!(row[1].starts_with("GPU-"));
        assert!(row[2].parse::<u64>().is_ok(), "{row:?}");
        assert!(["yes", "no"].contains(&row[3]), "{row:?}");
        // A free GPU has no owners (a GPU with none may still not be free: stale VRAM).
        assert!(row[3] == "no" || row[4].is_empty(), "{row:?}");
    }
    assert!(rows.iter().any(|r| r[3] == "yes") && rows.iter().any(|r| r[3] == "no"));
}

#[test]
fn filename_writes_the_output_there() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.csv");
    let (code, out, err) = demo(&[
        "--query-gpu=index",
        "--format=csv",
        "-f",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text, "index\n0\n1\n2\n3\n4\n5\n6\n7\n");
}

/// `-lms 200`: a block per sample, the header once, as nvidia-smi's loop prints it; read as
/// a script would (line by line from a pipe), then stopped with SIGTERM (exit 143).
#[test]
fn the_loop_prints_a_block_per_sample_with_one_header() {
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .env_clear()
        .env("HOME", common::EMPTY_HOME)
        .args(["--demo", "--demo-gpus", "2", "--query-gpu=index,timestamp"])
        .args(["--format=csv", "-lms", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    let start = std::time::Instant::now();
    while got.len() < 7 {
        got.push(lines.next().unwrap().unwrap());
    }
    let took = start.elapsed();
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert_eq!(got[0], "index, timestamp");
    let indices: Vec<&str> = got[1..].iter().map(|l| &l[..1]).collect();
    assert_eq!(indices, ["0", "1", "0", "1", "0", "1"]);
    let times: Vec<&str> = got[1..].iter().map(|l| &l[3..]).collect();
    assert_eq!(times[0], times[1], "one block is one sample");
    assert!(times[1] != times[2] && times[3] != times[4], "{times:?}");
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
}

/// Issue 24: `-l` ended by Ctrl+C (SIGINT) as nvidia-smi's man page says ("Pressing Ctrl+C at
/// any time will abort the loop"): the output read to its end holds whole blocks only (every
/// line ended, every GPU in each block), and the exit status says which signal (130).
#[test]
fn a_loop_stopped_by_sigint_leaves_whole_blocks_and_exits_130() {
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .env_clear()
        .env("HOME", common::EMPTY_HOME)
        .args([
            "--demo",
            "--demo-gpus",
            "3",
            "--query-gpu=index,uuid,memory.used",
        ])
        .args(["--format=csv,noheader", "-lms", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    // Interrupted while blocks are being written: after the first line of the first one.
    reader.read_line(&mut first).unwrap();
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "128 + SIGINT");
    let all = first + &rest;
    assert!(all.ends_with('\n'), "no partial line: {all:?}");
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len() % 3, 0, "whole blocks of 3 GPUs: {all}");
    for block in lines.chunks(3) {
        let idx: Vec<&str> = block
            .iter()
            .map(|l| l.split(", ").next().unwrap())
            .collect();
        assert_eq!(idx, ["0", "1", "2"], "{all}");
        assert!(block.iter().all(|l| l.split(", ").count() == 3), "{all}");
    }
}

/// The AMD fixture through the DRM source: the same field names, VRAM in MiB.
/// Issue 24: `clocks.gr` answers on every source that has a shader clock. The demo's H100s
/// and the DRM GPUs (AMD's SCLK, Intel's GT frequency) run their shaders on the clock
/// gpuwatch also shows as the SM clock, so the two fields read the same; never `[N/A]`.
#[test]
fn the_graphics_clock_answers_on_the_demo_and_the_amd_fixture() {
    let query = [
        "--query-gpu=clocks.gr,clocks.sm,clocks.max.gr,clocks.max.sm",
        "--format=csv,noheader,nounits",
    ];
    let (code, demo_out, err) = demo(&query);
    assert_eq!(code, 0, "{err}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/drm/amd-mi300x");
    let mut cmd = common::clean_command();
    cmd.args(["--source", "amd", "--sysfs-root"])
        .arg(root.join("sys"))
        .arg("--proc-root")
        .arg(root.join("proc"))
        .args(query);
    let (code, amd_out, err) = output(cmd);
    assert_eq!(code, 0, "{err}");
    assert_eq!(amd_out, "1300, 1300, 2100, 2100\n");
    assert_eq!(demo_out.lines().count(), 8, "{demo_out}");
    for row in demo_out.lines().chain(amd_out.lines()) {
        let cells: Vec<u32> = row.split(", ").map(|c| c.parse().expect(row)).collect();
        assert_eq!((cells[0], cells[2]), (cells[1], cells[3]), "{row}");
    }
}

#[test]
fn the_amd_fixture_answers_with_the_same_field_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/drm/amd-mi300x");
    let mut cmd = common::clean_command();
    cmd.args(["--source", "amd", "--sysfs-root"])
        .arg(root.join("sys"));
    cmd.arg("--proc-root").arg(root.join("proc"));
    cmd.args([
        "--query-gpu=index,name,memory.used,memory.total,utilization.gpu,gpuwatch.vendor",
        "--format=csv",
    ]);
    let (code, out, err) = output(cmd);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "index, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], gpuwatch.vendor"
    );
    assert!(lines.len() >= 2, "{out}");
    assert!(lines[1].ends_with(", amd"), "{out}");
    assert!(lines[1].contains(" MiB, "), "{out}");
}

#[test]
fn docs_query_md_lists_every_field() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/query.md")).unwrap();
    let tables = gpuwatch::query::markdown_tables();
    assert!(
        doc.contains(&tables),
        "docs/query.md's field tables differ from the catalogue; paste:\n{tables}"
    );
}

/// Compute and persistence mode from their NVML calls; PCIe replays and corrected ECC from
/// `nvmlDeviceGetPcieReplayCounter` / `nvmlDeviceGetTotalEccErrors` on a driver whose field
/// values do not answer (they were `N/A` there, in the TUI and JSON too).
#[test]
fn modes_and_counters_come_from_their_own_nvml_calls() {
    let mut s = fixture();
    let h100 = &mut s["gpus"][0]["fields"];
    h100["compute_mode"] = json!(3);
    h100["persistence_mode"] = json!(1);
    h100["pcie_replay_counter"] = json!(7);
    h100["field_values"] = json!(0);
    s["gpus"][1]["fields"]["compute_mode"] = json!(0);
    s["gpus"][1]["fields"]["persistence_mode"] = json!(0);
    let fake = Fake::new(&s);
    let (code, out, err) = fake.run(&[
        "--query-gpu=compute_mode,persistence_mode,ecc.errors.corrected.volatile.total",
        "--format=csv,noheader",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "Exclusive_Process, Enabled, 12\nDefault, Disabled, [N/A]\n"
    );
    let (code, out, err) = fake.run(&["--once", "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["gpus"][0]["pcie_replay_counter"], json!(7));
    assert_eq!(doc["gpus"][0]["ecc_errors_corrected_volatile"], json!(12));
}

/// Serves `body` as the JSON snapshot to every request on `bind`:0; returns the port.
fn snapshot_server(bind: &str, body: String) -> u16 {
    use std::io::Write;
    let listener = std::net::TcpListener::bind(format!("{bind}:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while head.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Two `--remote` hosts (named 127.0.0.1 and localhost) and one that is down: a host column
/// leads (indices repeat across hosts), the answering hosts' rows are printed, the dead host
/// is named on stderr and the exit status is 1, as `--once` does.
#[test]
fn remote_hosts_get_a_host_column_and_a_dead_one_is_said() {
    let (_, snapshot, _) = demo(&["--demo-gpus", "2", "--once", "--json"]);
    let a = snapshot_server("127.0.0.1", snapshot.clone());
    let b = snapshot_server("127.0.0.1", snapshot);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let remote = format!("127.0.0.1:{a},localhost:{b},127.0.0.1:{dead_port}");
    let mut cmd = common::clean_command();
    cmd.args(["--remote", &remote, "--query-gpu=index,memory.total"]);
    cmd.args(["--format=csv,nounits"]);
    let (code, out, err) = output(cmd);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{dead_port}")) && err.contains("not answering"),
        "{err}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "gpuwatch.host, index, memory.total [MiB]");
    let hosts: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(", ").next().unwrap())
        .collect();
    assert!(
        hosts.contains(&"localhost") && hosts.iter().any(|h| h.starts_with("127.0.0.1")),
        "{out}"
    );
    let gpus = lines[1..].iter().filter(|l| !l.contains("[N/A]")).count();
    assert_eq!(gpus, 4, "two GPUs from each answering host: {out}");
}
