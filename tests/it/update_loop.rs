//! The update loop driven by sequences of messages: state and effects out, no terminal,
//! no runtime, no sleeping.

use crate::common;

use common::{demo_state, sim};
use gpuwatch::model::procs::{SortDir, SortKey};
use gpuwatch::model::warnings::{Severity, WarningKind};
use gpuwatch::reading::GpuStatus;
use gpuwatch::reading::fields::Key;
use gpuwatch::source::GpuSource;
use gpuwatch::state::{Action, Effect, LayoutPref, Msg, State, update};
use gpuwatch::wire::WarningCode::{OomRisk, Overheating};

fn act(state: &mut State, action: Action) -> Vec<Effect> {
    update(state, Msg::Action(action))
}

#[test]
fn quit_is_an_effect_and_nothing_else_is() {
    let mut state = demo_state(8, 2, 120, 40);
    assert_eq!(act(&mut state, Action::Quit), vec![Effect::Quit]);
    for a in [
        Action::ToggleHelp,
        Action::SelectDown,
        Action::SortNext,
        Action::TogglePause,
    ] {
        assert!(act(&mut state, a).is_empty(), "{a:?}");
    }
}

#[test]
fn default_sort_is_vram_descending() {
    let state = demo_state(8, 5, 120, 40);
    assert_eq!(
        (state.model.procs().sort, state.model.procs().dir),
        (SortKey::Vram, SortDir::Descending)
    );
    let vram: Vec<_> = state
        .model
        .procs()
        .rows()
        .map(|r| r.vram.unwrap())
        .collect();
    assert!(vram.windows(2).all(|w| w[0] >= w[1]), "{vram:?}");
}

#[test]
fn sort_keys_cycle_reverse_and_jump() {
    let mut state = demo_state(8, 5, 120, 40);
    act(&mut state, Action::SortNext);
    assert_eq!(state.model.procs().sort, SortKey::GpuUtil);
    act(&mut state, Action::SortPrev);
    act(&mut state, Action::SortPrev);
    assert_eq!(
        (state.model.procs().sort, state.model.procs().dir),
        (SortKey::Type, SortDir::Ascending)
    );
    act(&mut state, Action::SortPrev);
    // The demo's processes run in jobs, so JOB is on screen and in the cycle.
    assert_eq!(
        (state.model.procs().sort, state.model.procs().dir),
        (SortKey::Job, SortDir::Ascending)
    );
    act(&mut state, Action::SortPrev);
    assert_eq!(
        (state.model.procs().sort, state.model.procs().dir),
        (SortKey::User, SortDir::Ascending)
    );
    act(&mut state, Action::SortReverse);
    assert_eq!(state.model.procs().dir, SortDir::Descending);
    let users: Vec<_> = state
        .model
        .procs()
        .rows()
        .map(|r| r.user.clone().unwrap())
        .collect();
    assert!(users.windows(2).all(|w| w[0] >= w[1]), "{users:?}");
    act(&mut state, Action::SortBy(SortKey::Pid));
    let pids: Vec<_> = state.model.procs().rows().map(|r| r.key.pid).collect();
    assert!(pids.windows(2).all(|w| w[0] <= w[1]), "{pids:?}");
}

#[test]
fn selection_follows_the_process_through_new_samples() {
    let mut source = sim(8);
    let mut state = State::new(common::config());
    update(
        &mut state,
        Msg::Resize {
            width: 120,
            height: 40,
        },
    );
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    // Select bob's growing fine-tune job (GPU 2); it climbs the VRAM ranking over time.
    let idx = state
        .model
        .procs()
        .rows()
        .position(|r| r.user.as_deref() == Some("bob"))
        .unwrap();
    act(&mut state, Action::SelectFirst);
    for _ in 0..idx {
        act(&mut state, Action::SelectDown);
    }
    let before = state.model.procs().selected_index().unwrap();
    for _ in 0..60 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    }
    let row = state.model.procs().selected_row().unwrap();
    assert_eq!(row.user.as_deref(), Some("bob"));
    assert_ne!(
        state.model.procs().selected_index().unwrap(),
        before,
        "the row moved, the selection followed"
    );
}

#[test]
fn navigation_keys_clamp_and_page() {
    let mut state = demo_state(16, 2, 80, 24);
    let n = state.model.procs().len();
    act(&mut state, Action::SelectUp);
    assert_eq!(
        state.model.procs().selected_index(),
        Some(0),
        "first move selects the top row"
    );
    act(&mut state, Action::SelectUp);
    assert_eq!(state.model.procs().selected_index(), Some(0));
    act(&mut state, Action::PageDown);
    let page = gpuwatch::layout::table_page_rows(&state.layout_input()) as usize;
    assert_eq!(state.model.procs().selected_index(), Some(page.min(n - 1)));
    act(&mut state, Action::SelectLast);
    assert_eq!(state.model.procs().selected_index(), Some(n - 1));
    act(&mut state, Action::SelectDown);
    assert_eq!(state.model.procs().selected_index(), Some(n - 1));
    // Enough pages up to pass the top whatever the page size, and no more.
    for _ in 0..n.div_ceil(page.max(1)) {
        act(&mut state, Action::PageUp);
    }
    assert_eq!(state.model.procs().selected_index(), Some(0));
}

