//! Opt-in per-process series (`--process-metrics`): VRAM and SM share of every GPU process,
//! labelled by PID, user, a short command and its workload (`container`, `pod`,
//! `namespace`, `hpc_job`). Rendered fresh per sample, so a process's
//! series disappear once it exits. Pure; reads `&State` only.

use crate::model::procs::{ProcRow, Visibility};
use crate::state::State;

use super::readings::gpu_labels;
use super::text::{Exposition, Family, Kind, Labels};

/// Linux's own `comm` is 15 characters; a longer label only adds cardinality.
const COMM_MAX_CHARS: usize = 15;

const GPU_MEMORY: Family = Family {
    name: "gpuwatch_process_gpu_memory_bytes",
    kind: Kind::Gauge,
    help: "Device memory the process holds on the GPU.",
};
const GPU_UTIL: Family = Family {
    name: "gpuwatch_process_gpu_utilization_ratio",
    kind: Kind::Gauge,
    help: "Share of the GPU's SM time the process used over the last sample period (0-1).",
};

pub(super) fn render(e: &mut Exposition, state: &State) {
    let rows = &state.model.procs().all;
    let labelled = |value: fn(&ProcRow) -> Option<f64>| {
        rows.iter()
            .filter_map(move |r| value(r).map(|v| (labels(state, r), v)))
    };
    e.family(GPU_MEMORY, labelled(|r| r.vram.map(|b| b.0 as f64)));
    e.family(
        GPU_UTIL,
        labelled(|r| r.gpu_util.map(|u| f64::from(u) / 100.0)),
    );
}

/// The GPU's labels plus `pid`, and `user`/`comm` when the process is visible from here.
fn labels(state: &State, r: &ProcRow) -> Labels {
    let mut labels = match state.model.gpus().iter().find(|g| g.id == r.key.gpu) {
        Some(g) => gpu_labels(g),
        None => vec![
            ("gpu", r.gpu_index.to_string()),
            ("uuid", r.key.gpu.0.clone()),
        ],
    };
    labels.push(("pid", r.key.pid.to_string()));
    if let Some(user) = &r.user {
        labels.push(("user", user.clone()));
    }
    // For processes outside our PID namespace the command is a placeholder, not a name.
    if r.visibility == Visibility::Visible {
        labels.push(("comm", comm(&r.command)));
    }
    if let Some(w) = r.context.workload.as_deref() {
        labels.extend(super::workload::labels(w));
    }
    labels
}

/// The short command: the first word's basename, at most 15 characters
/// (`/usr/bin/python3 train.py` → `python3`).
pub fn comm(command: &str) -> String {
    let first = command.split_whitespace().next().unwrap_or("");
    let base = first.rsplit('/').next().unwrap_or(first);
    base.chars().take(COMM_MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_is_the_first_words_basename_truncated() {
        assert_eq!(comm("/usr/bin/python3 train.py --lr 3e-4"), "python3");
        assert_eq!(comm("torchrun"), "torchrun");
        assert_eq!(
            comm("/opt/x/a_really_long_binary_name -v"),
            "a_really_long_b"
        );
        assert_eq!(comm(""), "");
        assert_eq!(comm("  ./run.sh  "), "run.sh");
    }
}
