//! The bottom line, shown only when it has something to say (`State::layout_input`
//! decides): the filter being typed (with its error, if any), the active filter, and the
//! last status message (signal results) or else the selected process's detail line.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::Theme;
use super::cells::put_lines;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let mut spans = Vec::new();
    if state.view.filter_editing || !state.view.filter_text.is_empty() {
        spans.push(Span::styled(" filter ", theme.header_bar));
        spans.push(Span::raw(format!(" {}", state.view.filter_text)));
        if state.view.filter_editing {
            spans.push(Span::styled("█", theme.text));
        }
        match &state.view.filter_error {
            Some(e) => spans.push(Span::styled(format!("  {e}"), theme.critical)),
            None if state.view.filter_editing => {
                spans.push(Span::styled("  Enter: keep · Esc: clear", theme.dim))
            }
            None => {}
        }
        spans.push(Span::raw("   "));
    }
    if let Some(status) = &state.view.status {
        spans.push(Span::styled(status.clone(), theme.warning));
    } else if let Some(row) = state.model.procs().selected_row() {
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let room = usize::from(area.width).saturating_sub(used);
        let (info, hints) =
            selected_with_hints(&super::detail::line(row, state.model.gpus()), room);
        spans.push(Span::styled(info, theme.dim));
        spans.push(Span::styled(hints, theme.text));
    }
    put_lines(&[Line::from(spans)], area, frame.buffer_mut());
}

/// What the keys do for the selected row, kept whole at the right end of the line.
const HINTS: &str = "Enter: details · e: environment";

/// The selected row's line cut to leave room for `HINTS` (right-aligned), so the keys that
/// open its views are readable at 80 columns however long the line is; without room for
/// both, the row's line alone (cut).
fn selected_with_hints(info: &str, room: usize) -> (String, String) {
    let hints = HINTS.chars().count();
    if room < hints + 12 {
        return (crate::present::format::truncate(info, room), String::new());
    }
    let info = crate::present::format::truncate(info, room - hints - 3);
    let pad = room - hints - info.chars().count();
    (format!("{info}{}", " ".repeat(pad)), HINTS.to_string())
}

#[cfg(test)]
mod tests {
    use super::selected_with_hints;

    #[test]
    fn the_hints_stay_whole_at_the_right_and_the_line_is_cut_for_them() {
        let long = "PID 4242 alice · slurm 48121 · GPU 0 (40 GiB) · CUDA_VISIBLE_DEVICES=0,1,2,3";
        let (info, hints) = selected_with_hints(long, 80);
        assert_eq!(hints, "Enter: details · e: environment");
        assert_eq!(info.chars().count() + hints.chars().count(), 80);
        assert!(info.trim_end().ends_with('…'), "{info:?}");
        let (info, hints) = selected_with_hints("PID 1 root", 80);
        assert!(info.starts_with("PID 1 root "), "{info:?}");
        assert_eq!(info.chars().count() + hints.chars().count(), 80);
        // Too narrow for both: the row's own line.
        assert_eq!(
            selected_with_hints(long, 20),
            (crate::present::format::truncate(long, 20), String::new())
        );
    }
}
