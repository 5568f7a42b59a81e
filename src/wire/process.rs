//! One process on one GPU in the public JSON document — the same shape in a snapshot and
//! in a recording. Owns the names of the process type and the conversion to and from
//! `reading::ProcReading`; the visibility names are `reading::Visibility`'s (the one list).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::workload::WorkloadDoc;
use super::{epoch, epoch_secs};
use crate::reading::workload::{ProcContext, ProcEnv};
use crate::reading::{GpuId, HostProc, ProcDetails, ProcKind, ProcReading, Visibility};
use crate::units::{Bytes, Percent};

/// Compute, graphics, or both — nvidia-smi's `C`, `G`, `C+G`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProcType {
    #[serde(rename = "C")]
    Compute,
    #[serde(rename = "G")]
    Graphics,
    #[serde(rename = "C+G")]
    Both,
}

impl From<ProcKind> for ProcType {
    fn from(k: ProcKind) -> Self {
        match k {
            ProcKind::Compute => ProcType::Compute,
            ProcKind::Graphics => ProcType::Graphics,
            ProcKind::Both => ProcType::Both,
        }
    }
}

impl From<ProcType> for ProcKind {
    fn from(t: ProcType) -> Self {
        match t {
            ProcType::Compute => ProcKind::Compute,
            ProcType::Graphics => ProcKind::Graphics,
            ProcType::Both => ProcKind::Both,
        }
    }
}

