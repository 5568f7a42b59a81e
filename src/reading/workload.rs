//! What a GPU process runs under, beyond its Unix user: a container, a Kubernetes pod, a
//! Slurm job, a systemd service or a login session. On a shared server "who holds GPU 0"
//! is as often one of these as a login (every container process shows as `root`). The ids
//! come from /proc/PID/cgroup (`procinfo::cgroup`); the names, when the engine, the
//! kubelet or Slurm answer in time, from `procinfo`'s lookups. Data only.

/// The container engine that made a container's cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    Docker,
    Podman,
    Containerd,
    CriO,
}

impl Engine {
    /// The public name (JSON, metrics labels, the JOB column's prefix).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
            Engine::Containerd => "containerd",
            Engine::CriO => "crio",
        }
    }
}

/// A pod's Kubernetes quality-of-service class, as its cgroup path names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodQos {
    Guaranteed,
    Burstable,
    BestEffort,
}

/// A container's names, when its engine told us.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerNames {
    pub name: Option<String>,
    pub image: Option<String>,
    /// `com.docker.compose.project` / `.service` labels.
    pub compose_project: Option<String>,
    pub compose_service: Option<String>,
}

/// A pod's names, when the kubelet told us.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodNames {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub container: Option<String>,
}

/// A Slurm job's facts, when `scontrol` or the process environment told us.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmNames {
    pub name: Option<String>,
    pub user: Option<String>,
    pub account: Option<String>,
    /// The array job and task this job is (`ArrayJobId`, `ArrayTaskId`): users know task 1
    /// of array 5 as `5_1`, not by its own job id.
    pub array: Option<ArrayTask>,
}

/// One task of a Slurm job array: `5_1` is task 1 of array job 5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArrayTask {
    pub job: u64,
    pub task: u32,
}

impl std::fmt::Display for ArrayTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}_{}", self.job, self.task)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// A container outside Kubernetes (Docker, Podman, or containerd/CRI-O directly).
    Container {
        engine: Engine,
        /// The full container id (64 hex digits).
        id: String,
        names: ContainerNames,
        /// The user whose delegated cgroup subtree (`user@UID.service`) holds it: a
        /// rootless engine's container, named by that user's engine only, never the
        /// system's. `None` for a container of the system's engines.
        delegated_to: Option<u32>,
    },
    /// A Kubernetes pod's container.
    Pod {
        /// The pod's UID, dashed as the API shows it.
        uid: String,
        qos: PodQos,
        /// The container's runtime and id, when the path names it.
        container: Option<(Engine, String)>,
        names: PodNames,
    },
    /// A Slurm job step.
    Slurm {
        job: u64,
        /// `0`, `1`, … or `batch`, `extern`, `interactive`.
        step: Option<String>,
        /// The job owner's UID as the cgroup path says (v1 only).
        uid: Option<u32>,
        names: SlurmNames,
    },
    /// A systemd service: a system one, or one in a user's service manager.
    Service {
        /// The unit name without `.service`.
        name: String,
        /// The user whose manager runs it (`user@UID.service`); `None` for system services.
        user: Option<u32>,
    },
    /// A login session (`session-N.scope`) or a user's own manager: a person at a shell,
    /// no job to name.
    Session { uid: Option<u32>, id: String },
}

impl Workload {
    /// The container id a container engine's API would know this workload by.
    pub fn container_id(&self) -> Option<(Engine, &str)> {
        match self {
            Workload::Container { engine, id, .. } => Some((*engine, id)),
            Workload::Pod {
                container: Some((engine, id)),
                ..
            } => Some((*engine, id)),
            _ => None,
        }
    }
}

/// The variables of a process's environment that say how it uses GPUs and which job it
/// belongs to: `CUDA_*`, `NVIDIA_*`, `SLURM_*`, `OMP_*`, `NCCL_*`, and AMD's and Intel's
/// `HIP_*`, `ROCR_*`, `ZE_*`, `ONEAPI_*` — never the rest (other users' environments hold
/// secrets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcEnv {
    vars: Vec<(String, String)>,
}

