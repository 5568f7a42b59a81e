//! The deployment files in deploy/ stay true to the binary: the Grafana dashboard is valid
//! JSON, every metric its queries name is in `serve --demo`'s output, and every panel's and
//! variable's query returns data from a real Prometheus (deploy/dashboard.rs); the default
//! port and the dcgm memory series (deploy/exporter_defaults.rs); the Kubernetes manifests
//! work as shipped (deploy/kubernetes.rs) and the operator's resources match its CRDs
//! (deploy/crds.rs); the systemd unit starts and is hardened (deploy/systemd*.rs); the
//! Prometheus scrape config passes `promtool check config`; the Dockerfile is multi-stage,
//! non-root, labelled and asks only for NVML's capability. A missing tool skips its check
//! with a message, and fails it under CI=true.

use crate::common;
#[path = "deploy/crds.rs"]
mod crds;
#[path = "deploy/dashboard.rs"]
mod dashboard;
#[path = "deploy/exporter_defaults.rs"]
mod exporter_defaults;
#[path = "deploy/kubernetes.rs"]
mod kubernetes;
use crate::serve_support;
#[path = "deploy/systemd.rs"]
mod systemd;
#[path = "deploy/systemd_hardening.rs"]
mod systemd_hardening;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use serve_support::{Exporter, skip_without};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `expr` and template query in the dashboard.
fn queries(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expr" | "definition", Value::String(q)) => out.push(q.clone()),
                    _ => queries(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| queries(i, out)),
        _ => {}
    }
}

/// Aggregations, written `sum by (l) (…)` as often as `sum(…)`.
const AGGREGATIONS: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];

const PROMQL_WORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
];

/// The metric names in a PromQL expression: identifiers outside `{…}`, strings, `[…]` and the
/// label lists of `by`/`on`/`group_left(…)`, that are not functions or keywords.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let (mut i, mut depth_brace, mut skip_parens) = (0, 0, false);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' => depth_brace += 1,
            '}' => depth_brace -= 1,
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += 1;
                }
            }
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
            }
            '(' if skip_parens => {
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                skip_parens = false;
            }
            c if depth_brace == 0 && (c.is_ascii_alphabetic() || c == '_') => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i]))
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let rest = chars[i..].iter().collect::<String>();
                let is_call = rest.trim_start().starts_with('(');
                if PROMQL_WORDS.contains(&word.as_str()) {
                    skip_parens =
                        word != "and" && word != "or" && word != "unless" && word != "bool";
                } else if !is_call && !AGGREGATIONS.contains(&word.as_str()) {
                    names.push(word);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    names
}

#[test]
fn the_metric_name_parser_reads_what_dashboards_write() {
    assert_eq!(
        metric_names(
            r#"sum by (user) (a_bytes{x="{y}"} * on(uuid) group_left(hostname) b_info) / rate(c_total[5m])"#
        ),
        ["a_bytes", "b_info", "c_total"]
    );
}

