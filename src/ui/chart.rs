//! One braille line chart over the history window, as both detail views draw them: series
//! with gaps where a reading was absent (a gap is not a zero), optional reference lines
//! (a limit, a slowdown temperature), a time axis ending at "now", and a title that
//! names every series with its colour and current value (so no legend box hides the data).
//! Builds widgets from data it is given; reads no state and no clock.

use std::time::{Duration, SystemTime};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType};

use crate::present::format::duration_short;

/// One line of a chart: its label in the title, and its points (seconds before now, value).
pub struct Series {
    pub label: String,
    pub style: Style,
    pub points: Vec<(f64, Option<f64>)>,
}

/// A reading taken at a moment: what a chart plots against time.
pub trait Timed {
    fn at(&self) -> SystemTime;
}

impl Timed for crate::reading::HistoryPoint {
    fn at(&self) -> SystemTime {
        self.time()
    }
}

impl Timed for crate::history::procs::ProcPoint {
    fn at(&self) -> SystemTime {
        self.at
    }
}

/// Points of one GPU or process with the time they are drawn against (the latest sample's).
pub struct Points<'a, P> {
    pub now: SystemTime,
    pub points: Vec<&'a P>,
}

impl<P: Timed> Points<'_, P> {
    /// One line: `f` of each point, a gap where it is unknown.
    pub fn series<V: Into<f64>>(
        &self,
        label: String,
        style: Style,
        f: impl Fn(&P) -> Option<V>,
    ) -> Series {
        Series {
            label,
            style,
            points: self
                .points
                .iter()
                .map(|p| (x_of(self.now, p.at()), f(p).map(Into::into)))
                .collect(),
        }
    }

    pub fn latest(&self) -> Option<&P> {
        self.points.last().copied()
    }
}

/// A chart to draw: title series, reference lines, and the value axis.
pub struct ChartSpec {
    pub title: String,
    pub series: Vec<Series>,
    /// Horizontal lines (value, label, style): a limit, a maximum clock, a slowdown point.
    pub references: Vec<(f64, String, Style)>,
    /// The value axis runs from 0 to at least this (it grows to fit the data).
    pub y_floor: f64,
    /// How a value reads on the axis.
    pub y_label: fn(f64) -> String,
}

/// A series' style and its runs of known points (a run ends at a gap).
type Runs = (Style, Vec<Vec<(f64, f64)>>);

/// Seconds before `now` at which each time was taken (negative: the past is left).
pub fn x_of(now: SystemTime, at: SystemTime) -> f64 {
    -now.duration_since(at)
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
}

/// Splits a series into runs of known points: a line is never drawn across a gap.
fn segments(points: &[(f64, Option<f64>)]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut run = Vec::new();
    for &(x, y) in points {
        match y {
            Some(y) => run.push((x, y)),
            None if !run.is_empty() => out.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        out.push(run);
    }
    out
}

/// Draws `spec` into `area` over a window of `window` seconds ending now.
pub fn draw(frame: &mut Frame, area: Rect, spec: &ChartSpec, window: f64, dim: Style) {
    if area.height < 2 || area.width < 10 {
        return;
    }
    let runs: Vec<Runs> = spec
        .series
        .iter()
        .map(|s| (s.style, segments(&s.points)))
        .collect();
    let refs: Vec<[(f64, f64); 2]> = spec
        .references
        .iter()
        .map(|(v, _, _)| [(-window, *v), (0.0, *v)])
        .collect();
    let top = y_top(spec, &runs);
    let y_axis = Axis::default()
        .bounds([0.0, top])
        .style(dim)
        .labels([(spec.y_label)(0.0), (spec.y_label)(top)]);
    let chart = Chart::new(datasets(spec, &refs, &runs))
        .block(
            Block::default()
                .borders(Borders::TOP)
                .border_style(dim)
                .title(title_line(spec, dim, area.width as usize)),
        )
        .x_axis(time_axis(window, area.height.saturating_sub(1), dim))
        .y_axis(y_axis)
        .legend_position(None);
    frame.render_widget(chart, area);
}

/// The axis ends at the floor or the highest reference line; data above them gets 5 %
/// headroom so its peak is not drawn on the title.
fn y_top(spec: &ChartSpec, runs: &[Runs]) -> f64 {
    let base = spec
        .references
        .iter()
        .map(|r| r.0)
        .fold(spec.y_floor, f64::max);
    let data = runs
        .iter()
        .flat_map(|(_, r)| r.iter().flatten().map(|p| p.1))
        .fold(0.0, f64::max);
    let top = if data > base { data * 1.05 } else { base };
    if top > 0.0 { top } else { 1.0 }
}

/// Reference lines first: a series drawn later stays visible where it meets one.
fn datasets<'a>(
    spec: &ChartSpec,
    refs: &'a [[(f64, f64); 2]],
    runs: &'a [Runs],
) -> Vec<Dataset<'a>> {
    let dataset = |style: Style, kind: GraphType, data: &'a [(f64, f64)]| {
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(kind)
            .style(style)
            .data(data)
    };
    let mut out: Vec<Dataset> = refs
        .iter()
        .zip(&spec.references)
        .map(|(line, (_, _, style))| dataset(*style, GraphType::Line, line))
        .collect();
    for (style, run) in runs {
        for seg in run {
            // A lone point has no neighbour to draw a line to: a dot.
            let kind = if seg.len() == 1 {
                GraphType::Scatter
            } else {
                GraphType::Line
            };
            out.push(dataset(*style, kind, seg));
        }
    }
    out
}

