//! Opening and closing the detail views: Enter on a process row opens its view, `d` (or
//! Enter with no row to pick) the focused GPU's, Esc goes back. A process view follows the
//! process identity (PID + start time), not a row, so re-sorting or the process moving
//! GPUs never swaps what is shown. Part of `update`; pure.

use super::{Action, Detail, Panel, State};
use crate::history::procs::ProcId;

/// Enter in the process table: the selected process's view; with no row selected, the
/// focused GPU's.
pub(super) fn open_from_table(state: &mut State) {
    if state.view.panel != Panel::Processes {
        return;
    }
    match state.model.procs().selected_row() {
        Some(row) => {
            let id = ProcId {
                pid: row.key.pid,
                started: row.key.started,
            };
            state.view.detail = Some(Detail::Process(id));
        }
        None => open_gpu(state),
    }
}

/// `d`: the focused GPU's view, else the selected process's GPU's, else the first GPU's.
pub(super) fn open_gpu(state: &mut State) {
    let id = state
        .focus()
        .cloned()
        .or_else(|| {
            state
                .model
                .procs()
                .selected_row()
                .map(|r| r.key.gpu.clone())
        })
        .or_else(|| state.model.gpus().first().map(|g| g.id.clone()));
    match id {
        Some(id) => state.view.detail = Some(Detail::Gpu(id)),
        None => state.view.status = Some("no GPU to show yet".into()),
    }
}

/// What still works while a detail view is open: quitting, help, pausing, signals to the
/// process shown, switching GPUs, and back. Table keys would move a selection no one sees.
pub(super) fn allowed(action: Action) -> bool {
    matches!(
        action,
        Action::Quit
            | Action::ToggleHelp
            | Action::Back
            | Action::TogglePause
            | Action::Signal(_)
            | Action::Confirm
            | Action::Cancel
            | Action::FocusGpu(_)
            | Action::FocusNext
            | Action::FocusPrev
            | Action::GpuDetail
            | Action::SeekBack
            | Action::SeekForward
            | Action::SpeedDown
            | Action::SpeedUp
    )
}

/// After the focus moved (a digit, Tab): a GPU view shows the newly focused GPU.
pub(super) fn follow_focus(state: &mut State) {
    if let (Some(Detail::Gpu(_)), Some(id)) = (&state.view.detail, state.focus()) {
        state.view.detail = Some(Detail::Gpu(id.clone()));
    }
}

/// When a process view is open, the table's selection is put on its process (on any of
/// its GPUs), so a signal key acts on the process shown and Esc returns to its row.
pub(super) fn select_shown(state: &mut State) {
    let Some(Detail::Process(id)) = &state.view.detail else {
        return;
    };
    let on_it =
        |r: &crate::model::procs::ProcRow| r.key.pid == id.pid && r.key.started == id.started;
    let table = state.model.procs();
    if table.selected_row().is_some_and(on_it) {
        return;
    }
    let found = table.rows().position(on_it);
    if let Some(i) = found {
        state.model.procs_mut().select_index(i);
    }
}
