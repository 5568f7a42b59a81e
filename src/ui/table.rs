//! The process table: one row per process per GPU, the visible columns from the settings,
//! the sort column marked in the header, the current user's rows highlighted and other
//! users' dimmed, the selection in reverse video. The cells' words are `present::cells`'s;
//! widths and alignment the column table's (`model::columns`), placed by `layout` (mouse
//! clicks use them too).

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use super::Theme;
use super::cells::{put_line, put_text, restyle};
use crate::layout::first_row;
use crate::model::pileup::unpinned;
use crate::model::procs::{Column, ProcRow, SortDir, Visibility};
use crate::model::warnings::WarningKind;
use crate::present::cells::cell_text;
use crate::present::format::truncate_owned;
use crate::reading::GpuId;
use crate::state::State;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let table = &state.model.procs();
    let arrow = sort_arrow(table.dir);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.dim)
        .title(Span::styled(title(state, arrow), theme.title));

    let columns = &state.visible_columns();
    let header = columns
        .iter()
        .map(|c| {
            let (text, style) = if c.sorts_as() == table.sort {
                (format!("{}{arrow}", c.title()), theme.sorted_column)
            } else {
                (c.title().to_string(), theme.table_header)
            };
            aligned(*c, Line::styled(text, style))
        })
        .collect();
    // Only the rows on screen are formatted: with thousands of processes, building every
    // row's cells was most of the frame's cost.
    let first = first_row(&state.layout_input(), table.selected_index());
    let on_screen = area.height.saturating_sub(2) as usize;
    let piled = piled_up(state);
    // Where each column sits (the split the mouse hit-test uses too), so a cut cell ends in
    // `…` instead of stopping mid-word.
    let host = state.host_width();
    let spans: Vec<Rect> = crate::layout::column_spans(columns, host, area)
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let rows = table
        .rows()
        .skip(first)
        .take(on_screen)
        .map(|r| row(state, columns, &spans, r, &piled, theme))
        .collect();
    let grid = Grid {
        block,
        header,
        rows,
        spans,
        selected: table.selected_index().map(|s| s - first),
        highlight: theme.selected,
    };
    grid.render(area, frame.buffer_mut());
    if table.is_empty() && area.height > 2 {
        draw_empty(frame, area, state, theme);
    }
}

/// The table as it is drawn: a block whose only border is the top line, a header line, then
/// one line per row. Drawn cell by cell instead of through ratatui's `Table`, which styled
/// the whole area twice (the table's style, then the block's, both plain) and every cell
/// three times (its cell's, its text's and its line's style) before writing a character:
/// the same screen, cell for cell and style for style (`the_grid_draws_what_ratatuis_table_drew`),
/// for about a third of the frame's work at 20 processes.
struct Grid {
    block: Block<'static>,
    header: Vec<Line<'static>>,
    rows: Vec<GridRow>,
    /// Each column's x and width, as `layout::column_spans` splits the area.
    spans: Vec<Rect>,
    /// Index into `rows` of the selected one, drawn in `highlight` over its own style.
    selected: Option<usize>,
    highlight: Style,
}

/// One process row: its style over the whole width (the gaps between columns too), then
/// each column's words, plain (the row's style is theirs).
struct GridRow {
    style: Style,
    cells: Vec<Words>,
}

/// A row's words in one column, already cut to its width.
struct Words {
    text: String,
    right: bool,
}

impl Grid {
    fn render(&self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        // The block draws its top border and title only: nothing below its first line.
        (&self.block).render(Rect { height: 1, ..area }, buf);
        let mut lines = area.rows().skip(1);
        let Some(header) = lines.next() else {
            return;
        };
        put_cells(&self.header, &self.spans, header, buf);
        let selected = self
            .selected
            .map(|s| s.min(self.rows.len().saturating_sub(1)));
        let mut selected_line = None;
        for (i, (row, line)) in self.rows.iter().zip(lines).enumerate() {
            restyle(buf, line, row.style);
            for (words, span) in row.cells.iter().zip(&self.spans) {
                let cell = Rect {
                    x: span.x,
                    width: span.width,
                    ..line
                };
                put_text(&words.text, words.right, cell, buf);
            }
            if selected == Some(i) {
                selected_line = Some(line);
            }
        }
        if let Some(line) = selected_line {
            restyle(buf, line, self.highlight);
        }
    }
}

