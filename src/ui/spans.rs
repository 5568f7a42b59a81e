//! Styled text cut to fit: the one formatting step that works on ratatui spans (the words
//! themselves come from `present`).

use ratatui::text::Span;

use crate::present::format::truncate;

/// Cuts a line of spans to `width` characters, ending with `…` when something was cut;
/// never inside a number (see [`truncate`]).
pub fn fit_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let len = span.content.chars().count();
        if used + len <= width {
            used += len;
            out.push(span);
        } else {
            let room = width.saturating_sub(used);
            if room > 0 {
                out.push(Span::styled(truncate(&span.content, room), span.style));
            }
            break;
        }
    }
    out
}
