//! Reading one NVML device into a `GpuReading` and its process list: every query through
//! `Slot::ask`, so a field the device cannot answer is `None` and a lost GPU stops the read.
//! Owns no state of its own (the `Slot` is the caller's) and never touches /proc.

use std::collections::BTreeMap;

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};

use super::{Fixed, GpuProc, Lost, Query, Slot};
use crate::reading::throttle::ThrottleReason;
use crate::reading::{ComputeMode, GpuId, GpuReading, ProcKind};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// Reads one GPU. Every query is independent: one the device cannot answer is `None`.
pub(super) fn read_gpu(
    d: &Device,
    index: u32,
    s: &mut Slot,
    calls: &super::procs::ProcessCalls,
) -> Result<(GpuReading, Vec<GpuProc>), Lost> {
    let mut g = read_identity(d, index, s)?;
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
    // Corrected ECC errors come with the health counters (one field-values call).
    // NVML_DEVICE_MIG_ENABLE is 1.
    g.mig_enabled = s.ask(Query::Mig, || d.mig_mode())?.map(|m| m.current == 1);
    read_modes(d, s, &mut g)?;
    super::health::read_health(d, s, &mut g)?;
    read_counters_fallback(d, s, &mut g)?;
    let procs = read_processes(d, s, calls)?;
    if g.mig_enabled == Some(true) {
        g.mig_devices = super::mig::read_instances(d, &procs, &mut s.gpm);
    } else {
        s.gpm.keep_only(d.nvml(), &[]);
    }
    Ok((g, procs))
}

/// Who the board is: its UUID (which doubles as the liveness probe), name and bus id, the
/// last two asked once per board; a reading with nothing else known yet.
fn read_identity(d: &Device, index: u32, s: &mut Slot) -> Result<GpuReading, Lost> {
    // A lost GPU fails the UUID first.
    let uuid = match d.uuid() {
        Ok(u) => u,
        Err(NvmlError::GpuLost) => return Err(Lost),
        Err(_) => GpuId::without_uuid("nvml", index).0,
    };
    if s.uuid.as_deref() != Some(uuid.as_str()) {
        // A different board in this slot (or the first sighting): forget what the old
        // one could not do, and re-read its identity.
        *s = Slot {
            uuid: Some(uuid.clone()),
            ..Slot::default()
        };
    }
    if std::mem::take(&mut s.lost_since_read) {
        // It answers again after being lost: a reset board may come back different.
        s.forget_fixed();
    }
    if s.name.is_none() {
        s.name = s.ask(Query::Name, || d.name())?;
    }
    if s.pci_bus_id.is_none() {
        s.pci_bus_id = s.ask(Query::PciInfo, || d.pci_info())?.map(|p| p.bus_id);
    }
    let name = s.name.clone().unwrap_or_else(|| "NVIDIA GPU".into());
    let mut g = GpuReading::absent(GpuId(uuid), index, name);
    g.vendor = Some(crate::reading::Vendor::Nvidia);
    g.pci_bus_id = s.pci_bus_id.clone();
    Ok(g)
}

/// Compute and persistence mode (nvidia-smi's `compute_mode`, `persistence_mode`).
fn read_modes(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    use nvml_wrapper::enum_wrappers::device::ComputeMode as Nvml;
    g.compute_mode = s
        .ask(Query::ComputeMode, || d.compute_mode())?
        .map(|m| match m {
            Nvml::Default => ComputeMode::Default,
            Nvml::ExclusiveThread => ComputeMode::ExclusiveThread,
            Nvml::Prohibited => ComputeMode::Prohibited,
            Nvml::ExclusiveProcess => ComputeMode::ExclusiveProcess,
        });
    g.persistence_mode = s.ask(Query::Persistence, || d.is_in_persistent_mode())?;
    Ok(())
}

/// PCIe replays and corrected ECC errors where the field values did not answer (drivers
/// and boards that lack those field ids): from their own calls, as nvidia-smi reads them.
fn read_counters_fallback(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    if g.health.pcie_replays.is_none() {
        g.health.pcie_replays = s
            .ask(Query::PcieReplays, || d.pcie_replay_counter())?
            .map(u64::from);
    }
    if g.health.ecc_corrected.is_none() {
        g.health.ecc_corrected = s.ask(Query::EccCorrected, || {
            d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
        })?;
    }
    Ok(())
}

