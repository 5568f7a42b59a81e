//! One answer of Prometheus's query API (`vector` or `matrix`) read within bounds: at most
//! `Limits::series` series, only the labels the source reads (each at most
//! `Limits::label_bytes`; a longer value is left out, never cut into another name), and the
//! newest `Limits::points` points per series. What was left out is counted in [`Cut`] so the
//! source can say it. Labels are compared where they lie in the body and copied only when
//! kept: a fleet's answer has hundreds of thousands of series. Pure.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// How much of one answer is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub series: usize,
    pub label_bytes: usize,
    pub points: usize,
}

/// What the source keeps: 10,000 GPUs' series of both exporters (about 40 each), names as
/// long as DNS allows and then some, and the points a chart can show.
pub const LIMITS: Limits = Limits {
    series: 400_000,
    label_bytes: 512,
    points: crate::reading::SHOWN_POINTS,
};

/// The labels the source reads (identity, placement, MIG, pods); any other is dropped as it
/// is read.
const KEPT: [&str; 19] = [
    "__name__",
    "uuid",
    "UUID",
    "gpu",
    "name",
    "modelName",
    "vendor",
    "host",
    "Hostname",
    "instance",
    "pci_bus_id",
    "driver_version",
    "DCGM_FI_DRIVER_VERSION",
    "pod",
    "namespace",
    "container",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "mig_uuid",
];

/// What an answer held beyond the limits and was left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cut {
    /// Series after the first `Limits::series`.
    pub series: usize,
    /// Label values longer than `Limits::label_bytes`.
    pub labels: usize,
    /// Points older than a series' newest `Limits::points`.
    pub points: usize,
}

impl Cut {
    pub fn add(&mut self, other: Cut) {
        self.series += other.series;
        self.labels += other.labels;
        self.points += other.points;
    }
}

/// A series' kept labels, one slot per name in [`KEPT`]: the names are not copied into
/// every series, and finding one is no hashing (a fleet's instant answer is ~160,000 series
/// of about six kept labels each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels([Option<String>; KEPT.len()]);

impl Labels {
    /// The value of the label `name`; `None` when absent or not a kept name.
    pub fn get(&self, name: &str) -> Option<&String> {
        self.0[slot(name)?].as_ref()
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Takes the value of `name` out (the series is being consumed).
    pub fn take(&mut self, name: &str) -> Option<String> {
        self.0[slot(name)?].take()
    }

    /// Sets a kept label (`name` must be one of [`KEPT`]; another is not kept).
    pub fn insert(&mut self, name: &str, value: String) {
        if let Some(i) = slot(name) {
            self.0[i] = Some(value);
        }
    }
}

fn slot(name: &str) -> Option<usize> {
    KEPT.iter().position(|n| *n == name)
}

/// One series of an answer: the kept labels (with `__name__` when the query kept it) and its
/// points as (seconds since the epoch, value), oldest first. An instant query gives one point.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub points: Vec<(f64, f64)>,
}

/// Reads a `vector` or `matrix` answer within `limits`, handing each series to `each` as it
/// is parsed instead of keeping them (a fleet's instant answer is hundreds of thousands of
/// series). Values Prometheus writes as `NaN` or `±Inf` are not readings, so those points
/// are left out. An error answer has no series.
pub fn read_each(body: &str, limits: &Limits, each: &mut dyn FnMut(Series)) -> Result<Cut, String> {
    let mut de = serde_json::Deserializer::from_str(body);
    let envelope = de
        .deserialize_map(EnvelopeSeed { limits, each })
        .map_err(|e| format!("not a Prometheus API answer ({e})"))?;
    if envelope.status.as_deref() != Some("success") {
        let why = envelope.error.or(envelope.status).unwrap_or_default();
        return Err(format!("Prometheus: {}", shorten(&why)));
    }
    let (kind, cut) = envelope.data.ok_or("Prometheus answered without data")?;
    if kind != "vector" && kind != "matrix" {
        return Err(format!("unexpected {} answer", shorten(&kind)));
    }
    Ok(cut)
}

/// The `error` of an error answer, if the body is one.
pub fn error_text(body: &str) -> Option<String> {
    let limits = Limits {
        series: 0,
        ..LIMITS
    };
    let mut de = serde_json::Deserializer::from_str(body);
    let seed = EnvelopeSeed {
        limits: &limits,
        each: &mut |_| {},
    };
    let e = de.deserialize_map(seed).ok()?.error?;
    Some(format!("Prometheus: {}", shorten(&e)))
}

/// A server's own words, at most a line's worth.
fn shorten(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A string where it lies in the body when it has no escapes, else a copy.
struct Str<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Str<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
        Ok(Str(Cow::Owned(v.to_string())))
    }
}

