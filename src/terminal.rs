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

pub use draw::draw;

use std::cell::Cell as Once;
use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
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
    out: Vec<u8>,
}

impl<W: Write> Compact<W> {
    pub fn new(writer: W) -> Self {
        Compact {
            inner: CrosstermBackend::new(writer),
            encoder: Encoder::new(),
            size: Once::new(None),
            fixed: None,
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

    /// The size of the screen, from the terminal unless one was given.
    fn read_size(&self) -> io::Result<Size> {
        match self.fixed {
            Some(size) => Ok(size),
            None => self.inner.size(),
        }
    }
}

impl<W: Write> Backend for Compact<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let size = match self.size.take() {
            Some(size) => size,
            None => self.read_size()?,
        };
        self.encoder.fit(Rect::new(0, 0, size.width, size.height));
        self.out.clear();
        self.encoder.encode(content, &mut self.out);
        self.inner.write_all(&self.out)
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
