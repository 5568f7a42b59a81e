//! The byte-saving encoder (`terminal::encode`) against a real terminal: frames of the demo
//! fleet, drawn by the real UI code, are encoded one after the other as the TUI sends them
//! (every cell, compared with the encoder's shadow), written into a tmux pane, and the pane
//! must then show exactly the last frame — every character, and the colour and boldness of
//! every cell. Skipped (with a message) only when tmux is missing.

use crate::common;

use std::time::Duration;

use common::tmux::Tmux;
use gpuwatch::source::GpuSource;
use gpuwatch::state::{Msg, State, update};
use gpuwatch::terminal::encode::{Encoder, NAMED};
use gpuwatch::ui::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};

const W: u16 = 200;
const H: u16 = 50;

/// Ten seconds of the 8-GPU demo at `W`x`H`: the charts scroll, readings change.
fn frames() -> Vec<Buffer> {
    let mut source = common::sim(8);
    let mut state = State::new(common::config());
    update(
        &mut state,
        Msg::Resize {
            width: W,
            height: H,
        },
    );
    let mut terminal = Terminal::new(TestBackend::new(W, H)).unwrap();
    let theme = Theme::new(true);
    let mut out = Vec::new();
    for i in 0..70 {
        let sample = source.sample().unwrap();
        update(&mut state, Msg::Sample(Box::new(sample)));
        if i >= 60 {
            terminal.draw(|f| ui::draw(f, &state, &theme)).unwrap();
            out.push(terminal.backend().buffer().clone());
        }
    }
    out
}

/// The pane's cells as tmux holds them: text, foreground colour and bold per cell, read
/// from `capture-pane -e` (tmux's own SGR codes, which this parser understands).
fn pane_cells(t: &Tmux) -> Vec<Vec<(String, Color, bool)>> {
    let out = t
        .cmd(&["capture-pane", "-p", "-e", "-N", "-t", "0"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rows = Vec::new();
    // tmux carries a style from the end of one line into the next without repeating it.
    let (mut fg, mut bold) = (Color::Reset, false);
    for line in text.lines() {
        let mut row = Vec::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            if c != '\x1b' {
                row.push((c.to_string(), fg, bold));
                continue;
            }
            assert_eq!(chars.next(), Some('['));
            let params: String = chars.by_ref().take_while(|c| *c != 'm').collect();
            let nums: Vec<u8> = params.split(';').map(|p| p.parse().unwrap_or(0)).collect();
            let mut i = 0;
            while i < nums.len() {
                match nums[i] {
                    0 => (fg, bold) = (Color::Reset, false),
                    1 => bold = true,
                    22 => bold = false,
                    39 => fg = Color::Reset,
                    k @ 30..=37 => fg = NAMED[usize::from(k - 30)],
                    k @ 90..=97 => fg = NAMED[usize::from(k - 90 + 8)],
                    38 if nums.get(i + 1) == Some(&5) => {
                        fg = NAMED
                            .get(usize::from(nums[i + 2]))
                            .copied()
                            .unwrap_or(Color::Indexed(nums[i + 2]));
                        i += 2;
                    }
                    48 if nums.get(i + 1) == Some(&5) => i += 2,
                    38 | 48 => i += 4,
                    _ => {}
                }
                i += 1;
            }
        }
        rows.push(row);
    }
    rows
}

#[test]
fn encoded_frames_leave_a_real_terminal_showing_the_last_frame_exactly() {
    let Some(t) = Tmux::start("bytes", W, H) else {
        return;
    };
    let frames = frames();
    let mut encoder = Encoder::new();
    encoder.fit(Rect::new(0, 0, W, H));
    let mut bytes = Vec::new();
    // Every cell of each frame, as `terminal::draw` hands them: the encoder sends the
    // changed ones.
    for frame in &frames {
        let cells = frame.content.iter().enumerate().map(|(i, cell)| {
            let (x, y) = frame.pos_of(i);
            (x, y, cell)
        });
        encoder.encode(cells, &mut bytes);
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("frames.bin");
    std::fs::write(&file, &bytes).unwrap();
    // A blank screen first (what the encoder assumes at the start), and no prompt after;
    // a file says when it is all written (printing a word would land on the screen).
    let done = dir.path().join("done");
    let command = format!(
        "clear; cat {}; touch {}; sleep 60",
        file.display(),
        done.display()
    );
    t.send(&[&command, "Enter"]);
    let start = std::time::Instant::now();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the frames were not written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let cells = pane_cells(&t);
    let last = frames.last().unwrap();
    let mut checked_colour = 0;
    for y in 0..H {
        let row = &cells[usize::from(y)];
        let expected: String = (0..W).map(|x| last[(x, y)].symbol().to_string()).collect();
        let shown: String = row.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(shown.trim_end(), expected.trim_end(), "row {y}");
        for (x, (_, fg, bold)) in row.iter().enumerate().take(usize::from(W)) {
            let cell = &last[(x as u16, y)];
            if cell.symbol() == " " {
                continue; // tmux does not say the colour of a blank
            }
            assert_eq!(*fg, cell.fg, "colour at ({x}, {y}) {:?}", cell.symbol());
            assert_eq!(
                *bold,
                cell.modifier.contains(Modifier::BOLD),
                "bold at ({x}, {y})"
            );
            checked_colour += 1;
        }
    }
    assert!(checked_colour > 2000, "only {checked_colour} cells checked");
}
