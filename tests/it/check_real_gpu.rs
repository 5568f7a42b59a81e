//! scripts/check-real-gpu.sh without a GPU: the real binary on the fake NVML against a
//! stand-in `nvidia-smi` on PATH that prints canned CSV. Agreeing output says "no
//! differences" (exit 0); each kind of disagreement (a total, a null against a number, a
//! process only one side lists, a process's memory) is printed (exit 1).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const H100: &str = "GPU-0e8f6c1a-7d55-4b3e-9a5c-1f2e3d4c5b6a";
const T4: &str = "GPU-5b6a1f2e-3d4c-4b3e-9a5c-0e8f6c1a7d55";

/// nvidia-smi's answer for tests/fixtures/nvml/two_gpus.json (field order as the script asks).
fn gpus_csv() -> String {
    format!(
        "0, {H100}, NVIDIA H100 80GB HBM3, 00000000:17:00.0, 38, 12, 81920, 10240, 61, 310.20, 700.00, 45, 1755, 2619, 1980, 2619, P0, 5, 16\n\
         1, {T4}, Tesla T4, 00000000:3B:00.0, 0, 0, 15360, 0, 34, 9.00, 70.00, [N/A], 300, 405, [N/A], [N/A], P8, [N/A], [N/A]\n"
    )
}

/// The header real nvidia-smi prints for each field the script asks by itself (`--format=csv`):
/// the name `--help-query-gpu` lists first (`"clocks.current.sm" or "clocks.sm"`), also when
/// the alias was asked, and the unit in brackets, as real captures show it
/// (`clocks.current.sm [MHz]`; `nvidia-smi --query-gpu=clocks.max.gr` → `clocks.max.graphics [MHz]`).
const NVIDIA_SMI_HEADERS: &[(&str, &str)] = &[
    ("timestamp", "timestamp"),
    ("driver_version", "driver_version"),
    ("count", "count"),
    ("name", "name"),
    ("gpu_name", "name"),
    ("index", "index"),
    ("uuid", "uuid"),
    ("gpu_uuid", "uuid"),
    ("pci.bus_id", "pci.bus_id"),
    ("gpu_bus_id", "pci.bus_id"),
    ("pstate", "pstate"),
    ("temperature.gpu", "temperature.gpu"),
    ("temperature.memory", "temperature.memory"),
    ("utilization.gpu", "utilization.gpu [%]"),
    ("utilization.memory", "utilization.memory [%]"),
    ("utilization.encoder", "utilization.encoder [%]"),
    ("utilization.decoder", "utilization.decoder [%]"),
    ("memory.total", "memory.total [MiB]"),
    ("memory.reserved", "memory.reserved [MiB]"),
    ("memory.used", "memory.used [MiB]"),
    ("memory.free", "memory.free [MiB]"),
    ("power.draw", "power.draw [W]"),
    ("power.limit", "power.limit [W]"),
    ("enforced.power.limit", "enforced.power.limit [W]"),
    ("clocks.gr", "clocks.current.graphics [MHz]"),
    ("clocks.current.graphics", "clocks.current.graphics [MHz]"),
    ("clocks.sm", "clocks.current.sm [MHz]"),
    ("clocks.current.sm", "clocks.current.sm [MHz]"),
    ("clocks.mem", "clocks.current.memory [MHz]"),
    ("clocks.current.memory", "clocks.current.memory [MHz]"),
    ("clocks.max.gr", "clocks.max.graphics [MHz]"),
    ("clocks.max.graphics", "clocks.max.graphics [MHz]"),
    ("clocks.max.sm", "clocks.max.sm [MHz]"),
    ("clocks.max.mem", "clocks.max.memory [MHz]"),
    ("clocks.max.memory", "clocks.max.memory [MHz]"),
    ("clocks.video", "clocks.current.video [MHz]"),
    ("clocks.current.video", "clocks.current.video [MHz]"),
    ("fan.speed", "fan.speed [%]"),
    ("pcie.link.gen.current", "pcie.link.gen.current"),
    ("pcie.link.gen.gpucurrent", "pcie.link.gen.gpucurrent"),
    ("pcie.link.gen.max", "pcie.link.gen.max"),
    ("pcie.link.width.current", "pcie.link.width.current"),
    ("pcie.link.width.max", "pcie.link.width.max"),
    (
        "ecc.errors.corrected.volatile.total",
        "ecc.errors.corrected.volatile.total",
    ),
    (
        "ecc.errors.uncorrected.volatile.total",
        "ecc.errors.uncorrected.volatile.total",
    ),
    ("compute_mode", "compute_mode"),
    ("persistence_mode", "persistence_mode"),
    ("mig.mode.current", "mig.mode.current"),
];

/// Runs the script with `nvidia-smi` printing `gpus` and `apps`; (exit code, stdout).
fn check(scenario: &serde_json::Value, gpus: &str, apps: &str) -> (i32, String) {
    check_with_headers(scenario, gpus, apps, NVIDIA_SMI_HEADERS)
}

