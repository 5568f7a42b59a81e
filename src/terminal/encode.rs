//! Turns a frame into the fewest bytes an xterm-compatible terminal needs to show it. Each
//! cell is first compared with the shadow copy of the screen (`shadow`: what the terminal
//! shows now, and ratatui's rules for which cells to send), so the encoder can be handed
//! every cell of a frame and sends only the changed ones. ratatui's crossterm backend starts
//! every run of changed cells with an absolute cursor move (`ESC[23;134H`, 10 bytes) and
//! every colour change with a 256-colour pair (`ESC[38;5;9;49m`, 13 bytes); at 1 Hz with
//! scrolling charts those were two thirds of what reached the terminal. Here each move is
//! the shortest that gets there from where the cursor is known to be (`\r`, `ESC[5C`,
//! `ESC[134G`, `\n`, or the absolute one), each style change sends only what changed with
//! the 16-colour codes (`ESC[91m`), and a gap between two changed cells on a row is re-sent
//! from the shadow when that costs fewer bytes than the move over it.

use ratatui::buffer::{Cell, CellDiffOption};
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier};

use super::shadow::{Shadow, Verdict, Walk};

/// The 16 colours written by their own SGR codes (30–37, 90–97), in code order: every
/// other colour takes the longer 256-colour or RGB form. Tests draw with these.
pub const NAMED: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];

/// The style the terminal draws with: what an SGR sequence sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pen {
    fg: Color,
    bg: Color,
    modifier: Modifier,
}

/// The terminal's state after `ESC[m`.
const PLAIN: Pen = Pen {
    fg: Color::Reset,
    bg: Color::Reset,
    modifier: Modifier::empty(),
};

impl Pen {
    fn of(cell: &Cell) -> Pen {
        Pen {
            fg: cell.fg,
            bg: cell.bg,
            modifier: cell.modifier,
        }
    }
}

/// Where the cursor is known to be. A column is known only after a move or after printing
/// a character whose width the terminal surely agrees with; the row is known after any
/// move (printing never changes it: nothing is printed past the last column).
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    row: Option<u16>,
    col: Option<u16>,
}

/// What one pass over a frame's cells carries from cell to cell.
struct Pass {
    walk: Walk,
    cursor: Cursor,
    pen: Pen,
    /// The bytes of a gap re-sent from the shadow (`refill`), reused.
    gap: Vec<u8>,
}

impl Default for Pass {
    fn default() -> Self {
        Pass {
            walk: Walk::default(),
            cursor: Cursor::default(),
            pen: PLAIN,
            gap: Vec::new(),
        }
    }
}

/// Every cell of `frame` with its position, row by row (what `Backend::draw` is given).
pub fn frame_cells(frame: &ratatui::buffer::Buffer) -> impl Iterator<Item = (u16, u16, &Cell)> {
    let area = frame.area;
    let rows = (area.top()..area.bottom())
        .flat_map(move |y| (area.left()..area.right()).map(move |x| (x, y)));
    rows.zip(&frame.content).map(|((x, y), cell)| (x, y, cell))
}

