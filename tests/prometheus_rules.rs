//! The shipped alerting rules (assets/prometheus/gpuwatch-alerts.yml) are valid Prometheus
//! rules and behave as their unit tests say: `promtool check rules` and `promtool test rules`
//! must pass. CI installs promtool; without it locally the test says so and does nothing.
//! Also: every gpuwatch metric the rules query is one the exporter really writes.

use std::path::Path;
use std::process::Command;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/prometheus");
const RULES: &str = "gpuwatch-alerts.yml";
const TESTS: &str = "gpuwatch-alerts.test.yml";

fn promtool() -> Option<Command> {
    let found = Command::new("promtool").arg("--version").output().is_ok();
    if !found {
        println!("promtool is not installed: skipping the alerting-rule checks");
        return None;
    }
    let mut cmd = Command::new("promtool");
    cmd.current_dir(DIR);
    Some(cmd)
}

fn run(mut cmd: Command, args: &[&str]) {
    let out = cmd.args(args).output().expect("run promtool");
    assert!(
        out.status.success(),
        "promtool {args:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn promtool_checks_the_alerting_rules() {
    if let Some(cmd) = promtool() {
        run(cmd, &["check", "rules", RULES]);
    }
}

#[test]
fn promtool_passes_the_alerting_rules_unit_tests() {
    if let Some(cmd) = promtool() {
        run(cmd, &["test", "rules", TESTS]);
    }
}

/// Catches a rule that queries a series gpuwatch does not export (a typo or a rename),
/// which `promtool` cannot know about: the names must appear in the exporter's source.
#[test]
fn every_gpuwatch_metric_the_rules_query_is_exported() {
    let rules = std::fs::read_to_string(Path::new(DIR).join(RULES)).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve");
    let exporter: String = std::fs::read_dir(src)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let mut names: Vec<&str> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("gpuwatch_"))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        assert!(
            exporter.contains(&format!("\"{name}\"")),
            "{name} is queried by {RULES} but not exported"
        );
    }
}
