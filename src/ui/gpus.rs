//! The GPU area: full panels in a grid (gauges, readings, owners, sparklines) or compact
//! one-line-per-GPU rows, scrolled by `state.view.gpu_scroll` when they do not all fit.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline, SparklineBar};

use super::Theme;
use super::format::{NA, bar, bytes_short, gib, or_na, truncate};
use crate::history::{Ring, buckets};
use crate::layout::{Areas, first_gpu_shown, gpu_rects, visible_gpus};
use crate::model::owners::{is_free, owners, unattributed};
use crate::source::{GpuReading, GpuStatus};
use crate::state::State;

// Compact mode lives in its own file; the panels and the pieces both share stay here.
mod compact;

pub fn draw(frame: &mut Frame, areas: &Areas, state: &State, theme: &Theme) {
    if areas.gpus.height == 0 {
        return;
    }
    let gpus = state.model.gpus();
    let visible = visible_gpus(areas).max(1);
    let start = first_gpu_shown(areas, gpus.len(), state.view.gpu_scroll);
    let shown = &gpus[start..(start + visible).min(gpus.len())];
    if areas.compact {
        compact::draw_compact(frame, areas.gpus, state, shown, start, theme);
    } else {
        // The same rectangles mouse clicks are matched against (`ui::hit`).
        for (i, rect) in gpu_rects(areas, gpus.len(), state.view.gpu_scroll) {
            draw_panel(frame, rect, state, &gpus[i], theme);
        }
    }
}

// ---- full panels ---------------------------------------------------------------------

fn draw_panel(frame: &mut Frame, area: Rect, state: &State, g: &GpuReading, theme: &Theme) {
    let block = panel_block(area, state, g, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 || inner.width < 20 {
        return;
    }
    if g.status == GpuStatus::Lost {
        let line = Line::styled(
            "LOST — not responding; other GPUs keep updating",
            theme.critical,
        );
        frame.render_widget(Paragraph::new(line), inner);
        return;
    }
    let [gauges, readings, sparks] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(inner);
    frame.render_widget(
        Paragraph::new(gauge_line(g, inner.width as usize, theme)),
        gauges,
    );
    frame.render_widget(Paragraph::new(readings_line(state, g, theme)), readings);
    draw_sparklines(frame, sparks, state, g, theme);
}

/// The panel's frame: its border shows focus and severity, the top border names the GPU
/// and who holds it, the bottom border carries the finer details.
fn panel_block(area: Rect, state: &State, g: &GpuReading, theme: &Theme) -> Block<'static> {
    let severity = state.model.gpu_severity(&g.id);
    let focused = state.focus() == Some(&g.id);
    let border = theme.severity(severity, if focused { theme.focus } else { theme.dim });
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(if focused {
            symbols::border::DOUBLE
        } else if severity.is_some() {
            symbols::border::THICK
        } else {
            symbols::border::ROUNDED
        })
        .border_style(border)
        .title(Span::styled(
            format!(
                " {}{} · {} ",
                if focused { "▶ " } else { "" },
                g.label(),
                g.name
            ),
            theme.severity(severity, if focused { theme.focus } else { theme.title }),
        ));
    // Who holds the GPU sits in the panel's top border, read together with the GPU's name.
    let name_width = g.name.chars().count() + 10;
    let owner_room = (area.width as usize).saturating_sub(name_width + 4);
    let mut owner_spans = fit_spans(owner_spans(state, g, theme), owner_room);
    owner_spans.insert(0, Span::raw(" "));
    owner_spans.push(Span::raw(" "));
    let block = block.title_top(Line::from(owner_spans).right_aligned());
    // NVML's finer details (PCIe, enc/dec, ECC, MIG, why clocks are held) sit in the bottom
    // border: visible without costing a line.
    let (details, throttle) = detail_spans(g, theme);
    let throttle_width: usize = throttle.iter().map(|s| s.content.chars().count()).sum();
    let details_room = (area.width as usize).saturating_sub(throttle_width + 4);
    let mut block = block;
    if !throttle.is_empty() {
        block = block.title_bottom(Line::from(throttle).right_aligned());
    }
    if !details.is_empty() {
        block = block.title_bottom(Line::from(fit_spans(details, details_room)));
    }
    block
}

