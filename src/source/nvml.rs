//! The NVML source: real NVIDIA GPUs through nvml-wrapper. Owns the loaded library (no
//! global), the per-GPU memory of what each device cannot answer, and the host process
//! lookups for GPU PIDs. A field NVML cannot give becomes `None`, never an error for the
//! whole sample; a GPU that stops answering is marked lost and keeps its slot.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::{Instant, SystemTime};

use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};
use nvml_wrapper::{Device, Nvml};

use super::throttle::ThrottleReason;
use super::{
    GpuId, GpuReading, GpuSource, GpuStatus, HostInfo, HostProc, ProcKind, ProcReading, Sample,
    SourceError,
};
use crate::procinfo::ProcInfo;
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

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
    PState,
    Encoder,
    Decoder,
    PcieGen,
    PcieWidth,
    PcieTx,
    PcieRx,
    Throttle,
    Ecc,
    Mig,
    ComputeProcs,
    GraphicsProcs,
    ProcessUtil,
}

/// The GPU answered GPU_IS_LOST: stop asking it anything this sample.
struct Lost;

/// What gpuwatch remembers about one GPU index across samples.
#[derive(Debug, Default)]
struct Slot {
    /// Identity from the last time the GPU answered, so a lost GPU keeps its history.
    uuid: Option<String>,
    name: Option<String>,
    pci_bus_id: Option<String>,
    /// Queries this device answered NotSupported / NoPermission / missing symbol: they will
    /// not start working while the driver stays loaded, so they are not asked again.
    never: HashSet<Query>,
    /// Driver timestamp (µs) of the newest per-process utilization sample seen.
    last_util_sample: u64,
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

    fn lost_reading(&self, index: u32) -> GpuReading {
        let id = GpuId(
            self.uuid
                .clone()
                .unwrap_or_else(|| format!("index-{index}")),
        );
        let name = self.name.clone().unwrap_or_else(|| "NVIDIA GPU".into());
        let mut g = GpuReading::absent(id, index, name);
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
}

pub struct NvmlSource {
    nvml: Nvml,
    host: HostInfo,
    slots: Vec<Slot>,
    procinfo: ProcInfo,
}

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
        };
        Ok(NvmlSource {
            nvml,
            host,
            slots: Vec::new(),
            procinfo: ProcInfo::system(),
        })
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
        let count = self
            .nvml
            .device_count()
            .map_err(|e| SourceError::Unavailable(format!("NVML device count: {e}")))?;
        // NVML's count is fixed once initialised; a slot seen before but no longer counted
        // is still reported (as lost) so it does not silently vanish.
        let slots = (count as usize).max(self.slots.len());
        self.slots.resize_with(slots, Slot::default);
        let mut gpus = Vec::with_capacity(slots);
        let mut listed: Vec<(GpuId, GpuProc)> = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let index = i as u32;
            let read = if index < count {
                self.nvml
                    .device_by_index(index)
                    .map_err(|_| Lost)
                    .and_then(|device| read_gpu(&device, index, slot))
            } else {
                Err(Lost)
            };
            match read {
                Ok((reading, procs)) => {
                    listed.extend(procs.into_iter().map(|p| (reading.id.clone(), p)));
                    gpus.push(reading);
                }
                Err(Lost) => gpus.push(slot.lost_reading(index)),
            }
        }
        let hosts = self
            .procinfo
            .sample(listed.iter().map(|(_, p)| p.pid), Instant::now());
        let processes = listed
            .into_iter()
            .map(|(gpu, p)| ProcReading {
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
        Ok(Sample {
            time: SystemTime::now(),
            host: self.host.clone(),
            gpus,
            processes,
            hosts: Vec::new(),
        })
    }
}

/// Reads one GPU. Every query is independent: one the device cannot answer is `None`.
fn read_gpu(d: &Device, index: u32, s: &mut Slot) -> Result<(GpuReading, Vec<GpuProc>), Lost> {
    // The UUID doubles as the liveness probe: a lost GPU fails it first.
    let uuid = match d.uuid() {
        Ok(u) => u,
        Err(NvmlError::GpuLost) => return Err(Lost),
        Err(_) => format!("index-{index}"),
    };
    if s.uuid.as_deref() != Some(uuid.as_str()) {
        // A different board in this slot (or the first sighting): forget what the old
        // one could not do, and re-read its identity.
        *s = Slot {
            uuid: Some(uuid.clone()),
            ..Slot::default()
        };
    }
    if s.name.is_none() {
        s.name = s.ask(Query::Name, || d.name())?;
    }
    if s.pci_bus_id.is_none() {
        s.pci_bus_id = s.ask(Query::PciInfo, || d.pci_info())?.map(|p| p.bus_id);
    }
    let name = s.name.clone().unwrap_or_else(|| "NVIDIA GPU".into());
    let mut g = GpuReading::absent(GpuId(uuid), index, name);
    g.pci_bus_id = s.pci_bus_id.clone();
    if let Some(u) = s.ask(Query::Utilization, || d.utilization_rates())? {
        g.util = Some(Percent(u.gpu));
        g.memory_util = Some(Percent(u.memory));
    }
    if let Some(m) = s.ask(Query::Memory, || d.memory_info())? {
        g.memory_total = Some(Bytes(m.total));
        g.memory_used = Some(Bytes(m.used));
        g.memory_reserved = Some(Bytes(m.reserved));
        g.memory_free = Some(Bytes(m.free));
    }
    read_thermal_and_power(d, s, &mut g)?;
    read_clocks_and_links(d, s, &mut g)?;
    g.throttle_reasons = s
        .ask(Query::Throttle, || d.current_throttle_reasons())?
        .map(|bits| ThrottleReason::from_nvml_bits(bits.bits()));
    g.ecc_errors_uncorrected = s.ask(Query::Ecc, || {
        d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
    })?;
    // NVML_DEVICE_MIG_ENABLE is 1.
    g.mig_enabled = s.ask(Query::Mig, || d.mig_mode())?.map(|m| m.current == 1);
    let procs = read_processes(d, s)?;
    Ok((g, procs))
}

