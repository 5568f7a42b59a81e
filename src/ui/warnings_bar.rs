//! The warnings bar: one loud line per warning, critical first; hidden when empty.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Theme;
use crate::model::warnings::Severity;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let shown = area.height as usize;
    let total = state.model.warnings().len();
    let mut lines: Vec<Line> = state
        .model
        .warnings()
        .iter()
        .take(shown)
        .map(|w| {
            let (badge, badge_style, text_style) = match w.severity {
                Severity::Critical => (" CRIT ", theme.critical_badge, theme.critical),
                Severity::Warning => (" WARN ", theme.warning_badge, theme.warning),
            };
            Line::from(vec![
                Span::styled(badge, badge_style),
                Span::raw(" "),
                Span::styled(super::text::warning_line(w), text_style),
            ])
        })
        .collect();
    if total > shown {
        // The last line says how many more there are rather than silently dropping them.
        let more = total - shown + 1;
        lines.pop();
        lines.push(Line::styled(
            format!(
                "  … and {more} more warning{} (w: list them all)",
                if more == 1 { "" } else { "s" }
            ),
            theme.warning,
        ));
    }
    frame.render_widget(Paragraph::new(lines), area);
}
