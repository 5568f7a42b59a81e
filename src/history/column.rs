//! One charted field's values over a GPU's history, kept in 2 or 4 bytes a point wherever
//! that gives back every value bit for bit, in 8 where it does not. Owns only the encoding: which
//! points exist and when is `GpuHistory`'s business.
//!
//! Why lossless rather than plain `f32`: a value read back from history is printed (a chart's
//! top label, the VRAM trend's "full in") and levelled (sparklines), and an earlier `f32`
//! history moved sparkline levels in four snapshots. Readings are mostly small integers in
//! some unit (percent as a ratio, milliwatts as watts, MHz as hertz), so a `u16` or an
//! `f32` of the value times that unit's scale holds them exactly; each value is checked on
//! the way in, and a column whose values no codec holds is widened to `f64`. Unknown is NaN
//! (`u16::MAX` in 2 bytes).

use std::collections::VecDeque;

/// How a column's stored numbers are read: value = stored ÷ 100 (`Centi`), ÷ 1000
/// (`Milli`), × 10⁶ (`Mega`), or as is.
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

/// How a value is held: its scale, and how wide the stored number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codec {
    scale: Scale,
    /// A whole number below `UNKNOWN_U16` in 2 bytes (a percent, °C, MHz), else an `f32`.
    small: bool,
}

/// A 2-byte column's unknown: no reading, never a value.
const UNKNOWN_U16: u16 = u16::MAX;

/// Tried in this order when a column starts or its codec stops holding a value: the
/// narrowest first.
const CODECS: [Codec; 8] = [
    codec(Scale::One, true),
    codec(Scale::Centi, true),
    codec(Scale::Mega, true),
    codec(Scale::Milli, true),
    codec(Scale::One, false),
    codec(Scale::Centi, false),
    codec(Scale::Milli, false),
    codec(Scale::Mega, false),
];

const fn codec(scale: Scale, small: bool) -> Codec {
    Codec { scale, small }
}

impl Scale {
    fn scaled(self, v: f64) -> f64 {
        match self {
            Scale::One => v,
            Scale::Centi => v * 100.0,
            Scale::Milli => v * 1000.0,
            Scale::Mega => v / 1e6,
        }
    }

    fn unscaled(self, f: f64) -> f64 {
        match self {
            Scale::One => f,
            Scale::Centi => f / 100.0,
            Scale::Milli => f / 1000.0,
            Scale::Mega => f * 1e6,
        }
    }
}

impl Codec {
    /// The stored number as an `f32` (a 2-byte column's is whole and exact in one).
    fn encode(self, v: f64) -> f32 {
        self.scale.scaled(v) as f32
    }

    fn decode(self, f: f32) -> f64 {
        self.scale.unscaled(f64::from(f))
    }

    fn encode_u16(self, v: f64) -> u16 {
        let x = self.scale.scaled(v);
        if x >= 0.0 && x < f64::from(UNKNOWN_U16) && x.fract() == 0.0 {
            x as u16
        } else {
            UNKNOWN_U16
        }
    }

    fn decode_u16(self, x: u16) -> f64 {
        if x == UNKNOWN_U16 {
            f64::NAN
        } else {
            self.scale.unscaled(f64::from(x))
        }
    }

    /// Whether `v` comes back bit for bit (NaN, unknown, always does: it stays unknown).
    fn holds(self, v: f64) -> bool {
        let back = if self.small {
            self.decode_u16(self.encode_u16(v))
        } else {
            self.decode(self.encode(v))
        };
        v.is_nan() || back.to_bits() == v.to_bits()
    }
}

/// One field's values, oldest first; unknown is NaN (`UNKNOWN_U16` in 2 bytes).
#[derive(Debug, Clone)]
pub enum Column {
    Small(Codec, VecDeque<u16>),
    Narrow(Codec, VecDeque<f32>),
    Wide(VecDeque<f64>),
}

impl Column {
    /// A column for a field first seen now: `earlier` points before it, all unknown.
    pub fn new(earlier: usize) -> Column {
        Column::Small(CODECS[0], VecDeque::from(vec![UNKNOWN_U16; earlier]))
    }

    pub fn len(&self) -> usize {
        match self {
            Column::Small(_, v) => v.len(),
            Column::Narrow(_, v) => v.len(),
            Column::Wide(v) => v.len(),
        }
    }

    /// Room the storage has now, in points.
    pub fn allocated(&self) -> usize {
        match self {
            Column::Small(_, v) => v.capacity(),
            Column::Narrow(_, v) => v.capacity(),
            Column::Wide(v) => v.capacity(),
        }
    }

