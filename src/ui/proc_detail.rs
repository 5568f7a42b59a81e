//! The process detail view (Enter on a process row): its VRAM over time with current, peak
//! and growth rate ("is my job leaking?"), SM %, CPU % and host memory over time, and
//! every fact about it uncut: the whole command line wrapped, start time and elapsed, user
//! and job, parent chain, and the GPUs it is on. Shows one process identity (PID + start
//! time), whatever row it sits on. Reads the state only.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::Theme;
use super::chart::{self, ChartSpec};
use crate::history::procs::{LINGER, ProcHistory, ProcId, ProcPoint};
use crate::model::procs::ProcRow;
use crate::present::format::{NA, bytes_short, duration_short, elapsed, gib, or_na, pack, wrap};
use crate::state::State;
use crate::units::Bytes;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme, id: &ProcId) {
    frame.render_widget(Clear, area);
    let rows: Vec<&ProcRow> = state
        .model
        .procs()
        .all
        .iter()
        .filter(|r| r.key.pid == id.pid && r.key.started == id.started)
        .collect();
    let history = state.model.proc_history(id);
    let width = area.width as usize;
    let title = Line::styled(title(id, rows.first().copied()), theme.title);
    let history = history.as_deref();
    let facts = facts(state, &rows, history, width.saturating_sub(2));
    // Two by two; in a row of four only on a wide, low screen. Charts keep at least 4 rows
    // each; the text takes what it needs.
    let columns = if area.width >= 160 && area.height < 40 {
        4
    } else {
        2
    };
    let min_charts = (4usize.div_ceil(columns) * 4) as u16;
    let room = area.height.saturating_sub(1 + min_charts) as usize;
    let info_height = facts.len().min(room) as u16;
    let charts_area = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1 + info_height),
    );
    draw_charts(frame, charts_area, state, theme, history, columns);
    let info = Rect::new(area.x, charts_area.bottom(), area.width, info_height);
    frame.render_widget(
        Paragraph::new(title),
        Rect::new(area.x, area.y, area.width, 1),
    );
    let facts: Vec<Line> = facts
        .into_iter()
        .map(|l| Line::raw(format!(" {l}")))
        .collect();
    frame.render_widget(Paragraph::new(facts), info);
}

fn title(id: &ProcId, row: Option<&ProcRow>) -> String {
    let who = row.and_then(|r| r.user.as_deref()).unwrap_or("?");
    let name = row
        .map(|r| {
            r.command
                .split(' ')
                .next()
                .unwrap_or("")
                .rsplit('/')
                .next()
                .unwrap_or("")
        })
        .unwrap_or("");
    format!(" PID {} · {who} · {name} · Esc: back", id.pid)
}

/// The facts under the charts, wrapped to `width`: nothing is cut.
fn facts(state: &State, rows: &[&ProcRow], h: Option<&ProcHistory>, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let Some(first) = rows.first() else {
        out.extend(wrap(
            &format!(
                "Not on any GPU now: it exited or freed its GPUs. Its history is kept for {} \
                 after it left.",
                duration_short(LINGER)
            ),
            width,
        ));
        if let Some(h) = h {
            out.extend(pack(&vram_items(h), " · ", width));
        }
        return out;
    };
    out.extend(wrap(&format!("command: {}", first.command), width));
    let mut items = vec![started(state, first)];
    items.push(format!(
        "user {} (UID {})",
        first.user.as_deref().unwrap_or(NA),
        or_na(first.uid, |u| u.to_string())
    ));
    items.push(format!(
        "job {}",
        first.job.as_deref().unwrap_or("none (a login shell)")
    ));
    items.push(match first.context.parents.as_deref().map(Vec::as_slice) {
        Some([]) => "parents: started by init".to_string(),
        Some(chain) => format!(
            "parents: {} → {}",
            chain.join(" → "),
            short_name(&first.command)
        ),
        None => format!("parents: {NA}"),
    });
    if let Some(h) = h {
        items.extend(vram_items(h));
    }
    out.extend(pack(&items, " · ", width));
    let gpus: Vec<String> = rows.iter().map(|r| gpu_item(r, h)).collect();
    out.extend(pack(&gpus, " · ", width));
    out
}

/// `python` of `/usr/bin/python train.py`.
fn short_name(command: &str) -> &str {
    let first = command.split(' ').next().unwrap_or(command);
    first.rsplit('/').next().unwrap_or(first)
}

fn started(state: &State, r: &ProcRow) -> String {
    let Some(at) = r.key.started else {
        return format!("started {NA}");
    };
    let local = chrono::DateTime::<chrono::Utc>::from(at).with_timezone(&state.config.utc_offset);
    format!(
        "started {} (running {})",
        local.format("%Y-%m-%d %H:%M:%S"),
        or_na(r.elapsed, elapsed)
    )
}

