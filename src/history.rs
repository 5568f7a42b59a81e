//! Fixed-capacity ring buffers of recent readings per GPU, for sparklines and trends.
//! Owns only storage: points are `Option` so a missing reading shows as a gap, and
//! capacity is fixed at creation so memory never grows with uptime. Storage is allocated as
//! the ring fills, never up front: a long `--history` costs memory only once it is recorded.

// The detail views' series live in their own files (additive to the panels' rings here).
pub mod gpu_points;
pub mod procs;

use std::collections::VecDeque;
use std::time::SystemTime;

/// The most points one ring may hold: a million samples (27 h at the 100 ms minimum
/// interval, 11 days at 1 s) is about 60 MB across one GPU's rings.
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
}

/// One GPU's recent readings, in the units the panel draws (°C, W, %, bytes).
#[derive(Debug, Clone)]
pub struct GpuHistory {
    /// Samples ever pushed: sparkline buckets are aligned to it, so columns move only when a
    /// bucket fills (a shifting sparkline rewrites every cell on the terminal each second).
    pub pushed: u64,
    pub times: Ring<SystemTime>,
    pub temperature: Ring<Option<u32>>,
    pub power: Ring<Option<f64>>,
    pub util: Ring<Option<u32>>,
    pub memory_used: Ring<Option<u64>>,
}

impl GpuHistory {
    pub fn new(capacity: usize) -> Self {
        GpuHistory {
            pushed: 0,
            times: Ring::new(capacity),
            temperature: Ring::new(capacity),
            power: Ring::new(capacity),
            util: Ring::new(capacity),
            memory_used: Ring::new(capacity),
        }
    }

    pub fn push(&mut self, time: SystemTime, reading: &crate::source::GpuReading) {
        self.pushed += 1;
        self.times.push(time);
        self.temperature.push(reading.temperature.map(|c| c.0));
        self.power.push(reading.power.map(|w| w.0));
        self.util.push(reading.util.map(|p| p.0));
        self.memory_used.push(reading.memory_used.map(|b| b.0));
    }

    /// Appends a point a source kept (Prometheus), unless it is not newer than the latest.
    pub fn push_point(&mut self, p: &crate::source::HistoryPoint) {
        if self.times.latest().is_some_and(|t| *t >= p.time) {
            return;
        }
        self.pushed += 1;
        self.times.push(p.time);
        self.temperature.push(p.temperature);
        self.power.push(p.power);
        self.util.push(p.util);
        self.memory_used.push(p.memory_used);
    }

    /// Growth rate of used VRAM in bytes per second over the samples taken at or after
    /// `since`, by a least-squares fit. `None` with fewer than three known points.
    pub fn memory_growth_per_sec(&self, since: SystemTime) -> Option<f64> {
        let points: Vec<(f64, f64)> = self
            .times
            .iter()
            .zip(self.memory_used.iter())
            .filter(|(t, _)| **t >= since)
            .filter_map(|(t, m)| {
                let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs_f64();
                Some((secs, (*m)? as f64))
            })
            .collect();
        // Only a real trend counts: allocator noise around a steady level fits a line
        // badly, and predicting "full in 20 s" from it would be a false alarm.
        least_squares(&points)
            .filter(|fit| fit.r_squared >= MIN_TREND_FIT)
            .map(|fit| fit.slope)
    }
}