fn read_thermal_and_power(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    g.temperature = s
        .ask(Query::Temperature, || d.temperature(TemperatureSensor::Gpu))?
        .map(Celsius);
    g.temperature_slowdown = s
        .ask(Query::TempSlowdown, || {
            d.temperature_threshold(TemperatureThreshold::Slowdown)
        })?
        .map(Celsius);
    g.temperature_shutdown = s
        .ask(Query::TempShutdown, || {
            d.temperature_threshold(TemperatureThreshold::Shutdown)
        })?
        .map(Celsius);
    g.power = s
        .ask(Query::Power, || d.power_usage())?
        .map(Watts::from_milliwatts);
    g.power_limit = s
        .ask(Query::PowerLimit, || d.enforced_power_limit())?
        .map(Watts::from_milliwatts);
    g.energy_joules = s
        .ask(Query::Energy, || d.total_energy_consumption())?
        .map(|mj| mj as f64 / 1000.0);
    g.fan = s.ask(Query::Fan, || d.fan_speed(0))?.map(Percent);
    Ok(())
}

fn read_clocks_and_links(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    g.sm_clock = s
        .ask(Query::SmClock, || d.clock_info(Clock::SM))?
        .map(MegaHertz);
    g.memory_clock = s
        .ask(Query::MemClock, || d.clock_info(Clock::Memory))?
        .map(MegaHertz);
    g.sm_clock_max = s
        .ask(Query::SmClockMax, || d.max_clock_info(Clock::SM))?
        .map(MegaHertz);
    g.memory_clock_max = s
        .ask(Query::MemClockMax, || d.max_clock_info(Clock::Memory))?
        .map(MegaHertz);
    // P-states are 0..=15; NVML_PSTATE_UNKNOWN (32) is not a reading.
    g.pstate = s
        .ask(Query::PState, || d.performance_state())?
        .map(|p| p.as_c())
        .filter(|&p| p <= 15);
    g.encoder_util = s
        .ask(Query::Encoder, || d.encoder_utilization())?
        .map(|u| Percent(u.utilization));
    g.decoder_util = s
        .ask(Query::Decoder, || d.decoder_utilization())?
        .map(|u| Percent(u.utilization));
    g.pcie_link_gen = s.ask(Query::PcieGen, || d.current_pcie_link_gen())?;
    g.pcie_link_width = s.ask(Query::PcieWidth, || d.current_pcie_link_width())?;
    // NVML reports PCIe throughput in KiB/s.
    let per_second = |kib: u32| Bytes(u64::from(kib) * Bytes::KIB);
    g.pcie_tx_per_second = s
        .ask(Query::PcieTx, || d.pcie_throughput(PcieUtilCounter::Send))?
        .map(per_second);
    g.pcie_rx_per_second = s
        .ask(Query::PcieRx, || {
            d.pcie_throughput(PcieUtilCounter::Receive)
        })?
        .map(per_second);
    Ok(())
}

/// NVML lists processes in two calls (how many, then fill) and nvml-wrapper leaves room
/// for only 5 more, so a burst of processes starting between the calls answers
/// INSUFFICIENT_SIZE. That is not "unknown": asking again at once (the count call then sees
/// the burst) beats showing the GPU with no processes for a whole interval.
fn retry_on_growth<T>(mut list: impl FnMut() -> Result<T, NvmlError>) -> Result<T, NvmlError> {
    const TRIES: usize = 3;
    let mut result = list();
    for _ in 1..TRIES {
        if !matches!(result, Err(NvmlError::InsufficientSize(_))) {
            break;
        }
        result = list();
    }
    result
}

