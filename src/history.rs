//! Fixed-capacity ring buffers of recent readings: ONE store of points per GPU (the panels'
//! sparklines, the GPU detail view's charts and the VRAM trend all read it, and a source
//! that keeps history itself, Prometheus, back-fills it), keyed by the field table's
//! charted fields. Owns only storage: values are `Option` so a missing reading shows as a
//! gap, and capacity is fixed at creation so memory never grows with uptime. Storage is
//! allocated as the ring fills, never up front: a long `--history` costs memory only once it
//! is recorded.

// A process's series live in their own file.
pub mod procs;

use std::collections::VecDeque;
use std::time::SystemTime;

use crate::reading::fields::Key;
use crate::reading::{GpuReading, HistoryPoint};

/// The most points one ring may hold: a million samples (27 h at the 100 ms minimum
/// interval, 11 days at 1 s) is about 80 MB for one GPU (80 bytes a point: the time and
/// nine charted readings).
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

/// One GPU's recent readings: a ring of points, each every charted field in base units.
#[derive(Debug, Clone)]
pub struct GpuHistory {
    points: Ring<HistoryPoint>,
}

impl GpuHistory {
    pub fn new(capacity: usize) -> Self {
        GpuHistory {
            points: Ring::new(capacity),
        }
    }

    pub fn push(&mut self, time: SystemTime, reading: &GpuReading) {
        self.points.push(HistoryPoint::of(time, reading));
    }

    /// Appends a point a source kept (Prometheus), unless it is not newer than the latest.
    pub fn push_point(&mut self, p: &HistoryPoint) {
        if self.points.latest().is_some_and(|l| l.time() >= p.time()) {
            return;
        }
        self.points.push(p.clone());
    }

    /// Every point, oldest first.
    pub fn points(&self) -> &Ring<HistoryPoint> {
        &self.points
    }

    /// A chart's columns: the newest `width` points' `key`, newest first, each turned into
    /// the chart's scale by `to_u64`; a missing reading stays a gap.
    pub fn columns(&self, key: Key, width: usize, to_u64: impl Fn(f64) -> u64) -> Vec<Option<u64>> {
        self.points
            .newest(width)
            .map(|p| p.get(key).map(&to_u64))
            .collect()
    }

    /// Growth rate of used VRAM in bytes per second over the samples taken at or after
    /// `since`, by a least-squares fit. `None` with fewer than three known points.
    pub fn memory_growth_per_sec(&self, since: SystemTime) -> Option<f64> {
        // From the newest back to `since`, not through the whole window: this runs for
        // every GPU on every sample (10,000 x 300 points a refresh in a Prometheus fleet,
        // on the UI thread; issue 26 §10). Points are pushed in time order; reversed
        // again below so the fit adds them up in the same order as before.
        let mut points: Vec<(f64, f64)> = self
            .points
            .iter()
            .rev()
            .take_while(|p| p.time() >= since)
            .filter_map(|p| {
                let secs = p
                    .time()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .ok()?
                    .as_secs_f64();
                Some((secs, p.get(Key::MemoryUsed)?))
            })
            .collect();
        points.reverse();
        // Only a real trend counts: allocator noise around a steady level fits a line
        // badly, and predicting "full in 20 s" from it would be a false alarm.
        least_squares(&points)
            .filter(|fit| fit.r_squared >= MIN_TREND_FIT)
            .map(|fit| fit.slope)
    }
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
    use crate::reading::GpuId;
    use crate::units::{Bytes, Celsius};
    use std::time::Duration;

    #[test]
    fn a_point_is_80_bytes() {
        // 8,000 GPUs x 300 points: 183 MiB of points (366 MiB at 160 bytes a point, 201 at 88).
        assert_eq!(std::mem::size_of::<HistoryPoint>(), 80);
    }

    #[test]
    fn a_point_keeps_its_time_to_the_nanosecond_before_and_after_1970() {
        let after = SystemTime::UNIX_EPOCH + Duration::new(1_767_603_600, 123_456_789);
        let before = SystemTime::UNIX_EPOCH - Duration::new(86_400, 1);
        for t in [after, before, SystemTime::UNIX_EPOCH] {
            assert_eq!(HistoryPoint::at(t).time(), t);
        }
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(400 * 365 * 86_400);
        assert!(
            HistoryPoint::at(far).time() < far,
            "held at the latest that fits"
        );
        assert!(HistoryPoint::at(far).time() > after);
    }