/// The whole window squeezed into `width` columns for a sparkline: each column is the
/// largest known value of `capacity / width` consecutive samples (peaks matter more than
/// means here), oldest left, `None` where nothing is known. Columns are aligned to the
/// absolute sample count `pushed`, so older columns never change as new samples arrive.
pub fn buckets(
    points: &[Option<u64>],
    pushed: u64,
    capacity: usize,
    width: usize,
) -> Vec<Option<u64>> {
    if width == 0 {
        return Vec::new();
    }
    let per = capacity.div_ceil(width).max(1) as u64;
    let mut out = vec![None; width];
    if pushed == 0 {
        return out;
    }
    let last_bucket = (pushed - 1) / per;
    let first_bucket = (last_bucket + 1).saturating_sub(width as u64);
    // points[i] is sample number pushed - len + i.
    let start = pushed - points.len() as u64;
    for (i, p) in points.iter().enumerate() {
        let n = start + i as u64;
        let bucket = n / per;
        if bucket < first_bucket {
            continue;
        }
        let column =
            (bucket - first_bucket) as usize + width - (last_bucket - first_bucket + 1) as usize;
        if let Some(v) = p {
            let cell = &mut out[column];
            *cell = Some(cell.map_or(*v, |c: u64| c.max(*v)));
        }
    }
    out
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
mod tests {
    use super::*;

    #[test]
    fn a_long_window_allocates_only_as_it_fills() {
        let mut r: Ring<u64> = Ring::new(MAX_POINTS);
        assert_eq!(r.allocated(), 0);
        for i in 0..100 {
            r.push(i);
        }
        assert!(r.allocated() < 1000, "{}", r.allocated());
        let mut small: Ring<u64> = Ring::new(300);
        (0..1000).for_each(|i| small.push(i));
        assert_eq!((small.len(), small.allocated() <= 300 + 16), (300, true));
        assert_eq!(Ring::<u8>::new(usize::MAX).capacity(), MAX_POINTS);
    }
    use std::time::Duration;

    #[test]
    fn ring_drops_oldest_when_full() {
        let mut r = Ring::new(3);
        for v in 1..=5 {
            r.push(v);
        }
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(r.len(), 3);
        assert_eq!(r.capacity(), 3);
        assert_eq!(r.latest(), Some(&5));
    }

    #[test]
    fn ring_last_n_handles_short_buffers() {
        let mut r = Ring::new(10);
        r.push(1);
        r.push(2);
        assert_eq!(r.last_n(5).copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(r.last_n(1).copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn zero_capacity_is_one() {
        let mut r = Ring::new(0);
        r.push(1);
        r.push(2);
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn buckets_squeeze_the_window_and_only_the_newest_column_changes() {
        // Capacity 8 in 4 columns: 2 samples a column.
        let pts: Vec<Option<u64>> = vec![Some(1), Some(5), None, Some(2), Some(7), Some(3)];
        assert_eq!(
            buckets(&pts, 6, 8, 4),
            vec![None, Some(5), Some(2), Some(7)]
        );
        // One more sample lands in a new bucket: everything moves one column, once.
        let mut more = pts.clone();
        more.push(Some(4));
        assert_eq!(
            buckets(&more, 7, 8, 4),
            vec![Some(5), Some(2), Some(7), Some(4)]
        );
        // The next one only changes the newest column.
        more.push(Some(9));
        assert_eq!(
            buckets(&more, 8, 8, 4),
            vec![Some(5), Some(2), Some(7), Some(9)]
        );
        // Gaps stay gaps; nothing yet is all gaps.
        assert_eq!(buckets(&[None, None], 2, 8, 4), vec![None; 4]);
        assert_eq!(buckets(&[], 0, 8, 4), vec![None; 4]);
        assert!(buckets(&pts, 6, 8, 0).is_empty());
    }

    #[test]
    fn a_ring_that_has_wrapped_keeps_its_alignment() {
        // Capacity 4, 2 columns of 2; 10 samples pushed, the ring holds numbers 6..=9.
        let pts = vec![Some(6), Some(7), Some(8), Some(9)];
        assert_eq!(buckets(&pts, 10, 4, 2), vec![Some(7), Some(9)]);
        // 11 pushed: numbers 7..=10; bucket 5 holds only 10 so far.
        let pts = vec![Some(7), Some(8), Some(9), Some(10)];
        assert_eq!(buckets(&pts, 11, 4, 2), vec![Some(9), Some(10)]);
    }

    #[test]
    fn slope_of_a_line() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 * i as f64 + 7.0)).collect();
        let fit = least_squares(&pts).unwrap();
        assert!((fit.slope - 3.0).abs() < 1e-9);
        assert!((fit.r_squared - 1.0).abs() < 1e-9);
        assert_eq!(least_squares(&pts[..2]), None);
        assert_eq!(least_squares(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn noise_is_not_a_trend() {
        use crate::source::{GpuId, GpuReading};
        use crate::units::Bytes;
        let mut h = GpuHistory::new(60);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        // 69 GiB ± 1 GiB, alternating, ending high: a naive fit sees growth.
        let wiggle = [0.0, 1.0, -1.0, 0.8, -0.9, 1.0, -0.2, 1.0];
        for (i, w) in wiggle.iter().enumerate() {
            let mut g = GpuReading::absent(GpuId("x".into()), 0, "g");
            g.memory_used = Some(Bytes::from_gib(69.0 + w));
            h.push(t0 + Duration::from_secs(i as u64), &g);
        }
        assert_eq!(h.memory_growth_per_sec(t0), None);
    }

    #[test]
    fn memory_growth_skips_gaps() {
        use crate::source::{GpuId, GpuReading};
        use crate::units::Bytes;
        let mut h = GpuHistory::new(30);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        for i in 0..6u64 {
            let mut g = GpuReading::absent(GpuId("x".into()), 0, "g");
            // A missing reading in the middle must not count as zero.
            g.memory_used = (i != 3).then(|| Bytes(1000 + 500 * i));
            h.push(t0 + Duration::from_secs(i), &g);
        }
        let slope = h.memory_growth_per_sec(t0).unwrap();
        assert!((slope - 500.0).abs() < 1e-6, "{slope}");
        // Only the window asked for counts: the last three points (one of them a gap) are too few.
        assert_eq!(h.memory_growth_per_sec(t0 + Duration::from_secs(3)), None);
    }
}
