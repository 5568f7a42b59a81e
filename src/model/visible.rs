//! Which GPUs a process was told it may use, from its environment: `CUDA_VISIBLE_DEVICES`
//! (indices, `GPU-…` UUIDs or unique UUID prefixes, `MIG-…`), or a container's
//! `NVIDIA_VISIBLE_DEVICES` (the runtime mounts only those GPUs). People talk in the
//! numbers their job sees ("job GPU 0"), so this also turns a physical GPU into the index
//! the process knows it by. AMD and Intel GPUs have their own variables (ROCm's
//! `ROCR_VISIBLE_DEVICES`/`HIP_VISIBLE_DEVICES`, Level Zero's `ZE_AFFINITY_MASK`). Pure.

use crate::reading::device_list::{Dialect, GpuSelector, parse_entry};
use crate::reading::workload::ProcEnv;
use crate::reading::{GpuReading, Vendor};

/// What a process's environment says about its GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinning {
    /// The environment could not be read: nothing is known.
    Unknown,
    /// Neither variable is set: CUDA uses every GPU, and device 0 is GPU 0 — the pile-up.
    Unset,
    /// `CUDA_VISIBLE_DEVICES` (or the container's device list) names these entries, in
    /// the order the process numbers them.
    Set {
        variable: &'static str,
        entries: Vec<String>,
    },
}

