//! A paged popup over the screen, for lists longer than a terminal: the help (from the
//! keymap) and every warning (the bar shows only as many as fit). Entries are a label and
//! words wrapped under it, so nothing is cut at 80 columns; the page is chosen by the
//! caller's state and clamped here, to the pages the terminal size gives.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Theme;
use crate::present::format::wrap_words;

/// One entry: a short label in its own column (a key, a badge) and its words.
pub struct Entry {
    pub label: String,
    pub label_style: Style,
    pub text: String,
    pub text_style: Style,
}

/// Draws `entries` in a box as wide as `width` allows (or the screen), one page of them.
pub fn draw(
    frame: &mut Frame,
    area: Rect,
    title: &str,
    entries: &[Entry],
    page: usize,
    width: u16,
    theme: &Theme,
) {
    let label_width = entries
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(0);
    let width = width.min(area.width);
    let text_width = (width as usize).saturating_sub(label_width + 4).max(10);
    let lines: Vec<Vec<Line>> = entries
        .iter()
        .map(|e| entry_lines(e, label_width, text_width))
        .collect();
    // Rows inside the border, one kept for the page line when there is more than a page.
    let room = area.height.saturating_sub(2).max(1) as usize;
    let total: usize = lines.iter().map(Vec::len).sum();
    let pages = paginate(&lines, if total <= room { room } else { room - 1 });
    let page = page.min(pages.len() - 1);
    let mut shown: Vec<Line> = pages[page].clone();
    if pages.len() > 1 {
        shown.push(Line::styled(
            format!(
                " page {} of {} · PgDn/PgUp or ↓/↑ · Esc closes",
                page + 1,
                pages.len()
            ),
            theme.dim,
        ));
    }
    let height = (shown.len() as u16 + 2).min(area.height);
    let popup = super::layout::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title.to_string(), theme.title));
    frame.render_widget(Paragraph::new(shown).block(block), popup);
}

/// An entry's lines: the label, then its words wrapped in the column beside it.
fn entry_lines(e: &Entry, label_width: usize, text_width: usize) -> Vec<Line<'static>> {
    wrap_words(&e.text, text_width)
        .into_iter()
        .enumerate()
        .map(|(i, words)| {
            let label = if i == 0 { e.label.as_str() } else { "" };
            Line::from(vec![
                Span::styled(format!(" {label:<label_width$} "), e.label_style),
                Span::styled(words, e.text_style),
            ])
        })
        .collect()
}

/// Splits the entries into pages of at most `rows` lines, never an entry across two
/// (unless one alone is taller than a page).
fn paginate(entries: &[Vec<Line<'static>>], rows: usize) -> Vec<Vec<Line<'static>>> {
    let rows = rows.max(1);
    let mut pages: Vec<Vec<Line>> = vec![Vec::new()];
    for lines in entries {
        let current = pages.last_mut().expect("one page at least");
        if !current.is_empty() && current.len() + lines.len() > rows {
            pages.push(Vec::new());
        }
        let current = pages.last_mut().expect("one page at least");
        current.extend(lines.iter().take(rows).cloned());
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<Line<'static>> {
        (0..n).map(|i| Line::raw(i.to_string())).collect()
    }

    #[test]
    fn pages_hold_whole_entries() {
        let pages = paginate(&[lines(2), lines(2), lines(1)], 3);
        let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 3]);
        // An entry taller than a page is cut to the page rather than looping.
        assert_eq!(paginate(&[lines(5)], 3)[0].len(), 3);
    }
}
