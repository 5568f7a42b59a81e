//! The top line: host, driver, GPU count, refresh interval, free GPUs, clock, paused marker.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Theme;
use super::owners::free_gpus;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let mut parts: Vec<String> = vec!["gpuwatch".into()];
    if !state.host.hostname.is_empty() {
        parts.push(state.host.hostname.clone());
    }
    if let Some(d) = &state.host.driver_version {
        parts.push(format!("driver {d}"));
    }
    if let Some(c) = &state.host.cuda_version {
        parts.push(format!("CUDA {c}"));
    }
    let n = state.gpus.len();
    parts.push(format!("{n} GPU{}", if n == 1 { "" } else { "s" }));
    parts.push(format!(
        "every {}",
        humantime::format_duration(state.config.interval)
    ));
    let free = free_gpus(state);
    let free_text = if free.is_empty() {
        "free: none".to_string()
    } else {
        format!(
            "free: {}",
            free.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let left = format!(" {}  ", parts.join(" · "));

    let mut right = String::new();
    if let Some(now) = state.now {
        let local =
            chrono::DateTime::<chrono::Utc>::from(now).with_timezone(&state.config.utc_offset);
        right = local.format("%H:%M:%S ").to_string();
    }
    let mut spans = vec![Span::styled(left.clone(), theme.header_bar)];
    spans.push(Span::styled(
        format!(" {free_text} "),
        theme.good.patch(theme.title),
    ));
    let mut used = left.chars().count() + free_text.len() + 2;
    if let Some(err) = &state.source_error {
        let text = format!(" source error: {err} ");
        used += text.chars().count();
        spans.push(Span::styled(text, theme.critical));
    }
    if state.paused {
        let text = " PAUSED ";
        used += text.len();
        spans.push(Span::styled(text, theme.warning_badge));
    }
    let pad = (area.width as usize).saturating_sub(used + right.len());
    spans.push(Span::styled(" ".repeat(pad), theme.header_bar));
    spans.push(Span::styled(right, theme.header_bar));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
