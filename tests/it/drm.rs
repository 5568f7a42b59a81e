//! AMD and Intel GPUs end to end through the binary: the captured sysfs and /proc trees in
//! tests/fixtures/drm (an MI300X-like Instinct card, a Radeon desktop card, an Arc card on
//! xe) read with `--source amd|intel|auto` and `--sysfs-root`/`--proc-root` (or their
//! GPUWATCH_* variables), as a user replaying a captured tree would. The source's own
//! corner cases (deltas, missing files, a card that goes away) are in src/source/drm/tests.rs.

use crate::common;
use crate::serve_support;

use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/drm/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `gpuwatch --once` with `args`, over the `name` fixture's roots given by environment: what
/// it prints, once it has succeeded.
fn once(name: &str, args: &[&str]) -> String {
    let root = fixture(name);
    let out = common::clean_command()
        .env("GPUWATCH_SYSFS_ROOT", format!("{root}/sys"))
        .env("GPUWATCH_PROC_ROOT", format!("{root}/proc"))
        .args(args)
        .arg("--once")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The same with `--json`: the document.
fn snapshot(name: &str, args: &[&str]) -> Value {
    serde_json::from_str(&once(name, &[args, &["--json"]].concat())).unwrap()
}

#[test]
fn an_mi300x_tree_reads_through_the_binary_with_its_processes_and_owners() {
    let doc = snapshot("amd-mi300x", &["--source", "amd"]);
    assert_eq!(doc["schema_minor"], gpuwatch::wire::SCHEMA_MINOR);
    let g = &doc["gpus"][0];
    assert_eq!(g["uuid"], "AMD-1cb6d8a2b3e4f501");
    assert_eq!(g["vendor"], "amd");
    assert_eq!(g["name"], "AMD Instinct MI300X");
    assert_eq!(g["utilization_gpu"], 87);
    assert_eq!(g["memory_total"], 206_158_430_208u64);
    assert_eq!(g["memory_used"], 154_618_822_656u64);
    assert_eq!(g["temperature_gpu"], 71);
    assert_eq!(g["power_draw"], 612.0);
    assert_eq!(g["clocks_sm"], 1300);
    assert_eq!(g["pcie_link_gen_current"], 5);
    for absent in ["fan_speed", "mig_enabled", "utilization_encoder", "pstate"] {
        assert!(
            g[absent].is_null(),
            "{absent} must be null, got {}",
            g[absent]
        );
    }
    // 144 GiB used, 136 GiB held by the two processes: 8 GiB nobody visible holds.
    assert_eq!(g["unattributed_memory"], 8u64 << 30);
    let procs = doc["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2);
    let train = &procs[0];
    assert_eq!(train["pid"], 4242);
    assert_eq!(
        (train["uid"].clone(), train["user"].clone()),
        (0.into(), "root".into())
    );
    assert_eq!(train["used_gpu_memory"], 96u64 << 30);
    // `--once` takes a second sample for CPU%, so engine use is a delta too: the fixture's
    // counters do not move between the two, which reads as idle.
    assert_eq!(train["utilization_sm"], 0, "a delta of a still tree");
    assert_eq!(train["workload"]["kind"], "slurm");
    assert_eq!(train["workload"]["hpc_job"], "12345");
    assert_eq!(procs[1]["workload"]["kind"], "container");
    assert_eq!(procs[1]["used_gpu_memory"], 40u64 << 30);
}

#[test]
fn a_radeon_desktop_tree_with_flags_instead_of_the_environment() {
    let root = fixture("amd-radeon");
    let out = common::clean_command()
        .args(["--source", "amd", "--once", "--json"])
        .args(["--sysfs-root", &format!("{root}/sys")])
        .args(["--proc-root", &format!("{root}/proc")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &doc["gpus"][0];
    assert_eq!(
        (g["name"].as_str(), g["fan_speed"].as_u64()),
        (Some("Radeon RX 7900 XTX"), Some(25))
    );
    let kinds: Vec<_> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().unwrap(),
                p["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(kinds, [(2600, "G".to_string()), (1500, "G".to_string())]);
}

#[test]
fn an_arc_tree_reads_as_intel_with_the_rest_null() {
    let doc = snapshot("intel-arc", &["--source", "intel"]);
    let g = &doc["gpus"][0];
    assert_eq!(g["vendor"], "intel");
    assert_eq!(g["uuid"], "INTEL-0000:03:00.0");
    assert_eq!(g["temperature_gpu"], 58);
    assert_eq!(g["enforced_power_limit"], 225.0);
    assert_eq!(g["total_energy_consumption"], 123_456.789);
    // Named from the tree's PCI ID database (issue 20). Busy % would be the clients' engine
    // time (src/source/drm/tests.rs), but the fixture's GPU clock stands still: unknown.
    assert_eq!(g["name"], "Arc A770");
    for absent in ["utilization_gpu", "memory_used", "memory_total"] {
        assert!(g[absent].is_null(), "{absent}: {}", g[absent]);
    }
    // Power is the energy counter's delta between `--once`'s two samples; the fixture's
    // counter stands still.
    assert_eq!(g["power_draw"], 0.0);
    let p = &doc["processes"][0];
    assert_eq!(
        (p["pid"].as_u64(), p["used_gpu_memory"].as_u64()),
        (Some(7001), Some(2 << 30))
    );
}

#[test]
fn auto_finds_the_amd_card_without_nvml_and_the_text_view_shows_it() {
    let nvml = ["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"];
    let text = once("amd-mi300x", &[&["--source", "auto"][..], &nvml].concat());
    assert!(text.contains("AMD Instinct MI300X"), "{text}");
    assert!(text.contains("python train.py --model llama-70b"), "{text}");
    assert!(!text.contains("H100"), "not the demo fleet: {text}");
}

/// Issue 20: the text view names the card as its users know it, with its vendor, and an
/// unknown pair of readings is one `N/A`, not `N/A/N/A`.
#[test]
fn the_text_view_names_an_arc_and_says_na_once() {
    let text = once("intel-arc", &["--source", "intel"]);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("0  "))
        .unwrap_or_else(|| panic!("no GPU line: {text}"));
    assert!(line.contains("Intel Arc A770"), "{line}");
    assert!(!line.contains("N/A/N/A"), "{line}");
    assert!(line.contains(" N/A "), "VRAM unknown: {line}");
}

#[test]
fn a_source_with_no_card_of_its_vendor_is_a_one_line_error() {
    let root = fixture("intel-arc");
    let out = common::clean_command()
        .env("GPUWATCH_SYSFS_ROOT", format!("{root}/sys"))
        .args(["--source", "amd", "--once"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no amdgpu GPU under") && err.contains("intel-arc/sys/class/drm"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn auto_shows_nvidia_and_amd_together_each_with_its_vendor() {
    let root = fixture("amd-mi300x");
    let scenario = format!(
        "{}/tests/fixtures/nvml/two_gpus.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = common::clean_command()
        .env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .env("GPUWATCH_SYSFS_ROOT", format!("{root}/sys"))
        .env("GPUWATCH_PROC_ROOT", format!("{root}/proc"))
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .args(["--source", "auto", "--once", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus: Vec<_> = doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["index"].as_u64().unwrap(),
                g["vendor"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // NVIDIA's keep NVML's (CUDA's) indices; the AMD card comes after them.
    assert_eq!(
        gpus,
        [
            (0, "nvidia".into()),
            (1, "nvidia".into()),
            (2, "amd".into())
        ]
    );
    assert_eq!(
        doc["host"]["driver_version"], "550.54.15",
        "NVML's host facts kept"
    );
    let amd_procs: Vec<_> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["gpu_index"] == 2)
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(amd_procs, [4242, 4300]);
    // `--only` picks the AMD card by its index or its id.
    let out = common::clean_command()
        .env("GPUWATCH_SYSFS_ROOT", format!("{root}/sys"))
        .env("GPUWATCH_PROC_ROOT", format!("{root}/proc"))
        .args(["--source", "amd", "--only", "AMD-1cb6", "--once"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("AMD Instinct MI300X"));
}

#[test]
fn the_exporter_serves_an_amd_card_with_its_owners_over_a_socket() {
    let root = fixture("amd-mi300x");
    let mut cmd = serve_support::gpuwatch();
    cmd.args(["--source", "amd"])
        .args(["--sysfs-root", &format!("{root}/sys")])
        .args(["--proc-root", &format!("{root}/proc")]);
    let exporter = serve_support::Exporter::start(cmd, &[]);
    exporter.wait_ready();
    let metrics = exporter.get("/metrics").body;
    let series = |name: &str, needle: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(needle))
            .unwrap_or_else(|| panic!("no {name} with {needle}:\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let card = "uuid=\"AMD-1cb6d8a2b3e4f501\"";
    assert_eq!(
        series("gpuwatch_gpu_memory_used_bytes", card),
        154_618_822_656.0
    );
    assert_eq!(series("gpuwatch_gpu_processes", card), 2.0);
    assert_eq!(
        series(
            "gpuwatch_user_gpu_memory_bytes",
            // A Unix user, not the job (issue 22): the job is in the workload series.
            "user=\"root\""
        ),
        (96u64 << 30) as f64
    );
    // What amdgpu cannot tell is left out, not exported as 0.
    assert!(
        !metrics.contains("gpuwatch_gpu_encoder_utilization_ratio{"),
        "{metrics}"
    );
}

#[test]
fn the_monitor_shows_an_amd_card_and_its_owners_in_a_real_terminal() {
    let Some(t) = common::tmux::Tmux::start("drm-tui", 120, 40) else {
        return;
    };
    let root = fixture("amd-mi300x");
    t.send(&[
        &format!(
            "{} --source amd --sysfs-root {root}/sys --proc-root {root}/proc",
            env!("CARGO_BIN_EXE_gpuwatch")
        ),
        "Enter",
    ]);
    let screen = t.wait_for("AMD Instinct MI300X", std::time::Duration::from_secs(15));
    let screen = if screen.contains("slurm 12345") {
        screen
    } else {
        t.wait_for("slurm 12345", std::time::Duration::from_secs(5))
    };
    assert!(
        screen.contains("144.0/192.0") || screen.contains("144/192"),
        "{screen}"
    );
    t.send(&["q"]);
}

/// The MI300X tree copied and made idle (0 % busy, 256 MiB used) with no processes, so
/// `pick` can take it.
fn idle_mi300x() -> tempfile::TempDir {
    let dir = copied_mi300x();
    let device = dir.path().join("sys/class/drm/card0/device");
    std::fs::write(device.join("gpu_busy_percent"), "0\n").unwrap();
    std::fs::write(device.join("mem_info_vram_used"), "268435456\n").unwrap();
    std::fs::remove_dir_all(dir.path().join("proc")).unwrap();
    std::fs::create_dir(dir.path().join("proc")).unwrap();
    dir
}

#[test]
fn pick_env_on_an_amd_gpu_sets_rocr_visible_devices_and_refuses_to_mix_vendors() {
    let tree = idle_mi300x();
    let pick = |args: &[&str]| {
        common::clean_command()
            .env("GPUWATCH_SYSFS_ROOT", tree.path().join("sys"))
            .env("GPUWATCH_PROC_ROOT", tree.path().join("proc"))
            .env(
                "GPUWATCH_FAKE_NVML_SCENARIO",
                format!(
                    "{}/tests/fixtures/nvml/two_gpus.json",
                    env!("CARGO_MANIFEST_DIR")
                ),
            )
            .arg("--nvml-lib")
            .arg(common::fake_lib())
            .args(args)
            .output()
            .unwrap()
    };
    let out = pick(&["--source", "amd", "pick", "--format", "env"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ROCm's UUID form of amdgpu's unique_id: the same GPU whatever ROCm's index order.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "ROCR_VISIBLE_DEVICES=GPU-1cb6d8a2b3e4f501"
    );
    // NVIDIA GPU 1 and the AMD card qualify together: no one variable selects both.
    let out = pick(&[
        "--source", "auto", "pick", "--count", "2", "--format", "env",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "gpuwatch: pick --format: the GPUs picked are of several vendors (nvidia, amd)"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Each alone is fine, by UUID.
    let out = pick(&[
        "--source", "auto", "pick", "--count", "2", "--format", "uuids",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("AMD-1cb6d8a2b3e4f501"));
}

/// The whole MI300X tree (sys and proc) copied, for tests that plant hostile files in it.
fn copied_mi300x() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/sys", fixture("amd-mi300x")))
        .arg(format!("{}/proc", fixture("amd-mi300x")))
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "cp -a the fixture");
    dir
}

/// The files another user's process (or a replayed tree) controls: the card's busy file and
/// both fdinfo files of process 4242's DRM fds (5 and 6 share one client).
fn planted(tree: &std::path::Path) -> [std::path::PathBuf; 3] {
    let fdinfo = tree.join("proc/4242/fdinfo");
    [
        tree.join("sys/class/drm/card0/device/gpu_busy_percent"),
        fdinfo.join("5"),
        fdinfo.join("6"),
    ]
}

/// `--once --json` over a copied tree, with what it cost: the run's wall time and the
/// child's peak resident memory, as GNU time reports it (`None` without it). Not from this
/// process's own `wait4`: a child's `ru_maxrss` starts at its parent's resident size when
/// forked, and this test process (every integration test in one) is far bigger than
/// gpuwatch; GNU time is small when it forks gpuwatch.
// The child is reaped by that `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn once_over(tree: &std::path::Path) -> (Value, std::time::Duration, Option<u64>) {
    let started = std::time::Instant::now();
    let peak_file = tree.join("peak-kib");
    let mut command = match std::path::Path::new(GNU_TIME).exists() {
        true => {
            let mut c = std::process::Command::new(GNU_TIME);
            c.args(["-f", "%M", "-o"]).arg(&peak_file);
            c.arg(env!("CARGO_BIN_EXE_gpuwatch"));
            c
        }
        false => std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch")),
    };
    let child = command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .arg("--sysfs-root")
        .arg(tree.join("sys"))
        .arg("--proc-root")
        .arg(tree.join("proc"))
        .args(["--source", "amd", "--once", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    // A reader thread so a full pipe never stalls the child; a watchdog so a hang fails
    // the test instead of the whole run.
    let mut stdout = child.stdout.unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).unwrap();
        out
    });
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(20));
        // SAFETY: signals our own child; a no-op (ESRCH) or a reaped PID after it ended,
        // which the test has already asserted on by then.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(waited, pid);
    assert!(
        elapsed < std::time::Duration::from_secs(10),
        "--once took {elapsed:?} over planted files"
    );
    drop(watchdog);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "status {status}"
    );
    let doc = serde_json::from_slice(&reader.join().unwrap()).unwrap();
    let peak = std::fs::read_to_string(&peak_file).ok().map(|text| {
        let kib: u64 = text.lines().last().unwrap_or("").trim().parse().unwrap();
        kib * 1024
    });
    (doc, elapsed, peak)
}

/// GNU time (Debian's `time`), which reports its child's own peak memory.
const GNU_TIME: &str = "/usr/bin/time";

/// What must hold when the planted files are unreadable: the card still reads, its busy %
/// is unknown (absent, not 0), and process 4242 is still shown on it, its memory unknown.
fn assert_unreadable_but_shown(doc: &Value) {
    let g = &doc["gpus"][0];
    assert_eq!(g["name"], "AMD Instinct MI300X");
    assert_eq!(g["memory_used"], 154_618_822_656u64);
    assert!(g["utilization_gpu"].is_null(), "{}", g["utilization_gpu"]);
    let procs = doc["processes"].as_array().unwrap();
    let p = procs.iter().find(|p| p["pid"] == 4242).expect("4242 shown");
    assert!(p["used_gpu_memory"].is_null(), "{}", p["used_gpu_memory"]);
}

fn mkfifo(path: &std::path::Path) {
    std::fs::remove_file(path).unwrap();
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[test]
fn fifos_as_the_busy_file_and_as_fdinfo_are_refused_without_waiting() {
    let tree = copied_mi300x();
    for path in planted(tree.path()) {
        mkfifo(&path);
    }
    let (doc, elapsed, _) = once_over(tree.path());
    assert_unreadable_but_shown(&doc);
    eprintln!("--once over FIFOs: {elapsed:?}");
}

#[test]
fn a_100_mb_busy_file_and_fdinfo_are_refused_without_being_read_whole() {
    let tree = copied_mi300x();
    for path in planted(tree.path()) {
        // Sparse: 100 MB to read, nothing on disk.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(100 << 20).unwrap();
    }
    let (doc, elapsed, peak) = once_over(tree.path());
    assert_unreadable_but_shown(&doc);
    let Some(peak) = peak else {
        common::skip("GNU time (Debian: time) is not installed: gpuwatch's peak memory unread");
        return;
    };
    eprintln!(
        "--once over 100 MB files: {elapsed:?}, peak RSS {} MiB",
        peak >> 20
    );
    assert!(peak < 64 << 20, "peak RSS {} MiB", peak >> 20);
}
