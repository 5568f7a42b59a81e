//! The GPU area: full panels in a grid (gauges, readings, owners, charts as tall as the
//! panel) or compact one-line-per-GPU rows in one or more columns, scrolled by
//! `state.view.gpu_scroll` when they do not all fit.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols;
use ratatui::text::{Line, Span};

use super::Theme;
use super::border::Border;
use super::cells::put_lines;
use super::spans::fit_spans;
use crate::layout::{Areas, gpu_rects, panel_rows};
use crate::model::owners::{Unheld, owners, unattributed, unheld};
use crate::present::fixed::Fixed;
use crate::present::format::{NA, bar, bytes_short, gib, gpu_name, or_na, unheld_words};
use crate::reading::{GpuReading, GpuStatus};
use crate::state::State;

// Compact mode, the charts and the panel's border words live in their own files; the
// panels and the pieces they share stay here.
mod charts;
mod compact;
mod details;
mod instances;

pub fn draw(frame: &mut Frame, areas: &Areas, state: &State, theme: &Theme) {
    if areas.gpus.height == 0 {
        return;
    }
    // The same rectangles mouse clicks are matched against (`ui::hit`).
    let rects = gpu_rects(areas, &state.gpu_lines(), state.view.gpu_scroll);
    if areas.compact {
        compact::draw_compact(frame, areas, state, &rects, theme);
    } else {
        for (panel, g) in panels(&rects, state, theme) {
            panel.render(frame.buffer_mut());
            if let Some((rect, h)) = panel.charts.zip(state.model.history(&g.id)) {
                charts::draw_panel_charts(frame, rect, &h, g, theme);
            }
        }
    }
}

/// The full panels in their rectangles, laid out, each with its GPU.
fn panels<'a>(
    rects: &[(usize, Rect)],
    state: &'a State,
    theme: &Theme,
) -> Vec<(Panel, &'a GpuReading)> {
    let gpus = state.model.gpus();
    let words: Vec<_> = rects
        .iter()
        .map(|(i, r)| details::PanelWords::new(state, &gpus[*i], theme, r.width))
        .collect();
    // When one panel needs lines inside for what its borders cannot hold, every panel
    // shown moves its details inside too (room allowing) and keeps as many lines for
    // them, so the PCIe/ECC line sits in the same place and the charts are as tall in
    // all of them; neighbouring panels laid out differently read as different things.
    // (A MIG GPU's instance lines come on top of that: its charts are shorter by them,
    // rather than every other panel keeping blank lines to match.) A panel alone on
    // screen gives the lines its text leaves unused to its charts.
    let wanted = words.iter().map(|w| w.lines_wanted()).max().unwrap_or(0);
    let most = words.iter().map(|w| w.lines_inside()).max().unwrap_or(0);
    let alone = rects.len() == 1;
    rects
        .iter()
        .zip(words)
        .map(|((i, rect), w)| {
            let inside = Inside {
                lines: match () {
                    _ if alone => w.lines_wanted(),
                    _ if wanted == 0 => 0,
                    _ => most,
                },
                give_back: alone,
            };
            let g = &gpus[*i];
            (Panel::new(*rect, state, g, w, inside, theme), g)
        })
        .collect()
}

/// Lines inside a panel for the details its borders cannot hold.
#[derive(Debug, Clone, Copy)]
struct Inside {
    lines: u16,
    /// Whether lines the text leaves unused go to the charts (a panel alone on screen)
    /// rather than stay blank so that the charts line up with the neighbours'.
    give_back: bool,
}

// ---- full panels ---------------------------------------------------------------------

