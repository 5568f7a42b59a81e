//! Who holds each GPU (and each MIG instance), derived once per sample from the process rows: VRAM per user, the
//! total the listed processes account for, and how many there are. The panels, the header
//! and `pick` read this instead of scanning every process for every GPU on every frame.

use std::collections::HashMap;

use super::procs::ProcRow;
use super::users::Total;
use crate::reading::workload::PodAllocation;
use crate::reading::{GpuId, GpuReading};
use crate::units::Bytes;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holders {
    /// (owner, VRAM) per owner, largest first: a job (`slurm 48121 (alice)`), else a user;
    /// a process whose user is unknown (another PID namespace) is listed as `pid N`.
    /// Unknown VRAM is counted apart ([`Total`]), never as 0.
    pub owners: Vec<(String, Total<Bytes>)>,
    /// VRAM the listed processes hold together; `None` when any of them is unknown.
    pub listed: Option<Bytes>,
    pub processes: usize,
    /// Pods the kubelet allocated this GPU to and none of whose processes are listed
    /// (their PIDs are not visible from here): `k8s ml/bert-7f9c`. They hold the GPU too.
    pub pods: Vec<String>,
}

/// Who a row counts as on the owners line: its job with the user in brackets
/// (`slurm 48121 (alice)`: a Slurm job's own user, whoever runs the process), the user, or
/// the PID when neither is known.
pub fn owner_name(row: &ProcRow) -> String {
    let job = row
        .context
        .workload
        .as_deref()
        .and_then(super::jobs::short_label);
    let user = super::owners::job_user(row).or(row.user.as_deref());
    match (job, user) {
        (Some(job), Some(user)) => format!("{job} ({user})"),
        (Some(job), None) => job,
        (None, Some(user)) => user.to_string(),
        (None, None) => format!("pid {}", row.key.pid),
    }
}

/// Adds the GPUs' pod allocations that no listed process accounts for: the pod is an owner
/// (with the VRAM no listed process accounts for), and the GPU is held, not free. A MIG
/// instance's allocation holds that instance (as `pick` asks about it). On a GPU allocated
/// whole to one pod, the processes not visible from here (gpuwatch in its own container) are
/// that pod's: they count for it, not as anonymous `pid N` owners.
pub fn add_pods(holders: &mut HashMap<GpuId, Holders>, gpus: &[GpuReading], rows: &[ProcRow]) {
    for gpu in gpus.iter().filter(|g| !g.allocations.is_empty()) {
        let whole: Vec<&PodAllocation> = gpu
            .allocations
            .iter()
            .filter(|a| a.instance.is_none())
            .collect();
        let h = holders.entry(gpu.id.clone()).or_insert_with(|| Holders {
            listed: Some(Bytes(0)),
            ..Holders::default()
        });
        if let [alloc] = whole.as_slice() {
            let hidden = rows.iter().filter(|r| {
                r.key.gpu == gpu.id && r.user.is_none() && r.context.workload.is_none()
            });
            for row in hidden {
                let name = owner_name(row);
                h.owners.retain(|(n, _)| *n != name);
                let label = pod_label(alloc);
                match h.owners.iter_mut().find(|(n, _)| *n == label) {
                    Some((_, total)) => total.add(row.vram),
                    None => {
                        let mut total = Total::default();
                        total.add(row.vram);
                        h.owners.push((label, total));
                    }
                }
            }
        }
        for alloc in &whole {
            add_pod(h, gpu.memory_used, alloc);
        }
        for alloc in gpu.allocations.iter().filter(|a| a.instance.is_some()) {
            let Some(instance) = &alloc.instance else {
                continue;
            };
            let used = gpu
                .mig_devices
                .iter()
                .find(|m| m.id == *instance)
                .and_then(|m| m.memory_used);
            let h = holders.entry(instance.clone()).or_insert_with(|| Holders {
                listed: Some(Bytes(0)),
                ..Holders::default()
            });
            add_pod(h, used, alloc);
        }
    }
    for h in holders.values_mut() {
        sort_owners(&mut h.owners);
    }
}

/// Largest known VRAM first, ties by name.
fn sort_owners(owners: &mut [(String, Total<Bytes>)]) {
    owners.sort_by(|a, b| b.1.known.cmp(&a.1.known).then_with(|| a.0.cmp(&b.0)));
}

fn pod_label(alloc: &PodAllocation) -> String {
    format!("k8s {}/{}", alloc.namespace, alloc.pod)
}

