//! The ring buffers' and a GPU history's tests: what goes in comes back, unknown stays
//! unknown, and what a point costs.

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
    assert_eq!(h.len(), 1);
    let kept = h.latest().unwrap();
    assert_eq!(kept.get(Key::SmClock), Some(1.41e9));
    assert_eq!(kept.get(Key::Util), Some(0.0), "a real zero");
    assert_eq!(kept.get(Key::PcieTx), None, "absent stays absent");
}

/// Prometheus-shaped points (whole seconds apart) of one exporter: `keys` filled with
/// readings as that exporter gives them, every seventh point unknown throughout, and
/// `Util` an idle zero at first.
fn fleet_points(n: u64, keys: &[Key]) -> Vec<HistoryPoint> {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    (0..n)
        .map(|i| {
            let mut p = HistoryPoint::at(t0 + Duration::from_secs(i));
            for (k, key) in keys.iter().enumerate() {
                let v = match key {
                    Key::Util | Key::MemoryUtil => (i % 101) as f64 / 100.0,
                    Key::MemoryUsed => (30_000 + i) as f64 * 1_048_576.0,
                    Key::Power => 301.5 + (i * 7 % 1000) as f64 / 1000.0,
                    Key::SmClock | Key::MemoryClock => (1410 + i) as f64 * 1e6,
                    _ => (k as u64 * 10 + i % 50) as f64,
                };
                p.set(*key, (i % 7 != 3).then_some(v));
            }
            p
        })
        .collect()
}

const DCGM: [Key; 7] = [
    Key::Util,
    Key::MemoryUtil,
    Key::MemoryUsed,
    Key::Temperature,
    Key::Power,
    Key::SmClock,
    Key::MemoryClock,
];

/// What the user sees comes back from the compact history as it went in: every point bit
/// for bit (so every chart level and label drawn from them), sparkline levels alike,
/// unknown still unknown and the never-filled PCIe columns gaps, not zeros.
#[test]
fn a_compact_history_gives_back_what_the_user_sees() {
    for keys in [&DCGM[..], &CHARTED[..]] {
        let given = fleet_points(300, keys);
        let mut h = GpuHistory::new(300);
        given.iter().for_each(|p| h.push_point(p));
        assert_eq!(h.points(), given);
        let util = h.columns(Key::Util, 120, |r| (r * 100.0).round() as u64);
        let expected: Vec<Option<u64>> = given
            .iter()
            .rev()
            .take(120)
            .map(|p| p.get(Key::Util).map(|r| (r * 100.0).round() as u64))
            .collect();
        assert_eq!(util, expected);
        assert!(
            util.contains(&None) && util.contains(&Some(0)),
            "gaps and zeros"
        );
        if keys.len() == DCGM.len() {
            assert_eq!(h.columns(Key::PcieTx, 5, |b| b as u64), vec![None; 5]);
        }
    }
}

/// A field that appears later gets its column with the earlier points unknown, and a
/// ring that drops its oldest points keeps the columns in step.
#[test]
fn a_field_that_appears_later_leaves_earlier_points_unknown() {
    let mut given = fleet_points(10, &[Key::Temperature]);
    given[6..]
        .iter_mut()
        .for_each(|p| p.set(Key::PcieRx, Some(3.4e9)));
    let mut h = GpuHistory::new(8);
    given.iter().for_each(|p| h.push_point(p));
    assert_eq!(h.points(), given[2..]);
    let rx: Vec<_> = h.points().iter().map(|p| p.get(Key::PcieRx)).collect();
    assert_eq!(rx[..4], [None; 4]);
    assert_eq!(rx[4..], [Some(3.4e9); 4]);
}

/// The memory a fleet's histories hold, by size: 4 bytes a time, and per filled field 2
/// bytes a whole percent, °C or MHz, 4 a byte count or milliwatts (22 bytes a point for a
/// dcgm-exporter GPU, 26 for a gpuwatch exporter's here; whole points were 80). A change
/// that widens it again fails here.
#[test]
fn a_fleet_point_costs_2_or_4_bytes_a_filled_field_and_4_for_its_time() {
    for (keys, per_point) in [(&DCGM[..], 22), (&CHARTED[..], 26)] {
        let mut h = GpuHistory::new(300);
        fleet_points(300, keys).iter().for_each(|p| h.push_point(p));
        assert_eq!(h.heap_bytes(), 300 * per_point, "{} fields", keys.len());
    }
    // The struct itself: nine column slots and the times (3.1 MiB at 8,000 GPUs).
    assert!(
        size_of::<GpuHistory>() <= 408,
        "{}",
        size_of::<GpuHistory>()
    );
}

/// A local sampler's nanosecond times, and values no scale holds, are kept whole.
#[test]
fn what_does_not_fit_4_bytes_is_kept_whole() {
    let t0 = SystemTime::UNIX_EPOCH + Duration::new(1_767_603_600, 123_456_789);
    let mut h = GpuHistory::new(10);
    let given: Vec<HistoryPoint> = (0..3u32)
        .map(|i| {
            let mut p = HistoryPoint::at(t0 + Duration::from_nanos(u64::from(i) * 999_999_937));
            p.set(Key::MemoryUsed, Some(73_014_444_033.0 + f64::from(i)));
            p
        })
        .collect();
    given.iter().for_each(|p| h.push_point(p));
    assert_eq!(h.points(), given);
    assert_eq!(
        h.heap_bytes(),
        10 * 2 * 8,
        "both columns wide, room for the ring's 10 points"
    );
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
