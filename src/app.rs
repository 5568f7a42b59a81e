//! The interactive terminal: sets up and always restores the terminal, runs the one event
//! loop (samples, keys, resizes, signals), passes every message through `state::update`,
//! carries out the returned effects and redraws after each handled message — never on a timer.

use color_eyre::eyre::{Result, WrapErr};
use futures_util::StreamExt;
use ratatui::crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event, EventStream, MouseButton, MouseEvent,
    MouseEventKind,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::keymap;
use crate::sampler::{self, SamplerEvent};
use crate::signals::{DemoSignaller, Signaller, SystemSignaller};
use crate::source::GpuSource;
use crate::source::replay::{ReplayHandle, SPEEDS};
use crate::state::{
    Effect, LayoutPref, Msg, ReplayCommand, ReplayStatus, State, ViewConfig, update,
};
use crate::terminal::Coalescing;
use crate::ui::hit::{MouseInput, MouseKind};
use crate::ui::{self, Theme};
use ratatui::backend::CrosstermBackend;

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user quit (q, Ctrl-C).
    Quit,
    /// A signal asked us to stop; the value is the signal number (for exit code 128+n).
    Signal(i32),
}

/// Start-up choices of the interactive mode.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Start with compact GPU lines.
    pub compact: bool,
    /// Testing aid: panic after this many samples (proves the panic hook restores the terminal).
    pub panic_after_samples: Option<u64>,
    /// Report mouse clicks and the wheel (off by default so selecting text in tmux works).
    pub mouse: bool,
    /// The processes are simulated: confirmed signals are not sent anywhere.
    pub demo: bool,
    /// Replaying a recording: the handle that pauses, seeks and changes speed.
    pub replay: Option<ReplayHandle>,
    /// How many samples one seek step jumps (30 s of recorded time).
    pub seek_samples: i64,
    /// A line for the status bar at start.
    pub notice: Option<String>,
    pub theme: crate::ui::theme::ThemeName,
}

pub async fn run(source: Box<dyn GpuSource>, config: ViewConfig, options: Options) -> Result<Exit> {
    let theme = Theme::named(options.theme);
    // try_init installs a panic hook that restores the terminal before the (color-eyre)
    // report is printed.
    let mut terminal = init_terminal().wrap_err("cannot set up the terminal")?;
    show_cursor_on_panic(options.mouse);
    if options.mouse {
        ratatui::crossterm::execute!(std::io::stdout(), EnableMouseCapture)?;
    }
    let mouse = options.mouse;
    let result = event_loop(&mut terminal, source, config, options, &theme).await;
    if mouse {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    }
    ratatui::restore();
    result
}

async fn event_loop(
    terminal: &mut Tui,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    options: Options,
    theme: &Theme,
) -> Result<Exit> {
    let (tx, samples) = sampler::channel();
    let sampler_task = tokio::spawn(sampler::run(source, config.interval, tx));
    let mut keys = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;

    let mut state = State::new(config);
    state.view.status = options.notice.clone();
    if options.compact {
        state.view.layout = LayoutPref::Compact;
    }
    let size = terminal.size()?;
    update(
        &mut state,
        Msg::Resize {
            width: size.width,
            height: size.height,
        },
    );
    terminal.draw(|f| ui::draw(f, &state, theme))?;

    let mut samples = Some(samples);
    let mut samples_seen = 0u64;
    let mut signaller: Box<dyn Signaller> = if options.demo {
        Box::new(DemoSignaller)
    } else {
        Box::new(SystemSignaller::default())
    };
    let exit = 'events: loop {
        let msg = tokio::select! {
            event = next_sample(&mut samples) => match event {
                Some(SamplerEvent::Sample(s)) => {
                    if let Some(handle) = &options.replay {
                        let status = replay_status(handle, &mut state);
                        update(&mut state, Msg::Replay(status));
                    }
                    samples_seen += 1;
                    if options.panic_after_samples.is_some_and(|n| samples_seen > n) {
                        panic!("--debug-panic-after: deliberate panic after {} samples", samples_seen - 1);
                    }
                    Msg::Sample(s)
                }
                Some(SamplerEvent::Failed(why)) => Msg::SourceFailed(why),
                None => {
                    // Nothing more will come; keep the last frame and the keys alive.
                    samples = None;
                    Msg::SourceFailed("the sampler stopped".into())
                }
            },
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) => match keymap::action_for(key, state.input_mode()) {
                    Some(action) => Msg::Action(action),
                    None => continue,
                },
                Some(Ok(Event::Resize(width, height))) => Msg::Resize { width, height },
                Some(Ok(Event::Mouse(m))) => match mouse_input(m) {
                    Some(input) => Msg::Actions(ui::hit::actions(&state, input)),
                    None => continue,
                },
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).wrap_err("reading terminal input"),
                None => break Exit::Quit,
            },
            _ = sigterm.recv() => break Exit::Signal(15),
            _ = sighup.recv() => break Exit::Signal(1),
            _ = sigint.recv() => break Exit::Signal(2),
        };
        let mut effects = update(&mut state, msg);
        while let Some(effect) = effects.pop() {
            match effect {
                Effect::Quit => break 'events Exit::Quit,
                Effect::SendSignal(request) => {
                    let outcome = signaller.send(&request);
                    effects.extend(update(&mut state, Msg::SignalResult(outcome)));
                }
                Effect::Replay(command) => {
                    if let Some(handle) = &options.replay {
                        steer_replay(handle, command, options.seek_samples);
                        let status = replay_status(handle, &mut state);
                        effects.extend(update(&mut state, Msg::Replay(status)));
                    }
                }
            }
        }
        terminal.draw(|f| ui::draw(f, &state, theme))?;
    };
    sampler_task.abort();
    Ok(exit)
}

