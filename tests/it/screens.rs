//! Whole-frame snapshots of the real draw code on ratatui's TestBackend, driven by the
//! simulated fleet through `update`, plus direct checks of a few cell styles (snapshots
//! carry no colour).

use crate::common;

use std::time::Duration;

use common::{demo_state, find, render, screen};
use gpuwatch::reading::{GpuId, GpuReading, GpuStatus, HostInfo, Sample};
use gpuwatch::state::{Action, Msg, State, update};
use gpuwatch::units::{Bytes, Celsius, MegaHertz, Percent, Watts};
use insta::assert_snapshot;
use ratatui::style::{Color, Modifier};

/// 75 s into the demo: GPU 2 is at 98 % VRAM, GPU 3 has been above 90 °C for 30 s+.
const LATE: usize = 76;
/// 10 s in: GPU 2 is filling fast (time-to-full), GPU 3 is running hot but not yet critical.
const EARLY: usize = 10;

macro_rules! fleet_snapshots {
    ($($name:ident: $gpus:expr, $w:expr, $h:expr;)*) => {$(
        #[test]
        fn $name() {
            let state = demo_state($gpus, LATE, $w, $h);
            assert_snapshot!(screen(&state, $w, $h));
        }
    )*};
}

fleet_snapshots! {
    gpus_1_at_80x24: 1, 80, 24;
    gpus_1_at_120x40: 1, 120, 40;
    gpus_1_at_200x60: 1, 200, 60;
    gpus_8_at_80x24: 8, 80, 24;
    gpus_8_at_120x40: 8, 120, 40;
    gpus_8_at_200x60: 8, 200, 60;
    gpus_16_at_80x24: 16, 80, 24;
    gpus_16_at_120x40: 16, 120, 40;
    gpus_16_at_200x60: 16, 200, 60;
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn eight_gpus_at_80x24_are_compact_with_at_least_five_process_rows() {
    let state = demo_state(8, LATE, 80, 24);
    let text = screen(&state, 80, 24);
    // One line per GPU, with its owners on the same line.
    let gpu0 = lines(&text)
        .into_iter()
        .find(|l| l.starts_with("\"  0 "))
        .unwrap();
    assert!(gpu0.contains("slurm 48121 (alice) 64.0G"), "{text}");
    assert!(
        !text.contains('╭'),
        "no full panels in compact mode:\n{text}"
    );
    let header = lines(&text)
        .iter()
        .position(|l| l.contains("PID") && l.contains("COMMAND"))
        .unwrap();
    let rows = lines(&text)[header + 1..]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(rows >= 5, "only {rows} process rows:\n{text}");
}

#[test]
fn early_warnings_are_time_to_full_and_running_hot() {
    let state = demo_state(8, EARLY, 120, 40);
    let text = screen(&state, 120, 40);
    assert!(
        text.contains("GPU 2 VRAM") && text.contains("OOM risk, full in ~"),
        "{text}"
    );
    assert!(
        text.contains("GPU 3 86°C — running hot (slowdown at 94°C)") || text.contains("GPU 3 8"),
        "{text}"
    );
    assert_snapshot!(text);
}

#[test]
fn late_warnings_are_critical() {
    let state = demo_state(8, LATE, 120, 40);
    let text = screen(&state, 120, 40);
    assert!(
        text.contains(" CRIT  GPU 2 VRAM 98% (78.0/79.6 GiB) — OOM risk"),
        "{text}"
    );
    assert!(text.contains("— overheating (slowdown at 94°C)"), "{text}");
}

/// One GPU with every reading absent, one with real zeros, and one lost.
fn absent_zero_lost_sample() -> Sample {
    let absent = GpuReading::absent(GpuId("GPU-absent".into()), 0, "Mystery GPU");
    let mut zero = GpuReading::absent(GpuId("GPU-zero".into()), 1, "Idle GPU");
    zero.util = Some(Percent(0));
    zero.memory_util = Some(Percent(0));
    zero.memory_total = Some(Bytes::from_gib(16.0));
    zero.memory_used = Some(Bytes(0));
    zero.temperature = Some(Celsius(0));
    zero.power = Some(Watts(0.0));
    zero.power_limit = Some(Watts(0.0));
    zero.fan = Some(Percent(0));
    zero.sm_clock = Some(MegaHertz(0));
    zero.memory_clock = Some(MegaHertz(0));
    zero.pstate = Some(0);
    let mut lost = GpuReading::absent(GpuId("GPU-lost".into()), 2, "Lost GPU");
    lost.status = GpuStatus::Lost;
    Sample {
        time: common::epoch(),
        host: HostInfo {
            hostname: "testbox".into(),
            driver_version: None,
            cuda_version: None,
            load: Default::default(),
            lookups: Vec::new(),
        },
        gpus: vec![absent, zero, lost],
        processes: vec![],
        hosts: Vec::new(),
        history: None,
    }
}

fn absent_zero_lost_state(w: u16, h: u16) -> State {
    common::state_of_sample(absent_zero_lost_sample(), w, h)
}

#[test]
fn absent_readings_show_na_and_zeros_show_zero_full() {
    let state = absent_zero_lost_state(120, 40);
    let text = screen(&state, 120, 40);
    assert!(text.contains("N/A"), "{text}");
    assert!(
        text.contains("0°C") && text.contains("0/0 W") && text.contains("0.0/16.0 GiB"),
        "{text}"
    );
    assert!(text.contains("LOST — not responding"), "{text}");
    assert!(text.contains("GPU 2 lost"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn absent_readings_show_na_and_zeros_show_zero_compact() {
    let mut state = absent_zero_lost_state(80, 24);
    state.view.layout = gpuwatch::state::LayoutPref::Compact;
    assert_snapshot!(screen(&state, 80, 24));
}

#[test]
fn too_small_terminal_says_so() {
    let state = demo_state(8, 3, 40, 10);
    let text = screen(&state, 40, 10);
    assert!(text.contains("terminal too small"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn help_lists_the_keymap() {
    let mut state = demo_state(8, 3, 120, 40);
    update(&mut state, Msg::Action(Action::ToggleHelp));
    let text = screen(&state, 120, 40);
    for b in gpuwatch::keymap::BINDINGS {
        assert!(text.contains(b.help), "help lacks {:?}:\n{text}", b.help);
    }
    assert_snapshot!(text);
}

#[test]
fn paused_marker_and_frozen_readings() {
    let mut state = demo_state(8, 3, 120, 40);
    update(&mut state, Msg::Action(Action::TogglePause));
    let before = state.model.now();
    let mut src = common::sim(8);
    update(
        &mut state,
        Msg::Sample(Box::new(
            gpuwatch::source::GpuSource::sample(&mut src).unwrap(),
        )),
    );
    assert_eq!(
        state.model.now(),
        before,
        "samples are not applied while paused"
    );
    assert!(screen(&state, 120, 40).contains(" PAUSED "));
}

// ---- styles ----------------------------------------------------------------------------

#[test]
fn critical_warnings_are_red_in_colour_and_reversed_in_mono() {
    let state = demo_state(8, LATE, 120, 40);
    let color = render(&state, 120, 40, true);
    let (x, y) = find(&color, " CRIT ");
    let cell = &color.backend().buffer()[(x + 1, y)];
    assert_eq!(cell.bg, Color::Red);
    let mono = render(&state, 120, 40, false);
    let cell = &mono.backend().buffer()[(x + 1, y)];
    assert_eq!(cell.bg, Color::Reset);
    assert_eq!(cell.fg, Color::Reset);
    assert!(
        cell.modifier.contains(Modifier::REVERSED | Modifier::BOLD),
        "mono warnings still stand out"
    );
    // "Instant and truthful" §5: the mono theme (NO_COLOR) never blinks, anywhere.
    let blinking = mono
        .backend()
        .buffer()
        .content()
        .iter()
        .filter(|c| {
            c.modifier
                .intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK)
        })
        .count();
    assert_eq!(blinking, 0, "cells blinking in the mono theme");
}

#[test]
fn own_processes_are_highlighted_and_selection_is_reversed() {
    let mut state = demo_state(8, LATE, 120, 40);
    let term = render(&state, 120, 40, true);
    let (x, y) = find(&term, "alice     slurm");
    assert_eq!(
        term.backend().buffer()[(x, y)].fg,
        Color::Cyan,
        "current user (alice) highlighted"
    );
    let (x, y) = find(&term, "carol");
    assert_ne!(term.backend().buffer()[(x, y)].fg, Color::Cyan);

    update(&mut state, Msg::Action(Action::SelectFirst));
    let term = render(&state, 120, 40, true);
    let row = state.model.procs().selected_row().unwrap();
    let (x, y) = find(&term, &row.command[..20]);
    assert!(
        term.backend().buffer()[(x, y)]
            .modifier
            .contains(Modifier::REVERSED)
    );
}

#[test]
fn overheating_panel_border_turns_red() {
    let state = demo_state(8, LATE, 200, 60);
    let term = render(&state, 200, 60, true);
    let (x, y) = find(&term, "┏ 3 · NVIDIA");
    assert_eq!(term.backend().buffer()[(x, y)].fg, Color::LightRed);
    let (x, y) = find(&term, "╭ 6 · NVIDIA");
    assert_eq!(
        term.backend().buffer()[(x, y)].fg,
        Color::DarkGray,
        "a healthy GPU stays calm"
    );
}

#[test]
fn interval_shown_in_header() {
    let mut state = demo_state(1, 1, 80, 24);
    state.config.interval = Duration::from_millis(500);
    assert!(screen(&state, 80, 24).contains("every 500ms"));
}

#[test]
fn throttle_reasons_and_nvml_details_show_in_the_panel_border() {
    let state = demo_state(8, LATE, 200, 60);
    let term = render(&state, 200, 60, true);
    let (x, y) = find(&term, "clocks: power cap, thermal");
    let thermal = x + "clocks: power cap, ".chars().count() as u16;
    assert_eq!(
        term.backend().buffer()[(thermal, y)].fg,
        Color::LightRed,
        "a slowdown is loud"
    );
    let (x, y) = find(&term, "clocks: idle");
    assert_eq!(
        term.backend().buffer()[(x + 8, y)].fg,
        Color::DarkGray,
        "idle is quiet"
    );
    find(&term, "PCIe 5×16 ↑1.");
    find(&term, "ECC 0 · MIG off");
}

/// Every number on screen with the character after it (`\n` at a line's end): a number cut
/// short shows as a pair the whole screen never has (`62│` for 6251, `41.…` for 41.2G).
fn number_contexts(text: &str) -> Vec<(String, char)> {
    let mut out = Vec::new();
    for line in text.lines() {
        // TestBackend writes each row in quotes.
        let line: Vec<char> = line.trim_matches('"').chars().collect();
        let mut i = 0;
        while i < line.len() {
            if !line[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < line.len()
                && (line[i].is_ascii_digit()
                    || (line[i] == '.' && line.get(i + 1).is_some_and(char::is_ascii_digit)))
            {
                i += 1;
            }
            let next = line.get(i).copied().unwrap_or('\n');
            out.push((line[start..i].iter().collect(), next));
        }
    }
    out
}

/// "Instant and truthful" §2: at every width from 60 to 220 columns, every panel kind (full
/// NVIDIA readings, MIG, AMD, Intel, all N/A, real zeros, lost) shows each number whole or
/// not at all. Each number with the character after it must also be on the same screen
/// drawn 400 columns wide, where nothing is cut. `clk 1354/62` (1354/6251 MHz) and
/// `clk 2100/1300 MH` failed this.
#[test]
fn no_number_on_screen_is_ever_cut() {
    let mixed = mixed_state(400, 40);
    let kinds = [
        ("the mixed demo (NVIDIA, MIG, AMD, Intel)", mixed),
        (
            "absent, zero and lost readings",
            absent_zero_lost_state(400, 40),
        ),
    ];
    for (name, mut state) in kinds {
        for h in [24, 40, 60] {
            update(
                &mut state,
                Msg::Resize {
                    width: 400,
                    height: h,
                },
            );
            let whole = number_contexts(&screen(&state, 400, h));
            let mut cut = Vec::new();
            for w in 60..=220 {
                update(
                    &mut state,
                    Msg::Resize {
                        width: w,
                        height: h,
                    },
                );
                for (number, next) in number_contexts(&screen(&state, w, h)) {
                    // Cut short: `…` right after it, or a number at the edge of a panel or
                    // of the screen that the wide screen does not show at all.
                    let at_an_edge = "\n│┃║┐┓╗┘┛╝╮╯".contains(next);
                    if next == '…' || (at_an_edge && !whole.iter().any(|(n, _)| *n == number)) {
                        cut.push(format!("{w}x{h}: {number}{next}"));
                    }
                }
            }
            cut.dedup();
            assert!(cut.is_empty(), "{name}: numbers cut short: {cut:?}");
        }
    }
}

/// Screen rows with nothing on them at all.
fn blank_rows(text: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_matches('"').trim().is_empty())
        .count()
}

/// What the screen leaves out that more rows would show: processes below the table's end,
/// GPUs scrolled out of view, or full panels whose charts could still grow.
fn hidden_content(state: &State, w: u16, h: u16, blank: usize) -> Vec<String> {
    use gpuwatch::layout;
    let a = layout::areas(
        &state.layout_input(),
        ratatui::layout::Rect::new(0, 0, w, h),
    );
    let mut hidden = Vec::new();
    let (procs, rows) = (state.model.procs().len(), a.table.height.saturating_sub(2));
    if (rows as usize) < procs {
        hidden.push(format!("{rows} of {procs} processes shown"));
    }
    let shown = layout::gpu_rects(&a, &state.gpu_lines(), state.view.gpu_scroll).len();
    if shown < state.model.gpus().len() {
        hidden.push(format!(
            "{shown} of {} GPUs shown",
            state.model.gpus().len()
        ));
    }
    let panel_rows = layout::visible_gpus(&a).div_ceil(a.columns.max(1) as usize);
    // The table keeps its smallest height even with fewer processes, so the screen does not
    // jump as they come and go: those rows are the table's, not spare.
    let kept = usize::from(layout::MIN_TABLE_ROWS).saturating_sub(procs);
    if !a.compact && blank.saturating_sub(kept) >= panel_rows {
        hidden.push(format!("panels {} rows high", a.panel_height));
    }
    hidden
}

/// The mixed demo (NVIDIA, MIG, AMD, Intel) after `LATE` samples, sized `w` x `h`.
fn mixed_state(w: u16, h: u16) -> State {
    use gpuwatch::source::sim::{Scenario, SimClock, SimSource};
    let source = SimSource::new(
        1,
        42,
        Duration::from_secs(1),
        SimClock::Virtual {
            start: common::epoch(),
        },
    )
    .with_scenario(Scenario::Mixed);
    common::state_after(source, common::config(), LATE, w, h)
}

/// Issue 20 §3: no row is left blank while something is hidden that it could show, for
/// the demo with 1, 8, 16 and 64 GPUs and the mixed demo, at 80x24, 120x40 and 200x60.
/// Taller charts need a row per row of panels, so fewer blank rows than that hide nothing.
#[test]
fn no_blank_rows_while_content_is_hidden() {
    let mut wasted = Vec::new();
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let fleets =
            [1, 8, 16, 64].map(|gpus| (format!("{gpus} GPUs"), demo_state(gpus, LATE, w, h)));
        for (name, state) in fleets
            .into_iter()
            .chain([("the mixed demo".into(), mixed_state(w, h))])
        {
            let blank = blank_rows(&screen(&state, w, h));
            let hidden = hidden_content(&state, w, h, blank);
            if blank > 0 && !hidden.is_empty() {
                wasted.push(format!("{name} at {w}x{h}: {blank} blank rows, {hidden:?}"));
            }
        }
    }
    assert!(wasted.is_empty(), "{}", wasted.join("\n"));
}

/// Issue 20 §3: 8 GPUs at 120x40 show all 9 of the demo's processes (the panels' charts
/// give up their second row for it), and 16 GPUs at 80x24 all show, in two columns.
#[test]
fn every_process_and_gpu_shows_where_the_screen_can_hold_them() {
    use gpuwatch::layout;
    // (16 GPUs' 16 processes cannot all show at 80x24 as well.)
    for (gpus, w, h, what) in [(8, 120, 40, ""), (16, 80, 24, "GPUs")] {
        let state = demo_state(gpus, LATE, w, h);
        let text = screen(&state, w, h);
        let hidden = hidden_content(&state, w, h, usize::MAX);
        let cut: Vec<_> = hidden
            .iter()
            .filter(|h| !h.starts_with("panels") && h.contains(what))
            .collect();
        assert!(cut.is_empty(), "{gpus} GPUs at {w}x{h}: {cut:?}\n{text}");
        assert!(!text.contains("hidden"), "{text}");
    }
    let a = layout::areas(
        &demo_state(16, LATE, 80, 24).layout_input(),
        ratatui::layout::Rect::new(0, 0, 80, 24),
    );
    assert!(a.compact && a.columns == 2, "{a:?}");
}

/// Issue 20 §3: 64 GPUs are usable at every size: those out of view are counted on screen
/// with the keys that bring them, and scrolling moves the list.
#[test]
fn sixty_four_gpus_say_how_many_are_hidden_and_scroll() {
    use gpuwatch::layout;
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let mut state = demo_state(64, LATE, w, h);
        let text = screen(&state, w, h);
        let a = layout::areas(
            &state.layout_input(),
            ratatui::layout::Rect::new(0, 0, w, h),
        );
        let shown = layout::gpu_rects(&a, &state.gpu_lines(), 0).len();
        if shown == 64 {
            assert!(!text.contains("hidden"), "{w}x{h}:\n{text}");
            continue;
        }
        let says = format!("1-{shown} of 64, {} hidden ([ ] scroll)", 64 - shown);
        assert!(text.contains(&says), "{w}x{h} lacks {says:?}:\n{text}");
        update(&mut state, Msg::Action(Action::ScrollGpusDown));
        let text = screen(&state, w, h);
        assert!(
            text.contains("2-"),
            "{w}x{h}: scrolling moved the list:\n{text}"
        );
    }
}

/// Each full panel's shape on screen: (column, height, row of the PCIe line, row of the charts),
/// rows counted from the panel's top border; the PCIe row is the bottom border's when the
/// details sit there.
fn panel_shapes(text: &str) -> Vec<(usize, usize, Option<usize>, Option<usize>)> {
    let rows: Vec<Vec<char>> = text
        .lines()
        .map(|l| l.trim_matches('"').chars().collect())
        .collect();
    let mut out = Vec::new();
    for (y, row) in rows.iter().enumerate() {
        for (x, c) in row.iter().enumerate() {
            if !"╭┏╔".contains(*c) {
                continue;
            }
            let Some(height) = (y + 1..rows.len())
                .find(|r| rows[*r].get(x).is_some_and(|c| "╰┗╚".contains(*c)))
                .map(|bottom| bottom - y + 1)
            else {
                continue;
            };
            let width = (x + 1..row.len())
                .find(|i| "╮┓╗".contains(row[*i]))
                .map_or(row.len() - x, |end| end - x + 1);
            let inside = |r: usize| -> String { rows[y + r].iter().skip(x).take(width).collect() };
            let pcie = (1..height).find(|r| inside(*r).contains("PCIe"));
            let charts = (1..height).find(|r| inside(*r).contains("temp "));
            out.push((x, height, pcie, charts));
        }
    }
    out
}

/// Issue 20 §3: neighbouring panels are laid out alike: the PCIe/ECC line in the same place
/// (inside all of them or in all their borders) and charts of one height.
#[test]
fn panels_shown_together_have_one_shape() {
    for (gpus, w, h) in [(8, 200, 60), (8, 120, 40), (16, 200, 60), (4, 200, 60)] {
        let state = demo_state(gpus, LATE, w, h);
        let text = screen(&state, w, h);
        let shapes = panel_shapes(&text);
        assert!(
            shapes.len() > 1,
            "{gpus} GPUs at {w}x{h}: no panels\n{text}"
        );
        let first = shapes[0];
        for s in &shapes {
            assert_eq!(
                (s.1, s.2, s.3),
                (first.1, first.2, first.3),
                "{gpus} GPUs at {w}x{h}: panels differ (height, PCIe row, chart row)\n{text}"
            );
        }
        assert!(first.2.is_some() && first.3.is_some(), "{text}");
    }
}

/// "Instant and truthful" §5: a GPU nobody is named on says why it is not free (busy, or
/// VRAM in use) instead of a bare `—`, and `--once` writes `free` (or why not) exactly
/// where the TUI does: both read `owners::unheld`.
#[test]
fn a_gpu_with_no_process_listed_says_why_it_is_not_free() {
    let mut sample = absent_zero_lost_sample();
    let gpu = |n: u32, name: &str, util: u32, used_mib: u64, total_gib: f64| {
        let mut g = GpuReading::absent(GpuId(format!("GPU-{name}")), n, name);
        g.util = Some(Percent(util));
        g.memory_total = Some(Bytes::from_gib(total_gib));
        g.memory_used = Some(Bytes(used_mib << 20));
        g
    };
    sample.gpus = vec![
        gpu(0, "Busy GPU", 80, 300, 16.0),
        gpu(1, "Idle GPU", 0, 200, 16.0),
        gpu(2, "Holding GPU", 0, 900, 8.0),
    ];
    for (w, h, compact) in [(120, 40, false), (120, 40, true), (80, 24, true)] {
        let mut state = common::state_of_sample(sample.clone(), w, h);
        if compact {
            state.view.layout = gpuwatch::state::LayoutPref::Compact;
        }
        let text = screen(&state, w, h);
        let line_of = |n: &str| {
            text.lines()
                .find(|l| l.contains(n))
                .unwrap_or_else(|| panic!("no {n:?} at {w}x{h}:\n{text}"))
                .to_string()
        };
        if compact {
            // The compact lines: `  0 …` in the order of the GPUs.
            let gpus: Vec<&str> = text
                .lines()
                .filter(|l| {
                    ["\"  0 ", "\"  1 ", "\"  2 "]
                        .iter()
                        .any(|p| l.starts_with(p))
                })
                .collect();
            assert_eq!(gpus.len(), 3, "{text}");
            assert!(gpus[0].contains("busy, no process"), "{text}");
            assert!(gpus[1].contains("free"), "{text}");
            assert!(gpus[2].contains("VRAM in use"), "{text}");
        } else {
            assert!(
                line_of("Busy GPU").contains("busy, no process listed"),
                "{text}"
            );
            assert!(line_of("Idle GPU").contains(" free "), "{text}");
            assert!(
                line_of("Holding GPU").contains("VRAM in use, no process listed"),
                "{text}"
            );
        }
        assert!(!text.contains('—'), "a bare dash:\n{text}");
        let once = gpuwatch::headless::render_text(&state);
        for (name, words) in [
            ("Busy GPU", "busy, no process listed"),
            ("Idle GPU", "free"),
            ("Holding GPU", "VRAM in use, no process listed"),
        ] {
            let line = once
                .lines()
                .find(|l| l.contains(name))
                .unwrap_or_else(|| panic!("--once lacks {name}:\n{once}"));
            assert!(line.contains(words), "--once: {line:?}\n{once}");
        }
    }
}
