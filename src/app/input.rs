//! Terminal events as the loop's next step: key presses through the keymap, Ctrl-Z (a key
//! in raw mode) as a stop, resizes, mouse clicks and wheel, bracketed paste. Pure mapping:
//! no I/O and no state change.

use std::io;

use color_eyre::eyre::{Result, WrapErr};
use ratatui::crossterm::event::{Event, MouseButton, MouseEvent, MouseEventKind};

use super::{Exit, Next};
use crate::keymap;
use crate::state::{Msg, State};
use crate::ui::{self, hit::MouseInput, hit::MouseKind};

/// Maps one terminal event to a message: key presses through the keymap, resizes, mouse.
pub(super) fn terminal_input(event: Option<io::Result<Event>>, state: &State) -> Result<Next> {
    Ok(match event {
        Some(Ok(Event::Key(key))) if is_ctrl_z(&key) => Next::Stop,
        Some(Ok(Event::Key(key))) => match keymap::action_for(key, state.input_mode()) {
            Some(action) => Next::Msg(Msg::Action(action)),
            None => Next::Ignore,
        },
        Some(Ok(Event::Resize(width, height))) => Next::Msg(Msg::Resize { width, height }),
        Some(Ok(Event::Paste(text))) => Next::Msg(Msg::Paste(text)),
        Some(Ok(Event::Mouse(m))) => match mouse_input(m) {
            // Hit-testing reads the geometry the last frame was drawn with.
            Some(input) => Next::Msg(Msg::Actions(ui::hit::actions(state, input))),
            None => Next::Ignore,
        },
        Some(Ok(_)) => Next::Ignore,
        Some(Err(e)) => return Err(e).wrap_err("reading terminal input"),
        // The terminal went away (a closed pane, a hung-up pty): nothing more can be asked
        // of us. Ends as a hang-up would, whether or not the kernel's SIGHUP came first.
        None => Next::Exit(Exit::Signal(libc::SIGHUP)),
    })
}

/// Ctrl-Z pressed: in raw mode the terminal sends it as a key instead of raising SIGTSTP,
/// so it is handled here, beside the keymap, like the job-control key it is everywhere.
fn is_ctrl_z(key: &ratatui::crossterm::event::KeyEvent) -> bool {
    use ratatui::crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    key.kind == KeyEventKind::Press
        && key.modifiers.contains(KeyModifiers::CONTROL)
        && matches!(key.code, KeyCode::Char('z') | KeyCode::Char('Z'))
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
