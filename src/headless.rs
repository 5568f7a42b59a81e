//! Headless output: `--once` as plain text or JSON. Reuses the sampler and `state::update`
//! (so warnings and the process table are exactly what the TUI shows) and never touches
//! the terminal code.

use std::time::Duration;

use color_eyre::eyre::{Result, eyre};

use crate::model::owners::{free_labels, owners, unattributed};
use crate::model::procs::Column;
use crate::model::warnings::Severity;
use crate::reading::{GpuStatus, Sample, Visibility};
use crate::sampler::{self, SamplerEvent};
use crate::source::GpuSource;
use crate::state::{Msg, State, ViewConfig, update};
use crate::text_safe::escape;
use crate::ui::format::{NA, bytes_short, gib, or_na};
use crate::ui::table::{cell_text, right_aligned};
use crate::ui::text::warning_line;
use crate::wire;

/// How long `--once` waits for a second sample when the first could not give CPU%: a
/// process's CPU use is a delta between two readings of /proc, so one sample has none.
pub const CPU_SAMPLE_GAP: Duration = Duration::from_millis(250);

/// Runs the sampler until the first sample and returns the state it produces.
pub async fn snapshot(source: Box<dyn GpuSource>, config: ViewConfig) -> Result<State> {
    snapshot_after(source, config, Vec::new(), None).await
}

/// The same after applying `prelude` (the demo's back-filled history), so warnings that
/// need time (an idle holder, a stale allocation) are already raised. With `cpu_gap`,
/// when some local process has no CPU% yet (always, on a real host's first sample), it
/// takes a second sample that much later, so `--once` shows CPU% too.
pub async fn snapshot_after(
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    prelude: Vec<Sample>,
    cpu_gap: Option<Duration>,
) -> Result<State> {
    let interval = cpu_gap.unwrap_or(config.interval);
    let (tx, mut rx) = sampler::channel();
    let task = tokio::spawn(sampler::run(source, interval, tx));
    let mut state = State::new(config);
    for sample in prelude {
        update(&mut state, Msg::Sample(Box::new(sample)));
    }
    let first = next_sample(&mut rx).await;
    let result = match first {
        Some(SamplerEvent::Sample(sample)) => {
            update(&mut state, Msg::Sample(sample));
            if cpu_gap.is_some()
                && lacks_cpu(&state)
                && let Some(SamplerEvent::Sample(second)) = next_sample(&mut rx).await
            {
                update(&mut state, Msg::Sample(second));
            }
            Ok(state)
        }
        Some(SamplerEvent::Failed(why)) => Err(eyre!("reading GPUs failed: {why}")),
        // `next_sample` returns only samples and failures.
        _ => Err(eyre!("the sampler stopped before taking a sample")),
    };
    drop(rx);
    task.abort();
    result
}

/// The sampler's next sample or failure. Notices and stall reports are not the snapshot:
/// notices go to stderr (escaped), stalls are waited out.
async fn next_sample(rx: &mut tokio::sync::mpsc::Receiver<SamplerEvent>) -> Option<SamplerEvent> {
    loop {
        match rx.recv().await? {
            SamplerEvent::Notice(text) => eprintln!("gpuwatch: {}", escape(&text)),
            SamplerEvent::Stalled(_) => {}
            event => return Some(event),
        }
    }
}

/// Whether a process this host can see has no CPU% yet (its first sighting), or the host
/// line has memory but no CPU % (both are deltas between two readings of /proc).
fn lacks_cpu(state: &State) -> bool {
    let load = &state.model.host().load;
    let host_lacks = load.memory_total.is_some() && load.cpu_percent.is_none();
    host_lacks
        || state
            .model
            .procs()
            .all
            .iter()
            .any(|r| r.host.is_none() && r.visibility == Visibility::Visible && r.cpu.is_none())
}

/// The `--once --json` document (also `/api/v1/snapshot`, written by `source::wire`):
/// real numbers in base units, `null` for unknown, each warning with its sentence.
pub fn render_json(state: &State) -> String {
    wire::Snapshot::of(&state.model, warning_line).to_json()
}