/// The screen as the terminal shows it, and the encoding of changes to it.
#[derive(Default)]
pub struct Encoder {
    shadow: Shadow,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder {
            shadow: Shadow::new(),
        }
    }

    /// The terminal is now `area` big (see [`Shadow::fit`]).
    pub fn fit(&mut self, area: Rect) {
        self.shadow.fit(area);
    }

    /// The whole screen was cleared: blank cells in the default style.
    pub fn cleared(&mut self) {
        self.shadow.cleared();
    }

    /// Something other than this encoder changed part of the screen: until a whole frame
    /// is drawn, every cell given is sent and gaps are never re-sent from the shadow.
    pub fn forget(&mut self) {
        self.shadow.forget();
    }

    /// Appends to `out` what makes the terminal show `cells`, given row by row: every
    /// cell of a frame (the TUI's way: only the changed ones are sent) or only changed ones
    /// (ratatui's diff). Starts from an unknown cursor and ends with the default style, so
    /// whatever is written between frames (cursor, clears) sees a plain terminal.
    pub fn encode<'a>(
        &mut self,
        cells: impl Iterator<Item = (u16, u16, &'a Cell)>,
        out: &mut Vec<u8>,
    ) {
        let area = self.shadow.area();
        let mut pass = Pass::default();
        for (x, y, cell) in cells {
            // A frame laid out before a resize can hold cells past the terminal's edge:
            // moving there would land on the last column and draw them over it.
            if !area.contains(Position::new(x, y)) {
                continue;
            }
            // Not `Buffer::index_of`: a call per cell, and the area is checked above.
            let i = usize::from(y - area.y) * usize::from(area.width) + usize::from(x - area.x);
            self.encode_cell(&mut pass, (x, y), i, cell, out);
        }
        self.finish(pass, out);
    }

    /// [`Encoder::encode`] of a whole frame, which the TUI draws every time: when the frame
    /// is the screen's size its cells are the shadow's, index for index, so the runs of
    /// unchanged cells (most of a frame) are stepped over in one tight loop
    /// ([`Shadow::skip_shown`]) instead of one trip each through the general path, which
    /// cost ~135 instructions an unchanged cell (callgrind, 8 GPUs at 200x50, issue 25).
    /// The same cells are sent either way.
    pub fn encode_frame(&mut self, frame: &ratatui::buffer::Buffer, out: &mut Vec<u8>) {
        let area = self.shadow.area();
        if frame.area != area || frame.content.len() != area.area() as usize {
            return self.encode(frame_cells(frame), out);
        }
        let width = usize::from(area.width);
        let cells = &frame.content[..];
        let mut pass = Pass::default();
        let mut i = 0;
        loop {
            i = self.shadow.skip_shown(&mut pass.walk, cells, i);
            let Some(cell) = cells.get(i) else { break };
            let (x, y) = (area.x + (i % width) as u16, area.y + (i / width) as u16);
            self.encode_cell(&mut pass, (x, y), i, cell, out);
            i += 1;
        }
        self.finish(pass, out);
    }

    /// One cell of a frame, the `i`th of the screen at (`x`, `y`): compared with the
    /// shadow, and written when it must be.
    #[inline(always)]
    fn encode_cell(
        &mut self,
        pass: &mut Pass,
        (x, y): (u16, u16),
        i: usize,
        cell: &Cell,
        out: &mut Vec<u8>,
    ) {
        match self.shadow.verdict(&mut pass.walk, i, cell) {
            Verdict::Shown => return,
            Verdict::Hidden => {
                self.shadow.store(i, cell);
                return;
            }
            Verdict::Send => {}
        }
        let area = self.shadow.area();
        let Pass {
            cursor, pen, gap, ..
        } = pass;
        let target = Pen::of(cell);
        if !(cursor.row == Some(y) && cursor.col == Some(x)) {
            let moved = move_to(*cursor, x, y);
            let by_move = moved.len() + sgr_len(*pen, target);
            match self.refill(*cursor, (x, y), (*pen, target), by_move, gap) {
                Some(gap_pen) => {
                    out.extend_from_slice(gap);
                    *pen = gap_pen;
                }
                None => out.extend_from_slice(moved.bytes()),
            }
        }
        out.extend_from_slice(sgr(*pen, target).bytes());
        *pen = target;
        out.extend_from_slice(shown_symbol(cell.symbol()).as_bytes());
        *cursor = after_printing(cell, x, y, area);
        self.shadow.written(i, cell);
    }

    /// The end of a pass: the shadow learns what the walk saw, and the default style is
    /// back for whatever is written next.
    fn finish(&mut self, pass: Pass, out: &mut Vec<u8>) {
        self.shadow.finish(pass.walk);
        if pass.pen != PLAIN {
            out.extend_from_slice(b"\x1b[m");
        }
    }

    /// The bytes that re-send the unchanged cells between the cursor and `x` on row `y`
    /// (into `gap`), and the pen they leave, when that and the style change into the next
    /// cell (`target`) are shorter than `by_move` bytes.
    fn refill(
        &self,
        cursor: Cursor,
        (x, y): (u16, u16),
        (pen, target): (Pen, Pen),
        by_move: usize,
        gap: &mut Vec<u8>,
    ) -> Option<Pen> {
        let from = cursor.col?;
        // Every re-sent cell costs at least a byte: a gap as long as the move never wins.
        if !self.shadow.known()
            || cursor.row != Some(y)
            || x <= from
            || usize::from(x - from) >= by_move
        {
            return None;
        }
        gap.clear();
        let mut gap_pen = pen;
        for gx in from..x {
            // Only cells the terminal surely draws one column wide: re-sending half of a
            // wide character, or a character of disputed width, would shift the row.
            let (c, look) = self.shadow.plain_char(gx, y)?;
            if !surely_narrow_char(c) {
                return None;
            }
            let look_pen = Pen {
                fg: look.fg,
                bg: look.bg,
                modifier: look.modifier,
            };
            gap.extend_from_slice(sgr(gap_pen, look_pen).bytes());
            gap_pen = look_pen;
            gap.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            if gap.len() >= by_move {
                return None;
            }
        }
        (gap.len() + sgr_len(gap_pen, target) < by_move).then_some(gap_pen)
    }
}

