//! Where each GPU goes inside the GPU area: the grid of full panels, the columns of
//! compact lines, and the rows inside one panel. Pure arithmetic on `Areas` and counts,
//! used by drawing and by mouse hit-testing (`ui::hit`) alike, so a click lands on the
//! GPU drawn there.

use ratatui::layout::{Constraint, Direction, Rect};

use super::{Areas, PANEL_HEIGHT, PANEL_MIN_HEIGHT, split, split_n};

/// Narrowest a column of compact lines may be: short lines (util, VRAM and temperature as
/// numbers, then the owners) that let 16 GPUs fit in two columns at 80x24 rather than
/// scroll. Columns are added only as needed, so lines are as wide as showing every GPU
/// allows.
pub const COMPACT_COLUMN_MIN_WIDTH: u16 = 38;
/// Space between two columns of compact lines.
const COMPACT_COLUMN_GAP: u16 = 1;

/// Columns of compact lines: one if every GPU fits in `room` lines (a title line plus one
/// per GPU), else as few as show them all, as many as the width allows at most.
pub fn compact_columns(width: u16, gpus: usize, room: u16) -> u16 {
    let max =
        ((width + COMPACT_COLUMN_GAP) / (COMPACT_COLUMN_MIN_WIDTH + COMPACT_COLUMN_GAP)).max(1);
    let lines = room.saturating_sub(1).max(1) as usize;
    (1..=max)
        .find(|c| gpus.div_ceil(*c as usize) <= lines)
        .unwrap_or(max)
}

/// The columns of the compact list, left to right, each with its own title line.
pub fn compact_column_rects(areas: &Areas) -> Vec<Rect> {
    let n = areas.columns.max(1);
    split(
        Direction::Horizontal,
        &vec![Constraint::Ratio(1, u32::from(n)); n as usize],
        COMPACT_COLUMN_GAP,
        areas.gpus,
    )
}

/// How many GPUs the GPU area shows at once (compact lines or panels), for scrolling,
/// when every GPU takes one line in compact mode.
pub fn visible_gpus(a: &Areas) -> usize {
    let columns = a.columns.max(1) as usize;
    if a.compact {
        a.gpus.height.saturating_sub(1) as usize * columns
    } else {
        (a.gpus.height / a.panel_height.max(PANEL_MIN_HEIGHT)) as usize * columns
    }
}

/// The first GPU drawn: the scroll position, clamped so the last screenful is full, and
/// aligned to a whole row of panels. `lines` is each GPU's line count in compact mode
/// (1, plus one per MIG instance); only its length matters for panels.
pub fn first_gpu_shown(areas: &Areas, lines: &[u16], scroll: usize) -> usize {
    let gpus = lines.len();
    if areas.compact {
        return scroll.min(last_compact_start(areas, lines));
    }
    let visible = visible_gpus(areas).max(1);
    let max_start = gpus.saturating_sub(visible);
    let start = scroll.min(max_start);
    start - start % (areas.columns as usize).max(1)
}

/// The smallest start from which every remaining GPU is placed whole in compact mode (0
/// when no start is). Whether the GPUs from a start on all fit only gets truer as the start
/// grows, so a binary search finds it in a few placements of one screenful each; trying
/// every start from 0 placed a screenful for each GPU on every frame, which at 10,000 GPUs
/// was most of a key's frame (issue 26 §10).
fn last_compact_start(areas: &Areas, lines: &[u16]) -> usize {
    let gpus = lines.len();
    let fits = |s: usize| compact_placed(areas, lines, s, false).len() == gpus - s;
    let (mut lo, mut hi) = (0, gpus);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { hi = mid } else { lo = mid + 1 }
    }
    if lo == gpus { 0 } else { lo }
}

