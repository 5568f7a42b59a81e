//! Which pod each GPU is allocated to, from the kubelet's pod-resources API: the one place
//! that knows a GPU belongs to a pod even when none of the pod's PIDs is visible from here
//! (gpuwatch in its own container). One background thread asks the kubelet every
//! `interval` (each call bounded by `kubelet::DEFAULT_TIMEOUT`, the first by `FIRST_TIMEOUT`) and keeps the latest
//! answer; the sampler only reads it, so a slow, absent or broken kubelet never delays a
//! sample. Without the socket (not a Kubernetes node) it just looks again later. Every
//! failure is kept as the lookup's status (`status`) and said once per change (`news`):
//! a swallowed failure once let `pick` offer a GPU the kubelet had given to a pod.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::kubelet::{self, GpuDevice, PodGpus};
use crate::reading::lookup::{LookupKind, LookupState, LookupStatus};
use crate::reading::workload::{PodAllocation, Workload};
use crate::reading::{GpuId, GpuReading, HostProc, ProcReading};

/// How often the kubelet is asked (pods come and go in minutes, not seconds).
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// Where the kubelet keeps each pod's logs, in a directory named `<namespace>_<pod>_<uid>`:
/// the one record on a node that ties a pod's UID (what a cgroup path gives) to its name.
pub const LOG_ROOT: &str = "/var/log/pods";

/// At most this many pod log directories are read (a node runs at most a few hundred pods).
const MAX_LOG_DIRS: usize = 10_000;

/// Pod UID → (namespace, name), as the kubelet's log directories tie them.
pub type PodsByUid = HashMap<String, (String, String)>;

/// The latest answer, shared between the poller and the sampler.
#[derive(Default)]
struct Answer {
    pods: Arc<Vec<PodGpus>>,
    /// `None` until the socket is first seen: off Kubernetes there is nothing to report.
    status: Option<LookupStatus>,
    /// The pods whose UID is known to belong to a name (`LOG_ROOT`).
    uids: Arc<PodsByUid>,
}

type Latest = Arc<Mutex<Answer>>;

pub struct PodDirectory {
    latest: Latest,
    /// The state last said by `news`, so each change is said once.
    said: Option<LookupState>,
    /// Dropping the sender stops the poller; `None` when disabled.
    stop: Option<mpsc::Sender<()>>,
    poller: Option<JoinHandle<()>>,
}

impl PodDirectory {
    /// Never asks anything (fixtures, the demo, non-Linux-kubelet hosts by choice).
    pub fn disabled() -> Self {
        PodDirectory {
            latest: Arc::default(),
            said: None,
            stop: None,
            poller: None,
        }
    }

    /// The kubelet at its usual socket.
    pub fn system() -> Self {
        Self::new(kubelet::DEFAULT_SOCKET.into(), POLL_INTERVAL)
    }

    /// Polls the kubelet at `socket` every `interval`. The first answer is waited for
    /// (at most `kubelet::FIRST_TIMEOUT`, only where the socket may exist), so the first sample —
    /// often the only one: `--once`, `pick` — already knows the pods.
    pub fn new(socket: PathBuf, interval: Duration) -> Self {
        Self::with_logs(socket, LOG_ROOT.into(), interval)
    }

    /// As `new`, reading pod names by UID from `logs` (the kubelet's `/var/log/pods`).
    pub fn with_logs(socket: PathBuf, logs: PathBuf, interval: Duration) -> Self {
        let mut first = Answer::default();
        ask(&socket, &logs, kubelet::FIRST_TIMEOUT, &mut first);
        let latest: Latest = Arc::new(Mutex::new(first));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&latest);
        let poller = std::thread::Builder::new()
            .name("gpuwatch-kubelet".into())
            .spawn(move || poll(&socket, &logs, interval, &shared, &stopped))
            .ok();
        PodDirectory {
            latest,
            said: Some(LookupState::Ok),
            stop: Some(stop),
            poller,
        }
    }

    /// The pods the GPU with this UUID and index is allocated to, as last answered: the
    /// whole GPU, or one of its MIG `instances` (the kubelet lists an instance by its own
    /// `MIG-` UUID, so asking with the GPU's alone missed every MIG allocation).
    pub fn allocations(&self, uuid: &str, index: u32, instances: &[GpuId]) -> Vec<PodAllocation> {
        let latest = self
            .latest
            .lock()
            .map(|l| Arc::clone(&l.pods))
            .unwrap_or_default();
        let alloc = |p: &PodGpus, instance: Option<&GpuId>| PodAllocation {
            namespace: p.namespace.clone(),
            pod: p.pod.clone(),
            container: p.container.clone(),
            instance: instance.cloned(),
        };
        let mut out = Vec::new();
        for p in latest.iter() {
            if p.gpus.iter().any(|d| names(d, uuid, index)) {
                out.push(alloc(p, None));
            }
            for m in instances {
                if p.gpus
                    .iter()
                    .any(|d| matches!(d, GpuDevice::Uuid(u) if *u == m.0))
                {
                    out.push(alloc(p, Some(m)));
                }
            }
        }
        out
    }

    /// The pods whose UID is known to belong to a name, as last read.
    pub fn uids(&self) -> Arc<PodsByUid> {
        self.latest
            .lock()
            .map(|l| Arc::clone(&l.uids))
            .unwrap_or_default()
    }

    /// How the latest call to the kubelet went; `None` while no socket was ever seen.
    pub fn status(&self) -> Option<LookupStatus> {
        self.latest.lock().ok().and_then(|l| l.status.clone())
    }

    /// A sentence when the lookup's state changed since the last call (it failed, failed
    /// differently, or works again); `None` otherwise, so a lasting failure is said once.
    pub fn news(&mut self) -> Option<String> {
        let now = self.status()?.state;
        if self.said.as_ref() == Some(&now) {
            return None;
        }
        let line = match &now {
            LookupState::Ok => "the kubelet answers again: pods are named".to_string(),
            LookupState::Failed(why) => format!("kubelet lookup failed: {why}"),
        };
        self.said = Some(now);
        Some(line)
    }
}

