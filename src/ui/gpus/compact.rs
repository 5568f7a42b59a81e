//! Compact mode: one line per GPU under a line of column titles, in as many columns of
//! lines as `layout` gives (two for 64 GPUs at 200x60, so all show), a MIG GPU's instances
//! on lines of their own under it; the fields chosen
//! once per frame from a column's width, with small util and VRAM sparklines on wide
//! lines; who holds each GPU fills what room is left.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::charts::spark_text;
use super::{fit_spans, memory_text, owner_spans, short_name, temp_style, temp_text};
use crate::layout::{Areas, compact_column_rects};
use crate::present::fixed::Fixed;
use crate::present::format::{bar, gpu_name, or_na, truncate, vendor_tag};
use crate::reading::fields::Key;
use crate::reading::{GpuReading, GpuStatus};
use crate::state::State;
use crate::ui::Theme;
use crate::ui::cells::put_lines;

/// Column widths of a compact line, chosen once per frame from the available width.
struct CompactColumns {
    /// Width of the GPU label (`3`, or `gpu1:3` when watching several hosts).
    label: usize,
    name: usize,
    /// Lines too narrow for the name, in a fleet of several vendors: an `AMD`/`Intel` tag
    /// goes before the owners instead (NVIDIA's GPUs have none).
    vendor_tags: bool,
    /// Width of the util and VRAM bars (0: numbers only, on the short lines of narrow
    /// columns).
    bar: usize,
    /// Width of the VRAM numbers (`68.6/79.6`).
    memory: usize,
    /// Whether the line has room for the power draw.
    power: bool,
    extras: bool,
    /// Width of the util and VRAM sparklines (0: none).
    spark: usize,
}

impl CompactColumns {
    fn for_width(width: u16, state: &State) -> Self {
        let wide = width >= 120;
        let longest = state
            .model
            .gpus()
            .iter()
            .map(GpuReading::label_width)
            .max()
            .unwrap_or(1);
        let gpus = state.model.gpus();
        let mixed = gpus.iter().any(|g| g.vendor != gpus[0].vendor);
        // Below this a column gets short lines: the owners are worth more than bars.
        let short = width < 60;
        CompactColumns {
            label: longest.clamp(3, 16),
            name: if wide { 14 } else { 0 },
            vendor_tags: !wide && mixed,
            bar: match width {
                100.. => 12,
                60.. => 8,
                _ => 0,
            },
            memory: if short { 9 } else { 11 },
            power: !short,
            extras: wide,
            spark: match width {
                160.. => 16,
                140.. => 12,
                _ => 0,
            },
        }
    }
}

/// Draws the column titles and, in each GPU's rectangle (`layout::gpu_rects`), its line
/// with a line per MIG instance under it.
pub(super) fn draw_compact(
    frame: &mut Frame,
    areas: &Areas,
    state: &State,
    rects: &[(usize, Rect)],
    theme: &Theme,
) {
    let columns = compact_column_rects(areas);
    let last = columns.len().saturating_sub(1);
    // The same fields in every column, as the narrowest allows.
    let narrowest = columns.iter().map(|c| c.width).min().unwrap_or(0);
    let cols = CompactColumns::for_width(narrowest, state);
    let start = rects.first().map_or(0, |(i, _)| *i);
    for (c, area) in columns.iter().enumerate() {
        // The scroll range goes on the last column's title line.
        let range = (c == last).then_some((rects.len(), start));
        let title = compact_title(&cols, state, range, c == 0, area.width, theme);
        put_lines(
            &[title],
            Rect::new(area.x, area.y, area.width, 1),
            frame.buffer_mut(),
        );
    }
    let gpus = state.model.gpus();
    for (i, rect) in rects {
        let g = &gpus[*i];
        let mut lines = vec![compact_line(&cols, state, g, rect.width, theme)];
        if g.status != GpuStatus::Lost {
            lines.extend(g.mig_devices.iter().map(|m| {
                super::instances::compact_line(state, m, cols.label, cols.bar, rect.width, theme)
            }));
        }
        put_lines(&lines, *rect, frame.buffer_mut());
    }
}