/// A full panel laid out: its border with the GPU's name, owners and details in it, each
/// of its rows of text with the lines in it, and where its charts go (drawn apart).
struct Panel {
    area: Rect,
    border: Border,
    texts: Vec<(Rect, Vec<Line<'static>>)>,
    charts: Option<Rect>,
}

impl Panel {
    fn new(
        area: Rect,
        state: &State,
        g: &GpuReading,
        words: details::PanelWords,
        inside: Inside,
        theme: &Theme,
    ) -> Self {
        let inner = Rect::new(
            area.x + 1,
            area.y + 1,
            area.width.saturating_sub(2),
            area.height.saturating_sub(2),
        );
        let instances = g.mig_devices.len().min(u16::MAX as usize) as u16;
        let mut rows = panel_rows(inner, inside.lines, instances);
        let text = words.fit(rows.details.height);
        if inside.give_back {
            rows = panel_rows(inner, text.lines.len() as u16, instances);
        }
        let border = panel_border(state, g, theme, &text);
        let mut panel = Panel {
            area,
            border,
            texts: Vec::new(),
            charts: None,
        };
        if inner.height == 0 || inner.width < 20 {
            return panel;
        }
        if g.status == GpuStatus::Lost {
            let line = Line::styled(
                "LOST — not responding; other GPUs keep updating",
                theme.critical,
            );
            panel.texts.push((inner, vec![line]));
            return panel;
        }
        let width = inner.width as usize;
        panel.texts = vec![
            (rows.gauges, vec![gauge_line(g, width, theme)]),
            (rows.readings, vec![readings_line(state, g, width, theme)]),
            (rows.details, text.lines),
            (
                rows.instances,
                instance_lines(state, g, rows.instances, theme),
            ),
        ];
        panel.charts = Some(rows.charts);
        panel
    }

