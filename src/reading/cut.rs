//! What a source left out of a sample to stay within its bounds (issue 26 §10): the
//! `--prometheus` source caps the GPUs it shows and an answer's series, label lengths and
//! points per series. Carried on every sample as state (the JSON document's `cuts`), beside
//! the once-per-change notice on screen and stderr. No words here: the source's notice and
//! the wire name say it.

/// Which bound a sample ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// GPUs beyond the most one refresh shows.
    Gpus,
    /// Series beyond the most one answer may hold.
    Series,
    /// Label values longer than the longest kept (the value is left out, never shortened).
    Labels,
    /// History points beyond the most kept per series.
    Points,
}

impl Bound {
    /// The document's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Gpus => "gpus",
            Bound::Series => "series",
            Bound::Labels => "labels",
            Bound::Points => "points",
        }
    }
}

/// How much one bound left out of a sample, and the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeftOut {
    pub bound: Bound,
    /// How many were left out (GPU series, series, label values or points).
    pub count: usize,
    /// The most kept.
    pub limit: usize,
}
