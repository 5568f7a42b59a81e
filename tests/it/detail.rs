//! The detail views through the real update loop and draw code: snapshots of the GPU and
//! process views at 80x24 and 200x60, opening and closing them (Enter, `d`, Esc) without
//! losing what Enter means elsewhere, the process view following its identity, clicks
//! ignored while a view covers the screen, and per-process peak VRAM in the JSON document.

use crate::common;

use std::time::Duration;

use common::{config, demo_state, epoch, screen};
use gpuwatch::history::procs::ProcId;
use gpuwatch::reading::{GpuId, GpuReading, HostInfo, HostProc, ProcKind, ProcReading, Sample};
use gpuwatch::state::{Action, Detail, Msg, Panel, State, update};
use gpuwatch::ui::hit::{MouseInput, MouseKind, actions};
use gpuwatch::units::Bytes;
use insta::assert_snapshot;

/// 40 s into the demo: 40 points in every chart.
const SAMPLES: usize = 40;

fn act(state: &mut State, a: Action) {
    update(state, Msg::Action(a));
}

fn opened_on_process(w: u16, h: u16) -> State {
    let mut state = demo_state(8, SAMPLES, w, h);
    act(&mut state, Action::SelectFirst);
    act(&mut state, Action::Choose);
    state
}

fn opened_on_gpu(w: u16, h: u16) -> State {
    let mut state = demo_state(8, SAMPLES, w, h);
    act(&mut state, Action::FocusGpu(0));
    act(&mut state, Action::GpuDetail);
    state
}

#[test]
fn gpu_detail_at_80x24() {
    assert_snapshot!(screen(&opened_on_gpu(80, 24), 80, 24));
}

#[test]
fn gpu_detail_at_200x60() {
    assert_snapshot!(screen(&opened_on_gpu(200, 60), 200, 60));
}

#[test]
fn process_detail_at_80x24() {
    assert_snapshot!(screen(&opened_on_process(80, 24), 80, 24));
}

#[test]
fn process_detail_at_200x60() {
    assert_snapshot!(screen(&opened_on_process(200, 60), 200, 60));
}

#[test]
fn the_gpu_view_shows_every_detail_uncut() {
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let text = screen(&opened_on_gpu(w, h), w, h);
        for needle in [
            "GPU 0 ·",
            "utilization",
            "VRAM",
            "temperature",
            "slowdown",
            "limit",
            "clocks",
            "PCIe",
            "energy",
            "P-state",
            "ECC errors since driver load: uncorrected",
            ", corrected ",
            "MIG",
            "processes (",
        ] {
            assert!(text.contains(needle), "{w}x{h}: no {needle:?}\n{text}");
        }
        assert!(!text.contains('…') || w < 200, "cut at {w}x{h}:\n{text}");
    }
}

#[test]
fn the_process_view_wraps_the_whole_command_and_names_its_parents() {
    let state = opened_on_process(80, 24);
    let row = state.model.procs().selected_row().unwrap().clone();
    let text = screen(&state, 80, 24);
    assert!(text.contains(&format!("PID {}", row.key.pid)), "{text}");
    // Every word of the command line is on screen (wrapped, not cut).
    for word in row.command.split(' ') {
        assert!(text.contains(word), "{word:?} missing:\n{text}");
    }
    assert!(text.contains("parents:"), "{text}");
    assert!(text.contains(" → "), "{text}");
    assert!(text.contains("peak"), "{text}");
    assert!(text.contains(&format!("GPU {}:", row.gpu_index)), "{text}");
}

#[test]
fn enter_opens_the_selected_process_and_esc_goes_back() {
    let mut state = opened_on_process(120, 40);
    let row = state.model.procs().selected_row().unwrap().clone();
    let id = ProcId {
        pid: row.key.pid,
        started: row.key.started,
    };
    assert_eq!(state.view.detail, Some(Detail::Process(id.clone())));
    // Table keys do nothing behind the view; Esc closes it and only it.
    act(&mut state, Action::SelectDown);
    act(
        &mut state,
        Action::SortBy(gpuwatch::model::procs::SortKey::Pid),
    );
    assert_eq!(state.model.procs().selected_row().unwrap().key, row.key);
    act(&mut state, Action::Back);
    assert_eq!(state.view.detail, None);
    assert_eq!(state.model.procs().selected_row().unwrap().key, row.key);
}

