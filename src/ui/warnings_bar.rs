//! The warnings bar: one loud line per warning, critical first; hidden when empty. And the
//! list of every warning (`w`), for those the bar has no room for.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::Theme;
use super::overlay::{self, Entry};
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
            let spans = vec![
                Span::styled(badge, badge_style),
                Span::raw(" "),
                Span::styled(crate::present::warnings::warning_line(w), text_style),
            ];
            Line::from(super::spans::fit_spans(spans, area.width as usize))
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

/// Every warning, critical first as the bar orders them, each wrapped in full.
pub fn draw_list(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let entries: Vec<Entry> = state
        .model
        .warnings()
        .iter()
        .map(|w| {
            let (label, label_style, text_style) = match w.severity {
                Severity::Critical => ("CRIT", theme.critical_badge, theme.critical),
                Severity::Warning => ("WARN", theme.warning_badge, theme.warning),
            };
            Entry {
                label: label.to_string(),
                label_style,
                text: crate::present::warnings::warning_line(w),
                text_style,
            }
        })
        .collect();
    if entries.is_empty() {
        let none = [Entry {
            label: String::new(),
            label_style: theme.dim,
            text: "no warnings".into(),
            text_style: theme.dim,
        }];
        overlay::draw(
            frame,
            area,
            " Warnings (w or Esc to close) ",
            &none,
            0,
            40,
            theme,
        );
        return;
    }
    let title = format!(" Warnings: {} (w or Esc to close) ", entries.len());
    overlay::draw(
        frame,
        area,
        &title,
        &entries,
        state.view.overlay_page,
        120,
        theme,
    );
}
