//! The host line: host CPU %, RAM and swap used/total and the load average, as the
//! sample carries them (read from /proc by the source, never here). On wide screens it
//! sits in the header; otherwise on its own line under it (`layout::host_in_header`).
//! A number the source could not give is `N/A`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Theme;
use super::format::{NA, gib, or_na};
use crate::reading::HostLoad;
use crate::state::State;
use crate::units::Bytes;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let mut spans = vec![Span::raw(" ")];
    spans.extend(spans_for(&state.model.host().load, theme));
    // The CPU count is the first thing to go on a narrow line.
    let width: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    if width > area.width as usize && state.model.host().load.cpus.is_some() {
        spans.pop();
    }
    let spans = super::format::fit_spans(spans, area.width as usize);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// `CPU 38% · RAM 412.3/1024.0 GiB · swap 0.3/16.0 GiB · load 12.3 11.9 11.1`, with the
/// CPU and memory in the warning colour when nearly exhausted (a starving data loader,
/// a host about to swap).
pub fn spans_for(load: &HostLoad, theme: &Theme) -> Vec<Span<'static>> {
    let busy = |ratio: Option<f64>| -> Style {
        match ratio {
            Some(r) if r >= 0.9 => theme.warning,
            _ => theme.text,
        }
    };
    let mem_ratio = ratio(load.memory_used, load.memory_total);
    let cpu = load.cpu_percent;
    let sep = || Span::styled(" · ", theme.dim);
    let mut spans = vec![
        Span::styled("CPU ", theme.dim),
        Span::styled(
            or_na(cpu, |p| format!("{p:.0}%")),
            busy(cpu.map(|p| p / 100.0)),
        ),
    ];
    spans.extend([
        sep(),
        Span::styled("RAM ", theme.dim),
        Span::styled(
            used_of(load.memory_used, load.memory_total),
            busy(mem_ratio),
        ),
        sep(),
        Span::styled("swap ", theme.dim),
        Span::styled(used_of(load.swap_used, load.swap_total), theme.text),
        sep(),
        Span::styled("load ", theme.dim),
        Span::styled(
            or_na(load.load_average, |[a, b, c]| {
                format!("{a:.2} {b:.2} {c:.2}")
            }),
            theme.text,
        ),
    ]);
    if let Some(n) = load.cpus {
        spans.push(Span::styled(format!(" ({n} CPUs)"), theme.dim));
    }
    spans
}

/// The same words without styles, for `--once`'s text.
pub fn plain(load: &HostLoad) -> String {
    spans_for(load, &Theme::new(false))
        .iter()
        .map(|s| s.content.as_ref())
        .collect()
}

fn ratio(used: Option<Bytes>, total: Option<Bytes>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t.0 > 0 => Some(u.0 as f64 / t.0 as f64),
        _ => None,
    }
}

/// `412.3/1024.0 GiB`, with `N/A` for whichever half is unknown.
fn used_of(used: Option<Bytes>, total: Option<Bytes>) -> String {
    match (used, total) {
        (None, None) => NA.to_string(),
        (u, t) => format!("{}/{} GiB", or_na(u, gib), or_na(t, gib)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(load: &HostLoad) -> String {
        spans_for(load, &Theme::new(false))
            .iter()
            .map(|s| s.content.to_string())
            .collect()
    }

    #[test]
    fn every_unknown_number_is_na_on_its_own() {
        assert_eq!(
            text(&HostLoad::default()),
            "CPU N/A · RAM N/A · swap N/A · load N/A"
        );
        let load = HostLoad {
            cpu_percent: Some(37.6),
            cpus: Some(32),
            memory_total: Some(Bytes::from_gib(512.0)),
            memory_used: None,
            swap_total: Some(Bytes(0)),
            swap_used: Some(Bytes(0)),
            load_average: Some([12.0, 11.5, 9.25]),
        };
        assert_eq!(
            text(&load),
            "CPU 38% · RAM N/A/512.0 GiB · swap 0.0/0.0 GiB · load 12.00 11.50 9.25 (32 CPUs)"
        );
    }
}
