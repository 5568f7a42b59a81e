//! The signal confirmation: names everything about the target so nobody signals the wrong
//! process, and says plainly that only `y` sends.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Theme;
use crate::present::format::{bytes_short, or_na, truncate};
use crate::state::signal::Dialog;

pub fn draw(frame: &mut Frame, area: Rect, dialog: &Dialog, theme: &Theme) {
    let r = &dialog.request;
    let width = 64.min(area.width);
    let inner = width.saturating_sub(4) as usize;
    let field = |name: &'static str, value: String| {
        Line::from(vec![
            Span::styled(format!("  {name:<8}"), theme.dim),
            Span::raw(value),
        ])
    };
    let mut lines = vec![
        Line::styled(
            format!(" Send {} to this process?", r.signal.name()),
            theme.title,
        ),
        Line::raw(""),
        field("PID", r.pid.to_string()),
        field("user", r.user.clone()),
        field("GPU", r.gpu_index.to_string()),
        field("VRAM", or_na(r.vram, bytes_short)),
        field("command", truncate(&r.command, inner.saturating_sub(10))),
        Line::raw(""),
    ];
    if dialog.confirmed_once {
        lines.push(Line::styled(
            format!(
                " This is {}'s process, not yours. Press y AGAIN to send.",
                r.user
            ),
            theme.critical,
        ));
    } else if dialog.needs_second_confirmation {
        lines.push(Line::styled(
            format!(" Owned by {}, not you: you will be asked twice.", r.user),
            theme.warning,
        ));
    }
    lines.push(Line::from(vec![
        Span::styled(" y ", theme.critical_badge),
        Span::raw(format!(" send {}    ", r.signal.name())),
        Span::styled(" any other key ", theme.selected),
        Span::raw(" cancel"),
    ]));
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = super::layout::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.critical)
        .title(Span::styled(" Confirm signal ", theme.critical));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        popup,
    );
}
