//! `pick --format env`: the variable each vendor's runtime restricts a process's GPUs
//! with, for `export $(gpuwatch pick --format env)`.
//! - NVIDIA: `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=…`, GPUs by NVML index (the
//!   order pinned so CUDA counts as NVML does), MIG instances by their `MIG-` UUID (CUDA
//!   names instances no other way).
//! - AMD: `ROCR_VISIBLE_DEVICES=…`, what ROCm recommends on Linux. It takes indices or
//!   `GPU-<unique_id>` UUIDs; the UUID is written where amdgpu gave a unique id (our id
//!   `AMD-<16 hex>`), since ROCm's index order need not be the DRM card order. Not
//!   `HIP_VISIBLE_DEVICES` as well: HIP applies it after ROCR, counting within the GPUs
//!   ROCR left, so the same values in both would name other GPUs.
//! - Intel: `ZE_AFFINITY_MASK=…` (Level Zero), by index: Level Zero has no UUID form; the
//!   index is the DRM card order gpuwatch numbers by (the README says so).
//!
//! A pick across vendors is refused: no one variable selects them, and a job given two
//! would see one GPU in each runtime.

use super::slot::Slot;
use crate::reading::Vendor;

/// The `env` line for `slots`, or why there is none.
pub fn line(slots: &[Slot]) -> Result<String, String> {
    let mut vendors: Vec<Vendor> = Vec::new();
    for v in slots.iter().map(|s| s.vendor().unwrap_or(Vendor::Nvidia)) {
        if !vendors.contains(&v) {
            vendors.push(v);
        }
    }
    let vendor = match vendors.as_slice() {
        [] => Vendor::Nvidia,
        [one] => *one,
        _ => {
            let names: Vec<&str> = Vendor::ALL
                .iter()
                .filter(|v| vendors.contains(v))
                .map(|v| v.name())
                .collect();
            return Err(format!(
                "the GPUs picked are of several vendors ({}): no one variable selects them; \
                 narrow with --only, or use --format uuids",
                names.join(", ")
            ));
        }
    };
    let entries = |f: &dyn Fn(&Slot) -> String| slots.iter().map(f).collect::<Vec<_>>().join(",");
    Ok(match vendor {
        Vendor::Nvidia => format!(
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={}",
            entries(&|s| s.entry())
        ),
        Vendor::Amd => format!("ROCR_VISIBLE_DEVICES={}", entries(&rocm_entry)),
        Vendor::Intel => format!(
            "ZE_AFFINITY_MASK={}",
            entries(&|s| s.gpu().index.to_string())
        ),
    })
}

/// `GPU-1cb6d8a2b3e4f501` for an amdgpu unique id (what `rocminfo` lists as the UUID),
/// else the index.
fn rocm_entry(s: &Slot) -> String {
    let g = s.gpu();
    match g.id.0.strip_prefix("AMD-") {
        Some(hex) if hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("GPU-{hex}")
        }
        _ => g.index.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::{GpuId, GpuReading};

    fn gpu(index: u32, id: &str, vendor: Vendor) -> GpuReading {
        let mut g = GpuReading::absent(GpuId(id.into()), index, "g");
        g.vendor = Some(vendor);
        g
    }

    #[test]
    fn each_vendor_gets_its_runtimes_variable() {
        let amd = [
            gpu(0, "AMD-1cb6d8a2b3e4f501", Vendor::Amd),
            gpu(1, "AMD-0000:03:00.0", Vendor::Amd),
        ];
        let slots: Vec<Slot> = amd.iter().map(Slot::Gpu).collect();
        assert_eq!(
            line(&slots).unwrap(),
            "ROCR_VISIBLE_DEVICES=GPU-1cb6d8a2b3e4f501,1"
        );
        let intel = [gpu(2, "INTEL-0000:00:02.0", Vendor::Intel)];
        assert_eq!(line(&[Slot::Gpu(&intel[0])]).unwrap(), "ZE_AFFINITY_MASK=2");
        let nv = gpu(3, "GPU-aa", Vendor::Nvidia);
        let err = line(&[Slot::Gpu(&nv), Slot::Gpu(&amd[0])]).unwrap_err();
        assert!(err.contains("several vendors (nvidia, amd)"), "{err}");
        // Sources that do not say (old recordings) are NVIDIA's.
        let old = GpuReading::absent(GpuId("GPU-bb".into()), 4, "g");
        assert_eq!(
            line(&[Slot::Gpu(&old)]).unwrap(),
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=4"
        );
    }
}
