//! The screen as the terminal shows it, cell by cell, and the one comparison per cell that
//! says which cells of the next frame must be sent. The rules are ratatui-core 0.1's
//! `Buffer::diff` (`BufferDiff`), cell for cell, so the same cells reach the terminal as
//! before; they are only applied against this copy instead of ratatui's previous buffer.
//! ratatui's diff looked up the width of every cell's symbol, changed or not (to step over
//! a wide character's trailing cells); here a cell is first compared with the one shown,
//! and an unchanged cell's width comes from the copy, kept when the cell was stored. The
//! copy is [`Shown`]'s 8 bytes a cell, not ratatui's 48-byte cells.

use ratatui::buffer::{Cell, CellDiffOption};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

use super::shown::{Look, Shown};
use super::width::cell_width;

/// Modifiers that show on a blank cell: a wide character in one of these styles, replaced
/// by a narrow one, leaves its look on its trailing cells (ratatui's `VISIBLE_ON_BLANK`).
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK)
    .union(Modifier::CROSSED_OUT);

/// The look of a cell whose contents the terminal shows are not known: equal to no cell of
/// a frame (frames mark no cell `Skip` that they want compared), and never re-sent in a gap.
const UNKNOWN: Look = Look {
    fg: Color::Reset,
    bg: Color::Reset,
    underline_color: Color::Reset,
    modifier: Modifier::empty(),
    diff_option: CellDiffOption::Skip,
    skip: false,
};

pub struct Shadow {
    area: Rect,
    screen: Shown,
    /// False after something other than a full clear or a whole frame touched the screen
    /// (a partial clear, appended lines, a new size): every cell is then sent, and nothing
    /// is taken from the shadow.
    known: bool,
}

/// What becomes of one cell of the next frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The terminal shows it already.
    Shown,
    /// It must be written.
    Send,
    /// It is not written (a wide character's trailing cell, a cell marked `Skip`, a trailing
    /// cell of an emoji whose symbol did not change) but is the frame's cell from now on.
    Hidden,
}

/// One frame's walk over its cells, in order: which cells a wide character covers.
#[derive(Debug, Default)]
pub struct Walk {
    /// Cells before this index are a wide character's trailing cells: never compared.
    covered_until: usize,
    trailing: Option<Trailing>,
    /// How many cells the walk was given: all of them make the shadow known again.
    seen: usize,
}

/// The trailing cells after a changed wide character that ratatui sends on purpose
/// (`BufferDiff`'s `TrailingState`): after an emoji with VS16 those whose symbol changed,
/// after a wide character in a style visible on blanks replaced by a narrow one, all.
#[derive(Debug)]
struct Trailing {
    next: usize,
    end: usize,
    force: bool,
}

impl Shadow {
    pub fn new() -> Shadow {
        Shadow {
            area: Rect::ZERO,
            screen: Shown::new(),
            known: false,
        }
    }

    pub fn area(&self) -> Rect {
        self.area
    }

    pub fn known(&self) -> bool {
        self.known
    }

    /// The character shown at (`x`, `y`), which must be inside the area, and its look, when
    /// re-sending it writes exactly that cell: one character, not `Skip`ped or of forced
    /// width (half of a wide character, or something another program drew).
    #[allow(deprecated)] // `Cell::skip`: a cell something else draws is never re-sent
    pub fn plain_char(&self, x: u16, y: u16) -> Option<(char, &Look)> {
        let i = usize::from(y - self.area.y) * self.row_len() + usize::from(x - self.area.x);
        let look = self.screen.look(i);
        if look.diff_option != CellDiffOption::None || look.skip {
            return None;
        }
        Some((self.screen.char(i)?, look))
    }

    /// The terminal is now `area` big. The first size is a blank screen (the alternate
    /// screen starts blank, as ratatui assumes too); a new size leaves the contents unknown
    /// until the full clear ratatui sends after a resize.
    pub fn fit(&mut self, area: Rect) {
        if self.area != area {
            self.known = self.area.is_empty();
            self.area = area;
            self.screen.blank(area.area() as usize);
        }
    }

    /// The whole screen was cleared: blank cells in the default style.
    pub fn cleared(&mut self) {
        self.screen.blank(self.screen.len());
        self.known = true;
    }

    /// Something else changed part of the screen.
    pub fn forget(&mut self) {
        self.known = false;
    }

    /// What becomes of `cell`, the next frame's cell at `i`. Cells must come in order,
    /// each at most once, through one `walk` per frame.
    #[inline(always)]
    pub fn verdict(&self, walk: &mut Walk, i: usize, cell: &Cell) -> Verdict {
        walk.seen += 1;
        // Most cells of a frame: unchanged, outside any wide character's columns.
        if self.known
            && walk.trailing.is_none()
            && i >= walk.covered_until
            && let Some(width) = self.plain_shown_width(i, cell)
        {
            walk.covered_until = i + usize::from(width);
            return Verdict::Shown;
        }
        self.verdict_apart(walk, i, cell)
    }

