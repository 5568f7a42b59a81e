//! Which pod holds which GPU, from the kubelet's pod-resources API (`v1.PodResourcesLister`
//! `List`, gRPC on `/var/lib/kubelet/pod-resources/kubelet.sock`). It names the GPUs of pods
//! whose processes we cannot see — gpuwatch in its own container sees NVML's PIDs but not
//! their /proc — because the device plugin's device IDs are the GPUs' UUIDs.
//!
//! One bounded call per `list_gpu_pods`: no cache, no retry, no thread. The caller (the
//! names worker) owns caching and scheduling, and must never call it on the draw path.
//! `grpc` owns the transport, `proto` the decoding; this file the API and its errors.

mod grpc;
mod proto;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use proto::{DecodeError, is_gpu_resource};

/// Where the kubelet serves the pod-resources API on every node (since Kubernetes 1.13).
pub const DEFAULT_SOCKET: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";

/// The whole call — connect, request, response — within this, for every poll after the
/// first: the kubelet answers from memory in milliseconds, and the polls run on their own
/// thread, so a slow answer delays no sample; a call this slow means a stuck kubelet.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// The first call's budget, which `--once`, `pick` and the first frame wait for: a cold
/// kubelet (its gRPC server's first answer since start, thousands of pods) is slower than
/// a warm one. A cold grpcio server's ~600 KB of pods took 35–70 ms on 2 loaded cores here
/// (tests/it/real_kubelet.rs prints it) and 153 ms in issue 22's measurement: 200 ms, the old
/// budget, left no margin; 2 s leaves a real kubelet under load ten times that.
pub const FIRST_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest response message read: the kubelet's own pod-resources client allows
/// 16 MiB (`podresources.DefaultMaxMsgSize`), and a node near that is one the kubelet
/// itself can serve, so a smaller cap would lose exactly the big nodes. The buffer grows
/// with what arrives and lives only for the call.
pub const MAX_RESPONSE: usize = 16 << 20;

/// One container that holds GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodGpus {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// Its GPUs and MIG slices, once each, in the kubelet's order; never empty.
    pub gpus: Vec<GpuDevice>,
}

/// A GPU as the NVIDIA device plugin names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GpuDevice {
    /// A GPU (`GPU-…`) or MIG (`MIG-…`) UUID, as NVML reports it: the usual case.
    Uuid(String),
    /// A GPU's NVML index, under the plugin's `deviceIDStrategy=index`.
    Index(u32),
}

/// Why the kubelet could not tell us the pods' GPUs. Every one leaves attribution to the
/// cgroup paths alone; the messages say what to do for the next try.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    #[error(
        "no kubelet pod-resources socket at {}: not a Kubernetes node, or the socket is not \
         mounted into this container (mount /var/lib/kubelet/pod-resources)",
        socket.display()
    )]
    NoSocket { socket: PathBuf },
    #[error(
        "not allowed to open {}: the kubelet's pod-resources socket is root's; run gpuwatch \
         as root to name the pods holding GPUs",
        socket.display()
    )]
    NotPermitted { socket: PathBuf },
    #[error("nothing listens on {}: is the kubelet running?", socket.display())]
    NotListening { socket: PathBuf },
    #[error("could not connect to {}: {source}", socket.display())]
    Connect { socket: PathBuf, source: io::Error },
    #[error(
        "the kubelet at {} did not answer within {} ms; it may be overloaded: the next poll \
         tries again",
        socket.display(), timeout.as_millis()
    )]
    TimedOut { socket: PathBuf, timeout: Duration },
    #[error(
        "{} does not speak HTTP/2 as a kubelet does ({source}): is it the kubelet's \
         pod-resources socket?",
        socket.display()
    )]
    Protocol { socket: PathBuf, source: h2::Error },
    #[error("{} answered, but not with gRPC: {detail}", socket.display())]
    NotGrpc { socket: PathBuf, detail: String },
    #[error(
        "the kubelet at {} refused List: gRPC status {code} ({}){}{}",
        socket.display(), status_name(*code),
        if message.is_empty() { "" } else { ": " }, message
    )]
    Status {
        socket: PathBuf,
        code: u32,
        message: String,
    },
    #[error(
        "the kubelet's answer from {} is over {limit} bytes, more than a node's pods need; \
         not read",
        socket.display()
    )]
    TooLarge { socket: PathBuf, limit: usize },
    #[error(
        "the kubelet's answer from {} is not a pod-resources List response: {source}",
        socket.display()
    )]
    Malformed {
        socket: PathBuf,
        source: DecodeError,
    },
    #[error("could not start an I/O runtime for the kubelet call: {0}")]
    Runtime(io::Error),
}

impl KubeletError {
    fn connect(socket: &Path, source: io::Error) -> Self {
        let socket = socket.to_path_buf();
        match source.kind() {
            io::ErrorKind::NotFound => KubeletError::NoSocket { socket },
            io::ErrorKind::PermissionDenied => KubeletError::NotPermitted { socket },
            io::ErrorKind::ConnectionRefused => KubeletError::NotListening { socket },
            _ => KubeletError::Connect { socket, source },
        }
    }
}

/// gRPC's name for a status code, with what it means here when that helps.
fn status_name(code: u32) -> &'static str {
    match code {
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        // The kubelet rate-limits this API; a later poll succeeds.
        8 => "RESOURCE_EXHAUSTED, the kubelet's rate limit; a later poll retries",
        7 => "PERMISSION_DENIED; run gpuwatch as root",
        16 => "UNAUTHENTICATED",
        12 => "UNIMPLEMENTED; this kubelet has no v1 List (Kubernetes before 1.20?)",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        _ => "unexpected",
    }
}

/// The containers holding GPUs, from the kubelet at `socket`, or why not, within `timeout`
/// all told. Blocks: call it from a plain thread or `spawn_blocking` (the names worker);
/// async code awaits `list_gpu_pods_async` instead, since tokio panics on a runtime started
/// inside a task. (No check here: `Handle::try_current` cannot tell a task from
/// `spawn_blocking`, where this is right, so a check would refuse the intended caller.)
pub fn list_gpu_pods(socket: &Path, timeout: Duration) -> Result<Vec<PodGpus>, KubeletError> {
    // A current-thread runtime is a few allocations and no thread: cheap next to the call,
    // and it leaves no state behind between polls.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(KubeletError::Runtime)?;
    runtime.block_on(list_gpu_pods_async(socket, timeout))
}

/// `list_gpu_pods` for a caller already on a tokio runtime (with I/O and time enabled).
pub async fn list_gpu_pods_async(
    socket: &Path,
    timeout: Duration,
) -> Result<Vec<PodGpus>, KubeletError> {
    let message = tokio::time::timeout(timeout, grpc::list(socket, MAX_RESPONSE))
        .await
        .map_err(|_| KubeletError::TimedOut {
            socket: socket.to_path_buf(),
            timeout,
        })??;
    proto::gpu_pods(&message).map_err(|source| KubeletError::Malformed {
        socket: socket.to_path_buf(),
        source,
    })
}

#[cfg(test)]
pub(crate) mod stand_in;
#[cfg(test)]
pub(crate) mod tests;