/// The terminal the TUI draws on: crossterm, behind the byte-saving `Coalescing` layer.
type Tui = ratatui::Terminal<Coalescing<CrosstermBackend<std::io::Stdout>>>;

/// Raw mode and the alternate screen, with a panic hook that undoes both before the
/// report is printed (what `ratatui::try_init` does, for our backend type).
fn init_terminal() -> std::io::Result<Tui> {
    ratatui::crossterm::terminal::enable_raw_mode()?;
    ratatui::crossterm::execute!(
        std::io::stdout(),
        ratatui::crossterm::terminal::EnterAlternateScreen
    )?;
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        ratatui::restore();
        previous(info);
    }));
    ratatui::Terminal::new(Coalescing::new(CrosstermBackend::new(std::io::stdout())))
}

/// ratatui's hook leaves the alternate screen and raw mode but not the hidden cursor (the
/// tmux test caught it) nor mouse reporting; undo both before the report is printed.
fn show_cursor_on_panic(mouse: bool) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut out = std::io::stdout();
        let _ = ratatui::crossterm::execute!(out, ratatui::crossterm::cursor::Show);
        if mouse {
            let _ = ratatui::crossterm::execute!(out, DisableMouseCapture);
        }
        previous(info);
    }));
}

fn mouse_input(event: MouseEvent) -> Option<MouseInput> {
    let kind = match event.kind {
        MouseEventKind::Down(MouseButton::Left) => MouseKind::LeftClick,
        MouseEventKind::ScrollUp => MouseKind::WheelUp,
        MouseEventKind::ScrollDown => MouseKind::WheelDown,
        _ => return None,
    };
    Some(MouseInput {
        kind,
        column: event.column,
        row: event.row,
    })
}

/// Applies a replay key to the shared control; the replay source acts on it next tick.
fn steer_replay(handle: &ReplayHandle, command: ReplayCommand, seek_samples: i64) {
    let Ok(mut c) = handle.lock() else { return };
    match command {
        ReplayCommand::Seek(steps) => c.pending_seek += steps * seek_samples,
        ReplayCommand::Faster => c.speed_index = (c.speed_index + 1).min(SPEEDS.len() - 1),
        ReplayCommand::Slower => c.speed_index = c.speed_index.saturating_sub(1),
        ReplayCommand::TogglePause => c.paused = !c.paused,
    }
}

/// Reads the replay's position; a backward jump first clears history from the "future".
fn replay_status(handle: &ReplayHandle, state: &mut State) -> ReplayStatus {
    let Ok(mut c) = handle.lock() else {
        return ReplayStatus {
            position: 0,
            total: 0,
            speed: 1.0,
            paused: true,
        };
    };
    if std::mem::take(&mut c.rewound) {
        update(state, Msg::Rewound);
    }
    ReplayStatus {
        position: c.position,
        total: c.total,
        speed: c.speed(),
        paused: c.paused,
    }
}

/// The next sampler event, or never once the sampler has gone.
async fn next_sample(samples: &mut Option<mpsc::Receiver<SamplerEvent>>) -> Option<SamplerEvent> {
    match samples {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
