//! A real Prometheus scrapes `gpuwatch serve --demo` on loopback, and PromQL through its
//! HTTP API sees the fleet: the exporter works with the real consumer, not just a parser.
//! Skipped, with a message, only when `prometheus` is not installed (CI installs it).

mod serve_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use serve_support::{Exporter, encode_query, free_port, on_path, request, wait_until};

/// Prometheus starts, scrapes every second, and answers: well within this on CI.
const SCRAPED: Duration = Duration::from_secs(30);

/// The Prometheus server; killed (and reaped) when dropped, pass or fail.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(dir: &Path, target: &str) -> Self {
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: gpuwatch\n    static_configs:\n      \
             - targets: ['{target}']\n"
        );
        let config_path = dir.join("prom.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        Prometheus { child, port }
    }

    /// The query's instant-vector result as (labels, value) pairs, or `None` while
    /// Prometheus is not up yet or answers with an error.
    fn query(&self, promql: &str) -> Option<Vec<(Value, f64)>> {
        let addr = ([127, 0, 0, 1], self.port).into();
        let target = format!("/api/v1/query?query={}", encode_query(promql));
        let r = request(addr, "GET", &target).ok()?;
        let doc: Value = serde_json::from_str(&r.body).ok()?;
        if doc["status"] != "success" {
            return None;
        }
        let rows = doc["data"]["result"].as_array()?;
        rows.iter()
            .map(|row| {
                let value = row["value"][1].as_str()?.parse().ok()?;
                Some((row["metric"].clone(), value))
            })
            .collect()
    }

    /// Waits until `promql` returns exactly one series, and returns its value.
    fn single_value(&self, promql: &str) -> f64 {
        wait_until(promql, SCRAPED, || {
            let rows = self.query(promql)?;
            (rows.len() == 1).then(|| rows[0].1)
        })
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_scrapes_the_exporter_and_promql_sees_the_fleet() {
    if !on_path("prometheus") {
        println!("prometheus is not installed: skipping the real-Prometheus scrape test");
        return;
    }
    let exporter = Exporter::demo(&["--dcgm-compat"]);
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(dir.path(), &exporter.addr.to_string());
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();

    let gpus = wait_until("8 GPUs in Prometheus", SCRAPED, || {
        let rows = prometheus.query("count(gpuwatch_gpu_info)")?;
        rows.first().map(|r| r.1).filter(|n| *n == 8.0)
    });
    assert_eq!(gpus, 8.0, "{}", log());

    let total = prometheus.single_value(r#"gpuwatch_gpu_memory_total_bytes{gpu="0"}"#);
    let gib = total / f64::from(1u32 << 30);
    assert!((79.0..80.0).contains(&gib), "{total} bytes is {gib} GiB");
    let limit = prometheus.single_value(r#"gpuwatch_gpu_power_limit_watts{gpu="0"}"#);
    assert_eq!(limit, 700.0);
    // The dcgm-exporter names are ingested too, in their own units (whole MiB). One query,
    // so both series come from the same scrape.
    let mib_gap = prometheus.single_value(
        r#"DCGM_FI_DEV_FB_USED{gpu="0"} - on(gpu) floor(gpuwatch_gpu_memory_used_bytes{gpu="0"} / 1048576)"#,
    );
    assert_eq!(mib_gap, 0.0);
    assert_eq!(prometheus.single_value("up"), 1.0);
    // Prometheus asks for OpenMetrics first, so what it ingested was the OpenMetrics text
    // (the exporter counts the scrapes it answered in each format).
    let om = wait_until("an OpenMetrics scrape counted", SCRAPED, || {
        let rows = prometheus.query(r#"gpuwatch_exporter_scrapes_total{format="openmetrics"}"#)?;
        rows.first().map(|r| r.1).filter(|n| *n > 0.0)
    });
    assert!(om > 0.0);
}
