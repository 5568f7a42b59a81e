//! Issue 11's screen: charts with one column per sample from the first second, panels
//! that grow into spare rows with their details uncut, two columns of compact lines for
//! 64 GPUs, the host line from fixture /proc files, and the demo opening mid-story (its
//! history back-filled, so the first frame has full charts and every warning kind).

use crate::common;

use std::time::Duration;

use common::{config, demo_state, epoch, render, screen};
use gpuwatch::procinfo::host::HostReader;
use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::{Msg, State, update};
use gpuwatch::wire::WarningCode::{self, IdleHolder, OomRisk, Overheating, StaleVram};
use insta::assert_snapshot;
use ratatui::buffer::Buffer;

/// The cells of the util chart's bottom row in the first panel (the row every non-zero
/// reading fills), as (x range, the row's y).
fn util_chart(buf: &Buffer) -> (std::ops::Range<u16>, u16) {
    let w = buf.area.width;
    let row = |y: u16| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>();
    let label_y = (0..buf.area.height)
        .find(|&y| row(y).contains("util  ") && row(y).contains("temp"))
        .expect("a chart row");
    let text: Vec<String> = (0..w)
        .map(|x| buf[(x, label_y)].symbol().to_string())
        .collect();
    let at = (0..w as usize - 4)
        .find(|&i| text[i..i + 4].concat() == "util")
        .expect("the util label") as u16;
    // The chart runs from after its 6-cell label to the panel's right border.
    let start = at + 6;
    let end = (start..w)
        .find(|&x| ["│", "┃", "║"].contains(&buf[(x, label_y)].symbol()))
        .expect("the border");
    // Its bottom row is the last one before the panel's bottom border.
    let bottom = (label_y..buf.area.height)
        .take_while(|&y| !["╰", "┗", "╚"].contains(&buf[(0, y)].symbol()))
        .last()
        .unwrap();
    (start..end, bottom)
}

fn filled(buf: &Buffer, cols: &std::ops::Range<u16>, y: u16) -> Vec<bool> {
    cols.clone().map(|x| buf[(x, y)].symbol() != " ").collect()
}

#[test]
fn charts_hold_one_column_per_sample_and_scroll_with_the_newest_at_the_right() {
    for samples in [1, 5, 12] {
        let state = demo_state(1, samples, 120, 40);
        let term = render(&state, 120, 40, false);
        let (cols, y) = util_chart(term.backend().buffer());
        let cells = filled(term.backend().buffer(), &cols, y);
        assert!(cells.len() > 12, "a wide chart: {}", cells.len());
        let shown = cells.iter().filter(|f| **f).count();
        assert_eq!(shown, samples, "one column per sample after {samples}");
        // Right-aligned: the newest sample sits at the right edge, the gap on the left.
        assert!(cells[cells.len() - samples..].iter().all(|f| *f));
    }
    // More samples than columns: every column is used and the chart keeps moving.
    let state = demo_state(1, 200, 120, 40);
    let term = render(&state, 120, 40, false);
    let (cols, y) = util_chart(term.backend().buffer());
    assert!(filled(term.backend().buffer(), &cols, y).iter().all(|f| *f));
    let row = |s: &State| {
        let t = render(s, 120, 40, false);
        let (cols, _) = util_chart(t.backend().buffer());
        let label = (0..40)
            .find(|&yy| {
                let b = t.backend().buffer();
                cols.clone().any(|x| b[(x, yy)].symbol() != " ")
                    && (0..120).any(|x| b[(x, yy)].symbol() == "u")
            })
            .unwrap();
        cols.map(|x| t.backend().buffer()[(x, label)].symbol().to_string())
            .collect::<String>()
    };
    let mut later = demo_state(1, 200, 120, 40);
    let before = row(&later);
    let mut source = common::sim(1);
    for _ in 0..=200 {
        let s = source.sample().unwrap();
        update(&mut later, Msg::Sample(Box::new(s)));
    }
    assert_ne!(row(&later), before, "the chart scrolled");
}

#[test]
fn spare_rows_make_taller_panels_with_their_details_uncut() {
    let state = demo_state(8, 76, 200, 60);
    let text = screen(&state, 200, 60);
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains(" 0 · NVIDIA"))
        .unwrap();
    let bottom = lines[top..]
        .iter()
        .position(|l| l.starts_with("\"┗") || l.starts_with("\"╰"))
        .unwrap();
    assert!(bottom + 1 > 6, "panel {} rows tall:\n{text}", bottom + 1);
    // Nothing in the GPU area is cut while the panels have rows to spare: the owners of
    // GPU 0 and the details of the throttled GPUs show in full.
    let gpu_area = &lines[top..top + 3 * (bottom + 1)];
    assert!(
        gpu_area.iter().all(|l| !l.contains('…')),
        "{}",
        gpu_area.join("\n")
    );
    assert!(text.contains("svc nvidia-dcgm (root) 614M"), "{text}");
    assert!(text.contains("ECC 0 · MIG off"), "{text}");
    // The same fleet at 120x40 has no spare row: the smallest panels (one chart row, so
    // that all 9 processes show).
    let text = screen(&demo_state(8, 76, 120, 40), 120, 40);
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains(" 0 · NVIDIA"))
        .unwrap();
    assert!(lines[top + 4].starts_with("\"┗") || lines[top + 4].starts_with("\"╰"));
}

