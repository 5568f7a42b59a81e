//! Text written straight into a buffer's cells, cell for cell and style for style as
//! ratatui's `Line` (`put_line`) and `Paragraph` (`put_lines`) draw it, for what is drawn
//! every frame: the process table, the GPU panels, the header and footer lines.
//!
//! Most of that text is narrow characters (ASCII, `°`, `·`, `×`, arrows, box drawing, bar
//! blocks), each a grapheme of its own one cell wide ([`narrow`]): a span of them is written
//! a character to a cell with its style set once for the span, without ratatui's grapheme
//! segmentation and width lookup per character, nor `Paragraph`'s line truncator and its
//! styling of the whole area. Anything else (a wide character, a combining mark, an emoji)
//! goes through ratatui's own graphemes, span by span.

use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

/// Whether `c` takes one cell and is a grapheme of its own whatever stands beside it: no
/// control, format or combining character, no joiner, nothing East Asian wide, no emoji
/// (`narrow_characters_are_one_cell_graphemes` checks every one against ratatui's own
/// segmentation and widths).
pub fn narrow(c: char) -> bool {
    matches!(c,
        ' '..='~'
        // Latin-1's letters and signs (`°`, `·`, `×`), but not the soft hyphen (a format
        // character).
        | '\u{A0}'..='\u{AC}' | '\u{AE}'..='\u{FF}'
        // Dashes, quotes, `…`, `•`, `†`; not the line separators and direction marks after.
        | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205E}'
        // Arrows (`↑↓`) and mathematical operators.
        | '\u{2190}'..='\u{22FF}'
        // Box drawing, block elements (bars, sparklines) and geometric shapes (`▶`), up to
        // the emoji squares at U+25FD.
        | '\u{2500}'..='\u{25FC}'
    )
}

/// The width of `text` in cells when it is all narrow characters (one cell each).
fn narrow_width(text: &str) -> Option<usize> {
    if text.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return Some(text.len());
    }
    let mut n = 0;
    for c in text.chars() {
        if !narrow(c) {
            return None;
        }
        n += 1;
    }
    Some(n)
}

/// The width of a line in cells, as `Line::width` counts it (cheaply when narrow).
pub fn line_width(line: &Line) -> usize {
    line.spans
        .iter()
        .map(|s| narrow_width(&s.content).unwrap_or_else(|| s.width()))
        .sum()
}