/// A process's visibility under the names `reading::Visibility` gives it (defined once,
/// there): `visible`, `other_namespace`, `hidden`, `exited`.
pub(super) mod visibility_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::reading::Visibility;

    pub fn serialize<S: Serializer>(v: &Visibility, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Visibility, D::Error> {
        let name = String::deserialize(d)?;
        Visibility::from_name(&name).ok_or_else(|| {
            let known: Vec<&str> = Visibility::ALL.iter().map(|v| v.name()).collect();
            serde::de::Error::custom(format!(
                "unknown visibility {name:?}, expected one of {}",
                known.join(", ")
            ))
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proc {
    pub gpu_uuid: String,
    /// `null` only if the GPU is not in the same document.
    pub gpu_index: Option<u32>,
    pub pid: u32,
    /// User name (or the UID as text when it has no name); `null` unless visible.
    pub user: Option<String>,
    pub uid: Option<u32>,
    #[serde(rename = "type")]
    pub kind: ProcType,
    /// Bytes of VRAM (nvidia-smi `used_gpu_memory`).
    pub used_gpu_memory: Option<u64>,
    /// The most VRAM the process has held on this GPU since gpuwatch first saw it, in
    /// bytes (schema 2.2); `null` when unknown (an older document, or no reading yet).
    #[serde(default)]
    pub peak_gpu_memory: Option<u64>,
    /// % of the GPU's SM time over the last interval.
    pub utilization_sm: Option<u32>,
    /// % of one core over the last interval (can exceed 100).
    pub cpu_percent: Option<f32>,
    /// Bytes of host RAM (resident).
    pub host_memory: Option<u64>,
    /// Start time, seconds since the Unix epoch: with the PID, the process identity.
    pub started: Option<f64>,
    /// Seconds since it started, at the document's time.
    pub elapsed: Option<f64>,
    pub command: Option<String>,
    #[serde(with = "visibility_name")]
    pub visibility: Visibility,
    #[serde(flatten)]
    pub context: ContextDoc,
}

/// What a process runs under and how it was told which GPUs to use (schema 2.1). Absent
/// from 2.0 documents, which read as "unknown".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextDoc {
    /// A container, pod, Slurm job, service or session; `null` when none is recognised or
    /// the process is not visible.
    #[serde(default)]
    pub workload: Option<WorkloadDoc>,
    /// The GPU-related part of its environment (`CUDA_*`, `NVIDIA_*`, `SLURM_*`, `OMP_*`,
    /// `NCCL_*` only); `null` when it could not be read (another user's process, unless
    /// gpuwatch runs as root) or the process is not visible.
    #[serde(default)]
    pub environment: Option<std::collections::BTreeMap<String, String>>,
    /// Its ancestors' names, outermost first, ending with its parent (schema 2.2); `null`
    /// when not read.
    #[serde(default)]
    pub parents: Option<Vec<String>>,
}

impl ContextDoc {
    /// The fields for a visible process's context; all `null` for `None` (not visible).
    pub fn of(context: Option<&ProcContext>) -> ContextDoc {
        ContextDoc {
            workload: context
                .and_then(|c| c.workload.as_deref())
                .map(WorkloadDoc::from_workload),
            environment: context.and_then(|c| c.env.as_deref()).map(|e| {
                e.vars()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            parents: context.and_then(|c| c.parents.as_deref()).cloned(),
        }
    }

    fn into_context(self) -> ProcContext {
        ProcContext {
            workload: self
                .workload
                .and_then(WorkloadDoc::into_workload)
                .map(Arc::new),
            // Filtered again: a document cannot smuggle other variables in.
            env: self
                .environment
                .map(|vars| Arc::new(ProcEnv::from_vars(vars))),
            parents: self.parents.map(Arc::new),
        }
    }
}

impl Proc {
    /// A process reading as the document carries it; `now` is the sample's time (for
    /// `elapsed`) and `gpu_index` the index of its GPU in the same sample.
    pub fn from_reading(p: &ProcReading, gpu_index: Option<u32>, now: SystemTime) -> Proc {
        let d = p.details();
        let started = d.map(|d| d.started);
        Proc {
            gpu_uuid: p.gpu.0.clone(),
            gpu_index,
            pid: p.pid,
            user: d.map(|d| String::from(&*d.user)),
            uid: d.map(|d| d.uid),
            kind: p.kind.into(),
            used_gpu_memory: p.gpu_memory.map(|b| b.0),
            // Only the caller knows the process's past (see `recorded_sample_line`).
            peak_gpu_memory: None,
            utilization_sm: p.sm_util.map(|u| u.0),
            cpu_percent: d.and_then(|d| d.cpu_percent),
            host_memory: d.and_then(|d| d.host_memory).map(|b| b.0),
            started: started.and_then(epoch_secs),
            elapsed: started
                .and_then(|s| now.duration_since(s).ok())
                .map(|e| e.as_secs_f64()),
            command: d.map(|d| String::from(&*d.command)),
            visibility: p.host.visibility(),
            context: ContextDoc::of(d.map(|d| &d.context)),
        }
    }

    /// Back to a reading. A visible process must say who and since when (its identity);
    /// `elapsed` and `gpu_index` are derived and not read.
    pub fn into_reading(self) -> Result<ProcReading, String> {
        let pid = self.pid;
        let missing = |what: &str| format!("process {pid} is visible but has no {what}");
        let host = match self.visibility {
            Visibility::Visible => HostProc::Visible(ProcDetails {
                user: self.user.ok_or_else(|| missing("user"))?.into(),
                uid: self.uid.ok_or_else(|| missing("uid"))?,
                command: self.command.unwrap_or_default().into(),
                cpu_percent: self.cpu_percent,
                host_memory: self.host_memory.map(Bytes),
                started: epoch(self.started.ok_or_else(|| missing("start time"))?)?,
                context: self.context.into_context(),
            }),
            Visibility::OtherNamespace => HostProc::OtherNamespace,
            Visibility::Hidden => HostProc::Hidden,
            Visibility::Exited => HostProc::Exited,
        };
        Ok(ProcReading {
            peak_gpu_memory: self.peak_gpu_memory.map(Bytes),
            pid,
            gpu: GpuId(self.gpu_uuid),
            kind: self.kind.into(),
            gpu_memory: self.used_gpu_memory.map(Bytes),
            sm_util: self.utilization_sm.map(Percent),
            host,
        })
    }
}
