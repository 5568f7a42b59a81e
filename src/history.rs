//! Fixed-capacity ring buffers of recent readings: ONE store of points per GPU (the panels'
//! sparklines, the GPU detail view's charts and the VRAM trend all read it, and a source
//! that keeps history itself, Prometheus, back-fills it), keyed by the field table's
//! charted fields. Owns only storage: an unknown reading stays unknown (a gap, never a
//! zero), and capacity is fixed at creation so memory never grows with uptime. Storage is
//! allocated as the ring fills, never up front: a long `--history` costs memory only once it
//! is recorded.

// A GPU's columns and times, and a process's series, live in their own files.
mod column;
pub mod procs;
mod times;

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::reading::fields::{CHARTED, Key};
use crate::reading::{GpuReading, HistoryPoint};
use column::Column;
use times::Times;

/// The most points one ring may hold: a million samples (27 h at the 100 ms minimum
/// interval, 11 days at 1 s) is 22–80 MB for one GPU (4 or 8 bytes for the time, 2 to 8
/// for each charted reading its source fills: `GpuHistory`).
pub const MAX_POINTS: usize = 1_000_000;

/// A ring buffer holding at most `capacity` points; the oldest is dropped on overflow.
#[derive(Debug, Clone)]
pub struct Ring<T> {
    points: VecDeque<T>,
    capacity: usize,
}

impl<T: Clone> Ring<T> {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_POINTS);
        Ring {
            points: VecDeque::new(),
            capacity,
        }
    }

    pub fn push(&mut self, value: T) {
        let len = self.points.len();
        if len == self.capacity {
            self.points.pop_front();
        } else if len == self.points.capacity() {
            // Double as it fills (amortised O(1)), but never past the capacity.
            self.points
                .reserve_exact(len.max(16).min(self.capacity - len));
        }
        self.points.push_back(value);
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Points the storage has room for now (grows as the ring fills).
    pub fn allocated(&self) -> usize {
        self.points.capacity()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.points.iter()
    }

    /// The newest `n` points (fewer if not yet filled), oldest first.
    pub fn last_n(&self, n: usize) -> impl Iterator<Item = &T> {
        self.points.iter().skip(self.points.len().saturating_sub(n))
    }

    pub fn latest(&self) -> Option<&T> {
        self.points.back()
    }

    /// The newest `n` points (fewer if not yet filled), newest first: a chart drawn right
    /// to left from these has one column per sample, the newest at its right edge.
    pub fn newest(&self, n: usize) -> impl Iterator<Item = &T> {
        self.points.iter().rev().take(n)
    }
}

/// One GPU's recent readings: a ring of points, each every charted field in base units,
/// stored column by column (`column`, `times`): a column only for the fields its source
/// has ever filled (dcgm-exporter fills 7 of 9), 2 or 4 bytes a value and 4 a time where
/// that gives them back bit for bit, 8 where not. At 8,000 GPUs × 300 points that is 22–30
/// bytes a point where a whole `HistoryPoint` is 80 (issue 25's `--prometheus` budget).
#[derive(Debug, Clone)]
pub struct GpuHistory {
    capacity: usize,
    times: Times,
    /// `fields::CHARTED`'s order; `None` until the field is first known, so a field that
    /// appears later gets its column with the earlier points unknown.
    columns: [Option<Column>; CHARTED.len()],
}

impl GpuHistory {
    pub fn new(capacity: usize) -> Self {
        GpuHistory {
            capacity: capacity.clamp(1, MAX_POINTS),
            times: Times::default(),
            columns: Default::default(),
        }
    }

    pub fn push(&mut self, time: SystemTime, reading: &GpuReading) {
        self.append(&HistoryPoint::of(time, reading));
    }

    /// Appends a point a source kept (Prometheus), unless it is not newer than the latest.
    pub fn push_point(&mut self, p: &HistoryPoint) {
        let len = self.times.len();
        if len > 0 && self.times.get(len - 1) >= p.nanos() {
            return;
        }
        self.append(p);
    }

