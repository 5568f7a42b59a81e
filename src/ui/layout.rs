//! Where things go: splits the screen into header, GPU area, warnings and process table,
//! and decides compact vs full panels. Pure arithmetic on the size and the state, shared by
//! `draw` and by `update` (for paging), so both agree on what is visible.

use ratatui::layout::Rect;

use crate::state::{LayoutPref, State};

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
pub fn warning_lines(state: &State, height: u16) -> u16 {
    let cap = if height >= 40 { 5 } else { 3 };
    (state.warnings.len() as u16).min(cap)
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
pub fn is_compact(state: &State) -> bool {
    let (w, h) = state.viewport;
    compact_for(state, Rect::new(0, 0, w, h))
}

fn compact_for(state: &State, area: Rect) -> bool {
    match state.layout {
        LayoutPref::Compact => true,
        LayoutPref::Full => false,
        LayoutPref::Auto => {
            let fixed = 1 + RESERVED_WARNING_LINES + TABLE_CHROME + COMFORT_TABLE_ROWS;
            full_height(area.width, state.gpus.len()) + fixed > area.height
        }
    }
}

pub fn areas(state: &State, area: Rect) -> Areas {
    let compact = compact_for(state, area);
    let warn_h = warning_lines(state, area.height);
    let reserved =
        1 + warn_h + TABLE_CHROME + MIN_TABLE_ROWS + u16::from(super::footer::visible(state));
    let room = area.height.saturating_sub(reserved);
    let (gpu_h, columns) = if compact {
        // One title line plus a line per GPU, scrolling when they do not all fit.
        ((state.gpus.len() as u16 + 1).min(room), 1)
    } else {
        let cols = panel_columns(area.width, state.gpus.len());
        let wanted = full_height(area.width, state.gpus.len());
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
    let footer_h = u16::from(super::footer::visible(state));
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
pub fn table_page_rows(state: &State) -> u16 {
    let (w, h) = state.viewport;
    if w == 0 || h == 0 {
        return 10;
    }
    areas(state, Rect::new(0, 0, w, h))
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

/// The first process row on screen. The table keeps the selection in view by scrolling
/// just far enough (what ratatui does from offset 0); the draw code and mouse clicks both
/// use this, so they agree on which row is where.
pub fn table_first_row(state: &State) -> usize {
    first_row(
        state.procs.selected_index(),
        table_page_rows(state) as usize,
    )
}

/// The same for the per-user table.
pub fn users_first_row(state: &State) -> usize {
    first_row(Some(state.user_selected), table_page_rows(state) as usize)
}

fn first_row(selected: Option<usize>, page: usize) -> usize {
    selected.map_or(0, |s| s.saturating_sub(page.max(1) - 1))
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