/// `Buffer::set_style`, which visits every cell even for the plain style that changes none,
/// and looks each one up by its position; here a row is one slice of cells (a 200-cell
/// row: 8.3 k instructions through `Buffer::set_style`).
pub fn restyle(buf: &mut Buffer, area: Rect, style: Style) {
    if style == Style::default() {
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    for y in area.top()..area.bottom() {
        let start = buf.index_of(area.x, y);
        for cell in &mut buf.content[start..start + usize::from(area.width)] {
            cell.set_style(style);
        }
    }
}

/// Writes `count` narrow characters of `text`, after its first `skip`, into the cells from
/// (`x`, `y`) on, each with `style`. The cells must be in the buffer.
fn put_narrow(
    buf: &mut Buffer,
    (x, y): (u16, u16),
    text: &str,
    skip: usize,
    count: usize,
    style: Style,
) {
    if count == 0 {
        // Nothing shown, and (x, y) may be just past the buffer's last column: a span
        // that filled the row exactly, then another (the filter prompt at 80 columns).
        return;
    }
    let start = buf.index_of(x, y);
    let mut cells = buf.content[start..start + count].iter_mut();
    // Patching in the plain style changes nothing: the symbols alone (table cells).
    let styled = style != Style::default();
    for (i, c) in text.char_indices().skip(skip) {
        let Some(cell) = cells.next() else { break };
        cell.set_symbol(&text[i..i + c.len_utf8()]);
        if styled {
            cell.set_style(style);
        }
    }
}

/// `put_line` for a line of one unstyled span, left- or right-aligned: a table cell,
/// drawn without building the line (a `Line` per cell was 750 instructions to make and as
/// many to drop).
pub fn put_text(text: &str, right: bool, area: Rect, buf: &mut Buffer) {
    let Some(width) = narrow_width(text) else {
        let line = Line::from(text);
        let line = if right { line.right_aligned() } else { line };
        return line.render(area, buf);
    };
    let area = area.intersection(buf.area);
    if area.is_empty() || width == 0 {
        return;
    }
    let room = usize::from(area.width);
    let alignment = if right {
        Alignment::Right
    } else {
        Alignment::Left
    };
    let (indent, skip) = placed(width, room, Some(alignment));
    let shown = (width - skip).min(room - indent);
    let at = (area.x + indent as u16, area.y);
    put_narrow(buf, at, text, skip, shown, Style::default());
}

/// Draws `line` in the one-line `area` as `Line`'s own rendering does, cell for cell: its
/// style over the area, then its spans where its alignment puts them (a line too long for
/// the area loses its right end, a right-aligned one its left). A line with anything but
/// narrow characters is drawn by ratatui.
pub fn put_line(line: &Line, area: Rect, buf: &mut Buffer) {
    // A line of one span (most table cells) is measured once; others twice (here, then
    // span by span below) rather than kept in a vector: a table cell is a span or two of a
    // few characters, and this runs for every one.
    let single = match line.spans.as_slice() {
        [span] => Some(narrow_width(&span.content)),
        _ => None,
    };
    let width: Option<usize> = match single {
        Some(width) => width,
        None => line.spans.iter().map(|s| narrow_width(&s.content)).sum(),
    };
    let Some(width) = width else {
        return line.render(area, buf);
    };
    let area = area.intersection(buf.area);
    if area.is_empty() || width == 0 {
        return;
    }
    let area = Rect { height: 1, ..area };
    restyle(buf, area, line.style);
    let room = usize::from(area.width);
    let (indent, mut skip) = placed(width, room, line.alignment);
    let mut x = area.x + indent as u16;
    let mut left = room - indent;
    for span in &line.spans {
        let n = match single {
            Some(_) => width,
            None => narrow_width(&span.content).unwrap_or(0),
        };
        if skip >= n {
            skip -= n;
            continue;
        }
        let shown = (n - skip).min(left);
        put_narrow(buf, (x, area.y), &span.content, skip, shown, span.style);
        skip = 0;
        x += shown as u16;
        left -= shown;
        if left == 0 {
            break;
        }
    }
}

/// Where a line `width` cells wide goes in `room` cells as `Line` places it: the cells left
/// blank before it, and the cells of it cut off at its start (a line too long loses its
/// right end, a right-aligned one its left, a centred one both).
fn placed(width: usize, room: usize, alignment: Option<Alignment>) -> (usize, usize) {
    match alignment {
        Some(Alignment::Right) if width <= room => (room - width, 0),
        Some(Alignment::Right) => (0, width - room),
        Some(Alignment::Center) if width <= room => ((room - width) / 2, 0),
        Some(Alignment::Center) => (0, (width - room) / 2),
        Some(Alignment::Left) | None => (0, 0),
    }
}

/// Draws `lines` into `area` from its top, one per row, as `Paragraph::new(lines)` does
/// (no block, no wrapping, no scrolling): each line cut at the area's width, where a
/// character that does not fit whole ends it, and its style set on its characters only.
pub fn put_lines(lines: &[Line], area: Rect, buf: &mut Buffer) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    for (line, row) in lines.iter().zip(area.rows()) {
        put_paragraph_line(line, row, buf);
    }
}