/// Each of the header's cells into its column span.
fn put_cells(cells: &[Line], spans: &[Rect], line: Rect, buf: &mut Buffer) {
    for (words, span) in cells.iter().zip(spans) {
        let cell = Rect {
            x: span.x,
            width: span.width,
            ..line
        };
        put_line(words, cell, buf);
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
    if let Some(gpu) = state.focus().and_then(|id| state.model.gpu(id)) {
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

fn row(
    state: &State,
    columns: &[Column],
    spans: &[Rect],
    r: &ProcRow,
    piled: &[&GpuId],
    theme: &Theme,
) -> GridRow {
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
    let cells = columns
        .iter()
        .zip(spans)
        .map(|(c, span)| Words {
            // Enter opens the process detail view, where the whole command line is shown.
            text: truncate_owned(cell(*c), span.width as usize),
            right: c.right_aligned(),
        })
        .collect();
    GridRow { style, cells }
}

fn aligned(c: Column, line: Line<'static>) -> Line<'static> {
    if c.right_aligned() {
        line.right_aligned()
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Constraint;
    use ratatui::style::{Color, Modifier};
    use ratatui::widgets::{Cell, Row, StatefulWidget, Table, TableState};

    use super::*;

    /// What ratatui's `Table` draws for the same block, header, rows and selection: the
    /// widget the grid replaced.
    fn by_table(grid: &Grid, widths: &[Constraint], area: Rect) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, area.right() + 2, area.bottom() + 2));
        let header = Row::new(grid.header.iter().cloned().map(Cell::from));
        let rows = grid
            .rows
            .iter()
            .map(|r| Row::new(r.cells.iter().map(Words::line).map(Cell::from)).style(r.style));
        let table = Table::new(rows, widths.iter().copied())
            .header(header)
            .block(grid.block.clone())
            .column_spacing(crate::layout::COLUMN_SPACING)
            .row_highlight_style(grid.highlight);
        let mut state = TableState::default().with_selected(grid.selected);
        StatefulWidget::render(table, area, &mut buf, &mut state);
        buf
    }

    impl Words {
        /// The line the table drew for these words.
        fn line(&self) -> Line<'static> {
            let line = Line::from(self.text.clone());
            if self.right {
                line.right_aligned()
            } else {
                line
            }
        }
    }

    fn words(text: String, right: bool) -> Words {
        Words { text, right }
    }

    fn by_grid(grid: &Grid, area: Rect) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, area.right() + 2, area.bottom() + 2));
        grid.render(area, &mut buf);
        buf
    }

    fn grid(widths: &[Constraint], area: Rect, rows: usize, selected: Option<usize>) -> Grid {
        let spans = ratatui::layout::Layout::horizontal(widths.iter().copied())
            .spacing(crate::layout::COLUMN_SPACING)
            .split(area)
            .to_vec();
        let styles = [
            Style::new().fg(Color::DarkGray),
            Style::new().fg(Color::Green).add_modifier(Modifier::BOLD),
            Style::default(),
        ];
        Grid {
            block: Block::default()
                .borders(Borders::TOP)
                .border_style(Style::new().dark_gray())
                .title(Span::styled(" Processes (3) ", Style::new().bold())),
            header: vec![
                Line::styled("GPU", Style::new().cyan()).right_aligned(),
                Line::styled("USER▼", Style::new().yellow().underlined()),
                Line::styled("COMMAND", Style::new().cyan()),
            ],
            rows: (0..rows)
                .map(|i| GridRow {
                    style: styles[i % styles.len()],
                    cells: vec![
                        // Wider than its column from 1000 on: its left end is cut.
                        words(format!("{}", 10_u64.pow(i as u32)), true),
                        // Wider than its column: cut where the table cut it.
                        words(format!("user-with-a-long-name-{i}"), false),
                        if i % 2 == 0 {
                            // Not all narrow: drawn by ratatui's own line.
                            words(format!("python train.py --rank {i} ⚠ 漢字"), false)
                        } else {
                            words(format!("python3 -m torch.run {i}"), i % 3 == 0)
                        },
                    ],
                })
                .collect(),
            spans,
            selected,
            highlight: Style::new().add_modifier(Modifier::REVERSED),
        }
    }

    #[test]
    fn the_grid_draws_what_ratatuis_table_drew() {
        let widths = [
            Constraint::Length(3),
            Constraint::Length(9),
            Constraint::Fill(1),
        ];
        let cases = [
            (Rect::new(1, 1, 40, 8), 3, None),
            (Rect::new(1, 1, 40, 8), 3, Some(1)),
            (Rect::new(0, 2, 60, 6), 4, Some(3)),
            // A selection past the last row is drawn on the last row, as the table did.
            (Rect::new(0, 0, 30, 8), 2, Some(5)),
            // Only the header fits; then only the block's line.
            (Rect::new(0, 0, 30, 2), 3, Some(0)),
            (Rect::new(0, 0, 30, 1), 3, None),
            (Rect::new(2, 1, 14, 6), 6, Some(2)),
            (Rect::new(0, 0, 30, 6), 0, None),
        ];
        for (area, rows, selected) in cases {
            let grid = grid(&widths, area, rows, selected);
            assert_eq!(
                by_grid(&grid, area),
                by_table(&grid, &widths, area),
                "{area:?}, {rows} rows, selected {selected:?}"
            );
        }
    }
}
