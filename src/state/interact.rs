//! What each user action does to the state: selection, sorting, focus, the filter line,
//! the per-user table, and the signal confirmation flow. Part of `update`; pure.

use super::{Action, Effect, LayoutPref, Panel, ReplayCommand, State};
use super::{detail, signal};
use crate::model::filter::Filter;
use crate::model::procs::SortKey;

/// Routes an action to the helper for its group; what each group does is below.
pub(super) fn apply_action(state: &mut State, action: Action) -> Vec<Effect> {
    if !matches!(action, Action::FocusGpu(_)) {
        state.view.typed_gpu = None;
    }
    if overlay_page(state, action) {
        return Vec::new();
    }
    // Help opened over a detail view covers it, not the table: table keys stay inert.
    if state.view.detail.is_some() && !detail::allowed(action) {
        return Vec::new();
    }
    match action {
        Action::Quit => return vec![Effect::Quit],
        Action::Signal(_) | Action::Confirm | Action::Cancel => {
            return signal_action(state, action);
        }
        Action::OpenFilter
        | Action::FilterInput(_)
        | Action::FilterBackspace
        | Action::FilterDone
        | Action::FilterCancel => filter_action(state, action),
        Action::SeekBack | Action::SeekForward | Action::SpeedDown | Action::SpeedUp => {
            return replay_command(state, action);
        }
        // Space pauses the replay when replaying, else the live view (in `toggle_view`).
        Action::TogglePause if state.view.replay.is_some() => {
            return vec![Effect::Replay(ReplayCommand::TogglePause)];
        }
        Action::SortByOrReverse(_) => sort(state, action),
        other => narrow(state, other),
    }
    Vec::new()
}

/// The signal confirmation flow: ask (a dialog, or why not), confirm, cancel.
fn signal_action(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Signal(sig) => {
            let me = state.config.current_uid;
            match signal::request(
                state.model.procs().selected_row(),
                sig,
                state.config.readonly,
                me,
            ) {
                Ok(dialog) => state.view.dialog = Some(dialog),
                Err(why) => state.view.status = Some(why),
            }
        }
        Action::Confirm => return confirm(state),
        Action::Cancel => cancel(state),
        _ => {}
    }
    Vec::new()
}

fn cancel(state: &mut State) {
    if state.view.dialog.take().is_some() {
        state.view.status = Some("cancelled: no signal sent".into());
    }
}

/// Editing the filter line; every keystroke re-applies it.
fn filter_action(state: &mut State, action: Action) {
    match action {
        Action::OpenFilter => {
            state.view.filter_editing = true;
            state.view.panel = Panel::Processes;
        }
        Action::FilterInput(c) if push_filter_chars(state, std::iter::once(c)) => {
            apply_filter(state);
        }
        Action::FilterBackspace => {
            state.view.filter_text.pop();
            apply_filter(state);
        }
        Action::FilterDone => state.view.filter_editing = false,
        Action::FilterCancel => {
            state.view.filter_editing = false;
            state.view.filter_text.clear();
            apply_filter(state);
        }
        _ => {}
    }
}

/// Pasted text (bracketed paste: one event however long): into the filter line while it is
/// being edited, up to its cap and re-applied once; ignored otherwise, so pasted text is
/// never taken for commands.
pub(super) fn paste(state: &mut State, text: &str) {
    if state.view.filter_editing && push_filter_chars(state, text.chars()) {
        apply_filter(state);
    }
}

/// Appends to the filter line up to `MAX_FILTER_CHARS`, line breaks and other controls as
/// spaces; whether anything was added. Past the cap the status line says so.
fn push_filter_chars(state: &mut State, chars: impl Iterator<Item = char>) -> bool {
    use crate::model::filter::MAX_FILTER_CHARS;
    let mut room = MAX_FILTER_CHARS.saturating_sub(state.view.filter_text.chars().count());
    let mut added = false;
    for c in chars {
        if room == 0 {
            state.view.status = Some(format!(
                "the filter is limited to {MAX_FILTER_CHARS} characters"
            ));
            break;
        }
        state
            .view
            .filter_text
            .push(if c.is_control() { ' ' } else { c });
        room -= 1;
        added = true;
    }
    added
}

