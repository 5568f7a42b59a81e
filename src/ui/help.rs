//! The help overlay, generated from the keymap table so it can never drift from the keys.
//! One column; descriptions wrap rather than being cut, and a list taller than the
//! terminal pages (`overlay`).

use ratatui::Frame;
use ratatui::layout::Rect;

use super::Theme;
use super::overlay::{self, Entry};
use crate::keymap::all_bindings;

/// Wide enough for the longest key label and description on one line each.
const WIDTH: u16 = 80;

pub fn draw(frame: &mut Frame, area: Rect, page: usize, theme: &Theme) {
    let entries: Vec<Entry> = all_bindings()
        .map(|b| Entry {
            label: b.label.to_string(),
            label_style: theme.title,
            text: b.help.to_string(),
            text_style: theme.text,
        })
        .collect();
    overlay::draw(
        frame,
        area,
        " Help — keys (? or Esc to close) ",
        &entries,
        page,
        WIDTH,
        theme,
    );
}

/// Every warning, critical first as the bar orders them, each wrapped in full.
pub fn draw_warnings(frame: &mut Frame, area: Rect, state: &crate::state::State, theme: &Theme) {
    use crate::model::warnings::Severity;
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
                text: super::text::warning_line(w),
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