#[test]
fn every_dashboard_query_names_metrics_the_exporter_serves() {
    let dashboard: Value = serde_json::from_str(&read("deploy/grafana/gpuwatch.json"))
        .expect("deploy/grafana/gpuwatch.json is valid JSON");
    assert!(dashboard["panels"].as_array().is_some_and(|p| p.len() >= 6));
    let mut all = Vec::new();
    queries(&dashboard, &mut all);
    assert!(all.len() >= 10, "{all:?}");
    // The exporter as the DaemonSet runs it, with the opt-in per-process series the "Top
    // processes" panel says it needs, on the fleet that has MIG instances.
    // The demo's story 40 times faster, so its XID (at 20 s) is there within a second.
    let exporter = Exporter::demo(&[
        "--demo-scenario",
        "mixed",
        "--process-metrics",
        "--demo-speed",
        "40",
    ]);
    exporter.wait_ready();
    let text = serve_support::wait_until("an XID in the demo", Duration::from_secs(20), || {
        let text = exporter.get("/metrics").body;
        text.contains("\ngpuwatch_gpu_last_xid{").then_some(text)
    });
    let served: BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let mut asked = BTreeSet::new();
    for q in &all {
        // label_values(METRIC, LABEL): the metric is the first argument.
        let q = q.replace("label_values(", "(");
        asked.extend(metric_names(&q).into_iter().filter(|n| !n.starts_with('$')));
    }
    for label in ["hostname", "gpu", "owners"] {
        asked.remove(label);
    }
    let missing: Vec<&String> = asked
        .iter()
        .filter(|n| !served.contains(n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries {missing:?}, which serve --demo lacks"
    );
    assert!(
        asked.contains("gpuwatch_user_gpu_memory_bytes") && asked.contains("gpuwatch_gpu_warnings")
    );
}

/// The YAML documents of a manifest file.
fn documents(path: &str) -> Vec<serde_yaml_ng::Value> {
    let text = read(path);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

#[test]
fn the_prometheus_scrape_config_checks() {
    if skip_without("promtool", "the Prometheus scrape configs") {
        return;
    }
    let check = |file: &str| {
        Command::new("promtool")
            .args(["check", "config", &format!("{ROOT}/{file}")])
            .output()
            .unwrap()
    };
    let out = check("deploy/prometheus/scrape.yml");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = check("deploy/prometheus/kubernetes.yml");
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    if said.contains("field kubernetes_sd_configs not found") {
        // Debian's Prometheus is built without Kubernetes discovery.
        eprintln!("skipped kubernetes.yml: this promtool has no Kubernetes discovery");
    } else {
        assert!(out.status.success(), "{said}");
    }
}

#[test]
fn the_dockerfile_is_multi_stage_non_root_and_asks_only_for_nvml() {
    let text = read("deploy/Dockerfile");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert!(lines.iter().filter(|l| l.starts_with("FROM ")).count() >= 2);
    assert!(lines.iter().any(|l| l.contains("COPY --from=build")));
    let user = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER line");
    assert!(
        !user.starts_with("root") && !user.starts_with("0"),
        "{user}"
    );
    assert!(text.contains("NVIDIA_DRIVER_CAPABILITIES=utility"));
    assert!(text.contains(&format!("EXPOSE {}", gpuwatch::config::DEFAULT_PORT)));
    // OCI labels on the run stage (after the last FROM), the licence the same as Cargo's.
    let run_stage = &text[text.rfind("\nFROM ").unwrap()..];
    for label in ["title", "description", "version", "revision", "licenses"] {
        let key = format!("org.opencontainers.image.{label}=");
        assert!(run_stage.contains(&key), "no {key} label");
    }
    let licence = format!(
        "org.opencontainers.image.licenses=\"{}\"",
        env!("CARGO_PKG_LICENSE")
    );
    assert!(run_stage.contains(&licence), "{licence}");
}

/// `COPY . .` sends the whole build context: .dockerignore keeps target/ (gigabytes) and
/// .git out of it, and nothing the release build reads.
#[test]
fn the_docker_build_context_leaves_out_target_and_git_only() {
    let text = read(".dockerignore");
    let patterns: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for needed in ["target/", ".git/"] {
        assert!(patterns.contains(&needed), "{needed} is sent to the daemon");
    }
    for kept in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "fake-nvml",
        "benches",
        "examples",
    ] {
        assert!(
            !patterns
                .iter()
                .any(|p| p.trim_matches(['/', '*']) == kept || p.starts_with('!')),
            "{kept} must stay in the build context"
        );
    }
}

/// The release script's GLIBC check (`scripts/glibc-max.sh`, `objdump -T`) reads the highest
/// version a binary needs: the same as the versions `objdump -T` lists, here on the test
/// build (the release binaries themselves are checked by `scripts/release.sh`, which fails
/// above 2.28; building them needs zig, too slow for CI).
#[test]
fn the_glibc_check_reads_the_highest_version_a_binary_needs() {
    let bin = env!("CARGO_BIN_EXE_gpuwatch");
    let Ok(dump) = std::process::Command::new("objdump")
        .args(["-T", bin])
        .output()
    else {
        common::skip("objdump is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&dump.stdout);
    let version = |v: &str| -> Vec<u32> { v.split('.').filter_map(|n| n.parse().ok()).collect() };
    let highest = text
        .split("GLIBC_")
        .skip(1)
        .filter_map(|rest| {
            rest.split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .next()
        })
        .map(version)
        .max()
        .expect("a dynamically linked binary needs some GLIBC version");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/glibc-max.sh");
    let out = std::process::Command::new(script)
        .arg(bin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8(out.stdout).unwrap();
    assert_eq!(version(said.trim()), highest, "{said}");
}
