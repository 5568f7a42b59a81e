//! A GPU's history from range queries: on the first refresh the whole window, after that the
//! steps since the last refresh; one query per charted field of the field table
//! (`fields::CHARTED`: both exporters' series, in base units), for every GPU at once, into
//! the points the one history store keeps (panels and detail view alike). Steps are aligned
//! to the interval, so two refreshes never fetch the same point twice. The first refresh asks
//! for no more steps than a chart can show (`reading::SHOWN_POINTS`), however long the
//! window: a million-step range is a million points per series for nothing.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::answer::{self, Cut};
use super::api::{self, Api};
use super::series;
use crate::reading::fields::{self, Key};
use crate::reading::{GpuId, HistoryPoint};

pub struct Window {
    step: Duration,
    /// Points the whole window has, up to what a chart shows.
    len: u32,
    /// The last step fetched, in seconds since the epoch.
    last_end: Option<f64>,
    /// What the answers since the last [`Window::take_cut`] held beyond the limits.
    cut: Cut,
}

impl Window {
    pub fn new(step: Duration, window: Duration) -> Window {
        let step = step.max(Duration::from_millis(100));
        let len = (window.as_secs_f64() / step.as_secs_f64())
            .ceil()
            .clamp(1.0, crate::reading::SHOWN_POINTS as f64) as u32;
        Window {
            step,
            len,
            last_end: None,
            cut: Cut::default(),
        }
    }

    /// What was left out of the answers since the last call.
    pub fn take_cut(&mut self) -> Cut {
        std::mem::take(&mut self.cut)
    }

    /// The points since the last call, per GPU, oldest first; `Some` of an empty map when no
    /// step has passed. `None` when a query failed: the caller's readings are charted instead,
    /// and the next call fetches from where the last good one ended.
    pub fn fetch(
        &mut self,
        api: &dyn Api,
        matchers: &str,
        now: f64,
    ) -> Option<HashMap<GpuId, Vec<HistoryPoint>>> {
        let step = self.step.as_secs_f64();
        let end = (now / step).floor() * step;
        // After a long outage, too, no more than the window's points.
        let first = end - f64::from(self.len - 1) * step;
        let start = match self.last_end {
            Some(last) => (last + step).max(first),
            None => first,
        };
        if start > end + step / 2.0 {
            return Some(HashMap::new());
        }
        let mut points = Points::default();
        for key in fields::CHARTED {
            let Some(promql) = series::history_query(fields::field(key), matchers) else {
                continue;
            };
            let body = api
                .get(&api::range_path(&promql, start, end, self.step))
                .ok()?;
            let mut chart = Chart::default();
            let cut = answer::read_each(&body, &answer::LIMITS, &mut |s| chart.add(s)).ok()?;
            self.cut.add(cut);
            chart.into_points(&mut points, key);
        }
        self.last_end = Some(end);
        Some(
            points
                .0
                .into_iter()
                .map(|(uuid, points)| (GpuId(uuid), points))
                .collect(),
        )
    }
}

/// The window being built: per GPU (by UUID), its points sorted by time, the charted
/// fields' values of one step in one point. A sorted `Vec` rather than a map per GPU: each
/// answer's points come oldest first, so merging one in is a walk, and the result is the
/// sample's history as it stands (8,000 GPUs × 300 points: no tree nodes, no second copy).
#[derive(Default)]
struct Points(HashMap<String, Vec<HistoryPoint>>);

impl Points {
    /// Sets `key` at each of `series`' times (oldest first) in `uuid`'s points.
    fn merge(&mut self, uuid: String, key: Key, series: &[(f64, f64)]) {
        let gpu = match self.0.get_mut(uuid.as_str()) {
            Some(gpu) => gpu,
            // Room for exactly the first chart's steps, which the others share: grown by
            // doubling, 300 points took room for 512 (8,000 GPUs: 145 MiB for nothing).
            None => self
                .0
                .entry(uuid)
                .or_insert_with(|| Vec::with_capacity(series.len())),
        };
        let mut at = 0;
        for &(t, v) in series {
            let time = time_of((t * 1000.0).round() as i64);
            if at > 0 && gpu[at - 1].time() >= time {
                // Out of order (no Prometheus sends that, but a stand-in may): search.
                at = gpu.partition_point(|p| p.time() < time);
            }
            while at < gpu.len() && gpu[at].time() < time {
                at += 1;
            }
            if at == gpu.len() || gpu[at].time() != time {
                gpu.insert(at, HistoryPoint::at(time));
            }
            gpu[at].set(key, reading(v));
        }
    }
}

/// One chart's answer as it is read. A GPU scraped as both exporters (`serve
/// --dcgm-compat`) has two series: gpuwatch's own (labelled `uuid`) wins, so dcgm-exporter's
/// (`UUID`) wait until the answer is read; a MIG instance's series (`GPU_I_ID`) is not its
/// GPU's history.
#[derive(Default)]
struct Chart {
    native: Vec<(String, Vec<(f64, f64)>)>,
    dcgm: Vec<(String, Vec<(f64, f64)>)>,
}

impl Chart {
    fn add(&mut self, mut s: api::Series) {
        if s.labels.contains_key("GPU_I_ID") {
            return;
        }
        if let Some(uuid) = s.labels.take("uuid") {
            self.native.push((uuid, s.points));
        } else if let Some(uuid) = s.labels.take("UUID") {
            self.dcgm.push((uuid, s.points));
        }
    }

    /// Merges the chart into `points` as `key`: every native series, then each dcgm-exporter
    /// series whose GPU had none.
    fn into_points(self, points: &mut Points, key: Key) {
        let native: std::collections::HashSet<&str> =
            self.native.iter().map(|(u, _)| u.as_str()).collect();
        let dcgm: Vec<_> = self
            .dcgm
            .into_iter()
            .filter(|(u, _)| !native.contains(u.as_str()))
            .collect();
        for (uuid, series) in self.native.into_iter().chain(dcgm) {
            points.merge(uuid, key, &series);
        }
    }
}

/// A range answer's value as a point's: every charted reading is a size, a rate or a level,
/// so a negative (or not finite) value is not one and is a gap, never a zero.
fn reading(v: f64) -> Option<f64> {
    (v >= 0.0 && v.is_finite()).then_some(v)
}

fn time_of(ms: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
