//! The fake's GPM (GPU performance monitoring, Hopper and newer) for MIG instances: a GPU
//! supports GPM when one of its `mig_devices` has an `sm_activity` reading; a sample taken
//! of a GPU instance remembers (GPU, GPU instance, tick), and the SM-utilisation metric
//! between two samples is that instance's `sm_activity` at the later sample's tick (the
//! real library computes it from counters; the scenario says the answer). Other metrics
//! are NOT_SUPPORTED. Owns the sample allocation and the C layouts of the GPM structs.

use std::ffi::{c_char, c_double, c_uint};

use crate::scenario::Step;
use crate::{Device, mig};
use crate::{ERROR_INVALID_ARGUMENT, ERROR_NOT_SUPPORTED, SUCCESS, put, with_state};

/// What a sample handle points to.
pub struct Sample {
    gpu: usize,
    gpu_instance: u32,
    tick: u64,
}

#[repr(C)]
pub struct Support {
    version: c_uint,
    is_supported_device: c_uint,
}

#[repr(C)]
pub struct MetricInfo {
    short_name: *mut c_char,
    long_name: *mut c_char,
    unit: *mut c_char,
}

#[repr(C)]
pub struct Metric {
    metric_id: c_uint,
    nvml_return: c_uint,
    value: c_double,
    info: MetricInfo,
}

/// NVML's `nvmlGpmMetricsGet_t`, `NVML_GPM_METRIC_MAX` (210) metrics.
#[repr(C)]
pub struct MetricsGet {
    version: c_uint,
    num_metrics: c_uint,
    sample1: *mut Sample,
    sample2: *mut Sample,
    metrics: [Metric; 210],
}

/// `NVML_GPM_METRIC_SM_UTIL`.
const SM_UTIL: c_uint = 2;

fn parent_index(d: Device) -> Option<usize> {
    if mig::decode(d).is_some() {
        return None;
    }
    (d as usize).checked_sub(1)
}

fn supports(s: &crate::State, gpu: usize) -> bool {
    s.scenario
        .gpus
        .get(gpu)
        .is_some_and(|g| g.mig_devices.iter().any(|m| m.sm_activity.is_some()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(d: Device, out: *mut Support) -> u32 {
    with_state("nvmlGpmQueryDeviceSupport", |s| {
        let Some(gpu) = parent_index(d).filter(|i| *i < s.scenario.gpus.len()) else {
            return ERROR_INVALID_ARGUMENT;
        };
        // SAFETY: NVML's contract: `out` points to an nvmlGpmSupport_t.
        unsafe { (*out).is_supported_device = c_uint::from(supports(s, gpu)) };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(out: *mut *mut Sample) -> u32 {
    with_state("nvmlGpmSampleAlloc", |_| {
        let sample = Box::into_raw(Box::new(Sample {
            gpu: usize::MAX,
            gpu_instance: 0,
            tick: 0,
        }));
        // SAFETY: NVML's contract: `out` points to a sample handle.
        unsafe { put(out, sample) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleFree(sample: *mut Sample) -> u32 {
    with_state("nvmlGpmSampleFree", |_| {
        if sample.is_null() {
            return ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: every handle came from `nvmlGpmSampleAlloc`'s Box; freed once by contract.
        drop(unsafe { Box::from_raw(sample) });
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMigSampleGet(d: Device, gi: c_uint, sample: *mut Sample) -> u32 {
    with_state("nvmlGpmMigSampleGet", |s| {
        let Some(gpu) = parent_index(d).filter(|i| supports(s, *i)) else {
            return ERROR_NOT_SUPPORTED;
        };
        let known = s.scenario.gpus[gpu]
            .mig_devices
            .iter()
            .any(|m| m.gpu_instance_id == gi);
        if !known || sample.is_null() {
            return ERROR_INVALID_ARGUMENT;
        }
        // SAFETY: `sample` is a live handle from `nvmlGpmSampleAlloc`.
        unsafe {
            *sample = Sample {
                gpu,
                gpu_instance: gi,
                tick: s.tick,
            }
        };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMetricsGet(req: *mut MetricsGet) -> u32 {
    with_state("nvmlGpmMetricsGet", |s| {
        // SAFETY: NVML's contract: `req` points to an nvmlGpmMetricsGet_t whose samples
        // are live handles.
        let req = unsafe { &mut *req };
        if req.sample1.is_null() || req.sample2.is_null() || req.num_metrics as usize > 210 {
            return ERROR_INVALID_ARGUMENT;
        }
        let (a, b) = unsafe { (&*req.sample1, &*req.sample2) };
        if (a.gpu, a.gpu_instance) != (b.gpu, b.gpu_instance) || a.tick >= b.tick {
            return ERROR_INVALID_ARGUMENT;
        }
        let activity = s
            .scenario
            .gpus
            .get(b.gpu)
            .and_then(|g| {
                g.mig_devices
                    .iter()
                    .find(|m| m.gpu_instance_id == b.gpu_instance)
            })
            .and_then(|m| m.sm_activity.as_ref())
            .map(|r| r.at(b.tick));
        for m in req.metrics.iter_mut().take(req.num_metrics as usize) {
            m.info = MetricInfo {
                short_name: std::ptr::null_mut(),
                long_name: std::ptr::null_mut(),
                unit: std::ptr::null_mut(),
            };
            match (m.metric_id, activity) {
                (SM_UTIL, Some(Step::Value(v))) => {
                    m.value = v as c_double;
                    m.nvml_return = SUCCESS;
                }
                (SM_UTIL, Some(Step::Error(e))) => m.nvml_return = e.code(),
                _ => m.nvml_return = ERROR_NOT_SUPPORTED,
            }
        }
        SUCCESS
    })
}
