//! The real outside world of the interactive mode, which tests never touch: [`run`]
//! builds the real [`Io`] (crossterm terminal and input, OS signals, the signaller), sets
//! up raw mode and the alternate screen with panic hooks that undo them, and restores the
//! terminal whatever happens.

use std::io;
use std::task::Poll;

use color_eyre::eyre::{Result, WrapErr};
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use tokio::signal::unix::{SignalKind, signal};

use super::{Exit, Io, Options, OsSignal, OsSignals, event_loop};
use crate::signals::{DemoSignaller, Signaller, SystemSignaller};
use crate::source::GpuSource;
use crate::state::ViewConfig;
use crate::terminal::Compact;

/// The interactive mode on the real terminal: builds the real [`Io`] (crossterm input,
/// SIGTERM/SIGHUP/SIGINT, the `Compact` crossterm screen, `kill(2)` or the demo's
/// stand-in), runs the loop, and restores the terminal whatever happens.
pub async fn run(source: Box<dyn GpuSource>, config: ViewConfig, options: Options) -> Result<Exit> {
    // Before touching the terminal: a failure here leaves it as it was.
    let os_signals = system_signals().wrap_err("cannot listen for signals")?;
    let events = super::tty_input::tty_events().wrap_err("cannot read the terminal")?;
    // init_terminal installs a panic hook that restores the terminal before the
    // (color-eyre) report is printed.
    let terminal = init_terminal().wrap_err("cannot set up the terminal")?;
    show_cursor_on_panic(options.mouse);
    // A paste arrives as one event, not as keys that would be taken for commands.
    ratatui::crossterm::execute!(std::io::stdout(), EnableBracketedPaste)?;
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
        events,
        os_signals,
        signaller,
        modes: Box::new(RealModes { mouse }),
        bell: Box::new(|| {
            use std::io::Write;
            let mut out = std::io::stdout();
            let _ = out.write_all(b"\x07").and_then(|()| out.flush());
        }),
        settled: Box::new(crate::resident::give_back_freed),
        farewell: Vec::new(),
    };
    let mut result = event_loop(&mut io, source, config, options).await;
    if super::tty_input::hung_up() {
        // The pane was closed. Nobody is there to restore anything for, and every write to
        // the terminal fails now: ratatui reports that with eprintln!, which panics on a
        // closed stderr (an abort, seen when a pane was closed). Point the terminal's outputs
        // at /dev/null so what follows runs to its normal end, and end as a hang-up: a draw
        // that failed for it is no error of ours.
        super::tty_input::silence_terminal_outputs();
        result = Ok(Exit::Signal(libc::SIGHUP));
    }
    if mouse {
        let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    }
    let _ = ratatui::crossterm::execute!(std::io::stdout(), DisableBracketedPaste);
    let _ = ratatui::try_restore();
    for line in &io.farewell {
        eprintln!("gpuwatch: {}", crate::text_safe::escape(line));
    }
    result
}

/// TERM, HUP, INT, QUIT, TSTP and CONT as one stream; USR1 and USR2 are listened for and
/// dropped (their default action would end the program with the screen still switched).
/// Each tokio `Signal` is polled in turn; a pending one registers the waker, so the stream
/// wakes on whichever arrives. A handler (not SIG_IGN) so programs we start inherit none.
fn system_signals() -> io::Result<OsSignals> {
    let mut listeners = [
        (Some(OsSignal::Terminate), signal(SignalKind::terminate())?),
        (Some(OsSignal::Hangup), signal(SignalKind::hangup())?),
        (Some(OsSignal::Interrupt), signal(SignalKind::interrupt())?),
        (Some(OsSignal::Quit), signal(SignalKind::quit())?),
        (
            Some(OsSignal::Suspend),
            signal(SignalKind::from_raw(libc::SIGTSTP))?,
        ),
        (
            Some(OsSignal::Continue),
            signal(SignalKind::from_raw(libc::SIGCONT))?,
        ),
        (None, signal(SignalKind::user_defined1())?),
        (None, signal(SignalKind::user_defined2())?),
    ];
    Ok(Box::pin(futures_util::stream::poll_fn(move |cx| {
        for (which, listener) in &mut listeners {
            // Ready(None) only when the runtime shuts down: that listener just goes quiet.
            while let Poll::Ready(Some(())) = listener.poll_recv(cx) {
                if let Some(which) = which {
                    return Poll::Ready(Some(*which));
                }
            }
        }
        Poll::Pending
    })))
}

/// The real terminal's modes around a stop, as well-behaved full-screen programs do.
struct RealModes {
    mouse: bool,
}

impl super::TerminalModes for RealModes {
    fn suspend(&mut self) -> io::Result<()> {
        let mut out = std::io::stdout();
        if self.mouse {
            ratatui::crossterm::execute!(out, DisableMouseCapture)?;
        }
        ratatui::crossterm::execute!(out, DisableBracketedPaste)?;
        ratatui::crossterm::execute!(
            out,
            ratatui::crossterm::terminal::LeaveAlternateScreen,
            ratatui::crossterm::cursor::Show
        )?;
        ratatui::crossterm::terminal::disable_raw_mode()?;
        // SIGSTOP, not SIGTSTP: ours is caught (by this very handler); the shell sees the
        // job stopped all the same, and `fg` continues it right here.
        // SAFETY: raise(3) has no memory-safety preconditions.
        unsafe { libc::raise(libc::SIGSTOP) };
        Ok(())
    }

    fn resume(&mut self) -> io::Result<()> {
        ratatui::crossterm::terminal::enable_raw_mode()?;
        let mut out = std::io::stdout();
        ratatui::crossterm::execute!(
            out,
            ratatui::crossterm::terminal::EnterAlternateScreen,
            ratatui::crossterm::cursor::Hide
        )?;
        if self.mouse {
            ratatui::crossterm::execute!(out, EnableMouseCapture)?;
        }
        ratatui::crossterm::execute!(out, EnableBracketedPaste)?;
        Ok(())
    }
}

/// The terminal the TUI draws on: crossterm, drawn through the byte-saving `Compact` backend.
type Tui = ratatui::Terminal<Compact<std::io::Stdout>>;

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
    ratatui::Terminal::new(Compact::new(std::io::stdout()))
}

/// ratatui's hook leaves the alternate screen and raw mode but not the hidden cursor (the
/// tmux test caught it) nor mouse reporting; undo both before the report is printed.
fn show_cursor_on_panic(mouse: bool) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut out = std::io::stdout();
        let _ = ratatui::crossterm::execute!(out, ratatui::crossterm::cursor::Show);
        let _ = ratatui::crossterm::execute!(out, DisableBracketedPaste);
        if mouse {
            let _ = ratatui::crossterm::execute!(out, DisableMouseCapture);
        }
        previous(info);
    }));
}
