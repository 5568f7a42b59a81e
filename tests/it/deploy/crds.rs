//! The ServiceMonitor and the PrometheusRule validate against the Prometheus Operator's own
//! CRD schemas (tests/it/deploy/crds/, extracted unchanged from its v0.93 release), strictly: an
//! unknown field is an error, since the API server would drop it without a word (a misspelt
//! `honorLabels` would bring back `exported_namespace`). A negative control proves the
//! validator refuses such a typo and a bad duration.

use serde_json::Value;

use super::{ROOT, documents};
use crate::serve_support::skip_without;

/// JSON Schema validation in Python's `jsonschema` (which kubernetes-validate, installed by
/// .ci/run, depends on), with `additionalProperties: false` wherever the schema lists
/// properties and does not preserve unknown fields. Prints the errors; exits 1 on any.
const VALIDATE: &str = r#"
import json, sys
import jsonschema
def strict(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for v in node.values():
            strict(v)
    elif isinstance(node, list):
        for v in node:
            strict(v)
schema = json.load(open(sys.argv[1]))
strict(schema)
doc = json.load(sys.stdin)
errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
for e in errors:
    print("/".join(str(p) for p in e.absolute_path) + ": " + e.message)
sys.exit(1 if errors else 0)
"#;

/// `Some(errors)` (empty when valid), or `None` when Python has no jsonschema (skipped).
fn validate(schema: &str, doc: &Value) -> Option<String> {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            VALIDATE,
            &format!("{ROOT}/tests/it/deploy/crds/{schema}"),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(doc.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named 'jsonschema'") {
        crate::common::skip("python3 has no jsonschema (pip install kubernetes-validate)");
        return None;
    }
    assert!(out.status.success() || !said.is_empty(), "python3: {err}");
    Some(said)
}

/// The one document of `kind` in a manifest file, as JSON.
fn document(path: &str, kind: &str) -> Value {
    let found: Vec<Value> = documents(path)
        .into_iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .map(|d| serde_json::to_value(d).unwrap())
        .collect();
    assert_eq!(found.len(), 1, "{path}: one {kind}");
    found.into_iter().next().unwrap()
}

#[test]
fn the_service_monitor_and_prometheus_rule_validate_against_the_operators_crds() {
    if skip_without(
        "python3",
        "the manifests against the Prometheus Operator's CRDs",
    ) {
        return;
    }
    let monitor = document("deploy/kubernetes/gpuwatch.yaml", "ServiceMonitor");
    let rule = document("deploy/kubernetes/gpuwatch-rules.yaml", "PrometheusRule");
    let Some(said) = validate("servicemonitor.v1.schema.json", &monitor) else {
        return;
    };
    assert_eq!(said, "", "the ServiceMonitor");
    let said = validate("prometheusrule.v1.schema.json", &rule).unwrap();
    assert_eq!(said, "", "the PrometheusRule");

    // Negative controls: a misspelt field and durations the operator refuses.
    let mut typo = monitor.clone();
    let endpoint = &mut typo["spec"]["endpoints"][0];
    endpoint["honorLabel"] = endpoint["honorLabels"].take();
    endpoint.as_object_mut().unwrap().remove("honorLabels");
    endpoint["interval"] = "15 seconds".into();
    let said = validate("servicemonitor.v1.schema.json", &typo).unwrap();
    assert!(said.contains("honorLabel"), "{said}");
    assert!(said.contains("interval"), "{said}");
    let mut slow = rule.clone();
    slow["spec"]["groups"][0]["rules"][0]["for"] = "5 minutes".into();
    let said = validate("prometheusrule.v1.schema.json", &slow).unwrap();
    assert!(said.contains("rules/0/for"), "{said}");
}