/// What is written for a cell's symbol: itself, except that a bidirectional override or
/// isolate (U+202A..U+202E, U+2066..U+2069) becomes U+FFFD. ratatui draws control
/// characters nowhere but keeps these, and written raw they reorder what follows on the
/// line: a command line could show `exe.evil` as `live.exe`. The cell stays one column;
/// `--once` and the JSON show the character escaped instead.
fn shown_symbol(symbol: &str) -> &str {
    if symbol.chars().any(crate::text_safe::is_bidi_control) {
        "\u{fffd}"
    } else {
        symbol
    }
}

/// Where the cursor is after printing `cell` at (`x`, `y`).
fn after_printing(cell: &Cell, x: u16, y: u16, area: Rect) -> Cursor {
    let narrow = cell.diff_option == CellDiffOption::None && surely_narrow(cell.symbol());
    // After the last column the terminal holds a pending wrap: the column is not x + 1.
    let col = (narrow && x + 1 < area.right()).then_some(x + 1);
    Cursor { row: Some(y), col }
}

/// One character whose width every terminal takes as one column: ASCII and Latin text,
/// general punctuation, arrows, box drawing, block elements and braille (what the charts,
/// borders and tables are made of). Wide, combining and emoji characters are not.
pub(crate) fn surely_narrow(symbol: &str) -> bool {
    let mut chars = symbol.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return false;
    };
    surely_narrow_char(c)
}

/// [`surely_narrow`] for a symbol of one character.
fn surely_narrow_char(c: char) -> bool {
    let c = c as u32;
    matches!(c, 0x20..=0x7e | 0xa0..=0x2ff | 0x370..=0x10ff)
        || matches!(c, 0x2010..=0x2027 | 0x2030..=0x205e | 0x2190..=0x21ff)
        || matches!(c, 0x2500..=0x259f | 0x2800..=0x28ff)
}

/// One escape sequence (or a few) being composed, on the stack: the encoder runs for every
/// changed cell of every frame, and compares candidate sequences by length before writing
/// one, so none of this may allocate.
#[derive(Clone, Copy)]
pub(crate) struct Seq {
    buf: [u8; 128],
    len: usize,
}

