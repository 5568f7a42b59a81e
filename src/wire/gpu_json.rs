//! How a GPU object is written and read: its members in the order they have had since they
//! were added, the field table's readings (`readings`) among them, and which members an
//! older document may lack (all but `index`, `uuid`, `name` and `status`). By hand rather
//! than derived so the readings, which the table names, sit in the object itself (serde's
//! `flatten` would move them and buffer every member on the way in).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use super::gpu::Gpu;
use super::readings::{Reader, Readings};
use crate::reading::fields::Key;

/// The members that are not field-table readings, and the reading each is written just
/// before: the place it had when it was added (2.0–2.3), so the document's order stays as
/// it was and a new reading (appended to its part of the table) moves no other member.
const BEFORE_THROTTLE_REASONS: Key = Key::EccUncorrected;
const BEFORE_COMPUTE_MODE: Key = Key::PersistenceMode;
/// MIG instances and pods come between the device's readings and its health counters.
const BEFORE_MIG_DEVICES: Key = Key::MemoryTemperature;

impl Serialize for Gpu {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("index", &self.index)?;
        m.serialize_entry("uuid", &self.uuid)?;
        m.serialize_entry("host", &self.host)?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("vendor", &self.vendor)?;
        m.serialize_entry("status", &self.status)?;
        m.serialize_entry("pci_bus_id", &self.pci_bus_id)?;
        let (mut throttle, mut mode, mut mig) = (false, false, false);
        for (key, name, value) in self.readings.written() {
            if key == BEFORE_THROTTLE_REASONS {
                m.serialize_entry("clocks_throttle_reasons", &self.clocks_throttle_reasons)?;
                throttle = true;
            }
            if key == BEFORE_COMPUTE_MODE {
                m.serialize_entry("compute_mode", &self.compute_mode)?;
                mode = true;
            }
            if key == BEFORE_MIG_DEVICES {
                m.serialize_entry("mig_devices", &self.mig_devices)?;
                m.serialize_entry("pods", &self.pods)?;
                mig = true;
            }
            m.serialize_entry(name, &value)?;
        }
        // Never lost should a row move out of the object: written last instead.
        if !throttle {
            m.serialize_entry("clocks_throttle_reasons", &self.clocks_throttle_reasons)?;
        }
        if !mode {
            m.serialize_entry("compute_mode", &self.compute_mode)?;
        }
        if !mig {
            m.serialize_entry("mig_devices", &self.mig_devices)?;
            m.serialize_entry("pods", &self.pods)?;
        }
        m.serialize_entry("retired_pages", &self.retired_pages)?;
        m.serialize_entry("remapped_rows", &self.remapped_rows)?;
        m.serialize_entry("xid_errors", &self.xid_errors)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Gpu {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Gpu, D::Error> {
        d.deserialize_map(GpuVisitor)
    }
}

struct GpuVisitor;

impl<'de> Visitor<'de> for GpuVisitor {
    type Value = Gpu;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a GPU object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Gpu, A::Error> {
        let (mut index, mut uuid, mut name, mut status) = (None, None, None, None);
        let mut readings = Reader::new();
        let mut g = Gpu {
            index: 0,
            uuid: String::new(),
            host: None,
            name: String::new(),
            vendor: None,
            status: super::Status::Ok,
            pci_bus_id: None,
            readings: Readings::unknown(),
            clocks_throttle_reasons: None,
            compute_mode: None,
            mig_devices: Vec::new(),
            pods: Vec::new(),
            retired_pages: None,
            remapped_rows: None,
            xid_errors: None,
        };
        while let Some(MemberName(key)) = map.next_key()? {
            match &*key {
                "index" => index = Some(map.next_value()?),
                "uuid" => uuid = Some(map.next_value()?),
                "name" => name = Some(map.next_value()?),
                "status" => status = Some(map.next_value()?),
                "host" => g.host = map.next_value()?,
                "vendor" => g.vendor = map.next_value()?,
                "pci_bus_id" => g.pci_bus_id = map.next_value()?,
                "clocks_throttle_reasons" => g.clocks_throttle_reasons = map.next_value()?,
                "compute_mode" => g.compute_mode = map.next_value()?,
                "mig_devices" => g.mig_devices = map.next_value()?,
                "pods" => g.pods = map.next_value()?,
                "retired_pages" => g.retired_pages = map.next_value()?,
                "remapped_rows" => g.remapped_rows = map.next_value()?,
                "xid_errors" => g.xid_errors = map.next_value()?,
                other => {
                    // Not a reading either: a member of a newer minor version, ignored.
                    if !readings.read(other, &mut map)? {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
        }
        g.index = index.ok_or_else(|| de::Error::missing_field("index"))?;
        g.uuid = uuid.ok_or_else(|| de::Error::missing_field("uuid"))?;
        g.name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        g.status = status.ok_or_else(|| de::Error::missing_field("status"))?;
        g.readings = readings.done();
        Ok(g)
    }
}

/// A member's name, borrowed from the input where it can be (no copy per member).
struct MemberName<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for MemberName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MemberName<'de>, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_string()))
            }
        }
        d.deserialize_str(Name).map(MemberName)
    }
}