/// What the process table narrows to: a GPU, a user's rows, or back out; and which panel
/// or row is picked. Anything else goes on to `navigate`.
fn narrow(state: &mut State, action: Action) {
    match action {
        Action::Back => back(state),
        Action::ToggleUsers => {
            state.view.panel = match state.view.panel {
                Panel::Processes => Panel::Users,
                Panel::Users => Panel::Processes,
            }
        }
        // The per-user table picks a user; the process table opens the row's detail view.
        Action::Choose if state.view.panel == Panel::Users => choose_user(state),
        Action::Choose => detail::open_from_table(state),
        Action::GpuDetail => detail::open_gpu(state),
        Action::FocusGpu(digit) => {
            type_gpu_digit(state, digit);
            detail::follow_focus(state);
        }
        Action::ToggleFocusAt(position) => toggle_focus_at(state, position),
        Action::SelectRow(position) => select_row(state, position),
        Action::FocusNext => {
            step_focus(state, 1);
            detail::follow_focus(state);
        }
        Action::FocusPrev => {
            step_focus(state, -1);
            detail::follow_focus(state);
        }
        other => navigate(state, other),
    }
}

/// While help or the warnings list is open, paging keys turn its pages instead of moving
/// the selection behind it. Says whether the action was used up.
fn overlay_page(state: &mut State, action: Action) -> bool {
    if !(state.view.show_help || state.view.show_warnings) {
        return false;
    }
    let page = &mut state.view.overlay_page;
    match action {
        Action::PageDown | Action::SelectDown => *page = page.saturating_add(1).min(MAX_PAGES),
        Action::PageUp | Action::SelectUp => *page = page.saturating_sub(1),
        _ => return false,
    }
    true
}

/// More pages than any overlay has (the drawing clamps to the real count).
const MAX_PAGES: usize = 64;

/// A digit typed: it extends the GPU number being typed when that names a GPU (`1`, `2`
/// on a 16-GPU box is GPU 12), else starts a new one; the GPU it names is focused at
/// once, so a lone `1` still focuses GPU 1.
fn type_gpu_digit(state: &mut State, digit: u32) {
    let exists = |n: u32| state.model.gpus().iter().any(|g| g.index == n);
    let index = match state.view.typed_gpu {
        Some((n, _)) if n != 0 && exists(n * 10 + digit) => n * 10 + digit,
        _ => digit,
    };
    // Keep typing only while a longer number could still name a GPU.
    let longer = state
        .model
        .gpus()
        .iter()
        .any(|g| g.index >= index * 10 && index != 0);
    state.view.typed_gpu = longer.then_some((index, 0));
    focus_gpu(state, index);
}

fn focus_gpu(state: &mut State, index: u32) {
    let id = state
        .model
        .gpus()
        .iter()
        .find(|g| g.index == index)
        .map(|g| g.id.clone());
    match id {
        Some(id) => set_focus(state, Some(id)),
        None => state.view.status = Some(format!("no GPU {index} here")),
    }
}

/// Selection, sorting and layout: the actions that act on whichever table is showing.
fn navigate(state: &mut State, action: Action) {
    // Runs for every action here, as it always has: it also keeps the user selection in
    // range when the per-user table shrank.
    move_user_selection(state, action);
    match action {
        _ if state.view.panel == Panel::Users && is_selection(action) => {}
        Action::SelectUp
        | Action::SelectDown
        | Action::PageUp
        | Action::PageDown
        | Action::SelectFirst
        | Action::SelectLast => move_proc_selection(state, action),
        Action::SortNext | Action::SortPrev | Action::SortReverse | Action::SortBy(_) => {
            sort(state, action)
        }
        other => toggle_view(state, other),
    }
}