    /// The border and the lines, written straight into the cells (`ui::cells`).
    fn render(&self, buf: &mut Buffer) {
        self.border.render(self.area, buf);
        for (area, lines) in &self.texts {
            put_lines(lines, *area, buf);
        }
    }
}

/// The panel's frame: its border shows focus and severity, the top border names the GPU
/// and who holds it, the bottom border carries the finer details (`details`).
fn panel_border(state: &State, g: &GpuReading, theme: &Theme, text: &details::PanelText) -> Border {
    let severity = state.model.gpu_severity(&g.id);
    let focused = state.focus() == Some(&g.id);
    let style = theme.severity(severity, if focused { theme.focus } else { theme.dim });
    let set = if focused {
        symbols::border::DOUBLE
    } else if severity.is_some() {
        symbols::border::THICK
    } else {
        symbols::border::ROUNDED
    };
    let name = Span::styled(
        format!(
            " {}{} · {} ",
            if focused { "▶ " } else { "" },
            g.label(),
            gpu_name(g)
        ),
        theme.severity(severity, if focused { theme.focus } else { theme.title }),
    );
    // Who holds the GPU sits in the panel's top border, read together with the GPU's name.
    let mut owners = vec![Span::raw(" ")];
    owners.extend(text.owners.iter().cloned());
    owners.push(Span::raw(" "));
    let mut border = Border::new(set, style)
        .top_left(Line::from(name))
        .top_right(Line::from(owners));
    // NVML's finer details (PCIe, enc/dec, ECC, MIG, why clocks are held) sit in the bottom
    // border: visible without costing a line.
    if !text.throttle.is_empty() {
        border = border.bottom_right(Line::from(text.throttle.clone()));
    }
    if !text.details.is_empty() {
        border = border.bottom_left(Line::from(text.details.clone()));
    }
    border
}

/// One line per MIG instance, as many as `area` holds; the last says how many more when
/// they do not all fit.
fn instance_lines(state: &State, g: &GpuReading, area: Rect, theme: &Theme) -> Vec<Line<'static>> {
    let room = area.height as usize;
    let n = g.mig_devices.len();
    let shown = if n > room { room.saturating_sub(1) } else { n };
    let mut lines: Vec<Line<'static>> = g.mig_devices[..shown]
        .iter()
        .enumerate()
        .map(|(i, m)| instances::panel_line(state, m, i + 1 == n, area.width as usize, theme))
        .collect();
    if shown < n && room > 0 {
        lines.push(instances::more_line(n - shown, theme));
    }
    lines
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

/// Temperature, power, fan, P-state and clocks, each labelled, as many as fit in `width`:
/// a field that does not fit is left out whole, never cut (`clk 1354/62` once showed
/// 1354/6251 MHz). Unknown fields go first, then the least used.
fn readings_line<'a>(state: &State, g: &GpuReading, width: usize, theme: &Theme) -> Line<'a> {
    let mut temp = temp_text(g);
    if let Some(s) = g.temperature_slowdown {
        temp += &format!(" (slow {})", s.0);
    }
    let mut spans = vec![Span::styled(temp, temp_style(state, g, theme))];
    for field in fitting_fields(reading_fields(g), width.saturating_sub(spans[0].width())) {
        spans.push(Span::raw(format!("  {field}")));
    }
    Line::from(spans)
}

/// The readings after the temperature, in the order shown, each with how much it is
/// worth keeping when space is short (higher stays longer; unknown readings are worth
/// least: `N/A` tells less than a number).
fn reading_fields(g: &GpuReading) -> Vec<(String, u8)> {
    let known = |present: bool, worth: u8| if present { worth } else { 0 };
    let power = match (g.power, g.power_limit) {
        (Some(p), Some(l)) => format!("{}/{} W", Fixed(p.0, 0), Fixed(l.0, 0)),
        (Some(p), None) => format!("{} W", Fixed(p.0, 0)),
        // `N/A/300 W` read as a garbled fraction: an unknown draw beside a known limit.
        (None, Some(l)) => format!("{NA} (limit {:.0} W)", l.0),
        (None, None) => format!("power {NA}"),
    };
    // SM and memory clocks, labelled: `clk 2100/1300` read as current/max.
    let clocks = match (g.sm_clock, g.memory_clock) {
        (None, None) => format!("clocks {NA}"),
        (sm, mem) => format!(
            "sm {} mem {} MHz",
            or_na(sm, |c| c.0.to_string()),
            or_na(mem, |c| c.0.to_string())
        ),
    };
    // Labelled even when unknown: a bare `N/A` between two fields said nothing.
    let fan = g
        .fan
        .map_or(format!("fan {NA}"), |f| format!("fan {}%", f.0));
    let pstate = g
        .pstate
        .map_or(format!("P-state {NA}"), |p| format!("P{p}"));
    vec![
        (power, known(g.power.is_some(), 5)),
        (fan, known(g.fan.is_some(), 3)),
        (pstate, known(g.pstate.is_some(), 2)),
        (
            clocks,
            known(g.sm_clock.is_some() || g.memory_clock.is_some(), 4),
        ),
    ]
}

/// The fields (in their order) that fit in `room` characters, two spaces before each,
/// leaving out the least worth first.
fn fitting_fields(fields: Vec<(String, u8)>, room: usize) -> Vec<String> {
    let cost = |f: &(String, u8)| 2 + f.0.chars().count();
    let mut kept: Vec<bool> = vec![true; fields.len()];
    let mut used: usize = fields.iter().map(cost).sum();
    let mut by_worth: Vec<usize> = (0..fields.len()).collect();
    // Least worth first; among equals, the later field goes first.
    by_worth.sort_by_key(|&i| (fields[i].1, std::cmp::Reverse(i)));
    for i in by_worth {
        if used <= room {
            break;
        }
        kept[i] = false;
        used -= cost(&fields[i]);
    }
    fields
        .into_iter()
        .zip(kept)
        .filter_map(|(f, keep)| keep.then_some(f.0))
        .collect()
}

// ---- shared pieces -------------------------------------------------------------------

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
    let heat = (state.model.gpu_warnings(&g.id))
        .filter(|w| matches!(w.kind, WarningKind::Overheating { .. }))
        .map(|w| w.severity)
        .max();
    theme.severity(heat, theme.text)
}

/// `alice 41.2G · bob 12.0G`, plus VRAM no process accounts for, or `free`.
fn owner_spans(state: &State, g: &GpuReading, theme: &Theme) -> Vec<Span<'static>> {
    details::joined(owner_entries(state, g, theme), theme.dim)
}

