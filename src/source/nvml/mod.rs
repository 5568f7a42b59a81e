//! The NVML source: real NVIDIA GPUs through nvml-wrapper. Owns the loaded library (no
//! global), the per-GPU memory of what each device cannot answer, and the host process
//! lookups for GPU PIDs. A field NVML cannot give becomes `None`, never an error for the
//! whole sample; a GPU that stops answering is marked lost and keeps its slot. The
//! per-device queries are in `read`.

mod events;
mod gpm;
mod health;
mod mig;
mod procs;
mod read;

use crate::fast_hash::FastSet;
use std::path::Path;
use std::time::{Instant, SystemTime};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;

use crate::procinfo::ProcInfo;
use crate::procinfo::pods::PodDirectory;
use crate::reading::{
    GpuId, GpuReading, GpuStatus, HostInfo, HostProc, ProcKind, ProcReading, Sample,
};
use crate::source::{GpuSource, SourceError};
use crate::units::{Bytes, Percent};
use read::read_gpu;

/// Why NVML could not be opened, phrased for the person at the terminal.
#[derive(Debug, thiserror::Error)]
pub enum NvmlOpenError {
    #[error(
        "cannot load the NVML library ({0}); is the NVIDIA driver installed? try: gpuwatch --demo"
    )]
    LibraryMissing(String),
    #[error("the NVIDIA driver is not loaded (NVML: {0}); try: gpuwatch --demo")]
    DriverNotLoaded(String),
    #[error(
        "no permission to talk to the NVIDIA driver (NVML: {0}); check /dev/nvidia* access, or try: gpuwatch --demo"
    )]
    NoPermission(String),
    #[error("NVML failed to start: {0}; try: gpuwatch --demo")]
    Other(String),
}

/// Each NVML query gpuwatch makes per GPU, so "this device cannot answer it" can be
/// remembered per (GPU, query).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Query {
    Name,
    PciInfo,
    Utilization,
    Memory,
    Temperature,
    TempSlowdown,
    TempShutdown,
    Power,
    PowerLimit,
    Energy,
    Fan,
    SmClock,
    MemClock,
    SmClockMax,
    MemClockMax,
    GraphicsClock,
    GraphicsClockMax,
    VideoClock,
    PState,
    Encoder,
    Decoder,
    PcieGen,
    PcieWidth,
    PcieGenMax,
    PcieWidthMax,
    PcieTx,
    PcieRx,
    Throttle,
    Ecc,
    Mig,
    ComputeMode,
    Persistence,
    PcieReplays,
    EccCorrected,
    /// The health counters (`nvmlDeviceGetFieldValues`); each field is also remembered alone.
    FieldValues,
    ComputeProcs,
    GraphicsProcs,
    ProcessUtil,
}

/// The GPU answered GPU_IS_LOST: stop asking it anything this sample.
struct Lost;

/// What a board answers the same way every time until it is reset: asked once.
#[derive(Debug, Clone, Copy, Default)]
struct Fixed {
    temperature_slowdown: Option<u32>,
    temperature_shutdown: Option<u32>,
    sm_clock_max: Option<u32>,
    memory_clock_max: Option<u32>,
    graphics_clock_max: Option<u32>,
}

/// What gpuwatch remembers about one GPU index across samples.
#[derive(Debug, Default)]
struct Slot {
    /// Identity from the last time the GPU answered, so a lost GPU keeps its history.
    uuid: Option<String>,
    name: Option<String>,
    pci_bus_id: Option<String>,
    /// The link's maximum generation and width: fixed for the board in its slot, read once.
    pcie_max: Option<(Option<u32>, Option<u32>)>,
    /// The board's temperature thresholds and maximum clocks: its firmware's, fixed while
    /// it answers, read once (each was one NVML call per GPU per second).
    fixed: Option<Fixed>,
    /// The GPU stopped answering since its identity and fixed facts were read: when it
    /// answers again (a reset, a driver reload) they are read again, since what came back
    /// may differ.
    lost_since_read: bool,
    /// Queries this device answered NotSupported / NoPermission / missing symbol: they will
    /// not start working while the driver stays loaded, so they are not asked again.
    /// (Asked for every query of every GPU every sample: a fast hasher, `fast_hash`.)
    never: FastSet<Query>,
    /// NVML field ids this device answered NotSupported (or the like) for.
    never_fields: FastSet<u32>,
    /// Driver timestamp (µs) of the newest per-process utilization sample seen.
    last_util_sample: u64,
    /// GPM samples of its MIG instances, for their SM activity (`gpm`).
    gpm: gpm::GpmSamples,
}