/// Compact blocks from GPU `start` on: each GPU's line and its instance lines stay in one
/// column (a block that does not fit in what is left of a column starts the next one; one
/// taller than a whole column is cut to it). With `cut_last`, a block that does not fit in
/// the last column is cut to the lines left there rather than leaving them blank (what is
/// drawn); without, it is not placed (what scrolling counts as shown).
fn compact_placed(
    areas: &Areas,
    lines: &[u16],
    start: usize,
    cut_last: bool,
) -> Vec<(usize, Rect)> {
    let per_column = areas.gpus.height.saturating_sub(1).max(1);
    let columns = compact_column_rects(areas);
    let mut out = Vec::new();
    let (mut c, mut line) = (0, 0u16);
    for (i, wanted) in lines.iter().enumerate().skip(start) {
        let mut h = (*wanted).clamp(1, per_column);
        if line + h > per_column {
            if cut_last && c + 1 >= columns.len() && line < per_column {
                h = per_column - line;
            } else {
                c += 1;
                line = 0;
            }
        }
        let Some(col) = columns.get(c) else { break };
        // Line 0 of each column is its column titles.
        let r = Rect::new(col.x, col.y + 1 + line, col.width, h);
        if r.bottom() > areas.gpus.bottom() {
            break;
        }
        out.push((i, r));
        line += h;
    }
    out
}

/// Where each shown GPU is drawn (its panel, or its lines in compact mode), by position in
/// the GPU list: what the panels are drawn in and what a mouse click is matched against.
/// Compact columns are filled top to bottom, then left to right, as a list reads; a GPU's
/// compact rectangle covers its instance lines too.
pub fn gpu_rects(areas: &Areas, lines: &[u16], scroll: usize) -> Vec<(usize, Rect)> {
    let gpus = lines.len();
    let start = first_gpu_shown(areas, lines, scroll);
    let a = areas.gpus;
    if a.height == 0 {
        return Vec::new();
    }
    if areas.compact {
        return compact_placed(areas, lines, start, true);
    }
    let visible = visible_gpus(areas).max(1);
    let end = (start + visible).min(gpus);
    let columns = areas.columns.max(1) as usize;
    let rows = (end - start).div_ceil(columns);
    let row_areas = split(
        Direction::Vertical,
        &vec![Constraint::Length(areas.panel_height); rows],
        0,
        a,
    );
    let mut out = Vec::new();
    for (r, row_area) in row_areas.iter().enumerate() {
        let cells = split(
            Direction::Horizontal,
            &vec![Constraint::Ratio(1, columns as u32); columns],
            0,
            *row_area,
        );
        for (c, cell) in cells.iter().enumerate() {
            let i = start + r * columns + c;
            if i < end {
                out.push((i, *cell));
            }
        }
    }
    out
}

/// The rows inside one panel's border.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanelRows {
    pub gauges: Rect,
    pub readings: Rect,
    /// A line per MIG instance (zero height for a GPU without).
    pub instances: Rect,
    /// Lines for details that do not fit in the borders (zero height when all fit).
    pub details: Rect,
    pub charts: Rect,
}