/// The plain-text `--once` snapshot: a GPU table, warnings, and the process table.
pub fn render_text(state: &State) -> String {
    let h = state.model.host();
    let mut out = format!(
        "{}  driver {}  CUDA {}  {} GPUs  free: {}\n",
        escape(&h.hostname),
        // Escaped like every field: a remote's or a Prometheus series' version string is
        // someone else's text, and a newline in it forged header lines.
        escape(h.driver_version.as_deref().unwrap_or(NA)),
        escape(h.cuda_version.as_deref().unwrap_or(NA)),
        state.model.gpus().len(),
        list_or_none(&free_labels(&state.model)),
    );
    out += &host_line(&h.load);
    out += &gpu_table(state);
    out += &health_lines(state);
    out += &warning_lines(state);
    out += &process_table(state);
    // Fields are escaped where they are written; this last pass guards any that is not.
    crate::text_safe::escape_lines(&out).into_owned()
}

/// The TUI's host line as text (`host: CPU 38% · RAM …`); nothing when the source read no
/// host figures at all (a recording or remote host of an older version).
fn host_line(load: &crate::reading::HostLoad) -> String {
    if *load == crate::reading::HostLoad::default() {
        return String::new();
    }
    format!("host: {}\n", crate::ui::host::plain(load))
}

/// One line per GPU with its readings and who holds it.
fn gpu_table(state: &State) -> String {
    let w = label_width(state);
    let mut out = format!(
        "\n{:>w$}  {:<22} {:>5} {:>16} {:>5} {:>11} {:>4} {:>9} {:>9} {:>3}  OWNERS\n",
        "GPU", "NAME", "UTIL", "VRAM GiB", "TEMP", "POWER W", "FAN", "SM MHz", "MEM MHz", "P"
    );
    for g in state.model.gpus() {
        if g.status == crate::reading::GpuStatus::Lost {
            out += &format!(
                "{:>w$}  {:<22} LOST — not responding\n",
                escape(&g.label()),
                escape(&crate::ui::format::gpu_name(g))
            );
            continue;
        }
        let mem = pair(g.memory_used, g.memory_total, gib);
        let watts = |w: crate::units::Watts| format!("{:.0}", w.0);
        let power = match (g.power, g.power_limit) {
            (None, Some(limit)) => format!("{NA} of {}", watts(limit)),
            (p, l) => pair(p, l, watts),
        };
        out += &format!(
            "{:>w$}  {:<22} {:>5} {:>16} {:>5} {:>11} {:>4} {:>9} {:>9} {:>3}  {}\n",
            escape(&g.label()),
            escape(&crate::ui::format::truncate(
                &crate::ui::format::gpu_name(g),
                22
            )),
            or_na(g.util, |u| format!("{}%", u.0)),
            mem,
            or_na(g.temperature, |t| format!("{}C", t.0)),
            power,
            or_na(g.fan, |f| format!("{}%", f.0)),
            or_na(g.sm_clock, |c| c.0.to_string()),
            or_na(g.memory_clock, |c| c.0.to_string()),
            or_na(g.pstate, |p| format!("P{p}")),
            escape(&owners_text(state, g)),
        );
        out += &instance_rows(state, g, w);
    }
    out
}

/// `used/total`, with `N/A` for an unknown one, and a single `N/A` when both are (not
/// `N/A/N/A`).
fn pair<T>(a: Option<T>, b: Option<T>, f: impl Fn(T) -> String) -> String {
    match (a, b) {
        (None, None) => NA.to_string(),
        (a, b) => format!("{}/{}", or_na(a, &f), or_na(b, &f)),
    }
}

/// A line per MIG instance under its GPU's: `0/1` (GPU/GI), profile and CI, util `N/A`
/// (NVML gives none per instance), memory, who holds it, and its `MIG-` UUID.
fn instance_rows(state: &State, g: &crate::reading::GpuReading, w: usize) -> String {
    let mut out = String::new();
    for m in &g.mig_devices {
        let who: Vec<String> = crate::model::owners::instance_owners(&state.model, m)
            .iter()
            .map(|(u, b)| format!("{u} {}", bytes_short(*b)))
            .collect();
        let name = format!(
            "└ {} ci{}",
            m.profile.as_deref().unwrap_or("MIG"),
            or_na(m.compute_instance_id, |c| c.to_string())
        );
        out += &format!(
            "{:>w$}  {:<22} {:>5} {:>16} {:>46}  {} · {}\n",
            format!(
                "{}/{}",
                escape(&g.label()),
                or_na(m.gpu_instance_id, |i| i.to_string())
            ),
            escape(&crate::ui::format::truncate(&name, 22)),
            or_na(m.util, |u| format!("{}%", u.0)),
            pair(m.memory_used, m.memory_total, gib),
            "",
            escape(&if who.is_empty() {
                "-".into()
            } else {
                who.join(", ")
            }),
            escape(&m.id.0),
        );
    }
    out
}

