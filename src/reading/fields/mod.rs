//! The field table: ONE row per numeric GPU reading, giving its key, its getter and setter in
//! base units (ratio, bytes, hertz, joules, °C, W, counts), its native metric (name, type,
//! help), its dcgm-exporter name and scale, and its JSON name. The exporter's native series
//! (`serve::readings`), the DCGM view (`serve::dcgm`) and the Prometheus source's parser
//! (`source::prometheus::series`) all read this table, so the four lists of one fact that
//! drifted (health series written and never read back) are one list now. Structured readings
//! (identity, MIG, pods, throttle reasons) stay where they are. Pure data; no I/O.
//! It lives with the vocabulary in `source/` today and moves to the readings layer (issue 21,
//! point 2) with it.

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

/// How a dcgm-exporter value relates to the base unit.
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

/// One numeric GPU reading.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub key: Key,
    /// Its name in the JSON document's GPU object; a dotted path inside a nested object
    /// (`remapped_rows.pending`).
    pub json: &'static str,
    /// The reading in base units; `None` when the source could not tell.
    pub get: fn(&GpuReading) -> Option<f64>,
    /// Sets the reading from a base-unit value; a value it cannot hold (negative bytes)
    /// leaves it `None`. `None` for a field that cannot be read back honestly.
    pub set: Option<fn(&mut GpuReading, f64)>,
    /// `None` only for a field gpuwatch has no series of its own for.
    pub native: Option<Native>,
    pub dcgm: Option<Dcgm>,
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