/// Splits a panel's inside: a gauge line, a readings line, up to `instance_lines` MIG
/// instance lines (before the charts: on a MIG GPU the instances are the news, and the
/// whole GPU's util is often unknown anyway), up to `detail_lines` lines for what the
/// borders cannot hold (taken only from rows beyond the smallest panel, so a GPU without
/// MIG keeps its 2 chart rows), and the charts in the rest.
pub fn panel_rows(inner: Rect, detail_lines: u16, instance_lines: u16) -> PanelRows {
    let instances = instance_lines.min(inner.height.saturating_sub(2));
    let spare = inner
        .height
        .saturating_sub(PANEL_HEIGHT - 2)
        .saturating_sub(instances);
    let details = detail_lines.min(spare);
    let [gauges, readings, instances, details, charts] = split_n(
        Direction::Vertical,
        [
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Length(instances),
            Constraint::Length(details),
            Constraint::Fill(1),
        ],
        0,
        inner,
    );
    PanelRows {
        gauges,
        readings,
        instances,
        details,
        charts,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LayoutInput, LayoutPref, areas};
    use super::*;

    fn input(w: u16, h: u16, gpus: usize) -> LayoutInput {
        LayoutInput {
            viewport: (w, h),
            gpus,
            instance_lines: 0,
            warnings: 0,
            pref: LayoutPref::Auto,
            footer: true,
            table_rows: 9,
        }
    }

    fn screen(i: &LayoutInput) -> Areas {
        areas(i, Rect::new(0, 0, i.viewport.0, i.viewport.1))
    }

    #[test]
    fn sixty_four_gpus_at_200x60_take_two_compact_columns_and_all_fit() {
        let i = input(200, 60, 64);
        let a = screen(&i);
        assert!(a.compact);
        assert_eq!(a.columns, 2);
        let rects = gpu_rects(&a, &[1; 64], 0);
        assert_eq!(rects.len(), 64, "every GPU has a line");
        // GPU 0 tops the left column, GPU 32 the right one; no two lines overlap.
        assert_eq!((rects[0].1.x, rects[0].1.y), (0, a.gpus.y + 1));
        assert!(rects[32].1.x >= 100 && rects[32].1.y == a.gpus.y + 1);
        for (n, (_, r)) in rects.iter().enumerate() {
            assert!(a.gpus.contains(r.as_position()), "line {n} outside");
            assert!(
                rects[n + 1..]
                    .iter()
                    .all(|(_, o)| o.intersection(*r).is_empty())
            );
        }
        // One column when it is enough; more (shorter lines) only to show more GPUs, as
        // many as the width allows.
        assert_eq!(compact_columns(200, 16, 40), 1);
        assert_eq!(compact_columns(80, 16, 11), 2, "16 GPUs fit at 80x24");
        assert_eq!(compact_columns(80, 64, 10), 2);
        assert_eq!(compact_columns(120, 64, 20), 3);
        assert_eq!(compact_columns(60, 64, 10), 1, "too narrow to split");
    }

    /// The binary search finds the start a scan of every start found, for lists of GPUs
    /// with and without MIG instance lines (blocks of several lines, some taller than a
    /// column), on screens of one and of several columns.
    #[test]
    fn the_last_compact_start_is_the_first_start_from_which_all_fit() {
        let scan = |a: &Areas, lines: &[u16]| {
            (0..lines.len())
                .find(|s| compact_placed(a, lines, *s, false).len() == lines.len() - s)
                .unwrap_or(0)
        };
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            for gpus in [0, 1, 7, 16, 64, 333, 2_000] {
                let a = screen(&input(w, h, gpus));
                if !a.compact {
                    continue;
                }
                let plain = vec![1; gpus];
                assert_eq!(
                    last_compact_start(&a, &plain),
                    scan(&a, &plain),
                    "{w}x{h} {gpus}"
                );
                let mig: Vec<u16> = (0..gpus).map(|n| [1, 1, 8, 3, 1, 60][n % 6]).collect();
                assert_eq!(
                    last_compact_start(&a, &mig),
                    scan(&a, &mig),
                    "{w}x{h} {gpus} MIG"
                );
            }
        }
    }

    #[test]
    fn spare_rows_go_to_the_table_first_then_to_the_panels() {
        let tall = screen(&input(200, 60, 8));
        assert!(!tall.compact);
        assert!(tall.panel_height > PANEL_HEIGHT, "{tall:?}");
        // All three rows of panels show, and so do all 9 processes.
        assert_eq!(visible_gpus(&tall), 9);
        assert!(tall.table.height >= 2 + 9, "{tall:?}");
        let tight = screen(&input(120, 40, 8));
        assert!(!tight.compact);
        assert_eq!(tight.panel_height, PANEL_HEIGHT);
        // More processes take rows from the charts, down to the smallest panels.
        let mut busy = input(200, 60, 8);
        busy.table_rows = 30;
        let crowded = screen(&busy);
        assert!(crowded.panel_height < tall.panel_height, "{crowded:?}");
        assert!(crowded.table.height >= 2 + 30, "{crowded:?}");
        busy.table_rows = 100;
        assert_eq!(screen(&busy).panel_height, PANEL_MIN_HEIGHT);
        // Fewer warning lines leave rows the panels take.
        let mut warned = busy;
        warned.table_rows = 30;
        warned.warnings = 5;
        assert!(screen(&warned).panel_height < crowded.panel_height);
        // One GPU takes every row the table does not need: none is left blank.
        let one = screen(&input(200, 60, 1));
        let used = one.gpus.height + one.table.height;
        assert!(one.panel_height > 30, "{one:?}");
        assert!(used >= 60 - 6, "header, warnings and footer only: {one:?}");
    }

    #[test]
    fn detail_lines_come_only_from_spare_rows() {
        let small = panel_rows(Rect::new(0, 0, 60, 4), 2, 0);
        assert_eq!((small.details.height, small.charts.height), (0, 2));
        let tall = panel_rows(Rect::new(0, 0, 60, 7), 1, 0);
        assert_eq!((tall.details.height, tall.charts.height), (1, 4));
        assert_eq!(tall.charts.y, 3);
        // MIG instances come before the details and the charts, down to none of either.
        let mig = panel_rows(Rect::new(0, 0, 60, 7), 1, 2);
        assert_eq!((mig.instances.y, mig.instances.height), (2, 2));
        assert_eq!((mig.details.height, mig.charts.height), (1, 2));
        let crowded = panel_rows(Rect::new(0, 0, 60, 4), 1, 7);
        assert_eq!((crowded.instances.height, crowded.charts.height), (2, 0));
    }

    #[test]
    fn a_mig_gpus_compact_block_holds_its_instance_lines_in_one_column() {
        let mut i = input(200, 40, 3);
        i.pref = super::super::LayoutPref::Compact;
        i.instance_lines = 7;
        let a = screen(&i);
        assert!(a.compact);
        // GPU 0 with 7 instances takes 8 lines; GPUs 1 and 2 follow it.
        let rects = gpu_rects(&a, &[8, 1, 1], 0);
        let heights: Vec<(usize, u16, u16)> = rects
            .iter()
            .map(|(g, r)| (*g, r.y - a.gpus.y, r.height))
            .collect();
        assert_eq!(heights, [(0, 1, 8), (1, 9, 1), (2, 10, 1)]);
        // In a short column a block that does not fit moves whole to the next column.
        let tight = Areas {
            gpus: Rect::new(0, 0, 200, 6),
            columns: 2,
            ..a
        };
        let rects = gpu_rects(&tight, &[3, 3, 1], 0);
        let at: Vec<(usize, u16, u16)> = rects.iter().map(|(g, r)| (*g, r.x, r.y)).collect();
        assert_eq!(at, [(0, 0, 1), (1, 101, 1), (2, 101, 4)]);
        // Scrolled past the end, the last screenful stays full.
        assert_eq!(first_gpu_shown(&tight, &[3, 3, 1], 9), 0);
        // A block that does not fit in the last column shows what fits there (its GPU's
        // line first) instead of blank lines; scrolling still reaches it whole.
        let rects = gpu_rects(&tight, &[1, 4, 4, 3], 0);
        let at: Vec<(usize, u16, u16, u16)> = rects
            .iter()
            .map(|(g, r)| (*g, r.x, r.y, r.height))
            .collect();
        assert_eq!(
            at,
            [(0, 0, 1, 1), (1, 0, 2, 4), (2, 101, 1, 4), (3, 101, 5, 1)]
        );
        assert_eq!(first_gpu_shown(&tight, &[1, 4, 4, 3], 9), 2);
    }

    #[test]
    fn panels_hit_where_they_are_drawn() {
        let a = screen(&input(200, 60, 8));
        let rects = gpu_rects(&a, &[1; 8], 0);
        assert_eq!(rects.len(), 8);
        assert!(rects.iter().all(|(_, r)| r.height == a.panel_height));
    }
}
