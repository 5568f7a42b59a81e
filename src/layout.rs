//! Where things go: splits the screen into header, GPU area, warnings and process table,
//! decides compact vs full panels, and places GPU panels and table columns. Pure
//! arithmetic on the size and a few counts ([`LayoutInput`]), shared by drawing, mouse
//! hit-testing and `update` (for paging), so all three agree on what is where. Imports
//! neither the state nor the drawing code.

use ratatui::layout::{Constraint, Direction, Rect};

use crate::model::procs::Column;

// Where each GPU goes inside the GPU area (panel grid, compact columns, a panel's rows).
mod gpus;
// Splits by arithmetic where ratatui's solver would be asked (the first frame's cost).
mod split;
pub use gpus::{
    PanelRows, compact_column_rects, compact_columns, first_gpu_shown, gpu_rects, panel_rows,
    visible_gpus,
};
pub use split::{split, split_n};

/// How GPUs are laid out: chosen by size, or forced by the user with `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutPref {
    Auto,
    Compact,
    Full,
}

/// What the geometry depends on (`State::layout_input` fills it in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutInput {
    /// Terminal size in cells; (0, 0) in headless modes.
    pub viewport: (u16, u16),
    pub gpus: usize,
    /// MIG instances across all GPUs: each is a line of its own under its GPU in compact mode.
    pub instance_lines: usize,
    pub warnings: usize,
    pub pref: LayoutPref,
    /// Whether the footer line (filter, status) is showing.
    pub footer: bool,
    /// Rows the table has to show (processes, or users in the per-user view): spare rows
    /// go to it first, up to this many, and only then to the panels' charts.
    pub table_rows: usize,
}

/// Below this the screen says "terminal too small" instead of drawing.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;
/// Height of a full GPU panel as the automatic choice between full and compact counts it
/// (4 lines inside a border: gauges, readings and 2 chart rows); spare rows make panels
/// taller, as tall as the screen leaves room for (as nvtop's plots grow).
pub const PANEL_HEIGHT: u16 = 6;
/// The shortest a full panel gets: one chart row, when the row it gives up lets the
/// process table show one more process.
pub const PANEL_MIN_HEIGHT: u16 = 5;
/// From this width the host line (CPU, RAM, swap, load) fits in the header line;
/// narrower screens give it a line of its own under the header.
pub const HOST_IN_HEADER_WIDTH: u16 = 180;
/// Narrowest a full panel may be; wider screens get more columns.
pub const PANEL_MIN_WIDTH: u16 = 60;
const MAX_PANEL_COLUMNS: u16 = 4;
/// The process table always keeps at least this many rows.
pub const MIN_TABLE_ROWS: u16 = 5;
/// Full panels are chosen automatically only if the table still gets this many rows.
const COMFORT_TABLE_ROWS: u16 = 8;
/// Warning lines the automatic choice reserves whether or not any are showing, so the
/// layout does not flip between compact and full as warnings come and go.
const RESERVED_WARNING_LINES: u16 = 3;
/// Title line plus column header above the table rows.
const TABLE_CHROME: u16 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    /// The host line under the header; zero height when it sits in the header.
    pub host: Rect,
    pub gpus: Rect,
    pub warnings: Rect,
    pub table: Rect,
    /// The filter / status line under the table; zero height when there is nothing to say.
    pub footer: Rect,
    pub compact: bool,
    /// Panel grid columns, or columns of compact lines.
    pub columns: u16,
    /// Height of each full panel (`PANEL_MIN_HEIGHT` or more).
    pub panel_height: u16,
}

/// Whether the host line sits in the header (wide screens) rather than on its own line.
pub fn host_in_header(width: u16) -> bool {
    width >= HOST_IN_HEADER_WIDTH
}