/// Moves the per-user table's selection when it is showing (clamped to its rows).
fn move_user_selection(state: &mut State, action: Action) {
    if state.view.panel != Panel::Users {
        return;
    }
    let page = crate::layout::table_page_rows(&state.layout_input()) as isize;
    let n = state.model.user_rows().len();
    let last = n.saturating_sub(1) as isize;
    let at = state.view.user_selected as isize;
    let to = match action {
        Action::SelectUp => at - 1,
        Action::SelectDown => at + 1,
        Action::PageUp => at - page,
        Action::PageDown => at + page,
        Action::SelectFirst => 0,
        Action::SelectLast => last,
        _ => at,
    };
    state.view.user_selected = to.clamp(0, last.max(0)) as usize;
}

fn move_proc_selection(state: &mut State, action: Action) {
    let page = crate::layout::table_page_rows(&state.layout_input()) as isize;
    let table = state.model.procs_mut();
    match action {
        Action::SelectUp => table.move_selection(-1),
        Action::SelectDown => table.move_selection(1),
        Action::PageUp => table.move_selection(-page),
        Action::PageDown => table.move_selection(page),
        Action::SelectFirst => table.select_index(0),
        Action::SelectLast => table.select_last(),
        _ => {}
    }
}

/// The process table's sort: cycle, reverse, pick a column, or pick-or-reverse (a click).
fn sort(state: &mut State, action: Action) {
    // `s` cycles through the columns on screen: JOB only when some process has one.
    let any_job = state.job_column_shown();
    let shown = |key: SortKey| key != SortKey::Job || any_job;
    let table = state.model.procs_mut();
    match action {
        Action::SortNext | Action::SortPrev => {
            let step = if action == Action::SortNext {
                SortKey::next
            } else {
                SortKey::prev
            };
            let mut key = step(table.sort);
            while !shown(key) {
                key = step(key);
            }
            table.set_sort(key, key.default_direction());
        }
        Action::SortReverse => table.set_sort(table.sort, table.dir.flipped()),
        Action::SortBy(key) => table.set_sort(key, key.default_direction()),
        Action::SortByOrReverse(key) => {
            let dir = if table.sort == key {
                table.dir.flipped()
            } else {
                key.default_direction()
            };
            table.set_sort(key, dir);
        }
        _ => {}
    }
}

/// Switches of the view: help, environment, pause, layout, and the GPU panel's scroll.
fn toggle_view(state: &mut State, action: Action) {
    match action {
        Action::ToggleHelp => {
            state.view.show_help = !state.view.show_help;
            state.view.show_warnings = false;
            state.view.overlay_page = 0;
        }
        Action::ToggleWarnings => {
            state.view.show_warnings = !state.view.show_warnings;
            state.view.show_help = false;
            state.view.overlay_page = 0;
        }
        Action::ToggleEnv => state.view.show_env = !state.view.show_env,
        Action::TogglePause => state.view.paused = !state.view.paused,
        Action::ToggleCompact => {
            state.view.layout = if crate::layout::is_compact(&state.layout_input()) {
                LayoutPref::Full
            } else {
                LayoutPref::Compact
            };
        }
        Action::ScrollGpusUp => state.view.gpu_scroll = state.view.gpu_scroll.saturating_sub(1),
        Action::ScrollGpusDown => {
            state.view.gpu_scroll =
                (state.view.gpu_scroll + 1).min(state.model.gpus().len().saturating_sub(1))
        }
        _ => {}
    }
}

fn is_selection(action: Action) -> bool {
    matches!(
        action,
        Action::SelectUp
            | Action::SelectDown
            | Action::PageUp
            | Action::PageDown
            | Action::SelectFirst
            | Action::SelectLast
    )
}

