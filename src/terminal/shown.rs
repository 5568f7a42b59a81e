//! The cells the terminal shows, 8 bytes a cell: the shadow's storage. ratatui's `Cell` is
//! 48 bytes (a 24-byte `CompactString`, three colours, modifier, diff option), 480 KB at
//! 200x50 beside the frame's own buffer, and private memory is an issue 25 target. A shown
//! cell keeps its symbol as the one character it almost always is (with that character's
//! width), else as an index into a table of longer symbols, and its look (colours,
//! modifier, diff option) as an index into a table of looks: a screen has a few dozen.
//! Comparing a frame's cell with a shown one follows ratatui's `Cell` equality exactly
//! (no symbol and `" "` are equal). Entries no cell uses any more are dropped when a table
//! has grown to twice what was in use at the last count, so a long run stays bounded.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use ratatui::buffer::{Cell, CellDiffOption};
use ratatui::style::{Color, Modifier};

use super::width::symbol_width;

/// Everything of a cell but its symbol. Equal looks and equal symbols are equal cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Look {
    pub fg: Color,
    pub bg: Color,
    pub underline_color: Color,
    pub modifier: Modifier,
    pub diff_option: CellDiffOption,
    /// ratatui's deprecated `Cell::skip`, which its diff and equality still honour.
    pub skip: bool,
}

impl Look {
    #[allow(deprecated)] // `Cell::skip`
    fn of(cell: &Cell) -> Look {
        Look {
            fg: cell.fg,
            bg: cell.bg,
            underline_color: cell.underline_color,
            modifier: cell.modifier,
            diff_option: cell.diff_option,
            skip: cell.skip,
        }
    }

    // Always: it runs for every cell of every frame, and left a call (~35 instructions a
    // cell with the call, callgrind) where the builds chose not to inline it.
    #[inline(always)]
    #[allow(deprecated)]
    fn matches(&self, cell: &Cell) -> bool {
        self.fg == cell.fg
            && self.bg == cell.bg
            && self.modifier == cell.modifier
            && self.diff_option == cell.diff_option
            && self.skip == cell.skip
            && self.underline_color == cell.underline_color
    }
}

/// `Cell::EMPTY`'s look: the first entry of every looks table.
const BLANK_LOOK: Look = Look {
    fg: Color::Reset,
    bg: Color::Reset,
    underline_color: Color::Reset,
    modifier: Modifier::empty(),
    diff_option: CellDiffOption::None,
    skip: false,
};

/// A symbol longer than one character (an emoji sequence, a letter with a combining mark),
/// with its width as ratatui counts it. Hashed and compared by its text only, so the table
/// can be searched with a `&str`.
#[derive(Debug, Clone)]
struct Long {
    text: Box<str>,
    width: u16,
}

impl PartialEq for Long {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Long {}

impl Hash for Long {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl Borrow<str> for Long {
    fn borrow(&self) -> &str {
        &self.text
    }
}

/// A symbol word: bit 31 clear, the character in bits 0..21 and its width in bits 21..23;
/// bit 31 set, the index of a `Long`.
const LONG: u32 = 1 << 31;
const CHAR_BITS: u32 = 21;
const CHAR_MASK: u32 = (1 << CHAR_BITS) - 1;

/// One shown cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed {
    symbol: u32,
    look: u32,
}

/// A blank in the default style: `' '`, one column wide, the first look.
const BLANK: Packed = Packed {
    symbol: ' ' as u32 | (1 << CHAR_BITS),
    look: 0,
};

/// A multiply-rotate hash (rustc's `FxHasher` scheme) for the tables' keys: they are the
/// program's own cells, not outside input to defend against, and every changed cell of a
/// frame whose look is not the one stored before it is looked up (SipHash was 1.7 M of
/// 105 M instructions in a callgrind window of 19 frames).
#[derive(Default)]
struct Quick(u64);

impl Hasher for Quick {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Entries in order of arrival, found by value. Indices stay valid until `keep_only`.
#[derive(Debug)]
struct Table<T> {
    items: Vec<T>,
    index: HashMap<T, u32, BuildHasherDefault<Quick>>,
    /// When the table is this long it is counted and its unused entries dropped.
    limit: usize,
}

/// Entries a table may hold before the first count.
const FIRST_LIMIT: usize = 64;

impl<T: Hash + Eq + Clone> Table<T> {
    fn new() -> Self {
        Table {
            items: Vec::new(),
            index: HashMap::default(),
            limit: FIRST_LIMIT,
        }
    }