#[test]
fn pause_freezes_and_resume_continues() {
    let mut source = sim(8);
    let mut state = State::new(common::config());
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    act(&mut state, Action::TogglePause);
    let frozen = state.model.now();
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    assert_eq!(state.model.now(), frozen);
    act(&mut state, Action::TogglePause);
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    assert!(state.model.now() > frozen);
}

#[test]
fn compact_toggle_flips_the_automatic_choice() {
    let mut state = demo_state(8, 2, 200, 60);
    assert!(
        !gpuwatch::layout::is_compact(&state.layout_input()),
        "200x60 starts with full panels"
    );
    act(&mut state, Action::ToggleCompact);
    assert_eq!(state.view.layout, LayoutPref::Compact);
    act(&mut state, Action::ToggleCompact);
    assert_eq!(state.view.layout, LayoutPref::Full);
    let mut small = demo_state(8, 2, 80, 24);
    assert!(gpuwatch::layout::is_compact(&small.layout_input()));
    act(&mut small, Action::ToggleCompact);
    assert_eq!(small.view.layout, LayoutPref::Full);
}

#[test]
fn help_toggles_and_escape_closes_it() {
    let mut state = demo_state(1, 1, 80, 24);
    act(&mut state, Action::ToggleHelp);
    assert!(state.view.show_help);
    act(&mut state, Action::Back);
    assert!(!state.view.show_help);
}

#[test]
fn demo_scenario_raises_each_warning_in_turn_and_oom_clears_after_the_crash() {
    let mut source = sim(8);
    let mut state = State::new(common::config());
    let mut seen = Vec::new();
    for _ in 0..100 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
        for w in state.model.warnings() {
            // A growing job's OOM warning says when VRAM will be full.
            let filling = matches!(
                w.kind,
                WarningKind::OomRisk {
                    time_to_full: Some(_),
                    ..
                }
            );
            let gpu = w.gpu_index().expect("a GPU warning");
            let key = (gpu, w.kind.code(), filling, w.severity);
            if !seen.contains(&key) {
                seen.push(key);
            }
        }
    }
    assert!(
        seen.contains(&(2, OomRisk, true, Severity::Warning)),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|k| (k.0, k.1, k.3) == (2, OomRisk, Severity::Critical)),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(3, Overheating, false, Severity::Warning)),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(3, Overheating, false, Severity::Critical)),
        "{seen:?}"
    );
    // At t=80 s the OOM job has crashed (VRAM dropped), so GPU 2 has no VRAM warning.
    let mut source = sim(8);
    let mut state = State::new(common::config());
    for _ in 0..81 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    }
    assert!(
        state
            .model
            .warnings()
            .iter()
            .all(|w| w.gpu_index() != Some(2)),
        "{:?}",
        state.model.warnings()
    );
    assert!(
        state.model.procs().rows().all(|r| r.gpu_index != 2),
        "the crashed job is gone"
    );
    // ...and is restarted a few seconds later as a new process (new PID).
    for _ in 0..8 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    }
    let restarted = state
        .model
        .procs()
        .rows()
        .find(|r| r.gpu_index == 2)
        .expect("restarted");
    assert_eq!(restarted.key.pid, 2021);
    assert!(restarted.elapsed.unwrap().as_secs() < 10);
}

#[test]
fn lost_gpu_keeps_its_slot_while_others_update() {
    let mut source = sim(4);
    let mut state = State::new(common::config());
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    let mut sample = source.sample().unwrap();
    let lost_id = sample.gpus[1].id.clone();
    let name = sample.gpus[1].name.clone();
    sample.gpus[1] = gpuwatch::reading::GpuReading::absent(lost_id.clone(), 1, name);
    sample.gpus[1].status = GpuStatus::Lost;
    update(&mut state, Msg::Sample(Box::new(sample)));
    assert_eq!(state.model.gpus().len(), 4);
    assert_eq!(state.model.gpus()[1].status, GpuStatus::Lost);
    assert!(
        state
            .model
            .warnings()
            .iter()
            .any(|w| w.gpu() == Some(&lost_id) && w.kind == WarningKind::Lost)
    );
    // Its history is kept (with a gap), so it resumes where it was when it returns.
    let history = state.model.history(&lost_id).unwrap();
    let points = history.points();
    assert_eq!(points.last().unwrap().get(Key::Temperature), None);
    assert_eq!(points.len(), 2);
    // The guard holds the shared histories; the next sample writes them.
    drop(history);
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    assert_eq!(state.model.gpus()[1].status, GpuStatus::Ok);
    assert!(
        state
            .model
            .warnings()
            .iter()
            .all(|w| w.kind != WarningKind::Lost)
    );
}

