//! The host line: host CPU %, RAM and swap used/total and the load average, as the
//! sample carries them (read from /proc by the source, never here). On wide screens it
//! sits in the header; otherwise on its own line under it (`layout::host_in_header`).
//! The words are `present::host`'s; this file styles and places them.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::Theme;
use super::cells::put_lines;
use crate::present::host::{Role, words};
use crate::reading::HostLoad;
use crate::state::State;

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
    let spans = super::spans::fit_spans(spans, area.width as usize);
    put_lines(&[Line::from(spans)], area, frame.buffer_mut());
}

/// The host line's words as spans, with the CPU and memory in the warning colour when
/// nearly exhausted.
pub fn spans_for(load: &HostLoad, theme: &Theme) -> Vec<Span<'static>> {
    words(load)
        .into_iter()
        .map(|w| {
            let style = match w.role {
                Role::Label | Role::Separator | Role::Aside => theme.dim,
                Role::Value => theme.text,
                Role::Exhausted => theme.warning,
            };
            Span::styled(w.text, style)
        })
        .collect()
}
