//! Mouse hit-testing (opt-in with `--mouse`): turns a click or a wheel notch into the
//! `Action`s it means — a click on a column title sorts by it (again: reverses), on a row
//! selects it, on a GPU focuses it (again: unfocuses); the wheel scrolls the table or the
//! GPU list. Matches against the same geometry the UI draws with (`crate::layout`), so a
//! click lands where the user sees it. Reads the state; changes nothing (`update` does).

use ratatui::layout::{Position, Rect};

use crate::layout::{self, Areas};
use crate::state::{Action, Panel, State};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseKind {
    LeftClick,
    WheelUp,
    WheelDown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MouseInput {
    pub kind: MouseKind,
    pub column: u16,
    pub row: u16,
}

/// Rows the wheel moves per notch.
const WHEEL_STEP: usize = 3;

/// What a mouse event at this spot means, in order; nothing when it hits nothing.
pub fn actions(state: &State, m: MouseInput) -> Vec<Action> {
    // A detail view covers the screen: nothing of the main view underneath is clickable.
    if state.view.dialog.is_some()
        || state.view.show_help
        || state.view.show_warnings
        || state.view.show_env
        || state.view.detail.is_some()
    {
        return Vec::new();
    }
    let (w, h) = state.view.viewport;
    let screen = Rect::new(0, 0, w, h);
    if layout::too_small(screen) {
        return Vec::new();
    }
    let areas = layout::areas(&state.layout_input(), screen);
    let at = Position::new(m.column, m.row);
    if areas.gpus.contains(at) {
        gpu_area(state, &areas, at, m.kind)
    } else if areas.table.contains(at) {
        table_area(state, &areas, at, m.kind)
    } else {
        Vec::new()
    }
}

fn gpu_area(state: &State, areas: &Areas, at: Position, kind: MouseKind) -> Vec<Action> {
    match kind {
        MouseKind::WheelUp => vec![Action::ScrollGpusUp],
        MouseKind::WheelDown => vec![Action::ScrollGpusDown],
        MouseKind::LeftClick => layout::gpu_rects(areas, &state.gpu_lines(), state.view.gpu_scroll)
            .into_iter()
            .find(|(_, r)| r.contains(at))
            .map(|(i, _)| Action::ToggleFocusAt(i))
            .into_iter()
            .collect(),
    }
}

fn table_area(state: &State, areas: &Areas, at: Position, kind: MouseKind) -> Vec<Action> {
    match kind {
        MouseKind::WheelUp => vec![Action::SelectUp; WHEEL_STEP],
        MouseKind::WheelDown => vec![Action::SelectDown; WHEEL_STEP],
        MouseKind::LeftClick => {
            // Row 0 is the title border, row 1 the column titles, then the rows.
            let line = at.y - areas.table.y;
            if line == 1 && state.view.panel == Panel::Processes {
                return header_click(state, areas.table, at.x).into_iter().collect();
            }
            if line < 2 {
                return Vec::new();
            }
            let selected = match state.view.panel {
                Panel::Processes => state.model.procs().selected_index(),
                Panel::Users => Some(state.view.user_selected),
            };
            let first = layout::first_row(&state.layout_input(), selected);
            vec![Action::SelectRow(first + usize::from(line - 2))]
        }
    }
}

fn header_click(state: &State, table: Rect, x: u16) -> Option<Action> {
    let columns = state.visible_columns();
    layout::column_spans(&columns, state.host_width(), table)
        .iter()
        .find(|(_, r)| x >= r.x && x < r.right())
        .map(|(c, _)| Action::SortByOrReverse(c.sorts_as()))
}
