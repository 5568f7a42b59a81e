//! The top line: host, driver, GPU count, refresh interval, free GPUs, clock, paused
//! marker; on wide screens also the host line (CPU, RAM, swap, load; `ui::host`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::Theme;
use super::cells::put_lines;
use crate::model::owners::free_labels;
use crate::present::format::truncate;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    // The right side (status, free GPUs, clock) always shows; host details give way first.
    let right = right_spans(state, theme);
    let right_width: usize = right.iter().map(|s| s.content.chars().count()).sum();
    let room = (area.width as usize).saturating_sub(right_width);
    let host = if crate::layout::host_in_header(area.width) {
        let mut spans = vec![Span::raw("  ")];
        spans.extend(super::host::spans_for(&state.model.host().load, theme));
        spans.push(Span::raw(" "));
        spans
    } else {
        Vec::new()
    };
    let host_width: usize = host.iter().map(|s| s.content.chars().count()).sum();
    // The host line goes where the name and versions leave room for it (40 columns kept
    // for those); the layout gives it a line of its own below this width anyway.
    let with_host = !host.is_empty() && host_width + 40 <= room;
    let left_room = if with_host { room - host_width } else { room };
    let left = left_text(state, left_room);
    let pad = left_room.saturating_sub(left.chars().count());
    let mut spans = vec![Span::styled(left, theme.header_bar)];
    if with_host {
        spans.extend(host);
    }
    spans.push(Span::styled(" ".repeat(pad), theme.header_bar));
    spans.extend(right);
    put_lines(&[Line::from(spans)], area, frame.buffer_mut());
}

/// Status badges (source error, replay, read-only, paused), the free GPUs and the clock.
fn right_spans(state: &State, theme: &Theme) -> Vec<Span<'static>> {
    let mut right: Vec<Span> = Vec::new();
    if let Some(err) = &state.model.source_error() {
        right.push(Span::styled(
            format!(" source error: {err} "),
            theme.critical,
        ));
    }
    if let Some(r) = &state.view.replay {
        let pct = (r.position + 1) * 100 / r.total.max(1);
        let pause = if r.paused { " paused" } else { "" };
        right.push(Span::styled(
            format!(" REPLAY {}× {pct}%{pause} ", r.speed),
            theme.warning_badge,
        ));
    }
    if state.config.readonly {
        right.push(Span::styled(" READ-ONLY ", theme.title));
    }
    if state.view.paused {
        right.push(Span::styled(" PAUSED ", theme.warning_badge));
    }
    right.push(Span::styled(
        format!(" {} ", free_text(state)),
        theme.good.patch(theme.title),
    ));
    if let Some(now) = state.model.now() {
        let local =
            chrono::DateTime::<chrono::Utc>::from(now).with_timezone(&state.config.utc_offset);
        right.push(Span::styled(
            local.format(" %H:%M:%S ").to_string(),
            theme.header_bar,
        ));
    }
    right
}

/// Name, host, GPU count and interval, then driver and CUDA versions while they fit in
/// `room` columns; truncated to `room` at worst.
fn left_text(state: &State, room: usize) -> String {
    let n = state.model.gpus().len();
    let mut parts: Vec<String> = vec!["gpuwatch".into()];
    if !state.model.host().hostname.is_empty() {
        parts.push(state.model.host().hostname.clone());
    }
    parts.push(format!("{n} GPU{}", if n == 1 { "" } else { "s" }));
    parts.push(format!(
        "every {}",
        humantime::format_duration(state.config.interval)
    ));
    let optional = [
        state
            .model
            .host()
            .driver_version
            .as_ref()
            .map(|d| format!("driver {d}")),
        state
            .model
            .host()
            .cuda_version
            .as_ref()
            .map(|c| format!("CUDA {c}")),
    ];
    for part in optional.into_iter().flatten() {
        let len: usize =
            parts.iter().map(|p| p.chars().count() + 3).sum::<usize>() + part.len() + 3;
        if len < room {
            parts.push(part);
        }
    }
    truncate(&format!(" {} ", parts.join(" · ")), room)
}

fn free_text(state: &State) -> String {
    let free = free_labels(&state.model);
    if free.is_empty() {
        "free: none".to_string()
    } else {
        format!("free: {}", free.join(","))
    }
}
