//! The help overlay, generated from the keymap table so it can never drift from the keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Theme;
use crate::keymap::BINDINGS;

pub fn draw(frame: &mut Frame, area: Rect, theme: &Theme) {
    let lines: Vec<Line> = BINDINGS
        .iter()
        .map(|b| {
            Line::from(vec![
                Span::styled(format!(" {:<12}", b.label), theme.title),
                Span::raw(b.help),
            ])
        })
        .collect();
    let height = (lines.len() as u16 + 2).min(area.height);
    let width = 46.min(area.width);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Help — keys (? or Esc to close) "),
        ),
        popup,
    );
}
