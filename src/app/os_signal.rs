//! The OS signals the TUI acts on, as plain values the loop matches on, and the terminal
//! modes it hands back and takes again around a stop. No I/O here: `terminal_setup` has the
//! real listeners and modes, tests a fake.

use std::io;

/// A signal the TUI acts on (Ctrl-C in raw mode is a key, not SIGINT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsSignal {
    Terminate,
    Hangup,
    Interrupt,
    /// SIGQUIT: stop like the others (exit 131), the terminal restored first.
    Quit,
    /// SIGTSTP: give the terminal back, stop, and take it again when continued.
    Suspend,
    /// SIGCONT: continued after a stop we did not ask for; take the terminal again, redraw.
    Continue,
}

impl OsSignal {
    /// The signal number, for the exit code 128+n.
    pub fn number(self) -> i32 {
        match self {
            OsSignal::Terminate => libc::SIGTERM,
            OsSignal::Hangup => libc::SIGHUP,
            OsSignal::Interrupt => libc::SIGINT,
            OsSignal::Quit => libc::SIGQUIT,
            OsSignal::Suspend => libc::SIGTSTP,
            OsSignal::Continue => libc::SIGCONT,
        }
    }
}

/// Handing the terminal back and taking it again, around a stop (SIGTSTP) or after one
/// (SIGCONT). The real one leaves and re-enters raw mode and the alternate screen; tests
/// use [`KeepModes`].
pub trait TerminalModes: Send {
    /// Restores the terminal, stops the process, and returns once it is continued.
    fn suspend(&mut self) -> io::Result<()>;
    /// Raw mode, the alternate screen, the hidden cursor (and mouse reporting) again.
    fn resume(&mut self) -> io::Result<()>;
}

/// For tests: a terminal with no modes to change; nothing is stopped.
pub struct KeepModes;

impl TerminalModes for KeepModes {
    fn suspend(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn resume(&mut self) -> io::Result<()> {
        Ok(())
    }
}