/// One allocation on a holder of `used` VRAM: an owner unless a listed process names it.
fn add_pod(h: &mut Holders, used: Option<Bytes>, alloc: &PodAllocation) {
    let label = pod_label(alloc);
    // A listed process of the pod already names it (`k8s ml/bert-7f9c (alice)`).
    let listed = |name: &String| {
        name == &label
            || name
                .strip_prefix(&label)
                .is_some_and(|r| r.starts_with(" ("))
    };
    if h.owners.iter().any(|(name, _)| listed(name)) || h.pods.contains(&label) {
        // Hidden processes counted for it above: it is listed, and held.
        if !h.pods.contains(&label) && h.owners.iter().any(|(n, _)| *n == label) {
            h.pods.push(label);
        }
        return;
    }
    // What no listed process accounts for: unknown when the GPU's use or a listed
    // process's is.
    let rest = used
        .zip(h.listed)
        .map(|(used, listed)| used.saturating_sub(listed));
    let mut total = Total::default();
    total.add(rest);
    h.owners.push((label.clone(), total));
    h.pods.push(label);
}

/// Who holds each GPU, and each MIG instance (keyed by its `MIG-` UUID) as well: the
/// panels' instance lines and `pick` ask about an instance the way they ask about a GPU.
pub fn by_gpu(rows: &[ProcRow]) -> HashMap<GpuId, Holders> {
    let mut out: HashMap<GpuId, Holders> = HashMap::new();
    // Sources list each GPU's processes together: one lookup of the GPU (a UUID hashed
    // with SipHash) per run of rows, not per row (issue 25: 1,000 a sample at 64 GPUs).
    for run in rows.chunk_by(|a, b| a.key.gpu == b.key.gpu) {
        let h = slot(&mut out, &run[0].key.gpu);
        for row in run {
            add_row(h, row);
        }
        for row in run {
            if let Some(instance) = &row.instance {
                add_row(slot(&mut out, &instance.id), row);
            }
        }
    }
    for h in out.values_mut() {
        sort_owners(&mut h.owners);
    }
    out
}

/// `key`'s holders, made empty the first time; looked up by reference, so the id is cloned
/// once per GPU, not once per row.
fn slot<'m>(out: &'m mut HashMap<GpuId, Holders>, key: &GpuId) -> &'m mut Holders {
    if !out.contains_key(key) {
        let empty = Holders {
            listed: Some(Bytes(0)),
            ..Holders::default()
        };
        out.insert(key.clone(), empty);
    }
    out.get_mut(key).expect("inserted just above")
}

