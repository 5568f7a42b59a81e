//! Compact mode: one line per GPU under a line of column titles, the columns chosen once
//! per frame from the width; who holds each GPU fills what room is left.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{fit_spans, memory_text, owner_spans, short_name, temp_style, temp_text};
use crate::source::{GpuReading, GpuStatus};
use crate::state::State;
use crate::ui::Theme;
use crate::ui::format::{bar, or_na, truncate};

/// Column widths of a compact line, chosen once per frame from the available width.
struct CompactColumns {
    /// Width of the GPU label (`3`, or `gpu1:3` when watching several hosts).
    label: usize,
    name: usize,
    bar: usize,
    extras: bool,
}

impl CompactColumns {
    fn for_width(width: u16, state: &State) -> Self {
        let wide = width >= 120;
        let longest = state
            .model
            .gpus()
            .iter()
            .map(|g| g.label().chars().count())
            .max()
            .unwrap_or(1);
        CompactColumns {
            label: longest.clamp(3, 16),
            name: if wide { 14 } else { 0 },
            bar: if width >= 100 { 12 } else { 8 },
            extras: wide,
        }
    }
}

pub(super) fn draw_compact(
    frame: &mut Frame,
    area: Rect,
    state: &State,
    shown: &[GpuReading],
    start: usize,
    theme: &Theme,
) {
    let cols = CompactColumns::for_width(area.width, state);
    let mut lines = vec![compact_title(
        &cols,
        state,
        shown.len(),
        start,
        area.width,
        theme,
    )];
    lines.extend(
        shown
            .iter()
            .map(|g| compact_line(&cols, state, g, area.width, theme)),
    );
    frame.render_widget(Paragraph::new(lines), area);
}

fn compact_title<'a>(
    cols: &CompactColumns,
    state: &State,
    shown: usize,
    start: usize,
    width: u16,
    theme: &Theme,
) -> Line<'a> {
    let mut text = format!("{:>w$} ", "GPU", w = cols.label);
    if cols.name > 0 {
        text += &format!("{:<w$} ", "NAME", w = cols.name);
    }
    text += &format!("{:<w$} ", "UTIL", w = cols.bar + 5);
    text += &format!("{:<w$} ", "VRAM GiB", w = cols.bar + 12);
    text += &format!("{:>4} {:>5} ", "TEMP", "POWER");
    if cols.extras {
        text += &format!("{:>4} {:>3} ", "FAN", "P");
    }
    text += "OWNERS";
    let total = state.model.gpus().len();
    let mut spans = vec![Span::styled(text.clone(), theme.table_header)];
    if shown < total {
        let range = format!(" {}-{} of {total} ([ ] scroll) ", start + 1, start + shown);
        let pad = (width as usize).saturating_sub(text.chars().count() + range.chars().count());
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(range, theme.warning));
    }
    Line::from(spans)
}

/// One GPU's line: label and name, its readings, then who holds it in what room is left.
fn compact_line(
    cols: &CompactColumns,
    state: &State,
    g: &GpuReading,
    width: u16,
    theme: &Theme,
) -> Line<'static> {
    let mut spans = label_spans(cols, state, g, theme);
    if g.status == GpuStatus::Lost {
        spans.push(Span::styled("LOST — not responding", theme.critical));
        return Line::from(spans);
    }
    spans.extend(reading_spans(cols, state, g, theme));
    let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    spans.extend(fit_spans(
        owner_spans(state, g, theme),
        (width as usize).saturating_sub(used),
    ));
    Line::from(spans)
}

/// The GPU's label in its severity's colour (`▶` when focused), and its short name when
/// the line is wide enough.
fn label_spans(
    cols: &CompactColumns,
    state: &State,
    g: &GpuReading,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let severity = state.model.gpu_severity(&g.id);
    let focused = state.focus() == Some(&g.id);
    let index_style = theme.severity(severity, theme.title);
    let mut spans = vec![if focused {
        Span::styled(
            format!("▶{:>w$} ", g.label(), w = cols.label - 1),
            index_style.patch(theme.selected),
        )
    } else {
        Span::styled(format!("{:>w$} ", g.label(), w = cols.label), index_style)
    }];
    if cols.name > 0 {
        spans.push(Span::raw(format!(
            "{:<w$} ",
            truncate(short_name(&g.name), cols.name),
            w = cols.name
        )));
    }
    spans
}

/// Utilisation and VRAM bars with their numbers, temperature, power, and on wide lines
/// fan and P-state: the columns `compact_title` names.
fn reading_spans(
    cols: &CompactColumns,
    state: &State,
    g: &GpuReading,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let util = g.util.map(|u| u.ratio());
    let mem = g.memory_ratio();
    let mut spans = vec![
        Span::styled(bar(util, cols.bar), theme.good),
        Span::raw(format!(" {:>4} ", or_na(g.util, |u| format!("{}%", u.0)))),
        Span::styled(bar(mem, cols.bar), theme.level(mem)),
        Span::styled(format!(" {:>11} ", memory_text(g, "")), theme.level(mem)),
        Span::styled(format!("{:>4} ", temp_text(g)), temp_style(state, g, theme)),
        Span::raw(format!(
            "{:>5} ",
            or_na(g.power, |w| format!("{:.0}W", w.0))
        )),
    ];
    if cols.extras {
        spans.push(Span::raw(format!(
            "{:>4} ",
            or_na(g.fan, |f| format!("{}%", f.0))
        )));
        spans.push(Span::raw(format!(
            "{:>3} ",
            or_na(g.pstate, |p| format!("P{p}"))
        )));
    }
    spans
}
