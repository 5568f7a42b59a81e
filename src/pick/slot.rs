//! What `pick` chooses between: whole GPUs, and on a GPU in MIG mode its instances instead
//! (CUDA runs only on instances there; the GPU as a whole cannot be given to a job). The
//! candidates of one state, each one's identity, label and free memory, and the rules
//! that differ for an instance: any process on it makes it taken (an instance is one
//! job's slice), only its own OOM warning and the GPU's other warnings count, and its
//! utilisation is not a rule (NVML gives none per instance).

use crate::model::Model;
use crate::model::owners::UNATTRIBUTED_MIN;
use crate::model::warnings::{Warning, WarningKind};
use crate::reading::mig::MigReading;
use crate::reading::{GpuId, GpuReading, Vendor};
use crate::units::Bytes;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Slot<'a> {
    Gpu(&'a GpuReading),
    /// An instance of a GPU in MIG mode.
    Instance(&'a GpuReading, &'a MigReading),
}

/// The candidates: every GPU, except that a GPU listing MIG instances stands for them.
pub fn candidates(model: &Model) -> Vec<Slot<'_>> {
    let mut out = Vec::new();
    for g in model.gpus() {
        if g.mig_devices.is_empty() {
            out.push(Slot::Gpu(g));
        } else {
            out.extend(g.mig_devices.iter().map(|m| Slot::Instance(g, m)));
        }
    }
    out
}

impl<'a> Slot<'a> {
    /// The GPU itself, or the instance's GPU.
    pub fn gpu(&self) -> &'a GpuReading {
        match self {
            Slot::Gpu(g) | Slot::Instance(g, _) => g,
        }
    }

    /// The GPU's UUID, or the instance's `MIG-` UUID.
    pub fn id(&self) -> &'a GpuId {
        match self {
            Slot::Gpu(g) => &g.id,
            Slot::Instance(_, m) => &m.id,
        }
    }

    /// How `pick` writes the slot in its lists and in `CUDA_VISIBLE_DEVICES`: a GPU by its
    /// index, an instance by its `MIG-` UUID (the one way CUDA names an instance).
    pub fn entry(&self) -> String {
        match self {
            Slot::Gpu(g) => g.index.to_string(),
            Slot::Instance(_, m) => m.id.0.clone(),
        }
    }

    pub fn vendor(&self) -> Option<Vendor> {
        self.gpu().vendor
    }

    /// `3`, `gpu1:3`, or for an instance `3/1` (GPU 3, GPU instance 1, as the table says).
    pub fn label(&self) -> String {
        match self {
            Slot::Gpu(g) => g.label(),
            Slot::Instance(g, m) => format!(
                "{}/{}",
                g.label(),
                m.gpu_instance_id
                    .map_or_else(|| "?".into(), |i| i.to_string())
            ),
        }
    }

    pub fn free_memory(&self) -> Option<Bytes> {
        match self {
            Slot::Gpu(g) => Some(g.memory_total?.saturating_sub(g.memory_used?)),
            Slot::Instance(_, m) => Some(m.memory_total?.saturating_sub(m.memory_used?)),
        }
    }

    /// Whether a warning on the GPU rules this slot out: every warning of the GPU for the
    /// GPU; for an instance, the GPU's warnings except OOM risks of its memory as a whole
    /// or of another instance (its memory is its own).
    pub fn hit_by(&self, w: &Warning) -> bool {
        if w.gpu() != Some(&self.gpu().id) {
            return false;
        }
        match (self, &w.kind) {
            (Slot::Instance(_, m), WarningKind::OomRisk { instance, .. }) => {
                instance.as_ref().is_some_and(|i| i.id == m.id)
            }
            _ => true,
        }
    }
}

/// An instance's memory used that no process on it accounts for, when significant.
pub fn instance_unattributed(model: &Model, m: &MigReading) -> Option<Bytes> {
    if !model.processes_known() {
        return None;
    }
    let listed = match model.holders(&m.id) {
        Some(h) => h.listed?,
        None => Bytes(0),
    };
    let rest = m.memory_used?.saturating_sub(listed);
    (rest >= UNATTRIBUTED_MIN).then_some(rest)
}