/// How a process numbers one physical GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobIndex {
    /// The index the process sees the GPU as.
    pub local: u32,
    /// Index entries mean CUDA's order, which is the PCI (NVML) order only with
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID` or on GPUs that are all the same model.
    pub certain: bool,
}

/// The variables that restrict a process to some GPUs of `vendor`, the first one set
/// winning. ROCm reads `ROCR_VISIBLE_DEVICES` below HIP's own list, and HIP also honours
/// `CUDA_VISIBLE_DEVICES`; oneAPI programs read Level Zero's mask or the SYCL selector.
/// Unknown vendors (older remote hosts) are taken for NVIDIA, as gpuwatch once only was.
pub fn variables(vendor: Option<Vendor>) -> &'static [&'static str] {
    match vendor {
        Some(Vendor::Amd) => &[
            "ROCR_VISIBLE_DEVICES",
            "HIP_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES",
        ],
        Some(Vendor::Intel) => &["ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR"],
        Some(Vendor::Nvidia) | None => &["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"],
    }
}

/// What an unpinned process lacks, in words for the footer (`no CUDA_VISIBLE_DEVICES`).
pub fn unset_words(vendor: Option<Vendor>) -> &'static str {
    match vendor {
        Some(Vendor::Amd) => "no ROCR_/HIP_VISIBLE_DEVICES",
        Some(Vendor::Intel) => "no ZE_AFFINITY_MASK",
        Some(Vendor::Nvidia) | None => "no CUDA_VISIBLE_DEVICES",
    }
}

/// Reads the pinning from an environment (`None`: not readable), for an NVIDIA GPU.
pub fn pinning(env: Option<&ProcEnv>) -> Pinning {
    pinning_for(env, Some(Vendor::Nvidia))
}

/// The same for a GPU of `vendor`: a process on an AMD GPU with `HIP_VISIBLE_DEVICES` set
/// is pinned, whatever its CUDA variables say.
pub fn pinning_for(env: Option<&ProcEnv>, vendor: Option<Vendor>) -> Pinning {
    let Some(env) = env else {
        return Pinning::Unknown;
    };
    for &variable in variables(vendor) {
        if let Some(value) = env.get(variable) {
            let entries = value
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_string)
                .collect();
            return Pinning::Set { variable, entries };
        }
    }
    Pinning::Unset
}

/// The entries CUDA (or the container runtime) acts on, in the one device-list grammar
/// (`select`, CUDA's dialect). CUDA stops at the first entry it cannot read and hides it
/// and everything after it, so the list ends there.
fn devices(entries: &[String]) -> Vec<GpuSelector> {
    entries
        .iter()
        .map_while(|e| parse_entry(e, Dialect::Cuda).ok())
        .collect()
}

/// The index the process sees `gpu` as, among `all` (the host's GPUs); `None` when the
/// pinning does not include it or is unknown.
pub fn job_index(
    pin: &Pinning,
    env: Option<&ProcEnv>,
    gpu: &GpuReading,
    all: &[GpuReading],
) -> Option<JobIndex> {
    match pin {
        Pinning::Unknown => None,
        Pinning::Unset => Some(JobIndex {
            local: gpu.index,
            certain: true,
        }),
        // ROCm and Level Zero number only their own vendor's GPUs (and Level Zero's mask
        // has sub-device syntax): not worked out, so not guessed.
        Pinning::Set { .. } if matches!(gpu.vendor, Some(Vendor::Amd | Vendor::Intel)) => None,
        Pinning::Set { variable, entries } => {
            if entries
                .iter()
                .any(|e| matches!(e.as_str(), "all" | "none" | "void"))
            {
                // NVIDIA_VISIBLE_DEVICES=all mounts every GPU, numbered as on the host.
                return entries.iter().any(|e| e == "all").then_some(JobIndex {
                    local: gpu.index,
                    certain: true,
                });
            }
            let in_container = *variable == "NVIDIA_VISIBLE_DEVICES";
            job_index_in(entries, in_container, env, gpu, all)
        }
    }
}

fn job_index_in(
    entries: &[String],
    in_container: bool,
    env: Option<&ProcEnv>,
    gpu: &GpuReading,
    all: &[GpuReading],
) -> Option<JobIndex> {
    let devices = devices(entries);
    // A MIG entry names the instance; the process numbers it where its GPU would be.
    let names = |d: &GpuSelector, g: &GpuReading| d.matches_gpu_or_instance(g);
    if in_container {
        // Inside a container CUDA numbers the mounted GPUs in PCI order, whatever the
        // order of the list.
        let mut mounted: Vec<&GpuReading> = all
            .iter()
            .filter(|g| devices.iter().any(|d| names(d, g)))
            .collect();
        mounted.sort_by_key(|g| g.index);
        let local = mounted.iter().position(|g| g.id == gpu.id)?;
        return Some(JobIndex {
            local: local as u32,
            certain: true,
        });
    }
    let local = devices.iter().position(|d| names(d, gpu))?;
    let by_uuid = matches!(devices[local], GpuSelector::Uuid(_));
    let pci_order = env.and_then(|e| e.get("CUDA_DEVICE_ORDER")) == Some("PCI_BUS_ID");
    let uniform = all.windows(2).all(|w| w[0].name == w[1].name);
    Some(JobIndex {
        local: local as u32,
        certain: by_uuid || pci_order || uniform,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::GpuId;

    fn gpus(names: &[&str]) -> Vec<GpuReading> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| GpuReading::absent(GpuId(format!("GPU-{i}aaa-uuid")), i as u32, *n))
            .collect()
    }

    fn env(vars: &[(&str, &str)]) -> ProcEnv {
        ProcEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn unreadable_unset_and_set() {
        assert_eq!(pinning(None), Pinning::Unknown);
        assert_eq!(
            pinning(Some(&env(&[("OMP_NUM_THREADS", "8")]))),
            Pinning::Unset
        );
        assert_eq!(
            pinning(Some(&env(&[("CUDA_VISIBLE_DEVICES", "2, 3")]))),
            Pinning::Set {
                variable: "CUDA_VISIBLE_DEVICES",
                entries: vec!["2".into(), "3".into()]
            }
        );
        // An empty CUDA_VISIBLE_DEVICES hides every GPU: set, with no entries.
        assert_eq!(
            pinning(Some(&env(&[("CUDA_VISIBLE_DEVICES", "")]))),
            Pinning::Set {
                variable: "CUDA_VISIBLE_DEVICES",
                entries: vec![]
            }
        );
    }

    #[test]
    fn amd_and_intel_gpus_are_pinned_by_their_own_variables() {
        let hip = env(&[("HIP_VISIBLE_DEVICES", "1")]);
        assert_eq!(pinning(Some(&hip)), Pinning::Unset, "not CUDA's");
        assert_eq!(
            pinning_for(Some(&hip), Some(Vendor::Amd)),
            Pinning::Set {
                variable: "HIP_VISIBLE_DEVICES",
                entries: vec!["1".into()]
            }
        );
        // ROCR's list is the one the runtime applies first.
        let both = env(&[
            ("HIP_VISIBLE_DEVICES", "0"),
            ("ROCR_VISIBLE_DEVICES", "GPU-1a2b"),
        ]);
        assert!(matches!(
            pinning_for(Some(&both), Some(Vendor::Amd)),
            Pinning::Set {
                variable: "ROCR_VISIBLE_DEVICES",
                ..
            }
        ));
        let ze = env(&[("ZE_AFFINITY_MASK", "0.1")]);
        assert!(matches!(
            pinning_for(Some(&ze), Some(Vendor::Intel)),
            Pinning::Set {
                variable: "ZE_AFFINITY_MASK",
                ..
            }
        ));
        let cuda = env(&[("CUDA_VISIBLE_DEVICES", "0")]);
        assert_eq!(
            pinning_for(Some(&cuda), Some(Vendor::Intel)),
            Pinning::Unset
        );
        // Their numbering is not guessed.
        let mut amd = gpus(&["MI300X"; 2]);
        amd[1].vendor = Some(Vendor::Amd);
        let pin = pinning_for(Some(&hip), Some(Vendor::Amd));
        assert_eq!(job_index(&pin, Some(&hip), &amd[1], &amd), None);
    }

    #[test]
    fn the_job_numbers_gpus_in_the_order_it_was_given_them() {
        let all = gpus(&["H100"; 8]);
        let e = env(&[("CUDA_VISIBLE_DEVICES", "3,1")]);
        let pin = pinning(Some(&e));
        let at = |i: usize| job_index(&pin, Some(&e), &all[i], &all);
        assert_eq!(
            at(3),
            Some(JobIndex {
                local: 0,
                certain: true
            })
        );
        assert_eq!(
            at(1),
            Some(JobIndex {
                local: 1,
                certain: true
            })
        );
        assert_eq!(at(0), None, "not among its GPUs");
        // By UUID prefix, as Slurm and nvisel write it.
        let e = env(&[("CUDA_VISIBLE_DEVICES", "GPU-5aaa")]);
        let pin = pinning(Some(&e));
        assert_eq!(job_index(&pin, Some(&e), &all[5], &all).unwrap().local, 0);
        // Unset: the host's numbering.
        assert_eq!(
            job_index(&Pinning::Unset, None, &all[4], &all)
                .unwrap()
                .local,
            4
        );
    }

    #[test]
    fn mixed_models_make_index_entries_uncertain_unless_pci_order_is_pinned() {
        let all = gpus(&["H100", "T4", "H100"]);
        let e = env(&[("CUDA_VISIBLE_DEVICES", "2,0")]);
        let pin = pinning(Some(&e));
        assert!(!job_index(&pin, Some(&e), &all[2], &all).unwrap().certain);
        let e = env(&[
            ("CUDA_VISIBLE_DEVICES", "2,0"),
            ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        ]);
        let pin = pinning(Some(&e));
        assert!(job_index(&pin, Some(&e), &all[2], &all).unwrap().certain);
    }

    #[test]
    fn a_container_numbers_its_mounted_gpus_in_pci_order() {
        let all = gpus(&["H100"; 8]);
        let e = env(&[("NVIDIA_VISIBLE_DEVICES", "6,2")]);
        let pin = pinning(Some(&e));
        assert_eq!(job_index(&pin, Some(&e), &all[2], &all).unwrap().local, 0);
        assert_eq!(job_index(&pin, Some(&e), &all[6], &all).unwrap().local, 1);
        let e = env(&[("NVIDIA_VISIBLE_DEVICES", "all")]);
        let pin = pinning(Some(&e));
        assert_eq!(job_index(&pin, Some(&e), &all[6], &all).unwrap().local, 6);
        let e = env(&[("NVIDIA_VISIBLE_DEVICES", "void")]);
        let pin = pinning(Some(&e));
        assert_eq!(job_index(&pin, Some(&e), &all[6], &all), None);
    }
}
