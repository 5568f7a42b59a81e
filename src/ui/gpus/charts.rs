//! A GPU's history as charts: the panels' temperature, power and utilization sparklines
//! (as tall as the panel allows) and the one-line util and VRAM sparklines of compact
//! lines. One column per sample, newest at the right, scrolling left as samples arrive;
//! fewer samples than columns leave the left empty. Reads the rings; computes nothing
//! the model has not kept.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Rect};
use ratatui::style::Style;
use ratatui::text::Line;

use crate::history::GpuHistory;
use crate::layout::{split, split_n};
use crate::reading::GpuReading;
use crate::reading::fields::Key;
use crate::ui::Theme;
use crate::ui::cells::put_lines;

/// Width of a chart's label (`power `).
const LABEL_WIDTH: u16 = 6;

/// The panel's three charts side by side in `area`, each its label then its sparkline.
pub fn draw_panel_charts(
    frame: &mut Frame,
    area: Rect,
    h: &GpuHistory,
    g: &GpuReading,
    theme: &Theme,
) {
    let cells = split(
        Direction::Horizontal,
        &[Constraint::Ratio(1, 3); 3],
        1,
        area,
    );
    let power_max = g.power_limit.map(|l| l.0).unwrap_or(1000.0);
    let width = |cell: &Rect| cell.width.saturating_sub(LABEL_WIDTH) as usize;
    // Temperatures are drawn from 20 °C so the interesting range fills the height; power
    // in tenths of a watt so low readings still show.
    let series = [
        (
            "temp",
            h.columns(Key::Temperature, width(&cells[0]), |t| {
                (t as u64).saturating_sub(20)
            }),
            80,
            theme.spark_temp,
        ),
        (
            "power",
            h.columns(Key::Power, width(&cells[1]), |p| (p.max(0.0) * 10.0) as u64),
            (power_max * 10.0) as u64,
            theme.spark_power,
        ),
        (
            "util",
            h.columns(Key::Util, width(&cells[2]), percent),
            100,
            theme.spark_util,
        ),
    ];
    for (cell, (label, columns, max, style)) in cells.iter().zip(series) {
        let [label_area, spark_area] = split_n(
            Direction::Horizontal,
            [Constraint::Length(LABEL_WIDTH), Constraint::Fill(1)],
            0,
            *cell,
        );
        put_lines(
            &[Line::styled(label, theme.dim)],
            label_area,
            frame.buffer_mut(),
        );
        put_sparkline(frame.buffer_mut(), spark_area, &columns, max.max(1), style);
    }
}

/// `columns` (newest first) as ratatui's `Sparkline` draws them right to left with `max`
/// and `style`, cell for cell (`the_sparkline_draws_what_ratatuis_drew`): a column's
/// height in eighths of a cell, from the bottom up, a gap a blank column. Written into the
/// cells directly: the widget cost about 230 instructions a cell (its bars collected into a
/// vector, each cell looked up by position and its style patched anew), 7 % of a frame at
/// 8 GPUs.
fn put_sparkline(buf: &mut Buffer, area: Rect, columns: &[Option<u64>], max: u64, style: Style) {
    let area = area.intersection(buf.area);
    if area.is_empty() || max == 0 {
        return;
    }
    let eighths = u64::from(area.height) * 8;
    for (i, value) in columns.iter().take(usize::from(area.width)).enumerate() {
        let x = area.right() - 1 - i as u16;
        // A gap is drawn as ratatui draws an absent value: its blank the whole height.
        let mut left = value.map(|v| {
            (u128::from(v) * u128::from(eighths) / u128::from(max)).min(u128::from(eighths)) as u64
        });
        // From the bottom cell up, a row's width of cells apart.
        let bottom = buf.index_of(x, area.bottom() - 1);
        let row = usize::from(buf.area.width);
        for up in 0..usize::from(area.height) {
            let symbol = match left {
                Some(n) => {
                    left = Some(n.saturating_sub(8));
                    BAR_LEVELS[n.min(8) as usize]
                }
                None => " ",
            };
            buf.content[bottom - up * row]
                .set_symbol(symbol)
                .set_style(style);
        }
    }
}

/// A sparkline cell's symbol by how many eighths of it are filled (ratatui's nine levels).
const BAR_LEVELS: [&str; 9] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/// A utilization ratio as the whole percent it was read as (rounded: `0.29 × 100` is 28.999…).
pub fn percent(ratio: f64) -> u64 {
    (ratio * 100.0).round() as u64
}

/// A one-line sparkline as text, `width` characters, newest at the right: for a compact
/// line, which is one `Line` of spans (the sparkline widget needs an area of its own).
/// `columns` come newest first, as `GpuHistory::columns` gives them; a gap is a space.
pub fn spark_text(columns: &[Option<u64>], max: u64, width: usize) -> String {
    let max = max.max(1);
    let mut out: Vec<&str> = vec![" "; width];
    for (i, v) in columns.iter().take(width).enumerate() {
        if let Some(v) = v {
            let level = (v.min(&max) * 8).div_ceil(max) as usize;
            out[width - 1 - i] = BAR_LEVELS[level.min(8)];
        }
    }
    out.concat()
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};
    use ratatui::widgets::{RenderDirection, Sparkline, SparklineBar, Widget};

    use super::*;

    #[test]
    fn the_sparkline_draws_what_ratatuis_drew() {
        let style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
        let series: Vec<Vec<Option<u64>>> = vec![
            vec![],
            vec![Some(0)],
            vec![
                Some(100),
                None,
                Some(50),
                Some(0),
                Some(1),
                Some(99),
                Some(250),
            ],
            (0..40)
                .map(|i| (i % 7 != 3).then_some(i * 37 % 101))
                .collect(),
            (0..40).map(|i| Some(u64::MAX - i)).collect(),
        ];
        for columns in &series {
            for max in [1, 7, 100, 1000, u64::MAX] {
                for (w, h) in [(0, 3), (1, 1), (5, 1), (12, 3), (50, 4), (30, 9)] {
                    let area = Rect::new(2, 1, w, h);
                    let frame = Rect::new(0, 0, w + 4, h + 3);
                    let mut by_widget = Buffer::empty(frame);
                    let bars: Vec<SparklineBar> =
                        columns.iter().copied().map(SparklineBar::from).collect();
                    Sparkline::default()
                        .data(bars)
                        .direction(RenderDirection::RightToLeft)
                        .max(max)
                        .style(style)
                        .render(area, &mut by_widget);
                    let mut by_cells = Buffer::empty(frame);
                    put_sparkline(&mut by_cells, area, columns, max, style);
                    assert_eq!(by_cells, by_widget, "{columns:?} max {max} in {area:?}");
                }
            }
        }
    }

    #[test]
    fn spark_text_is_right_aligned_one_character_per_sample() {
        // Newest first: 100 %, a gap, 50 %, 0 %.
        let cols = [Some(100), None, Some(50), Some(0)];
        assert_eq!(spark_text(&cols, 100, 6), "   ▄ █");
        assert_eq!(spark_text(&cols, 100, 2), " █");
        assert_eq!(spark_text(&[], 100, 3), "   ");
        // A tiny non-zero value still shows.
        assert_eq!(spark_text(&[Some(1)], 100, 1), "▁");
    }
}
