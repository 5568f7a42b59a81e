//! MIG (multi-instance GPU) devices as a GPU reading carries them: one entry per compute
//! instance, with its ids, profile and memory, and which of the GPU's processes run on it.
//! Only the data; NVML reads it (`nvml::mig`), the wire writes it.

use super::GpuId;
use crate::units::{Bytes, Percent};

#[derive(Debug, Clone, PartialEq)]
pub struct MigReading {
    /// `MIG-…`: what `CUDA_VISIBLE_DEVICES` takes to select the instance.
    pub id: GpuId,
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    /// The profile, e.g. `3g.40gb` (the end of NVML's MIG device name).
    pub profile: Option<String>,
    pub memory_total: Option<Bytes>,
    pub memory_used: Option<Bytes>,
    /// SM activity of the instance (its GPU instance) since the previous sample, from GPM
    /// (Hopper and newer); `None` — shown `N/A`, never 0 — where GPM is not there and on
    /// the first sample. NVML's utilisation calls give nothing per instance.
    pub util: Option<Percent>,
    /// PIDs of the GPU's processes on this instance (their readings stay on the GPU).
    pub pids: Vec<u32>,
}

/// `NVIDIA H100 80GB HBM3 MIG 3g.40gb` → `3g.40gb`.
pub fn profile_of(name: &str) -> Option<String> {
    let (_, profile) = name.rsplit_once("MIG ")?;
    let profile = profile.trim();
    (!profile.is_empty()).then(|| profile.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_profile_is_the_end_of_the_mig_device_name() {
        use super::profile_of;
        assert_eq!(
            profile_of("NVIDIA H100 80GB HBM3 MIG 3g.40gb").as_deref(),
            Some("3g.40gb")
        );
        assert_eq!(
            profile_of("NVIDIA A100-SXM4-40GB MIG 1g.5gb+me").as_deref(),
            Some("1g.5gb+me")
        );
        assert_eq!(profile_of("NVIDIA H100"), None);
    }
}
