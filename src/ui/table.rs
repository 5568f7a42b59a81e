//! The process table: one row per process per GPU, the visible columns from the settings,
//! the sort column marked in the header, the current user's rows highlighted and other
//! users' dimmed, the selection in reverse video. Column widths live in `layout` (mouse clicks use them too).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use super::Theme;
use super::format::{bytes_short, elapsed, or_na, truncate};
use crate::layout::{COLUMN_SPACING, column_width, first_row};
use crate::model::pileup::unpinned;
use crate::model::procs::{Column, ProcRow, SortDir, Visibility};
use crate::model::warnings::WarningKind;
use crate::reading::GpuId;
use crate::state::State;

/// Numbers read best right-aligned (header and values alike); names and the command left.
pub fn right_aligned(c: Column) -> bool {
    matches!(
        c,
        Column::Pid
            | Column::Vram
            | Column::GpuUtil
            | Column::Cpu
            | Column::HostMemory
            | Column::Time
    )
}

/// A cell's words, shared with the `--once` text table.
pub fn cell_text(c: Column, r: &ProcRow) -> String {
    match c {
        Column::Host => r.host.as_deref().map_or_else(
            || "(here)".into(),
            |h| truncate(h, crate::layout::MAX_HOST_WIDTH as usize),
        ),
        // On a MIG instance `0/1`: GPU 0, GPU instance 1 (nvidia-smi's GPU and GI columns).
        Column::Gpu => match &r.instance {
            Some(i) => i.gpu_label(&r.gpu_index.to_string()),
            None => r.gpu_index.to_string(),
        },
        Column::Pid => r.key.pid.to_string(),
        Column::User => r.user.clone().unwrap_or_else(|| "?".into()),
        Column::Job => r
            .job
            .as_deref()
            .map_or_else(String::new, |j| truncate(j, 24)),
        Column::Type => r.kind.label().to_string(),
        Column::Vram => or_na(r.vram, bytes_short),
        Column::GpuUtil => or_na(r.gpu_util, |u| format!("{u}%")),
        Column::Cpu => or_na(r.cpu, |c| format!("{c:.1}")),
        Column::HostMemory => or_na(r.host_memory, bytes_short),
        Column::Time => or_na(r.elapsed, elapsed),
        Column::Command => r.command.clone(),
    }
}

/// The HOST column's width: its longest host name (titles included), which the table,
/// mouse clicks and the `--once` text all size it by.
pub fn host_width(state: &State) -> u16 {
    state
        .model
        .procs()
        .all
        .iter()
        .filter_map(|r| r.host.as_deref())
        .map(|h| h.chars().count())
        .chain([Column::Host.title().len() + 1])
        .max()
        .map_or(0, |w| u16::try_from(w).unwrap_or(u16::MAX))
}

/// The configured columns, with HOST first when the GPUs come from several hosts, and
/// JOB only when some process runs in a container, pod, Slurm job or service (on a box
/// of login shells it would be an empty column) and the terminal is wide enough (or
/// there is no terminal: `--once`).
pub fn visible_columns(state: &State) -> Vec<Column> {
    let mut columns = state.config.columns.clone();
    if !state.job_column_shown() {
        columns.retain(|c| *c != Column::Job);
    }
    if state.model.gpus().iter().any(|g| g.host.is_some()) {
        columns.insert(0, Column::Host);
    }
    columns
}

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let table = &state.model.procs();
    let arrow = sort_arrow(table.dir);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.dim)
        .title(Span::styled(title(state, arrow), theme.title));

    let columns = &visible_columns(state);
    let header = Row::new(columns.iter().map(|c| {
        let (text, style) = if c.sort_key() == Some(table.sort) {
            (format!("{}{arrow}", c.title()), theme.sorted_column)
        } else {
            (c.title().to_string(), theme.table_header)
        };
        aligned(*c, Line::styled(text, style))
    }));
    // Only the rows on screen are formatted: with thousands of processes, building every
    // row's cells was most of the frame's cost.
    let first = first_row(&state.layout_input(), table.selected_index());
    let on_screen = area.height.saturating_sub(2) as usize;
    let piled = piled_up(state);
    // The width each column gets, so a cut cell ends in `…` instead of stopping mid-word.
    let host = host_width(state);
    let widths: Vec<usize> = crate::layout::column_spans(columns, host, area)
        .iter()
        .map(|(_, r)| r.width as usize)
        .collect();
    let rows = table
        .rows()
        .skip(first)
        .take(on_screen)
        .map(|r| row(state, columns, &widths, r, &piled, theme));
    let widget = Table::new(rows, columns.iter().map(|c| column_width(*c, host)))
        .header(header)
        .block(block)
        .column_spacing(COLUMN_SPACING)
        .row_highlight_style(theme.selected);
    let mut view = TableState::default().with_selected(table.selected_index().map(|s| s - first));
    frame.render_stateful_widget(widget, area, &mut view);
    if table.is_empty() && area.height > 2 {
        draw_empty(frame, area, state, theme);
    }
}