/// (details, clock-throttle reasons) for the panel's bottom border; empty when unknown.
fn detail_spans(g: &GpuReading, theme: &Theme) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
    use super::format::{ThrottleKind, rate, throttle_label};
    // XIDs seen, rows or pages waiting come first (a narrow border cuts the end): only what
    // is out of the ordinary; the warnings bar says what it means.
    let mut parts: Vec<String> = super::health_text::notable(&g.health);
    let unhealthy = !parts.is_empty();
    if let (Some(gen_), Some(width)) = (g.pcie_link_gen, g.pcie_link_width) {
        let mut pcie = format!("PCIe {gen_}×{width}");
        if let (Some(tx), Some(rx)) = (g.pcie_tx_per_second, g.pcie_rx_per_second) {
            pcie += &format!(" ↑{} ↓{}", rate(tx), rate(rx));
        }
        parts.push(pcie);
    }
    if g.encoder_util.is_some() || g.decoder_util.is_some() {
        parts.push(format!(
            "enc {} dec {}",
            or_na(g.encoder_util, |p| format!("{}%", p.0)),
            or_na(g.decoder_util, |p| format!("{}%", p.0))
        ));
    }
    if let Some(e) = g.ecc_errors_uncorrected {
        parts.push(format!("ECC {e}"));
    }
    if let Some(mig) = g.mig_enabled {
        parts.push(format!("MIG {}", if mig { "on" } else { "off" }));
    }
    // Each MIG instance: profile, GPU instance, memory used/total, processes; NVML gives
    // no utilisation per instance, so it says N/A rather than nothing (or 0).
    for m in &g.mig_devices {
        use super::format::gib;
        parts.push(format!(
            "{} gi{} {}/{}G util N/A {} proc",
            m.profile.as_deref().unwrap_or("MIG"),
            or_na(m.gpu_instance_id, |i| i.to_string()),
            or_na(m.memory_used, gib),
            or_na(m.memory_total, gib),
            m.pids.len()
        ));
    }
    let mut details = Vec::new();
    if !parts.is_empty() {
        let style = if unhealthy || g.ecc_errors_uncorrected.is_some_and(|e| e > 0) {
            theme.warning
        } else {
            theme.dim
        };
        details.push(Span::styled(format!(" {} ", parts.join(" · ")), style));
    }
    let mut throttle = Vec::new();
    if let Some(reasons) = g.throttle_reasons.as_ref().filter(|r| !r.is_empty()) {
        throttle.push(Span::styled(" clocks: ", theme.dim));
        for (i, name) in reasons.iter().enumerate() {
            let (label, kind) = throttle_label(name);
            let style = match kind {
                ThrottleKind::Benign => theme.dim,
                ThrottleKind::PowerCap => theme.text,
                ThrottleKind::Slowdown => theme.critical,
            };
            if i > 0 {
                throttle.push(Span::styled(", ", theme.dim));
            }
            throttle.push(Span::styled(label.to_string(), style));
        }
        throttle.push(Span::raw(" "));
    }
    (details, throttle)
}

fn gauge_line<'a>(g: &GpuReading, width: usize, theme: &Theme) -> Line<'a> {
    let mem_text = memory_text(g, " GiB");
    // "GPU " + bar + " 100%" + "  VRAM " + bar + " " + text
    let fixed = 4 + 5 + 7 + 1 + mem_text.chars().count();
    let bar_w = (width.saturating_sub(fixed) / 2).max(4);
    let util = g.util.map(|u| u.ratio());
    let mem = g.memory_ratio();
    Line::from(vec![
        Span::styled("GPU ", theme.dim),
        Span::styled(bar(util, bar_w), theme.good),
        Span::raw(format!(" {:>4}", or_na(g.util, |u| format!("{}%", u.0)))),
        Span::styled("  VRAM ", theme.dim),
        Span::styled(bar(mem, bar_w), theme.level(mem)),
        Span::styled(format!(" {mem_text}"), theme.level(mem)),
    ])
}

fn readings_line<'a>(state: &State, g: &GpuReading, theme: &Theme) -> Line<'a> {
    let mut temp = temp_text(g);
    if let Some(s) = g.temperature_slowdown {
        temp += &format!(" (slow {})", s.0);
    }
    let power = match (g.power, g.power_limit) {
        (Some(p), Some(l)) => format!("{:.0}/{:.0} W", p.0, l.0),
        (Some(p), None) => format!("{:.0} W", p.0),
        // `N/A/300 W` read as a garbled fraction: an unknown draw beside a known limit.
        (None, Some(l)) => format!("{NA} (limit {:.0} W)", l.0),
        (None, None) => format!("{NA} W"),
    };
    let rest = format!(
        "  {power}  fan {}  {}  clk {}/{} MHz",
        or_na(g.fan, |f| format!("{}%", f.0)),
        or_na(g.pstate, |p| format!("P{p}")),
        or_na(g.sm_clock, |c| c.0.to_string()),
        or_na(g.memory_clock, |c| c.0.to_string()),
    );
    Line::from(vec![
        Span::styled(temp, temp_style(state, g, theme)),
        Span::raw(rest),
    ])
}