fn read_thermal_and_power(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    let fixed = read_fixed(d, s)?;
    g.temperature = s
        .ask(Query::Temperature, || d.temperature(TemperatureSensor::Gpu))?
        .map(Celsius);
    g.temperature_slowdown = fixed.temperature_slowdown.map(Celsius);
    g.temperature_shutdown = fixed.temperature_shutdown.map(Celsius);
    g.power = s
        .ask(Query::Power, || d.power_usage())?
        .map(Watts::from_milliwatts);
    // Not fixed: an administrator (`nvidia-smi -pl`) or a power manager moves it at any time.
    g.power_limit = s
        .ask(Query::PowerLimit, || d.enforced_power_limit())?
        .map(Watts::from_milliwatts);
    g.energy_joules = s
        .ask(Query::Energy, || d.total_energy_consumption())?
        .map(|mj| mj as f64 / 1000.0);
    g.fan = s.ask(Query::Fan, || d.fan_speed(0))?.map(Percent);
    Ok(())
}

/// The board's thresholds and maximum clocks, asked the first time and kept (`Fixed`).
/// A transient failure is not kept: a fact that did not answer is asked again next time.
fn read_fixed(d: &Device, s: &mut Slot) -> Result<Fixed, Lost> {
    if let Some(fixed) = s.fixed {
        return Ok(fixed);
    }
    let fixed = Fixed {
        temperature_slowdown: s.ask(Query::TempSlowdown, || {
            d.temperature_threshold(TemperatureThreshold::Slowdown)
        })?,
        temperature_shutdown: s.ask(Query::TempShutdown, || {
            d.temperature_threshold(TemperatureThreshold::Shutdown)
        })?,
        sm_clock_max: s.ask(Query::SmClockMax, || d.max_clock_info(Clock::SM))?,
        memory_clock_max: s.ask(Query::MemClockMax, || d.max_clock_info(Clock::Memory))?,
        graphics_clock_max: s.ask(Query::GraphicsClockMax, || {
            d.max_clock_info(Clock::Graphics)
        })?,
    };
    // Kept only when every fact answered or can never answer (`Slot::never`): a timeout
    // leaves a hole that the next sample fills.
    let complete = [
        (fixed.temperature_slowdown.is_some(), Query::TempSlowdown),
        (fixed.temperature_shutdown.is_some(), Query::TempShutdown),
        (fixed.sm_clock_max.is_some(), Query::SmClockMax),
        (fixed.memory_clock_max.is_some(), Query::MemClockMax),
        (fixed.graphics_clock_max.is_some(), Query::GraphicsClockMax),
    ]
    .iter()
    .all(|&(known, q)| known || s.never.contains(&q));
    if complete {
        s.fixed = Some(fixed);
    }
    Ok(fixed)
}

fn read_clocks_and_links(d: &Device, s: &mut Slot, g: &mut GpuReading) -> Result<(), Lost> {
    let fixed = read_fixed(d, s)?;
    g.sm_clock_max = fixed.sm_clock_max.map(MegaHertz);
    g.memory_clock_max = fixed.memory_clock_max.map(MegaHertz);
    g.graphics_clock_max = fixed.graphics_clock_max.map(MegaHertz);
    g.sm_clock = s
        .ask(Query::SmClock, || d.clock_info(Clock::SM))?
        .map(MegaHertz);
    g.memory_clock = s
        .ask(Query::MemClock, || d.clock_info(Clock::Memory))?
        .map(MegaHertz);
    g.graphics_clock = s
        .ask(Query::GraphicsClock, || d.clock_info(Clock::Graphics))?
        .map(MegaHertz);
    g.video_clock = s
        .ask(Query::VideoClock, || d.clock_info(Clock::Video))?
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
    if s.pcie_max.is_none() {
        let gen_max = s.ask(Query::PcieGenMax, || d.max_pcie_link_gen())?;
        let width_max = s.ask(Query::PcieWidthMax, || d.max_pcie_link_width())?;
        s.pcie_max = Some((gen_max, width_max));
    }
    (g.pcie_link_gen_max, g.pcie_link_width_max) = s.pcie_max.unwrap_or_default();
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
fn read_processes(
    d: &Device,
    s: &mut Slot,
    calls: &super::procs::ProcessCalls,
) -> Result<Vec<GpuProc>, Lost> {
    let compute = s.ask(Query::ComputeProcs, || {
        retry_on_growth(|| calls.list(d, false))
    })?;
    let graphics = s.ask(Query::GraphicsProcs, || {
        retry_on_growth(|| calls.list(d, true))
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
            gpu_instance_id,
            compute_instance_id,
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
                instance: gpu_instance_id.zip(compute_instance_id),
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
        use crate::reading::throttle::TABLE;
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
}