impl ProcEnv {
    /// Prefixes of the variables kept.
    pub const PREFIXES: [&'static str; 9] = [
        "CUDA_", "NVIDIA_", "SLURM_", "OMP_", "NCCL_", "HIP_", "ROCR_", "ZE_", "ONEAPI_",
    ];

    /// The variables gpuwatch reads (pinning, CUDA's device order, a Slurm job's names):
    /// kept before any other when the budget below runs short.
    pub const USED: [&'static str; 15] = [
        "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER",
        "NVIDIA_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "HIP_VISIBLE_DEVICES",
        "ZE_AFFINITY_MASK",
        "ONEAPI_DEVICE_SELECTOR",
        "SLURM_JOB_ID",
        "SLURM_JOBID",
        "SLURM_JOB_NAME",
        "SLURM_JOB_USER",
        "SLURM_JOB_ACCOUNT",
        "SLURM_STEP_ID",
        "SLURM_ARRAY_JOB_ID",
        "SLURM_ARRAY_TASK_ID",
    ];
    /// The longest value kept; a longer one is cut there and ends with `…`. Real values
    /// are a few dozen bytes (eight GPU UUIDs are 360).
    pub const MAX_VALUE: usize = 4 << 10;
    /// The longest name kept; a longer variable is dropped.
    pub const MAX_NAME: usize = 256;
    /// What one process's kept variables may hold in all (names and values): a process
    /// with a megabyte of `CUDA_*` variables must not make a snapshot too big for
    /// `--remote` watchers to take.
    pub const MAX_TOTAL: usize = 16 << 10;

    /// Keeps only the GPU- and job-related variables, sorted by name, each value cut at
    /// `MAX_VALUE` and all of them within `MAX_TOTAL` (the `USED` ones first).
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(k, _)| k.len() <= Self::MAX_NAME)
            .filter(|(k, _)| Self::PREFIXES.iter().any(|p| k.starts_with(p)))
            .map(|(k, v)| (k, cut(v, Self::MAX_VALUE)))
            .collect();
        vars.sort();
        vars.dedup_by(|a, b| a.0 == b.0);
        let mut keep = vec![false; vars.len()];
        let mut spent = 0;
        for used_pass in [true, false] {
            for (i, (k, v)) in vars.iter().enumerate() {
                let size = k.len() + v.len();
                if Self::USED.contains(&k.as_str()) == used_pass && spent + size <= Self::MAX_TOTAL
                {
                    keep[i] = true;
                    spent += size;
                }
            }
        }
        let mut keep = keep.into_iter();
        vars.retain(|_| keep.next() == Some(true));
        ProcEnv { vars }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }
}

/// `value` cut to at most `max` bytes at a character boundary, ending with `…` when cut.
fn cut(mut value: String, max: usize) -> String {
    if value.len() > max {
        let mut end = max - '…'.len_utf8();
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        value.truncate(end);
        value.push('…');
    }
    value
}

/// A GPU's allocation to a Kubernetes pod's container, as the kubelet reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAllocation {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// The GPU's MIG instance (`MIG-…`) allocated, when the pod was given an instance and
    /// not the whole GPU.
    pub instance: Option<crate::reading::GpuId>,
}

/// What runs a process beyond its user: its workload (from the cgroup) and the GPU-related
/// part of its environment (`None`: not readable — another user's process, unless root).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcContext {
    /// Shared: rows are rebuilt every sample, and a workload never changes for a process.
    pub workload: Option<std::sync::Arc<Workload>>,
    pub env: Option<std::sync::Arc<ProcEnv>>,
    /// The names of its ancestors, outermost first, ending with its parent (`sshd`,
    /// `bash`, `tmux: server`); `None` when not read (another host, a recording). Read
    /// once, with the rest of the context: a parent that exits later is not noticed.
    pub parents: Option<std::sync::Arc<Vec<String>>>,
}