fn draw_sparklines(frame: &mut Frame, area: Rect, state: &State, g: &GpuReading, theme: &Theme) {
    let Some(h) = state.model.history(&g.id) else {
        return;
    };
    let cells = Layout::horizontal([Constraint::Ratio(1, 3); 3])
        .spacing(1)
        .split(area);
    let power_max = g.power_limit.map(|l| l.0).unwrap_or(1000.0);
    // Temperatures are drawn from 20 °C so the interesting range fills the height.
    let temp = spark_points(&h.temperature, |t| u64::from(t.saturating_sub(20)));
    let power = spark_points(&h.power, |p| (p.max(0.0) * 10.0) as u64);
    let util = spark_points(&h.util, u64::from);
    let series = [
        ("temp", temp, 80, theme.spark_temp),
        ("power", power, (power_max * 10.0) as u64, theme.spark_power),
        ("util", util, 100, theme.spark_util),
    ];
    for (cell, (label, points, max, style)) in cells.iter().zip(series) {
        let [label_area, spark_area] =
            Layout::horizontal([Constraint::Length(6), Constraint::Fill(1)]).areas(*cell);
        frame.render_widget(Paragraph::new(Span::styled(label, theme.dim)), label_area);
        // The whole history window across the width, newest at the right edge.
        let width = spark_area.width as usize;
        let bars: Vec<SparklineBar> = buckets(&points, h.pushed, h.util.capacity(), width)
            .into_iter()
            .map(SparklineBar::from)
            .collect();
        frame.render_widget(
            Sparkline::default().data(bars).max(max.max(1)).style(style),
            spark_area,
        );
    }
}

fn spark_points<T: Copy>(ring: &Ring<Option<T>>, to_u64: impl Fn(T) -> u64) -> Vec<Option<u64>> {
    ring.iter().map(|v| v.map(&to_u64)).collect()
}

// ---- shared pieces -------------------------------------------------------------------

/// Cuts a line of spans to `width` characters, ending with `…` when something was cut.
fn fit_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let len = span.content.chars().count();
        if used + len <= width {
            used += len;
            out.push(span);
        } else {
            let room = width.saturating_sub(used);
            if room > 0 {
                out.push(Span::styled(truncate(&span.content, room), span.style));
            }
            break;
        }
    }
    out
}

fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ").unwrap_or(name)
}

fn memory_text(g: &GpuReading, unit: &str) -> String {
    match (g.memory_used, g.memory_total) {
        (Some(u), Some(t)) => format!("{}/{}{unit}", gib(u), gib(t)),
        (Some(u), None) => format!("{}/{NA}{unit}", gib(u)),
        (None, Some(t)) => format!("{NA}/{}{unit}", gib(t)),
        (None, None) => NA.to_string(),
    }
}

fn temp_text(g: &GpuReading) -> String {
    or_na(g.temperature, |t| format!("{}°C", t.0))
}

fn temp_style(state: &State, g: &GpuReading, theme: &Theme) -> Style {
    use crate::model::warnings::WarningKind;
    let heat = state
        .model
        .warnings()
        .iter()
        .filter(|w| w.gpu() == Some(&g.id) && matches!(w.kind, WarningKind::Overheating { .. }))
        .map(|w| w.severity)
        .max();
    theme.severity(heat, theme.text)
}

/// `alice 41.2G · bob 12.0G`, plus VRAM no process accounts for, or `free`.
fn owner_spans(state: &State, g: &GpuReading, theme: &Theme) -> Vec<Span<'static>> {
    let list = owners(&state.model, g);
    let mut spans = Vec::new();
    for (i, (user, vram)) in list.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.dim));
        }
        let own = state.config.current_user.as_deref() == Some(user.as_str());
        let style = if own { theme.own_process } else { theme.text };
        spans.push(Span::styled(
            format!("{user} {}", bytes_short(*vram)),
            style,
        ));
    }
    if let Some(rest) = unattributed(&state.model, g) {
        if !spans.is_empty() {
            spans.push(Span::styled(" · ", theme.dim));
        }
        spans.push(Span::styled(
            format!("no process {}", bytes_short(rest)),
            theme.warning,
        ));
    }
    if spans.is_empty() {
        if is_free(&state.model, g) {
            spans.push(Span::styled("free", theme.good.patch(theme.title)));
        } else {
            spans.push(Span::styled("—", theme.dim));
        }
    }
    spans
}
