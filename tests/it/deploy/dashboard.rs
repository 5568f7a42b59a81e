//! The Grafana dashboard works as shipped: every panel's query and every variable's query,
//! run by a real Prometheus that scrapes `gpuwatch serve --demo` (the mixed fleet, with
//! `--process-metrics` and `--dcgm-compat`), returns data. Grafana's variables are replaced
//! by what "All" sends (`.*`).

use serde_json::Value;

use super::read;
use crate::serve_support::prometheus::{Prometheus, SCRAPED};
use crate::serve_support::{Exporter, skip_without, wait_until};

/// Every query the dashboard runs, named for the failure message: panels' targets and the
/// variables' `label_values(SELECTOR, LABEL)` as the series query Grafana sends for them.
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        let Some(definition) = var["definition"].as_str() else {
            continue; // the data source picker
        };
        let inner = definition
            .strip_prefix("label_values(")
            .and_then(|d| d.strip_suffix(')'))
            .unwrap_or_else(|| panic!("variable {}: {definition}", var["name"]));
        let (selector, label) = inner.rsplit_once(',').unwrap();
        let query = format!("count by ({}) ({selector})", label.trim());
        out.push((format!("variable {}", var["name"]), query));
    }
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let name = format!("panel {:?} target {}", panel["title"], target["refId"]);
            out.push((name, target["expr"].as_str().unwrap().to_string()));
        }
    }
    out.into_iter()
        .map(|(name, q)| (name, q.replace("$hostname", ".*").replace("$gpu", ".*")))
        .collect()
}

#[test]
fn every_panel_and_variable_of_the_dashboard_returns_data_from_a_real_prometheus() {
    if skip_without("prometheus", "the Grafana dashboard's queries") {
        return;
    }
    let dashboard: Value = serde_json::from_str(&read("deploy/grafana/gpuwatch.json")).unwrap();
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() >= 20, "{queries:?}");
    // Idle holders after 1 s instead of 30 min, and the demo's story (its XID at 20 s) 20
    // times faster, so every panel has something to show within seconds.
    let exporter = Exporter::demo(&[
        "--demo-scenario",
        "mixed",
        "--demo-speed",
        "20",
        "--idle-after",
        "1s",
        "--process-metrics",
        "--dcgm-compat",
    ]);
    exporter.wait_ready();
    let dir = tempfile::tempdir().unwrap();
    // The job name the shipped scrape configs use, which the exporter panels select on.
    let jobs = format!(
        "  - job_name: gpuwatch\n    static_configs:\n      - targets: ['{}']\n",
        exporter.addr
    );
    let prometheus = Prometheus::start_config(dir.path(), &jobs, &[]);
    for (name, query) in &queries {
        wait_until(&format!("{name}: {query}"), SCRAPED, || {
            prometheus.query(query).filter(|rows| !rows.is_empty())
        });
    }
    // The negative control: a query for a series nobody exports gets no data, so the loop
    // above could fail.
    assert_eq!(
        prometheus.query("gpuwatch_gpu_no_such_series"),
        Some(Vec::new())
    );
}
