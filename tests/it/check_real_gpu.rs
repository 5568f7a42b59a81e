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

/// Runs the script with `nvidia-smi` printing `gpus` and `apps`; (exit code, stdout).
fn check(scenario: &serde_json::Value, gpus: &str, apps: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gpus.csv"), gpus).unwrap();
    std::fs::write(dir.path().join("apps.csv"), apps).unwrap();
    let smi = dir.path().join("nvidia-smi");
    let body = format!(
        "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*) cat {0}/gpus.csv ;;\n  \
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
