//! Shared-server etiquette through the update loop and the real draw code: focus, the
//! per-user view, the filter line, safe signals, idle holders and stale VRAM, and the mouse.

use crate::common;

use std::time::Duration;

use common::{config, demo_state, screen};
use gpuwatch::model::procs::SortKey;
use gpuwatch::model::warnings::WarningKind;
use gpuwatch::state::signal::Sig;
use gpuwatch::state::{Action, Effect, Msg, Panel, State, ViewConfig, update};
use gpuwatch::ui::hit::{MouseInput, MouseKind};
use insta::assert_snapshot;

const LATE: usize = 76;

fn act(state: &mut State, a: Action) -> Vec<Effect> {
    update(state, Msg::Action(a))
}

fn typed(state: &mut State, text: &str) {
    act(state, Action::OpenFilter);
    for c in text.chars() {
        act(state, Action::FilterInput(c));
    }
}

fn users_of(state: &State) -> Vec<String> {
    state
        .model
        .procs()
        .rows()
        .map(|r| r.user.as_deref().unwrap().to_owned())
        .collect()
}

fn state_with(cfg: ViewConfig, samples: usize, w: u16, h: u16) -> State {
    common::demo_state_with(cfg, 8, samples, w, h)
}

// ---- focus -----------------------------------------------------------------------------

#[test]
fn focusing_a_gpu_shows_only_its_processes_and_esc_shows_all() {
    let mut state = demo_state(8, 5, 120, 40);
    let all = state.model.procs().len();
    act(&mut state, Action::FocusGpu(0));
    assert!(state.model.procs().rows().all(|r| r.gpu_index == 0));
    assert_eq!(
        state.model.procs().len(),
        4,
        "alice's job, root's health check, erin's and frank's unpinned processes"
    );
    let text = screen(&state, 120, 40);
    assert!(text.contains("▶ 0 · NVIDIA"), "{text}");
    assert!(
        text.contains("Processes (4 of 9)") && text.contains("GPU 0 only"),
        "{text}"
    );
    act(&mut state, Action::Back);
    assert_eq!(state.model.procs().len(), all);
    act(&mut state, Action::FocusGpu(42));
    assert_eq!(state.view.status.as_deref(), Some("no GPU 42 here"));
}

#[test]
fn tab_walks_the_focus_through_the_gpus() {
    let mut state = demo_state(3, 2, 120, 40);
    act(&mut state, Action::FocusNext);
    assert_eq!(state.focus(), Some(&state.model.gpus()[0].id));
    act(&mut state, Action::FocusPrev);
    assert_eq!(
        state.focus(),
        Some(&state.model.gpus()[2].id),
        "wraps around"
    );
}

// ---- per-user view ---------------------------------------------------------------------

