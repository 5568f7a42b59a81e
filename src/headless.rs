//! Headless output: `--once` as plain text or JSON. Reuses the sampler and `state::update`
//! (so warnings and the process table are exactly what the TUI shows) and never touches
//! the terminal code.

use color_eyre::eyre::{Result, eyre};
use serde::Serialize;

use crate::model::owners::{free_gpus, owners, unattributed};
use crate::model::procs::ProcRow;
use crate::model::warnings::Warning;
use crate::sampler::{self, SamplerEvent};
use crate::source::{GpuReading, GpuSource, HostInfo};
use crate::state::{Msg, State, ViewConfig, update};
use crate::ui::format::{NA, bytes_short, elapsed, gib, or_na};

/// Version of the JSON document; bumped on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Runs the sampler until the first sample and returns the state it produces.
pub async fn snapshot(source: Box<dyn GpuSource>, config: ViewConfig) -> Result<State> {
    let interval = config.interval;
    let (tx, mut rx) = sampler::channel();
    let task = tokio::spawn(sampler::run(source, interval, tx));
    let event = rx.recv().await;
    drop(rx);
    task.abort();
    let mut state = State::new(config);
    match event {
        Some(SamplerEvent::Sample(sample)) => {
            update(&mut state, Msg::Sample(sample));
            Ok(state)
        }
        Some(SamplerEvent::Failed(why)) => Err(eyre!("reading GPUs failed: {why}")),
        None => Err(eyre!("the sampler stopped before taking a sample")),
    }
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    schema_version: u32,
    /// Seconds since the Unix epoch.
    time: Option<f64>,
    host: &'a HostInfo,
    gpus: Vec<JsonGpu<'a>>,
    processes: Vec<JsonProc<'a>>,
    warnings: &'a [Warning],
    free_gpus: Vec<u32>,
}

#[derive(Serialize)]
struct JsonGpu<'a> {
    #[serde(flatten)]
    reading: &'a GpuReading,
    /// VRAM used that no listed process accounts for (stale allocations), in bytes.
    unattributed_memory: Option<u64>,
}

#[derive(Serialize)]
struct JsonProc<'a> {
    gpu_index: u32,
    gpu_uuid: &'a str,
    pid: u32,
    user: Option<&'a str>,
    #[serde(rename = "type")]
    kind: &'a str,
    gpu_memory: Option<u64>,
    gpu_util: Option<u32>,
    cpu_percent: Option<f32>,
    host_memory: Option<u64>,
    elapsed_seconds: Option<u64>,
    /// Start time, seconds since the Unix epoch: with the PID, the process identity (lets a
    /// remote gpuwatch rebuild the process exactly).
    started: Option<f64>,
    uid: Option<u32>,
    command: &'a str,
    visibility: &'a str,
}

impl<'a> JsonProc<'a> {
    fn from_row(r: &'a ProcRow) -> Self {
        JsonProc {
            gpu_index: r.gpu_index,
            gpu_uuid: &r.key.gpu.0,
            pid: r.key.pid,
            user: r.user.as_deref(),
            kind: r.kind.label(),
            gpu_memory: r.vram.map(|b| b.0),
            gpu_util: r.gpu_util,
            cpu_percent: r.cpu,
            host_memory: r.host_memory.map(|b| b.0),
            elapsed_seconds: r.elapsed.map(|d| d.as_secs()),
            started: r
                .key
                .started
                .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64()),
            uid: r.uid,
            command: &r.command,
            visibility: r.visibility.name(),
        }
    }
}

