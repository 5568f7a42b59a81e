//! Issue 11's "rough edges found trying it", one test each: sort titles and arrows, the
//! selection from the first frame, every warning readable, other users dimmed, two-digit
//! GPU focus, the HOST column's width, help at 80x24, unknown power beside its limit, and
//! `--once` with CPU% and the configured columns.

use crate::common;

use common::{demo_state, render, screen, sim};
use gpuwatch::model::procs::SortKey;
use gpuwatch::reading::Sample;
use gpuwatch::source::GpuSource;
use gpuwatch::state::{Action, Msg, State, update};
use ratatui::style::Color;

fn act(state: &mut State, action: Action) {
    update(state, Msg::Action(action));
}

/// The line of the screen that holds `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{text}"))
}

#[test]
fn a_sorted_columns_title_keeps_every_letter_and_its_arrow() {
    let mut state = demo_state(8, 3, 120, 40);
    for (key, title) in [
        (SortKey::GpuUtil, "GPU%▼"),
        (SortKey::HostMemory, "HOST MEM▼"),
        (SortKey::Gpu, "GPU▲"),
        (SortKey::Type, "TYPE▲"),
        (SortKey::Cpu, "CPU%▼"),
    ] {
        act(&mut state, Action::SortBy(key));
        let text = screen(&state, 120, 40);
        let header = line_with(&text, "COMMAND");
        assert!(header.contains(title), "{key:?}: {header}");
    }
}

#[test]
fn type_is_sortable_by_s_and_by_a_click_on_its_title() {
    let mut state = demo_state(8, 3, 120, 40);
    act(&mut state, Action::SortBy(SortKey::Job));
    act(&mut state, Action::SortNext);
    assert_eq!(state.model.procs().sort, SortKey::Type);
    act(&mut state, Action::SortBy(SortKey::Vram));
    let text = screen(&state, 120, 40);
    let (y, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("COMMAND"))
        .unwrap();
    let x = line.find("TYPE").unwrap() as u16;
    use gpuwatch::ui::hit::{MouseInput, MouseKind};
    let click = MouseInput {
        kind: MouseKind::LeftClick,
        column: x,
        row: y as u16,
    };
    let actions = gpuwatch::ui::hit::actions(&state, click);
    assert_eq!(actions, [Action::SortByOrReverse(SortKey::Type)]);
}

#[test]
fn the_first_row_is_selected_from_the_first_frame_and_a_chosen_one_follows_its_process() {
    let mut state = demo_state(8, 1, 120, 40);
    let first = state.model.procs().row(0).unwrap().key.clone();
    assert_eq!(state.model.procs().selected.as_ref(), Some(&first));
    let text = screen(&state, 120, 40);
    assert!(
        text.contains(&format!("PID {} ", first.pid)),
        "the footer names the selected process:\n{text}"
    );
    // Nothing chosen yet: a new sort still shows its first row selected.
    act(&mut state, Action::SortBy(SortKey::Pid));
    let top = state.model.procs().row(0).unwrap().key.clone();
    assert_eq!(state.model.procs().selected.as_ref(), Some(&top));
    // Once the user has chosen a row, a new sort moves the row and the selection stays on
    // the process.
    act(&mut state, Action::SelectDown);
    let chosen = state.model.procs().row(1).unwrap().key.clone();
    act(&mut state, Action::SortBy(SortKey::Vram));
    assert_eq!(state.model.procs().selected.as_ref(), Some(&chosen));
}

#[test]
fn w_lists_every_warning_even_those_the_bar_has_no_room_for() {
    let mut state = demo_state(64, 200, 80, 24);
    let total = state.model.warnings().len();
    let bar = screen(&state, 80, 24);
    assert!(bar.contains("more warnings (w: list them all)"), "{bar}");
    act(&mut state, Action::ToggleWarnings);
    let mut seen = String::new();
    for _ in 0..20 {
        seen += &screen(&state, 80, 24);
        act(&mut state, Action::PageDown);
    }
    for w in state.model.warnings() {
        let words = gpuwatch::ui::text::warning_line(w);
        // Wrapped at the popup's width: look for its first words.
        let start: String = words.chars().take(30).collect();
        assert!(seen.contains(&start), "{start:?} of {total} never shown");
    }
    act(&mut state, Action::Back);
    assert!(!state.view.show_warnings);
    let help = gpuwatch::keymap::markdown_table();
    assert!(help.contains("list every warning"), "{help}");
}

#[test]
fn other_users_rows_are_dimmed_and_your_own_highlighted() {
    let state = demo_state(8, 3, 120, 40);
    let term = render(&state, 120, 40, true);
    let at = |needle: &str| common::find(&term, needle);
    let (x, y) = at("carol");
    assert_eq!(term.backend().buffer()[(x, y)].fg, Color::DarkGray);
    // alice (the current user) has the first rows; skip the selected one.
    let (x, y) = at("alice     slurm");
    let cell = &term.backend().buffer()[(x, y)];
    assert!(
        cell.fg == Color::Cyan || cell.modifier.contains(ratatui::style::Modifier::REVERSED),
        "{cell:?}"
    );
}

