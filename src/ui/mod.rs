//! Drawing: `draw(frame, &State, &Theme)` lays out the screen and calls one small function
//! per panel. Reads state only: no I/O, no clock (time is `state.model.now()`), no mutation.

mod border;
mod cells;
mod chart;
mod detail;
mod dialog;
mod footer;
pub mod gpu_detail;
pub mod gpus;
mod header;
mod help;
pub mod hit;
pub mod host;
mod overlay;
pub mod proc_detail;
mod spans;
pub mod table;
pub mod theme;
mod users;
mod warnings_bar;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::layout;
use crate::state::{Detail, Panel, State};
pub use theme::Theme;

pub fn draw(frame: &mut Frame, state: &State, theme: &Theme) {
    let area = frame.area();
    if layout::too_small(area) {
        draw_too_small(frame, area, theme);
        return;
    }
    let areas = layout::areas(&state.layout_input(), area);
    header::draw(frame, areas.header, state, theme);
    host::draw(frame, areas.host, state, theme);
    gpus::draw(frame, &areas, state, theme);
    warnings_bar::draw(frame, areas.warnings, state, theme);
    match state.view.panel {
        Panel::Processes => table::draw(frame, areas.table, state, theme),
        Panel::Users => users::draw(frame, areas.table, state, theme),
    }
    footer::draw(frame, areas.footer, state, theme);
    // A detail view covers the main one; help and a signal's confirmation still go on top.
    match &state.view.detail {
        Some(Detail::Gpu(id)) => gpu_detail::draw(frame, area, state, theme, id),
        Some(Detail::Process(id)) => proc_detail::draw(frame, area, state, theme, id),
        None => {}
    }
    if let Some(dialog) = &state.view.dialog {
        dialog::draw(frame, area, dialog, theme);
    }
    if state.view.show_env {
        detail::draw_env(frame, area, state, theme);
    }
    if state.view.show_warnings {
        warnings_bar::draw_list(frame, area, state, theme);
    }
    if state.view.show_help {
        help::draw(frame, area, state.view.overlay_page, theme);
    }
}

fn draw_too_small(frame: &mut Frame, area: Rect, theme: &Theme) {
    let text = format!(
        "terminal too small (need {}x{}, have {}x{})",
        layout::MIN_WIDTH,
        layout::MIN_HEIGHT,
        area.width,
        area.height
    );
    let y = area.y + area.height / 2;
    let line = Rect::new(area.x, y, area.width, 1.min(area.height));
    frame.render_widget(
        Paragraph::new(Line::styled(text, theme.warning))
            .alignment(Alignment::Center)
            .wrap(ratatui::widgets::Wrap { trim: true }),
        line,
    );
}
