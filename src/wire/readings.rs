//! The GPU object's numeric readings, both ways, from the field table (`reading::fields`):
//! every row whose JSON member sits in the GPU object itself (`utilization_gpu`, `clocks_sm`,
//! …) is written and read here by its row's name, unit and JSON type, so a new numeric
//! reading needs no edit in `wire`. Members of a nested object (`remapped_rows.pending`)
//! stay the structures `wire::gpu` writes. Owns the conversion between a JSON value and a
//! base-unit value only; where a member sits in the object is `wire::gpu`'s.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Serialize, Serializer};

use crate::reading::fields::{Field, Json, JsonKind, Key, TABLE};
use crate::reading::{GpuId, GpuReading};

/// A GPU's flat readings in base units, one slot per row of the field table (`None` where
/// the reading is unknown, and for rows that are not a flat member).
#[derive(Clone, PartialEq)]
pub struct Readings([Option<f64>; TABLE.len()]);

/// The rows the GPU object carries as members of its own, in table order.
pub(super) fn members() -> impl Iterator<Item = (usize, &'static Field, Json)> {
    TABLE
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.json.filter(Json::is_flat).map(|j| (i, f, j)))
}

impl Readings {
    pub fn of(g: &GpuReading) -> Readings {
        let mut values = [None; TABLE.len()];
        for (i, f, _) in members() {
            values[i] = (f.get)(g);
        }
        Readings(values)
    }

    /// Sets each known reading in `g` (the others stay as they are).
    pub fn write_into(&self, g: &mut GpuReading) {
        for (i, f, _) in members() {
            if let (Some(v), Some(set)) = (self.0[i], f.set) {
                set(g, v);
            }
        }
    }

    /// The reading of `key` in base units; `None` when unknown or not a flat member.
    pub fn get(&self, key: Key) -> Option<f64> {
        let i = TABLE.iter().position(|f| f.key == key)?;
        self.0[i]
    }

    /// Each member's name and its value as the document writes it.
    pub(super) fn written(&self) -> impl Iterator<Item = (Key, &'static str, Member)> + '_ {
        members().map(|(i, f, j)| (f.key, j.name, Member(j, self.0[i])))
    }
}

impl fmt::Debug for Readings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known = members().filter_map(|(i, _, j)| self.0[i].map(|v| (j.name, v)));
        f.debug_map().entries(known).finish()
    }
}

/// One member's value in the document's unit and JSON type; `null` when unknown.
pub(super) struct Member(Json, Option<f64>);

impl Serialize for Member {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Member(json, value) = *self;
        let Some(base) = value else {
            return s.serialize_none();
        };
        let v = json.to_doc(base);
        match json.kind {
            // Integer readings come from whole numbers: `round` only guards the cast.
            JsonKind::Integer => s.serialize_u64(v.round() as u64),
            JsonKind::Float => s.serialize_f64(v),
            JsonKind::Bool => s.serialize_bool(v != 0.0),
        }
    }
}

/// A member's JSON value as a base-unit value: `Ok(None)` for `null`; an error naming the
/// member when the value has the wrong type, or is one the reading cannot hold (a
/// percentage past `u32`).
fn parse(f: &Field, json: Json, value: serde_json::Value) -> Result<Option<f64>, String> {
    use serde_json::Value;
    let doc = match (json.kind, &value) {
        (_, Value::Null) => return Ok(None),
        (JsonKind::Integer, v) => v.as_u64().map(|n| n as f64),
        (JsonKind::Float, v) => v.as_f64(),
        (JsonKind::Bool, Value::Bool(b)) => Some(f64::from(u8::from(*b))),
        (JsonKind::Bool, _) => None,
    };
    let wanted = match json.kind {
        JsonKind::Integer => "a whole number",
        JsonKind::Float => "a number",
        JsonKind::Bool => "true or false",
    };
    let doc = doc.ok_or_else(|| format!("{}: expected {wanted}, found {value}", json.name))?;
    let base = json.from_doc(doc);
    // The setter leaves a value it cannot hold unknown; a document that says so is wrong.
    let mut scratch = GpuReading::absent(GpuId(String::new()), 0, "");
    if let Some(set) = f.set {
        set(&mut scratch, base);
    }
    match (f.get)(&scratch) {
        Some(_) => Ok(Some(base)),
        None => Err(format!("{}: {value} is out of range", json.name)),
    }
}

impl<'de> Deserialize<'de> for Readings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Readings, D::Error> {
        d.deserialize_map(ReadingsVisitor)
    }
}

struct ReadingsVisitor;

impl<'de> Visitor<'de> for ReadingsVisitor {
    type Value = Readings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a GPU's readings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Readings, A::Error> {
        let mut values = [None; TABLE.len()];
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match members().find(|(_, _, j)| j.name == name) {
                Some((i, f, j)) => {
                    let value = map.next_value()?;
                    values[i] = parse(f, j, value).map_err(de::Error::custom)?;
                }
                // Another member of the GPU object, or one from a newer minor version.
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Readings(values))
    }
}