impl Seq {
    const fn new() -> Seq {
        Seq {
            buf: [0; 128],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// A number in decimal.
    fn num(&mut self, n: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        let mut n = n;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.extend(&digits[i..]);
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Keeps whichever of the two is shorter.
    fn shortest(self, other: Seq) -> Seq {
        if other.len < self.len { other } else { self }
    }
}

/// The shortest sequence that takes the cursor from `cursor` to (`x`, `y`).
fn move_to(cursor: Cursor, x: u16, y: u16) -> Seq {
    let mut best = cup(x, y);
    if let Some(row) = cursor.row {
        if row == y {
            let mut c = Seq::new();
            column(cursor.col, x, &mut c);
            best = best.shortest(c);
        } else if y > row {
            // Line feeds (a raw terminal does not add a carriage return) or cursor-down;
            // neither scrolls, since the cursor is above the row it goes to. After a line
            // feed the column is set absolutely (a cooked terminal would have added `\r`).
            let n = y - row;
            if n <= 3 {
                let mut c = Seq::new();
                for _ in 0..n {
                    c.push(b'\n');
                }
                column(None, x, &mut c);
                best = best.shortest(c);
            }
            let mut c = Seq::new();
            csi_n(n, b'B', &mut c);
            column(cursor.col, x, &mut c);
            best = best.shortest(c);
        }
    }
    best
}

/// Moves along the current row to column `x` from `from` (if known).
fn column(from: Option<u16>, x: u16, out: &mut Seq) {
    match from {
        Some(c) if c == x => {}
        Some(c) if x > c && x - c < 100 => csi_n(x - c, b'C', out),
        _ if x == 0 => out.push(b'\r'),
        _ => {
            out.extend(b"\x1b[");
            out.num(u32::from(x) + 1);
            out.push(b'G');
        }
    }
}

/// `ESC[nX`, with the 1 left out (it is the default).
fn csi_n(n: u16, command: u8, out: &mut Seq) {
    out.extend(b"\x1b[");
    if n != 1 {
        out.num(u32::from(n));
    }
    out.push(command);
}

/// The absolute move, with defaults left out.
fn cup(x: u16, y: u16) -> Seq {
    let mut out = Seq::new();
    out.extend(b"\x1b[");
    if (x, y) != (0, 0) {
        out.num(u32::from(y) + 1);
    }
    if x != 0 {
        out.push(b';');
        out.num(u32::from(x) + 1);
    }
    out.push(b'H');
    out
}

/// How many bytes `sgr` writes.
fn sgr_len(from: Pen, to: Pen) -> usize {
    sgr(from, to).len()
}

/// The attribute codes that switch modifiers on.
const ON: [(Modifier, u8); 9] = [
    (Modifier::BOLD, 1),
    (Modifier::DIM, 2),
    (Modifier::ITALIC, 3),
    (Modifier::UNDERLINED, 4),
    (Modifier::SLOW_BLINK, 5),
    (Modifier::RAPID_BLINK, 6),
    (Modifier::REVERSED, 7),
    (Modifier::HIDDEN, 8),
    (Modifier::CROSSED_OUT, 9),
];

/// The codes that switch them off; one code covers bold and dim, one both blinks.
const OFF: [(Modifier, u8); 7] = [
    (Modifier::BOLD.union(Modifier::DIM), 22),
    (Modifier::ITALIC, 23),
    (Modifier::UNDERLINED, 24),
    (Modifier::SLOW_BLINK.union(Modifier::RAPID_BLINK), 25),
    (Modifier::REVERSED, 27),
    (Modifier::HIDDEN, 28),
    (Modifier::CROSSED_OUT, 29),
];

/// SGR parameters, `;`-separated.
struct Params(Seq);

impl Params {
    fn code(&mut self, code: u32) {
        if self.0.len() > 0 {
            self.0.push(b';');
        }
        self.0.num(code);
    }

    fn modifiers(&mut self, modifiers: Modifier) {
        for (m, code) in ON {
            if modifiers.contains(m) {
                self.code(u32::from(code));
            }
        }
    }

    /// The 16 named colours by their own codes (`31`, `91`), others as 256-colour or RGB.
    fn color(&mut self, color: Color, background: bool) {
        let base = if background { 40 } else { 30 };
        let named = |i: u32| if i < 8 { base + i } else { base + 60 + i - 8 };
        let code = match color {
            Color::Reset => base + 9,
            Color::Black => named(0),
            Color::Red => named(1),
            Color::Green => named(2),
            Color::Yellow => named(3),
            Color::Blue => named(4),
            Color::Magenta => named(5),
            Color::Cyan => named(6),
            Color::Gray => named(7),
            Color::DarkGray => named(8),
            Color::LightRed => named(9),
            Color::LightGreen => named(10),
            Color::LightYellow => named(11),
            Color::LightBlue => named(12),
            Color::LightMagenta => named(13),
            Color::LightCyan => named(14),
            Color::White => named(15),
            Color::Indexed(i) => {
                self.code(base + 8);
                self.code(5);
                return self.code(u32::from(i));
            }
            Color::Rgb(r, g, b) => {
                self.code(base + 8);
                self.code(2);
                self.code(u32::from(r));
                self.code(u32::from(g));
                return self.code(u32::from(b));
            }
        };
        self.code(code);
    }
}

/// One SGR sequence that changes the pen from `from` to `to`: either only what changed,
/// or a reset and everything `to` has, whichever is shorter.
fn sgr(from: Pen, to: Pen) -> Seq {
    if from == to {
        return Seq::new();
    }
    let mut changes = Params(Seq::new());
    let mut on = to.modifier - from.modifier;
    let off = from.modifier - to.modifier;
    for (group, code) in OFF {
        if off.intersects(group) {
            changes.code(u32::from(code));
            // The shared code turned off its partner too: turn it back on if `to` has it.
            on |= to.modifier & group;
        }
    }
    changes.modifiers(on);
    if from.fg != to.fg {
        changes.color(to.fg, false);
    }
    if from.bg != to.bg {
        changes.color(to.bg, true);
    }
    // `ESC[0;1m` is `ESC[;1m`, and `ESC[0m` is `ESC[m`: the reset is an empty parameter.
    let mut reset = Params(Seq::new());
    reset.modifiers(to.modifier);
    if to.fg != Color::Reset {
        reset.color(to.fg, false);
    }
    if to.bg != Color::Reset {
        reset.color(to.bg, true);
    }
    let reset_len = reset.0.len() + usize::from(reset.0.len() > 0);
    let mut out = Seq::new();
    out.extend(b"\x1b[");
    if reset_len < changes.0.len() {
        if reset.0.len() > 0 {
            out.push(b';');
        }
        out.extend(reset.0.bytes());
    } else {
        out.extend(changes.0.bytes());
    }
    out.push(b'm');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::buffer::Buffer;
    use ratatui::style::Style;

    /// A terminal that understands exactly what a VT100/xterm does with the sequences the
    /// encoder may write (and panics on anything else): printing, `\r`, `\n`, CUP, CHA,
    /// CUF, CUD and SGR. The encoder's output is checked by replaying it here.
    struct Vt {
        screen: Buffer,
        x: u16,
        y: u16,
        pen: Pen,
    }

    impl Vt {
        fn new(area: Rect) -> Vt {
            Vt {
                screen: Buffer::empty(area),
                x: 0,
                y: 0,
                pen: PLAIN,
            }
        }

        fn feed(&mut self, bytes: &[u8]) {
            let text = std::str::from_utf8(bytes).expect("UTF-8");
            let mut chars = text.chars().peekable();
            let (w, h) = (self.screen.area.width, self.screen.area.height);
            while let Some(c) = chars.next() {
                match c {
                    '\r' => self.x = 0,
                    '\n' => self.y = (self.y + 1).min(h - 1),
                    '\x1b' => {
                        assert_eq!(chars.next(), Some('['));
                        let mut params = String::new();
                        let command = loop {
                            let c = chars.next().expect("a finished sequence");
                            if c.is_ascii_digit() || c == ';' {
                                params.push(c);
                            } else {
                                break c;
                            }
                        };
                        let nums: Vec<u16> = params
                            .split(';')
                            .map(|p| if p.is_empty() { 0 } else { p.parse().unwrap() })
                            .collect();
                        let n = |i: usize| nums.get(i).copied().filter(|n| *n > 0).unwrap_or(1);
                        match command {
                            'H' => {
                                self.y = (n(0) - 1).min(h - 1);
                                self.x = (n(1) - 1).min(w - 1);
                            }
                            'G' => self.x = (n(0) - 1).min(w - 1),
                            'C' => self.x = (self.x + n(0)).min(w - 1),
                            'B' => self.y = (self.y + n(0)).min(h - 1),
                            'm' => self.sgr(&nums),
                            other => panic!("unexpected sequence {other:?}"),
                        }
                    }
                    c => {
                        assert!(self.x < w, "printing past the edge");
                        let cell = &mut self.screen[(self.x, self.y)];
                        cell.set_char(c);
                        cell.fg = self.pen.fg;
                        cell.bg = self.pen.bg;
                        cell.modifier = self.pen.modifier;
                        self.x += 1;
                    }
                }
            }
        }

        fn sgr(&mut self, nums: &[u16]) {
            let mut i = 0;
            let color = |k: u16| match k {
                0..=7 => NAMED[k as usize],
                _ => NAMED[k as usize - 60 + 8],
            };
            while i < nums.len() {
                let p = &mut self.pen;
                match nums[i] {
                    0 => *p = PLAIN,
                    22 => p.modifier -= Modifier::BOLD | Modifier::DIM,
                    25 => p.modifier -= Modifier::SLOW_BLINK | Modifier::RAPID_BLINK,
                    23 => p.modifier -= Modifier::ITALIC,
                    24 => p.modifier -= Modifier::UNDERLINED,
                    27 => p.modifier -= Modifier::REVERSED,
                    28 => p.modifier -= Modifier::HIDDEN,
                    29 => p.modifier -= Modifier::CROSSED_OUT,
                    k @ 1..=9 => p.modifier |= ON[k as usize - 1].0,
                    39 => p.fg = Color::Reset,
                    49 => p.bg = Color::Reset,
                    k @ (30..=37 | 90..=97) => p.fg = color(k - 30),
                    k @ (40..=47 | 100..=107) => p.bg = color(k - 40),
                    k @ (38 | 48) => {
                        let c = if nums[i + 1] == 5 {
                            i += 2;
                            Color::Indexed(nums[i] as u8)
                        } else {
                            i += 4;
                            Color::Rgb(nums[i - 2] as u8, nums[i - 1] as u8, nums[i] as u8)
                        };
                        if k == 38 { p.fg = c } else { p.bg = c }
                    }
                    k => panic!("unexpected SGR {k}"),
                }
                i += 1;
            }
        }
    }

    fn random_style(rng: &mut fastrand::Rng) -> Style {
        let color = |rng: &mut fastrand::Rng| match rng.u8(0..20) {
            0..=3 => Color::Reset,
            k @ 4..=17 => NAMED[usize::from(k - 2)],
            18 => Color::Indexed(rng.u8(..)),
            _ => Color::Rgb(rng.u8(..), rng.u8(..), rng.u8(..)),
        };
        let mut modifier = Modifier::empty();
        for (m, _) in ON {
            if rng.u8(0..6) == 0 {
                modifier |= m;
            }
        }
        Style::new()
            .fg(color(rng))
            .bg(color(rng))
            .add_modifier(modifier)
    }

    /// A frame like the TUI's: mostly the previous one, with runs of changed cells (chart
    /// blocks, digits, box lines) in a few styles.
    fn next_frame(prev: &Buffer, rng: &mut fastrand::Rng, styles: &[Style]) -> Buffer {
        const SYMBOLS: [&str; 12] = ["a", "7", " ", "▁", "▄", "█", "─", "│", "⣿", "°", "…", "→"];
        let mut next = prev.clone();
        let area = prev.area;
        for _ in 0..rng.usize(0..40) {
            let (x, y) = (rng.u16(0..area.width), rng.u16(0..area.height));
            let style = styles[rng.usize(..styles.len())];
            for dx in 0..rng.u16(1..8) {
                if x + dx < area.width {
                    let cell = &mut next[(x + dx, y)];
                    cell.set_symbol(SYMBOLS[rng.usize(..SYMBOLS.len())]);
                    cell.set_style(style);
                }
            }
        }
        next
    }

    fn same_screen(shown: &Buffer, expected: &Buffer) -> Result<(), String> {
        for y in 0..expected.area.height {
            for x in 0..expected.area.width {
                let (a, b) = (&shown[(x, y)], &expected[(x, y)]);
                if a.symbol() != b.symbol() || Pen::of(a) != Pen::of(b) {
                    return Err(format!("({x}, {y}): shown {a:?}, expected {b:?}"));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn replayed_output_shows_every_frame_exactly() {
        let area = Rect::new(0, 0, 37, 9);
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..40 {
            let styles: Vec<Style> = (0..4).map(|_| random_style(&mut rng)).collect();
            let mut encoder = Encoder::new();
            encoder.fit(area);
            let mut vt = Vt::new(area);
            let mut prev = Buffer::empty(area);
            for frame in 0..30 {
                let next = next_frame(&prev, &mut rng, &styles);
                let mut out = Vec::new();
                encoder.encode(prev.diff(&next).into_iter(), &mut out);
                vt.feed(&out);
                if let Err(e) = same_screen(&vt.screen, &next) {
                    panic!(
                        "round {round}, frame {frame}: {e}\n{:?}",
                        String::from_utf8_lossy(&out)
                    );
                }
                assert_eq!(vt.pen, PLAIN, "each frame ends in the default style");
                prev = next;
            }
        }
    }

    fn encoded(cells: &[(u16, u16, Cell)], area: Rect) -> String {
        let mut encoder = Encoder::new();
        encoder.fit(area);
        let mut out = Vec::new();
        encoder.encode(cells.iter().map(|(x, y, c)| (*x, *y, c)), &mut out);
        String::from_utf8(out).unwrap()
    }

    fn styled(symbol: &str, style: Style) -> Cell {
        let mut cell = Cell::new("x");
        cell.set_symbol(symbol).set_style(style);
        cell
    }

    /// Hardening round 3 §18: a bidi override from a process's argv never reaches the
    /// terminal raw, where it would reverse the rest of the line.
    #[test]
    fn bidi_controls_are_never_written_raw() {
        let area = Rect::new(0, 0, 40, 2);
        let plain = Style::new();
        let cells = [
            (0, 0, styled("a", plain)),
            (1, 0, styled("\u{202e}", plain)),
            (2, 0, styled("\u{2066}", plain)),
            (3, 0, styled("b", plain)),
        ];
        let out = encoded(&cells, area);
        assert!(
            !out.contains('\u{202e}') && !out.contains('\u{2066}'),
            "{out:?}"
        );
        assert_eq!(out.matches('\u{fffd}').count(), 2, "{out:?}");
        assert!(out.contains('a') && out.ends_with('b'), "{out:?}");
    }

    #[test]
    fn moves_and_colours_take_their_shortest_forms() {
        let area = Rect::new(0, 0, 200, 50);
        let red = Style::new().fg(Color::LightRed);
        let plain = Style::new();
        let cells = [
            (130, 20, styled("▄", red)),
            // Same row, further right: a relative move, the colour kept.
            (140, 20, styled("█", red)),
            // Next row, column 0: a line feed and a carriage return.
            (0, 21, styled("a", plain)),
            // Two cells on: the gap (one space) is re-sent instead of a move.
            (2, 21, styled("b", plain)),
        ];
        assert_eq!(
            encoded(&cells, area),
            "\x1b[21;131H\x1b[91m▄\x1b[9C█\n\r\x1b[ma b"
        );
        // Bold on, then only bold off (22), with a background: no reset needed.
        let bold = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
        let cells = [
            (5, 0, styled("x", bold)),
            (
                6,
                0,
                styled("y", Style::new().fg(Color::Cyan).bg(Color::Blue)),
            ),
        ];
        assert_eq!(
            encoded(&cells, area),
            "\x1b[1;6H\x1b[1;36mx\x1b[22;44my\x1b[m"
        );
    }

    #[test]
    fn cells_past_the_edge_are_not_written_and_wide_characters_end_the_known_column() {
        let area = Rect::new(0, 0, 10, 2);
        let plain = Style::new();
        let cells = [
            (12, 0, styled("x", plain)),
            (3, 1, styled("コ", plain)),
            (5, 1, styled("a", plain)),
        ];
        // Nothing for the cell past the edge; after the wide one an absolute column.
        assert_eq!(encoded(&cells, area), "\x1b[2;4Hコ\x1b[6Ga");
    }

    #[test]
    fn after_the_last_column_the_next_cell_is_moved_to() {
        let area = Rect::new(0, 0, 10, 2);
        let plain = Style::new();
        let cells = [(9, 0, styled("x", plain)), (0, 1, styled("y", plain))];
        // The pending wrap after column 9 is never relied on.
        assert_eq!(encoded(&cells, area), "\x1b[1;10Hx\n\ry");
    }

    #[test]
    fn a_partial_clear_stops_gaps_being_resent() {
        let area = Rect::new(0, 0, 20, 1);
        let plain = Style::new();
        let mut encoder = Encoder::new();
        encoder.fit(area);
        encoder.forget();
        let cells = [(0, 0, styled("a", plain)), (2, 0, styled("b", plain))];
        let mut out = Vec::new();
        encoder.encode(cells.iter().map(|(x, y, c)| (*x, *y, c)), &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "\x1b[Ha\x1b[Cb");
        encoder.cleared();
        let mut out = Vec::new();
        encoder.encode(cells.iter().map(|(x, y, c)| (*x, *y, c)), &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "\x1b[Ha b");
    }
}