/// The `--once --json` document: real numbers in base units, `null` for unknown.
pub fn render_json(state: &State) -> String {
    let doc = JsonDoc {
        schema_version: JSON_SCHEMA_VERSION,
        time: state
            .model
            .now()
            .and_then(|t| t.duration_since(std::time::SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64()),
        host: state.model.host(),
        gpus: state
            .model
            .gpus()
            .iter()
            .map(|g| JsonGpu {
                reading: g,
                unattributed_memory: unattributed(&state.model, g).map(|b| b.0),
            })
            .collect(),
        processes: state.model.procs().rows().map(JsonProc::from_row).collect(),
        warnings: state.model.warnings(),
        free_gpus: free_gpus(&state.model),
    };
    serde_json::to_string_pretty(&doc).expect("the snapshot document always serializes") + "\n"
}

/// The plain-text `--once` snapshot: a GPU table, warnings, and the process table.
pub fn render_text(state: &State) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let h = state.model.host();
    let _ = writeln!(
        out,
        "{}  driver {}  CUDA {}  {} GPUs  free: {}",
        h.hostname,
        h.driver_version.as_deref().unwrap_or(NA),
        h.cuda_version.as_deref().unwrap_or(NA),
        state.model.gpus().len(),
        list_or_none(&free_gpus(&state.model)),
    );
    let _ = writeln!(
        out,
        "\n{:>3}  {:<22} {:>5} {:>16} {:>5} {:>11} {:>4} {:>9} {:>9} {:>3}  OWNERS",
        "GPU", "NAME", "UTIL", "VRAM GiB", "TEMP", "POWER W", "FAN", "SM MHz", "MEM MHz", "P"
    );
    for g in state.model.gpus() {
        if g.status == crate::source::GpuStatus::Lost {
            let _ = writeln!(out, "{:>3}  {:<22} LOST — not responding", g.index, g.name);
            continue;
        }
        let mem = match (g.memory_used, g.memory_total) {
            (Some(u), Some(t)) => format!("{}/{}", gib(u), gib(t)),
            (u, t) => format!("{}/{}", or_na(u, gib), or_na(t, gib)),
        };
        let watts = |w: crate::units::Watts| format!("{:.0}", w.0);
        let power = format!("{}/{}", or_na(g.power, watts), or_na(g.power_limit, watts));
        let mut who: Vec<String> = owners(&state.model, g)
            .iter()
            .map(|(u, b)| format!("{u} {}", bytes_short(*b)))
            .collect();
        if let Some(rest) = unattributed(&state.model, g) {
            who.push(format!("no process {}", bytes_short(rest)));
        }
        let _ = writeln!(
            out,
            "{:>3}  {:<22} {:>5} {:>16} {:>5} {:>11} {:>4} {:>9} {:>9} {:>3}  {}",
            g.index,
            crate::ui::format::truncate(&g.name, 22),
            or_na(g.util, |u| format!("{}%", u.0)),
            mem,
            or_na(g.temperature, |t| format!("{}C", t.0)),
            power,
            or_na(g.fan, |f| format!("{}%", f.0)),
            or_na(g.sm_clock, |c| c.0.to_string()),
            or_na(g.memory_clock, |c| c.0.to_string()),
            or_na(g.pstate, |p| format!("P{p}")),
            if who.is_empty() {
                "-".to_string()
            } else {
                who.join(", ")
            },
        );
    }
    if !state.model.warnings().is_empty() {
        let _ = writeln!(out, "\nWARNINGS");
        for w in state.model.warnings() {
            let badge = match w.severity {
                crate::model::warnings::Severity::Critical => "CRIT",
                crate::model::warnings::Severity::Warning => "WARN",
            };
            let _ = writeln!(out, "  {badge}  {}", w.message);
        }
    }
    let _ = writeln!(
        out,
        "\n{:>3} {:>7} {:<9} {:<4} {:>6} {:>4} {:>6} {:>8} {:>8}  COMMAND",
        "GPU", "PID", "USER", "TYPE", "VRAM", "GPU%", "CPU%", "HOST MEM", "TIME"
    );
    for r in state.model.procs().rows() {
        let _ = writeln!(
            out,
            "{:>3} {:>7} {:<9} {:<4} {:>6} {:>4} {:>6} {:>8} {:>8}  {}",
            r.gpu_index,
            r.key.pid,
            r.user.as_deref().unwrap_or("?"),
            r.kind.label(),
            or_na(r.vram, bytes_short),
            or_na(r.gpu_util, |u| format!("{u}%")),
            or_na(r.cpu, |c| format!("{c:.1}")),
            or_na(r.host_memory, bytes_short),
            or_na(r.elapsed, elapsed),
            r.command,
        );
    }
    if state.model.procs().is_empty() {
        let _ = writeln!(out, "  (no GPU processes)");
    }
    out
}

fn list_or_none(v: &[u32]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}
