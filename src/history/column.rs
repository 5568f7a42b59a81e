//! One charted field's values over a GPU's history, kept in 4 bytes a point wherever that
//! gives back every value bit for bit, in 8 where it does not. Owns only the encoding: which
//! points exist and when is `GpuHistory`'s business.
//!
//! Why lossless rather than plain `f32`: a value read back from history is printed (a chart's
//! top label, the VRAM trend's "full in") and levelled (sparklines), and an earlier `f32`
//! history moved sparkline levels in four snapshots. Readings are mostly small integers in
//! some unit (percent as a ratio, milliwatts as watts, MHz as hertz), so an `f32` of the
//! value times that unit's scale holds them exactly; each value is checked on the way in,
//! and a column whose values no scale holds is widened to `f64`. Unknown is NaN either way.

use std::collections::VecDeque;

/// How a narrow column's `f32`s are read: value = stored ÷ per (or × by, for `Mega`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// As is: integers below 2^24 times any power of two (bytes in MiB, °C, ratios like 0.5).
    One,
    /// Hundredths: a whole percent as a ratio (util 0.37).
    Centi,
    /// Thousandths: milliwatts as watts (312.457 W).
    Milli,
    /// Millions: whole MHz as hertz (1.4105e9 Hz is 1410.5 MHz).
    Mega,
}

/// Tried in this order when a column starts or its scale stops fitting.
const SCALES: [Scale; 4] = [Scale::One, Scale::Centi, Scale::Milli, Scale::Mega];

impl Scale {
    fn encode(self, v: f64) -> f32 {
        (match self {
            Scale::One => v,
            Scale::Centi => v * 100.0,
            Scale::Milli => v * 1000.0,
            Scale::Mega => v / 1e6,
        }) as f32
    }

    fn decode(self, f: f32) -> f64 {
        let f = f64::from(f);
        match self {
            Scale::One => f,
            Scale::Centi => f / 100.0,
            Scale::Milli => f / 1000.0,
            Scale::Mega => f * 1e6,
        }
    }

    /// Whether `v` comes back bit for bit (NaN, unknown, always does: it stays unknown).
    fn holds(self, v: f64) -> bool {
        v.is_nan() || self.decode(self.encode(v)).to_bits() == v.to_bits()
    }
}

/// One field's values, oldest first; NaN is unknown.
#[derive(Debug, Clone)]
pub enum Column {
    Narrow(Scale, VecDeque<f32>),
    Wide(VecDeque<f64>),
}

impl Column {
    /// A column for a field first seen now: `earlier` points before it, all unknown.
    pub fn new(earlier: usize) -> Column {
        Column::Narrow(Scale::One, VecDeque::from(vec![f32::NAN; earlier]))
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Narrow(_, v) => v.len(),
            Column::Wide(v) => v.len(),
        }
    }

    /// Room the storage has now, in points.
    pub fn allocated(&self) -> usize {
        match self {
            Column::Narrow(_, v) => v.capacity(),
            Column::Wide(v) => v.capacity(),
        }
    }

    /// Bytes of storage the column holds now.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Column::Narrow(_, v) => v.capacity() * size_of::<f32>(),
            Column::Wide(v) => v.capacity() * size_of::<f64>(),
        }
    }

    /// The value of point `i` (oldest is 0); NaN where unknown.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Column::Narrow(s, v) => s.decode(v[i]),
            Column::Wide(v) => v[i],
        }
    }

    /// Makes room for `more` points (the caller's growth policy: the ring's).
    pub fn reserve_exact(&mut self, more: usize) {
        match self {
            Column::Narrow(_, v) => v.reserve_exact(more),
            Column::Wide(v) => v.reserve_exact(more),
        }
    }

    pub fn pop_front(&mut self) {
        match self {
            Column::Narrow(_, v) => drop(v.pop_front()),
            Column::Wide(v) => drop(v.pop_front()),
        }
    }

    /// Appends `v`, re-encoding the column first if its scale does not hold `v`.
    pub fn push(&mut self, v: f64) {
        if let Column::Narrow(s, _) = self
            && !s.holds(v)
        {
            self.refit(v);
        }
        match self {
            Column::Narrow(s, values) => values.push_back(s.encode(v)),
            Column::Wide(values) => values.push_back(v),
        }
    }

    /// The first scale that holds every value kept and `v`, or `f64` when none does. Rare: a
    /// column starts at `One` and moves once when, say, an idle 0 is followed by 0.37.
    fn refit(&mut self, v: f64) {
        let Column::Narrow(old, values) = self else {
            return;
        };
        let kept: Vec<f64> = values.iter().map(|&f| old.decode(f)).collect();
        let fits = |s: &Scale| s.holds(v) && kept.iter().all(|&k| s.holds(k));
        let room = values.capacity();
        *self = match SCALES.iter().copied().find(fits) {
            Some(s) => {
                let mut narrow = VecDeque::with_capacity(room);
                narrow.extend(kept.iter().map(|&k| s.encode(k)));
                Column::Narrow(s, narrow)
            }
            None => {
                let mut wide = VecDeque::with_capacity(room);
                wide.extend(kept);
                Column::Wide(wide)
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: &Column) -> Vec<f64> {
        (0..c.len()).map(|i| c.get(i)).collect()
    }

    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Readings as sources give them (percent as ratios, milliwatts, MHz as hertz, MiB as
    /// bytes) stay 4 bytes and come back bit for bit; unknown stays unknown, zero stays zero.
    #[test]
    fn readings_in_their_units_are_narrow_and_exact() {
        let cases: [&[f64]; 5] = [
            &[0.0, 0.37, f64::NAN, 0.93, 1.0, 0.01],
            &[0.0, 612.4, 301.5, 312.457, 71.0],
            &[1.41e9, 1.4105e9, 2.619e9, 1.98e9],
            &[73_014_444_032.0, 30_000.0 * 1_048_576.0, 0.0],
            &[71.0, 66.0, f64::NAN, 42.0],
        ];
        for given in cases {
            let mut c = Column::new(2);
            given.iter().for_each(|&v| c.push(v));
            assert!(matches!(c, Column::Narrow(..)), "{given:?}: {c:?}");
            let back = values(&c);
            assert!(
                back[..2].iter().all(|v| v.is_nan()),
                "earlier points unknown"
            );
            assert!(same(&back[2..], given), "{given:?} → {back:?}");
        }
    }

    /// A value no scale holds widens the column, and every value before it is kept as it was.
    #[test]
    fn a_value_no_scale_holds_widens_the_column_losslessly() {
        let given = [0.37, f64::NAN, 0.0, 1.0 / 3.0, 0.5];
        let mut c = Column::new(0);
        given.iter().for_each(|&v| c.push(v));
        assert!(matches!(c, Column::Wide(_)));
        assert!(same(&values(&c), &given));
        let odd_bytes = 73_014_444_033.0;
        let mut bytes = Column::new(0);
        bytes.push(odd_bytes);
        assert!(same(&values(&bytes), &[odd_bytes]), "not rounded to f32");
    }

    #[test]
    fn dropping_the_oldest_keeps_the_rest() {
        let mut c = Column::new(0);
        [1.0, 2.0, 3.0].iter().for_each(|&v| c.push(v));
        c.pop_front();
        assert!(same(&values(&c), &[2.0, 3.0]));
        assert_eq!(c.heap_bytes(), c.allocated() * 4);
    }
}
