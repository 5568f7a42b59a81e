//! deploy/kubernetes/gpuwatch.yaml as an admin applies it: the DaemonSet's own arguments
//! start the exporter; its pods are allowed by their Namespace's Pod Security level, run on
//! every (tainted) GPU node, are locked down, and are probed in a way that survives basic
//! auth; the ServiceMonitor keeps the workload labels; the image name is a local
//! placeholder. Reads the manifest; changes nothing.

use serde_yaml_ng::Value;

use crate::serve_support::{Exporter, gpuwatch};

const MANIFEST: &str = "deploy/kubernetes/gpuwatch.yaml";

fn manifest() -> Vec<Value> {
    super::documents(MANIFEST)
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("{MANIFEST} has no {kind}"))
}

fn pod(docs: &[Value]) -> &Value {
    &kind(docs, "DaemonSet")["spec"]["template"]["spec"]
}

#[test]
fn the_daemonset_uses_host_pids_node_name_and_flags_serve_accepts() {
    let docs = manifest();
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["Namespace", "DaemonSet", "Service", "ServiceMonitor"]
    );
    let pod = pod(&docs);
    assert_eq!(pod["hostPID"].as_bool(), Some(true));
    let container = &pod["containers"][0];
    let env = container["env"].as_sequence().unwrap();
    let node = env
        .iter()
        .find(|e| e["name"] == "NODE_NAME")
        .expect("NODE_NAME");
    assert_eq!(node["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    let port = container["ports"][0]["containerPort"].as_u64().unwrap();
    assert_eq!(port, u64::from(gpuwatch::config::DEFAULT_PORT));
    // The same arguments, on loopback, start the exporter (flags exist, values are good).
    let args: Vec<String> = container["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .filter(|a| !a.starts_with("--listen"))
        .collect();
    assert_eq!(args[0], "serve");
    // On a node the kubelet's socket exists (the DaemonSet mounts it), and an explicit
    // --kubelet-socket that is not a socket is refused at start: a listening unix socket
    // stands in for it here, at the path the manifest names moved into a temporary directory.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubelet.sock");
    let _kubelet = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let kubelet_flag = "--kubelet-socket=/var/lib/kubelet/pod-resources/kubelet.sock";
    assert!(args.iter().any(|a| a == kubelet_flag), "{args:?}");
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a == kubelet_flag {
                format!("--kubelet-socket={}", socket.display())
            } else {
                a
            }
        })
        .collect();
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    Exporter::start(cmd, &args).wait_ready();
}

/// hostPID and hostPath need the `privileged` Pod Security level: the Namespace says so, and
/// every other document lives in that Namespace.
#[test]
fn the_namespace_allows_what_the_pods_need() {
    let docs = manifest();
    let ns = kind(&docs, "Namespace");
    let labels = &ns["metadata"]["labels"];
    assert_eq!(labels["pod-security.kubernetes.io/enforce"], "privileged");
    let name = ns["metadata"]["name"].as_str().unwrap();
    for doc in docs.iter().filter(|d| d["kind"] != "Namespace") {
        assert_eq!(doc["metadata"]["namespace"], name, "{:?}", doc["kind"]);
    }
}