fn host_rows(width: u16) -> u16 {
    u16::from(!host_in_header(width))
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Lines the warnings bar takes: all warnings up to a cap that grows with the height.
pub fn warning_lines(input: &LayoutInput, height: u16) -> u16 {
    let cap = if height >= 40 { 5 } else { 3 };
    (input.warnings as u16).min(cap)
}

fn panel_columns(width: u16, gpus: usize) -> u16 {
    (width / PANEL_MIN_WIDTH)
        .clamp(1, MAX_PANEL_COLUMNS)
        .min(gpus.max(1) as u16)
}

fn full_height(width: u16, gpus: usize) -> u16 {
    let cols = panel_columns(width, gpus) as usize;
    (gpus.max(1).div_ceil(cols) as u16).saturating_mul(PANEL_HEIGHT)
}

/// Whether GPUs are drawn one line each, for the current state and viewport.
pub fn is_compact(input: &LayoutInput) -> bool {
    let (w, h) = input.viewport;
    compact_for(input, Rect::new(0, 0, w, h))
}

fn compact_for(input: &LayoutInput, area: Rect) -> bool {
    match input.pref {
        LayoutPref::Compact => true,
        LayoutPref::Full => false,
        LayoutPref::Auto => {
            let fixed = 1
                + host_rows(area.width)
                + RESERVED_WARNING_LINES
                + TABLE_CHROME
                + COMFORT_TABLE_ROWS;
            full_height(area.width, input.gpus) + fixed > area.height
        }
    }
}

pub fn areas(input: &LayoutInput, area: Rect) -> Areas {
    let compact = compact_for(input, area);
    let host_h = host_rows(area.width);
    let warn_h = warning_lines(input, area.height);
    let footer_h = u16::from(input.footer);
    let reserved = 1 + host_h + warn_h + TABLE_CHROME + MIN_TABLE_ROWS + footer_h;
    let room = area.height.saturating_sub(reserved);
    let (gpu_h, columns, panel_height) = if compact {
        // A title line plus a line per GPU (and per MIG instance) in as many columns as it
        // takes (and the width allows) to show them all, scrolling when they still do not fit.
        let lines = input.gpus + input.instance_lines;
        let cols = compact_columns(area.width, lines, room);
        let rows = lines.div_ceil(cols as usize) as u16;
        ((rows + 1).min(room), cols, PANEL_HEIGHT)
    } else {
        let cols = panel_columns(area.width, input.gpus);
        let rows = (input.gpus.max(1).div_ceil(cols as usize)) as u16;
        let panel_h = grown_panel_height(input, room, rows);
        let wanted = rows.saturating_mul(panel_h);
        // At least one row of panels, whole panels only.
        let fit = (room / panel_h).max(1) * panel_h;
        (wanted.min(fit), cols, panel_h)
    };
    let mut y = area.y;
    let mut take = |h: u16| {
        let r = Rect::new(
            area.x,
            y,
            area.width,
            h.min(area.bottom().saturating_sub(y)),
        );
        y += r.height;
        r
    };
    let header = take(1);
    let host = take(host_h);
    let gpus = take(gpu_h);
    let warnings = take(warn_h);
    let used = 1 + host.height + gpus.height + warnings.height;
    let table = take(area.height.saturating_sub(used + footer_h));
    let footer = take(footer_h);
    Areas {
        header,
        host,
        gpus,
        warnings,
        table,
        footer,
        compact,
        columns,
        panel_height,
    }
}

/// How tall full panels are, given the `room` left after the header, the warnings, the
/// footer and the table's smallest height: the table takes spare rows first, up to its
/// length (a hidden process is worth more than a taller chart), and what is left grows the
/// panels evenly, without a cap: a row left blank under a short table while the charts
/// could be taller is a row wasted (issue 20: 19 of them with 1 GPU at 120x40 under the
/// old 12-row cap). The table's claim goes down to panels with a
/// one-row chart (`PANEL_MIN_HEIGHT`): a process hidden is worth more than a second chart
/// row (8 GPUs at 120x40 show all 9 of the demo's processes). So no row stays blank while
/// a process or a chart row is hidden; the price is that panels change height as
/// processes come and go when the screen is tight.
fn grown_panel_height(input: &LayoutInput, room: u16, panel_rows: u16) -> u16 {
    let more_table = u16::try_from(input.table_rows)
        .unwrap_or(u16::MAX)
        .saturating_sub(MIN_TABLE_ROWS);
    let per_panel = room.saturating_sub(more_table) / panel_rows.max(1);
    per_panel.max(PANEL_MIN_HEIGHT)
}

/// Process rows visible at once, for PgUp/PgDn.
pub fn table_page_rows(input: &LayoutInput) -> u16 {
    let (w, h) = input.viewport;
    if w == 0 || h == 0 {
        return 10;
    }
    areas(input, Rect::new(0, 0, w, h))
        .table
        .height
        .saturating_sub(TABLE_CHROME)
        .max(1)
}

/// The first table row on screen, given the selected row. The table keeps the selection
/// in view by scrolling just far enough (what ratatui does from offset 0); the draw code
/// and mouse clicks both use this, so they agree on which row is where.
pub fn first_row(input: &LayoutInput, selected: Option<usize>) -> usize {
    let page = table_page_rows(input) as usize;
    selected.map_or(0, |s| s.saturating_sub(page.max(1) - 1))
}

/// Space between table columns.
pub const COLUMN_SPACING: u16 = 1;

/// A table column's width as a constraint: the column table's width (`model::columns`;
/// HOST as wide as the longest host name shown, `host_width`), the command whatever is left.
pub fn column_width(c: Column, host_width: u16) -> Constraint {
    c.spec()
        .width
        .cells(host_width)
        .map_or(Constraint::Fill(1), Constraint::Length)
}

/// The x-ranges of the visible columns within `area` (the same split the table widget
/// makes), for matching mouse clicks on the header.
pub fn column_spans(columns: &[Column], host_width: u16, area: Rect) -> Vec<(Column, Rect)> {
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|c| column_width(*c, host_width))
        .collect();
    let rects = split(Direction::Horizontal, &widths, COLUMN_SPACING, area);
    columns.iter().copied().zip(rects.iter().copied()).collect()
}

/// A `width` x `height` box in the middle of `area` (clipped to it), for popups.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (w, h) = (width.min(area.width), height.min(area.height));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}