/// Current, peak and growth of the process's VRAM over all its GPUs.
fn vram_items(h: &ProcHistory) -> Vec<String> {
    let now = h.points.latest().and_then(|p| p.vram);
    let growth = h.vram_growth_per_sec().map_or(NA.to_string(), |b| {
        let sign = if b < 0.0 { "-" } else { "+" };
        format!("{sign}{}/s", bytes_short(Bytes(b.abs() as u64)))
    });
    vec![format!(
        "VRAM {} GiB now · peak {} GiB · growth {growth} over {} points",
        or_na(now, gib),
        or_na(h.peak(), gib),
        h.points.len()
    )]
}

/// `GPU 0: 12.3 GiB (peak 14.0) SM 40 %`.
fn gpu_item(r: &ProcRow, h: Option<&ProcHistory>) -> String {
    let peak = h.and_then(|h| h.peak_on(&r.key.gpu));
    let host = r
        .host
        .as_deref()
        .map(|h| format!("{h}:"))
        .unwrap_or_default();
    format!(
        "GPU {host}{}: {} GiB (peak {}) SM {} {}",
        r.gpu_index,
        or_na(r.vram, gib),
        or_na(peak, gib),
        or_na(r.gpu_util, |u| format!("{u} %")),
        r.kind.label()
    )
}

fn draw_charts(
    frame: &mut Frame,
    area: Rect,
    state: &State,
    theme: &Theme,
    h: Option<&ProcHistory>,
    columns: usize,
) {
    let pts = Points {
        now: state.model.now().unwrap_or(std::time::UNIX_EPOCH),
        points: h.map_or_else(Vec::new, |h| h.points.iter().collect()),
    };
    let window = (state.config.history_len as f64 * state.config.interval.as_secs_f64()).max(1.0);
    let mut specs = gpu_specs(theme, &pts, h.and_then(|h| h.peak()));
    specs.extend(host_specs(theme, &pts));
    for (spec, cell) in specs.iter().zip(chart::grid(area, specs.len(), columns)) {
        chart::draw(frame, cell, spec, window, theme.dim);
    }
}

/// This process's points, drawn against the latest sample's time.
type Points<'a> = chart::Points<'a, ProcPoint>;

/// VRAM (with the peak) and SM share.
fn gpu_specs(theme: &Theme, pts: &Points, peak: Option<Bytes>) -> Vec<ChartSpec> {
    let vram = or_na(pts.latest().and_then(|p| p.vram), gib);
    let sm = or_na(pts.latest().and_then(|p| p.sm), |u| format!("{u} %"));
    vec![
        ChartSpec {
            title: "VRAM".into(),
            series: vec![pts.series(format!("{vram} GiB"), theme.spark_util, |p| {
                p.vram.map(|b| b.0 as f64)
            })],
            references: peak
                .map(|b| (b.0 as f64, format!("peak {} GiB", gib(b)), theme.warning))
                .into_iter()
                .collect(),
            // Room above the peak, so a flat process's line does not lie on the title.
            y_floor: peak.map_or(Bytes::GIB as f64, |b| b.0 as f64 * 1.1),
            y_label: |v| format!("{:.0}G", v / Bytes::GIB as f64),
        },
        ChartSpec {
            title: "SM".into(),
            series: vec![pts.series(sm, theme.spark_power, |p| p.sm.map(f64::from))],
            references: vec![],
            y_floor: 100.0,
            y_label: |v| format!("{v:.0}%"),
        },
    ]
}

/// CPU share and resident host memory.
fn host_specs(theme: &Theme, pts: &Points) -> Vec<ChartSpec> {
    let cpu = or_na(pts.latest().and_then(|p| p.cpu), |c| format!("{c:.0} %"));
    let mem = or_na(pts.latest().and_then(|p| p.host_memory), bytes_short);
    vec![
        ChartSpec {
            title: "CPU".into(),
            series: vec![pts.series(cpu, theme.spark_temp, |p| p.cpu.map(f64::from))],
            references: vec![],
            y_floor: 100.0,
            y_label: |v| format!("{v:.0}%"),
        },
        ChartSpec {
            title: "host memory".into(),
            series: vec![pts.series(mem, theme.spark_util, |p| p.host_memory.map(|b| b.0 as f64))],
            references: vec![],
            y_floor: Bytes::GIB as f64,
            y_label: |v| bytes_short(Bytes(v as u64)),
        },
    ]
}
