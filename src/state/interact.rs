//! What each user action does to the state: selection, sorting, focus, the filter line,
//! the per-user table, and the signal confirmation flow. Part of `update`; pure.

use super::filter::Filter;
use super::signal;
use super::{Action, Effect, LayoutPref, Panel, ReplayCommand, State};

pub(super) fn apply_action(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => return vec![Effect::Quit],
        Action::Signal(sig) => {
            let me = state.config.current_uid;
            match signal::request(state.procs.selected_row(), sig, state.config.readonly, me) {
                Ok(dialog) => state.dialog = Some(dialog),
                Err(why) => state.status = Some(why),
            }
        }
        Action::Confirm => return confirm(state),
        Action::Cancel => {
            if state.dialog.take().is_some() {
                state.status = Some("cancelled: no signal sent".into());
            }
        }
        Action::OpenFilter => {
            state.filter_editing = true;
            state.panel = Panel::Processes;
        }
        Action::FilterInput(c) => {
            state.filter_text.push(c);
            apply_filter(state);
        }
        Action::FilterBackspace => {
            state.filter_text.pop();
            apply_filter(state);
        }
        Action::FilterDone => state.filter_editing = false,
        Action::FilterCancel => {
            state.filter_editing = false;
            state.filter_text.clear();
            apply_filter(state);
        }
        Action::Back => back(state),
        Action::ToggleUsers => {
            state.panel = match state.panel {
                Panel::Processes => Panel::Users,
                Panel::Users => Panel::Processes,
            }
        }
        Action::Choose => choose_user(state),
        Action::FocusGpu(index) => {
            let id = state
                .gpus
                .iter()
                .find(|g| g.index == index)
                .map(|g| g.id.clone());
            match id {
                Some(id) => set_focus(state, Some(id)),
                None => state.status = Some(format!("no GPU {index} here")),
            }
        }
        Action::SeekBack | Action::SeekForward | Action::SpeedDown | Action::SpeedUp => {
            return replay_command(state, action);
        }
        Action::TogglePause if state.replay.is_some() => {
            return vec![Effect::Replay(ReplayCommand::TogglePause)];
        }
        Action::FocusNext => step_focus(state, 1),
        Action::FocusPrev => step_focus(state, -1),
        other => navigate(state, other),
    }
    Vec::new()
}

/// Selection, sorting and layout: the actions that act on whichever table is showing.
fn navigate(state: &mut State, action: Action) {
    let page = crate::ui::layout::table_page_rows(state) as isize;
    if state.panel == Panel::Users {
        let n = state.user_rows().len();
        let last = n.saturating_sub(1) as isize;
        let at = state.user_selected as isize;
        let to = match action {
            Action::SelectUp => at - 1,
            Action::SelectDown => at + 1,
            Action::PageUp => at - page,
            Action::PageDown => at + page,
            Action::SelectFirst => 0,
            Action::SelectLast => last,
            _ => at,
        };
        state.user_selected = to.clamp(0, last.max(0)) as usize;
    }
    let table = &mut state.procs;
    match action {
        Action::ToggleHelp => state.show_help = !state.show_help,
        _ if state.panel == Panel::Users && is_selection(action) => {}
        Action::SelectUp => table.move_selection(-1),
        Action::SelectDown => table.move_selection(1),
        Action::PageUp => table.move_selection(-page),
        Action::PageDown => table.move_selection(page),
        Action::SelectFirst => table.select_index(0),
        Action::SelectLast => table.select_last(),
        Action::SortNext => {
            let key = table.sort.next();
            table.set_sort(key, key.default_direction());
        }
        Action::SortPrev => {
            let key = table.sort.prev();
            table.set_sort(key, key.default_direction());
        }
        Action::SortReverse => table.set_sort(table.sort, table.dir.flipped()),
        Action::SortBy(key) => table.set_sort(key, key.default_direction()),
        Action::TogglePause => state.paused = !state.paused,
        Action::ToggleCompact => {
            state.layout = if crate::ui::layout::is_compact(state) {
                LayoutPref::Full
            } else {
                LayoutPref::Compact
            };
        }
        Action::ScrollGpusUp => state.gpu_scroll = state.gpu_scroll.saturating_sub(1),
        Action::ScrollGpusDown => {
            state.gpu_scroll = (state.gpu_scroll + 1).min(state.gpus.len().saturating_sub(1))
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
    let Some(dialog) = state.dialog.take() else {
        return Vec::new();
    };
    match signal::confirm(dialog) {
        Ok(request) => {
            state.status = Some(format!(
                "sending {} to PID {}…",
                request.signal.name(),
                request.pid
            ));
            vec![Effect::SendSignal(request)]
        }
        Err(again) => {
            state.dialog = Some(again);
            Vec::new()
        }
    }
}

/// Re-parses the filter line; an invalid line is reported and ignored (the table shows
/// everything the other narrowing allows) rather than hiding every row.
fn apply_filter(state: &mut State) {
    let mut view = state.procs.view.clone();
    match Filter::parse(&state.filter_text) {
        Ok(f) => {
            view.filter = f;
            state.filter_error = None;
        }
        Err(e) => {
            view.filter = Filter::default();
            state.filter_error = Some(e);
        }
    }
    state.procs.set_view(view);
}

fn set_focus(state: &mut State, gpu: Option<crate::source::GpuId>) {
    let mut view = state.procs.view.clone();
    view.gpu = gpu;
    state.procs.set_view(view);
    state.panel = Panel::Processes;
}

fn step_focus(state: &mut State, delta: isize) {
    if state.gpus.is_empty() {
        return;
    }
    let n = state.gpus.len() as isize;
    let at = state
        .focus()
        .and_then(|id| state.gpus.iter().position(|g| &g.id == id))
        .map_or(if delta > 0 { -1 } else { n }, |i| i as isize);
    let next = (at + delta).rem_euclid(n) as usize;
    let id = state.gpus[next].id.clone();
    set_focus(state, Some(id));
}

fn choose_user(state: &mut State) {
    if state.panel != Panel::Users {
        return;
    }
    let Some(row) = state.user_rows().into_iter().nth(state.user_selected) else {
        return;
    };
    let mut view = state.procs.view.clone();
    view.user = Some(row.user);
    state.procs.set_view(view);
    state.panel = Panel::Processes;
}

/// Esc steps back one layer: help, then the per-user table, then every narrowing at once.
fn back(state: &mut State) {
    if state.show_help {
        state.show_help = false;
    } else if state.panel == Panel::Users {
        state.panel = Panel::Processes;
    } else {
        state.filter_text.clear();
        state.filter_error = None;
        state.procs.set_view(Default::default());
        state.status = None;
    }
}

fn replay_command(state: &mut State, action: Action) -> Vec<Effect> {
    if state.replay.is_none() {
        state.status = Some("seeking and speed work when replaying a recording".into());
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