#[test]
fn per_user_view_totals_and_choosing_a_user_filters_the_table() {
    let mut state = demo_state(8, 5, 120, 40);
    act(&mut state, Action::ToggleUsers);
    assert_eq!(state.view.panel, Panel::Users);
    let all = state.model.user_rows();
    // Each user's jobs follow them, indented; the users themselves sort by VRAM.
    let users: Vec<_> = all.iter().filter(|u| u.job.is_none()).collect();
    let names: Vec<&str> = users.iter().map(|u| u.user.as_str()).collect();
    assert_eq!(
        names,
        ["alice", "carol", "bob", "dave", "erin", "frank", "root"],
        "by VRAM"
    );
    let alice_jobs: Vec<_> = all
        .iter()
        .filter(|u| u.user == "alice" && u.job.is_some())
        .map(|u| (u.job.as_deref().unwrap(), u.gpus.clone()))
        .collect();
    assert_eq!(alice_jobs, [("slurm 48121 train-llama", vec![0, 1])]);
    let dave = users[3];
    assert_eq!(dave.gpus, vec![4, 7]);
    assert_eq!(dave.processes, 2);
    assert!(
        dave.idle_vram.as_gib() > 31.0,
        "both of dave's GPUs are idle"
    );
    assert_eq!(users[0].idle_vram.0, 0, "alice's GPUs are busy");
    let text = screen(&state, 120, 40);
    assert!(
        text.contains("Users (7)")
            && text.contains("IDLE VRAM")
            && text.contains("  slurm 48121 train-llama"),
        "{text}"
    );
    assert_snapshot!(text);
    // Row 1 is alice's Slurm job: choosing it shows that job's processes.
    act(&mut state, Action::SelectDown);
    act(&mut state, Action::Choose);
    assert_eq!(state.view.panel, Panel::Processes);
    let jobs: Vec<_> = state.model.procs().rows().map(|r| r.job.clone()).collect();
    assert_eq!(jobs, vec![Some("slurm 48121 train-llama".to_string()); 2]);
    assert!(screen(&state, 120, 40).contains("slurm 48121 train-llama"));
    act(&mut state, Action::Back);
    act(&mut state, Action::ToggleUsers);
    // Row 6 is dave himself.
    for _ in 0..5 {
        act(&mut state, Action::SelectDown);
    }
    act(&mut state, Action::Choose);
    assert_eq!(users_of(&state), ["dave", "dave"]);
    assert!(screen(&state, 120, 40).contains("user dave"));
}

// ---- filter ----------------------------------------------------------------------------

#[test]
fn filter_narrows_live_and_esc_clears_it() {
    let mut state = demo_state(8, 5, 120, 40);
    typed(&mut state, "user:bo");
    assert!(
        state.model.procs().is_empty(),
        "user: is exact, so 'bo' matches nobody yet"
    );
    act(&mut state, Action::FilterInput('b'));
    assert_eq!(users_of(&state), ["bob"]);
    act(&mut state, Action::FilterDone);
    assert!(!state.view.filter_editing);
    assert!(screen(&state, 120, 40).contains(" filter  user:bob"));
    // Keys are actions again once the filter is kept.
    act(&mut state, Action::FilterCancel);
    act(&mut state, Action::Back);
    assert_eq!(state.model.procs().len(), 9);
    assert_eq!(state.view.filter_text, "");
}

#[test]
fn combined_filters_and_invalid_syntax_inline() {
    let mut state = demo_state(8, 5, 120, 40);
    typed(&mut state, "python vram>50G");
    assert_eq!(users_of(&state), ["alice", "alice"]);
    for _ in 0.."python vram>50G".len() {
        act(&mut state, Action::FilterBackspace);
    }
    typed(&mut state, "gpu:x");
    assert_eq!(
        state.view.filter_error.as_deref(),
        Some("gpu: \"x\" is not a GPU index")
    );
    assert_eq!(
        state.model.procs().len(),
        9,
        "an invalid filter hides nothing"
    );
    let text = screen(&state, 120, 40);
    assert!(text.contains("gpu: \"x\" is not a GPU index"), "{text}");
    assert_snapshot!(text);
}

// ---- signals ---------------------------------------------------------------------------

fn select_user(state: &mut State, user: &str) {
    act(state, Action::SelectFirst);
    while state.model.procs().selected_row().unwrap().user.as_deref() != Some(user) {
        act(state, Action::SelectDown);
    }
}

