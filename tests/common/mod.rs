//! Shared test fixtures: a deterministic demo state driven through the real update path.
#![allow(dead_code)]

pub mod cgroups;
pub mod pty;
pub mod real;
pub mod tmux;

/// A HOME with no config file in it, so a developer's own ~/.config/gpuwatch never changes
/// what a test sees (a missing default config file is fine).
pub const EMPTY_HOME: &str = "/nonexistent/gpuwatch-test-home";

/// A test that cannot run here (a tool missing, not root) says why and is skipped locally;
/// under `CI=true`, where .ci/run installs every tool and runs as root, it fails instead, so
/// a broken install can never turn a check into a silent pass.
pub fn skip(why: &str) {
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "cannot run under CI=true: {why}"
    );
    eprintln!("skipped: {why}");
}

/// The binary with a clean environment: only PATH, and HOME pointing at nothing.
pub fn clean_command() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", EMPTY_HOME);
    cmd
}

use std::time::{Duration, SystemTime};

use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::{Msg, State, ViewConfig, update};
use gpuwatch::ui::{self, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2026-01-05 09:00:00 UTC: a fixed start so clocks and elapsed times never vary.
pub fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600)
}

pub fn config() -> ViewConfig {
    ViewConfig {
        current_user: Some("alice".into()),
        ..ViewConfig::default()
    }
}

pub fn sim(gpus: usize) -> SimSource {
    SimSource::new(
        gpus,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: epoch() },
    )
}

/// A state after `samples` one-second samples of the demo fleet, sized `w`x`h`.
pub fn demo_state(gpus: usize, samples: usize, w: u16, h: u16) -> State {
    demo_state_with(config(), gpus, samples, w, h)
}

/// The same with other settings.
pub fn demo_state_with(cfg: ViewConfig, gpus: usize, samples: usize, w: u16, h: u16) -> State {
    state_after(sim(gpus), cfg, samples, w, h)
}

/// A `w`x`h` state that has seen `samples` samples of `source` (a simulation: it never fails).
pub fn state_after(
    mut source: impl GpuSource,
    cfg: ViewConfig,
    samples: usize,
    w: u16,
    h: u16,
) -> State {
    let mut state = State::new(cfg);
    update(
        &mut state,
        Msg::Resize {
            width: w,
            height: h,
        },
    );
    for _ in 0..samples {
        let sample = source.sample().expect("the simulation never fails");
        update(&mut state, Msg::Sample(Box::new(sample)));
    }
    state
}

pub fn render(state: &State, w: u16, h: u16, color: bool) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    let theme = Theme::new(color);
    terminal.draw(|f| ui::draw(f, state, &theme)).unwrap();
    terminal
}

/// The frame as plain text, one line per row.
pub fn screen(state: &State, w: u16, h: u16) -> String {
    render(state, w, h, true).backend().to_string()
}

/// The fake libnvidia-ml built from `fake-nvml/`, next to the binary under test. `cargo test
/// --workspace` has built it already; cargo is asked again anyway (a no-op when fresh) so a
/// plain `cargo test` never runs against a missing or stale copy. Same profile and target.
pub fn fake_lib() -> &'static std::path::Path {
    use std::path::{Path, PathBuf};
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let profile_dir = Path::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .parent()
            .expect("the binary lives in target/<profile>/")
            .to_path_buf();
        let target_dir = profile_dir.parent().expect("target/ above the profile");
        let mut build = std::process::Command::new(env!("CARGO"));
        build.args(["build", "--quiet", "-p", "fake-nvml", "--target-dir"]);
        build.arg(target_dir);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(
            build
                .status()
                .expect("run cargo build -p fake-nvml")
                .success()
        );
        let lib = profile_dir.join("libfake_nvml.so");
        assert!(lib.exists(), "{} was not built", lib.display());
        lib
    })
}

/// Where `needle` starts on a rendered terminal: (column, row) in cells.
pub fn find(term: &ratatui::Terminal<ratatui::backend::TestBackend>, needle: &str) -> (u16, u16) {
    let text = term.backend().to_string();
    for (y, line) in text.lines().enumerate() {
        // TestBackend's Display wraps each line in quotes.
        let line = line.trim_start_matches('"');
        if let Some(byte) = line.find(needle) {
            return (line[..byte].chars().count() as u16, y as u16);
        }
    }
    panic!("{needle:?} not on screen:\n{text}");
}

/// A state that has seen just `sample`, in a `w`x`h` terminal.
pub fn state_of_sample(sample: gpuwatch::reading::Sample, w: u16, h: u16) -> State {
    let mut state = State::new(config());
    update(
        &mut state,
        Msg::Resize {
            width: w,
            height: h,
        },
    );
    update(&mut state, Msg::Sample(Box::new(sample)));
    state
}
