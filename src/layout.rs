//! Where things go: splits the screen into header, GPU area, warnings and process table,
//! decides compact vs full panels, and places GPU panels and table columns. Pure
//! arithmetic on the size and a few counts ([`LayoutInput`]), shared by drawing, mouse
//! hit-testing and `update` (for paging), so all three agree on what is where. Imports
//! neither the state nor the drawing code.

use ratatui::layout::{Constraint, Layout, Rect};

use crate::model::procs::Column;

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
    pub warnings: usize,
    pub pref: LayoutPref,
    /// Whether the footer line (filter, status) is showing.
    pub footer: bool,
}

/// Below this the screen says "terminal too small" instead of drawing.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;
/// Height of one full GPU panel (4 lines inside a border).
pub const PANEL_HEIGHT: u16 = 6;
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
    pub gpus: Rect,
    pub warnings: Rect,
    pub table: Rect,
    /// The filter / status line under the table; zero height when there is nothing to say.
    pub footer: Rect,
    pub compact: bool,
    /// Panel grid columns (1 in compact mode).
    pub columns: u16,
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
            let fixed = 1 + RESERVED_WARNING_LINES + TABLE_CHROME + COMFORT_TABLE_ROWS;
            full_height(area.width, input.gpus) + fixed > area.height
        }
    }
}

pub fn areas(input: &LayoutInput, area: Rect) -> Areas {
    let compact = compact_for(input, area);
    let warn_h = warning_lines(input, area.height);
    let footer_h = u16::from(input.footer);
    let reserved = 1 + warn_h + TABLE_CHROME + MIN_TABLE_ROWS + footer_h;
    let room = area.height.saturating_sub(reserved);
    let (gpu_h, columns) = if compact {
        // One title line plus a line per GPU, scrolling when they do not all fit.
        ((input.gpus as u16 + 1).min(room), 1)
    } else {
        let cols = panel_columns(area.width, input.gpus);
        let wanted = full_height(area.width, input.gpus);
        // At least one row of panels, whole panels only.
        let fit = (room / PANEL_HEIGHT).max(1) * PANEL_HEIGHT;
        (wanted.min(fit), cols)
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
    let gpus = take(gpu_h);
    let warnings = take(warn_h);
    let used = 1 + gpus.height + warnings.height;
    let table = take(area.height.saturating_sub(used + footer_h));
    let footer = take(footer_h);
    Areas {
        header,
        gpus,
        warnings,
        table,
        footer,
        compact,
        columns,
    }
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

/// How many GPUs the GPU area shows at once (compact lines or panels), for scrolling.
pub fn visible_gpus(a: &Areas) -> usize {
    if a.compact {
        a.gpus.height.saturating_sub(1) as usize
    } else {
        (a.gpus.height / PANEL_HEIGHT) as usize * a.columns as usize
    }
}

/// The first table row on screen, given the selected row. The table keeps the selection
/// in view by scrolling just far enough (what ratatui does from offset 0); the draw code
/// and mouse clicks both use this, so they agree on which row is where.
pub fn first_row(input: &LayoutInput, selected: Option<usize>) -> usize {
    let page = table_page_rows(input) as usize;
    selected.map_or(0, |s| s.saturating_sub(page.max(1) - 1))
}

/// The first GPU drawn: the scroll position, clamped so the last screenful is full, and
/// aligned to a whole row of panels.
pub fn first_gpu_shown(areas: &Areas, gpus: usize, scroll: usize) -> usize {
    let visible = visible_gpus(areas).max(1);
    let max_start = gpus.saturating_sub(visible);
    let start = scroll.min(max_start);
    start - start % (areas.columns as usize).max(1)
}

/// Where each shown GPU is drawn (its panel, or its line in compact mode), by position in
/// the GPU list: what the panels are drawn in and what a mouse click is matched against.
pub fn gpu_rects(areas: &Areas, gpus: usize, scroll: usize) -> Vec<(usize, Rect)> {
    let visible = visible_gpus(areas).max(1);
    let start = first_gpu_shown(areas, gpus, scroll);
    let end = (start + visible).min(gpus);
    let a = areas.gpus;
    if a.height == 0 {
        return Vec::new();
    }
    if areas.compact {
        // Line 0 is the column titles.
        return (start..end)
            .map(|i| (i, Rect::new(a.x, a.y + 1 + (i - start) as u16, a.width, 1)))
            .filter(|(_, r)| r.bottom() <= a.bottom())
            .collect();
    }
    let columns = areas.columns.max(1) as usize;
    let rows = (end - start).div_ceil(columns);
    let row_areas = Layout::vertical(vec![Constraint::Length(PANEL_HEIGHT); rows]).split(a);
    let mut out = Vec::new();
    for (r, row_area) in row_areas.iter().enumerate() {
        let cells = Layout::horizontal(vec![Constraint::Ratio(1, columns as u32); columns])
            .split(*row_area);
        for (c, cell) in cells.iter().enumerate() {
            let i = start + r * columns + c;
            if i < end {
                out.push((i, *cell));
            }
        }
    }
    out
}

/// Space between table columns.
pub const COLUMN_SPACING: u16 = 1;

/// A table column's width in cells; the command takes whatever is left. Each is wide
/// enough for its title and the sort arrow beside it (`GPU%▼`, `HOST MEM▼`), so sorting
/// never clips a title. HOST is as wide as the longest host name shown (`host_width`),
/// within bounds: a column of `127.0.0.1:` prefixes told nobody which host a row is on.
pub fn column_width(c: Column, host_width: u16) -> Constraint {
    match c {
        Column::Host => Constraint::Length(host_width.clamp(5, MAX_HOST_WIDTH)),
        Column::Gpu => Constraint::Length(4),
        Column::Pid => Constraint::Length(7),
        Column::User => Constraint::Length(9),
        Column::Job => Constraint::Length(24),
        Column::Type => Constraint::Length(5),
        Column::Vram => Constraint::Length(6),
        Column::GpuUtil => Constraint::Length(5),
        Column::Cpu => Constraint::Length(6),
        Column::HostMemory => Constraint::Length(9),
        Column::Time => Constraint::Length(8),
        Column::Command => Constraint::Fill(1),
    }
}

/// The widest the HOST column grows; longer names are cut with `…`.
pub const MAX_HOST_WIDTH: u16 = 24;

/// The x-ranges of the visible columns within `area` (the same split the table widget
/// makes), for matching mouse clicks on the header.
pub fn column_spans(columns: &[Column], host_width: u16, area: Rect) -> Vec<(Column, Rect)> {
    let rects = Layout::horizontal(columns.iter().map(|c| column_width(*c, host_width)))
        .spacing(COLUMN_SPACING)
        .split(area);
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