fn add_row(h: &mut Holders, row: &ProcRow) {
    h.processes += 1;
    h.listed = match (h.listed, row.vram) {
        (Some(total), Some(v)) => Some(total + v),
        _ => None,
    };
    let name = owner_name(row);
    match h.owners.iter_mut().find(|(u, _)| *u == name) {
        Some((_, total)) => total.add(row.vram),
        None => {
            let mut total = Total::default();
            total.add(row.vram);
            h.owners.push((name, total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::workload::PodAllocation;

    #[test]
    fn a_pod_the_kubelet_names_holds_what_no_listed_process_accounts_for() {
        let mut gpu = GpuReading::absent(GpuId("GPU-a".into()), 0, "g");
        gpu.memory_used = Some(Bytes::from_gib(10.0));
        gpu.allocations = vec![PodAllocation {
            namespace: "ml".into(),
            pod: "trainer-0".into(),
            container: "trainer".into(),
            instance: None,
        }];
        let mut holders = by_gpu(&[]);
        add_pods(&mut holders, std::slice::from_ref(&gpu), &[]);
        let h = &holders[&gpu.id];
        assert_eq!(
            h.owners,
            [("k8s ml/trainer-0".to_string(), Bytes::from_gib(10.0).into())]
        );
        assert_eq!(h.pods, ["k8s ml/trainer-0"]);
        // Twice is still once.
        add_pods(&mut holders, std::slice::from_ref(&gpu), &[]);
        assert_eq!(holders[&gpu.id].owners.len(), 1);
        // A listed process of another pod whose name merely starts the same is not this pod.
        let mut other = by_gpu(&[]);
        other.insert(
            gpu.id.clone(),
            Holders {
                owners: vec![(
                    "k8s ml/trainer-01 (bob)".into(),
                    Bytes::from_gib(1.0).into(),
                )],
                listed: Some(Bytes::from_gib(1.0)),
                processes: 1,
                pods: Vec::new(),
            },
        );
        add_pods(&mut other, std::slice::from_ref(&gpu), &[]);
        assert_eq!(other[&gpu.id].pods, ["k8s ml/trainer-0"]);
    }

    fn hidden(pid: u32, gpu: &GpuId, gib: f64) -> ProcRow {
        use crate::reading::{HostProc, ProcKind, ProcReading};
        let reading = ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: gpu.clone(),
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(gib)),
            sm_util: None,
            host: HostProc::OtherNamespace,
        };
        ProcRow::from_reading(&reading, 0, std::time::SystemTime::UNIX_EPOCH)
    }

    /// `by_gpu` looks a GPU up once per run of its rows: rows that come back to a GPU after
    /// another's (a source that does not group them) still all count for it.
    #[test]
    fn rows_of_two_gpus_interleaved_count_as_when_grouped() {
        let (a, b) = (GpuId("GPU-a".into()), GpuId("GPU-b".into()));
        let interleaved = [
            hidden(1, &a, 1.0),
            hidden(2, &b, 2.0),
            hidden(3, &a, 4.0),
            hidden(4, &b, 8.0),
            hidden(5, &a, 16.0),
        ];
        let holders = by_gpu(&interleaved);
        assert_eq!(holders.len(), 2);
        assert_eq!(holders[&a].processes, 3);
        assert_eq!(holders[&a].listed, Some(Bytes::from_gib(21.0)));
        assert_eq!(holders[&b].processes, 2);
        assert_eq!(holders[&b].listed, Some(Bytes::from_gib(10.0)));
        let mut grouped = interleaved.clone();
        grouped.sort_by_key(|r| r.key.gpu.clone());
        let again = by_gpu(&grouped);
        for gpu in [&a, &b] {
            assert_eq!(again[gpu].owners, holders[gpu].owners);
            assert_eq!(again[gpu].listed, holders[gpu].listed);
        }
    }

    /// gpuwatch in its own container without `--pid=host`: the pod's own process on the GPU
    /// allocated to it was an anonymous `pid 4124` owner, the pod only the leftover.
    #[test]
    fn invisible_processes_on_a_gpu_allocated_whole_to_one_pod_are_that_pods() {
        let mut gpu = GpuReading::absent(GpuId("GPU-a".into()), 0, "g");
        gpu.memory_used = Some(Bytes::from_gib(3.5));
        gpu.allocations = vec![PodAllocation {
            namespace: "ml".into(),
            pod: "trainer-0".into(),
            container: "trainer".into(),
            instance: None,
        }];
        let rows = [hidden(4124, &gpu.id, 3.25)];
        let mut holders = by_gpu(&rows);
        add_pods(&mut holders, std::slice::from_ref(&gpu), &rows);
        let h = &holders[&gpu.id];
        assert_eq!(
            h.owners,
            [("k8s ml/trainer-0".to_string(), Bytes::from_gib(3.25).into())]
        );
        assert_eq!(h.pods, ["k8s ml/trainer-0"]);
        // Two pods on the GPU: whose the hidden process is cannot be told.
        gpu.allocations.push(PodAllocation {
            pod: "other".into(),
            ..gpu.allocations[0].clone()
        });
        let mut holders = by_gpu(&rows);
        add_pods(&mut holders, std::slice::from_ref(&gpu), &rows);
        assert!(holders[&gpu.id].owners.iter().any(|(n, _)| n == "pid 4124"));
    }

    #[test]
    fn a_mig_instance_allocated_to_a_pod_is_held_by_it() {
        let mig = GpuId("MIG-33333333-cccc".into());
        let mut gpu = GpuReading::absent(GpuId("GPU-a".into()), 0, "g");
        gpu.allocations = vec![PodAllocation {
            namespace: "serving".into(),
            pod: "infer-7f9c".into(),
            container: "server".into(),
            instance: Some(mig.clone()),
        }];
        let mut holders = by_gpu(&[]);
        add_pods(&mut holders, std::slice::from_ref(&gpu), &[]);
        assert_eq!(holders[&mig].pods, ["k8s serving/infer-7f9c"]);
        assert!(
            holders[&gpu.id].pods.is_empty(),
            "the rest of the GPU is not the pod's"
        );
    }
}
