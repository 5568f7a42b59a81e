//! A real Prometheus server for the tests: scrapes what it is told every second, answers
//! PromQL over its HTTP API on a loopback port, and is killed (and reaped) when dropped.
//! Shared by tests/it/prometheus.rs and tests/it/deploy.rs (the dashboard's queries).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{encode_query, free_port, request, wait_until};

/// Prometheus starts, scrapes every second, and answers: well within this on CI.
pub const SCRAPED: Duration = Duration::from_secs(30);

/// The Prometheus server; killed (and reaped) when dropped, pass or fail.
pub struct Prometheus {
    child: Child,
    pub port: u16,
}

impl Prometheus {
    pub fn start(dir: &Path, target: &str) -> Self {
        Self::start_many(dir, &[target])
    }

    /// One scrape job over all of `targets`, every second.
    pub fn start_many(dir: &Path, targets: &[&str]) -> Self {
        Self::start_jobs(dir, &Self::one_job(targets), &[], &[])
    }

    /// `start_many` behind Prometheus's own `--web.config.file` (TLS, basic auth): its API
    /// then answers only over https, so `query` cannot reach it.
    pub fn start_many_web(dir: &Path, targets: &[&str], web_config: &Path) -> Self {
        let web = format!("--web.config.file={}", web_config.display());
        Self::start_jobs(dir, &Self::one_job(targets), &[], &[web])
    }

    fn one_job(targets: &[&str]) -> String {
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        format!(
            "  - job_name: gpuwatch\n    static_configs:\n      \
             - targets: [{}]\n        labels:\n          cluster: a\n",
            list.join(", ")
        )
    }

    /// These scrape jobs (YAML under `scrape_configs:`) and rule files, every second.
    pub fn start_config(dir: &Path, jobs: &str, rule_files: &[&str]) -> Self {
        Self::start_jobs(dir, jobs, rule_files, &[])
    }

    fn start_jobs(dir: &Path, jobs: &str, rule_files: &[&str], extra: &[String]) -> Self {
        let files: String = rule_files.iter().map(|f| format!("\n  - '{f}'")).collect();
        let rules = if files.is_empty() {
            String::new()
        } else {
            format!("rule_files:{files}\n")
        };
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             {rules}scrape_configs:\n{jobs}"
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
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        Prometheus { child, port }
    }

    /// The query's instant-vector result as (labels, value) pairs, or `None` while
    /// Prometheus is not up yet or answers with an error.
    pub fn query(&self, promql: &str) -> Option<Vec<(Value, f64)>> {
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
    pub fn single_value(&self, promql: &str) -> f64 {
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
