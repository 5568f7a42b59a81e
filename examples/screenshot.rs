//! Renders the demo fleet with the real draw code and writes `assets/screenshot.svg`
//! (colours included), so the README's picture is always what the program draws. The
//! fleet opens mid-story as `--demo` does (its history back-filled), then runs SECONDS more.
//!
//! cargo run --example screenshot [-- WIDTH HEIGHT GPUS SECONDS OUT.svg]

use std::fmt::Write;
use std::time::{Duration, SystemTime};

use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::{Msg, State, ViewConfig, update};
use gpuwatch::ui::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let width: u16 = arg(0, "120").parse().expect("WIDTH");
    let height: u16 = arg(1, "40").parse().expect("HEIGHT");
    let gpus: usize = arg(2, "8").parse().expect("GPUS");
    let seconds: usize = arg(3, "0").parse().expect("SECONDS");
    let out = arg(4, "assets/screenshot.svg");

    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let mut source = SimSource::new(
        gpus,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start },
    );
    let mut state = State::new(ViewConfig {
        current_user: Some("alice".into()),
        ..ViewConfig::default()
    });
    update(&mut state, Msg::Resize { width, height });
    // As `--demo` opens: 31 minutes of story (so the idle holder is up), 5 of them in full.
    for sample in source.backfill(Duration::from_secs(31 * 60), Duration::from_secs(300)) {
        update(&mut state, Msg::Sample(Box::new(sample)));
    }
    for _ in 0..=seconds {
        update(
            &mut state,
            Msg::Sample(Box::new(source.sample().expect("simulation"))),
        );
    }
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal
        .draw(|f| ui::draw(f, &state, &Theme::new(true)))
        .expect("draw");
    std::fs::write(&out, to_svg(terminal.backend().buffer())).expect("write the SVG");
    println!("wrote {out} ({width}x{height}, {gpus} GPUs, {seconds} s after the demo opens)");
}

/// xterm's default 16-colour palette.
fn hex(color: Color, default: &'static str) -> &'static str {
    match color {
        Color::Black => "#000000",
        Color::Red => "#cd0000",
        Color::Green => "#00cd00",
        Color::Yellow => "#cdcd00",
        Color::Blue => "#0000ee",
        Color::Magenta => "#cd00cd",
        Color::Cyan => "#00cdcd",
        Color::Gray => "#e5e5e5",
        Color::DarkGray => "#7f7f7f",
        Color::LightRed => "#ff5555",
        Color::LightGreen => "#55ff55",
        Color::LightYellow => "#ffff55",
        Color::LightBlue => "#5c5cff",
        Color::LightMagenta => "#ff55ff",
        Color::LightCyan => "#55ffff",
        Color::White => "#ffffff",
        _ => default,
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn to_svg(buf: &Buffer) -> String {
    let (w, h) = (buf.area.width, buf.area.height);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">"#,
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H
    );
    let _ = write!(
        svg,
        r##"<rect width="100%" height="100%" fill="#1e1e1e"/>"##
    );
    for y in 0..h {
        for x in 0..w {
            let cell = &buf[(x, y)];
            let (mut fg, mut bg) = (hex(cell.fg, "#d0d0d0"), hex(cell.bg, "#1e1e1e"));
            if cell.modifier.contains(Modifier::REVERSED) {
                std::mem::swap(&mut fg, &mut bg);
            }
            if bg != "#1e1e1e" {
                let _ = write!(
                    svg,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    f64::from(x) * CELL_W,
                    f64::from(y) * CELL_H,
                    CELL_W + 0.3
                );
            }
            let symbol = cell.symbol();
            if symbol.trim().is_empty() {
                continue;
            }
            let weight = if cell.modifier.contains(Modifier::BOLD) {
                r#" font-weight="bold""#
            } else {
                ""
            };
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" fill="{fg}"{weight}>{}</text>"#,
                f64::from(x) * CELL_W,
                f64::from(y) * CELL_H + 13.0,
                escape(symbol)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}