    fn find<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<u32>
    where
        T: Borrow<Q>,
    {
        self.index.get(key).copied()
    }

    fn add(&mut self, item: T) -> u32 {
        // A table never holds more entries than twice the cells plus `FIRST_LIMIT`, and a
        // terminal has far fewer than 2^30 cells.
        let i = u32::try_from(self.items.len()).expect("a table index fits in 31 bits");
        self.index.insert(item.clone(), i);
        self.items.push(item);
        i
    }

    fn clear(&mut self) {
        self.items.clear();
        self.index.clear();
        self.limit = FIRST_LIMIT;
    }

    fn full(&self) -> bool {
        self.items.len() >= self.limit
    }

    /// Keeps the entries `used` marks, in their order, and returns each old index's new one
    /// (`u32::MAX` for a dropped entry).
    fn keep_only(&mut self, used: &[bool]) -> Vec<u32> {
        let mut new_index = vec![u32::MAX; self.items.len()];
        let old = std::mem::take(&mut self.items);
        self.index.clear();
        for (i, item) in old.into_iter().enumerate() {
            if used[i] {
                new_index[i] = self.add(item);
            }
        }
        self.index.shrink_to_fit();
        self.items.shrink_to_fit();
        self.limit = (2 * self.items.len()).max(FIRST_LIMIT);
        new_index
    }
}

/// The shown screen's cells, row by row.
#[derive(Debug)]
pub struct Shown {
    cells: Vec<Packed>,
    looks: Table<Look>,
    longs: Table<Long>,
    /// The look stored last: runs of cells share one, so most stores find it here.
    last_look: u32,
}

impl Shown {
    pub fn new() -> Shown {
        let mut shown = Shown {
            cells: Vec::new(),
            looks: Table::new(),
            longs: Table::new(),
            last_look: 0,
        };
        shown.blank(0);
        shown
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// `len` blank cells in the default style, and nothing else kept.
    pub fn blank(&mut self, len: usize) {
        if self.cells.len() == len {
            self.cells.fill(BLANK);
        } else {
            // Not `resize`: a screen that shrank gives its memory back.
            self.cells = vec![BLANK; len];
        }
        self.looks.clear();
        self.longs.clear();
        self.looks.add(BLANK_LOOK);
        self.last_look = 0;
    }

    /// The look of the cell at `i`.
    #[inline]
    pub fn look(&self, i: usize) -> &Look {
        &self.looks.items[self.cells[i].look as usize]
    }

    /// Whether the cell at `i` equals `cell`, as ratatui's `Cell` equality has it.
    #[inline]
    pub fn same(&self, i: usize, cell: &Cell) -> bool {
        self.look(i).matches(cell) && self.symbol_is(i, cell.symbol())
    }

    /// The width of the cell at `i` when it equals `cell`, which has no diff option: the
    /// test for most cells of a frame, so the cell and its look are read once.
    #[inline(always)]
    pub fn plain_width_if_same(&self, i: usize, cell: &Cell) -> Option<u16> {
        let packed = self.cells[i];
        let look = &self.looks.items[packed.look as usize];
        // A look of `CellDiffOption::None` (as `cell`'s): the width is the symbol's.
        if !look.matches(cell) || !self.word_is(packed.symbol, cell.symbol()) {
            return None;
        }
        Some(if packed.symbol & LONG != 0 {
            self.longs.items[(packed.symbol & !LONG) as usize].width
        } else {
            (packed.symbol >> CHAR_BITS) as u16
        })
    }

    /// Whether the symbol at `i` is `symbol`.
    #[inline]
    pub fn symbol_is(&self, i: usize, symbol: &str) -> bool {
        self.word_is(self.cells[i].symbol, symbol)
    }

    #[inline(always)]
    fn word_is(&self, word: u32, symbol: &str) -> bool {
        if word & LONG != 0 {
            return &*self.longs.items[(word & !LONG) as usize].text == symbol;
        }
        let code = word & CHAR_MASK;
        let bytes = symbol.as_bytes();
        if code < 0x80 {
            return bytes.len() == 1 && u32::from(bytes[0]) == code;
        }
        let mut chars = symbol.chars();
        chars.next().map(u32::from) == Some(code) && chars.next().is_none()
    }

    /// The width of the cell at `i` as ratatui counts it (`CellWidth`: a forced width, else
    /// its symbol's).
    #[inline]
    pub fn width(&self, i: usize) -> u16 {
        if let CellDiffOption::ForcedWidth(width) = self.look(i).diff_option {
            return width.get();
        }
        let word = self.cells[i].symbol;
        if word & LONG != 0 {
            self.longs.items[(word & !LONG) as usize].width
        } else {
            (word >> CHAR_BITS) as u16
        }
    }

    /// The character at `i`, when its symbol is exactly one.
    pub fn char(&self, i: usize) -> Option<char> {
        let word = self.cells[i].symbol;
        if word & LONG != 0 {
            return None;
        }
        char::from_u32(word & CHAR_MASK)
    }

    /// The cell at `i` is `cell` from now on.
    pub fn set(&mut self, i: usize, cell: &Cell) {
        let symbol = self.symbol_word(cell.symbol());
        let look = self.look_index(cell);
        self.cells[i] = Packed { symbol, look };
    }

    /// The cell at `i` is a blank with `look`.
    pub fn set_blank(&mut self, i: usize, look: Look) {
        let look = self.intern_look(look);
        self.cells[i] = Packed {
            symbol: BLANK.symbol,
            look,
        };
    }

    fn symbol_word(&mut self, symbol: &str) -> u32 {
        let mut chars = symbol.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            let width = symbol_width(symbol);
            if width < 4 {
                return u32::from(c) | (u32::from(width) << CHAR_BITS);
            }
        }
        let i = match self.longs.find(symbol) {
            Some(i) => i,
            None => self.longs.add(Long {
                text: symbol.into(),
                width: symbol_width(symbol),
            }),
        };
        LONG | i
    }