/// `check` with the stand-in printing `headers` when asked one field with its header.
fn check_with_headers(
    scenario: &serde_json::Value,
    gpus: &str,
    apps: &str,
    headers: &[(&str, &str)],
) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gpus.csv"), gpus).unwrap();
    std::fs::write(dir.path().join("apps.csv"), apps).unwrap();
    let tsv: String = headers.iter().map(|(f, h)| format!("{f}\t{h}\n")).collect();
    std::fs::write(dir.path().join("headers.tsv"), tsv).unwrap();
    let smi = dir.path().join("nvidia-smi");
    // Asked one field with its header (the script's shape check), the stand-in answers as
    // nvidia-smi does: the header line, or its error for a field it does not know.
    let body = format!(
        "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*)\n    \
         if [ \"$2\" = --format=csv ]; then\n      f=${{1#--query-gpu=}}\n      \
         h=$(awk -F '\\t' -v f=\"$f\" '$1 == f {{ print $2 }}' {0}/headers.tsv)\n      \
         [ -n \"$h\" ] || {{ echo \"Field \\\"$f\\\" is not a valid field to query.\"; exit 2; }}\n      \
         echo \"$h\"\n    else cat {0}/gpus.csv; fi ;;\n  \
         --query-compute-apps=*) cat {0}/apps.csv ;;\n  *) exit 9 ;;\nesac\n",
        dir.path().display()
    );
    std::fs::write(&smi, body).unwrap();
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario_path = dir.path().join("scenario.json");
    std::fs::write(&scenario_path, scenario.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-real-gpu.sh");
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = std::process::Command::new(script)
        .env_clear()
        .env("PATH", path)
        .env("HOME", common::EMPTY_HOME)
        .env("GPUWATCH", env!("CARGO_BIN_EXE_gpuwatch"))
        .env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario_path)
        .arg("--nvml-lib")
        .arg(common::fake_lib())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Traceback"), "{stderr}");
    (out.status.code().unwrap_or(-1), stdout)
}

/// two_gpus.json with one compute process of 4 GiB on the H100.
fn scenario() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvml/two_gpus.json"
    );
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    s["gpus"][0]["processes"] =
        serde_json::json!([{"pid": 3_999_999, "used_memory": 4_294_967_296u64}]);
    s["gpus"][1]["processes"] = serde_json::json!([]);
    s
}

#[test]
fn agreeing_readings_have_no_differences() {
    let (code, out) = check(
        &scenario(),
        &gpus_csv(),
        &format!("3999999, 4096, {H100}\n"),
    );
    assert_eq!(
        (code, out.trim()),
        (0, "no differences (2 GPUs, 1 compute processes)")
    );
}

#[test]
fn every_differing_field_and_process_is_printed() {
    let gpus = gpus_csv()
        .replace("81920, 10240", "81559, 10240")
        .replace("P8, [N/A]", "P8, 3");
    let apps = format!("3999999, 8192, {H100}\n4242, 100, {T4}\n");
    let (code, out) = check(&scenario(), &gpus, &apps);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "GPU 0 memory.total: nvidia-smi '81559', gpuwatch memory_total=85899345920",
            "GPU 1 pcie.link.gen.current: nvidia-smi '3', gpuwatch pcie_link_gen_current=None",
            // Processes in PID order.
            &format!("process 4242 on {T4}: nvidia-smi lists it, gpuwatch does not"),
            &format!(
                "process 3999999 on {H100} used_memory: nvidia-smi '8192' MiB, gpuwatch 4294967296 bytes"
            ),
            // The same fields asked through `gpuwatch query`, in nvidia-smi's own shape.
            "query GPU 0 memory.total: nvidia-smi '81559', gpuwatch query '81920'",
            "query GPU 1 pcie.link.gen.current: nvidia-smi '3', gpuwatch query '[N/A]'",
        ]
    );
}

/// Issue 24: the CSV header is compared with nvidia-smi's, field by field: a header that
/// differs (the old `clocks.sm [MHz]` where nvidia-smi prints `clocks.current.sm [MHz]`) is
/// printed, and a field this driver's nvidia-smi does not know is said without failing.
#[test]
fn a_header_that_differs_from_nvidia_smis_is_printed() {
    let headers: Vec<(&str, &str)> = NVIDIA_SMI_HEADERS
        .iter()
        .copied()
        .filter(|(f, _)| *f != "temperature.memory")
        .map(|(f, h)| {
            if f == "clocks.sm" {
                (f, "clocks.sm [MHz]")
            } else {
                (f, h)
            }
        })
        .collect();
    let (code, out) = check_with_headers(
        &scenario(),
        &gpus_csv(),
        &format!("3999999, 4096, {H100}\n"),
        &headers,
    );
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "note: this nvidia-smi does not know 'temperature.memory' (Field \"temperature.memory\" is not a valid field to query.); gpuwatch answers it",
            "header of clocks.sm: nvidia-smi ['clocks.sm [MHz]'], gpuwatch query ['clocks.current.sm [MHz]']",
        ]
    );
}
