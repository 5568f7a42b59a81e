//! When each point of a GPU's history was taken, in 4 bytes a point where the times are whole
//! milliseconds (Prometheus's steps are), in 8 otherwise (a local sampler's clock reads
//! nanoseconds). Lossless either way: a time comes back to the nanosecond as it was given.
//! Owns only the encoding of the time column.

use std::collections::VecDeque;

const NANOS_PER_MS: i64 = 1_000_000;

/// Nanoseconds from the epoch (negative before it), oldest first.
#[derive(Debug, Clone)]
pub enum Times {
    /// Whole milliseconds after `base`: 49 days of offsets, re-based on the oldest point kept
    /// when a newer one no longer fits, so a ring of a month's 1 s samples stays narrow.
    Millis { base: i64, offsets: VecDeque<u32> },
    /// A time that is not a whole millisecond after the base, or before it (a clock stepped
    /// back), widens the column for as long as the history lives.
    Nanos(VecDeque<i64>),
}

impl Default for Times {
    fn default() -> Self {
        Times::Millis {
            base: 0,
            offsets: VecDeque::new(),
        }
    }
}

impl Times {
    pub fn len(&self) -> usize {
        match self {
            Times::Millis { offsets, .. } => offsets.len(),
            Times::Nanos(t) => t.len(),
        }
    }

    pub fn allocated(&self) -> usize {
        match self {
            Times::Millis { offsets, .. } => offsets.capacity(),
            Times::Nanos(t) => t.capacity(),
        }
    }

    /// Bytes of storage the column holds now.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Times::Millis { offsets, .. } => offsets.capacity() * size_of::<u32>(),
            Times::Nanos(t) => t.capacity() * size_of::<i64>(),
        }
    }

    /// Point `i`'s time (oldest is 0) in nanoseconds from the epoch.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Times::Millis { base, offsets } => base + i64::from(offsets[i]) * NANOS_PER_MS,
            Times::Nanos(t) => t[i],
        }
    }

    pub fn reserve_exact(&mut self, more: usize) {
        match self {
            Times::Millis { offsets, .. } => offsets.reserve_exact(more),
            Times::Nanos(t) => t.reserve_exact(more),
        }
    }

    pub fn pop_front(&mut self) {
        match self {
            Times::Millis { offsets, .. } => drop(offsets.pop_front()),
            Times::Nanos(t) => drop(t.pop_front()),
        }
    }

    pub fn push(&mut self, nanos: i64) {
        if let Times::Millis { base, offsets } = self {
            if offsets.is_empty() {
                *base = nanos;
            }
            if let Some(ms) = offset_ms(*base, nanos) {
                if let Ok(ms) = u32::try_from(ms) {
                    offsets.push_back(ms);
                    return;
                }
                // Too far after the base: start it again at the oldest point kept.
                let oldest = i64::from(offsets.front().copied().unwrap_or(0));
                if let Ok(ms) = u32::try_from(ms - oldest) {
                    offsets.iter_mut().for_each(|o| *o -= oldest as u32);
                    *base += oldest * NANOS_PER_MS;
                    offsets.push_back(ms);
                    return;
                }
            }
            self.widen();
        }
        if let Times::Nanos(t) = self {
            t.push_back(nanos);
        }
    }

    fn widen(&mut self) {
        let mut wide = VecDeque::with_capacity(self.allocated());
        wide.extend((0..self.len()).map(|i| self.get(i)));
        *self = Times::Nanos(wide);
    }
}

/// Whole milliseconds from `base` to `nanos`; `None` when not whole or before the base.
fn offset_ms(base: i64, nanos: i64) -> Option<i64> {
    let delta = nanos.checked_sub(base)?;
    (delta >= 0 && delta % NANOS_PER_MS == 0).then_some(delta / NANOS_PER_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(t: &Times) -> Vec<i64> {
        (0..t.len()).map(|i| t.get(i)).collect()
    }

    #[test]
    fn whole_milliseconds_are_narrow_and_exact() {
        let mut t = Times::default();
        let given = [
            1_767_603_600_000 * NANOS_PER_MS,
            1_767_603_601_500 * NANOS_PER_MS,
        ];
        given.iter().for_each(|&n| t.push(n));
        assert!(matches!(t, Times::Millis { .. }));
        assert_eq!(all(&t), given);
    }

    /// A nanosecond clock, or a clock stepped back, widens the column; nothing is rounded.
    #[test]
    fn other_times_widen_the_column_losslessly() {
        for third in [5_000_000_123, 1_000_000_000] {
            let mut t = Times::default();
            let given = [2_000_000_000, 4_000_000_000, third];
            given.iter().for_each(|&n| t.push(n));
            assert!(matches!(t, Times::Nanos(_)), "{third}");
            assert_eq!(all(&t), given);
        }
    }

    /// Past 49 days after the base the offsets start again at the oldest point kept.
    #[test]
    fn a_long_run_is_re_based_and_stays_narrow() {
        let day = 86_400_000 * NANOS_PER_MS;
        let mut t = Times::default();
        t.push(0);
        t.push(40 * day);
        t.pop_front();
        t.push(80 * day);
        assert!(matches!(t, Times::Millis { .. }), "{t:?}");
        assert_eq!(all(&t), [40 * day, 80 * day]);
        // With the old base still kept, 80 days does not fit: wide, and still exact.
        let mut kept = Times::default();
        [0, 40 * day, 80 * day].iter().for_each(|&n| kept.push(n));
        assert_eq!(all(&kept), [0, 40 * day, 80 * day]);
    }
}
