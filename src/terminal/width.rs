//! How many columns a cell takes, as ratatui counts it (`CellWidth`), without asking
//! unicode-width for the characters the screen is mostly made of. For a symbol longer than
//! one byte ratatui walks the string twice (its width, then half-width sound marks), about
//! 170 instructions; the encoder asks for every cell it writes (twice) and the bars, charts
//! and borders are such symbols (2.5 % of a frame's instructions at 8 GPUs, issue 25).

use ratatui::buffer::{Cell, CellDiffOption, CellWidth};

/// `cell.cell_width()`, the same number, quickly for a symbol of one known narrow character.
#[inline]
pub fn cell_width(cell: &Cell) -> u16 {
    match cell.diff_option {
        CellDiffOption::ForcedWidth(w) => w.get(),
        _ => symbol_width(cell.symbol()),
    }
}

/// `symbol.cell_width()`, the same number, quickly for one known narrow character.
#[inline]
pub fn symbol_width(symbol: &str) -> u16 {
    let mut chars = symbol.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && one_column(c)
    {
        return 1;
    }
    symbol.cell_width()
}

/// Characters unicode-width gives one column: ASCII, Latin-1 and the rest of the Latin,
/// IPA and spacing-modifier blocks but the soft hyphen, general punctuation, arrows, box
/// drawing, block elements and braille (`one_column_characters_are_one_column_to_ratatui`).
fn one_column(c: char) -> bool {
    matches!(c as u32,
        0x20..=0x7e | 0xa0..=0xac | 0xae..=0x2ff
        | 0x2010..=0x2027 | 0x2030..=0x205e | 0x2190..=0x21ff
        | 0x2500..=0x259f | 0x2800..=0x28ff)
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU16;

    use super::*;

    #[test]
    fn one_column_characters_are_one_column_to_ratatui() {
        let mut checked = 0;
        for c in (0..0x3000_u32)
            .filter_map(char::from_u32)
            .filter(|c| one_column(*c))
        {
            assert_eq!(c.to_string().cell_width(), 1, "U+{:04X}", c as u32);
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn widths_are_ratatuis_own() {
        for symbol in [
            "a", "█", "°", "─", "⣿", "", "漢", "e\u{301}", "👍🏽", "\u{ad}", "ｶﾞ",
        ] {
            assert_eq!(symbol_width(symbol), symbol.cell_width(), "{symbol:?}");
            let mut cell = Cell::new(symbol);
            assert_eq!(cell_width(&cell), cell.cell_width(), "{symbol:?}");
            cell.set_diff_option(CellDiffOption::ForcedWidth(NonZeroU16::new(3).unwrap()));
            assert_eq!(cell_width(&cell), 3);
        }
    }
}