/// One of `put_lines`'s lines in its row, which is in the buffer and not empty.
fn put_paragraph_line(line: &Line, row: Rect, buf: &mut Buffer) {
    if !matches!(line.alignment, None | Some(Alignment::Left)) {
        // Placed by its width after the cut: not in any panel; the paragraph places it.
        return Paragraph::new(line.clone()).render(row, buf);
    }
    let room = usize::from(row.width);
    let mut x = 0;
    for span in &line.spans {
        if let Some(n) = narrow_width(&span.content) {
            let shown = n.min(room - x);
            let style = line.style.patch(span.style);
            put_narrow(
                buf,
                (row.x + x as u16, row.y),
                &span.content,
                0,
                shown,
                style,
            );
            x += shown;
            if shown < n {
                return;
            }
            continue;
        }
        // `Paragraph`'s truncator: a grapheme wider than the whole row is left out, one
        // that does not fit in what is left ends the line, zero-width ones take no cell.
        for g in span.styled_graphemes(line.style) {
            let w = usize::from(g.symbol.cell_width());
            if w > room {
                continue;
            }
            if x + w > room {
                return;
            }
            if w > 0 {
                buf[(row.x + x as u16, row.y)]
                    .set_symbol(g.symbol)
                    .set_style(g.style);
                x += w;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Span;

    use super::*;

    fn candidates() -> impl Iterator<Item = char> {
        (0..0x3000_u32)
            .filter_map(char::from_u32)
            .filter(|c| narrow(*c))
    }

    /// How many graphemes ratatui makes of `text`.
    fn graphemes(text: &str) -> usize {
        Span::raw(text).styled_graphemes(Style::default()).count()
    }

    #[test]
    fn narrow_characters_are_one_cell_graphemes() {
        for c in candidates() {
            let s = c.to_string();
            assert_eq!(s.as_str().cell_width(), 1, "{c:?} U+{:04X}", c as u32);
            assert_eq!(graphemes(&s), 1, "{c:?}");
            // Joined to nothing before it (not a mark, joiner or extender), nothing after it
            // (not a prefix), nor to itself (not a regional indicator or Hangul jamo): the
            // only ways the segmentation rules join two characters.
            for pair in [format!("a{c}"), format!("{c}a"), format!("{c}{c}")] {
                assert_eq!(graphemes(&pair), 2, "{pair:?}");
            }
        }
    }

    fn lines() -> Vec<Line<'static>> {
        let red = Style::new().fg(Color::Red);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        vec![
            Line::from("plain ascii text"),
            Line::styled("76°C (slow 94) · ↑1.2G/s ↓3.3G/s", red),
            Line::from(vec![
                Span::styled("GPU ", Style::new().dark_gray()),
                Span::styled("█████▌░░░", Style::new().green()),
                Span::raw("  97%"),
            ])
            .style(bold),
            // Wide characters, a combining accent, an emoji, a zero-width joiner.
            Line::from(vec![
                Span::styled("名前 user ", Style::new().cyan()),
                Span::raw("cafe\u{301} 👩\u{200d}🔬 ok"),
                Span::styled(" 漢字", Style::new().reversed()),
            ]),
            Line::from(vec![Span::raw(""), Span::styled("x", red), Span::raw("")]),
            Line::from("a much longer line than most of the areas it is drawn into here"),
            Line::from("right ⚠ 漢").right_aligned(),
            Line::from("centred · text").centered(),
            Line::default(),
        ]
    }

    fn empty(area: Rect) -> Buffer {
        // A border of cells around the area: nothing may be drawn there.
        let mut buf = Buffer::empty(Rect::new(0, 0, area.right() + 2, area.bottom() + 2));
        buf.set_style(buf.area, Style::new().on_blue());
        buf
    }

    #[test]
    fn put_lines_draws_what_a_paragraph_drew() {
        for width in [0, 1, 2, 3, 5, 9, 16, 17, 30, 80] {
            for height in [1, 3, 12] {
                let area = Rect::new(2, 1, width, height);
                let mut by_paragraph = empty(area);
                Paragraph::new(lines()).render(area, &mut by_paragraph);
                let mut by_cells = empty(area);
                put_lines(&lines(), area, &mut by_cells);
                assert_eq!(by_cells, by_paragraph, "{area:?}");
            }
        }
    }

    /// A row that ends at the buffer's own edge, filled exactly by one span with more to
    /// come (narrow, empty, wide): nothing is written past it. The cases above keep a
    /// margin of cells round the area, so a write one past the row went unseen there and
    /// panicked on the screen (`index outside of buffer`, 80x24 with the filter prompt).
    #[test]
    fn lines_that_fill_the_row_to_the_buffers_edge_draw_as_ratatui_draws_them() {
        let spans = |first: &'static str| {
            Line::from(vec![
                Span::raw(first),
                Span::raw(""),
                Span::styled("█", Style::new().green()),
                Span::raw("  Enter: keep · Esc: clear"),
                Span::raw("日本"),
            ])
        };
        for width in 0..=40u16 {
            for first in ["", "x", "12345", "0123456789"] {
                let line = spans(first);
                let area = Rect::new(0, 0, width, 1);
                let mut by_paragraph = Buffer::empty(area);
                Paragraph::new(line.clone()).render(area, &mut by_paragraph);
                let mut by_cells = Buffer::empty(area);
                put_lines(std::slice::from_ref(&line), area, &mut by_cells);
                assert_eq!(by_cells, by_paragraph, "{line:?} in {area:?}");
                let mut by_line = Buffer::empty(area);
                (&line).render(area, &mut by_line);
                let mut by_cells = Buffer::empty(area);
                put_line(&line, area, &mut by_cells);
                assert_eq!(by_cells, by_line, "{line:?} in {area:?}");
            }
        }
    }

    #[test]
    fn put_line_draws_what_a_line_drew() {
        for line in lines() {
            for line in [
                line.clone(),
                line.clone().left_aligned(),
                line.clone().right_aligned(),
                line.clone().centered(),
            ] {
                for width in [0, 1, 2, 3, 5, 9, 16, 17, 30, 80] {
                    let area = Rect::new(3, 1, width, 2);
                    let mut by_line = empty(area);
                    (&line).render(area, &mut by_line);
                    let mut by_cells = empty(area);
                    put_line(&line, area, &mut by_cells);
                    assert_eq!(by_cells, by_line, "{line:?} in {area:?}");
                }
            }
        }
    }

    #[test]
    fn put_text_draws_what_a_plain_line_drew() {
        let texts = lines()
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .chain(["".to_string()])
            .collect::<Vec<_>>();
        for text in &texts {
            for right in [false, true] {
                let line = Line::from(text.as_str());
                let line = if right { line.right_aligned() } else { line };
                for width in [0, 1, 2, 3, 5, 9, 16, 17, 30, 80] {
                    let area = Rect::new(3, 1, width, 1);
                    let mut by_line = empty(area);
                    (&line).render(area, &mut by_line);
                    let mut by_text = empty(area);
                    put_text(text, right, area, &mut by_text);
                    assert_eq!(by_text, by_line, "{text:?} right {right} in {area:?}");
                }
            }
        }
    }

    #[test]
    fn restyle_styles_as_the_buffer_does() {
        let styles = [
            Style::default(),
            Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            Style::new()
                .bg(Color::Rgb(1, 2, 3))
                .remove_modifier(Modifier::BOLD),
        ];
        let base = Rect::new(2, 1, 10, 4);
        for style in styles {
            // Inside, overlapping the edge, outside, and empty.
            for area in [
                Rect::new(3, 2, 5, 2),
                Rect::new(8, 0, 20, 9),
                Rect::new(40, 40, 3, 3),
                Rect::new(3, 2, 0, 2),
            ] {
                let mut by_buffer = empty(base);
                by_buffer.set_style(area, style);
                let mut by_restyle = empty(base);
                restyle(&mut by_restyle, area, style);
                assert_eq!(by_restyle, by_buffer, "{style:?} over {area:?}");
            }
        }
    }

    #[test]
    fn line_width_is_lines_own() {
        for line in lines() {
            assert_eq!(line_width(&line), line.width(), "{line:?}");
        }
    }
}