fn sort_arrow(dir: SortDir) -> &'static str {
    match dir {
        SortDir::Ascending => "▲",
        SortDir::Descending => "▼",
    }
}

/// The block title: how many rows of how many, the sort, every narrowing, and the hint
/// for the way out (Esc) or for help.
fn title(state: &State, arrow: &str) -> String {
    let table = &state.model.procs();
    let count = if table.len() == table.all.len() {
        table.len().to_string()
    } else {
        format!("{} of {}", table.len(), table.all.len())
    };
    let mut title = format!(
        " Processes ({count}) · sorted by {} {arrow}",
        table.sort.name()
    );
    if let Some(gpu) = state
        .focus()
        .and_then(|id| state.model.gpus().iter().find(|g| &g.id == id))
    {
        title += &format!(" · GPU {} only", gpu.index);
    }
    if let Some(user) = &table.view.user {
        title += &format!(" · user {user}");
    }
    if let Some(job) = &table.view.job {
        title += &format!(" · {job}");
    }
    title += if table.view.is_everything() {
        " · ? help "
    } else {
        " · Esc: show all "
    };
    title
}

/// Why the table is empty, on its first row: no sample yet, no processes, or the filter.
fn draw_empty(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let msg = Rect::new(area.x + 1, area.y + 2, area.width.saturating_sub(2), 1);
    let text = if state.model.now().is_none() {
        "waiting for the first sample…"
    } else if !state.model.processes_known() {
        "process rows unknown: the source has no per-process data"
    } else if state.model.procs().all.is_empty() {
        "no GPU processes"
    } else {
        "no process matches (Esc shows all)"
    };
    frame.render_widget(Line::styled(text, theme.dim), msg);
}

/// The GPUs with a pile-up warning: their unpinned processes are marked.
fn piled_up(state: &State) -> Vec<&GpuId> {
    state
        .model
        .warnings()
        .iter()
        .filter(|w| matches!(w.kind, WarningKind::PileUp { .. }))
        .filter_map(|w| w.gpu())
        .collect()
}

fn row<'a>(
    state: &State,
    columns: &[Column],
    widths: &[usize],
    r: &ProcRow,
    piled: &[&GpuId],
    theme: &Theme,
) -> Row<'a> {
    let own = r.user.is_some() && r.user.as_deref() == state.config.current_user.as_deref();
    // Started without CUDA_VISIBLE_DEVICES on a GPU 0 others share: the pile-up's cause.
    let loose = piled.contains(&&r.key.gpu)
        && (state.model.gpus().iter()).any(|g| g.id == r.key.gpu && unpinned(r, g));
    let cell = |c: Column| match c {
        Column::Command if loose => format!("⚠ {}", cell_text(c, r)),
        _ => cell_text(c, r),
    };
    // Other users' rows are dimmed (as nvitop does) so your own stand out; with no user
    // to compare against (unknown), nothing is.
    let others = !own && state.config.current_user.is_some();
    let style = match r.visibility {
        _ if loose => theme.warning,
        _ if own => theme.own_process,
        Visibility::Visible if others => theme.dim,
        Visibility::Visible => theme.text,
        Visibility::OtherNamespace | Visibility::Hidden | Visibility::Exited => theme.dim,
    };
    let cells = columns.iter().zip(widths).map(|(c, &w)| {
        // Enter opens the process detail view, where the whole command line is shown.
        aligned(*c, Line::from(truncate(&cell(*c), w)))
    });
    Row::new(cells).style(style)
}

fn aligned(c: Column, line: Line<'static>) -> Cell<'static> {
    Cell::from(if right_aligned(c) {
        line.right_aligned()
    } else {
        line
    })
}
