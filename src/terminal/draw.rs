//! One frame drawn without ratatui's diff. `Terminal::draw` compares every cell of the new
//! frame with ratatui's copy of the last one (`Buffer::diff`, looking up each symbol's
//! width), and [`Compact`](super::Compact)'s encoder then compared the changed cells with
//! its own copy of the screen again. Here the frame is drawn into ratatui's buffer as
//! before and the backend is handed every cell of it: `Compact` sends only what its shadow
//! does not show yet, one comparison per cell; a backend that keeps no copy (`TestBackend`)
//! takes the whole frame. ratatui's second buffer is never read, so it is not kept.

use ratatui::backend::Backend;
use ratatui::{Frame, Terminal};

use super::Screen;

/// Draws one frame with `render`, as `Terminal::draw` would, and hides the cursor.
///
/// The cursor is always hidden: the TUI never places it, and a `Frame::set_cursor_position`
/// would be lost here (ratatui keeps the frame's cursor to itself).
pub fn draw<B: Screen>(
    terminal: &mut Terminal<B>,
    render: impl FnOnce(&mut Frame),
) -> Result<(), B::Error> {
    // A new size clears the screen (and tells the backend) before the frame is laid out.
    terminal.autoresize()?;
    let_go_of_the_second_buffer(terminal);
    render(&mut terminal.get_frame());
    // Taken out (an empty buffer allocates nothing) so the backend can be borrowed too.
    let frame = std::mem::take(terminal.current_buffer_mut());
    let drawn = terminal.backend_mut().draw_frame(&frame);
    *terminal.current_buffer_mut() = frame;
    drawn?;
    terminal.hide_cursor()?;
    terminal.backend_mut().flush()
}

/// Frees ratatui's second buffer (its copy of the last frame, for the diff this path does
/// not use: 400 KB of cells at 200x50; private memory 3.17 -> 2.58 MiB, issue 25) and
/// leaves the current one blank for the widgets. A resize fills both again, so this runs
/// every frame: `swap_buffers` blanks the buffer it switches to, which is the empty one
/// (nothing to do) and then the frame's (the reset the widgets need anyway).
fn let_go_of_the_second_buffer<B: Backend>(terminal: &mut Terminal<B>) {
    terminal.swap_buffers();
    *terminal.current_buffer_mut() = ratatui::buffer::Buffer::default();
    terminal.swap_buffers();
}

#[cfg(test)]
mod tests;