#[test]
fn own_process_signal_confirms_once_and_names_the_target() {
    let cfg = ViewConfig {
        current_uid: Some(1001),
        ..config()
    };
    let mut state = state_with(cfg, 5, 120, 40);
    select_user(&mut state, "alice");
    assert!(
        act(&mut state, Action::Signal(Sig::Term)).is_empty(),
        "nothing is sent yet"
    );
    let text = screen(&state, 120, 40);
    for needle in [
        "Send SIGTERM to this process?",
        "PID",
        "alice",
        "VRAM",
        "python train.py",
        "any other key",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
    assert_snapshot!(text);
    let effects = act(&mut state, Action::Confirm);
    let [Effect::SendSignal(req)] = &effects[..] else {
        panic!("{effects:?}")
    };
    assert_eq!(
        (req.signal, req.user.as_str(), req.uid),
        (Sig::Term, "alice", 1001)
    );
    assert_eq!(
        Some(req.started),
        state.model.procs().selected_row().unwrap().key.started
    );
    update(
        &mut state,
        Msg::SignalResult("demo: SIGTERM not sent to PID 1000 (a simulated process)".into()),
    );
    assert!(screen(&state, 120, 40).contains("demo: SIGTERM not sent to PID 1000"));
}

#[test]
fn cancel_refuse_readonly_and_root() {
    let cfg = ViewConfig {
        current_uid: Some(1001),
        ..config()
    };
    let mut state = state_with(cfg.clone(), 5, 120, 40);
    select_user(&mut state, "alice");
    act(&mut state, Action::Signal(Sig::Kill));
    act(&mut state, Action::Cancel);
    assert!(state.view.dialog.is_none());
    assert_eq!(
        state.view.status.as_deref(),
        Some("cancelled: no signal sent")
    );

    select_user(&mut state, "carol");
    act(&mut state, Action::Signal(Sig::Term));
    assert!(state.view.dialog.is_none());
    assert_eq!(
        state.view.status.as_deref(),
        Some("PID 3030 belongs to carol, not you: refusing to signal it")
    );

    select_user(&mut state, "root");
    act(&mut state, Action::Signal(Sig::Term));
    assert!(
        state
            .view
            .status
            .as_deref()
            .unwrap()
            .contains("never signals root")
    );

    let mut ro = state_with(
        ViewConfig {
            readonly: true,
            ..cfg
        },
        5,
        120,
        40,
    );
    select_user(&mut ro, "alice");
    act(&mut ro, Action::Signal(Sig::Term));
    assert!(ro.view.dialog.is_none());
    assert!(screen(&ro, 120, 40).contains("READ-ONLY"));
    assert!(screen(&ro, 120, 40).contains("read-only mode (--readonly): signals are disabled"));
}

#[test]
fn root_signalling_someone_else_confirms_twice() {
    let mut state = state_with(
        ViewConfig {
            current_uid: Some(0),
            ..config()
        },
        5,
        120,
        40,
    );
    select_user(&mut state, "bob");
    act(&mut state, Action::Signal(Sig::Int));
    assert!(
        act(&mut state, Action::Confirm).is_empty(),
        "first y is not enough"
    );
    let text = screen(&state, 120, 40);
    assert!(
        text.contains("This is bob's process, not yours. Press y AGAIN to send."),
        "{text}"
    );
    let effects = act(&mut state, Action::Confirm);
    assert!(
        matches!(&effects[..], [Effect::SendSignal(r)] if r.user == "bob" && r.signal == Sig::Int)
    );
}

// ---- idle holders and stale VRAM -------------------------------------------------------

#[test]
fn idle_holders_and_stale_vram_warn_after_their_settings() {
    let mut cfg = config();
    cfg.thresholds.idle_after = Duration::from_secs(60);
    let state = state_with(cfg, LATE, 200, 60);
    let kinds: Vec<_> = state
        .model
        .warnings()
        .iter()
        .map(|w| (w.gpu_index(), &w.kind))
        .collect();
    assert!(
        kinds.iter().any(|(g, k)| *g == Some(4)
            && matches!(k, WarningKind::IdleHolder { user, pid: 4000, .. } if user.as_deref() == Some("dave"))),
        "{kinds:?}"
    );
    assert!(
        kinds
            .iter()
            .any(|(g, k)| *g == Some(5) && matches!(k, WarningKind::StaleVram { .. })),
        "{kinds:?}"
    );
    // The words, as the warnings bar and --once print them (the bar shows the five most
    // urgent of the six at this height).
    let text: Vec<String> = state
        .model
        .warnings()
        .iter()
        .map(gpuwatch::present::warnings::warning_line)
        .collect();
    let text = text.join("\n");
    assert!(
        text.contains("dave holds 30.2 GiB on GPU 4, idle for 1m"),
        "{text}"
    );
    assert!(
        text.contains("GPU 5 12.9 GiB held by no process for 1m"),
        "{text}"
    );
    // With the default 30 minutes nothing is said about dave yet.
    let quiet = demo_state(8, LATE, 200, 60);
    assert!(
        quiet
            .model
            .warnings()
            .iter()
            .all(|w| !matches!(w.kind, WarningKind::IdleHolder { .. }))
    );
}

// ---- mouse -----------------------------------------------------------------------------

fn click(state: &mut State, text: &str, needle: &str) {
    let (x, y) = text
        .lines()
        .enumerate()
        .find_map(|(y, l)| {
            let l = l.trim_start_matches('"');
            l.find(needle)
                .map(|b| (l[..b].chars().count() as u16, y as u16))
        })
        .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{text}"));
    {
        let input = MouseInput {
            kind: MouseKind::LeftClick,
            column: x,
            row: y,
        };
        let actions = gpuwatch::ui::hit::actions(state, input);
        update(state, Msg::Actions(actions));
    }
}

#[test]
fn mouse_sorts_selects_and_focuses_where_it_is_drawn() {
    let mut state = demo_state(8, 5, 120, 40);
    let text = screen(&state, 120, 40);
    click(&mut state, &text, "USER");
    assert_eq!(state.model.procs().sort, SortKey::User);
    let text = screen(&state, 120, 40);
    click(&mut state, &text, "USER▲");
    assert_eq!(state.model.procs().sort, SortKey::User);
    assert_eq!(users_of(&state)[0], "root", "second click reverses");
    let text = screen(&state, 120, 40);
    click(&mut state, &text, "./bench_matmul");
    assert_eq!(
        state.model.procs().selected_row().unwrap().user.as_deref(),
        Some("carol")
    );
    let text = screen(&state, 120, 40);
    click(&mut state, &text, "5 · NVIDIA");
    assert_eq!(state.focus(), Some(&state.model.gpus()[5].id));
    {
        let input = MouseInput {
            kind: MouseKind::WheelDown,
            column: 5,
            row: 35,
        };
        let actions = gpuwatch::ui::hit::actions(&state, input);
        update(&mut state, Msg::Actions(actions));
    }
}

// ---- the GPU-0 pile-up -----------------------------------------------------------------

#[test]
fn the_demo_piles_two_unpinned_processes_onto_gpu_0_and_says_so() {
    let state = demo_state(8, 5, 160, 50);
    let pileup = state
        .model
        .warnings()
        .iter()
        .find(|w| matches!(w.kind, WarningKind::PileUp { .. }))
        .expect("a pile-up warning");
    assert_eq!(pileup.gpu_index(), Some(0));
    assert_eq!(
        pileup.kind,
        WarningKind::PileUp {
            unpinned: vec![5000, 5100],
            owners: 2,
            free: vec![6],
        }
    );
    let text = screen(&state, 160, 50);
    assert!(
        text.contains(
            "GPU 0: 2 processes of 2 users/jobs without CUDA_VISIBLE_DEVICES; GPU 6 is free — gpuwatch pick"
        ),
        "{text}"
    );
    // The two unpinned rows are marked; the pinned training job on GPU 0 is not.
    assert!(text.contains("⚠ python eval.py"), "{text}");
    assert!(text.contains("⚠ python3"), "{text}");
    assert!(!text.contains("⚠ python train.py"), "{text}");
    // With every GPU busy there is nowhere better to go: no pile-up warning.
    let one = demo_state(1, 5, 160, 50);
    assert!(
        one.model
            .warnings()
            .iter()
            .all(|w| !matches!(w.kind, WarningKind::PileUp { .. }))
    );
}