    fn append(&mut self, p: &HistoryPoint) {
        if self.times.len() == self.capacity {
            self.times.pop_front();
            self.columns
                .iter_mut()
                .flatten()
                .for_each(Column::pop_front);
        }
        let before = self.times.len();
        if let Some(more) = growth(before, self.times.allocated(), self.capacity) {
            self.times.reserve_exact(more);
        }
        self.times.push(p.nanos());
        for (slot, &v) in self.columns.iter_mut().zip(p.raw()) {
            let column = match slot {
                Some(c) => c,
                None if v.is_nan() => continue,
                None => slot.insert(Column::new(before)),
            };
            if let Some(more) = growth(before, column.allocated(), self.capacity) {
                column.reserve_exact(more);
            }
            column.push(v);
        }
        // Point i is row i of every column: they grow and drop in step with the times.
        debug_assert!(self.columns.iter().flatten().all(|c| c.len() == self.len()));
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of storage the points hold now (not the struct itself): what a fleet's
    /// histories cost, `size_of::<GpuHistory>()` aside.
    pub fn heap_bytes(&self) -> usize {
        let columns: usize = self.columns.iter().flatten().map(Column::heap_bytes).sum();
        self.times.heap_bytes() + columns
    }

    /// Point `i` (oldest is 0) as a whole.
    fn point(&self, i: usize) -> HistoryPoint {
        let values =
            std::array::from_fn(|k| self.columns[k].as_ref().map_or(f64::NAN, |c| c.get(i)));
        HistoryPoint::from_raw(self.times.get(i), values)
    }

    /// Every point, oldest first, rebuilt whole (the detail view's charts: one GPU's window).
    pub fn points(&self) -> Vec<HistoryPoint> {
        (0..self.len()).map(|i| self.point(i)).collect()
    }

    pub fn latest(&self) -> Option<HistoryPoint> {
        self.len().checked_sub(1).map(|i| self.point(i))
    }

    /// `key`'s column; `None` when the field has never been known or is not charted.
    fn column(&self, key: Key) -> Option<&Column> {
        let i = CHARTED.iter().position(|k| *k == key)?;
        self.columns[i].as_ref()
    }

    /// `key`'s values from the newest back (NaN where unknown) with their times; nothing when
    /// the field has never been known (every point unknown) or is not charted.
    fn newest_of(&self, key: Key) -> impl Iterator<Item = (i64, f64)> + '_ {
        let column = self.column(key);
        let len = if column.is_some() { self.len() } else { 0 };
        (0..len)
            .rev()
            .map(move |i| (self.times.get(i), column.map_or(f64::NAN, |c| c.get(i))))
    }

    /// A chart's columns: the newest `width` points' `key`, newest first, each turned into
    /// the chart's scale by `to_u64`; a missing reading stays a gap.
    pub fn columns(&self, key: Key, width: usize, to_u64: impl Fn(f64) -> u64) -> Vec<Option<u64>> {
        let shown = width.min(self.len());
        let mut out: Vec<Option<u64>> = Vec::with_capacity(shown);
        if let Some(column) = self.column(key) {
            column.for_newest(shown, |v| out.push((!v.is_nan()).then(|| to_u64(v))));
        }
        // A field never known is a gap in every column the points cover.
        out.resize(shown, None);
        out
    }

    /// Growth rate of used VRAM in bytes per second over the samples taken at or after
    /// `since`, by a least-squares fit. `None` with fewer than three known points.
    pub fn memory_growth_per_sec(&self, since: SystemTime) -> Option<f64> {
        // From the newest back to `since`, not through the whole window: this runs for
        // every GPU on every sample (10,000 x 300 points a refresh in a Prometheus fleet,
        // on the UI thread; issue 26 §10). Points are pushed in time order; reversed
        // again below so the fit adds them up in the same order as before.
        let since = HistoryPoint::at(since).nanos();
        let mut points: Vec<(f64, f64)> = self
            .newest_of(Key::MemoryUsed)
            .take_while(|(t, _)| *t >= since)
            .filter(|(t, v)| *t >= 0 && !v.is_nan())
            .map(|(t, v)| (Duration::from_nanos(t as u64).as_secs_f64(), v))
            .collect();
        points.reverse();
        // Only a real trend counts: allocator noise around a steady level fits a line
        // badly, and predicting "full in 20 s" from it would be a false alarm.
        least_squares(&points)
            .filter(|fit| fit.r_squared >= MIN_TREND_FIT)
            .map(|fit| fit.slope)
    }
}

/// Room to add when storage of `allocated` points holding `len` is full: double as it fills
/// (amortised O(1)), never past `capacity`; `None` while there is room.
fn growth(len: usize, allocated: usize, capacity: usize) -> Option<usize> {
    (len >= allocated && len < capacity).then(|| len.max(16).min(capacity - len))
}

/// How well a line must fit the VRAM readings (R², 0–1) to be called a trend.
pub const MIN_TREND_FIT: f64 = 0.6;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Fit {
    slope: f64,
    /// Share of the variation the line explains; 1 for a flat series.
    r_squared: f64,
}

fn least_squares(points: &[(f64, f64)]) -> Option<Fit> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in points {
        sxy += (x - mean_x) * (y - mean_y);
        sxx += (x - mean_x) * (x - mean_x);
        syy += (y - mean_y) * (y - mean_y);
    }
    if sxx <= 0.0 {
        return None;
    }
    let r_squared = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    Some(Fit {
        slope: sxy / sxx,
        r_squared,
    })
}

#[cfg(test)]
mod tests;
