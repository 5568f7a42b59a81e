//! A bound the source ran into as the snapshot's `cuts[]` member (minor 4): which bound, how
//! much it left out and the bound itself, so a script sees that the fleet it reads is not
//! all of it (`--prometheus` with more than gpuwatch keeps).

use serde::Serialize;

use crate::reading::cut::LeftOut;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CutDoc {
    /// `gpus`, `series`, `labels` or `points`.
    pub bound: &'static str,
    /// How many were left out in the latest sample.
    pub left_out: u64,
    /// The most kept (GPUs, series in one answer, bytes of a label value, points per series).
    pub limit: u64,
}

impl CutDoc {
    pub fn of(cut: &LeftOut) -> CutDoc {
        let wide = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        CutDoc {
            bound: cut.bound.name(),
            left_out: wide(cut.count),
            limit: wide(cut.limit),
        }
    }
}
