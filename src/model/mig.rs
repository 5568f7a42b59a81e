//! MIG instances in the model: which instance each process row runs on (from the GPU's
//! `mig_devices[].pids`), how a row names it (`0/1`: GPU 0, GPU instance 1, as nvidia-smi's
//! process table lists GPU and GI), and `--only MIG-…` narrowing a sample to the instances
//! it names. Pure; driven by `MigReading` data alone, so every source that fills it
//! (NVML, the demo, a recording) gets the same treatment.

use std::collections::HashSet;

use crate::reading::device_list::{GpuSelector, selects_instance};
use crate::reading::mig::MigReading;
use crate::reading::{GpuId, GpuReading, Sample};

/// The instance a process row runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceTag {
    /// The MIG device UUID (`MIG-…`).
    pub id: GpuId,
    pub gpu_instance: Option<u32>,
    pub compute_instance: Option<u32>,
    pub profile: Option<String>,
}

impl InstanceTag {
    pub fn of(m: &MigReading) -> Self {
        InstanceTag {
            id: m.id.clone(),
            gpu_instance: m.gpu_instance_id,
            compute_instance: m.compute_instance_id,
            profile: m.profile.clone(),
        }
    }

    /// The GPU column's words: `0/1` (GPU, GPU instance), `0/?` when the GI is unknown.
    pub fn gpu_label(&self, gpu_label: &str) -> String {
        match self.gpu_instance {
            Some(gi) => format!("{gpu_label}/{gi}"),
            None => format!("{gpu_label}/?"),
        }
    }
}

/// The instance of `gpu` that process `pid` runs on, if the GPU is in MIG mode and lists it.
pub fn instance_of(gpu: &GpuReading, pid: u32) -> Option<&MigReading> {
    gpu.mig_devices.iter().find(|m| m.pids.contains(&pid))
}

/// `MIG-4b6f1c2d-0a1b-…` → `MIG-4b6f1c2d`: the first group is what people compare by eye
/// (as `GPU-` UUIDs are shortened elsewhere); `--only` and `CUDA_VISIBLE_DEVICES` take a
/// unique prefix, so the short form is still usable.
pub fn short_uuid(id: &GpuId) -> &str {
    let s = id.0.as_str();
    let body = s.strip_prefix("MIG-").unwrap_or(s);
    match body.find('-') {
        Some(dash) => &s[..s.len() - body.len() + dash],
        None => s,
    }
}

/// Narrows a sample to what `--only` names: a GPU named whole stays whole; a GPU of which
/// only instances are named stays with just those instances and their processes (its own
/// readings stay the whole GPU's: NVML gives no utilisation per instance anyway).
pub fn apply_only(sample: &mut Sample, only: &[GpuSelector]) {
    let mut kept_pids: Vec<(GpuId, HashSet<u32>)> = Vec::new();
    sample.gpus.retain_mut(|g| {
        if crate::reading::device_list::selected(only, g) {
            return true;
        }
        g.mig_devices.retain(|m| selects_instance(only, m));
        if g.mig_devices.is_empty() {
            return false;
        }
        let pids = g.mig_devices.iter().flat_map(|m| m.pids.iter().copied());
        kept_pids.push((g.id.clone(), pids.collect()));
        true
    });
    let whole: HashSet<&GpuId> = sample
        .gpus
        .iter()
        .filter(|g| crate::reading::device_list::selected(only, g))
        .map(|g| &g.id)
        .collect();
    sample.processes.retain(|p| {
        whole.contains(&p.gpu)
            || kept_pids
                .iter()
                .any(|(id, pids)| *id == p.gpu && pids.contains(&p.pid))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::device_list::parse_gpu_list;
    use crate::reading::{HostInfo, HostProc, ProcKind, ProcReading};

    fn mig(uuid: &str, gi: u32, pids: Vec<u32>) -> MigReading {
        MigReading {
            id: GpuId(uuid.into()),
            gpu_instance_id: Some(gi),
            compute_instance_id: Some(0),
            profile: Some("3g.40gb".into()),
            memory_total: None,
            memory_used: None,
            util: None,
            pids,
        }
    }

    fn proc(pid: u32, gpu: &str) -> ProcReading {
        ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: GpuId(gpu.into()),
            kind: ProcKind::Compute,
            gpu_memory: None,
            sm_util: None,
            host: HostProc::Hidden,
        }
    }

    fn sample() -> Sample {
        let mut g0 = GpuReading::absent(GpuId("GPU-aaaa".into()), 0, "H100");
        g0.mig_devices = vec![
            mig("MIG-1111-22", 1, vec![10]),
            mig("MIG-3333-44", 2, vec![11]),
        ];
        let g1 = GpuReading::absent(GpuId("GPU-bbbb".into()), 1, "H100");
        Sample {
            time: std::time::SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus: vec![g0, g1],
            processes: vec![
                proc(10, "GPU-aaaa"),
                proc(11, "GPU-aaaa"),
                proc(12, "GPU-bbbb"),
            ],
            hosts: Vec::new(),
            history: None,
        }
    }

    #[test]
    fn only_an_instance_keeps_its_gpu_with_that_instance_and_its_processes() {
        let mut s = sample();
        apply_only(&mut s, &parse_gpu_list("MIG-3333").unwrap());
        assert_eq!(s.gpus.len(), 1);
        let ids: Vec<&str> = s.gpus[0]
            .mig_devices
            .iter()
            .map(|m| m.id.0.as_str())
            .collect();
        assert_eq!(ids, ["MIG-3333-44"]);
        let pids: Vec<u32> = s.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [11]);
        // A whole GPU next to an instance of another: both as named.
        let mut s = sample();
        apply_only(&mut s, &parse_gpu_list("MIG-1111,1").unwrap());
        let pids: Vec<u32> = s.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [10, 12]);
        // The GPU named whole keeps every instance.
        let mut s = sample();
        apply_only(&mut s, &parse_gpu_list("0").unwrap());
        assert_eq!(s.gpus[0].mig_devices.len(), 2);
        assert_eq!(s.processes.len(), 2);
    }

    #[test]
    fn rows_name_gpu_and_instance_and_uuids_shorten_to_their_first_group() {
        let tag = InstanceTag::of(&mig("MIG-4b6f1c2d-0a1b-5c3d", 5, vec![]));
        assert_eq!(tag.gpu_label("0"), "0/5");
        assert_eq!(short_uuid(&tag.id), "MIG-4b6f1c2d");
        assert_eq!(short_uuid(&GpuId("MIG-abc".into())), "MIG-abc");
    }
}
