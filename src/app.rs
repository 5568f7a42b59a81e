//! The interactive terminal: sets up and always restores the terminal, runs the one event
//! loop (samples, keys, resizes, signals), passes every message through `state::update`,
//! carries out the returned effects and redraws after each handled message — never on a timer.

use color_eyre::eyre::{Result, WrapErr};
use futures_util::StreamExt;
use ratatui::crossterm::event::{Event, EventStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::keymap;
use crate::sampler::{self, SamplerEvent};
use crate::source::GpuSource;
use crate::state::{Effect, LayoutPref, Msg, State, ViewConfig, update};
use crate::ui::{self, Theme};

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user quit (q, Ctrl-C).
    Quit,
    /// A signal asked us to stop; the value is the signal number (for exit code 128+n).
    Signal(i32),
}

/// Start-up choices of the interactive mode.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Start with compact GPU lines.
    pub compact: bool,
    /// Testing aid: panic after this many samples (proves the panic hook restores the terminal).
    pub panic_after_samples: Option<u64>,
}

pub async fn run(source: Box<dyn GpuSource>, config: ViewConfig, options: Options) -> Result<Exit> {
    let theme = Theme::named(config.theme);
    // try_init installs a panic hook that restores the terminal before the (color-eyre)
    // report is printed.
    let mut terminal = ratatui::try_init().wrap_err("cannot set up the terminal")?;
    show_cursor_on_panic();
    let result = event_loop(&mut terminal, source, config, options, &theme).await;
    ratatui::restore();
    result
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
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
    if options.compact {
        state.layout = LayoutPref::Compact;
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
    let exit = loop {
        let msg = tokio::select! {
            event = next_sample(&mut samples) => match event {
                Some(SamplerEvent::Sample(s)) => {
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
                Some(Ok(Event::Key(key))) => match keymap::action_for(key) {
                    Some(action) => Msg::Action(action),
                    None => continue,
                },
                Some(Ok(Event::Resize(width, height))) => Msg::Resize { width, height },
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).wrap_err("reading terminal input"),
                None => break Exit::Quit,
            },
            _ = sigterm.recv() => break Exit::Signal(15),
            _ = sighup.recv() => break Exit::Signal(1),
            _ = sigint.recv() => break Exit::Signal(2),
        };
        if update(&mut state, msg).contains(&Effect::Quit) {
            break Exit::Quit;
        }
        terminal.draw(|f| ui::draw(f, &state, theme))?;
    };
    sampler_task.abort();
    Ok(exit)
}

/// ratatui's hook leaves the alternate screen and raw mode but not the hidden cursor (the
/// tmux test caught it); make it visible again before the report is printed.
fn show_cursor_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::cursor::Show);
        previous(info);
    }));
}

/// The next sampler event, or never once the sampler has gone.
async fn next_sample(samples: &mut Option<mpsc::Receiver<SamplerEvent>>) -> Option<SamplerEvent> {
    match samples {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
