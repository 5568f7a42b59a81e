//! The native `gpuwatch_*` metrics: one Prometheus document rendered from `&State`, in base
//! units (bytes, celsius, watts, joules, hertz, ratios 0–1). Pure: no I/O, no clock. An
//! unknown reading (`None`) is left out, never written as 0 or a sentinel.

use std::collections::BTreeMap;

use crate::model::warnings::Severity;
use crate::reading::throttle::ThrottleReason;
use crate::reading::{GpuReading, GpuStatus};
use crate::state::State;

use super::readings::{gpu_labels, write_gpu_series};
use super::text::{Exposition, Family, Kind, Labels, Texts};
use super::{dcgm, lookups, mig, process, workload};

/// Which optional groups of series a scrape carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricOptions {
    /// Also the dcgm-exporter names (`DCGM_FI_DEV_*`) that existing dashboards query.
    pub dcgm_compat: bool,
    /// Per-PID series (PID, user and command as labels: opt-in, they churn).
    pub process_metrics: bool,
    /// At most this many processes get per-PID series, the largest VRAM holders first.
    pub process_limit: usize,
    /// No user names and no commands in any label.
    pub redact: bool,
}

impl Default for MetricOptions {
    fn default() -> Self {
        MetricOptions {
            dcgm_compat: false,
            process_metrics: false,
            process_limit: crate::config::DEFAULT_PROCESS_METRICS_LIMIT,
            redact: false,
        }
    }
}

const BUILD_INFO: Family = Family {
    name: "gpuwatch_build_info",
    kind: Kind::Gauge,
    help: "Always 1; the version label says which gpuwatch is exporting.",
};
const SOURCE_UP: Family = Family {
    name: "gpuwatch_source_up",
    kind: Kind::Gauge,
    help: "1 when the latest poll of the GPU source worked, 0 when it failed (readings are then the last good ones).",
};
const SOURCE_STALLED: Family = Family {
    name: "gpuwatch_source_stalled_seconds",
    kind: Kind::Gauge,
    help: "How long the poll under way has not come back (a wedged driver call), counted once it is overdue; 0 while polls answer in time.",
};
const LAST_SAMPLE: Family = Family {
    name: "gpuwatch_last_sample_timestamp_seconds",
    kind: Kind::Gauge,
    help: "When the readings were taken, in seconds since the Unix epoch.",
};
const GPU_INFO: Family = Family {
    name: "gpuwatch_gpu_info",
    kind: Kind::Gauge,
    help: "Always 1; labels identify the GPU (PCI bus id, driver and CUDA version when known).",
};
const GPU_LOST: Family = Family {
    name: "gpuwatch_gpu_lost",
    kind: Kind::Gauge,
    help: "1 when the GPU stopped answering (fell off the bus), else 0.",
};
const THROTTLE: Family = Family {
    name: "gpuwatch_gpu_throttle_active",
    kind: Kind::Gauge,
    help: "1 when this reason is holding the GPU's clocks down right now, else 0.",
};
const WARNINGS: Family = Family {
    name: "gpuwatch_gpu_warnings",
    kind: Kind::Gauge,
    help: "Warnings gpuwatch raises on the GPU now (the same as the TUI's), by kind and severity.",
};
const OWNERS: Family = Family {
    name: "gpuwatch_gpu_owners_info",
    kind: Kind::Gauge,
    help: "Always 1 per GPU; the owners label lists who holds it (users, jobs, pods; comma-separated, empty when nobody), for joining into alerts.",
};
const COMPUTE_MODE: Family = Family {
    name: "gpuwatch_gpu_compute_mode",
    kind: Kind::Gauge,
    help: "1 for the compute mode the GPU is in (mode: default, exclusive_process, exclusive_thread, prohibited): an exclusive_process GPU takes one process's context, a prohibited one none.",
};
const PROCESSES: Family = Family {
    name: "gpuwatch_gpu_processes",
    kind: Kind::Gauge,
    help: "Processes with a context on the GPU.",
};

/// The whole `/metrics` document for the current state, in the 0.0.4 text format.
pub fn render(state: &State, options: MetricOptions) -> String {
    render_both(state, options).text
}

/// The document in both text formats (OpenMetrics without its `# EOF`).
pub fn render_both(state: &State, options: MetricOptions) -> Texts {
    let mut e = Exposition::new();
    e.family(
        BUILD_INFO,
        [(
            vec![("version", env!("CARGO_PKG_VERSION").to_string())],
            1.0,
        )],
    );
    header_series(&mut e, state);
    e.family(
        GPU_INFO,
        state
            .model
            .gpus()
            .iter()
            .map(|g| (info_labels(state, g), 1.0)),
    );
    e.family(
        GPU_LOST,
        state.model.gpus().iter().map(|g| (gpu_labels(g), lost(g))),
    );
    let pods = workload::gpu_pods(state);
    let with_pod = |g: &GpuReading| {
        let mut labels = gpu_labels(g);
        labels.extend(pods.get(&g.id).cloned().unwrap_or_default());
        labels
    };
    write_gpu_series(&mut e, state.model.gpus(), with_pod);
    e.family(THROTTLE, state.model.gpus().iter().flat_map(throttle));
    e.family(
        COMPUTE_MODE,
        state.model.gpus().iter().filter_map(|g| {
            let mode = g.compute_mode?;
            let mut labels = gpu_labels(g);
            labels.push(("mode", mode.name().to_string()));
            Some((labels, 1.0))
        }),
    );
    e.family(WARNINGS, warning_counts(state));
    e.family(PROCESSES, process_counts(state));
    lookups::render(&mut e, state);
    mig::render(&mut e, state);
    // The owners' names are user names: left out with --redact.
    if !options.redact {
        e.family(OWNERS, owner_lists(state));
    }
    process::render_totals(&mut e, state, options.redact);
    if options.process_metrics {
        process::render(&mut e, state, options);
    }
    if options.dcgm_compat {
        dcgm::render(&mut e, state, &pods);
    }
    e.finish_both()
}

