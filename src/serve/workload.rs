//! Workload labels on the exported series, named as dcgm-exporter names them so existing
//! dashboards and alerts keep working: `container`, `pod`, `namespace` for Kubernetes,
//! `hpc_job` for Slurm. A bare container (Docker, Podman, outside Kubernetes) is
//! `docker_container`: dcgm-exporter's `container` is a pod's container, and a dashboard
//! joining on it must not meet a name no pod has. Per-process series carry their
//! process's; per-GPU series carry a pod's when one pod holds the whole GPU (dcgm-exporter
//! attaches the pod a GPU is allocated to). Pure.

use std::collections::HashMap;

use crate::model::jobs;
use crate::reading::GpuId;
use crate::reading::workload::Workload;
use crate::state::State;

use super::text::Labels;

/// The labels naming `w`; nothing for services and sessions (the `user` label says it).
pub(super) fn labels(w: &Workload) -> Labels {
    match w {
        Workload::Pod { uid, names, .. } => {
            // The pod's name when the kubelet or engine told it; its UID otherwise, so two
            // pods never share a series.
            let mut l = vec![("pod", names.name.clone().unwrap_or_else(|| uid.clone()))];
            l.extend(names.namespace.clone().map(|n| ("namespace", n)));
            l.extend(names.container.clone().map(|c| ("container", c)));
            l
        }
        Workload::Container { id, names, .. } => {
            vec![("docker_container", jobs::container_name(id, names))]
        }
        Workload::Slurm { job, .. } => vec![("hpc_job", job.to_string())],
        Workload::Service { .. } | Workload::Session { .. } => Vec::new(),
    }
}

/// For each GPU held by processes of exactly one pod (and nothing else), or allocated by the
/// kubelet to exactly one pod, that pod's labels.
pub(super) fn gpu_pods(state: &State) -> HashMap<GpuId, Labels> {
    let mut seen: HashMap<&GpuId, Option<&Workload>> = HashMap::new();
    for row in &state.model.procs().all {
        let pod = row
            .context
            .workload
            .as_deref()
            .filter(|w| matches!(w, Workload::Pod { .. }));
        let entry = seen.entry(&row.key.gpu).or_insert(pod);
        let same = match (*entry, pod) {
            (Some(Workload::Pod { uid: a, .. }), Some(Workload::Pod { uid: b, .. })) => a == b,
            _ => false,
        };
        if !same {
            *entry = None;
        }
    }
    let mut out: HashMap<GpuId, Labels> = seen
        .into_iter()
        .filter_map(|(id, pod)| pod.map(|w| (id.clone(), labels(w))))
        .collect();
    // The kubelet's word for GPUs whose pod's processes are not visible from here.
    for g in state.model.gpus() {
        if let ([a], false) = (g.allocations.as_slice(), out.contains_key(&g.id)) {
            out.insert(
                g.id.clone(),
                vec![
                    ("pod", a.pod.clone()),
                    ("namespace", a.namespace.clone()),
                    ("container", a.container.clone()),
                ],
            );
        }
    }
    out
}
