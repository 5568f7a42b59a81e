//! How a GPU's history stores its points: packed to 48 bytes (`Packed`) and read back as
//! `HistoryPoint`s (`Points`), so a fleet's histories cost a third of what the readings'
//! own type would.

use std::time::{Duration, SystemTime};

use super::Ring;
use crate::source::HistoryPoint;
use crate::source::fields::{CHARTED, Key};

/// A stored point: the time in nanoseconds since the epoch and each charted reading as an
/// `f32`, NaN where absent. 48 bytes instead of `HistoryPoint`'s 160, which is what lets
/// `--prometheus` keep a 300-point window for 8,000 GPUs in about 110 MiB instead of
/// 366 MiB. An `f32` keeps 7 significant digits, finer than any chart cell or sparkline
/// level (80 GB of VRAM to 8 KB, a clock to 128 Hz); a point's time is exact to the
/// nanosecond until 2262.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed {
    pub(super) nanos: i64,
    values: [f32; CHARTED.len()],
}

impl Packed {
    pub(super) fn of(p: &HistoryPoint) -> Packed {
        let nanos = match p.time.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
        };
        Packed {
            nanos,
            values: CHARTED.map(|key| p.get(key).map_or(f32::NAN, |v| v as f32)),
        }
    }

    pub(super) fn time(&self) -> SystemTime {
        let magnitude = Duration::from_nanos(self.nanos.unsigned_abs());
        if self.nanos >= 0 {
            SystemTime::UNIX_EPOCH + magnitude
        } else {
            SystemTime::UNIX_EPOCH - magnitude
        }
    }

    pub(super) fn get(&self, key: Key) -> Option<f64> {
        let i = CHARTED.iter().position(|k| *k == key)?;
        let v = self.values[i];
        (!v.is_nan()).then_some(f64::from(v))
    }

    fn unpack(&self) -> HistoryPoint {
        let mut p = HistoryPoint::at(self.time());
        for (key, v) in CHARTED.iter().zip(self.values) {
            if !v.is_nan() {
                p.set(*key, Some(f64::from(v)));
            }
        }
        p
    }
}

/// A GPU history's points, oldest first, unpacked as they are read.
pub struct Points<'a> {
    pub(super) ring: &'a Ring<Packed>,
}

impl<'a> Points<'a> {
    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = HistoryPoint> + ExactSizeIterator + 'a {
        self.ring.iter().map(Packed::unpack)
    }

    pub fn latest(&self) -> Option<HistoryPoint> {
        self.ring.latest().map(Packed::unpack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_point_is_48_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 48);
    }

    /// Packing keeps what a chart and the VRAM trend read: the time to the nanosecond
    /// (before the epoch too), absent as absent, a real zero as zero, and each reading to
    /// an `f32`'s 7 significant digits.
    #[test]
    fn a_packed_point_reads_back() {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_764_633_600, 123_456_789);
        let mut p = HistoryPoint::at(t);
        p.set(Key::Util, Some(0.0));
        p.set(Key::MemoryUsed, Some(73_014_444_032.0));
        p.set(Key::Power, Some(612.4));
        let back = Packed::of(&p).unpack();
        assert_eq!(back.time, t);
        assert_eq!(back.get(Key::Util), Some(0.0), "a real zero");
        assert_eq!(back.get(Key::Temperature), None, "absent stays absent");
        let near = |k: Key| (back.get(k).unwrap() / p.get(k).unwrap() - 1.0).abs();
        assert!(
            near(Key::MemoryUsed) < 1e-7,
            "{:?}",
            back.get(Key::MemoryUsed)
        );
        assert!(near(Key::Power) < 1e-7, "{:?}", back.get(Key::Power));
        let early = SystemTime::UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(Packed::of(&HistoryPoint::at(early)).time(), early);
    }
}