#[test]
fn sixty_four_gpus_at_200x60_fit_in_two_compact_columns() {
    let state = demo_state(64, 76, 200, 60);
    let text = screen(&state, 200, 60);
    assert!(
        !text.contains("scroll)"),
        "all fit, nothing to scroll:\n{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let gpu0 = lines
        .iter()
        .find(|l| l.starts_with("\"  0 "))
        .expect("GPU 0 line");
    assert!(gpu0.contains(" 32 "), "GPU 32 beside GPU 0:\n{text}");
    let last = lines.iter().find(|l| l.starts_with("\" 31 ")).unwrap();
    assert!(last.contains(" 63 "), "GPU 63 beside GPU 31:\n{text}");
    assert_snapshot!(text);
}

#[test]
fn the_host_line_shows_cpu_memory_swap_and_load_from_proc() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "stat",
        "cpu  100 0 100 700 100 0 0 0\ncpu0 1 0 0 0\ncpu1 1 0 0 0\n",
    );
    write(
        "meminfo",
        "MemTotal: 16384000 kB\nMemAvailable: 3801088 kB\nSwapTotal: 2097152 kB\nSwapFree: 1048576 kB\n",
    );
    write("loadavg", "1.50 0.75 0.25 2/345 6789\n");
    let mut reader = HostReader::new(dir.path());
    reader.read();
    write(
        "stat",
        "cpu  150 0 100 850 100 0 0 0\ncpu0 1 0 0 0\ncpu1 1 0 0 0\n",
    );
    let load = reader.read();

    let mut sample = common::sim(1).sample().unwrap();
    sample.host.load = load;
    let mut state = State::new(config());
    update(&mut state, Msg::Sample(Box::new(sample.clone())));
    let want = "CPU 25% · RAM 12.0/15.6 GiB · swap 1.0/2.0 GiB · load 1.50 0.75 0.25 (2 CPUs)";
    // Its own line under the header at 120 columns, in the header at 200.
    let text = screen(&state, 120, 40);
    assert!(text.lines().nth(1).unwrap().contains(want), "{text}");
    let text = screen(&state, 200, 60);
    assert!(text.lines().next().unwrap().contains(want), "{text}");
    // A source that cannot tell (a remote host on an older gpuwatch) says N/A.
    sample.host.load = Default::default();
    update(&mut state, Msg::Sample(Box::new(sample)));
    let text = screen(&state, 120, 40);
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .contains("CPU N/A · RAM N/A · swap N/A · load N/A"),
        "{text}"
    );
}

#[test]
fn the_demo_opens_mid_story_with_full_charts_and_every_warning() {
    let mut sim = SimSource::new(
        8,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: epoch() },
    );
    let prelude = sim.backfill(Duration::from_secs(31 * 60), Duration::from_secs(300));
    let mut state = State::new(config());
    update(
        &mut state,
        Msg::Resize {
            width: 120,
            height: 40,
        },
    );
    for s in prelude {
        update(&mut state, Msg::Sample(Box::new(s)));
    }
    let first = sim.sample().unwrap();
    assert_eq!(first.time, epoch(), "the live story starts now");
    update(&mut state, Msg::Sample(Box::new(first)));
    let term = render(&state, 120, 40, false);
    let (cols, y) = util_chart(term.backend().buffer());
    assert!(
        filled(term.backend().buffer(), &cols, y).iter().all(|f| *f),
        "full charts on the first frame"
    );
    let text = screen(&state, 120, 40);
    let kinds: Vec<WarningCode> = state
        .model
        .warnings()
        .iter()
        .map(|w| w.kind.code())
        .collect();
    for kind in [OomRisk, Overheating, IdleHolder, StaleVram] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}\n{text}");
    }
    assert_snapshot!(text);
}

#[test]
fn a_click_on_the_right_compact_column_focuses_the_gpu_drawn_there() {
    let mut state = demo_state(64, 20, 200, 60);
    let text = screen(&state, 200, 60);
    let (y, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("\"  8 "))
        .expect("GPU 8's line");
    let line: Vec<char> = line.trim_start_matches('"').chars().collect();
    let x = (100..line.len() - 4)
        .find(|&i| line[i..i + 4].iter().collect::<String>() == " 40 ")
        .expect("GPU 40 beside GPU 8") as u16;
    let input = gpuwatch::ui::hit::MouseInput {
        kind: gpuwatch::ui::hit::MouseKind::LeftClick,
        column: x + 2,
        row: y as u16,
    };
    let actions = gpuwatch::ui::hit::actions(&state, input);
    update(&mut state, Msg::Actions(actions));
    assert_eq!(state.focus(), Some(&state.model.gpus()[40].id));
}

#[test]
fn every_size_from_the_smallest_up_draws_without_panicking() {
    for gpus in [1, 8, 64] {
        let mut state = demo_state(gpus, 3, 60, 15);
        for (w, h) in [
            (60, 15),
            (61, 16),
            (80, 24),
            (99, 30),
            (179, 45),
            (180, 50),
            (201, 61),
            (320, 90),
        ] {
            update(
                &mut state,
                Msg::Resize {
                    width: w,
                    height: h,
                },
            );
            let text = screen(&state, w, h);
            assert!(
                text.contains("Processes ("),
                "{gpus} GPUs at {w}x{h}:\n{text}"
            );
        }
    }
}
