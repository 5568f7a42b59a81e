//! The help overlay, generated from the keymap table so it can never drift from the keys.
//! Two columns when one does not fit the height.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Theme;
use super::format::truncate;
use crate::keymap::{Binding, all_bindings};

const LABEL_WIDTH: usize = 11;

pub fn draw(frame: &mut Frame, area: Rect, theme: &Theme) {
    let bindings: Vec<&Binding> = all_bindings().collect();
    let n = bindings.len();
    let room = area.height.saturating_sub(2).max(1) as usize;
    let columns = if n <= room { 1 } else { 2 };
    let per_column = n.div_ceil(columns);
    let width = (if columns == 1 { 66 } else { 120 }).min(area.width);
    let height = (per_column as u16 + 2).min(area.height);
    let popup = super::layout::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Help — keys (? or Esc to close) ");
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let cells =
        Layout::horizontal(vec![Constraint::Ratio(1, columns as u32); columns]).split(inner);
    for (cell, chunk) in cells.iter().zip(bindings.chunks(per_column)) {
        let help_width = (cell.width as usize).saturating_sub(LABEL_WIDTH + 2);
        let lines: Vec<Line> = chunk
            .iter()
            .map(|b| {
                Line::from(vec![
                    Span::styled(format!(" {:<w$}", b.label, w = LABEL_WIDTH), theme.title),
                    Span::raw(truncate(b.help, help_width)),
                ])
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), *cell);
    }
}