    /// The index of the first of `cells` from `from` on that [`Shadow::verdict`]'s first
    /// test does not find shown already (or `cells.len()`), with the walk moved over the
    /// ones before it as `verdict` would have moved it: `cells` are a whole frame of the
    /// shadow's size, index for index. The loop holds a few values in registers where the
    /// general path carries the encoder's whole state from cell to cell.
    #[inline(always)]
    pub fn skip_shown(&self, walk: &mut Walk, cells: &[Cell], from: usize) -> usize {
        if !self.known || walk.trailing.is_some() {
            return from;
        }
        let mut covered_until = walk.covered_until;
        let mut i = from;
        while let Some(cell) = cells.get(i)
            && i >= covered_until
            && let Some(width) = self.plain_shown_width(i, cell)
        {
            covered_until = i + usize::from(width);
            i += 1;
        }
        walk.covered_until = covered_until;
        walk.seen += i - from;
        i
    }

    /// The width of `cell` when it is a plain cell (no diff option, not skipped) that the
    /// shadow shows as it is at `i`: the test `verdict` and `skip_shown` both make first.
    #[inline(always)]
    #[allow(deprecated)] // `Cell::skip`, which ratatui's diff still honours
    fn plain_shown_width(&self, i: usize, cell: &Cell) -> Option<u16> {
        if cell.diff_option != CellDiffOption::None || cell.skip {
            return None;
        }
        self.screen.plain_width_if_same(i, cell)
    }

    /// [`Shadow::verdict`] for a cell that changed, or in or after a wide character.
    #[allow(deprecated)]
    fn verdict_apart(&self, walk: &mut Walk, i: usize, cell: &Cell) -> Verdict {
        let len = self.screen.len();
        if let Some(t) = &mut walk.trailing {
            if i < t.end {
                if i < t.next {
                    return Verdict::Hidden;
                }
                t.next = i + usize::from(cell_width(cell).max(1));
                t.end = t.end.max(t.next).min(len);
                let changed = t.force || !self.known || !self.screen.symbol_is(i, cell.symbol());
                return if changed && !is_skip(cell) {
                    Verdict::Send
                } else {
                    Verdict::Hidden
                };
            }
            walk.trailing = None;
        }
        if i < walk.covered_until || is_skip(cell) {
            return Verdict::Hidden;
        }
        let same = self.known && self.screen.same(i, cell);
        match cell.diff_option {
            CellDiffOption::ForcedWidth(width) => {
                walk.covered_until = i + usize::from(width.get());
                if same { Verdict::Shown } else { Verdict::Send }
            }
            CellDiffOption::None if same => {
                walk.covered_until = i + usize::from(self.screen.width(i));
                Verdict::Shown
            }
            _ => {
                let width = usize::from(cell_width(cell));
                let shown_width = usize::from(self.screen.width(i));
                let shown = self.screen.look(i);
                if width > 1 && cell.symbol().contains('\u{fe0f}') {
                    // Some terminals leave an emoji's trailing column as it was.
                    walk.trailing = Some(Trailing {
                        next: i + 1,
                        end: (i + width).min(len),
                        force: false,
                    });
                } else if width > 1 {
                    walk.covered_until = i + width;
                } else if shown_width > width
                    && (shown.bg != Color::Reset || shown.modifier.intersects(VISIBLE_ON_BLANK))
                {
                    walk.trailing = Some(Trailing {
                        next: i + 1,
                        end: i + shown_width,
                        force: true,
                    });
                }
                Verdict::Send
            }
        }
    }

    /// `cell` was written at `i`. A wide character it wrote over in part is gone from the
    /// terminal, and what shows in its columns past `cell` depends on the terminal (blanks,
    /// in the old style, the new one or neither): those columns become unknown, so they are
    /// sent again rather than taken for blank.
    pub fn written(&mut self, i: usize, cell: &Cell) {
        let end = i + usize::from(cell_width(cell).max(1));
        let row_end = (i / self.row_len() + 1) * self.row_len();
        for k in i..end.min(row_end) {
            let covered = (k + usize::from(self.screen.width(k))).min(row_end);
            for unknown in end..covered {
                self.screen.set_blank(unknown, UNKNOWN);
            }
        }
        // Sent because it differs (or is not known): stored without comparing again.
        self.screen.set(i, cell);
    }

    fn row_len(&self) -> usize {
        usize::from(self.area.width)
    }

    /// `cell` is what the terminal shows at `i` from now on.
    pub fn store(&mut self, i: usize, cell: &Cell) {
        if !self.screen.same(i, cell) {
            self.screen.set(i, cell);
        }
    }

    /// The frame walked is over: if it held every cell, the terminal shows exactly the
    /// shadow again.
    pub fn finish(&mut self, walk: Walk) {
        if walk.seen == self.screen.len() {
            self.known = true;
        }
        self.screen.tidy();
    }
}

impl Default for Shadow {
    fn default() -> Self {
        Self::new()
    }
}

/// A cell ratatui's diff never sends.
#[allow(deprecated)]
fn is_skip(cell: &Cell) -> bool {
    cell.diff_option == CellDiffOption::Skip
        || (cell.skip && cell.diff_option == CellDiffOption::None)
}
