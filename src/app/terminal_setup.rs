//! The real outside world of the interactive mode, which tests never touch: [`run`]
//! builds the real [`Io`] (crossterm terminal and input, OS signals, the signaller), sets
//! up raw mode and the alternate screen with panic hooks that undo them, and restores the
//! terminal whatever happens.

use std::io;
use std::task::Poll;

use color_eyre::eyre::{Result, WrapErr};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture, EventStream};
use tokio::signal::unix::{SignalKind, signal};

use super::{Exit, Io, Options, OsSignal, OsSignals, event_loop};
use crate::signals::{DemoSignaller, Signaller, SystemSignaller};
use crate::source::GpuSource;
use crate::state::ViewConfig;
use crate::terminal::Coalescing;

/// The interactive mode on the real terminal: builds the real [`Io`] (crossterm input,
/// SIGTERM/SIGHUP/SIGINT, the `Coalescing` crossterm screen, `kill(2)` or the demo's
/// stand-in), runs the loop, and restores the terminal whatever happens.
pub async fn run(source: Box<dyn GpuSource>, config: ViewConfig, options: Options) -> Result<Exit> {
    // Before touching the terminal: a failure here leaves it as it was.
    let os_signals = system_signals().wrap_err("cannot listen for SIGTERM/SIGHUP/SIGINT")?;
    // init_terminal installs a panic hook that restores the terminal before the
    // (color-eyre) report is printed.
    let terminal = init_terminal().wrap_err("cannot set up the terminal")?;
    show_cursor_on_panic(options.mouse);
    if options.mouse {
        ratatui::crossterm::execute!(std::io::stdout(), EnableMouseCapture)?;
    }
    let mouse = options.mouse;
    let signaller: Box<dyn Signaller> = if options.demo {
        Box::new(DemoSignaller)
    } else {
        Box::new(SystemSignaller::default())
    };
    let mut io = Io {
        terminal,
        events: Box::pin(EventStream::new()),
        os_signals,
        signaller,
        bell: Box::new(|| {
            use std::io::Write;
            let mut out = std::io::stdout();
            let _ = out.write_all(b"\x07").and_then(|()| out.flush());
        }),
    };
    let result = event_loop(&mut io, source, config, options).await;
    if mouse {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    }
    ratatui::restore();
    result
}

/// SIGTERM, SIGHUP and SIGINT as one stream. Each tokio `Signal` is polled in turn; a
/// pending one registers the waker, so the stream wakes on whichever arrives.
fn system_signals() -> io::Result<OsSignals> {
    let mut listeners = [
        (OsSignal::Terminate, signal(SignalKind::terminate())?),
        (OsSignal::Hangup, signal(SignalKind::hangup())?),
        (OsSignal::Interrupt, signal(SignalKind::interrupt())?),
    ];
    Ok(Box::pin(futures_util::stream::poll_fn(move |cx| {
        for (which, listener) in &mut listeners {
            // Ready(None) only when the runtime shuts down: that listener just goes quiet.
            if let Poll::Ready(Some(())) = listener.poll_recv(cx) {
                return Poll::Ready(Some(*which));
            }
        }
        Poll::Pending
    })))
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
