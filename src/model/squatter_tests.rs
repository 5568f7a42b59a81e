//! The squatter warning through the GPU's whole evaluation: a pod on a GPU allocated to
//! another pod warns, the allocated pod does not, and without the kubelet's answer nothing does.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::history::GpuHistory;
use crate::model::warnings::{Alarm, Severity, Thresholds, WarningKind, evaluate};
use crate::reading::workload::{PodAllocation, PodNames, PodQos, ProcContext, Workload};
use crate::reading::{GpuId, GpuReading, HostProc, ProcDetails, ProcKind, ProcReading};
use crate::units::Bytes;

const SQUATTER: &str = "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const TRAINER: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

fn gpu(allocated_to: &[&str]) -> GpuReading {
    let mut g = GpuReading::absent(GpuId("GPU-a".into()), 0, "g");
    g.allocations = allocated_to
        .iter()
        .map(|pod| PodAllocation {
            namespace: "ml".into(),
            pod: (*pod).into(),
            container: "main".into(),
            instance: None,
        })
        .collect();
    g
}

fn pod_proc(pid: u32, uid: &str, name: Option<&str>, vram_mib: Option<u64>) -> ProcReading {
    let pod = Workload::Pod {
        uid: uid.into(),
        qos: PodQos::BestEffort,
        container: None,
        names: PodNames {
            name: name.map(Into::into),
            namespace: name.map(|_| "ml".into()),
            container: None,
        },
    };
    ProcReading {
        peak_gpu_memory: None,
        pid,
        gpu: GpuId("GPU-a".into()),
        kind: ProcKind::Compute,
        gpu_memory: vram_mib.map(|m| Bytes(m << 20)),
        sm_util: None,
        host: HostProc::Visible(ProcDetails {
            user: "root".into(),
            uid: 0,
            command: "python".into(),
            cpu_percent: None,
            host_memory: None,
            started: SystemTime::UNIX_EPOCH,
            context: ProcContext {
                workload: Some(Arc::new(pod)),
                env: None,
                parents: None,
            },
        }),
    }
}

/// The warnings of kind `squatter` the GPU raises with these processes on it.
fn squatters(g: &GpuReading, procs: &[ProcReading]) -> Vec<(Severity, WarningKind)> {
    let on: Vec<&ProcReading> = procs.iter().collect();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let hist = GpuHistory::new(10);
    let (_, w) = evaluate(
        &Alarm::default(),
        g,
        &on,
        &hist,
        &Thresholds::default(),
        now,
    );
    w.into_iter()
        .filter(|w| matches!(w.kind, WarningKind::Squatter { .. }))
        .map(|w| (w.severity, w.kind))
        .collect()
}

#[test]
fn a_pod_on_a_gpu_allocated_to_another_is_a_squatter() {
    // Two of the squatter's processes: one warning, their VRAM summed.
    let procs = [
        pod_proc(7, SQUATTER, Some("squatter"), Some(2048)),
        pod_proc(8, SQUATTER, Some("squatter"), Some(717)),
        pod_proc(9, TRAINER, Some("trainer-0"), Some(30_000)),
    ];
    assert_eq!(
        squatters(&gpu(&["trainer-0"]), &procs),
        [(
            Severity::Warning,
            WarningKind::Squatter {
                uid: SQUATTER.into(),
                namespace: Some("ml".into()),
                pod: Some("squatter".into()),
                vram: Some(Bytes(2765 << 20)),
                allocated_to: vec!["ml/trainer-0".into()],
            }
        )]
    );
}

#[test]
fn the_allocated_pod_and_unnamed_pods_are_not_squatters() {
    let rightful = [pod_proc(9, TRAINER, Some("trainer-0"), Some(30_000))];
    assert!(squatters(&gpu(&["trainer-0"]), &rightful).is_empty());
    // One of several pods the GPU is shared with (time-slicing) is not a squatter either.
    let shared = [pod_proc(7, SQUATTER, Some("squatter"), Some(100))];
    assert!(squatters(&gpu(&["trainer-0", "squatter"]), &shared).is_empty());
    // A pod whose UID no record names could be the allocated pod itself: no accusation.
    let unnamed = [pod_proc(7, SQUATTER, None, Some(2765))];
    assert!(squatters(&gpu(&["trainer-0"]), &unnamed).is_empty());
}

#[test]
fn without_the_kubelets_answer_there_is_no_squatter() {
    let procs = [pod_proc(7, SQUATTER, Some("squatter"), Some(2765))];
    assert!(squatters(&gpu(&[]), &procs).is_empty());
}