#[test]
fn help_over_a_detail_view_keeps_table_keys_from_the_table_beneath() {
    use gpuwatch::model::procs::SortKey;
    let mut state = opened_on_process(120, 40);
    let row = state.model.procs().selected_row().unwrap().key.clone();
    let sort = state.model.procs().sort;
    act(&mut state, Action::ToggleHelp);
    assert!(state.view.show_help);
    // Sorting, the user table and the filter would act on a table no one sees.
    act(&mut state, Action::SortBy(SortKey::Pid));
    act(&mut state, Action::SortNext);
    act(&mut state, Action::ToggleUsers);
    act(&mut state, Action::OpenFilter);
    assert_eq!(state.model.procs().sort, sort);
    assert_eq!(state.view.panel, Panel::Processes);
    assert!(!state.view.filter_editing);
    assert_eq!(state.model.procs().selected_row().unwrap().key, row);
    // Esc closes help and only help; the view is still there.
    act(&mut state, Action::Back);
    assert!(!state.view.show_help);
    assert!(matches!(state.view.detail, Some(Detail::Process(_))));
}

#[test]
fn the_process_view_follows_its_identity_across_samples_and_sorts() {
    let mut state = demo_state(8, SAMPLES, 120, 40);
    act(&mut state, Action::SelectLast);
    let row = state.model.procs().selected_row().unwrap().clone();
    act(&mut state, Action::Choose);
    // Another row is selected behind the view (a re-sort moved it): the next sample puts
    // the selection back on the process shown, so a signal key acts on it.
    state.model.procs_mut().select_index(0);
    let mut source = common::sim(8);
    for _ in 0..SAMPLES + 5 {
        let s = gpuwatch::source::GpuSource::sample(&mut source).unwrap();
        update(&mut state, Msg::Sample(Box::new(s)));
    }
    let Some(Detail::Process(id)) = &state.view.detail else {
        panic!("the view stays open");
    };
    assert_eq!((id.pid, id.started), (row.key.pid, row.key.started));
    let selected = state.model.procs().selected_row().unwrap();
    assert_eq!(
        (selected.key.pid, selected.key.started),
        (id.pid, id.started)
    );
    let history = state.model.proc_history(id).expect("its history");
    assert!(history.points.len() >= SAMPLES, "{}", history.points.len());
}

#[test]
fn enter_still_chooses_in_the_per_user_view_and_the_filter() {
    let mut state = demo_state(8, SAMPLES, 120, 40);
    act(&mut state, Action::ToggleUsers);
    act(&mut state, Action::Choose);
    assert_eq!(state.view.panel, Panel::Processes);
    assert!(state.model.procs().view.user.is_some(), "a user was chosen");
    assert_eq!(state.view.detail, None, "choosing a user opens no view");
    // In the filter line Enter is "keep the filter" (the keymap's filter mode).
    let enter = ratatui::crossterm::event::KeyEvent::new(
        ratatui::crossterm::event::KeyCode::Enter,
        ratatui::crossterm::event::KeyModifiers::NONE,
    );
    let mode = gpuwatch::state::InputMode::Filter;
    assert_eq!(
        gpuwatch::keymap::action_for(enter, mode),
        Some(Action::FilterDone)
    );
}

#[test]
fn d_opens_the_focused_gpu_and_tab_moves_the_view_to_the_next() {
    let mut state = opened_on_gpu(120, 40);
    let first = state.model.gpus()[0].id.clone();
    let second = state.model.gpus()[1].id.clone();
    assert_eq!(state.view.detail, Some(Detail::Gpu(first)));
    act(&mut state, Action::FocusNext);
    assert_eq!(state.view.detail, Some(Detail::Gpu(second)));
    act(&mut state, Action::Back);
    assert_eq!(state.view.detail, None);
    assert!(state.focus().is_some(), "Esc left the view, not the focus");
    // Enter with no row selected opens the focused GPU's view.
    let mut state = demo_state(8, SAMPLES, 120, 40);
    act(&mut state, Action::FocusGpu(6));
    assert!(state.model.procs().selected_row().is_none());
    act(&mut state, Action::Choose);
    let six = state.model.gpus()[6].id.clone();
    assert_eq!(state.view.detail, Some(Detail::Gpu(six)));
}

#[test]
fn clicks_do_not_reach_the_main_view_under_a_detail_view() {
    let mut state = opened_on_gpu(120, 40);
    for row in 0..40 {
        let m = MouseInput {
            kind: MouseKind::LeftClick,
            column: 10,
            row,
        };
        assert!(actions(&state, m).is_empty(), "row {row}");
    }
    act(&mut state, Action::Back);
    let m = MouseInput {
        kind: MouseKind::LeftClick,
        column: 10,
        row: 2,
    };
    assert!(
        !actions(&state, m).is_empty(),
        "the main view is clickable again"
    );
}

fn sample_with(secs: u64, vram_gib: f64) -> Sample {
    let id = GpuId("GPU-peak".into());
    let mut gpu = GpuReading::absent(id.clone(), 0, "test");
    gpu.memory_total = Some(Bytes::from_gib(80.0));
    gpu.memory_used = Some(Bytes::from_gib(vram_gib));
    Sample {
        time: epoch() + Duration::from_secs(secs),
        host: HostInfo::default(),
        gpus: vec![gpu],
        processes: vec![ProcReading {
            peak_gpu_memory: None,
            pid: 4242,
            gpu: id,
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(vram_gib)),
            sm_util: None,
            host: HostProc::OtherNamespace,
        }],
        hosts: Vec::new(),
        history: None,
    }
}