#[test]
fn source_failure_is_shown_and_cleared_by_the_next_sample() {
    let mut source = sim(2);
    let mut state = State::new(common::config());
    update(&mut state, Msg::SourceFailed("NVML: GPU is lost".into()));
    assert_eq!(state.model.source_error(), Some("NVML: GPU is lost"));
    update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    assert_eq!(state.model.source_error(), None);
}

#[test]
fn history_is_bounded_and_forgets_departed_gpus() {
    let mut source = sim(3);
    let mut state = State::new(gpuwatch::state::ViewConfig {
        history_len: 10,
        ..common::config()
    });
    for _ in 0..50 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    }
    assert!(
        state
            .model
            .histories()
            .iter()
            .all(|(_, h)| h.points().len() == 10)
    );
    let mut sample = source.sample().unwrap();
    sample.gpus.truncate(1);
    sample.processes.retain(|p| p.gpu == sample.gpus[0].id);
    update(&mut state, Msg::Sample(Box::new(sample)));
    assert_eq!(state.model.history_count(), 1);
}

/// Issue 15 item 7: a 10 KB paste into the filter prompt is one message, cut at the cap
/// (said on the status line); outside the prompt a paste is never taken for commands.
#[test]
fn a_long_paste_is_capped_and_never_taken_for_commands() {
    use gpuwatch::model::filter::MAX_FILTER_CHARS;
    let mut state = demo_state(2, 3, 120, 40);
    assert!(update(&mut state, Msg::Paste("q".repeat(10_000))).is_empty());
    assert!(state.view.filter_text.is_empty() && !state.view.filter_editing);
    act(&mut state, Action::OpenFilter);
    update(
        &mut state,
        Msg::Paste(format!("alice\n{}", "x".repeat(10_000))),
    );
    assert_eq!(state.view.filter_text.chars().count(), MAX_FILTER_CHARS);
    assert!(state.view.filter_text.starts_with("alice x"));
    assert_eq!(
        state.view.status.as_deref(),
        Some("the filter is limited to 256 characters")
    );
    act(&mut state, Action::FilterInput('y'));
    assert_eq!(state.view.filter_text.chars().count(), MAX_FILTER_CHARS);
}

/// "Instant and truthful" §5 (the part about the next action): a status line ("sent
/// SIGTERM …", the criticals already there at start) goes with the next action taken in the
/// normal view, so the footer naming the selected process is back; a prompt keeps it.
#[test]
fn a_status_line_goes_with_the_next_action() {
    let mut state = demo_state(8, 5, 120, 40);
    update(
        &mut state,
        Msg::Notice("critical since before start".into()),
    );
    assert!(common::screen(&state, 120, 40).contains("critical since before start"));
    update(&mut state, Msg::Action(Action::SelectDown));
    assert_eq!(state.view.status, None);
    let selected = state.model.procs().selected_row().unwrap().key.pid;
    let text = common::screen(&state, 120, 40);
    assert!(text.contains(&format!("PID {selected} ")), "{text}");
    // While the filter prompt is open a status waits for it to close.
    update(&mut state, Msg::Action(Action::OpenFilter));
    update(&mut state, Msg::Notice("said during the prompt".into()));
    update(&mut state, Msg::Action(Action::FilterDone));
    assert_eq!(state.view.status.as_deref(), Some("said during the prompt"));
}

/// "Instant and truthful" §5 (the part about time): a status line's expiry (sent by the
/// loop `STATUS_LASTS` after the line appeared) clears that line, not one that has taken
/// its place meanwhile, and waits while a prompt is open.
#[test]
fn a_status_line_expires_only_if_it_is_still_the_one_showing() {
    let mut state = demo_state(8, 5, 120, 40);
    update(&mut state, Msg::Notice("sent SIGTERM to PID 1000".into()));
    update(&mut state, Msg::Notice("a newer line".into()));
    update(
        &mut state,
        Msg::StatusExpired("sent SIGTERM to PID 1000".into()),
    );
    assert_eq!(state.view.status.as_deref(), Some("a newer line"));
    update(&mut state, Msg::StatusExpired("a newer line".into()));
    assert_eq!(state.view.status, None);
    update(&mut state, Msg::Action(Action::OpenFilter));
    update(&mut state, Msg::Notice("said during the prompt".into()));
    update(
        &mut state,
        Msg::StatusExpired("said during the prompt".into()),
    );
    assert_eq!(state.view.status.as_deref(), Some("said during the prompt"));
}
