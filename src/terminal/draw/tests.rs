//! Frames drawn the TUI's way ([`draw`] through the real [`Compact`] backend) into a
//! terminal emulator (the `vt100` crate): after every frame the emulator must show that
//! frame exactly — each character, wide ones in their two columns, and each cell's colours
//! and attributes — through random text, wide characters replacing narrow ones and back,
//! styles, resizes and redraws after a stop.

use std::cell::RefCell;
use std::io::{self, Write};
use std::num::NonZeroU16;
use std::rc::Rc;

use ratatui::Terminal;
use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Rect, Size};
use ratatui::style::{Color, Modifier, Style};

use super::draw;
use crate::terminal::Compact;
use crate::terminal::encode::NAMED;

/// What the backend wrote, shared with the test while the terminal owns the backend.
#[derive(Clone, Default)]
struct Wire(Rc<RefCell<Vec<u8>>>);

impl Write for Wire {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Wire {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

/// The TUI's terminal, writing into `wire`, and an emulator of the same size.
fn screen(size: Size) -> (Terminal<Compact<Wire>>, Wire, vt100::Parser) {
    let wire = Wire::default();
    let terminal = Terminal::new(Compact::with_size(wire.clone(), size)).unwrap();
    let parser = vt100::Parser::new(nonzero(size.height), nonzero(size.width), 0);
    (terminal, wire, parser)
}

/// Draws `scene` as the TUI draws a frame and feeds what was written to the emulator.
fn show(
    terminal: &mut Terminal<Compact<Wire>>,
    wire: &Wire,
    parser: &mut vt100::Parser,
    scene: &Buffer,
) -> Vec<u8> {
    draw(terminal, |f| {
        f.buffer_mut().content.clone_from(&scene.content)
    })
    .unwrap();
    let bytes = wire.take();
    parser.process(&bytes);
    bytes
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap()
}

fn vt_color(color: Color) -> vt100::Color {
    match color {
        Color::Reset => vt100::Color::Default,
        Color::Indexed(i) => vt100::Color::Idx(i),
        Color::Rgb(r, g, b) => vt100::Color::Rgb(r, g, b),
        named => vt100::Color::Idx(NAMED.iter().position(|c| *c == named).unwrap() as u8),
    }
}

/// Where the emulator's screen differs from `expected`, if anywhere. A blank's foreground,
/// bold, dim and italic do not show, so they are not compared.
fn difference(screen: &vt100::Screen, expected: &Buffer) -> Option<String> {
    let area = expected.area;
    for y in 0..area.height {
        let mut x = 0;
        while x < area.width {
            let want = &expected[(x, y)];
            let shown = screen.cell(y, x).unwrap();
            let text = match shown.contents() {
                "" => " ",
                text => text,
            };
            let width = want.cell_width().max(1);
            let mut wrong = text != want.symbol()
                || vt_color(want.bg) != shown.bgcolor()
                || want.modifier.contains(Modifier::REVERSED) != shown.inverse()
                || want.modifier.contains(Modifier::UNDERLINED) != shown.underline()
                || shown.is_wide() != (width > 1);
            if want.symbol() != " " {
                wrong |= vt_color(want.fg) != shown.fgcolor()
                    || want.modifier.contains(Modifier::BOLD) != shown.bold()
                    || want.modifier.contains(Modifier::DIM) != shown.dim()
                    || want.modifier.contains(Modifier::ITALIC) != shown.italic();
            }
            if wrong {
                return Some(format!("({x}, {y}): shown {shown:?}, expected {want:?}"));
            }
            x += width;
        }
    }
    None
}

const TEXT: [&str; 16] = [
    "a", "Z", "7", " ", " ", "─", "█", "▄", "⣿", "°", "é", "…", "コ", "漢", "字", "│",
];

fn random_style(rng: &mut fastrand::Rng) -> Style {
    let color = |rng: &mut fastrand::Rng| match rng.u8(0..12) {
        0..=4 => Color::Reset,
        5..=9 => NAMED[rng.usize(..NAMED.len())],
        10 => Color::Indexed(rng.u8(16..)),
        _ => Color::Rgb(rng.u8(..), rng.u8(..), rng.u8(..)),
    };
    // Bold and dim are one setting (intensity) on most terminals, the emulator's too.
    let mut modifier = [Modifier::empty(), Modifier::BOLD, Modifier::DIM][rng.usize(..3)];
    for m in [Modifier::ITALIC, Modifier::UNDERLINED, Modifier::REVERSED] {
        if rng.u8(0..5) == 0 {
            modifier |= m;
        }
    }
    // Exactly these modifiers: a run written over another takes none of its own.
    Style::new()
        .fg(color(rng))
        .bg(color(rng))
        .remove_modifier(Modifier::all() - modifier)
        .add_modifier(modifier)
}

/// Writes a few runs of random text into `scene`, as widgets do (`set_stringn` blanks a
/// wide character's trailing cell), then blanks any wide character a later run wrote
/// over in part: a frame never shows half of one.
fn scribble(scene: &mut Buffer, rng: &mut fastrand::Rng, runs: usize) {
    let area = scene.area;
    let styles: Vec<Style> = (0..3).map(|_| random_style(rng)).collect();
    for _ in 0..runs {
        let (x, y) = (rng.u16(0..area.width), rng.u16(0..area.height));
        let text: String = (0..rng.usize(1..10))
            .map(|_| TEXT[rng.usize(..TEXT.len())])
            .collect();
        let style = styles[rng.usize(..styles.len())];
        scene.set_stringn(x, y, text, usize::from(area.width), style);
    }
    for y in 0..area.height {
        let mut x = 0;
        while x < area.width {
            let width = scene[(x, y)].cell_width().max(1);
            if width > 1 && (x + 1 >= area.width || scene[(x + 1, y)].symbol() != " ") {
                scene[(x, y)].set_symbol(" ");
            }
            x += if scene[(x, y)].cell_width() > 1 {
                width
            } else {
                1
            };
        }
    }
}

#[test]
fn every_frame_drawn_shows_exactly_in_a_terminal() {
    let mut rng = fastrand::Rng::with_seed(25);
    for round in 0..30 {
        let mut size = Size::new(rng.u16(4..40), rng.u16(1..10));
        let (mut terminal, wire, mut parser) = screen(size);
        let mut scene = Buffer::empty(Rect::new(0, 0, size.width, size.height));
        for frame in 0..40 {
            match rng.u8(0..20) {
                // The window changed size: the terminal first, ratatui sees it next frame.
                0 => {
                    size = Size::new(rng.u16(4..40), rng.u16(1..10));
                    terminal.backend_mut().set_size(size);
                    parser
                        .screen_mut()
                        .set_size(nonzero(size.height), nonzero(size.width));
                    scene = Buffer::empty(Rect::new(0, 0, size.width, size.height));
                    scribble(&mut scene, &mut rng, 12);
                }
                // Stopped and resumed (`redraw_all`): the screen holds anything, then it
                // is cleared through `Terminal::resize` and drawn whole.
                1 => {
                    parser.process(b"\x1b[m$ fg\r\nsome shell \x1b[41moutput\x1b[m");
                    let area = Rect::new(0, 0, size.width, size.height);
                    terminal.resize(area).unwrap();
                    parser.process(&wire.take());
                }
                _ => {
                    let runs = rng.usize(0..6);
                    scribble(&mut scene, &mut rng, runs);
                }
            }
            let bytes = show(&mut terminal, &wire, &mut parser, &scene);
            if let Some(e) = difference(parser.screen(), &scene) {
                panic!(
                    "round {round}, frame {frame}: {e}\n{:?}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }
}

/// The same frame twice sends nothing the second time but the hidden cursor.
#[test]
fn an_unchanged_frame_sends_no_cells() {
    let size = Size::new(30, 4);
    let (mut terminal, wire, mut parser) = screen(size);
    let mut scene = Buffer::empty(Rect::new(0, 0, 30, 4));
    scribble(&mut scene, &mut fastrand::Rng::with_seed(3), 10);
    let first = show(&mut terminal, &wire, &mut parser, &scene);
    let second = show(&mut terminal, &wire, &mut parser, &scene);
    assert!(first.len() > 40, "{first:?}");
    assert_eq!(String::from_utf8(second).unwrap(), "\x1b[?25l");
}

/// A narrow character written over a wide one erases the wide one's right half on the
/// terminal. The encoder's shadow used to keep what was written in that column before the
/// wide character came (ratatui's diff never sends a wide character's trailing cell), and
/// re-sent it in the next gap: the screen showed "xab" for "x b".
#[test]
fn a_wide_characters_trailing_column_is_never_resent_stale() {
    let (mut terminal, wire, mut parser) = screen(Size::new(6, 1));
    let mut scene = Buffer::empty(Rect::new(0, 0, 6, 1));
    for text in ["aaaa", "コaa", "x b"] {
        scene.reset();
        scene.set_string(0, 0, text, Style::new());
        show(&mut terminal, &wire, &mut parser, &scene);
        assert_eq!(difference(parser.screen(), &scene), None, "{text:?}");
    }
}

/// A wide character's right half replaced by a narrow character with a background: the
/// column after it is sent again, not taken for the blank the frame has there.
#[test]
fn a_narrow_character_over_a_wide_one_clears_its_other_column() {
    let (mut terminal, wire, mut parser) = screen(Size::new(4, 1));
    let mut scene = Buffer::empty(Rect::new(0, 0, 4, 1));
    scene.set_string(0, 0, "コ", Style::new());
    show(&mut terminal, &wire, &mut parser, &scene);
    scene.reset();
    scene.set_string(0, 0, "x", Style::new().bg(Color::Blue));
    show(&mut terminal, &wire, &mut parser, &scene);
    assert_eq!(difference(parser.screen(), &scene), None);
}

/// Whether ratatui's second buffer holds no cells (looked at by switching to it and back).
fn second_buffer_is_empty(terminal: &mut Terminal<Compact<Wire>>) -> bool {
    terminal.swap_buffers();
    let empty = terminal.current_buffer_mut().content.is_empty();
    terminal.swap_buffers();
    empty
}

/// ratatui's second buffer is not kept after a frame, however the size changed before it
/// (the window's, or `Terminal::resize` after a stop, both of which fill it again); the
/// frames still show exactly.
#[test]
fn ratatuis_second_buffer_is_let_go_after_every_frame() {
    let size = Size::new(30, 4);
    let (mut terminal, wire, mut parser) = screen(size);
    assert!(
        !second_buffer_is_empty(&mut terminal),
        "ratatui starts with two"
    );
    let mut scene = Buffer::empty(Rect::new(0, 0, 30, 4));
    scribble(&mut scene, &mut fastrand::Rng::with_seed(7), 10);
    show(&mut terminal, &wire, &mut parser, &scene);
    assert!(second_buffer_is_empty(&mut terminal));
    let bigger = Size::new(50, 6);
    terminal.backend_mut().set_size(bigger);
    parser.screen_mut().set_size(nonzero(6), nonzero(50));
    let mut scene = Buffer::empty(Rect::new(0, 0, 50, 6));
    scribble(&mut scene, &mut fastrand::Rng::with_seed(8), 10);
    show(&mut terminal, &wire, &mut parser, &scene);
    assert!(second_buffer_is_empty(&mut terminal));
    assert_eq!(difference(parser.screen(), &scene), None);
    terminal.resize(Rect::new(0, 0, 50, 6)).unwrap();
    parser.process(&wire.take());
    show(&mut terminal, &wire, &mut parser, &scene);
    assert!(second_buffer_is_empty(&mut terminal));
    assert_eq!(difference(parser.screen(), &scene), None);
}

/// The whole-frame path steps over runs of unchanged cells in a loop of its own
/// (`Encoder::encode_frame`): frame after frame it must send byte for byte what the
/// cell-by-cell path (`Backend::draw`, as ratatui hands cells) sends for the same frames.
#[test]
fn a_whole_frame_sends_what_its_cells_given_one_by_one_send() {
    use ratatui::backend::Backend;
    let mut rng = fastrand::Rng::with_seed(7);
    let mut sent = 0;
    for round in 0..20 {
        let size = Size::new(rng.u16(4..40), rng.u16(1..10));
        let (mut whole, whole_wire, mut parser) = screen(size);
        let by_cell_wire = Wire::default();
        let mut by_cell = Compact::with_size(by_cell_wire.clone(), size);
        let mut scene = Buffer::empty(Rect::new(0, 0, size.width, size.height));
        for frame in 0..40 {
            let runs = rng.usize(0..6);
            scribble(&mut scene, &mut rng, runs);
            let bytes = show(&mut whole, &whole_wire, &mut parser, &scene);
            by_cell.draw(crate::terminal::frame_cells(&scene)).unwrap();
            by_cell.hide_cursor().unwrap();
            let by_cell_bytes = by_cell_wire.take();
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(&by_cell_bytes),
                "round {round}, frame {frame}"
            );
            sent += bytes.len();
        }
    }
    assert!(
        sent > 10_000,
        "the frames changed too little to compare: {sent} bytes"
    );
}