fn confirm(state: &mut State) -> Vec<Effect> {
    let Some(dialog) = state.view.dialog.take() else {
        return Vec::new();
    };
    match signal::confirm(dialog) {
        Ok(request) => {
            state.view.status = Some(format!(
                "sending {} to PID {}…",
                request.signal.name(),
                request.pid
            ));
            vec![Effect::SendSignal(request)]
        }
        Err(again) => {
            state.view.dialog = Some(again);
            Vec::new()
        }
    }
}

/// Re-parses the filter line; an invalid line is reported and ignored (the table shows
/// everything the other narrowing allows) rather than hiding every row.
fn apply_filter(state: &mut State) {
    let mut view = state.model.procs().view.clone();
    match Filter::parse(&state.view.filter_text) {
        Ok(f) => {
            view.filter = f;
            state.view.filter_error = None;
        }
        Err(e) => {
            view.filter = Filter::default();
            state.view.filter_error = Some(e);
        }
    }
    state.model.procs_mut().set_view(view);
}

fn set_focus(state: &mut State, gpu: Option<crate::reading::GpuId>) {
    let mut view = state.model.procs().view.clone();
    view.gpu = gpu;
    state.model.procs_mut().set_view(view);
    state.view.panel = Panel::Processes;
}

/// A click on a GPU: focus it, or show every GPU's processes when it is already focused.
fn toggle_focus_at(state: &mut State, position: usize) {
    let Some(id) = state.model.gpus().get(position).map(|g| g.id.clone()) else {
        return;
    };
    let again = state.focus() == Some(&id);
    set_focus(state, if again { None } else { Some(id) });
}

/// A click on a row of whichever table is showing; below the last row does nothing.
fn select_row(state: &mut State, position: usize) {
    match state.view.panel {
        Panel::Processes => {
            if position < state.model.procs().len() {
                state.model.procs_mut().select_index(position);
            }
        }
        Panel::Users => {
            if position < state.model.user_rows().len() {
                state.view.user_selected = position;
            }
        }
    }
}

fn step_focus(state: &mut State, delta: isize) {
    if state.model.gpus().is_empty() {
        return;
    }
    let n = state.model.gpus().len() as isize;
    let at = state
        .focus()
        .and_then(|id| state.model.gpus().iter().position(|g| &g.id == id))
        .map_or(if delta > 0 { -1 } else { n }, |i| i as isize);
    let next = (at + delta).rem_euclid(n) as usize;
    let id = state.model.gpus()[next].id.clone();
    set_focus(state, Some(id));
}

fn choose_user(state: &mut State) {
    if state.view.panel != Panel::Users {
        return;
    }
    let Some(row) = state
        .model
        .user_rows()
        .into_iter()
        .nth(state.view.user_selected)
    else {
        return;
    };
    let mut view = state.model.procs().view.clone();
    view.user = Some(row.user);
    view.job = row.job;
    state.model.procs_mut().set_view(view);
    state.view.panel = Panel::Processes;
}

/// Esc steps back one layer: help, the environment, a detail view, then the per-user table, then every narrowing at once.
fn back(state: &mut State) {
    if state.view.show_help {
        state.view.show_help = false;
    } else if state.view.show_warnings {
        state.view.show_warnings = false;
    } else if state.view.show_env {
        state.view.show_env = false;
    } else if state.view.detail.is_some() {
        state.view.detail = None;
    } else if state.view.panel == Panel::Users {
        state.view.panel = Panel::Processes;
    } else {
        state.view.filter_text.clear();
        state.view.filter_error = None;
        state.model.procs_mut().set_view(Default::default());
        state.view.status = None;
    }
}

fn replay_command(state: &mut State, action: Action) -> Vec<Effect> {
    if state.view.replay.is_none() {
        state.view.status = Some("seeking and speed work when replaying a recording".into());
        return Vec::new();
    }
    let command = match action {
        Action::SeekBack => ReplayCommand::Seek(-1),
        Action::SeekForward => ReplayCommand::Seek(1),
        Action::SpeedDown => ReplayCommand::Slower,
        _ => ReplayCommand::Faster,
    };
    vec![Effect::Replay(command)]
}
