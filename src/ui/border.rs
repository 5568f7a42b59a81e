//! A box's border with a title at either end of its top and bottom lines, drawn as
//! ratatui's `Block` (all borders) draws it, cell for cell, but only on the border's own
//! cells: the block styled every cell of its area first (with the plain style, which changes
//! none) and its titles went through `Line`'s grapheme machinery.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::text::Line;
#[cfg(test)]
use ratatui::widgets::{Block, Borders};

use super::cells::{line_width, put_line};

/// A border on all four sides in `set`'s symbols and `style`, and its titles.
pub struct Border {
    set: border::Set<'static>,
    style: Style,
    top: Titles,
    bottom: Titles,
}

/// The titles at the left and right ends of one border line.
#[derive(Default)]
struct Titles {
    left: Option<Line<'static>>,
    right: Option<Line<'static>>,
}

impl Border {
    pub fn new(set: border::Set<'static>, style: Style) -> Self {
        Border {
            set,
            style,
            top: Titles::default(),
            bottom: Titles::default(),
        }
    }

    pub fn top_left(mut self, title: Line<'static>) -> Self {
        self.top.left = Some(title.left_aligned());
        self
    }

    pub fn top_right(mut self, title: Line<'static>) -> Self {
        self.top.right = Some(title.right_aligned());
        self
    }

    pub fn bottom_left(mut self, title: Line<'static>) -> Self {
        self.bottom.left = Some(title.left_aligned());
        self
    }

    pub fn bottom_right(mut self, title: Line<'static>) -> Self {
        self.bottom.right = Some(title.right_aligned());
        self
    }

    /// The ratatui block this border draws like (what its tests compare it with).
    #[cfg(test)]
    pub fn to_block(&self) -> Block<'static> {
        let mut block = Block::default()
            .borders(Borders::ALL)
            .border_set(self.set)
            .border_style(self.style);
        for (titles, top) in [(&self.top, true), (&self.bottom, false)] {
            for title in [&titles.left, &titles.right].into_iter().flatten() {
                block = if top {
                    block.title_top(title.clone())
                } else {
                    block.title_bottom(title.clone())
                };
            }
        }
        block
    }

    /// Draws the border around `area` (its outermost cells) and its titles.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        let (left, top) = (area.left(), area.top());
        let (right, bottom) = (area.right() - 1, area.bottom() - 1);
        let set = &self.set;
        // The block's order (sides, then corners): where a narrow area makes two of them
        // meet, the same one ends up on top.
        let mut put = |x: u16, y: u16, symbol: &str| {
            buf[(x, y)].set_symbol(symbol).set_style(self.style);
        };
        for y in top..=bottom {
            put(left, y, set.vertical_left);
        }
        for x in left..=right {
            put(x, top, set.horizontal_top);
        }
        for y in top..=bottom {
            put(right, y, set.vertical_right);
        }
        for x in left..=right {
            put(x, bottom, set.horizontal_bottom);
        }
        put(right, bottom, set.bottom_right);
        put(right, top, set.top_right);
        put(left, bottom, set.bottom_left);
        put(left, top, set.top_left);
        // Titles sit between the corners, the left one first, then the right one over it
        // where they meet.
        let titles_row = |y: u16| Rect::new(left + 1, y, area.width.saturating_sub(2), 1);
        for (titles, row) in [
            (&self.top, titles_row(top)),
            (&self.bottom, titles_row(bottom)),
        ] {
            if row.is_empty() {
                continue;
            }
            if let Some(title) = &titles.left {
                let width = title_width(title).min(row.width);
                put_line(title, Rect { width, ..row }, buf);
            }
            if let Some(title) = &titles.right {
                let width = title_width(title);
                let x = row.right().saturating_sub(width).max(row.left());
                let width = width.min(row.width);
                put_line(title, Rect { x, width, ..row }, buf);
            }
        }
    }
}

fn title_width(title: &Line) -> u16 {
    line_width(title).min(usize::from(u16::MAX)) as u16
}

#[cfg(test)]
mod tests {
    use ratatui::text::Span;
    use ratatui::widgets::Widget;

    use super::*;

    fn borders() -> Vec<Border> {
        let name = Line::styled(" 0 · NVIDIA H100 80GB HBM3 ", Style::new().bold().cyan());
        let owners = Line::from(vec![
            Span::raw(" "),
            Span::styled("slurm 48121 (alice) 64.0G", Style::new().green()),
            Span::styled(" · ", Style::new().dark_gray()),
            Span::raw("名前 2.5G "),
        ]);
        let details = Line::styled(" PCIe 5×16 ↑1.2G/s ↓3.3G/s · ECC 0 ", Style::new().yellow());
        let clocks = Line::from(vec![
            Span::styled(" clocks: ", Style::new().dark_gray()),
            Span::styled("thermal", Style::new().red()),
            Span::raw(" "),
        ]);
        vec![
            Border::new(border::ROUNDED, Style::new().dark_gray()),
            Border::new(border::THICK, Style::new().red())
                .top_left(name.clone())
                .top_right(owners.clone())
                .bottom_left(details.clone())
                .bottom_right(clocks.clone()),
            Border::new(border::DOUBLE, Style::new().cyan().bold())
                .top_left(Line::styled(" ▶ 漢字 wide name ", Style::new().reversed()))
                .top_right(Line::from(" free "))
                .bottom_right(clocks),
            Border::new(border::ROUNDED, Style::default())
                .top_right(owners)
                .bottom_left(details),
        ]
    }

    #[test]
    fn a_border_draws_what_the_block_drew() {
        for border in borders() {
            for (width, height) in [
                (0, 3),
                (1, 1),
                (1, 4),
                (2, 2),
                (3, 1),
                (5, 3),
                (12, 4),
                (30, 5),
                (44, 6),
                (66, 14),
                (120, 3),
            ] {
                let area = Rect::new(1, 1, width, height);
                let mut by_block = Buffer::empty(Rect::new(0, 0, width + 3, height + 3));
                by_block.set_style(by_block.area, Style::new().on_blue());
                let mut by_border = by_block.clone();
                border.to_block().render(area, &mut by_block);
                border.render(area, &mut by_border);
                assert_eq!(by_border, by_block, "{area:?}");
            }
        }
    }
}
