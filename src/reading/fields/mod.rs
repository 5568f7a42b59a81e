//! The field table: ONE row per numeric GPU reading, giving its key, its getter and setter in
//! base units (ratio, bytes, hertz, joules, °C, W, counts), its native metric (name, type,
//! help), its dcgm-exporter name and scale, its JSON member (name, unit, integer or float)
//! and its nvidia-smi `--query-gpu` names. The exporter's native series (`serve::readings`),
//! the DCGM view (`serve::dcgm`), the Prometheus source's parser
//! (`source::prometheus::series`), the JSON document (`wire::gpu`) and the query catalogue
//! (`query::gpu_fields`) all read this table, so a new numeric reading is one row here plus
//! the code that reads it. Structured readings (identity, MIG, pods, throttle reasons) stay
//! where they are. Pure data; no I/O.

mod health;
mod table;

pub use table::TABLE;

use super::GpuReading;

/// Which reading a row is: the key other tables and tests name a field by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Util,
    MemoryUtil,
    MemoryTotal,
    MemoryUsed,
    MemoryFree,
    MemoryReserved,
    Temperature,
    TemperatureSlowdown,
    TemperatureShutdown,
    Power,
    PowerLimit,
    EnergyJoules,
    Fan,
    SmClock,
    MemoryClock,
    SmClockMax,
    MemoryClockMax,
    GraphicsClock,
    GraphicsClockMax,
    VideoClock,
    Pstate,
    EncoderUtil,
    DecoderUtil,
    PcieGen,
    PcieWidth,
    PcieGenMax,
    PcieWidthMax,
    PcieTx,
    PcieRx,
    EccUncorrected,
    Mig,
    PersistenceMode,
    MemoryTemperature,
    PcieReplays,
    EccCorrected,
    RetiredSingleBit,
    RetiredDoubleBit,
    RetiredPending,
    RemappedCorrectable,
    RemappedUncorrectable,
    RemappedPending,
    RemappedFailed,
    XidCount,
    LastXid,
    LastXidTime,
    /// dcgm-exporter's XID field: the latest XID's number, 0 while none arrived.
    DcgmXid,
}

/// The readings a GPU's history keeps, one series each (the panels' sparklines, the detail
/// view's charts and the Prometheus back-fill all use this one store of points).
pub const CHARTED: [Key; 9] = [
    Key::Util,
    Key::MemoryUtil,
    Key::MemoryUsed,
    Key::Temperature,
    Key::Power,
    Key::SmClock,
    Key::MemoryClock,
    Key::PcieTx,
    Key::PcieRx,
];

/// A metric's Prometheus type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Gauge,
    Counter,
}

/// gpuwatch's own series for a field, in base units (the getter's value as it is).
#[derive(Debug, Clone, Copy)]
pub struct Native {
    pub name: &'static str,
    pub kind: MetricKind,
    pub help: &'static str,
}

/// How a value in another unit (dcgm-exporter's, the JSON document's) relates to the base
/// unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Same,
    /// DCGM = base × k, a whole number (% from a ratio, mJ from joules).
    Times(f64),
    /// DCGM = base ÷ k, whole units rounded down (MiB from bytes, MHz from hertz), as
    /// dcgm-exporter reports them.
    Per(f64),
}

impl Scale {
    /// A base-unit value in DCGM's unit. Rounded rather than multiplied alone: `0.29 × 100`
    /// is 28.999… in floating point, and DCGM writes whole percent.
    pub fn to_dcgm(self, base: f64) -> f64 {
        match self {
            Scale::Same => base,
            Scale::Times(k) => (base * k).round(),
            Scale::Per(k) => (base / k).floor(),
        }
    }

    /// A DCGM value in the base unit.
    pub fn from_dcgm(self, value: f64) -> f64 {
        match self {
            Scale::Same => value,
            Scale::Times(k) => value / k,
            Scale::Per(k) => value * k,
        }
    }
}