/// One span per holder (`alice 41.2G`), then VRAM no process accounts for, or `free`.
fn owner_entries(state: &State, g: &GpuReading, theme: &Theme) -> Vec<Span<'static>> {
    let list = owners(&state.model, g);
    let mut spans = Vec::new();
    for (user, vram) in list.iter() {
        let own = state.config.current_user.as_deref() == Some(user.as_str());
        let style = if own { theme.own_process } else { theme.text };
        spans.push(Span::styled(
            format!("{user} {}", crate::present::format::total_short(*vram)),
            style,
        ));
    }
    if let Some(rest) = unattributed(&state.model, g) {
        spans.push(Span::styled(
            format!("no process {}", bytes_short(rest)),
            theme.warning,
        ));
    }
    if let Some(u) = unheld(&state.model, g) {
        spans.push(match (u, unheld_words(u)) {
            (Unheld::Free, Some(w)) => Span::styled(w, theme.good.patch(theme.title)),
            (_, Some(w)) => Span::styled(w, theme.warning),
            (_, None) => Span::styled("—", theme.dim),
        });
    }
    spans
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use ratatui::widgets::{Paragraph, Widget};

    use super::*;
    use crate::layout::areas;
    use crate::reading::HostProc;
    use crate::source::GpuSource;
    use crate::source::sim::{SimClock, SimSource};
    use crate::state::{Action, Msg, ViewConfig, update};

    /// A `w`x`h` screen after `samples` seconds of the demo fleet, GPU 1 with a long name in
    /// wide characters, bob's name in wide characters too, and the last GPU lost.
    fn demo(gpus: usize, samples: usize, (w, h): (u16, u16), focus: bool) -> State {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        let mut source = SimSource::new(
            gpus,
            42,
            Duration::from_secs(1),
            SimClock::Virtual { start },
        );
        let mut state = State::new(ViewConfig {
            current_user: Some("alice".into()),
            ..ViewConfig::default()
        });
        update(
            &mut state,
            Msg::Resize {
                width: w,
                height: h,
            },
        );
        for n in 1..=samples {
            let mut sample = source.sample().expect("the simulation never fails");
            if let Some(g) = sample.gpus.get_mut(1) {
                g.name = "NVIDIA 漢字 H100 80GB HBM3 with a name longer than any panel".into();
            }
            for p in &mut sample.processes {
                if let HostProc::Visible(d) = &mut p.host
                    && &*d.user == "bob"
                {
                    d.user = "名前が長いユーザー".into();
                }
            }
            if n == samples && gpus > 2 {
                sample.gpus[gpus - 1].status = GpuStatus::Lost;
            }
            update(&mut state, Msg::Sample(Box::new(sample)));
        }
        if focus {
            update(&mut state, Msg::Action(Action::FocusNext));
        }
        state
    }

    #[test]
    fn panels_draw_what_ratatuis_block_and_paragraphs_drew() {
        let theme = Theme::new(true);
        let cases = [
            (8, (200, 60), false),
            (8, (200, 50), true),
            (8, (150, 45), false),
            (8, (120, 40), true),
            (4, (97, 40), false),
            (1, (200, 60), true),
            (1, (90, 30), false),
            (1, (64, 28), false),
            (16, (200, 60), false),
        ];
        for (gpus, (w, h), focus) in cases {
            let state = demo(gpus, 76, (w, h), focus);
            let areas = areas(&state.layout_input(), Rect::new(0, 0, w, h));
            let rects = gpu_rects(&areas, &state.gpu_lines(), state.view.gpu_scroll);
            let panels = panels(&rects, &state, &theme);
            assert!(
                areas.compact || !panels.is_empty(),
                "{gpus} GPUs at {w}x{h}"
            );
            for (panel, g) in panels {
                let mut by_cells = Buffer::empty(Rect::new(0, 0, w, h));
                let mut by_widgets = by_cells.clone();
                panel.render(&mut by_cells);
                panel.border.to_block().render(panel.area, &mut by_widgets);
                for (area, lines) in &panel.texts {
                    Paragraph::new(lines.clone()).render(*area, &mut by_widgets);
                }
                assert_eq!(by_cells, by_widgets, "GPU {} of {gpus} at {w}x{h}", g.index);
            }
        }
    }
}
