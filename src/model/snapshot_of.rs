//! The model as the snapshot document (`--once --json`, `/api/v1/snapshot`): its GPUs, its
//! process table in the TUI's order, its warnings and the free GPUs. Written from the model,
//! not the raw sample, so the document lists what the TUI shows. Knows no words: the caller
//! passes each warning's sentence in (`present::warnings::warning_line`). Lives with the model, above
//! the wire format, so `wire` knows nothing of `model`.

use crate::model::Model;
use crate::model::owners::{free_gpus, unattributed};
use crate::model::procs::ProcRow;
use crate::model::warnings as model;
use crate::reading::Visibility;
use crate::wire::{ContextDoc, CutDoc, Lookup, epoch_secs};
use crate::wire::{Gpu, Host, Proc, SCHEMA_MAJOR, SCHEMA_MINOR, Snapshot, SnapshotGpu, Warning};

impl Snapshot {
    /// The document for `model`'s latest sample, each warning with `message(w)` as its
    /// sentence: real numbers in base units, `null` for unknown.
    pub fn of(model: &Model, message: impl Fn(&model::Warning) -> String) -> Snapshot {
        Snapshot {
            schema_version: SCHEMA_MAJOR,
            schema_minor: SCHEMA_MINOR,
            time: model.now().and_then(epoch_secs),
            host: Host::from_info(model.host()),
            gpus: model
                .gpus()
                .iter()
                .map(|g| SnapshotGpu {
                    gpu: Gpu::from_reading(g),
                    unattributed_memory: unattributed(model, g).map(|b| b.0),
                })
                .collect(),
            processes: model.procs().rows().map(|r| proc_doc(model, r)).collect(),
            warnings: model
                .warnings()
                .iter()
                .map(|w| Warning::of(w, Some(message(w))))
                .collect(),
            free_gpus: free_gpus(model),
            lookups: model.host().lookups.iter().map(Lookup::of).collect(),
            cuts: model.host().cuts.iter().map(CutDoc::of).collect(),
        }
    }
}

/// A row of the process table as the document's process.
fn proc_doc(model: &Model, r: &ProcRow) -> Proc {
    let visible = r.visibility == Visibility::Visible;
    let id = crate::history::procs::ProcId {
        pid: r.key.pid,
        started: r.key.started,
    };
    let peak = model.proc_history(&id).and_then(|h| h.peak_on(&r.key.gpu));
    Proc {
        gpu_uuid: r.key.gpu.0.clone(),
        gpu_index: Some(r.gpu_index),
        pid: r.key.pid,
        user: r.user.as_deref().map(str::to_owned),
        uid: r.uid,
        kind: r.kind.into(),
        used_gpu_memory: r.vram.map(|b| b.0),
        peak_gpu_memory: peak.map(|b| b.0),
        utilization_sm: r.gpu_util,
        cpu_percent: r.cpu,
        host_memory: r.host_memory.map(|b| b.0),
        started: r.key.started.and_then(epoch_secs),
        elapsed: r.elapsed.map(|d| d.as_secs_f64()),
        // The table's "(other PID namespace)" is a placeholder, not the command.
        command: visible.then(|| String::from(&*r.command)),
        visibility: r.visibility,
        context: ContextDoc::of(visible.then_some(&r.context)),
    }
}