/// `alice 68.0G, slurm 48121 (bob) 12.0G, no process 12.9G`, or `free` (or why not).
fn owners_text(state: &State, g: &crate::reading::GpuReading) -> String {
    let mut who: Vec<String> = owners(&state.model, g)
        .iter()
        .map(|(u, b)| format!("{u} {}", bytes_short(*b)))
        .collect();
    if let Some(rest) = unattributed(&state.model, g) {
        who.push(format!("no process {}", bytes_short(rest)));
    }
    // Free, or why not, in the TUI's words (one predicate, `owners::unheld`).
    match crate::model::owners::unheld(&state.model, g) {
        Some(u) => crate::ui::format::unheld_words(u)
            .unwrap_or("-")
            .to_string(),
        None => who.join(", "),
    }
}

/// One line per answering GPU with its health readings (`N/A` where it cannot tell); left
/// out when no GPU reports any.
fn health_lines(state: &State) -> String {
    use crate::ui::health_text;
    let gpus = state.model.gpus();
    if !gpus.iter().any(|g| health_text::any_known(&g.health)) {
        return String::new();
    }
    let w = label_width(state);
    let mut out = String::from("\nHEALTH\n");
    for g in gpus.iter().filter(|g| g.status == GpuStatus::Ok) {
        out += &format!(
            "{:>w$}  {}\n",
            escape(&g.label()),
            health_text::all(&g.health).join("  ")
        );
    }
    out
}

fn warning_lines(state: &State) -> String {
    if state.model.warnings().is_empty() {
        return String::new();
    }
    let mut out = String::from("\nWARNINGS\n");
    for w in state.model.warnings() {
        let badge = match w.severity {
            Severity::Critical => "CRIT",
            Severity::Warning => "WARN",
        };
        out += &format!("  {badge}  {}\n", escape(&warning_line(w)));
    }
    out
}

/// The process table with the TUI's columns, titles and cell words (all of them but the
/// command padded to the TUI's widths), in its order.
fn process_table(state: &State) -> String {
    let columns = crate::ui::table::visible_columns(state);
    let host = crate::ui::table::host_width(state);
    let line = |cell: &dyn Fn(Column) -> String| {
        let cells: Vec<String> = columns
            .iter()
            .map(|&c| {
                let text = escape(&cell(c)).into_owned();
                match crate::layout::column_width(c, host) {
                    ratatui::layout::Constraint::Length(w) if right_aligned(c) => {
                        format!("{text:>w$}", w = w as usize)
                    }
                    ratatui::layout::Constraint::Length(w) => format!("{text:<w$}", w = w as usize),
                    _ => text,
                }
            })
            .collect();
        cells.join(" ").trim_end().to_string() + "\n"
    };
    let mut out = String::from("\n");
    out += &line(&|c: Column| c.title().to_string());
    for r in state.model.procs().rows() {
        out += &line(&|c: Column| cell_text(c, r));
    }
    if !state.model.processes_known() {
        // A source without per-process data (Prometheus): an empty table is not "none".
        out += "  (processes unknown: the source has no per-process data)\n";
    } else if state.model.procs().is_empty() {
        out += "  (no GPU processes)\n";
    }
    out
}

/// `6,7`, or `gpu1:6,gpu2:3` when watching several hosts (escaped: a host name is
/// someone else's text), or `none`.
fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        escape(&v.join(",")).into_owned()
    }
}

/// The width of the GPU column: 3, or the longest label when hosts name them (`gpu1:0`).
fn label_width(state: &State) -> usize {
    let longest = state.model.gpus().iter().map(|g| g.label().chars().count());
    longest.max().unwrap_or(0).max(3)
}
