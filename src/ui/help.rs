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