#[test]
fn the_daemonset_is_locked_down_and_tolerates_every_taint() {
    let docs = manifest();
    let pod = pod(&docs);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
    assert_eq!(pod["priorityClassName"], "system-node-critical");
    let tolerations = pod["tolerations"].as_sequence().unwrap();
    assert!(
        tolerations
            .iter()
            .any(|t| t["operator"] == "Exists" && t["key"].is_null() && t["effect"].is_null()),
        "{tolerations:?}"
    );
    let container = &pod["containers"][0]["securityContext"];
    assert_eq!(container["allowPrivilegeEscalation"].as_bool(), Some(false));
    // Root with nothing else (issue 22): the kubelet's socket directory is `0750 root`, so
    // a non-root exporter could never name a pod; no capability, no writable root fs.
    assert_eq!(container["runAsUser"].as_u64(), Some(0));
    assert_eq!(container["capabilities"]["drop"][0], "ALL");
    assert!(container["capabilities"]["add"].is_null());
    assert_eq!(container["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert!(container["privileged"].as_bool() != Some(true));
    // Both kubelet paths gpuwatch reads, read-only: the pod-resources socket (which GPU is
    // allocated to which pod) and the pod log directories (which pod a UID is, issue 22:
    // without them no process is ever named after its pod).
    let mounts = pod["containers"][0]["volumeMounts"].as_sequence().unwrap();
    for path in [
        "/var/lib/kubelet/pod-resources",
        gpuwatch::procinfo::pods::LOG_ROOT,
    ] {
        let mount = mounts
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("{path} is not mounted: {mounts:?}"));
        assert_eq!(mount["readOnly"].as_bool(), Some(true), "{mount:?}");
    }
    // Commented out, with when to set it: only some clusters need it.
    let text = super::read(MANIFEST);
    let at = text
        .find("# runtimeClassName: nvidia")
        .expect("runtimeClassName");
    assert!(text[..at].contains("is not the\n      # node's default runtime"));
}

/// A nodeSelector schedules zero pods, silently, on nodes without its label: the label the
/// manifest selects on is the one its header tells the admin how to set.
#[test]
fn the_node_selector_is_one_the_header_says_how_to_set() {
    let docs = manifest();
    let selector = pod(&docs)["nodeSelector"].as_mapping().unwrap();
    let text = super::read(MANIFEST);
    for (key, value) in selector {
        let (key, value) = (key.as_str().unwrap(), value.as_str().unwrap());
        let how = format!("kubectl label node NODE {key}={value}");
        assert!(text.contains(&how), "the header does not say `{how}`");
    }
}

/// The image is an obviously local name: a placeholder that looks like a real registry's
/// (`ghcr.io/example/…`) gets pulled, fails, and sends the admin looking for it.
#[test]
fn the_image_is_a_local_placeholder_the_header_says_how_to_replace() {
    let docs = manifest();
    let image = pod(&docs)["containers"][0]["image"].as_str().unwrap();
    assert!(image.starts_with("localhost/"), "{image}");
    let text = super::read(MANIFEST);
    assert!(text.contains(&format!("docker build -f deploy/Dockerfile -t {image} .")));
    assert!(text.contains("docker push"));
}

/// The kubelet's httpGet probes send no credentials. With basic auth on
/// (`--web.config.file`) they got 401 and the pod was never ready; the probe pages now answer
/// without it while every other page still asks. Each probe's path, on the binary with a
/// basic-auth web config: readiness 200 after the first sample, liveness 200.
#[test]
fn the_probes_still_pass_with_basic_auth_on() {
    let docs = manifest();
    let pod = pod(&docs);
    let ports = pod["containers"][0]["ports"].as_sequence().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash_with_salt("s3cret", 4, [3; 16])
        .unwrap()
        .to_string();
    let config = dir.path().join("web.yml");
    std::fs::write(
        &config,
        format!("basic_auth_users:\n  prometheus: {hash}\n"),
    )
    .unwrap();
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    let exporter = Exporter::start(cmd, &["--web.config.file", config.to_str().unwrap()]);
    exporter.wait_ready();
    assert_eq!(exporter.get("/metrics").status, 401, "basic auth is on");
    assert_eq!(exporter.get("/api/v1/snapshot").status, 401);
    for (probe, path) in [
        ("readinessProbe", "/-/ready"),
        ("livenessProbe", "/-/healthy"),
    ] {
        let spec = &pod["containers"][0][probe]["httpGet"];
        assert_eq!(spec["path"], path, "{probe}: {spec:?}");
        let port = &spec["port"];
        assert!(
            ports.iter().any(|p| &p["name"] == port),
            "{probe} port {port:?}"
        );
        let answer = exporter.get(path);
        assert_eq!(answer.status, 200, "{probe} {path}: {}", answer.body);
    }
    // Only those exact pages: a prefix or a neighbour still asks.
    assert_eq!(exporter.get("/-/ready/x").status, 401);
    assert_eq!(exporter.get("/-/reload").status, 401);
}

/// gpuwatch's series carry the workload's namespace/pod/container: without honorLabels the
/// Operator's target labels win and every GPU looks held by the exporter's own pod.
#[test]
fn the_service_monitor_keeps_workload_labels_and_can_be_selected() {
    let docs = manifest();
    let monitor = kind(&docs, "ServiceMonitor");
    for endpoint in monitor["spec"]["endpoints"].as_sequence().unwrap() {
        assert_eq!(endpoint["honorLabels"].as_bool(), Some(true));
    }
    assert!(monitor["metadata"]["labels"]["release"].is_string());
    // The series really carry those labels (the demo has a pod on a GPU).
    let exporter = Exporter::demo(&[]);
    exporter.wait_ready();
    let text = exporter.get("/metrics").body;
    assert!(
        text.lines()
            .any(|l| l.starts_with("gpuwatch_gpu_temperature_celsius{") && l.contains("pod=\"")),
        "{text}"
    );
}

/// Kubernetes versions the manifests must validate against: the oldest kubernetes-validate
/// 1.37.0 (what .ci/run installs) carries, one in the middle, and its newest.
const KUBERNETES_VERSIONS: &[&str] = &["1.25", "1.30", "1.37"];
/// Kinds with no schema in kubernetes-validate: the Prometheus Operator's CRDs. Any other
/// "Couldn't find schema" (a misspelt apiVersion, say) fails the test.
const CRD_KINDS: &[&str] = &["ServiceMonitor", "PrometheusRule"];

/// `kubernetes-validate --strict` (unknown fields are errors) on the files: its verdict and
/// what it said.
fn kubernetes_validate(version: &str, files: &[std::path::PathBuf]) -> (bool, String) {
    let out = std::process::Command::new("kubernetes-validate")
        .args(["--strict", "-k", version])
        .args(files)
        .output()
        .expect("run kubernetes-validate");
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said.into_owned())
}