/// The time axis, `-5m … now`; its labels need two rows (axis and labels), so small charts
/// give them to the data.
fn time_axis(window: f64, inner_height: u16, dim: Style) -> Axis<'static> {
    let axis = Axis::default().bounds([-window, 0.0]).style(dim);
    if inner_height < 6 {
        return axis;
    }
    let half = Duration::from_secs_f64(window / 2.0);
    let full = Duration::from_secs_f64(window);
    axis.labels([
        format!("-{}", duration_short(full)),
        format!("-{}", duration_short(half)),
        "now".to_string(),
    ])
}

/// `VRAM ━ 41.2 GiB ┄ total 80 GiB`: each series and reference in its own colour. When
/// that does not fit the chart's width the references' words go first (their lines stay
/// drawn), so the title is shortened whole, never cut mid-word.
fn title_line(spec: &ChartSpec, dim: Style, width: usize) -> Line<'static> {
    let mut spans = vec![Span::styled(format!(" {} ", spec.title), dim)];
    for s in &spec.series {
        spans.push(Span::styled(format!("━ {} ", s.label), s.style));
    }
    let refs: Vec<Span> = spec
        .references
        .iter()
        .map(|(_, label, style)| Span::styled(format!("┄ {label} "), *style))
        .collect();
    let used: usize = spans.iter().map(Span::width).sum();
    let extra: usize = refs.iter().map(Span::width).sum();
    if used + extra + 2 <= width {
        spans.extend(refs);
    }
    Line::from(spans)
}

/// Lays `n` charts out in a grid of `columns` columns over `area`, row by row.
pub fn grid(area: Rect, n: usize, columns: usize) -> Vec<Rect> {
    if n == 0 || columns == 0 {
        return Vec::new();
    }
    let rows = n.div_ceil(columns);
    let h = area.height / rows as u16;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (r, c) = (i / columns, i % columns);
        // The last row's charts share the width among themselves.
        let in_row = if r == rows - 1 {
            n - r * columns
        } else {
            columns
        };
        let w = area.width / in_row as u16;
        let x = area.x + w * c as u16;
        let width = if c == in_row - 1 { area.right() - x } else { w };
        let y = area.y + h * r as u16;
        let height = if r == rows - 1 { area.bottom() - y } else { h };
        out.push(Rect::new(x, y, width, height));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_a_series_and_zero_is_a_point() {
        let pts = [
            (-3.0, Some(1.0)),
            (-2.0, None),
            (-1.0, Some(0.0)),
            (0.0, Some(2.0)),
        ];
        assert_eq!(
            segments(&pts),
            vec![vec![(-3.0, 1.0)], vec![(-1.0, 0.0), (0.0, 2.0)]]
        );
        assert!(segments(&[(0.0, None)]).is_empty());
    }

    #[test]
    fn a_grid_covers_its_area() {
        let area = Rect::new(0, 1, 80, 15);
        let cells = grid(area, 5, 2);
        assert_eq!(cells.len(), 5);
        assert_eq!(cells[0], Rect::new(0, 1, 40, 5));
        assert_eq!(cells[1], Rect::new(40, 1, 40, 5));
        // The last, lone chart takes the whole width and what is left of the height.
        assert_eq!(cells[4], Rect::new(0, 11, 80, 5));
    }
}
