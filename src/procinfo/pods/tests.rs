//! The pod directory against a stand-in kubelet, pod names by UID and MIG allocations (the
//! squatter is a warning: `model::squatter`).

use super::*;
use crate::procinfo::kubelet::stand_in::{grpc_ok, serve};
use crate::procinfo::kubelet::tests::node_response;

/// Waits (bounded) until the poller has stored an answer.
fn settled(dir: &PodDirectory, uuid: &str) -> Vec<PodAllocation> {
    for _ in 0..100 {
        let got = dir.allocations(uuid, 99, &[]);
        if !got.is_empty() {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Vec::new()
}

#[test]
fn gpus_map_to_the_pods_the_kubelet_allocated_them_to() {
    let kubelet = serve(grpc_ok(&node_response()));
    let dir = PodDirectory::new(kubelet.socket.clone(), Duration::from_secs(60));
    let trainer = settled(&dir, "GPU-11111111-aaaa");
    assert_eq!(
        trainer,
        [PodAllocation {
            namespace: "ml".into(),
            pod: "trainer-0".into(),
            container: "trainer".into(),
            instance: None,
        }]
    );
    assert_eq!(dir.allocations("GPU-22222222-bbbb", 1, &[]), trainer);
    assert!(dir.allocations("GPU-99999999-none", 3, &[]).is_empty());
}

/// A kubelet that answers once and then goes away: the failure is the status, said
/// once however many polls fail, and counted per failed poll.
#[test]
fn a_failure_is_kept_and_said_once_per_change() {
    let kubelet = serve(grpc_ok(&node_response()));
    let mut dir = PodDirectory::new(kubelet.socket.clone(), Duration::from_millis(20));
    let first = dir.status().expect("the socket was there");
    assert_eq!(first.state, LookupState::Ok);
    assert_eq!(dir.news(), None, "a working kubelet is not news");
    let mut failed = None;
    for _ in 0..200 {
        match dir.status() {
            Some(s) if s.errors >= 2 => {
                failed = Some(s);
                break;
            }
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let failed = failed.expect("later polls fail: nothing listens any more");
    let why = failed.error().expect("the error is kept").to_string();
    assert!(why.contains("nothing listens on"), "{why}");
    assert_eq!(dir.news(), Some(format!("kubelet lookup failed: {why}")));
    assert_eq!(dir.news(), None, "said once, not every poll");
    assert!(dir.allocations("GPU-11111111-aaaa", 0, &[]).is_empty());
}

/// The kubelet lists a MIG allocation by the instance's own UUID: asked with the GPU's
/// UUID alone, the instance had no pod and `pick` offered it.
#[test]
fn mig_instances_are_matched_by_their_own_uuid() {
    let kubelet = serve(grpc_ok(&node_response()));
    let dir = PodDirectory::new(kubelet.socket.clone(), Duration::from_secs(60));
    let _ = settled(&dir, "GPU-11111111-aaaa");
    let mig = GpuId("MIG-33333333-cccc".into());
    let other = GpuId("MIG-44444444-dddd".into());
    assert_eq!(
        dir.allocations("GPU-55555555-eeee", 4, &[other.clone(), mig.clone()]),
        [PodAllocation {
            namespace: "serving".into(),
            pod: "infer-7f9c".into(),
            container: "server".into(),
            instance: Some(mig),
        }]
    );
    assert!(dir.allocations("GPU-55555555-eeee", 4, &[other]).is_empty());
}

const SQUATTER: &str = "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const TRAINER: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

fn pod_proc(gpu: &GpuId, uid: &str) -> ProcReading {
    use crate::reading::workload::{PodNames, PodQos, ProcContext};
    use crate::reading::{ProcDetails, ProcKind};
    let pod = Workload::Pod {
        uid: uid.into(),
        qos: PodQos::BestEffort,
        container: None,
        names: PodNames::default(),
    };
    ProcReading {
        peak_gpu_memory: None,
        pid: 7,
        gpu: gpu.clone(),
        kind: ProcKind::Compute,
        gpu_memory: None,
        sm_util: None,
        host: HostProc::Visible(ProcDetails {
            user: "root".into(),
            uid: 0,
            command: "python".into(),
            cpu_percent: None,
            host_memory: None,
            started: std::time::SystemTime::UNIX_EPOCH,
            context: ProcContext {
                workload: Some(Arc::new(pod)),
                env: None,
                parents: None,
            },
        }),
    }
}

fn pod_names(p: &ProcReading) -> crate::reading::workload::PodNames {
    match p.details().and_then(|d| d.context.workload.as_deref()) {
        Some(Workload::Pod { names, .. }) => names.clone(),
        other => panic!("{other:?}"),
    }
}

/// Issue 22: a second pod on trainer-0's GPU (no GPU requested, all GPUs visible) was
/// named `ml/trainer-0` because the GPU had one allocation. A pod is named only after
/// the pod its UID belongs to.
#[test]
fn a_pod_process_is_named_after_its_own_pod_never_the_gpus() {
    let logs = tempfile::tempdir().unwrap();
    std::fs::create_dir(logs.path().join(format!("ml_trainer-0_{TRAINER}"))).unwrap();
    std::fs::create_dir(logs.path().join("not-a-pod-dir")).unwrap();
    let uids = read_log_dirs(logs.path());
    assert_eq!(uids.len(), 1, "{uids:?}");
    let id = GpuId("GPU-a".into());
    let mut gpu = GpuReading::absent(id.clone(), 0, "g");
    gpu.allocations = vec![PodAllocation {
        namespace: "ml".into(),
        pod: "trainer-0".into(),
        container: "trainer".into(),
        instance: None,
    }];
    let gpus = std::slice::from_ref(&gpu);
    let own = name_pod(pod_proc(&id, TRAINER), gpus, &uids);
    let names = pod_names(&own);
    assert_eq!(
        (names.namespace.as_deref(), names.name.as_deref()),
        (Some("ml"), Some("trainer-0"))
    );
    assert_eq!(names.container.as_deref(), Some("trainer"));
    let squatter = name_pod(pod_proc(&id, SQUATTER), gpus, &uids);
    assert_eq!(pod_names(&squatter).name, None, "not trainer-0");
    // Without any record, not even the allocated pod's own process is guessed at.
    let unknown = name_pod(pod_proc(&id, TRAINER), gpus, &PodsByUid::new());
    assert_eq!(pod_names(&unknown).name, None);
    // Its own name on a GPU allocated to nobody (or to others): named, no container.
    let bare = GpuReading::absent(id.clone(), 0, "g");
    let named = name_pod(pod_proc(&id, TRAINER), std::slice::from_ref(&bare), &uids);
    assert_eq!(pod_names(&named).name.as_deref(), Some("trainer-0"));
    assert_eq!(pod_names(&named).container, None);
}

#[test]
fn no_socket_means_no_pods_and_stopping_is_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let pods = PodDirectory::new(dir.path().join("kubelet.sock"), Duration::from_secs(60));
    assert!(pods.allocations("GPU-11111111-aaaa", 0, &[]).is_empty());
    assert_eq!(
        pods.status(),
        None,
        "off Kubernetes there is nothing to report"
    );
    let start = std::time::Instant::now();
    drop(pods);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "the poller stops on drop"
    );
    assert!(
        PodDirectory::disabled()
            .allocations("GPU-x", 0, &[])
            .is_empty()
    );
}

/// A socket that cannot be looked at is not proof of "not Kubernetes": the kubelet's
/// directory is `0750 root`, and a non-root gpuwatch got EACCES, took it for absence and
/// said nothing. (Root passes any mode, so the test makes stat fail another way: a
/// file where a directory should be.)
#[test]
fn a_socket_that_cannot_be_looked_at_is_asked_and_its_failure_kept() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let socket = file.path().join("kubelet.sock");
    assert!(!socket.exists(), "Path::exists says no");
    let dir = PodDirectory::new(socket, Duration::from_secs(60));
    let status = dir.status().expect("asked, so there is a status");
    assert!(status.error().is_some(), "{status:?}");
    assert_eq!(status.errors, 1);
}