/// The column titles; `range` (GPUs shown, first shown) adds
/// `1-20 of 64, 44 hidden ([ ] scroll)` when not every GPU shows.
fn compact_title<'a>(
    cols: &CompactColumns,
    state: &State,
    range: Option<(usize, usize)>,
    first_column: bool,
    width: u16,
    theme: &Theme,
) -> Line<'a> {
    let mut text = format!("{:>w$} ", "GPU", w = cols.label);
    if cols.name > 0 {
        text += &format!("{:<w$} ", "NAME", w = cols.name);
    }
    text += &format!("{:<w$} ", "UTIL", w = cols.bar + 5);
    if cols.spark > 0 {
        text += &format!("{:<w$} ", "util", w = cols.spark);
    }
    text += &format!("{:<w$} ", "VRAM GiB", w = cols.bar + cols.memory + 1);
    if cols.spark > 0 {
        text += &format!("{:<w$} ", "vram", w = cols.spark);
    }
    text += &format!("{:>4} ", "TEMP");
    if cols.power {
        text += &format!("{:>5} ", "POWER");
    }
    if cols.extras {
        text += &format!("{:>4} {:>3} ", "FAN", "P");
    }
    text += "OWNERS";
    let total = state.model.gpus().len();
    let Some((shown, start)) = range.filter(|(shown, _)| *shown < total) else {
        return Line::styled(text, theme.table_header);
    };
    // How many GPUs are out of view and the keys that bring them, in the longest words
    // that fit beside the titles; in a column of its own (not the first, which has the
    // titles) the words may take the whole line; a single column cuts its titles instead.
    let hidden = total - shown;
    let words = [
        format!(
            " {}-{} of {total}, {hidden} hidden ([ ] scroll) ",
            start + 1,
            start + shown
        ),
        format!(" {hidden} hidden ([ ] scroll) "),
        format!(" +{hidden} ([ ]) "),
    ];
    let width = width as usize;
    let fits = |w: &String| text.chars().count() + w.chars().count() <= width;
    let (text, words) = match words.iter().find(|w| fits(w)) {
        Some(w) => (text, w.clone()),
        None if first_column => {
            let w = words[2].clone();
            (truncate(&text, width.saturating_sub(w.chars().count())), w)
        }
        None => {
            let w = words.iter().find(|w| w.chars().count() <= width);
            (String::new(), w.unwrap_or(&words[2]).clone())
        }
    };
    let pad = width.saturating_sub(text.chars().count() + words.chars().count());
    Line::from(vec![
        Span::styled(text, theme.table_header),
        Span::raw(" ".repeat(pad)),
        Span::styled(words, theme.warning),
    ])
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
    if let Some(tag) = vendor_tag(g).filter(|_| cols.vendor_tags) {
        spans.push(Span::styled(format!("{tag} "), theme.title));
    }
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
            truncate(short_name(&gpu_name(g)), cols.name),
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
    let mut spans = Vec::new();
    if cols.bar > 0 {
        spans.push(Span::styled(bar(util, cols.bar), theme.good));
    }
    spans.push(Span::raw(format!(
        "{}{:>4} ",
        if cols.bar > 0 { " " } else { "" },
        or_na(g.util, |u| format!("{}%", u.0))
    )));
    let history = state.model.history(&g.id).filter(|_| cols.spark > 0);
    if let Some(h) = &history {
        let util_cols = h.columns(Key::Util, cols.spark, super::charts::percent);
        spans.push(Span::styled(
            spark_text(&util_cols, 100, cols.spark) + " ",
            theme.spark_util,
        ));
    }
    if cols.bar > 0 {
        spans.push(Span::styled(bar(mem, cols.bar), theme.level(mem)));
    }
    spans.push(Span::styled(
        format!(" {:>w$} ", memory_text(g, ""), w = cols.memory),
        theme.level(mem),
    ));
    if let Some(h) = history {
        // In MiB, scaled to the GPU's total, so the sparkline reads as a share of VRAM.
        let total = g.memory_total.map_or(0, |t| t.0 >> 20);
        let mem_cols = h.columns(Key::MemoryUsed, cols.spark, |b| (b as u64) >> 20);
        spans.push(Span::styled(
            spark_text(&mem_cols, total, cols.spark) + " ",
            theme.level(mem),
        ));
    }
    spans.push(Span::styled(
        format!("{:>4} ", temp_text(g)),
        temp_style(state, g, theme),
    ));
    if cols.power {
        spans.push(Span::raw(format!(
            "{:>5} ",
            or_na(g.power, |w| format!("{}W", Fixed(w.0, 0)))
        )));
    }
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
