//! What an admin's existing setup finds in the exporter as shipped: the default port, which no
//! shipped file may contradict and which is not another GPU exporter's, and the dcgm-exporter
//! memory series that dashboard 12239's host and GPU pickers read, on the demo fleet as on NVML.

use super::{ROOT, read};
use crate::common;
use crate::serve_support::{Exporter, gpuwatch};

/// Issue 23: 9445 is mindprince/nvidia_gpu_prometheus_exporter's default; every file an admin
/// copies from names gpuwatch's own port, never that one.
#[test]
fn every_shipped_file_names_the_default_port_and_none_the_old_one() {
    assert_eq!(gpuwatch::config::DEFAULT_PORT, 19445);
    let port = gpuwatch::config::DEFAULT_PORT.to_string();
    for path in [
        "deploy/systemd/gpuwatch.service",
        "deploy/Dockerfile",
        "deploy/kubernetes/gpuwatch.yaml",
        "deploy/prometheus/scrape.yml",
        "docs/deploy.md",
        "docs/settings.md",
        "README.md",
    ] {
        let text = read(path);
        assert!(text.contains(&port), "{path} does not name port {port}");
        let old = text
            .match_indices("9445")
            .filter(|(i, _)| !text[..*i].ends_with('1'))
            .count();
        assert_eq!(old, 0, "{path} still names the old port 9445");
    }
}

/// Issue 23: `--dcgm-compat` writes NVML's reserved memory as dcgm-exporter does, and the demo
/// fleet has free memory, so `label_values(DCGM_FI_DEV_FB_FREE, …)` pickers are not empty there.
#[test]
fn dcgm_compat_has_reserved_memory_and_the_demo_has_free_memory() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libnvidia-ml.so.1");
    std::fs::copy(common::fake_lib(), &lib).unwrap();
    let scenario = format!("{ROOT}/tests/fixtures/nvml/two_gpus.json");
    let mut cmd = gpuwatch();
    cmd.env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .arg("--nvml-lib")
        .arg(&lib);
    let nvml = Exporter::start(cmd, &["--dcgm-compat"]);
    nvml.wait_ready();
    let text = nvml.get("/metrics").body;
    assert!(
        text.contains("# HELP DCGM_FI_DEV_FB_RESERVED Framebuffer memory reserved (in MiB).\n"),
        "{text}"
    );
    // The fixture's first GPU reserves 512 MiB (NVML's v2 memory info).
    let reserved: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("DCGM_FI_DEV_FB_RESERVED{gpu=\"0\""))
        .collect();
    assert_eq!(reserved.len(), 1, "{text}");
    assert!(reserved[0].ends_with(" 512"), "{reserved:?}");

    let demo = Exporter::demo(&["--dcgm-compat", "--demo-gpus", "3"]);
    demo.wait_ready();
    let text = demo.get("/metrics").body;
    let mib = |name: &str, gpu: usize| -> f64 {
        let prefix = format!("{name}{{gpu=\"{gpu}\"");
        let line = text
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in the demo's metrics"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    for gpu in 0..3 {
        let (used, free) = (
            mib("DCGM_FI_DEV_FB_USED", gpu),
            mib("DCGM_FI_DEV_FB_FREE", gpu),
        );
        let total = mib("gpuwatch_gpu_memory_total_bytes", gpu) / 1_048_576.0;
        // What is not used is free (the demo counts the driver's share in used).
        assert!(
            free > 0.0 && (used + free - total).abs() <= 2.0,
            "GPU {gpu}: used {used} + free {free} MiB of {total}"
        );
    }
}
