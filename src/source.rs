//! The GPU sources: the `GpuSource` trait every backend implements (NVML, the DRM sources
//! for AMD and Intel, the simulated fleet, Prometheus, remote hosts, several vendors or
//! hosts as one, a replayed recording) and the backends themselves. What they return is
//! the readings vocabulary (`crate::reading`); a source knows nothing of history, warnings
//! or drawing.

pub mod drm;
pub mod multi;
pub mod nvml;
pub mod prometheus;
pub mod remote;
pub mod replay;
pub mod sim;
pub mod vendors;

use crate::reading::Sample;

/// Why a poll failed as a whole (individual fields failing are `None`, not errors).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Unavailable(String),
}

/// A source of GPU samples. `sample` may block (NVML is blocking FFI): the sampler calls
/// it on tokio's blocking pool, never on the UI thread.
pub trait GpuSource: Send + 'static {
    fn sample(&mut self) -> Result<Sample, SourceError>;

    /// Things to tell the user that are not readings (the recorder paused on a full disk),
    /// taken after each sample; wrappers pass on their inner source's.
    fn notices(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// This machine's host name (for the header), or "localhost" when it cannot be read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}