#[test]
fn every_manifest_validates_against_the_kubernetes_schemas() {
    if crate::serve_support::skip_without("kubernetes-validate", "the Kubernetes manifests") {
        return;
    }
    let dir = std::path::Path::new(super::ROOT).join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let docs: Vec<Value> = files
        .iter()
        .flat_map(|f| super::documents(f.strip_prefix(super::ROOT).unwrap().to_str().unwrap()))
        .collect();
    let core = docs
        .iter()
        .filter(|d| !CRD_KINDS.iter().any(|k| d["kind"] == *k))
        .count();
    assert!(core >= 3, "{files:?}");
    for version in KUBERNETES_VERSIONS {
        let (ok, said) = kubernetes_validate(version, &files);
        assert!(ok, "Kubernetes {version}:\n{said}");
        let passed = said
            .lines()
            .filter(|l| l.contains(" passed for resource "))
            .count();
        assert_eq!(passed, core, "Kubernetes {version}:\n{said}");
        for line in said.lines().filter(|l| l.contains("Couldn't find schema")) {
            assert!(
                CRD_KINDS
                    .iter()
                    .any(|k| line.contains(&format!("kind {k} "))),
                "Kubernetes {version}: {line}"
            );
        }
    }
    // The control: one misspelt field, and the same check fails.
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("gpuwatch.yaml");
    let text = super::read(MANIFEST).replace("hostPID: true", "hostPid: true");
    std::fs::write(&bad, text).unwrap();
    let (ok, said) = kubernetes_validate(KUBERNETES_VERSIONS[0], &[bad]);
    assert!(!ok && said.contains("'hostPid' was unexpected"), "{said}");
}