    fn look_index(&mut self, cell: &Cell) -> u32 {
        if self.looks.items[self.last_look as usize].matches(cell) {
            return self.last_look;
        }
        self.intern_look(Look::of(cell))
    }

    fn intern_look(&mut self, look: Look) -> u32 {
        let i = match self.looks.find(&look) {
            Some(i) => i,
            None => self.looks.add(look),
        };
        self.last_look = i;
        i
    }

    /// Drops the table entries no cell uses once a table has reached its limit: called
    /// between frames, so a run that keeps meeting new colours or symbols stays bounded.
    pub fn tidy(&mut self) {
        if !self.looks.full() && !self.longs.full() {
            return;
        }
        let mut looks_used = vec![false; self.looks.items.len()];
        let mut longs_used = vec![false; self.longs.items.len()];
        looks_used[0] = true; // the blank look stays first
        for cell in &self.cells {
            looks_used[cell.look as usize] = true;
            if cell.symbol & LONG != 0 {
                longs_used[(cell.symbol & !LONG) as usize] = true;
            }
        }
        let new_look = self.looks.keep_only(&looks_used);
        let new_long = self.longs.keep_only(&longs_used);
        for cell in &mut self.cells {
            cell.look = new_look[cell.look as usize];
            if cell.symbol & LONG != 0 {
                cell.symbol = LONG | new_long[(cell.symbol & !LONG) as usize];
            }
        }
        self.last_look = 0;
    }

    /// How many looks and long symbols the tables hold (for tests).
    #[cfg(test)]
    pub fn table_lens(&self) -> (usize, usize) {
        (self.looks.items.len(), self.longs.items.len())
    }
}

impl Default for Shown {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
