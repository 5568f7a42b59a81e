//! The NVML source: real NVIDIA GPUs through nvml-wrapper. Owns the loaded library (no
//! global); a field NVML cannot give becomes `None`, never an error for the whole sample.

use std::path::Path;
use std::time::SystemTime;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor, TemperatureThreshold};
use nvml_wrapper::error::NvmlError;

use super::{GpuId, GpuReading, GpuSource, GpuStatus, HostInfo, Sample, SourceError};
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

pub struct NvmlSource {
    nvml: Nvml,
    hostname: String,
}

impl NvmlSource {
    /// Loads NVML from `lib` (or the system's `libnvidia-ml.so.1`) and initialises it.
    pub fn open(lib: Option<&Path>) -> Result<Self, NvmlOpenError> {
        let mut builder = Nvml::builder();
        if let Some(path) = lib {
            builder.lib_path(path.as_os_str());
        }
        let nvml = builder.init().map_err(open_error)?;
        Ok(NvmlSource {
            nvml,
            hostname: crate::source::hostname(),
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
        let gpus = (0..count).map(|i| self.gpu(i)).collect();
        let host = HostInfo {
            hostname: self.hostname.clone(),
            driver_version: self.nvml.sys_driver_version().ok(),
            cuda_version: self.nvml.sys_cuda_driver_version().ok().map(|v| {
                format!(
                    "{}.{}",
                    nvml_wrapper::cuda_driver_version_major(v),
                    nvml_wrapper::cuda_driver_version_minor(v)
                )
            }),
        };
        // TODO(issue 3): processes, host process info, the remaining fields.
        Ok(Sample {
            time: SystemTime::now(),
            host,
            gpus,
            processes: Vec::new(),
        })
    }
}

impl NvmlSource {
    fn gpu(&self, index: u32) -> GpuReading {
        let device = match self.nvml.device_by_index(index) {
            Ok(d) => d,
            Err(_) => {
                let mut g = GpuReading::absent(GpuId(format!("index-{index}")), index, "unknown");
                g.status = GpuStatus::Lost;
                return g;
            }
        };
        let uuid = device.uuid().unwrap_or_else(|_| format!("index-{index}"));
        let name = device.name().unwrap_or_else(|_| "NVIDIA GPU".into());
        let mut g = GpuReading::absent(GpuId(uuid), index, name);
        if let Ok(u) = device.utilization_rates() {
            g.util = Some(Percent(u.gpu));
            g.memory_util = Some(Percent(u.memory));
        }
        if let Ok(m) = device.memory_info() {
            g.memory_total = Some(Bytes(m.total));
            g.memory_used = Some(Bytes(m.used));
        }
        g.temperature = device.temperature(TemperatureSensor::Gpu).ok().map(Celsius);
        g.temperature_slowdown = device
            .temperature_threshold(TemperatureThreshold::Slowdown)
            .ok()
            .map(Celsius);
        g.power = device.power_usage().ok().map(Watts::from_milliwatts);
        g.power_limit = device
            .enforced_power_limit()
            .ok()
            .map(Watts::from_milliwatts);
        g.fan = device.fan_speed(0).ok().map(Percent);
        g.sm_clock = device.clock_info(Clock::SM).ok().map(MegaHertz);
        g.memory_clock = device.clock_info(Clock::Memory).ok().map(MegaHertz);
        g.pstate = device.performance_state().ok().map(|p| p as u32);
        g
    }
}
