//! The GPUs an inherited `CUDA_VISIBLE_DEVICES` lets the caller use: the value read as
//! CUDA reads it (`select`'s grammar, CUDA's dialect: indices, `GPU-` UUIDs or unique
//! prefixes of them, and MIG instances by their `MIG-` UUID) and the GPUs and instances it
//! names in a sample. Pure: the value comes from the injected environment (`config`), the
//! GPUs from the caller's sample; nothing here reads either.
//!
//! What the value means, and so what `pick` prints (see also README, "Picking a GPU"):
//! - CUDA reads `CUDA_VISIBLE_DEVICES` in each process, against that process's own
//!   enumeration of the devices it can open — never relative to a parent's value. A job that
//!   inherited `2,5,7` and exports `CUDA_VISIBLE_DEVICES=5` for its child gets physical GPU 5.
//!   So `pick` prints the GPUs as this host numbers them (NVML's index, PCI bus order) or as
//!   UUIDs, never as positions in the inherited list. Inside a process that still has the
//!   inherited list, device *ordinals* (`cuda:1`) are positions in it; `--format uuids` is
//!   the one output that means the same GPU everywhere.
//! - Indices count in CUDA's order, which is fastest-first unless `CUDA_DEVICE_ORDER=PCI_BUS_ID`.
//!   On a host with one GPU model fastest-first ties break by PCI bus, which is NVML's order;
//!   on a host that mixes models an index may name another GPU than NVML's same index, so
//!   indices there are refused unless the order is pinned (UUIDs are always fine).
//! - Where the allocation is enforced by device nodes (a container given some GPUs, Slurm
//!   with `ConstrainDevices`), NVML and CUDA both enumerate only the granted GPUs, from 0, and
//!   the allocator's `CUDA_VISIBLE_DEVICES` counts the same way, so the rule above still holds.
//! - `NVIDIA_VISIBLE_DEVICES` is not read: it is an instruction to the NVIDIA container
//!   runtime, already carried out by the time anything runs inside the container (only the
//!   granted devices are there for NVML to see), and its indices are the *host's* (a container
//!   given host GPUs 2,5 sees them as 0,1), so reading it would refuse or pick wrong GPUs.
//!   CUDA itself ignores it too. (A `--privileged` container sees every GPU; set
//!   `CUDA_VISIBLE_DEVICES` there.)

use std::collections::HashSet;

use crate::reading::device_list::{Dialect, GpuSelector, parse_entry, unmatched};
use crate::reading::{GpuId, GpuReading};

/// The variable CUDA restricts a process's GPUs with.
pub const VAR: &str = "CUDA_VISIBLE_DEVICES";
/// The variable that pins CUDA's numbering to PCI bus order (NVML's).
pub const ORDER_VAR: &str = "CUDA_DEVICE_ORDER";