/// Whether the source answers, and when the readings were taken (absent before any poll).
fn header_series(e: &mut Exposition, state: &State) {
    let polled = state.model.now().is_some() || state.model.source_error().is_some();
    let up = f64::from(u8::from(state.model.source_error().is_none()));
    e.family(SOURCE_UP, polled.then(|| (Labels::new(), up)));
    let stalled = state
        .model
        .stalled()
        .map_or(0.0, |d| d.as_secs_f64().floor());
    e.family(SOURCE_STALLED, polled.then(|| (Labels::new(), stalled)));
    let taken = state
        .model
        .now()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    e.family(LAST_SAMPLE, taken.map(|d| (Labels::new(), d.as_secs_f64())));
}

fn info_labels(state: &State, g: &GpuReading) -> Labels {
    let mut labels = gpu_labels(g);
    // Unknown identity facts are left out rather than written as "" (which means the same
    // to Prometheus but reads like a real, empty value).
    let hostname = Some(&state.model.host().hostname).filter(|h| !h.is_empty());
    let known = [
        ("hostname", hostname),
        ("pci_bus_id", g.pci_bus_id.as_ref()),
        ("driver_version", state.model.host().driver_version.as_ref()),
        ("cuda_version", state.model.host().cuda_version.as_ref()),
    ];
    labels.extend(
        known
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v.clone()))),
    );
    labels
}

fn lost(g: &GpuReading) -> f64 {
    f64::from(u8::from(g.status == GpuStatus::Lost))
}

/// One 0/1 series per known reason (`source::throttle::TABLE`), so "not throttled" is a
/// value, not a gap, plus a 1 for any unexpected (`Unknown`) active one; none when unknown.
fn throttle(g: &GpuReading) -> Vec<(Labels, f64)> {
    let Some(active) = &g.throttle_reasons else {
        return Vec::new();
    };
    let unexpected = active
        .iter()
        .filter(|r| matches!(r, ThrottleReason::Unknown(_)));
    let mut reasons: Vec<&ThrottleReason> = ThrottleReason::known().collect();
    reasons.extend(unexpected);
    reasons
        .into_iter()
        .map(|reason| {
            let mut labels = gpu_labels(g);
            labels.push(("reason", reason.name().to_string()));
            let on = active.contains(reason);
            (labels, f64::from(u8::from(on)))
        })
        .collect()
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

/// Warnings counted per GPU, kind and severity (a GPU can have several idle holders). The
/// kind label is the code's name, as in the JSON document; keyed by the name, not the
/// code, so the series stay in the name's order.
fn warning_counts(state: &State) -> Vec<(Labels, f64)> {
    let mut counts: BTreeMap<(usize, &'static str, &str), u32> = BTreeMap::new();
    for w in state.model.warnings() {
        if let Some(pos) = state
            .model
            .gpus()
            .iter()
            .position(|g| w.gpu() == Some(&g.id))
        {
            let key = (pos, w.kind.code().name(), severity_name(w.severity));
            *counts.entry(key).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|((pos, kind, severity), n)| {
            let mut labels = gpu_labels(&state.model.gpus()[pos]);
            labels.push(("kind", kind.to_string()));
            labels.push(("severity", severity.to_string()));
            (labels, f64::from(n))
        })
        .collect()
}

/// One series per answering GPU naming its owners, so alert rules can say whose job it is
/// (`* on(uuid) group_left(owners) gpuwatch_gpu_owners_info`); present for every GPU, lost
/// or nobody's, so the join never drops an alert.
fn owner_lists(state: &State) -> Vec<(Labels, f64)> {
    state
        .model
        .gpus()
        .iter()
        .map(|g| {
            let names: Vec<&str> = crate::model::owners::owners(&state.model, g)
                .iter()
                .map(|(name, _)| name.as_str())
                .collect();
            let mut labels = gpu_labels(g);
            labels.push(("owners", names.join(",")));
            (labels, 1.0)
        })
        .collect()
}

/// Process count per answering GPU (a lost GPU's process list is unknown, so absent).
fn process_counts(state: &State) -> Vec<(Labels, f64)> {
    state
        .model
        .gpus()
        .iter()
        .filter(|g| g.status == GpuStatus::Ok)
        .map(|g| {
            let n = state
                .model
                .procs()
                .all
                .iter()
                .filter(|r| r.key.gpu == g.id)
                .count();
            (gpu_labels(g), n as f64)
        })
        .collect()
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
