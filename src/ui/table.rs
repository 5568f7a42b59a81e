//! The process table: one row per process per GPU, the sort column marked in the header,
//! the current user's rows highlighted, the selection shown in reverse video.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use super::Theme;
use super::format::{bytes_short, elapsed, or_na};
use crate::state::State;
use crate::state::procs::{ProcRow, SortDir, SortKey, Visibility};

/// Columns in display order: (title, the sort key it shows, width; 0 = fill the rest).
const COLUMNS: [(&str, Option<SortKey>, u16); 10] = [
    ("GPU", Some(SortKey::Gpu), 3),
    ("PID", Some(SortKey::Pid), 7),
    ("USER", Some(SortKey::User), 9),
    ("TYPE", None, 4),
    ("VRAM", Some(SortKey::Vram), 6),
    ("GPU%", Some(SortKey::GpuUtil), 4),
    ("CPU%", Some(SortKey::Cpu), 6),
    ("HOST MEM", Some(SortKey::HostMemory), 8),
    ("TIME", Some(SortKey::Time), 8),
    ("COMMAND", Some(SortKey::Command), 0),
];

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let table = &state.procs;
    let arrow = match table.dir {
        SortDir::Ascending => "▲",
        SortDir::Descending => "▼",
    };
    let title = format!(
        " Processes ({}) · sorted by {} {arrow} · s/S sort, r reverse, ? help ",
        table.rows.len(),
        table.sort.name()
    );
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.dim)
        .title(Span::styled(title, theme.title));

    let header = Row::new(COLUMNS.iter().enumerate().map(|(i, (name, key, _))| {
        let (text, style) = if *key == Some(table.sort) {
            (format!("{name}{arrow}"), theme.sorted_column)
        } else {
            (name.to_string(), theme.table_header)
        };
        aligned(i, Line::styled(text, style))
    }));
    let rows = table.rows.iter().map(|r| row(state, r, theme));
    let widths = COLUMNS.map(|(_, _, w)| {
        if w == 0 {
            Constraint::Fill(1)
        } else {
            Constraint::Length(w)
        }
    });
    let widget = Table::new(rows, widths)
        .header(header)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(theme.selected);
    let mut view = TableState::default().with_selected(table.selected_index());
    frame.render_stateful_widget(widget, area, &mut view);
    if table.rows.is_empty() && area.height > 2 {
        let msg = Rect::new(area.x + 1, area.y + 2, area.width.saturating_sub(2), 1);
        let text = if state.now.is_none() {
            "waiting for the first sample…"
        } else {
            "no GPU processes"
        };
        frame.render_widget(Line::styled(text, theme.dim), msg);
    }
}

fn row<'a>(state: &State, r: &ProcRow, theme: &Theme) -> Row<'a> {
    let own = r.user.is_some() && r.user.as_deref() == state.config.current_user.as_deref();
    let style = match r.visibility {
        _ if own => theme.own_process,
        Visibility::Visible => theme.text,
        Visibility::OtherNamespace | Visibility::Hidden => theme.dim,
    };
    let cells = [
        r.gpu_index.to_string(),
        r.key.pid.to_string(),
        r.user.clone().unwrap_or_else(|| "?".into()),
        r.kind.label().to_string(),
        or_na(r.vram, bytes_short),
        or_na(r.gpu_util, |u| format!("{u}%")),
        or_na(r.cpu, |c| format!("{c:.1}")),
        or_na(r.host_memory, bytes_short),
        or_na(r.elapsed, elapsed),
        r.command.clone(),
    ];
    Row::new(
        cells
            .into_iter()
            .enumerate()
            .map(|(i, text)| aligned(i, Line::from(text))),
    )
    .style(style)
}

/// Numbers read best right-aligned (header and values alike); names and the command left.
fn aligned(column: usize, line: Line<'static>) -> Cell<'static> {
    let right = matches!(column, 1 | 4 | 5 | 6 | 7 | 8);
    Cell::from(if right { line.right_aligned() } else { line })
}
