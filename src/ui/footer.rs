//! The bottom line, shown only when it has something to say (`State::layout_input`
//! decides): the filter being typed (with
//! its error, if any), the active filter, or the last status message (signal results).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Theme;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let mut spans = Vec::new();
    if state.view.filter_editing || !state.view.filter_text.is_empty() {
        spans.push(Span::styled(" filter ", theme.header_bar));
        spans.push(Span::raw(format!(" {}", state.view.filter_text)));
        if state.view.filter_editing {
            spans.push(Span::styled("█", theme.text));
        }
        match &state.view.filter_error {
            Some(e) => spans.push(Span::styled(format!("  {e}"), theme.critical)),
            None if state.view.filter_editing => {
                spans.push(Span::styled("  Enter: keep · Esc: clear", theme.dim))
            }
            None => {}
        }
        spans.push(Span::raw("   "));
    }
    if let Some(status) = &state.view.status {
        spans.push(Span::styled(status.clone(), theme.warning));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
