//! The terminal the TUI draws on: ratatui's crossterm backend behind a thin layer that
//! writes fewer bytes. ratatui sends only changed cells, and crossterm starts every run of
//! changed cells with a cursor move (about 8 bytes); most once-a-second changes are a digit
//! or two a few cells apart, so the moves were half of what reached the terminal. Here a
//! short gap between two changed cells on a row is filled by re-sending the unchanged cells
//! (known from a shadow copy of the screen), which costs less than the move.

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::{Buffer, Cell, CellDiffOption};
use ratatui::layout::{Position, Rect, Size};

/// Gaps up to this many cells are re-sent rather than jumped over (a move costs ~8 bytes).
const MAX_FILLED_GAP: u16 = 4;

pub struct Coalescing<B: Backend> {
    inner: B,
    /// What the terminal shows now, as far as this backend has drawn it.
    shadow: Buffer,
}

impl<B: Backend> Coalescing<B> {
    pub fn new(inner: B) -> Self {
        Coalescing {
            inner,
            shadow: Buffer::empty(Rect::ZERO),
        }
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }

    fn fit_shadow(&mut self) -> Result<(), B::Error> {
        let size = self.inner.size()?;
        let area = Rect::new(0, 0, size.width, size.height);
        if self.shadow.area != area {
            self.shadow = Buffer::empty(area);
        }
        Ok(())
    }
}

/// A gap may be re-sent only when its cells are plain one-column characters: re-sending
/// half of a wide character would shift the rest of the row.
fn refillable(cell: &Cell) -> bool {
    let mut chars = cell.symbol().chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if (c as u32) < 0x1100)
        && cell.diff_option == CellDiffOption::None
}

impl<B: Backend> Backend for Coalescing<B> {
    type Error = B::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.fit_shadow()?;
        let mut out: Vec<(u16, u16, Cell)> = Vec::new();
        let mut last: Option<(u16, u16)> = None;
        for (x, y, cell) in content {
            // A frame laid out for the size before a resize can hold cells past the shadow
            // (the terminal's size is read again here, after ratatui read it): those gaps
            // are never filled, since the shadow does not know them.
            if let Some((lx, ly)) = last
                && ly == y
                && x > lx + 1
                && x - lx - 1 <= MAX_FILLED_GAP
                && self.shadow.area.contains(Position::new(x - 1, y))
            {
                let gap: Vec<Cell> = (lx + 1..x).map(|gx| self.shadow[(gx, y)].clone()).collect();
                if gap.iter().all(refillable) {
                    out.extend(gap.into_iter().zip(lx + 1..x).map(|(c, gx)| (gx, y, c)));
                }
            }
            out.push((x, y, cell.clone()));
            last = Some((x, y));
        }
        for (x, y, cell) in &out {
            if self.shadow.area.contains(Position::new(*x, *y)) {
                self.shadow[(*x, *y)] = cell.clone();
            }
        }
        self.inner.draw(out.iter().map(|(x, y, c)| (*x, *y, c)))
    }

    fn append_lines(&mut self, n: u16) -> Result<(), Self::Error> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> Result<(), Self::Error> {
        self.shadow.reset();
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        // Anything but a full clear leaves parts of the screen we no longer know exactly.
        self.shadow = Buffer::empty(Rect::ZERO);
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }

    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::text::Line;

    /// Counts the cells handed to the real backend.
    struct Counting {
        inner: TestBackend,
        cells: usize,
    }

    impl Backend for Counting {
        type Error = <TestBackend as Backend>::Error;
        fn draw<'a, I: Iterator<Item = (u16, u16, &'a Cell)>>(
            &mut self,
            content: I,
        ) -> Result<(), Self::Error> {
            let cells: Vec<_> = content.collect();
            self.cells += cells.len();
            // A real terminal drops what lies past its edge; TestBackend would panic.
            let area = self.inner.buffer().area;
            self.inner.draw(
                cells
                    .into_iter()
                    .filter(|(x, y, _)| area.contains(Position::new(*x, *y))),
            )
        }
        fn hide_cursor(&mut self) -> Result<(), Self::Error> {
            self.inner.hide_cursor()
        }
        fn show_cursor(&mut self) -> Result<(), Self::Error> {
            self.inner.show_cursor()
        }
        fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
            self.inner.get_cursor_position()
        }
        fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Self::Error> {
            self.inner.set_cursor_position(p)
        }
        fn clear(&mut self) -> Result<(), Self::Error> {
            self.inner.clear()
        }
        fn clear_region(&mut self, t: ClearType) -> Result<(), Self::Error> {
            self.inner.clear_region(t)
        }
        fn size(&self) -> Result<Size, Self::Error> {
            self.inner.size()
        }
        fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
            self.inner.window_size()
        }
        fn flush(&mut self) -> Result<(), Self::Error> {
            self.inner.flush()
        }
    }

    fn draw(t: &mut Terminal<Coalescing<Counting>>, text: &str) {
        t.draw(|f| f.render_widget(Line::raw(text.to_string()), f.area()))
            .unwrap();
    }

    #[test]
    fn short_gaps_are_resent_and_the_screen_stays_exact() {
        let backend = Coalescing::new(Counting {
            inner: TestBackend::new(20, 1),
            cells: 0,
        });
        let mut t = Terminal::new(backend).unwrap();
        draw(&mut t, "temp 76°C 50W");
        let first = t.backend().inner().cells;
        draw(&mut t, "temp 77°C 51W");
        // Two digits changed with 4 cells between them: those are re-sent too (6 cells).
        assert_eq!(t.backend().inner().cells - first, 6);
        draw(&mut t, "temp 77°C 51W      x");
        // A long gap is jumped, not filled (one more cell).
        assert_eq!(t.backend().inner().cells - first, 7);
        let shown = t.backend().inner().inner.buffer().clone();
        let mut expected = Buffer::empty(Rect::new(0, 0, 20, 1));
        expected.set_string(0, 0, "temp 77°C 51W      x", ratatui::style::Style::new());
        assert_eq!(shown, expected);
    }

    #[test]
    fn cells_past_a_shrunken_terminal_are_passed_on_not_indexed() {
        // A resize between ratatui's size read and ours: the frame is 20 wide, the
        // terminal (and so the shadow) 10.
        let mut c = Coalescing::new(Counting {
            inner: TestBackend::new(10, 1),
            cells: 0,
        });
        let cell = Cell::new("x");
        let cells = [(12u16, 0u16, &cell), (15, 0, &cell), (17, 0, &cell)];
        c.draw(cells.into_iter()).unwrap();
        assert_eq!(c.inner().cells, 3, "no gap filled from outside the shadow");
    }
}
