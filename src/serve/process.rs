//! Series about the processes on the GPUs, bounded: per GPU, the VRAM and process count of
//! each user and of each workload (`container`, `pod`, `namespace`, `hpc_job`) always; and,
//! opt-in (`--process-metrics`), per-PID series (VRAM and SM share, labelled by PID, user, a
//! short command and the workload) for at most `--process-metrics-limit` processes, the
//! largest VRAM holders. `--redact` leaves user names and commands out. Rendered fresh per
//! sample, so a process's series disappear once it exits. Pure; reads `&State` only.

use std::collections::BTreeMap;

use crate::model::procs::{ProcRow, Visibility};
use crate::model::users::Total;
use crate::state::State;

use super::metrics::MetricOptions;
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

const USER_MEMORY: Family = Family {
    name: "gpuwatch_user_gpu_memory_bytes",
    kind: Kind::Gauge,
    help: "Device memory a user's processes hold on the GPU (left out with --redact).",
};
const WORKLOAD_MEMORY: Family = Family {
    name: "gpuwatch_workload_gpu_memory_bytes",
    kind: Kind::Gauge,
    help: "Device memory a workload's processes hold on the GPU (a container, pod or Slurm job).",
};
const WORKLOAD_PROCESSES: Family = Family {
    name: "gpuwatch_workload_gpu_processes",
    kind: Kind::Gauge,
    help: "Processes of a workload (a container, pod or Slurm job) with a context on the GPU.",
};
const USER_LEFT_OUT: Family = Family {
    name: "gpuwatch_user_series_left_out",
    kind: Kind::Gauge,
    help: "GPU processes in no per-user series: their Unix user is not known here (another PID namespace).",
};
const LEFT_OUT: Family = Family {
    name: "gpuwatch_process_series_left_out",
    kind: Kind::Gauge,
    help: "GPU processes without per-process series because of --process-metrics-limit.",
};

/// The per-user and per-workload totals: as many series as owners, not processes.
pub(super) fn render_totals(e: &mut Exposition, state: &State, redact: bool) {
    if !redact {
        render_users(e, state);
    }
    // (GPU position, workload labels) → (VRAM when every process's is known, processes).
    let mut jobs: BTreeMap<(usize, Labels), (Option<u64>, u32)> = BTreeMap::new();
    for r in &state.model.procs().all {
        let Some(w) = r.context.workload.as_deref() else {
            continue;
        };
        let job = super::workload::labels(w);
        let gpu = state.model.gpus().iter().position(|g| g.id == r.key.gpu);
        let (Some(gpu), false) = (gpu, job.is_empty()) else {
            continue;
        };
        let entry = jobs.entry((gpu, job)).or_insert((Some(0), 0));
        entry.0 = entry.0.zip(r.vram).map(|(sum, b)| sum + b.0);
        entry.1 += 1;
    }
    let labelled = |(gpu, job): &(usize, Labels)| {
        let mut labels = gpu_labels(&state.model.gpus()[*gpu]);
        labels.extend(job.iter().cloned());
        labels
    };
    e.family(
        WORKLOAD_MEMORY,
        jobs.iter()
            .filter_map(|(k, (vram, _))| vram.map(|v| (labelled(k), v as f64))),
    );
    e.family(
        WORKLOAD_PROCESSES,
        jobs.iter().map(|(k, (_, n))| (labelled(k), f64::from(*n))),
    );
}

/// VRAM per GPU and Unix user (a Slurm job's processes count for the job's user), so
/// `sum by (user)` adds up one person across jobs; jobs and pods have the workload series.
/// Processes whose user is not known here are counted as left out, never a `pid N` user.
fn render_users(e: &mut Exposition, state: &State) {
    // VRAM no process reported is not 0: a user none of whose processes said has no series;
    // one some of whose did has the sum of what is known.
    let mut users: BTreeMap<(usize, &str), Total<u64>> = BTreeMap::new();
    let mut left_out = 0usize;
    for r in &state.model.procs().all {
        let gpu = state.model.gpus().iter().position(|g| g.id == r.key.gpu);
        match (gpu, crate::model::owners::unix_user(r)) {
            (Some(gpu), Some(user)) => {
                users
                    .entry((gpu, user))
                    .or_default()
                    .add(r.vram.map(|b| b.0));
            }
            _ => left_out += 1,
        }
    }
    e.family(
        USER_MEMORY,
        users.iter().filter_map(|((gpu, user), vram)| {
            let mut labels = gpu_labels(&state.model.gpus()[*gpu]);
            labels.push(("user", user.to_string()));
            Some((labels, vram.value()? as f64))
        }),
    );
    let known = state.model.now().is_some();
    e.family(
        USER_LEFT_OUT,
        known.then(|| (Labels::new(), left_out as f64)),
    );
}

/// Per-PID series for the `options.process_limit` largest VRAM holders (unknown VRAM last).
pub(super) fn render(e: &mut Exposition, state: &State, options: MetricOptions) {
    let mut rows: Vec<&ProcRow> = state.model.procs().all.iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.vram.map(|b| b.0)));
    let left_out = rows.len().saturating_sub(options.process_limit);
    rows.truncate(options.process_limit);
    let redact = options.redact;
    let rows = &rows;
    let labelled = |value: fn(&ProcRow) -> Option<f64>| {
        rows.iter()
            .filter_map(move |r| value(r).map(|v| (labels(state, r, redact), v)))
    };
    e.family(GPU_MEMORY, labelled(|r| r.vram.map(|b| b.0 as f64)));
    e.family(
        GPU_UTIL,
        labelled(|r| r.gpu_util.map(|u| f64::from(u) / 100.0)),
    );
    // Before the first sample the process list is unknown, not empty.
    let known = state.model.now().is_some();
    e.family(LEFT_OUT, known.then(|| (Labels::new(), left_out as f64)));
}

/// The GPU's labels plus `pid`, and `user`/`comm` when the process is visible from here
/// (and `redact` is off).
fn labels(state: &State, r: &ProcRow, redact: bool) -> Labels {
    let mut labels = match state.model.gpu(&r.key.gpu) {
        Some(g) => gpu_labels(g),
        None => vec![
            ("gpu", r.gpu_index.to_string()),
            ("uuid", r.key.gpu.0.clone()),
        ],
    };
    labels.push(("pid", r.key.pid.to_string()));
    // On a MIG instance: dcgm-exporter's GPU_I_ID / GPU_I_PROFILE, and its MIG UUID.
    if let Some(tag) = &r.instance {
        labels.extend(super::mig::tag_labels(tag));
    }
    if let Some(user) = r.user.as_ref().filter(|_| !redact) {
        labels.push(("user", String::from(&**user)));
    }
    // For processes outside our PID namespace the command is a placeholder, not a name.
    if r.visibility == Visibility::Visible && !redact {
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
