//! Terminal input for the real terminal: crossterm's blocking reader on a thread of its own,
//! its events handed to the loop over a channel, and a second thread that watches the
//! terminal for a hang-up. Owns nothing else; the loop sees only a `Stream` of events.
//!
//! Why not crossterm's `EventStream`: its reader holds crossterm's global input lock while
//! it waits, and at end of input (a closed tmux pane, a hung-up pty) crossterm's read loop
//! takes `read() = 0` or `EIO` as "try again" and never returns. The stream's next poll then
//! blocked the loop's task on that lock, so gpuwatch spun a core forever and never got to
//! SIGTERM or SIGHUP. Here the loop only ever reads a channel, and the end of the terminal
//! is seen by `poll(2)` reporting `POLLHUP` on it, which ends the stream; the process then
//! exits, and the reader thread with it.

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::task::Poll;

use ratatui::crossterm::event::{self, Event};
use tokio::sync::{mpsc, oneshot};

use super::Events;

/// Keys waiting for the loop at most; the reader waits beyond that (the terminal buffers).
const QUEUED_EVENTS: usize = 1024;

/// The terminal's events as a stream that ends when the terminal goes away.
pub(super) fn tty_events() -> io::Result<Events> {
    let tty = Tty::open()?;
    TTY_FD.store(tty.fd, Ordering::SeqCst);
    let (events_tx, mut events) = mpsc::channel(QUEUED_EVENTS);
    let (hangup_tx, mut hangup) = oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("tty-input".into())
        .spawn(move || read_events(&events_tx))?;
    std::thread::Builder::new()
        .name("tty-hangup".into())
        .spawn(move || {
            tty.wait_for_hangup();
            HUNG_UP.store(true, Ordering::SeqCst);
            let _ = hangup_tx.send(());
        })?;
    let mut ended = false;
    Ok(Box::pin(futures_util::stream::poll_fn(move |cx| {
        if ended {
            return Poll::Ready(None);
        }
        // A hang-up ends the input even while keys are queued: nobody is there to see them.
        if let Poll::Ready(Ok(())) = std::pin::Pin::new(&mut hangup).poll(cx) {
            ended = true;
            return Poll::Ready(None);
        }
        match events.poll_recv(cx) {
            Poll::Ready(Some(event)) => Poll::Ready(Some(event)),
            Poll::Ready(None) => {
                ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    })))
}

/// Set by the hang-up watcher: asking the terminal again afterwards is no use (`isatty`
/// itself fails on a hung-up terminal).
static HUNG_UP: AtomicBool = AtomicBool::new(false);

/// The terminal's descriptor, for [`hung_up`] to ask before the watcher has said so.
static TTY_FD: AtomicI32 = AtomicI32::new(-1);

/// Whether the terminal has hung up (a closed pane): said by the watcher, or seen now
/// (a failed draw can come before the watcher's thread has run).
pub(super) fn hung_up() -> bool {
    if HUNG_UP.load(Ordering::SeqCst) {
        return true;
    }
    let fd = TTY_FD.load(Ordering::SeqCst);
    fd >= 0 && poll_hangup(fd, 0)
}

/// Points standard output and error at /dev/null where they are a terminal (a character
/// device; a file or pipe they were sent to keeps them): after a hang-up every write to the
/// terminal fails, and Rust's `eprintln!` panics on that. (`isatty` no longer answers yes
/// on a hung-up terminal, so the kind of file is what is asked.)
pub(super) fn silence_terminal_outputs() {
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: fstat fills the struct it is given; dup2 replaces a descriptor of this
        // process with /dev/null.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFCHR {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

/// crossterm's blocking read, forever: every event to the loop; an error ends the input.
fn read_events(to_loop: &mpsc::Sender<io::Result<Event>>) {
    loop {
        let event = event::read();
        let failed = event.is_err();
        if to_loop.blocking_send(event).is_err() || failed {
            return;
        }
    }
}

/// The descriptor crossterm reads: standard input when it is a terminal, else /dev/tty.
struct Tty {
    fd: RawFd,
    /// Keeps /dev/tty open when it was opened here (standard input is never closed).
    _opened: Option<std::fs::File>,
}

impl Tty {
    fn open() -> io::Result<Tty> {
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            return Ok(Tty {
                fd: libc::STDIN_FILENO,
                _opened: None,
            });
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")?;
        Ok(Tty {
            fd: file.as_raw_fd(),
            _opened: Some(file),
        })
    }

    /// Returns once the terminal has hung up (or its descriptor is no longer valid).
    fn wait_for_hangup(&self) {
        while !poll_hangup(self.fd, -1) {
            // EINTR, or ENOMEM for a moment: ask again; it is no hang-up.
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Whether terminal `fd` hangs up within `timeout_ms` (-1: however long it takes). Asks
/// for no events: `POLLHUP`, `POLLERR` and `POLLNVAL` are reported regardless, so this never
/// competes with crossterm for the bytes typed.
fn poll_hangup(fd: RawFd, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let ready = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    ready > 0 && pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}
