//! The per-user table (`u`): who holds how much, where, and how much of it sits idle;
//! under each user, their containers, pods, Slurm jobs and services, indented.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Row, Table, TableState};

use super::Theme;
use crate::model::users::{Total, UserRow};
use crate::present::format::{bytes_short, elapsed};
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let rows = state.model.user_rows();
    let title = format!(
        " Users ({}) · by VRAM · Enter: their processes · u: back ",
        rows.iter().filter(|r| r.job.is_none()).count()
    );
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.dim)
        .title(Span::styled(title, theme.title));
    let body = rows.iter().map(|u| user_row(state, u, theme));
    let widths = [
        Constraint::Length(if state.model.any_job() { 26 } else { 12 }),
        Constraint::Length(16),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(9),
    ];
    let table = Table::new(body, widths)
        .header(header(theme))
        .block(block)
        .column_spacing(1)
        .row_highlight_style(theme.selected);
    let selected = (!rows.is_empty()).then_some(state.view.user_selected.min(rows.len() - 1));
    let mut view = TableState::default()
        .with_offset(crate::layout::first_row(
            &state.layout_input(),
            Some(state.view.user_selected),
        ))
        .with_selected(selected);
    frame.render_stateful_widget(table, area, &mut view);
}

/// The column titles. Numbers are right-aligned, their titles too.
fn header(theme: &Theme) -> Row<'static> {
    Row::new(
        [
            "USER",
            "GPUS",
            "VRAM",
            "PROCS",
            "GPU%",
            "LONGEST",
            "IDLE VRAM",
        ]
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let line = Line::styled(h, theme.table_header);
            if i >= 2 { line.right_aligned() } else { line }
        }),
    )
}

/// A total over `count` processes: `N/A` when none is known, `40%+` when only some are
/// (at least that much), the plain sum when all are.
fn total_text<T: Copy>(t: Total<T>, count: usize, show: impl Fn(T) -> String) -> String {
    if t.unknown >= count {
        crate::present::format::NA.to_string()
    } else if t.unknown > 0 {
        format!("{}+", show(t.known))
    } else {
        show(t.known)
    }
}

/// One user's (or one of their jobs') row; the current user's rows are highlighted and
/// idle VRAM stands out when there is any.
fn user_row(state: &State, u: &UserRow, theme: &Theme) -> Row<'static> {
    let own = state.config.current_user.as_deref() == Some(u.user.as_str());
    // A job row names its job under its user, indented; the user's row names the user.
    let who = match &u.job {
        Some(job) => format!("  {job}"),
        None => u.user.clone(),
    };
    let gpus: Vec<String> = u.places();
    let idle_style = if u.idle_vram.0 > 0 {
        theme.warning
    } else {
        theme.text
    };
    Row::new(vec![
        Line::from(who),
        Line::from(gpus.join(",")),
        Line::from(total_text(u.vram, u.processes, bytes_short)).right_aligned(),
        Line::from(u.processes.to_string()).right_aligned(),
        Line::from(total_text(u.gpu_util, u.processes, |p| format!("{p}%"))).right_aligned(),
        Line::from(u.longest.map(elapsed).unwrap_or_default()).right_aligned(),
        Line::styled(bytes_short(u.idle_vram), idle_style).right_aligned(),
    ])
    .style(if own { theme.own_process } else { theme.text })
}