#[test]
fn two_digits_typed_in_a_row_focus_a_two_digit_gpu() {
    let mut state = demo_state(16, 2, 200, 60);
    let focused = |s: &State| {
        let id = s.focus().cloned();
        s.model
            .gpus()
            .iter()
            .find(|g| Some(&g.id) == id.as_ref())
            .map(|g| g.index)
    };
    act(&mut state, Action::FocusGpu(1));
    assert_eq!(focused(&state), Some(1), "a lone 1 focuses GPU 1 at once");
    act(&mut state, Action::FocusGpu(2));
    assert_eq!(focused(&state), Some(12));
    // A digit after the number is done (two samples later) starts a new one.
    act(&mut state, Action::FocusGpu(1));
    let mut source = sim(16);
    for _ in 0..2 {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
    }
    act(&mut state, Action::FocusGpu(2));
    assert_eq!(focused(&state), Some(2));
    // Any other key ends the number too.
    act(&mut state, Action::FocusGpu(1));
    act(&mut state, Action::SelectDown);
    act(&mut state, Action::FocusGpu(3));
    assert_eq!(focused(&state), Some(3));
    // On 8 GPUs there is no GPU 12: 1 then 2 is GPU 2.
    let mut small = demo_state(8, 2, 200, 60);
    act(&mut small, Action::FocusGpu(1));
    act(&mut small, Action::FocusGpu(2));
    assert_eq!(focused(&small), Some(2));
}

/// A demo sample whose GPUs sit on two hosts with long names, as `--remote` names them.
fn on_two_hosts(mut sample: Sample) -> Sample {
    for (i, g) in sample.gpus.iter_mut().enumerate() {
        g.host = Some(format!("127.0.0.1:3{}", 3895 + 316 * (i % 2)));
    }
    sample
}

#[test]
fn the_host_column_is_as_wide_as_its_host_names() {
    let mut source = sim(8);
    let state = common::state_of_sample(on_two_hosts(source.sample().unwrap()), 160, 40);
    let text = screen(&state, 160, 40);
    assert!(text.contains("127.0.0.1:33895"), "{text}");
    assert!(text.contains("127.0.0.1:34211"), "{text}");
}

#[test]
fn help_at_80x24_wraps_or_pages_instead_of_cutting() {
    let mut state = demo_state(8, 3, 80, 24);
    act(&mut state, Action::ToggleHelp);
    let mut seen = String::new();
    for _ in 0..6 {
        let text = screen(&state, 80, 24);
        // The popup's rows (between its side borders): the screen behind may cut its own.
        let popup: Vec<&str> = text.lines().filter(|l| l.starts_with("\"│")).collect();
        assert!(
            popup.iter().all(|l| !l.contains('…')),
            "nothing is cut:\n{text}"
        );
        seen += &text;
        act(&mut state, Action::PageDown);
    }
    assert!(seen.contains("page 1 of"), "{seen}");
    let words: String = seen.split_whitespace().collect::<Vec<_>>().join(" ");
    for b in gpuwatch::keymap::all_bindings() {
        let first: String = b
            .help
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(words.contains(&first), "help lacks {:?}", b.help);
    }
}

#[test]
fn unknown_power_beside_a_known_limit_says_so() {
    let mut source = sim(1);
    let mut sample = source.sample().unwrap();
    sample.gpus[0].power = None;
    let limit = sample.gpus[0].power_limit.expect("the demo has a limit").0;
    let mut state = common::state_of_sample(sample, 120, 40);
    state.view.layout = gpuwatch::state::LayoutPref::Full;
    let text = screen(&state, 120, 40);
    let want = format!("N/A (limit {limit:.0} W)");
    assert!(text.contains(&want), "{text}");
    assert!(!text.contains("N/A/"), "{text}");
}

/// The fake NVML's two GPUs with a real `sleep` of ours on the first.
fn scenario_with(dir: &std::path::Path, pid: u32) -> std::path::PathBuf {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/nvml/two_gpus.json"
    );
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    s["gpus"][0]["processes"] =
        serde_json::json!([{"pid": pid, "kind": "compute", "used_memory": 1_073_741_824u64}]);
    s["gpus"][1]["processes"] = serde_json::json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, s.to_string()).unwrap();
    path
}

#[test]
fn once_on_a_real_host_has_cpu_percent_and_the_configured_columns() {
    let mut sleep = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_with(dir.path(), sleep.id());
    let run = |args: &[&str]| {
        let out = common::clean_command()
            .env("GPUWATCH_FAKE_NVML_SCENARIO", &scenario)
            .arg("--nvml-lib")
            .arg(common::fake_lib())
            .args(args)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let doc: serde_json::Value = serde_json::from_str(&run(&["--once", "--json"])).unwrap();
    let cpu = &doc["processes"][0]["cpu_percent"];
    assert!(cpu.is_number(), "CPU% from a second sample: {doc:#}");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[columns]\nvisible = [\"pid\", \"cpu\", \"command\"]\n",
    )
    .unwrap();
    let text = run(&["--config", config.to_str().unwrap(), "--once"]);
    let header = line_with(&text, "COMMAND");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["PID", "CPU%", "COMMAND"],
        "{text}"
    );
    let row = line_with(&text, "sleep 30");
    assert!(!row.contains("N/A"), "CPU% is known: {row}");
    // The TUI's host line, with this machine's CPU % from the same two samples.
    let host = line_with(&text, "host: CPU ");
    let cpu = host["host: CPU ".len()..].split('%').next().unwrap();
    assert!(cpu.parse::<f64>().is_ok(), "host CPU % is a number: {host}");
    assert!(
        host.contains(" · RAM ") && host.contains(" · load "),
        "{host}"
    );
    let _ = sleep.kill();
    let _ = sleep.wait();
}
