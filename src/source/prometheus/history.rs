//! A GPU's history from range queries: on the first refresh the whole window, after that the
//! steps since the last refresh; one query per charted field of the field table
//! (`fields::CHARTED`: both exporters' series, in base units), for every GPU at once, into
//! the points the one history store keeps (panels and detail view alike). Steps are aligned
//! to the interval, so two refreshes never fetch the same point twice. The first refresh asks
//! for no more steps than a chart can show (`history::SHOWN_POINTS`), however long the
//! window: a million-step range is a million points per series for nothing.

use std::collections::{BTreeMap, HashMap};
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
            .clamp(1.0, crate::history::SHOWN_POINTS as f64) as u32;
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
        // Keyed by milliseconds, so the charted fields' points of one step meet.
        let mut points: HashMap<GpuId, BTreeMap<i64, HistoryPoint>> = HashMap::new();
        for key in fields::CHARTED {
            let Some(promql) = series::history_query(fields::field(key), matchers) else {
                continue;
            };
            let body = api
                .get(&api::range_path(&promql, start, end, self.step))
                .ok()?;
            let answer = answer::read(&body, &answer::LIMITS).ok()?;
            self.cut.add(answer.cut);
            add_chart(&mut points, key, &answer.series);
        }
        self.last_end = Some(end);
        Some(
            points
                .into_iter()
                .map(|(id, by_time)| (id, by_time.into_values().collect()))
                .collect(),
        )
    }
}

/// Adds one chart's series. A GPU scraped as both exporters (`serve --dcgm-compat`) has two
/// series: gpuwatch's own (labelled `uuid`) wins.
fn add_chart(
    points: &mut HashMap<GpuId, BTreeMap<i64, HistoryPoint>>,
    key: Key,
    answer: &[api::Series],
) {
    // A MIG instance's series (`GPU_I_ID`) is not its GPU's history.
    let answer: Vec<&api::Series> = answer
        .iter()
        .filter(|s| !s.labels.contains_key("GPU_I_ID"))
        .collect();
    let mut native: Vec<&api::Series> = answer
        .iter()
        .copied()
        .filter(|s| s.labels.contains_key("uuid"))
        .collect();
    let done: std::collections::HashSet<&String> =
        native.iter().filter_map(|s| s.labels.get("uuid")).collect();
    let dcgm = answer.iter().copied().filter(|s| {
        s.labels.get("UUID").is_some_and(|u| !done.contains(u)) && !s.labels.contains_key("uuid")
    });
    native.extend(dcgm);
    for s in native {
        let Some(uuid) = s.labels.get("uuid").or_else(|| s.labels.get("UUID")) else {
            continue;
        };
        let gpu = points.entry(GpuId(uuid.clone())).or_default();
        for &(t, v) in &s.points {
            let ms = (t * 1000.0).round() as i64;
            let p = gpu
                .entry(ms)
                .or_insert_with(|| HistoryPoint::at(time_of(ms)));
            p.set(key, reading(v));
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
