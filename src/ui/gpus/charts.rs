//! A GPU's history as charts: the panels' temperature, power and utilization sparklines
//! (as tall as the panel allows) and the one-line util and VRAM sparklines of compact
//! lines. One column per sample, newest at the right, scrolling left as samples arrive;
//! fewer samples than columns leave the left empty. Reads the rings; computes nothing
//! the model has not kept.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Rect};
use ratatui::text::Line;
use ratatui::widgets::{RenderDirection, Sparkline, SparklineBar};

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
        let bars: Vec<SparklineBar> = columns.into_iter().map(SparklineBar::from).collect();
        frame.render_widget(
            Sparkline::default()
                .data(bars)
                .direction(RenderDirection::RightToLeft)
                .max(max.max(1))
                .style(style),
            spark_area,
        );
    }
}

/// A utilization ratio as the whole percent it was read as (rounded: `0.29 × 100` is 28.999…).
pub fn percent(ratio: f64) -> u64 {
    (ratio * 100.0).round() as u64
}

const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A one-line sparkline as text, `width` characters, newest at the right: for a compact
/// line, which is one `Line` of spans (the sparkline widget needs an area of its own).
/// `columns` come newest first, as `GpuHistory::columns` gives them; a gap is a space.
pub fn spark_text(columns: &[Option<u64>], max: u64, width: usize) -> String {
    let max = max.max(1);
    let mut out: Vec<char> = vec![' '; width];
    for (i, v) in columns.iter().take(width).enumerate() {
        if let Some(v) = v {
            let level = (v.min(&max) * 8).div_ceil(max) as usize;
            out[width - 1 - i] = LEVELS[level.min(8)];
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