#[derive(Default)]
struct Envelope {
    status: Option<String>,
    error: Option<String>,
    data: Option<(String, Cut)>,
}

struct EnvelopeSeed<'a> {
    limits: &'a Limits,
    each: &'a mut dyn FnMut(Series),
}

impl<'de> Visitor<'de> for EnvelopeSeed<'_> {
    type Value = Envelope;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an API answer object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut out = Envelope::default();
        while let Some(key) = map.next_key::<Str>()? {
            match &*key.0 {
                "status" => out.status = Some(map.next_value::<Str>()?.0.into_owned()),
                "error" => out.error = map.next_value::<Option<Str>>()?.map(|s| shorten(&s.0)),
                "data" => {
                    out.data = map.next_value_seed(DataSeed {
                        limits: self.limits,
                        each: &mut *self.each,
                    })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

struct DataSeed<'a> {
    limits: &'a Limits,
    each: &'a mut dyn FnMut(Series),
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = Option<(String, Cut)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = Option<(String, Cut)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the answer's data")
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut kind, mut cut) = (String::new(), Cut::default());
        while let Some(key) = map.next_key::<Str>()? {
            match &*key.0 {
                "resultType" => kind = shorten(&map.next_value::<Str>()?.0),
                "result" => {
                    cut = map.next_value_seed(ResultSeed {
                        limits: self.limits,
                        each: &mut *self.each,
                    })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some((kind, cut)))
    }
}

struct ResultSeed<'a> {
    limits: &'a Limits,
    each: &'a mut dyn FnMut(Series),
}

impl<'de> DeserializeSeed<'de> for ResultSeed<'_> {
    type Value = Cut;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cut, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_> {
    type Value = Cut;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of series")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Cut, A::Error> {
        let (mut cut, mut kept) = (Cut::default(), 0);
        loop {
            if kept >= self.limits.series {
                // Skipped, not read: the rest of the list costs parsing, never memory.
                match seq.next_element::<IgnoredAny>()? {
                    Some(_) => cut.series += 1,
                    None => break,
                }
                continue;
            }
            let seed = SeriesSeed {
                limits: self.limits,
                cut: &mut cut,
            };
            match seq.next_element_seed(seed)? {
                Some(s) => {
                    kept += 1;
                    (self.each)(s);
                }
                None => break,
            }
        }
        Ok(cut)
    }
}

struct SeriesSeed<'a> {
    limits: &'a Limits,
    cut: &'a mut Cut,
}

impl<'de> DeserializeSeed<'de> for SeriesSeed<'_> {
    type Value = Series;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Series, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SeriesSeed<'_> {
    type Value = Series;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Series, A::Error> {
        let mut labels = Labels::default();
        let mut points = VecDeque::new();
        while let Some(key) = map.next_key::<Str>()? {
            match &*key.0 {
                "metric" => {
                    let seed = LabelsSeed {
                        labels: &mut labels,
                        max: self.limits.label_bytes,
                        cut: self.cut,
                    };
                    map.next_value_seed(seed)?;
                }
                "value" => {
                    let (t, v) = map.next_value::<(f64, Str)>()?;
                    keep_point(&mut points, (t, &v.0), self.limits.points, self.cut);
                }
                "values" => {
                    let seed = PointsSeed {
                        points: &mut points,
                        max: self.limits.points,
                        cut: self.cut,
                    };
                    map.next_value_seed(seed)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Series {
            labels,
            points: points.into(),
        })
    }
}

struct LabelsSeed<'a> {
    labels: &'a mut Labels,
    max: usize,
    cut: &'a mut Cut,
}

impl<'de> DeserializeSeed<'de> for LabelsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series' labels")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Str>()? {
            let Some(at) = slot(&key.0) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value = map.next_value::<Str>()?;
            if value.0.len() > self.max {
                self.cut.labels += 1;
            } else {
                self.labels.0[at] = Some(value.0.into_owned());
            }
        }
        Ok(())
    }
}

/// Keeps a point that reads as a number, dropping the oldest beyond `max`.
fn keep_point(points: &mut VecDeque<(f64, f64)>, (t, v): (f64, &str), max: usize, cut: &mut Cut) {
    let Some(v) = v.parse::<f64>().ok().filter(|v| v.is_finite()) else {
        return;
    };
    if points.len() >= max.max(1) {
        points.pop_front();
        cut.points += 1;
    }
    points.push_back((t, v));
}

struct PointsSeed<'a> {
    points: &'a mut VecDeque<(f64, f64)>,
    max: usize,
    cut: &'a mut Cut,
}

impl<'de> DeserializeSeed<'de> for PointsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PointsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of [time, \"value\"] points")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some((t, v)) = seq.next_element::<(f64, Str)>()? {
            keep_point(self.points, (t, &v.0), self.max, self.cut);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
