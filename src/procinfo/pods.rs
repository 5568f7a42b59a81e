//! Which pod each GPU is allocated to, from the kubelet's pod-resources API: the one place
//! that knows a GPU belongs to a pod even when none of the pod's PIDs is visible from here
//! (gpuwatch in its own container). One background thread asks the kubelet every
//! `interval` (each call bounded by `kubelet::DEFAULT_TIMEOUT`, the first by `FIRST_TIMEOUT`) and keeps the latest
//! answer; the sampler only reads it, so a slow, absent or broken kubelet never delays a
//! sample. Without the socket (not a Kubernetes node) it just looks again later. Every
//! failure is kept as the lookup's status (`status`) and said once per change (`news`):
//! a swallowed failure once let `pick` offer a GPU the kubelet had given to a pod.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::kubelet::{self, GpuDevice, PodGpus};
use crate::source::lookup::{LookupKind, LookupState, LookupStatus};
use crate::source::workload::PodAllocation;

/// How often the kubelet is asked (pods come and go in minutes, not seconds).
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The latest answer, shared between the poller and the sampler.
#[derive(Default)]
struct Answer {
    pods: Arc<Vec<PodGpus>>,
    /// `None` until the socket is first seen: off Kubernetes there is nothing to report.
    status: Option<LookupStatus>,
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
        let mut first = Answer::default();
        ask(&socket, kubelet::FIRST_TIMEOUT, &mut first);
        let latest: Latest = Arc::new(Mutex::new(first));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&latest);
        let poller = std::thread::Builder::new()
            .name("gpuwatch-kubelet".into())
            .spawn(move || poll(&socket, interval, &shared, &stopped))
            .ok();
        PodDirectory {
            latest,
            said: Some(LookupState::Ok),
            stop: Some(stop),
            poller,
        }
    }

    /// The pods the GPU with this UUID and index is allocated to, as last answered.
    pub fn allocations(&self, uuid: &str, index: u32) -> Vec<PodAllocation> {
        let latest = self
            .latest
            .lock()
            .map(|l| Arc::clone(&l.pods))
            .unwrap_or_default();
        latest
            .iter()
            .filter(|p| p.gpus.iter().any(|d| names(d, uuid, index)))
            .map(|p| PodAllocation {
                namespace: p.namespace.clone(),
                pod: p.pod.clone(),
                container: p.container.clone(),
            })
            .collect()
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
    socket: &std::path::Path,
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
            })
            .unwrap_or_default();
        ask(socket, kubelet::DEFAULT_TIMEOUT, &mut answer);
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
fn ask(socket: &std::path::Path, timeout: Duration, answer: &mut Answer) {
    if answer.status.is_none() && !may_exist(socket) {
        answer.pods = Arc::default();
        return;
    }
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
mod tests {
    use super::*;
    use crate::procinfo::kubelet::stand_in::{grpc_ok, serve};
    use crate::procinfo::kubelet::tests::node_response;

    /// Waits (bounded) until the poller has stored an answer.
    fn settled(dir: &PodDirectory, uuid: &str) -> Vec<PodAllocation> {
        for _ in 0..100 {
            let got = dir.allocations(uuid, 99);
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
            }]
        );
        assert_eq!(dir.allocations("GPU-22222222-bbbb", 1), trainer);
        assert!(dir.allocations("GPU-99999999-none", 3).is_empty());
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
        assert!(dir.allocations("GPU-11111111-aaaa", 0).is_empty());
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

    #[test]
    fn no_socket_means_no_pods_and_stopping_is_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let pods = PodDirectory::new(dir.path().join("kubelet.sock"), Duration::from_secs(60));
        assert!(pods.allocations("GPU-11111111-aaaa", 0).is_empty());
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
        assert!(PodDirectory::disabled().allocations("GPU-x", 0).is_empty());
    }
}