#[test]
fn the_json_document_carries_each_process_peak_vram() {
    let mut state = State::new(config());
    for (s, gib) in [(0, 10.0), (1, 30.0), (2, 20.0)] {
        update(&mut state, Msg::Sample(Box::new(sample_with(s, gib))));
    }
    let doc: serde_json::Value =
        serde_json::from_str(&gpuwatch::headless::render_json(&state)).unwrap();
    let p = &doc["processes"][0];
    assert_eq!(p["used_gpu_memory"], Bytes::from_gib(20.0).0);
    assert_eq!(p["peak_gpu_memory"], Bytes::from_gib(30.0).0);
    assert_eq!(doc["schema_minor"], gpuwatch::wire::SCHEMA_MINOR);
}

#[test]
fn once_json_peak_is_at_least_the_current_reading() {
    let out = common::clean_command()
        .args(["--demo", "--once", "--json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let procs = doc["processes"].as_array().unwrap();
    assert!(!procs.is_empty());
    // The demo opens mid-story: its back-filled history is in the peaks, so a process
    // that shrank (the OOM job restarted) has a peak above its current use.
    for p in procs {
        let (peak, used) = (&p["peak_gpu_memory"], &p["used_gpu_memory"]);
        assert!(peak.as_u64() >= used.as_u64(), "{p}");
        assert!(p["parents"].is_array(), "{p}");
    }
}

/// A sample of `n` processes numbered from `first`, each holding 1 GiB of one GPU.
fn many(secs: u64, first: u32, n: u32) -> Sample {
    let mut s = sample_with(secs, 1.0);
    let one = s.processes[0].clone();
    s.processes = (first..first + n)
        .map(|pid| ProcReading { pid, ..one.clone() })
        .collect();
    s
}

#[test]
fn per_process_history_is_bounded_and_dropped_after_processes_leave() {
    use gpuwatch::history::procs::{LINGER, MAX_PROCESSES};
    let mut state = State::new(config());
    update(&mut state, Msg::Sample(Box::new(many(0, 0, 4_000))));
    update(&mut state, Msg::Sample(Box::new(many(1, 10_000, 4_000))));
    assert_eq!(state.model.proc_history_count(), MAX_PROCESSES);
    // The newest are kept: the view of a running process never loses its history to
    // processes that already left.
    let newest = ProcId {
        pid: 13_999,
        started: None,
    };
    assert!(state.model.proc_history(&newest).is_some());
    // Once everything has been gone for longer than the linger, only the current remain.
    let later = LINGER.as_secs() + 2;
    update(&mut state, Msg::Sample(Box::new(many(later, 20_000, 3))));
    assert_eq!(state.model.proc_history_count(), 3);
}

/// Issue 21: the GPU detail view reads the one history store, so a GPU whose source
/// back-fills its past (Prometheus' range queries) is charted over that past at once, not
/// only from the samples since gpuwatch started (it used to read a second store that the
/// back-fill never reached).
#[test]
fn a_back_filled_gpu_is_charted_over_its_past_in_the_detail_view() {
    use gpuwatch::reading::HistoryPoint;
    use gpuwatch::source::GpuSource;
    use gpuwatch::units::MegaHertz;
    let drawn = |back_filled: bool| {
        let mut state = State::new(config());
        update(
            &mut state,
            Msg::Resize {
                width: 200,
                height: 60,
            },
        );
        let mut sample = common::sim(1).sample().unwrap();
        let g = sample.gpus[0].clone();
        let past: Vec<HistoryPoint> = (1..=120u32)
            .rev()
            .map(|ago| {
                let mut then = g.clone();
                then.sm_clock = Some(MegaHertz(900 + 5 * ago));
                HistoryPoint::of(sample.time - Duration::from_secs(u64::from(ago)), &then)
            })
            .chain([HistoryPoint::of(sample.time, &g)])
            .collect();
        if back_filled {
            sample.history = Some([(g.id.clone(), past)].into_iter().collect());
        }
        update(&mut state, Msg::Sample(Box::new(sample)));
        act(&mut state, Action::FocusGpu(0));
        act(&mut state, Action::GpuDetail);
        let points = state.model.history(&g.id).unwrap().points().len();
        let text = screen(&state, 200, 60);
        let braille = text
            .chars()
            .filter(|c| ('\u{2801}'..='\u{28ff}').contains(c))
            .count();
        (points, braille, text)
    };
    let (live_points, live_dots, _) = drawn(false);
    let (points, dots, text) = drawn(true);
    assert_eq!((live_points, points), (1, 121));
    assert!(text.contains("clocks"), "{text}");
    assert!(
        dots > live_dots + 200,
        "the back-history is not charted: {dots} braille cells vs {live_dots} live\n{text}"
    );
}