/// dcgm-exporter's name for a field.
#[derive(Debug, Clone, Copy)]
pub struct Dcgm {
    pub name: &'static str,
    pub scale: Scale,
    /// `Some` when `--dcgm-compat` writes it (with dcgm-exporter's type and help text);
    /// `None`: only read back from a dcgm-exporter, gpuwatch does not write it.
    pub written: Option<(MetricKind, &'static str)>,
}

/// How the JSON document writes a reading: its member of the GPU object, in which unit and
/// as which JSON type (a whole number stays `42`, never `42.0`).
#[derive(Debug, Clone, Copy)]
pub struct Json {
    /// A member of the GPU object; a dotted path inside a nested object
    /// (`remapped_rows.pending`), which `wire::gpu` writes as a structure of its own.
    pub name: &'static str,
    /// The document's unit against the base unit: whole % from a ratio, MHz from hertz.
    pub scale: Scale,
    pub kind: JsonKind,
}

/// The JSON type of a reading in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    /// A whole number ≥ 0 (bytes, %, MHz, °C, counts).
    Integer,
    /// Any number (W, J, seconds).
    Float,
    /// `true`/`false` (a 1/0 reading).
    Bool,
}

impl Json {
    /// A base-unit value in the document's unit (`to_dcgm`'s rounding: whole percent of
    /// 0.29 is 29, not 28.999…).
    pub fn to_doc(&self, base: f64) -> f64 {
        self.scale.to_dcgm(base)
    }

    /// A document value in the base unit.
    pub fn from_doc(&self, value: f64) -> f64 {
        self.scale.from_dcgm(value)
    }

    /// A member of the GPU object itself, not of a nested one.
    pub const fn is_flat(&self) -> bool {
        let name = self.name.as_bytes();
        let mut i = 0;
        while i < name.len() {
            if name[i] == b'.' {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// One of nvidia-smi's `--query-gpu` names for a reading.
#[derive(Debug, Clone, Copy)]
pub struct Smi {
    /// nvidia-smi's name (`clocks.current.sm`), which the CSV header shows whichever name
    /// was asked: the one its `--help-query-gpu` lists first
    /// (`"clocks.current.sm" or "clocks.sm"`).
    pub name: &'static str,
    /// Other names nvidia-smi takes for it (`clocks.sm`), its own only.
    pub aliases: &'static [&'static str],
    pub shown: Shown,
    /// What the field is, for `docs/query.md` and the list of fields in an error.
    pub help: &'static str,
}

/// How nvidia-smi writes a reading (the unit in its CSV header and after each value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Bytes as whole MiB, rounded down (nvidia-smi divides NVML's bytes by 1 MiB).
    MiB,
    /// A 0-1 ratio as whole percent.
    Percent,
    /// Watts with two decimals (`71.29`).
    Watts,
    /// Hertz as whole MHz.
    MHz,
    /// A whole number as it is (°C, counts, link generation).
    Whole,
    /// `P0`..`P15`.
    Pstate,
}

/// One numeric GPU reading.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub key: Key,
    /// Its member of the JSON document's GPU object; `None` for a field the document does
    /// not carry (DCGM's XID, which is `xid_errors.last` under another rule).
    pub json: Option<Json>,
    /// The reading in base units; `None` when the source could not tell.
    pub get: fn(&GpuReading) -> Option<f64>,
    /// Sets the reading from a base-unit value; a value it cannot hold (negative bytes)
    /// leaves it `None`. `None` for a field that cannot be read back honestly.
    pub set: Option<fn(&mut GpuReading, f64)>,
    /// `None` only for a field gpuwatch has no series of its own for.
    pub native: Option<Native>,
    pub dcgm: Option<Dcgm>,
    /// Its `--query-gpu` names, in the order the catalogue lists them; empty when nvidia-smi
    /// has none gpuwatch answers.
    pub smi: &'static [Smi],
}

/// The row of `key`.
pub fn field(key: Key) -> &'static Field {
    TABLE
        .iter()
        .find(|f| f.key == key)
        .expect("every key has a row (checked by a test)")
}

/// Which way a metric name names a field.
#[derive(Debug, Clone, Copy)]
pub enum Spelling {
    Native,
    Dcgm(Scale),
}

/// The field a metric name (native or DCGM) is, with how to read its value.
pub fn by_metric(name: &str) -> Option<(&'static Field, Spelling)> {
    TABLE.iter().find_map(|f| {
        if f.native.is_some_and(|n| n.name == name) {
            Some((f, Spelling::Native))
        } else {
            f.dcgm
                .filter(|d| d.name == name)
                .map(|d| (f, Spelling::Dcgm(d.scale)))
        }
    })
}

/// Every metric name the table knows (native, then DCGM), in table order.
pub fn metric_names() -> impl Iterator<Item = &'static str> {
    let native = TABLE.iter().filter_map(|f| f.native.map(|n| n.name));
    let dcgm = TABLE.iter().filter_map(|f| f.dcgm.map(|d| d.name));
    native.chain(dcgm)
}

#[cfg(test)]
pub(crate) mod tests;
