//! Mouse input (opt-in with `--mouse`): a click on a column title sorts by it (again:
//! reverses), a click on a row selects it, a click on a GPU focuses it (again: unfocuses),
//! the wheel scrolls the table or the GPU list. Matches against the same geometry the UI
//! draws with (`ui::layout`, `ui::gpus::gpu_rects`, `ui::table::column_spans`), so a click
//! lands where the user sees it. Pure.

use ratatui::layout::{Position, Rect};

use super::{Action, Panel, State, interact};
use crate::ui::layout::{self, Areas};

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

pub(super) fn apply(state: &mut State, m: MouseInput) {
    if state.dialog.is_some() || state.show_help {
        return;
    }
    let (w, h) = state.viewport;
    let screen = Rect::new(0, 0, w, h);
    if layout::too_small(screen) {
        return;
    }
    let areas = layout::areas(state, screen);
    let at = Position::new(m.column, m.row);
    if areas.gpus.contains(at) {
        gpu_area(state, &areas, at, m.kind);
    } else if areas.table.contains(at) {
        table_area(state, &areas, at, m.kind);
    }
}

fn repeat(state: &mut State, action: Action, times: usize) {
    for _ in 0..times {
        interact::apply_action(state, action);
    }
}

fn gpu_area(state: &mut State, areas: &Areas, at: Position, kind: MouseKind) {
    match kind {
        MouseKind::WheelUp => repeat(state, Action::ScrollGpusUp, 1),
        MouseKind::WheelDown => repeat(state, Action::ScrollGpusDown, 1),
        MouseKind::LeftClick => {
            let hit = crate::ui::gpus::gpu_rects(state, areas)
                .into_iter()
                .find(|(_, r)| r.contains(at))
                .map(|(i, _)| state.gpus[i].id.clone());
            if let Some(id) = hit {
                let mut view = state.procs.view.clone();
                // Clicking the focused GPU again shows every GPU's processes.
                view.gpu = if state.focus() == Some(&id) {
                    None
                } else {
                    Some(id)
                };
                state.procs.set_view(view);
                state.panel = Panel::Processes;
            }
        }
    }
}

fn table_area(state: &mut State, areas: &Areas, at: Position, kind: MouseKind) {
    match kind {
        MouseKind::WheelUp => repeat(state, Action::SelectUp, WHEEL_STEP),
        MouseKind::WheelDown => repeat(state, Action::SelectDown, WHEEL_STEP),
        MouseKind::LeftClick => {
            // Row 0 is the title border, row 1 the column titles, then the rows.
            let line = at.y - areas.table.y;
            if line == 1 && state.panel == Panel::Processes {
                click_header(state, areas.table, at.x);
            } else if line >= 2 {
                let visible = usize::from(line - 2);
                match state.panel {
                    Panel::Processes => {
                        let first = layout::table_first_row(state);
                        let index = first + visible;
                        if index < state.procs.len() {
                            state.procs.select_index(index);
                        }
                    }
                    Panel::Users => {
                        let first = layout::users_first_row(state);
                        if first + visible < state.user_rows().len() {
                            state.user_selected = first + visible;
                        }
                    }
                }
            }
        }
    }
}

fn click_header(state: &mut State, table: Rect, x: u16) {
    let spans = crate::ui::table::column_spans(&crate::ui::table::visible_columns(state), table);
    let Some(key) = spans
        .iter()
        .find(|(_, r)| x >= r.x && x < r.right())
        .and_then(|(c, _)| c.sort_key())
    else {
        return;
    };
    if state.procs.sort == key {
        state.procs.set_sort(key, state.procs.dir.flipped());
    } else {
        state.procs.set_sort(key, key.default_direction());
    }
}
