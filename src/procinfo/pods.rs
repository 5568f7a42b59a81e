//! Which pod each GPU is allocated to, from the kubelet's pod-resources API: the one place
//! that knows a GPU belongs to a pod even when none of the pod's PIDs is visible from here
//! (gpuwatch in its own container). One background thread asks the kubelet every
//! `interval` (each call bounded by `kubelet::DEFAULT_TIMEOUT`) and keeps the latest
//! answer; the sampler only reads it, so a slow, absent or broken kubelet never delays a
//! sample. Without the socket (not a Kubernetes node) it just looks again later.

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::kubelet::{self, GpuDevice, PodGpus};
use crate::source::workload::PodAllocation;

/// How often the kubelet is asked (pods come and go in minutes, not seconds).
pub const POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The latest allocations, shared between the poller and the sampler.
type Latest = Arc<Mutex<Arc<Vec<PodGpus>>>>;

pub struct PodDirectory {
    latest: Latest,
    /// Dropping the sender stops the poller; `None` when disabled.
    stop: Option<mpsc::Sender<()>>,
    poller: Option<JoinHandle<()>>,
}

impl PodDirectory {
    /// Never asks anything (fixtures, the demo, non-Linux-kubelet hosts by choice).
    pub fn disabled() -> Self {
        PodDirectory {
            latest: Arc::default(),
            stop: None,
            poller: None,
        }
    }

    /// The kubelet at its usual socket.
    pub fn system() -> Self {
        Self::new(kubelet::DEFAULT_SOCKET.into(), POLL_INTERVAL)
    }

    /// Polls the kubelet at `socket` every `interval`. The first answer is waited for
    /// (at most the call's 200 ms, and only where the socket exists), so the first sample —
    /// often the only one: `--once`, `pick` — already knows the pods.
    pub fn new(socket: PathBuf, interval: Duration) -> Self {
        let latest: Latest = Arc::new(Mutex::new(Arc::new(ask(&socket))));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&latest);
        let poller = std::thread::Builder::new()
            .name("gpuwatch-kubelet".into())
            .spawn(move || poll(&socket, interval, &shared, &stopped))
            .ok();
        PodDirectory {
            latest,
            stop: Some(stop),
            poller,
        }
    }

    /// The pods the GPU with this UUID and index is allocated to, as last answered.
    pub fn allocations(&self, uuid: &str, index: u32) -> Vec<PodAllocation> {
        let latest = self
            .latest
            .lock()
            .map(|l| Arc::clone(&l))
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
        let answer = ask(socket);
        if let Ok(mut l) = latest.lock() {
            *l = Arc::new(answer);
        }
    }
}

/// One question to the kubelet. A missing socket is the normal case off Kubernetes:
/// nothing to ask, nothing to say. Any failure is "no pods": a stale answer would name the
/// wrong owner once pods move.
fn ask(socket: &std::path::Path) -> Vec<PodGpus> {
    if !socket.exists() {
        return Vec::new();
    }
    kubelet::list_gpu_pods(socket, kubelet::DEFAULT_TIMEOUT).unwrap_or_default()
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

    #[test]
    fn no_socket_means_no_pods_and_stopping_is_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let pods = PodDirectory::new(dir.path().join("kubelet.sock"), Duration::from_secs(60));
        assert!(pods.allocations("GPU-11111111-aaaa", 0).is_empty());
        let start = std::time::Instant::now();
        drop(pods);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "the poller stops on drop"
        );
        assert!(PodDirectory::disabled().allocations("GPU-x", 0).is_empty());
    }
}
