//! The GPU object's numeric readings, both ways, from the field table (`reading::fields`):
//! every row whose JSON member sits in the GPU object itself (`utilization_gpu`, `clocks_sm`,
//! …) is written and read here by its row's name, unit and JSON type, so a new numeric
//! reading needs no edit in `wire`. Members of a nested object (`remapped_rows.pending`)
//! stay the structures of `wire::gpu`. Owns the conversion between a JSON value and a
//! base-unit value only; where a member sits in the object is `wire::gpu_json`'s.

use std::fmt;

use serde::de::{self, MapAccess};
use serde::{Serialize, Serializer};

use crate::reading::fields::{Field, Json, JsonKind, Key, TABLE};
use crate::reading::{GpuId, GpuReading};

/// A GPU's flat readings in base units, one slot per row of the field table (`None` where
/// the reading is unknown, and for rows that are not a flat member).
#[derive(Clone, PartialEq)]
pub struct Readings([Option<f64>; TABLE.len()]);

/// The rows the GPU object carries as members of its own, in table order.
pub(super) fn members() -> impl Iterator<Item = (usize, &'static Field, Json)> {
    MEMBERS[..MEMBERS_LEN].iter().map(|&i| {
        (
            i,
            &TABLE[i],
            TABLE[i].json.expect("a member has a JSON name"),
        )
    })
}

/// The table's indices of `members()`, worked out once at compile time: a GPU object is read
/// member by member, and each is looked up here.
const MEMBERS: [usize; TABLE.len()] = member_rows().0;
const MEMBERS_LEN: usize = member_rows().1;

const fn member_rows() -> ([usize; TABLE.len()], usize) {
    let mut rows = [0; TABLE.len()];
    let mut n = 0;
    let mut i = 0;
    while i < TABLE.len() {
        if let Some(json) = TABLE[i].json
            && json.is_flat()
        {
            rows[n] = i;
            n += 1;
        }
        i += 1;
    }
    (rows, n)
}

impl Readings {
    /// Nothing known.
    pub fn unknown() -> Readings {
        Readings([None; TABLE.len()])
    }

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
/// temperature past `u32`). `scratch` is any reading: the row's setter and getter are tried
/// on it.
fn parse(
    f: &Field,
    json: Json,
    value: serde_json::Value,
    scratch: &mut GpuReading,
) -> Result<Option<f64>, String> {
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
    if let Some(set) = f.set {
        set(scratch, base);
    }
    match (f.get)(scratch) {
        Some(_) => Ok(Some(base)),
        None => Err(format!("{}: {value} is out of range", json.name)),
    }
}

/// Reads a GPU object's members into readings: `read` takes each member's value (or skips
/// one that is not a reading), `Reader::done` gives the readings.
pub(super) struct Reader {
    values: [Option<f64>; TABLE.len()],
    /// Where in `MEMBERS` the next member is looked for first: a document written in table
    /// order (every gpuwatch's) then finds each at once.
    next: usize,
    /// Where setters are tried (one per GPU, not per member: each row sets its own field).
    scratch: GpuReading,
}

impl Reader {
    pub(super) fn new() -> Reader {
        Reader {
            values: [None; TABLE.len()],
            next: 0,
            scratch: GpuReading::absent(GpuId(String::new()), 0, ""),
        }
    }

    /// Takes the value of member `name` from `map` when it is a reading; `false` (value left
    /// in the map) when it is not.
    pub(super) fn read<'de, A: MapAccess<'de>>(
        &mut self,
        name: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        let at = |k: usize| TABLE[MEMBERS[k % MEMBERS_LEN]].json.map(|j| j.name);
        let Some(k) = (self.next..self.next + MEMBERS_LEN).find(|&k| at(k) == Some(name)) else {
            return Ok(false);
        };
        self.next = (k + 1) % MEMBERS_LEN;
        let i = MEMBERS[k % MEMBERS_LEN];
        let (f, j) = (&TABLE[i], TABLE[i].json.expect("a member has a JSON name"));
        let value = map.next_value()?;
        self.values[i] = parse(f, j, value, &mut self.scratch).map_err(de::Error::custom)?;
        Ok(true)
    }

    pub(super) fn done(self) -> Readings {
        Readings(self.values)
    }
}