/// Compute and graphics lists merged per PID (a process in both is `C+G`), with each
/// process's SM utilization since the previous sample.
fn read_processes(d: &Device, s: &mut Slot) -> Result<Vec<GpuProc>, Lost> {
    let compute = s.ask(Query::ComputeProcs, || {
        retry_on_growth(|| d.running_compute_processes())
    })?;
    let graphics = s.ask(Query::GraphicsProcs, || {
        retry_on_growth(|| d.running_graphics_processes())
    })?;
    let mut by_pid = merge_by_pid([
        (ProcKind::Compute, compute.unwrap_or_default()),
        (ProcKind::Graphics, graphics.unwrap_or_default()),
    ]);
    if by_pid.is_empty() {
        return Ok(Vec::new());
    }
    let since = s.last_util_sample;
    // NOT_FOUND means "no sample since `since`", an answer rather than a failure.
    let samples = s.ask(Query::ProcessUtil, || {
        match d.process_utilization_stats(since) {
            Err(NvmlError::NotFound) => Ok(Vec::new()),
            other => other,
        }
    })?;
    if let Some(samples) = samples {
        // NVML lists only processes that used the SMs in the window, so a process it
        // does not list was idle: a real 0, not an unknown.
        let newest = newest_sm_util(&samples, since, &mut s.last_util_sample);
        for p in by_pid.values_mut() {
            p.sm_util = Some(Percent(newest.get(&p.pid).copied().unwrap_or(0)));
        }
    }
    Ok(by_pid.into_values().collect())
}

/// One entry per PID over NVML's per-kind lists; a PID in both is `Both`.
fn merge_by_pid<const N: usize>(
    lists: [(ProcKind, Vec<ProcessInfo>); N],
) -> BTreeMap<u32, GpuProc> {
    let mut by_pid: BTreeMap<u32, GpuProc> = BTreeMap::new();
    for (kind, list) in lists {
        for ProcessInfo {
            pid,
            used_gpu_memory,
            ..
        } in list
        {
            let memory = match used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(Bytes(b)),
                UsedGpuMemory::Unavailable => None,
            };
            let entry = by_pid.entry(pid).or_insert(GpuProc {
                pid,
                kind,
                memory,
                sm_util: None,
            });
            if entry.kind != kind {
                entry.kind = ProcKind::Both;
            }
            entry.memory = entry.memory.or(memory);
        }
    }
    by_pid
}

/// The newest SM utilization per PID among samples taken after `since`; moves `last_seen`
/// to the newest timestamp so the next call asks only for what is new.
fn newest_sm_util(
    samples: &[ProcessUtilizationSample],
    since: u64,
    last_seen: &mut u64,
) -> BTreeMap<u32, u32> {
    let mut newest: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
    for x in samples.iter().filter(|x| x.timestamp > since) {
        let e = newest.entry(x.pid).or_insert((x.timestamp, x.sm_util));
        if x.timestamp >= e.0 {
            *e = (x.timestamp, x.sm_util);
        }
        *last_seen = (*last_seen).max(x.timestamp);
    }
    newest.into_iter().map(|(pid, (_, sm))| (pid, sm)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_table_has_nvml_wrappers_bits() {
        use super::super::throttle::TABLE;
        use nvml_wrapper::bitmasks::device::ThrottleReasons as Bits;
        let theirs = [
            Bits::GPU_IDLE,
            Bits::APPLICATIONS_CLOCKS_SETTING,
            Bits::SW_POWER_CAP,
            Bits::HW_SLOWDOWN,
            Bits::SYNC_BOOST,
            Bits::SW_THERMAL_SLOWDOWN,
            Bits::HW_THERMAL_SLOWDOWN,
            Bits::HW_POWER_BRAKE_SLOWDOWN,
            Bits::DISPLAY_CLOCK_SETTING,
        ];
        let ours: Vec<u64> = TABLE.iter().map(|r| r.nvml_bit).collect();
        let theirs: Vec<u64> = theirs.iter().map(|b| b.bits()).collect();
        assert_eq!(ours, theirs);
        let mask = (Bits::SW_POWER_CAP | Bits::HW_THERMAL_SLOWDOWN).bits();
        assert_eq!(
            ThrottleReason::from_nvml_bits(mask),
            [
                ThrottleReason::SwPowerCap,
                ThrottleReason::HwThermalSlowdown
            ]
        );
    }

    #[test]
    fn a_list_that_outgrew_its_buffer_is_asked_again_a_few_times() {
        let mut calls = 0;
        let r = retry_on_growth(|| {
            calls += 1;
            if calls < 3 {
                Err(NvmlError::InsufficientSize(None))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.ok(), Some(3));
        let mut calls = 0;
        let r: Result<(), _> = retry_on_growth(|| {
            calls += 1;
            Err(NvmlError::InsufficientSize(None))
        });
        assert!(matches!(r, Err(NvmlError::InsufficientSize(_))));
        assert_eq!(
            calls, 3,
            "bounded: a list that keeps growing is given up on"
        );
        let mut calls = 0;
        let _: Result<(), _> = retry_on_growth(|| {
            calls += 1;
            Err(NvmlError::NotSupported)
        });
        assert_eq!(calls, 1, "other errors are not retried");
    }

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