/// Whether a device id the kubelet gave names this GPU: its UUID (MIG slices are listed by
/// their own UUIDs, so they never match a whole GPU), or its index under the device
/// plugin's `deviceIDStrategy=index`.
fn names(device: &GpuDevice, uuid: &str, index: u32) -> bool {
    match device {
        GpuDevice::Uuid(u) => u == uuid,
        GpuDevice::Index(i) => *i == index,
    }
}

fn poll(
    socket: &Path,
    logs: &Path,
    interval: Duration,
    latest: &Latest,
    stopped: &mpsc::Receiver<()>,
) {
    loop {
        match stopped.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let mut answer = latest
            .lock()
            .map(|l| Answer {
                pods: Arc::clone(&l.pods),
                status: l.status.clone(),
                uids: Arc::clone(&l.uids),
            })
            .unwrap_or_default();
        ask(socket, logs, kubelet::DEFAULT_TIMEOUT, &mut answer);
        if let Ok(mut l) = latest.lock() {
            *l = answer;
        }
    }
}

/// One question to the kubelet, its outcome written into `answer`. A missing socket that
/// was never there is the normal case off Kubernetes: nothing to ask, nothing to say; once
/// seen, its going away is a failure like any other. A failure means "no pods" (a stale
/// answer would name the wrong owner once pods move), and is kept to be said. A socket
/// that cannot be looked at (the kubelet's directory is `0750 root`, gpuwatch is not root)
/// may well be there: it is asked, so the refusal is said rather than taken for "not a
/// Kubernetes node" (`Path::exists` says false on EACCES).
fn ask(socket: &Path, logs: &Path, timeout: Duration, answer: &mut Answer) {
    if answer.status.is_none() && !may_exist(socket) {
        answer.pods = Arc::default();
        return;
    }
    answer.uids = Arc::new(read_log_dirs(logs));
    let errors = answer.status.as_ref().map_or(0, |s| s.errors);
    let (pods, state, errors) = match kubelet::list_gpu_pods(socket, timeout) {
        Ok(pods) => (pods, LookupState::Ok, errors),
        Err(e) => (Vec::new(), LookupState::Failed(e.to_string()), errors + 1),
    };
    answer.pods = Arc::new(pods);
    answer.status = Some(LookupStatus {
        kind: LookupKind::Kubelet,
        state,
        errors,
    });
}

/// Pod UID → (namespace, name) from the kubelet's `<namespace>_<pod>_<uid>` log
/// directories (Kubernetes names hold no `_`, so the split is exact). Unreadable: none.
pub fn read_log_dirs(root: &Path) -> PodsByUid {
    let Ok(dir) = std::fs::read_dir(root) else {
        return PodsByUid::new();
    };
    dir.flatten()
        .take(MAX_LOG_DIRS)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let mut parts = name.splitn(3, '_');
            let (ns, pod, uid) = (parts.next()?, parts.next()?, parts.next()?);
            let ok = !ns.is_empty() && !pod.is_empty() && uid.len() == 36;
            ok.then(|| (uid.to_string(), (ns.to_string(), pod.to_string())))
        })
        .collect()
}

/// A pod process's names, when nothing named it yet (the engine's labels do, for its own
/// containers): only from a record tying its pod's UID to a name (`uids`), never from the
/// GPU's allocation alone. A second pod that asked for no GPU but sees them all
/// (`NVIDIA_VISIBLE_DEVICES=all`, the classic squatter) on trainer-0's GPU is not trainer-0:
/// it stays `k8s pod <uid>` until its UID is known. The container's name comes from the
/// allocation when exactly that pod's one allocation is on the GPU.
pub fn name_pod(mut p: ProcReading, gpus: &[GpuReading], uids: &PodsByUid) -> ProcReading {
    let HostProc::Visible(d) = &mut p.host else {
        return p;
    };
    let Some(Workload::Pod { uid, names, .. }) = d.context.workload.as_deref() else {
        return p;
    };
    if names.name.is_some() {
        return p;
    }
    let Some((namespace, name)) = uids.get(uid) else {
        return p;
    };
    let own: Vec<&PodAllocation> = gpus
        .iter()
        .filter(|g| g.id == p.gpu)
        .flat_map(|g| &g.allocations)
        .filter(|a| a.namespace == *namespace && a.pod == *name)
        .collect();
    let mut named = d
        .context
        .workload
        .as_deref()
        .cloned()
        .expect("a pod, above");
    if let Workload::Pod { names, .. } = &mut named {
        names.name = Some(name.clone());
        names.namespace = Some(namespace.clone());
        if let [a] = own.as_slice() {
            names.container = Some(a.container.clone());
        }
    }
    d.context.workload = Some(Arc::new(named));
    p
}

/// False only when the path is known not to be there: an error looking (EACCES on a
/// parent directory) is no proof of absence.
pub fn may_exist(socket: &std::path::Path) -> bool {
    socket.try_exists().unwrap_or(true)
}

impl Drop for PodDirectory {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(poller) = self.poller.take() {
            let _ = poller.join();
        }
    }
}

#[cfg(test)]
mod tests;