    /// Bytes of storage the column holds now.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Column::Small(_, v) => v.capacity() * size_of::<u16>(),
            Column::Narrow(_, v) => v.capacity() * size_of::<f32>(),
            Column::Wide(v) => v.capacity() * size_of::<f64>(),
        }
    }

    /// The value of point `i` (oldest is 0); NaN where unknown.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Column::Small(c, v) => c.decode_u16(v[i]),
            Column::Narrow(c, v) => c.decode(v[i]),
            Column::Wide(v) => v[i],
        }
    }

    /// `f` of the newest `n` values, newest first (NaN unknown): the codec is matched once,
    /// not once a value (a chart's columns, every GPU on every frame).
    pub fn for_newest(&self, n: usize, mut f: impl FnMut(f64)) {
        match self {
            Column::Small(c, v) => v.iter().rev().take(n).for_each(|&x| f(c.decode_u16(x))),
            Column::Narrow(c, v) => v.iter().rev().take(n).for_each(|&x| f(c.decode(x))),
            Column::Wide(v) => v.iter().rev().take(n).for_each(|&x| f(x)),
        }
    }

    /// Makes room for `more` points (the caller's growth policy: the ring's).
    pub fn reserve_exact(&mut self, more: usize) {
        match self {
            Column::Small(_, v) => v.reserve_exact(more),
            Column::Narrow(_, v) => v.reserve_exact(more),
            Column::Wide(v) => v.reserve_exact(more),
        }
    }

    pub fn pop_front(&mut self) {
        match self {
            Column::Small(_, v) => drop(v.pop_front()),
            Column::Narrow(_, v) => drop(v.pop_front()),
            Column::Wide(v) => drop(v.pop_front()),
        }
    }

    /// Appends `v`, re-encoding the column first if its codec does not hold `v`.
    pub fn push(&mut self, v: f64) {
        if let Column::Small(c, _) | Column::Narrow(c, _) = self
            && !c.holds(v)
        {
            self.refit(v);
        }
        match self {
            Column::Small(c, values) => values.push_back(c.encode_u16(v)),
            Column::Narrow(c, values) => values.push_back(c.encode(v)),
            Column::Wide(values) => values.push_back(v),
        }
    }

    /// The narrowest codec that holds every value kept and `v`, or `f64` when none does.
    /// Rare: a column starts at whole numbers and moves when, say, an idle 0 is followed by
    /// 0.37, or 612.4 W by 612.457 W.
    fn refit(&mut self, v: f64) {
        let kept: Vec<f64> = (0..self.len()).map(|i| self.get(i)).collect();
        let fits = |c: &Codec| c.holds(v) && kept.iter().all(|&k| c.holds(k));
        let room = self.allocated();
        *self = match CODECS.iter().copied().find(fits) {
            Some(c) if c.small => {
                let mut small = VecDeque::with_capacity(room);
                small.extend(kept.iter().map(|&k| c.encode_u16(k)));
                Column::Small(c, small)
            }
            Some(c) => {
                let mut narrow = VecDeque::with_capacity(room);
                narrow.extend(kept.iter().map(|&k| c.encode(k)));
                Column::Narrow(c, narrow)
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

    fn width(c: &Column) -> usize {
        match c {
            Column::Small(..) => 2,
            Column::Narrow(..) => 4,
            Column::Wide(_) => 8,
        }
    }

    /// Readings as sources give them come back bit for bit in 2 bytes (whole percents as
    /// ratios, °C, whole MHz as hertz) or 4 (milliwatts, bytes, half MHz); unknown stays
    /// unknown, zero stays zero, and a reading of 65,535 is not taken for unknown.
    #[test]
    fn readings_in_their_units_are_narrow_and_exact() {
        let cases: [(&[f64], usize); 8] = [
            (&[0.0, 0.37, f64::NAN, 0.93, 1.0, 0.01], 2),
            (&[71.0, 66.0, f64::NAN, 42.0], 2),
            (&[1.41e9, 2.619e9, 1.98e9, 1.2e9, 3.4e9], 2),
            (&[0.0, 612.4, 301.5], 2),
            (&[0.0, 612.4, 301.5, 312.457, 71.0], 4),
            (&[1.41e9, 1.4105e9, 2.619e9, 1.98e9], 4),
            (&[73_014_444_032.0, 30_000.0 * 1_048_576.0, 0.0], 4),
            (&[0.0, 65_535.0, 1.0], 4),
        ];
        for (given, bytes) in cases {
            let mut c = Column::new(2);
            given.iter().for_each(|&v| c.push(v));
            assert_eq!(width(&c), bytes, "{given:?}: {c:?}");
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
        assert_eq!(c.heap_bytes(), c.allocated() * 2);
    }
}
