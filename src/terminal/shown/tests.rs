//! `Shown` against ratatui's own `Cell`: the same equality and widths for any cell, the
//! tables bounded over a long run, and 8 bytes a cell.

use std::num::NonZeroU16;

use ratatui::buffer::{Cell, CellDiffOption, CellWidth};
use ratatui::style::{Color, Modifier};

use super::Shown;

/// Symbols of every kind a frame holds: none (`Cell::EMPTY`), ASCII, a space, narrow and
/// wide non-ASCII characters, the halfwidth sound mark ratatui counts twice, a letter with
/// a combining mark, emoji sequences, an empty and a three-letter symbol.
const SYMBOLS: [Option<&str>; 14] = [
    None,
    Some("a"),
    Some(" "),
    Some("█"),
    Some("コ"),
    Some("\u{ff9e}"),
    Some("e\u{301}"),
    Some("❤\u{fe0f}"),
    Some("👩\u{200d}🔬"),
    Some(""),
    Some("abc"),
    Some("\u{301}"),
    Some("é"),
    Some("⣿"),
];

#[allow(deprecated)] // `Cell::skip`, which ratatui's equality still compares
fn random_cell(rng: &mut fastrand::Rng) -> Cell {
    let color = |rng: &mut fastrand::Rng| match rng.u8(0..4) {
        0 => Color::Reset,
        1 => Color::LightRed,
        2 => Color::Indexed(rng.u8(0..3)),
        _ => Color::Rgb(0, rng.u8(0..2), 9),
    };
    let mut cell = Cell::EMPTY;
    if let Some(symbol) = SYMBOLS[rng.usize(..SYMBOLS.len())] {
        cell.set_symbol(symbol);
    }
    cell.fg = color(rng);
    cell.bg = color(rng);
    cell.underline_color = color(rng);
    cell.modifier = [Modifier::empty(), Modifier::BOLD, Modifier::REVERSED][rng.usize(..3)];
    cell.diff_option = match rng.u8(0..5) {
        0 => CellDiffOption::Skip,
        1 => CellDiffOption::AlwaysUpdate,
        2 => CellDiffOption::ForcedWidth(NonZeroU16::new(rng.u16(1..4)).unwrap()),
        _ => CellDiffOption::None,
    };
    cell.skip = rng.u8(0..4) == 0;
    cell
}

#[test]
fn a_shown_cell_compares_and_measures_as_ratatuis_cell() {
    let mut rng = fastrand::Rng::with_seed(25);
    let mut shown = Shown::new();
    shown.blank(16);
    let mut kept: Vec<Cell> = vec![Cell::EMPTY; 16];
    for _ in 0..20_000 {
        let i = rng.usize(..16);
        let cell = random_cell(&mut rng);
        let other = random_cell(&mut rng);
        assert!(shown.same(i, &kept[i]), "{:?}", kept[i]);
        assert_eq!(
            shown.same(i, &other),
            kept[i] == other,
            "{:?} {other:?}",
            kept[i]
        );
        assert_eq!(
            shown.symbol_is(i, other.symbol()),
            kept[i].symbol() == other.symbol()
        );
        assert_eq!(shown.width(i), kept[i].cell_width(), "{:?}", kept[i]);
        if other.diff_option == CellDiffOption::None {
            let same = (kept[i] == other).then(|| kept[i].cell_width());
            assert_eq!(shown.plain_width_if_same(i, &other), same, "{other:?}");
        }
        let one_char = {
            let mut chars = kept[i].symbol().chars();
            chars.next().filter(|_| chars.next().is_none())
        };
        assert_eq!(shown.char(i), one_char, "{:?}", kept[i]);
        shown.set(i, &cell);
        kept[i] = cell;
        if rng.u8(0..50) == 0 {
            shown.tidy();
        }
    }
}

/// Every cell in a colour and a symbol of its own, frame after frame: the tables drop what
/// no cell shows any more instead of growing with the run, and no cell changes.
#[test]
fn tables_stay_bounded_and_cells_survive_tidying() {
    let mut shown = Shown::new();
    shown.blank(100);
    let mut kept: Vec<Cell> = vec![Cell::EMPTY; 100];
    for frame in 0u32..300 {
        for (i, cell) in kept.iter_mut().enumerate() {
            let n = frame * 100 + i as u32;
            let mut next = Cell::EMPTY;
            next.set_symbol(&format!("x{}", n % 7919));
            next.fg = Color::Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8);
            shown.set(i, &next);
            *cell = next;
        }
        shown.tidy();
        for (i, cell) in kept.iter().enumerate() {
            assert!(shown.same(i, cell), "frame {frame}, cell {i}");
        }
        let (looks, longs) = shown.table_lens();
        assert!(
            looks <= 2 * 101 && longs <= 2 * 100,
            "{looks} looks, {longs} symbols"
        );
    }
}

/// What the shadow exists for (issue 25's private memory): 8 bytes a cell, not the 48 of
/// ratatui's `Cell` it kept before.
#[test]
fn a_screen_of_200x50_keeps_8_bytes_a_cell() {
    let mut shown = Shown::new();
    shown.blank(200 * 50);
    assert_eq!(std::mem::size_of_val(shown.cells.as_slice()), 8 * 200 * 50);
    assert_eq!(shown.cells.capacity(), 200 * 50);
}