impl Slot {
    /// Runs one query: `Ok(None)` when the device cannot tell, `Err(Lost)` when it is gone.
    fn ask<T>(
        &mut self,
        query: Query,
        f: impl FnOnce() -> Result<T, NvmlError>,
    ) -> Result<Option<T>, Lost> {
        if self.never.contains(&query) {
            return Ok(None);
        }
        match f() {
            Ok(v) => Ok(Some(v)),
            Err(NvmlError::GpuLost) => Err(Lost),
            Err(
                NvmlError::NotSupported
                | NvmlError::NoPermission
                | NvmlError::FunctionNotFound
                | NvmlError::FailedToLoadSymbol(_),
            ) => {
                self.never.insert(query);
                Ok(None)
            }
            // Anything else may be transient (a timeout, an odd value): ask again next time.
            Err(_) => Ok(None),
        }
    }

    /// Forgets what was read once about the board (name, bus id, link maximum, fixed
    /// facts) so that the next answer reads it again: after the GPU was lost.
    fn forget_fixed(&mut self) {
        self.name = None;
        self.pci_bus_id = None;
        self.pcie_max = None;
        self.fixed = None;
        self.lost_since_read = false;
    }

    fn lost_reading(&self, index: u32) -> GpuReading {
        let id = self
            .uuid
            .clone()
            .map_or_else(|| GpuId::without_uuid("nvml", index), GpuId);
        let name = self.name.clone().unwrap_or_else(|| "NVIDIA GPU".into());
        let mut g = GpuReading::absent(id, index, name);
        g.vendor = Some(crate::reading::Vendor::Nvidia);
        g.status = GpuStatus::Lost;
        g.pci_bus_id = self.pci_bus_id.clone();
        g
    }
}

/// A process as NVML lists it on one GPU, before host lookups.
struct GpuProc {
    pid: u32,
    kind: ProcKind,
    memory: Option<Bytes>,
    sm_util: Option<Percent>,
    /// (GPU instance, compute instance) on a MIG-mode GPU.
    instance: Option<(u32, u32)>,
}

pub struct NvmlSource {
    /// The library, with the XID event set registered on it.
    lib: events::Library,
    /// The process-list calls of every driver generation (nvml-wrapper makes only `_v3`).
    process_calls: procs::ProcessCalls,
    host: HostInfo,
    slots: Vec<Slot>,
    procinfo: ProcInfo,
    /// The host line's CPU, memory and load, from the same /proc.
    host_load: crate::procinfo::host::HostReader,
    /// Which pod each GPU is allocated to (Kubernetes nodes only).
    pods: PodDirectory,
    /// What was last said of the engine and Slurm lookups (the kubelet's is `pods`').
    said: crate::reading::lookup::Said,
    /// The wall clock (sample times, XID arrival) and the monotonic one (CPU deltas), read
    /// together once per sample: the system's unless a test gives its own (`with_clock`).
    clock: NvmlClock,
}

/// What `NvmlSource` reads the time from: (wall clock, monotonic clock), once per sample.
pub type NvmlClock = Box<dyn FnMut() -> (SystemTime, Instant) + Send>;

impl NvmlSource {
    /// Loads NVML from `lib` (or the system's `libnvidia-ml.so.1`) and initialises it.
    pub fn open(lib: Option<&Path>) -> Result<Self, NvmlOpenError> {
        let mut builder = Nvml::builder();
        if let Some(path) = lib {
            builder.lib_path(path.as_os_str());
        }
        let nvml = builder.init().map_err(open_error)?;
        // Driver and CUDA versions cannot change while the library stays loaded.
        let host = HostInfo {
            hostname: crate::source::hostname(),
            driver_version: nvml.sys_driver_version().ok(),
            cuda_version: nvml.sys_cuda_driver_version().ok().map(|v| {
                format!(
                    "{}.{}",
                    nvml_wrapper::cuda_driver_version_major(v),
                    nvml_wrapper::cuda_driver_version_minor(v)
                )
            }),
            load: Default::default(),
            lookups: Vec::new(),
            cuts: Vec::new(),
        };
        Ok(NvmlSource {
            lib: events::Library::open(nvml),
            process_calls: procs::ProcessCalls::open(lib),
            host,
            slots: Vec::new(),
            procinfo: ProcInfo::system(),
            host_load: crate::procinfo::host::HostReader::new("/proc"),
            pods: PodDirectory::disabled(),
            said: Default::default(),
            clock: Box::new(|| (SystemTime::now(), Instant::now())),
        })
    }

    /// Reads the host's processes and load from the /proc at `root` (`--proc-root`: a
    /// captured tree, or the host's /proc mounted in a container), as the DRM sources do.
    pub fn with_proc_root(self, root: &Path) -> Self {
        self.with_procinfo(ProcInfo::system_at(root), root)
    }

    /// The same with the process lookups given (tests: a fixture /proc with fixed units).
    pub fn with_procinfo(mut self, procinfo: ProcInfo, root: &Path) -> Self {
        self.procinfo = procinfo;
        self.host_load = crate::procinfo::host::HostReader::new(root);
        self
    }

    /// Takes every sample's time from `clock` instead of the system's.
    pub fn with_clock(mut self, clock: NvmlClock) -> Self {
        self.clock = clock;
        self
    }

