//! The terminal the TUI draws on: ratatui's crossterm backend for everything but the
//! drawing itself, which goes through [`encode::Encoder`]: [`draw`] hands it every cell of
//! a frame, it compares each with its copy of the screen and writes the changed ones with
//! the fewest bytes (short cursor moves, only the style codes that changed, short gaps
//! re-sent instead of jumped). At 1 Hz with charts scrolling every second this is most of
//! what gpuwatch costs the terminal (and an SSH link).

mod draw;
pub mod encode;
mod shadow;
mod shown;
mod width;

pub use draw::draw;
pub use encode::frame_cells;

use std::cell::{Cell as Once, OnceCell};
use std::fs::File;
use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Position, Rect, Size};

use encode::Encoder;

pub struct Compact<W: Write> {
    inner: CrosstermBackend<W>,
    encoder: Encoder,
    /// The size ratatui read just before drawing (it asks before every frame): the frame is
    /// encoded for it without asking the terminal a second time.
    size: Once<Option<Size>>,
    /// A size given instead of the terminal's (a writer that is not a terminal).
    fixed: Option<Size>,
    /// The controlling terminal, opened once to be asked its size: crossterm's `size()`
    /// opens /dev/tty, asks and closes it on every call, twice a frame here (issue 25).
    /// `None` inside when there is none to open: crossterm is asked then.
    tty: OnceCell<Option<File>>,
    out: Vec<u8>,
}

impl<W: Write> Compact<W> {
    pub fn new(writer: W) -> Self {
        Compact {
            inner: CrosstermBackend::new(writer),
            encoder: Encoder::new(),
            size: Once::new(None),
            fixed: None,
            tty: OnceCell::new(),
            out: Vec::new(),
        }
    }

    /// A screen of `size` written into `writer`, which is not a terminal: what a test or
    /// a recording replays into a terminal emulator.
    pub fn with_size(writer: W, size: Size) -> Self {
        Compact {
            fixed: Some(size),
            ..Compact::new(writer)
        }
    }

    /// The screen written into is now `size` (a fixed-size screen's resize: the next frame
    /// sees it, as ratatui sees a terminal's).
    pub fn set_size(&mut self, size: Size) {
        self.fixed = Some(size);
    }

    /// Fits the encoder to the size ratatui read just before the frame (or reads it), lets
    /// `encode` write the frame's bytes and sends them.
    fn write_encoded(&mut self, encode: impl FnOnce(&mut Encoder, &mut Vec<u8>)) -> io::Result<()> {
        let size = match self.size.take() {
            Some(size) => size,
            None => self.read_size()?,
        };
        self.encoder.fit(Rect::new(0, 0, size.width, size.height));
        self.out.clear();
        encode(&mut self.encoder, &mut self.out);
        self.inner.write_all(&self.out)
    }

    /// The size of the screen, from the terminal unless one was given.
    fn read_size(&self) -> io::Result<Size> {
        if let Some(size) = self.fixed {
            return Ok(size);
        }
        let tty = self.tty.get_or_init(|| File::open("/dev/tty").ok());
        match tty.as_ref().and_then(window_size) {
            Some(size) => Ok(size),
            // What crossterm falls back to (stdout, then `tput`) when /dev/tty will not do.
            None => self.inner.size(),
        }
    }
}

/// The window size the terminal behind `tty` reports (`TIOCGWINSZ`, as crossterm asks it);
/// `None` when the call fails.
fn window_size(tty: &File) -> Option<Size> {
    use std::os::fd::AsRawFd;
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: `tty` is an open descriptor for the call's duration and `size` is the
    // `winsize` TIOCGWINSZ fills.
    let asked = unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCGWINSZ, &mut size) };
    (asked == 0).then(|| Size::new(size.ws_col, size.ws_row))
}

/// A backend [`draw`] hands each frame whole. [`Compact`] compares it with its shadow of
/// the screen run by run ([`Encoder::encode_frame`]); any other backend (ratatui's
/// `TestBackend` in tests) is given its cells one by one, as `Backend::draw` takes them.
pub trait Screen: Backend {
    fn draw_frame(&mut self, frame: &Buffer) -> Result<(), Self::Error> {
        self.draw(encode::frame_cells(frame))
    }
}

impl Screen for ratatui::backend::TestBackend {}

impl<W: Write> Screen for Compact<W> {
    fn draw_frame(&mut self, frame: &Buffer) -> io::Result<()> {
        self.write_encoded(|encoder, out| encoder.encode_frame(frame, out))
    }
}

impl<W: Write> Backend for Compact<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.write_encoded(|encoder, out| encoder.encode(content, out))
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.encoder.forget();
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.inner.get_cursor_position()
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        // Only a full clear leaves a screen this side knows exactly (ratatui sends one after
        // every resize, before redrawing everything).
        match clear_type {
            ClearType::All => {
                let size = match self.size.get() {
                    Some(size) => size,
                    None => self.read_size()?,
                };
                self.encoder.fit(Rect::new(0, 0, size.width, size.height));
                self.encoder.cleared();
            }
            _ => self.encoder.forget(),
        }
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        let size = self.read_size()?;
        self.size.set(Some(size));
        Ok(size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::FromRawFd;

    use super::*;

    /// Sets the pty's window size as a terminal emulator does on a resize.
    fn set_size(pty: &File, cols: u16, rows: u16) {
        use std::os::fd::AsRawFd;
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: an open descriptor and the `winsize` TIOCSWINSZ reads.
        assert_eq!(
            unsafe { libc::ioctl(pty.as_raw_fd(), libc::TIOCSWINSZ, &size) },
            0
        );
    }

    /// The handle is kept open across frames, so a resize must show through it.
    #[test]
    fn a_kept_terminal_handle_reports_each_new_size() {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty fills two descriptors, owned by the Files below.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(opened, 0, "openpty: {}", io::Error::last_os_error());
        // SAFETY: fresh descriptors nothing else owns.
        let (master, tty) = unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) };
        set_size(&master, 200, 50);
        assert_eq!(window_size(&tty), Some(Size::new(200, 50)));
        set_size(&master, 80, 24);
        assert_eq!(window_size(&tty), Some(Size::new(80, 24)));
    }

    #[test]
    fn a_file_that_is_no_terminal_has_no_window_size() {
        let file = tempfile::tempfile().unwrap();
        assert_eq!(window_size(&file), None);
    }
}
