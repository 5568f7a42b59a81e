//! What the demo's processes run under and how they were pinned to GPUs: a Slurm job, a
//! Docker container, a Kubernetes pod, systemd services, and two login-shell processes
//! started without `CUDA_VISIBLE_DEVICES` that pile up on GPU 0 — the attributions and
//! environments `procinfo` would read on a real shared server, with the names the engine,
//! the kubelet and Slurm would give. Data and one pure function of (job, GPU index).

use std::sync::Arc;

use crate::reading::workload::{
    ContainerNames, Engine, PodNames, PodQos, ProcContext, ProcEnv, SlurmNames, Workload,
};

/// What runs a job.
#[derive(Debug, Clone, Copy)]
pub(in crate::source::sim) enum Runs {
    /// A login shell: no job to name.
    Login,
    /// A Slurm job; its id is `job + block` (one job per block of eight GPUs).
    Slurm { job: u64, name: &'static str },
    /// A container named `{name}-{owner}`.
    Docker {
        name: &'static str,
        image: &'static str,
    },
    Pod {
        namespace: &'static str,
        name: &'static str,
        container: &'static str,
    },
    /// A system service, or (`user: true`) one in the owner's own service manager.
    Service { name: &'static str, user: bool },
}

/// How a job was told which GPUs to use.
#[derive(Debug, Clone, Copy)]
pub(in crate::source::sim) enum Pin {
    /// No `CUDA_VISIBLE_DEVICES`: CUDA puts its work on device 0.
    Unset,
    /// `CUDA_VISIBLE_DEVICES` naming these GPUs of the job's block of eight.
    Cuda(&'static [usize]),
    /// A container's `NVIDIA_VISIBLE_DEVICES` naming these GPUs of the block.
    Container(&'static [usize]),
}

/// A stable 64-hex id for a named demo container.
fn container_id(name: &str, block: usize) -> String {
    let seed = name.bytes().fold(block as u64 + 7, |h, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    });
    (0..4)
        .map(|k| {
            format!(
                "{:016x}",
                seed.wrapping_mul(k + 1).rotate_left(17 * k as u32)
            )
        })
        .collect()
}

/// A stable pod UID for a named demo pod.
fn pod_uid(name: &str, block: usize) -> String {
    let hex = container_id(name, block);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A name made unique per block of eight GPUs (the scenario repeats beyond 8 GPUs).
fn in_block(name: &str, block: usize) -> String {
    if block == 0 {
        name.to_string()
    } else {
        format!("{name}-{block}")
    }
}

fn workload(runs: Runs, block: usize, (user, uid): (&str, u32)) -> Option<Workload> {
    Some(match runs {
        Runs::Login => return None,
        Runs::Slurm { job, name } => Workload::Slurm {
            job: job + block as u64,
            step: Some("0".into()),
            uid: Some(uid),
            names: SlurmNames {
                name: Some(name.into()),
                user: None,
                account: Some("ml".into()),
                array: None,
            },
        },
        Runs::Docker { name, image } => Workload::Container {
            engine: Engine::Docker,
            id: container_id(name, block),
            names: ContainerNames {
                name: Some(format!("{name}-{user}")),
                image: Some(image.into()),
                ..ContainerNames::default()
            },
            delegated_to: None,
        },
        Runs::Pod {
            namespace,
            name,
            container,
        } => Workload::Pod {
            uid: pod_uid(name, block),
            qos: PodQos::Burstable,
            container: Some((Engine::Containerd, container_id(container, block))),
            names: PodNames {
                name: Some(in_block(name, block)),
                namespace: Some(namespace.into()),
                container: Some(container.into()),
            },
        },
        Runs::Service { name, user } => Workload::Service {
            name: name.into(),
            user: user.then_some(uid),
        },
    })
}

fn env(runs: Runs, pin: Pin, block: usize) -> ProcEnv {
    let list = |gpus: &[usize]| {
        gpus.iter()
            .map(|g| (block * 8 + g).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut vars = Vec::new();
    match pin {
        Pin::Unset => {}
        Pin::Cuda(gpus) => vars.push(("CUDA_VISIBLE_DEVICES", list(gpus))),
        Pin::Container(gpus) => vars.push(("NVIDIA_VISIBLE_DEVICES", list(gpus))),
    }
    if let Runs::Slurm { job, name } = runs {
        vars.push(("SLURM_JOB_ID", (job + block as u64).to_string()));
        vars.push(("SLURM_JOB_NAME", name.to_string()));
        vars.push(("NCCL_DEBUG", "WARN".into()));
        vars.push(("OMP_NUM_THREADS", "8".into()));
    }
    ProcEnv::from_vars(vars.into_iter().map(|(k, v)| (k.to_string(), v)))
}

/// What a simulated job was started from, as a parent chain on a real box would read.
fn parents(runs: Runs) -> Vec<String> {
    let chain: &[&str] = match runs {
        Runs::Login => &["sshd", "bash", "tmux: server", "bash"],
        Runs::Slurm { .. } => &["slurmd", "slurmstepd"],
        Runs::Docker { .. } | Runs::Pod { .. } => &["containerd-shim", "bash"],
        Runs::Service { .. } => &["systemd"],
    };
    chain.iter().map(|s| s.to_string()).collect()
}

/// The context of a job on GPU `i`, owned by `owner` (name, UID).
pub(in crate::source::sim) fn context(
    runs: Runs,
    pin: Pin,
    i: usize,
    owner: (&str, u32),
) -> ProcContext {
    let block = i / 8;
    ProcContext {
        workload: workload(runs, block, owner).map(Arc::new),
        env: Some(Arc::new(env(runs, pin, block))),
        parents: Some(Arc::new(parents(runs))),
    }
}