    fn device_count(&self) -> Result<u32, SourceError> {
        self.lib
            .nvml()
            .device_count()
            .map_err(|e| SourceError::Unavailable(format!("NVML device count: {e}")))
    }

    /// Asks `pods` which pod each GPU belongs to (`launch` passes the kubelet's).
    pub fn with_pods(mut self, pods: PodDirectory) -> Self {
        self.pods = pods;
        self
    }
}

fn open_error(e: NvmlError) -> NvmlOpenError {
    match e {
        NvmlError::LibloadingError(inner) => NvmlOpenError::LibraryMissing(inner.to_string()),
        NvmlError::FailedToLoadSymbol(s) => {
            NvmlOpenError::LibraryMissing(format!("missing symbol {s}"))
        }
        NvmlError::DriverNotLoaded => NvmlOpenError::DriverNotLoaded(e.to_string()),
        NvmlError::LibraryNotFound => NvmlOpenError::LibraryMissing(e.to_string()),
        NvmlError::NoPermission => NvmlOpenError::NoPermission(e.to_string()),
        other => NvmlOpenError::Other(other.to_string()),
    }
}

impl GpuSource for NvmlSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let count = self.device_count()?;
        let (now, instant) = (self.clock)();
        // Events before the readings, so an XID that arrived before this sample is in it.
        self.lib.drain(count, now);
        // NVML's count is fixed once initialised; a slot seen before but no longer counted
        // is still reported (as lost) so it does not silently vanish.
        let slots = (count as usize).max(self.slots.len());
        self.slots.resize_with(slots, Slot::default);
        let mut gpus = Vec::with_capacity(slots);
        let mut listed: Vec<(GpuId, GpuProc)> = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let index = i as u32;
            let read = if index < count {
                self.lib
                    .nvml()
                    .device_by_index(index)
                    .map_err(|_| Lost)
                    .and_then(|device| read_gpu(&device, index, slot, &self.process_calls))
            } else {
                Err(Lost)
            };
            let mut reading = match read {
                Ok((mut reading, procs)) => {
                    let instances: Vec<GpuId> =
                        reading.mig_devices.iter().map(|m| m.id.clone()).collect();
                    reading.allocations = self.pods.allocations(&reading.id.0, index, &instances);
                    listed.extend(procs.into_iter().map(|p| (reading.id.clone(), p)));
                    reading
                }
                Err(Lost) => {
                    slot.lost_since_read = true;
                    slot.lost_reading(index)
                }
            };
            reading.health.xid = self.lib.xid(&reading.id.0);
            gpus.push(reading);
        }
        let hosts = self
            .procinfo
            .sample(listed.iter().map(|(_, p)| p.pid), instant);
        let processes: Vec<ProcReading> = listed
            .into_iter()
            .map(|(gpu, p)| ProcReading {
                peak_gpu_memory: None,
                pid: p.pid,
                gpu,
                kind: p.kind,
                gpu_memory: p.memory,
                sm_util: p.sm_util,
                host: hosts
                    .get(&p.pid)
                    .cloned()
                    .unwrap_or(HostProc::OtherNamespace),
            })
            .collect();
        let uids = self.pods.uids();
        let processes: Vec<ProcReading> = processes
            .into_iter()
            .map(|p| crate::procinfo::pods::name_pod(p, &gpus, &uids))
            .collect();
        let mut host = self.host.clone();
        host.load = self.host_load.read();
        host.lookups = self.pods.status().into_iter().collect();
        host.lookups.extend(self.procinfo.names().statuses());
        Ok(Sample {
            time: now,
            host,
            gpus,
            processes,
            hosts: Vec::new(),
            history: None,
        })
    }

    /// The lookups' changes of state (the kubelet, engines, Slurm), each said once (a
    /// lasting failure is not repeated every sample).
    fn notices(&mut self) -> Vec<String> {
        let mut lines: Vec<String> = self.pods.news().into_iter().collect();
        lines.extend(self.said.news(&self.procinfo.names().statuses()));
        lines
    }
}

impl Drop for NvmlSource {
    /// GPM samples are NVML allocations: freed while the library is still loaded.
    fn drop(&mut self) {
        for slot in &mut self.slots {
            slot.gpm.free_all(self.lib.nvml());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_queries_are_asked_once_and_transient_errors_again() {
        let mut slot = Slot::default();
        let mut calls = 0;
        for _ in 0..3 {
            let r = slot.ask(Query::Fan, || {
                calls += 1;
                Err::<u32, _>(NvmlError::NotSupported)
            });
            assert!(matches!(r, Ok(None)));
        }
        assert_eq!(calls, 1);
        let mut calls = 0;
        for _ in 0..3 {
            let _ = slot.ask(Query::Power, || {
                calls += 1;
                Err::<u32, _>(NvmlError::Timeout)
            });
        }
        assert_eq!(calls, 3);
        assert!(matches!(
            slot.ask(Query::Temperature, || Err::<u32, _>(NvmlError::GpuLost)),
            Err(Lost)
        ));
    }
}
