//! Issue 21 §10: `NvmlSource` takes its outside world as `DrmSource` does. The /proc root
//! it reads GPU processes and the host line from (`--proc-root` reaches it) and its clock
//! are injected: a test drives the real NVML path (the fake library) over a /proc fixture
//! at a fixed time, in the process and through the binary.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use gpuwatch::procinfo::ProcInfo;
use gpuwatch::reading::HostProc;
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use serde_json::{Value, json};

use crate::common;
use crate::common::real;

/// A captured /proc: PID 4300 is `python3 serve.py` of UID 1000 there (and, on this
/// machine, most likely nothing or something else).
const PROC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/drm/amd-mi300x/proc"
);

/// The fake NVML's two GPUs with fixture PID 4300 on the first, in `dir` beside a private
/// copy of the library (the fake reads the scenario next to itself).
fn open_fake(dir: &Path) -> NvmlSource {
    let scenario = real::scenario(dir, json!([{"pid": 4300, "used_memory": 1073741824u64}]));
    let lib = dir.join("libnvidia-ml.so.1");
    std::fs::copy(common::fake_lib(), &lib).unwrap();
    // The fake reads `scenario.json` beside itself (fake-nvml/src/lib.rs).
    assert!(scenario.exists());
    NvmlSource::open(Some(&lib)).expect("the fake NVML opens")
}

#[test]
fn nvml_reads_processes_from_the_proc_root_and_time_from_its_clock() {
    let dir = tempfile::tempdir().unwrap();
    let at = common::epoch();
    let start = Instant::now();
    let mut ticks = 0u64;
    let mut src = open_fake(dir.path())
        .with_procinfo(ProcInfo::new(PROC, 100, 4096), Path::new(PROC))
        .with_clock(Box::new(move || {
            ticks += 1;
            let d = Duration::from_secs(ticks);
            (at + d, start + d)
        }));
    let s = src.sample().expect("a sample");
    assert_eq!(
        s.time,
        at + Duration::from_secs(1),
        "the injected wall clock"
    );
    let p = s
        .processes
        .iter()
        .find(|p| p.pid == 4300)
        .expect("PID 4300 listed");
    let HostProc::Visible(d) = &p.host else {
        panic!("the fixture /proc has PID 4300: {:?}", p.host)
    };
    assert_eq!(
        &*d.command, "python3 serve.py",
        "read from the fixture, not this host"
    );
    assert_eq!(d.uid, 1000);
    // The fixture's btime (1767600000) plus its start ticks: a time only the fixture gives.
    let boot = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_600_000);
    assert!(d.started >= boot, "{:?}", d.started);
    let s2 = src.sample().unwrap();
    assert_eq!(
        s2.time,
        at + Duration::from_secs(2),
        "one clock read per sample"
    );
}

/// `--proc-root` reaches the NVIDIA source: the binary names the fixture's process.
#[test]
fn proc_root_reaches_the_nvml_source_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = real::scenario(
        dir.path(),
        json!([{"pid": 4300, "used_memory": 1073741824u64}]),
    );
    let (doc, _) = real::json_doc(real::gpuwatch(&scenario, None).args([
        "--proc-root",
        PROC,
        "--once",
        "--json",
    ]));
    let procs: Vec<&Value> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"] == json!(4300))
        .collect();
    assert_eq!(procs.len(), 1, "{doc}");
    assert_eq!(
        procs[0]["command"],
        json!("python3 serve.py"),
        "{}",
        procs[0]
    );
}
