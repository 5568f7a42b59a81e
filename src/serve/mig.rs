//! MIG instances on `/metrics`: per-instance framebuffer and process series, labelled as
//! dcgm-exporter labels them — the parent GPU's labels plus `GPU_I_ID` (the GPU instance
//! id) and `GPU_I_PROFILE` (e.g. `3g.40gb`) — so dashboards that split dcgm-exporter's
//! series by instance split ours the same way; natively also `mig_uuid`. SM activity only
//! where GPM gives it (absent otherwise, never 0).

use crate::model::mig::InstanceTag;
use crate::reading::GpuReading;
use crate::reading::mig::MigReading;
use crate::state::State;

use super::readings::gpu_labels;
use super::text::{Exposition, Family, Kind, Labels};

/// `GPU_I_ID` and `GPU_I_PROFILE` (each only when known), dcgm-exporter's instance labels.
pub(super) fn instance_labels(gpu_instance: Option<u32>, profile: Option<&str>) -> Labels {
    let mut l = Labels::new();
    if let Some(gi) = gpu_instance {
        l.push(("GPU_I_ID", gi.to_string()));
    }
    if let Some(p) = profile {
        l.push(("GPU_I_PROFILE", p.to_string()));
    }
    l
}

/// The instance labels for a process row's instance.
pub(super) fn tag_labels(tag: &InstanceTag) -> Labels {
    let mut l = instance_labels(tag.gpu_instance, tag.profile.as_deref());
    l.push(("mig_uuid", tag.id.0.clone()));
    l
}

fn native_labels(g: &GpuReading, m: &MigReading) -> Labels {
    let mut l = gpu_labels(g);
    l.extend(tag_labels(&InstanceTag::of(m)));
    l
}

type InstanceValue = fn(&MigReading) -> Option<f64>;

const SERIES: [(Family, InstanceValue); 5] = [
    (
        Family {
            name: "gpuwatch_mig_sm_activity_ratio",
            kind: Kind::Gauge,
            help: "A MIG instance's SM activity over the last sample period from GPM (0-1; Hopper and newer).",
        },
        |m| m.util.map(|u| f64::from(u.0) / 100.0),
    ),
    (
        Family {
            name: "gpuwatch_mig_memory_total_bytes",
            kind: Kind::Gauge,
            help: "A MIG instance's device memory in total.",
        },
        |m| m.memory_total.map(|b| b.0 as f64),
    ),
    (
        Family {
            name: "gpuwatch_mig_memory_used_bytes",
            kind: Kind::Gauge,
            help: "A MIG instance's device memory in use.",
        },
        |m| m.memory_used.map(|b| b.0 as f64),
    ),
    (
        Family {
            name: "gpuwatch_mig_memory_free_bytes",
            kind: Kind::Gauge,
            help: "A MIG instance's device memory not in use.",
        },
        |m| Some(m.memory_total?.saturating_sub(m.memory_used?).0 as f64),
    ),
    (
        Family {
            name: "gpuwatch_mig_processes",
            kind: Kind::Gauge,
            help: "Processes running on the MIG instance.",
        },
        |m| Some(m.pids.len() as f64),
    ),
];

/// Every instance of every GPU with a value for `value`, labelled by `labels`.
pub(super) fn samples(
    state: &State,
    value: InstanceValue,
    labels: impl Fn(&GpuReading, &MigReading) -> Labels,
) -> Vec<(Labels, f64)> {
    let mut out = Vec::new();
    for g in state.model.gpus() {
        for m in &g.mig_devices {
            if let Some(v) = value(m) {
                out.push((labels(g, m), v));
            }
        }
    }
    out
}

/// The native per-instance families (none at all on a host without MIG).
pub(super) fn render(e: &mut Exposition, state: &State) {
    for (family, value) in SERIES {
        e.family(family, samples(state, value, native_labels));
    }
}

/// dcgm-exporter's framebuffer fields per instance (its default counters have used and
/// free, not total), in MiB as DCGM reports them; `None` for the fields that have no
/// per-instance value here.
pub(super) fn dcgm_value(field: &str) -> Option<InstanceValue> {
    match field {
        "DCGM_FI_DEV_FB_USED" => Some(|m| m.memory_used.map(|b| (b.0 >> 20) as f64)),
        "DCGM_FI_DEV_FB_FREE" => {
            Some(|m| Some((m.memory_total?.saturating_sub(m.memory_used?).0 >> 20) as f64))
        }
        _ => None,
    }
}
