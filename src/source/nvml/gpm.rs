//! SM activity per MIG instance from GPM (GPU performance monitoring, Hopper and newer):
//! a GPM sample of each GPU instance every poll, and NVML's SM-utilisation metric between
//! it and the previous poll's. Where GPM is missing (older GPUs and drivers, the symbol
//! absent) it is not asked again and the instance's util stays `None` (`N/A`), never 0;
//! the first poll has nothing to compare with, so it is `None` too.
//!
//! A `GpmSample` borrows the `Nvml` the source owns, so the previous samples are kept as
//! raw handles and rebuilt for the one call that compares them; every handle is freed
//! once, when it is replaced, when its instance goes away, or when the source is dropped.

use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::gpm::gpm_metrics_get;
use nvml_wrapper::{Device, GpmSample, Nvml};
use nvml_wrapper_sys::bindings::nvmlGpmSample_t;

use crate::units::Percent;

/// A sample handle allocated by NVML, owned here.
#[derive(Debug)]
struct Handle(nvmlGpmSample_t);

// SAFETY: a GPM sample is a plain buffer NVML fills and reads; it is not tied to a thread,
// and only the source (one thread at a time) touches it.
unsafe impl Send for Handle {}

/// One GPU's GPM state: whether it supports GPM, and each GPU instance's last sample.
#[derive(Debug, Default)]
pub(super) struct GpmSamples {
    /// `Some(false)` once the GPU (or driver) said no: never asked again.
    supported: Option<bool>,
    last: Vec<(u32, Handle)>,
}

impl GpmSamples {
    /// SM activity of GPU instance `gi` of `d` since the previous call, when GPM gives it.
    pub(super) fn sm_activity(&mut self, d: &Device, gi: u32) -> Option<Percent> {
        if *self
            .supported
            .get_or_insert_with(|| d.gpm_support().unwrap_or(false))
        {
            self.sample(d, gi)
        } else {
            None
        }
    }

    fn sample(&mut self, d: &Device, gi: u32) -> Option<Percent> {
        let nvml = d.nvml();
        let now = match d.gpm_mig_sample(gi) {
            Ok(s) => s,
            Err(nvml_wrapper::error::NvmlError::NotSupported)
            | Err(nvml_wrapper::error::NvmlError::FunctionNotFound) => {
                self.supported = Some(false);
                return None;
            }
            Err(_) => return None,
        };
        let previous = self
            .last
            .iter()
            .position(|(g, _)| *g == gi)
            .map(|at| self.last.swap_remove(at).1);
        let value = previous.and_then(|Handle(raw)| {
            // SAFETY: `raw` came from `into_handle` of a sample of this same library and
            // is owned here alone; rebuilt once, it is freed when `before` drops.
            let before = unsafe { GpmSample::from_handle(nvml, raw) };
            let got = gpm_metrics_get(nvml, &before, &now, &[GpmMetricId::SmUtil]).ok()?;
            got.into_iter().next()?.ok()
        });
        self.last.push((gi, Handle(now.into_handle())));
        value.map(|m| Percent(m.value.round().clamp(0.0, 100.0) as u32))
    }

    /// Frees the samples of GPU instances not in `live` (destroyed, or MIG turned off).
    pub(super) fn keep_only(&mut self, nvml: &Nvml, live: &[u32]) {
        let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.last)
            .into_iter()
            .partition(|(gi, _)| live.contains(gi));
        self.last = keep;
        free(nvml, gone);
    }

    /// Frees every sample (the source is going away).
    pub(super) fn free_all(&mut self, nvml: &Nvml) {
        free(nvml, std::mem::take(&mut self.last));
    }
}

fn free(nvml: &Nvml, handles: Vec<(u32, Handle)>) {
    for (_, Handle(raw)) in handles {
        // SAFETY: as in `sample`: owned here alone, freed exactly once by the drop.
        drop(unsafe { GpmSample::from_handle(nvml, raw) });
    }
}