    #[test]
    fn a_point_keeps_unknown_apart_from_zero_and_compares_unknowns_equal() {
        use crate::reading::fields::Key;
        let t = std::time::UNIX_EPOCH;
        let mut p = HistoryPoint::at(t);
        assert_eq!(p.get(Key::Power), None, "unknown, not 0");
        p.set(Key::Power, Some(0.0));
        assert_eq!(p.get(Key::Power), Some(0.0), "a real zero");
        p.set(Key::Util, Some(f64::NAN));
        assert_eq!(p.get(Key::Util), None, "NaN is no reading");
        let mut q = HistoryPoint::at(t);
        q.set(Key::Power, Some(0.0));
        assert_eq!(p, q, "unknown equals unknown");
        q.set(Key::Temperature, Some(71.0));
        assert_ne!(p, q);
    }

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
    fn charts_hold_one_column_per_sample_newest_first() {
        let at = |i: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(i);
        let reading = |t: Option<u32>| {
            let mut g = GpuReading::absent(GpuId("x".into()), 0, "g");
            g.temperature = t.map(Celsius);
            g
        };
        let mut h = GpuHistory::new(300);
        // Three samples into a 10-column chart: three columns, not one bucket.
        for (i, v) in [Some(1), None, Some(3)].into_iter().enumerate() {
            h.push(at(i as u64), &reading(v));
        }
        let temp = |h: &GpuHistory, w| h.columns(Key::Temperature, w, |c| c as u64);
        assert_eq!(temp(&h, 10), vec![Some(3), None, Some(1)]);
        // More samples than columns: the newest `width`, so it keeps scrolling.
        for v in 4..=20 {
            h.push(at(u64::from(v)), &reading(Some(v)));
        }
        assert_eq!(temp(&h, 4), vec![Some(20), Some(19), Some(18), Some(17)]);
        // A full ring drops the oldest; the chart still shows the newest.
        let mut small = GpuHistory::new(3);
        for v in 1..=5 {
            small.push(at(u64::from(v)), &reading(Some(v)));
        }
        assert_eq!(
            small.columns(Key::Temperature, 10, |c| c as u64 * 2),
            vec![Some(10), Some(8), Some(6)]
        );
        assert!(temp(&small, 0).is_empty());
    }

    /// A back-filled point goes into the same store the detail view reads, with every
    /// charted field; one not newer than the latest is not taken twice.
    #[test]
    fn kept_points_fill_the_one_store_once() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let mut h = GpuHistory::new(10);
        let mut p = HistoryPoint::at(t);
        p.set(Key::SmClock, Some(1.41e9));
        p.set(Key::Util, Some(0.0));
        h.push_point(&p);
        h.push_point(&p);
        assert_eq!(h.points().len(), 1);
        let kept = h.points().latest().unwrap();
        assert_eq!(kept.get(Key::SmClock), Some(1.41e9));
        assert_eq!(kept.get(Key::Util), Some(0.0), "a real zero");
        assert_eq!(kept.get(Key::PcieTx), None, "absent stays absent");
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

    /// Only the points since `since` are fitted, however many older ones the window
    /// holds (they are no longer walked: issue 26 §10), and the answer is the one a fit
    /// over just those points gives.
    #[test]
    fn memory_growth_fits_only_the_points_since() {
        let mut h = GpuHistory::new(300);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        for i in 0..300u64 {
            let mut g = GpuReading::absent(GpuId("x".into()), 0, "g");
            // Falling for 250 s, then rising 2,000 bytes a second.
            let used = if i < 250 {
                1_000_000 - 100 * i
            } else {
                2_000 * i
            };
            g.memory_used = Some(Bytes(used));
            h.push(t0 + Duration::from_secs(i), &g);
        }
        let since = t0 + Duration::from_secs(250);
        let slope = h.memory_growth_per_sec(since).unwrap();
        assert!((slope - 2_000.0).abs() < 1e-6, "{slope}");
        let falling = h.memory_growth_per_sec(t0).unwrap_or(0.0);
        assert!(
            falling < 0.0 || falling != slope,
            "the whole window fits otherwise"
        );
        assert_eq!(h.memory_growth_per_sec(t0 + Duration::from_secs(400)), None);
    }

    #[test]
    fn memory_growth_skips_gaps() {
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