/// An inherited `CUDA_VISIBLE_DEVICES`, checked for form (not yet against any GPU).
#[derive(Debug, Clone, PartialEq)]
pub struct Inherited {
    /// The value as given, for messages.
    pub raw: String,
    pub devices: Vec<GpuSelector>,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID`: indices count as NVML counts.
    pub pci_order: bool,
}

impl Inherited {
    /// Parses the value of `CUDA_VISIBLE_DEVICES`; `order` is `CUDA_DEVICE_ORDER`'s. The error
    /// says what is wrong with which entry (the caller names the variable and the value).
    pub fn parse(raw: &str, order: Option<&str>) -> Result<Inherited, String> {
        let value = raw.trim();
        // CUDA hides every GPU for an empty value or a leading -1; Slurm sets NoDevFiles for
        // a job with GPUs but no device files. A job that may use no GPU has nothing to pick,
        // and waiting would wait forever, so this is bad input rather than "none qualify".
        if value.is_empty() || value == "-1" || value == "NoDevFiles" {
            return Err("hides every GPU from this job: there is nothing to pick from".into());
        }
        let mut devices = Vec::new();
        for entry in value.split(',').map(str::trim) {
            let device = device(entry)?;
            if !devices.contains(&device) {
                devices.push(device);
            }
        }
        Ok(Inherited {
            raw: raw.to_string(),
            devices,
            pci_order: order.is_some_and(|o| o.trim() == "PCI_BUS_ID"),
        })
    }

    /// The GPUs of `gpus` the list names. Every entry must name exactly one GPU, and indices
    /// must mean what NVML's do (see the module doc); the error says which entry fails why.
    pub fn resolve(&self, gpus: &[GpuReading]) -> Result<HashSet<GpuId>, String> {
        if let Some(why) = unmatched(&self.devices, gpus) {
            return Err(why);
        }
        let mut out = HashSet::new();
        for device in &self.devices {
            let instances: Vec<&GpuId> = gpus
                .iter()
                .flat_map(|g| &g.mig_devices)
                .filter(|m| device.matches_instance(m))
                .map(|m| &m.id)
                .collect();
            if !instances.is_empty() {
                if instances.len() > 1 {
                    let n = instances.len();
                    return Err(format!(
                        "{device} names {n} MIG instances; give more of the UUID"
                    ));
                }
                out.extend(instances.into_iter().cloned());
                continue;
            }
            let named: Vec<&GpuReading> = gpus.iter().filter(|g| device.matches(g)).collect();
            if named.len() > 1 {
                let n = named.len();
                return Err(match device {
                    GpuSelector::Index(_) => format!("{device} names GPUs on {n} hosts; use UUIDs"),
                    GpuSelector::Uuid(_) => {
                        format!("{device} names {n} GPUs; give more of the UUID")
                    }
                });
            }
            out.extend(named.into_iter().map(|g| g.id.clone()));
        }
        let uses_indices = self
            .devices
            .iter()
            .any(|d| matches!(d, GpuSelector::Index(_)));
        if uses_indices && !self.pci_order {
            let mut models: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
            models.sort_unstable();
            models.dedup();
            if models.len() > 1 {
                return Err(format!(
                    "indices count fastest-first unless {ORDER_VAR}=PCI_BUS_ID, and this host \
                     mixes models ({}), so they may not be the GPUs gpuwatch numbers so: set \
                     {ORDER_VAR}=PCI_BUS_ID or list UUIDs",
                    models.join(", ")
                ));
            }
        }
        Ok(out)
    }
}

/// One entry, in CUDA's dialect of the one device-list grammar (`select`).
fn device(entry: &str) -> Result<GpuSelector, String> {
    if entry.is_empty() {
        return Err("has an empty entry".to_string());
    }
    parse_entry(entry, Dialect::Cuda)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(index: u32, uuid: &str, name: &str) -> GpuReading {
        GpuReading::absent(GpuId(uuid.into()), index, name)
    }

    fn fleet() -> Vec<GpuReading> {
        vec![
            gpu(0, "GPU-aa11", "H100"),
            gpu(1, "GPU-aa22", "H100"),
            gpu(2, "GPU-bb33", "H100"),
        ]
    }

    fn ids(set: &HashSet<GpuId>) -> Vec<String> {
        let mut v: Vec<String> = set.iter().map(|g| g.0.clone()).collect();
        v.sort();
        v
    }

    fn resolve(raw: &str, gpus: &[GpuReading]) -> Result<Vec<String>, String> {
        let inherited = Inherited::parse(raw, None)?;
        inherited.resolve(gpus).map(|s| ids(&s))
    }

    #[test]
    fn indices_and_uuid_prefixes_name_gpus() {
        assert_eq!(resolve("2, 0", &fleet()).unwrap(), ["GPU-aa11", "GPU-bb33"]);
        assert_eq!(
            resolve("GPU-bb,1", &fleet()).unwrap(),
            ["GPU-aa22", "GPU-bb33"]
        );
        assert_eq!(resolve("gpu-AA11", &fleet()).unwrap(), ["GPU-aa11"]);
        assert_eq!(
            resolve("1,1", &fleet()).unwrap(),
            ["GPU-aa22"],
            "duplicates are one"
        );
    }

    #[test]
    fn bad_entries_say_which_and_why() {
        let err = |raw: &str| resolve(raw, &fleet()).unwrap_err();
        assert_eq!(err("3"), "3 matches no GPU (this host has 0-2)");
        assert_eq!(err("GPU-cc"), "GPU-cc matches no GPU (this host has 0-2)");
        assert_eq!(err("GPU-aa"), "GPU-aa names 2 GPUs; give more of the UUID");
        assert!(err("0,x").starts_with("\"x\" is neither a GPU index nor a GPU UUID"));
        assert!(err("0,-1").contains("CUDA would hide it"));
        assert!(err("0,,1").contains("empty entry"));
        assert!(err("MIG-GPU-aa11/1/0").contains("old MIG-GPU-…/GI/CI form"));
        assert_eq!(err("MIG-cc"), "MIG-cc matches no GPU (this host has 0-2)");
        for none in ["", " ", "-1", "NoDevFiles"] {
            assert!(err(none).starts_with("hides every GPU"), "{none:?}");
        }
    }

    fn mig(id: &str) -> crate::reading::mig::MigReading {
        crate::reading::mig::MigReading {
            id: GpuId(id.into()),
            gpu_instance_id: Some(1),
            compute_instance_id: Some(0),
            profile: None,
            memory_total: None,
            memory_used: None,
            util: None,
            pids: vec![],
        }
    }

    #[test]
    fn mig_uuids_name_instances() {
        let mut gpus = fleet();
        gpus[1].mig_devices = vec![mig("MIG-4b6f1c2d-aa"), mig("MIG-4b6f9999-bb")];
        assert_eq!(
            resolve("MIG-4b6f1c2d, 0", &gpus).unwrap(),
            ["GPU-aa11", "MIG-4b6f1c2d-aa"]
        );
        let err = resolve("MIG-4b6f", &gpus).unwrap_err();
        assert_eq!(err, "MIG-4b6f names 2 MIG instances; give more of the UUID");
    }

    #[test]
    fn indices_on_a_mixed_host_need_the_pci_order() {
        let mut mixed = fleet();
        mixed[2].name = "T4".into();
        let err = resolve("2", &mixed).unwrap_err();
        assert!(err.contains("mixes models (H100, T4)"), "{err}");
        // UUIDs are unambiguous whatever the order.
        assert_eq!(resolve("GPU-bb33", &mixed).unwrap(), ["GPU-bb33"]);
        let pinned = Inherited::parse("2", Some("PCI_BUS_ID")).unwrap();
        assert_eq!(ids(&pinned.resolve(&mixed).unwrap()), ["GPU-bb33"]);
    }

    /// `--only`, `pick`'s inherited `CUDA_VISIBLE_DEVICES` and a running process's
    /// `CUDA_VISIBLE_DEVICES` are read by one grammar: for every entry all three accept they
    /// name the same GPU, and they refuse the same entries.
    #[test]
    fn the_three_readers_of_a_device_list_agree() {
        use crate::model::visible::{job_index, pinning};
        use crate::reading::device_list::parse_gpu_list;
        use crate::reading::workload::ProcEnv;
        let mut gpus = fleet();
        gpus[1].mig_devices = vec![mig("MIG-4b6f1c2d-aa")];
        let on_gpus = |hit: &dyn Fn(&GpuReading) -> bool| -> Vec<String> {
            gpus.iter()
                .filter(|g| hit(g))
                .map(|g| g.id.0.clone())
                .collect()
        };
        for entry in [
            "0",
            "2",
            "GPU-aa22",
            "gpu-AA22",
            "GPU-bb",
            "MIG-4b6f1c2d",
            "mig-4B6F1C2D-AA",
        ] {
            let only = parse_gpu_list(entry).unwrap().remove(0);
            let by_only = on_gpus(&|g| only.matches_gpu_or_instance(g));
            let picked = Inherited::parse(entry, None)
                .unwrap()
                .resolve(&gpus)
                .unwrap();
            let by_pick = on_gpus(&|g| {
                picked.contains(&g.id) || g.mig_devices.iter().any(|m| picked.contains(&m.id))
            });
            let env = ProcEnv::from_vars([(VAR.to_string(), entry.to_string())]);
            let pin = pinning(Some(&env));
            let by_process = on_gpus(&|g| job_index(&pin, Some(&env), g, &gpus).is_some());
            assert_eq!(by_only.len(), 1, "{entry}: {by_only:?}");
            assert_eq!(by_only, by_pick, "{entry}: --only and pick");
            assert_eq!(
                by_only, by_process,
                "{entry}: --only and a process's variable"
            );
        }
        for bad in ["x", "GPU-zz", "MIG-GPU-aa11/1/0", "MIG-zz", "-1x"] {
            assert!(parse_gpu_list(bad).is_err(), "--only {bad}");
            assert!(Inherited::parse(bad, None).is_err(), "pick {bad}");
            let env = ProcEnv::from_vars([(VAR.to_string(), format!("0,{bad},2"))]);
            let pin = pinning(Some(&env));
            // CUDA hides an entry it cannot read and every one after it.
            let seen = on_gpus(&|g| job_index(&pin, Some(&env), g, &gpus).is_some());
            assert_eq!(seen, ["GPU-aa11"], "a process with {bad}");
        }
        // Where the readers differ, they differ by dialect: CUDA cannot be pointed at
        // another vendor's GPU, and wants the `GPU-` prefix.
        assert!(parse_gpu_list("AMD-0000:03:00.0").is_ok());
        let err = Inherited::parse("AMD-0000:03:00.0", None).unwrap_err();
        assert!(err.contains("not an NVIDIA GPU"), "{err}");
        assert!(parse_gpu_list("aa22").is_ok());
        assert!(Inherited::parse("aa22", None).is_err());
    }
}
