//! Why a GPU's clocks are held down: one `ThrottleReason` enum and ONE table that gives each
//! reason its NVML bit, its public wire name (JSON, recordings, metrics labels), its short
//! on-screen label and how much it matters. Every source, the UI and the exporter read this
//! table; none of them spells a reason's name itself. Owns no I/O and knows no NVML types.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use ThrottleKind::{Benign, PowerCap, Slowdown};
use ThrottleReason as R;

/// A reason NVML gives for holding clocks below their maximum.
///
/// `Unknown` carries a name this build does not know, read from a remote host's document or
/// a recording (a newer gpuwatch, a newer driver). It is kept, not rejected or skipped:
/// rejecting would throw away a whole host's sample over one word, and skipping would hide
/// that something holds the clocks. It shows under its own name, counts as a slowdown (what
/// we cannot name we do not call harmless) and is written back unchanged, so a relay
/// (`--remote` into `serve`) passes it on as it came.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThrottleReason {
    GpuIdle,
    ApplicationsClocksSetting,
    SwPowerCap,
    HwSlowdown,
    SyncBoost,
    SwThermalSlowdown,
    HwThermalSlowdown,
    HwPowerBrakeSlowdown,
    DisplayClockSetting,
    /// A name not in [`TABLE`], kept as it was read.
    Unknown(String),
}

/// How much a clock-throttle reason matters to someone watching a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThrottleKind {
    /// Expected: idle, application clocks, display, sync boost.
    Benign,
    /// The board is at its power limit: normal under full load, worth seeing.
    PowerCap,
    /// Thermal or hardware slowdown: the job is being slowed down.
    Slowdown,
}

/// One known reason and everything gpuwatch says about it.
#[derive(Debug)]
pub struct Row {
    pub reason: ThrottleReason,
    /// The `nvmlClocksThrottleReason*` bit in nvml.h.
    pub nvml_bit: u64,
    /// The public name: JSON, recordings, the `reason` label of the metrics. Never rename.
    pub name: &'static str,
    /// What the GPU panel shows.
    pub label: &'static str,
    /// What it means, in words, for the GPU detail view.
    pub words: &'static str,
    pub kind: ThrottleKind,
}

const fn row(
    reason: ThrottleReason,
    nvml_bit: u64,
    name: &'static str,
    label: &'static str,
    kind: ThrottleKind,
    words: &'static str,
) -> Row {
    Row {
        reason,
        nvml_bit,
        name,
        label,
        words,
        kind,
    }
}

/// The one table, in NVML bit order (which is also the order reasons are listed and the
/// order of the exporter's series).
pub static TABLE: [Row; 9] = [
    row(
        R::GpuIdle,
        0x1,
        "gpu_idle",
        "idle",
        Benign,
        "nothing is running, so clocks are low",
    ),
    row(
        R::ApplicationsClocksSetting,
        0x2,
        "applications_clocks_setting",
        "app clocks",
        Benign,
        "held at the application clocks an administrator set",
    ),
    row(
        R::SwPowerCap,
        0x4,
        "sw_power_cap",
        "power cap",
        PowerCap,
        "the board is at its power limit; normal under full load",
    ),
    row(
        R::HwSlowdown,
        0x8,
        "hw_slowdown",
        "HW slowdown",
        Slowdown,
        "hardware slowdown: overheating or a power brake; the job is slowed",
    ),
    row(
        R::SyncBoost,
        0x10,
        "sync_boost",
        "sync boost",
        Benign,
        "held in step with other GPUs of a sync-boost group",
    ),
    row(
        R::SwThermalSlowdown,
        0x20,
        "sw_thermal_slowdown",
        "thermal",
        Slowdown,
        "the driver slows the GPU to cool it down",
    ),
    row(
        R::HwThermalSlowdown,
        0x40,
        "hw_thermal_slowdown",
        "HW thermal",
        Slowdown,
        "the hardware slows the GPU because it is too hot",
    ),
    row(
        R::HwPowerBrakeSlowdown,
        0x80,
        "hw_power_brake_slowdown",
        "power brake",
        Slowdown,
        "an external power brake (the power supply) slows the GPU",
    ),
    row(
        R::DisplayClockSetting,
        0x100,
        "display_clock_setting",
        "display clock",
        Benign,
        "held by the display clock setting",
    ),
];

impl ThrottleReason {
    /// Every known reason, in table order.
    pub fn known() -> impl Iterator<Item = &'static ThrottleReason> + Clone {
        TABLE.iter().map(|r| &r.reason)
    }

    /// The reasons whose bits are set, in table order. Bits the table does not know are
    /// not reported (nvml-wrapper already drops them before we see the mask).
    pub fn from_nvml_bits(bits: u64) -> Vec<ThrottleReason> {
        TABLE
            .iter()
            .filter(|r| bits & r.nvml_bit != 0)
            .map(|r| r.reason.clone())
            .collect()
    }

    /// The known reason with this wire name, else `Unknown` carrying it.
    pub fn from_name(name: &str) -> ThrottleReason {
        TABLE
            .iter()
            .find(|r| r.name == name)
            .map_or_else(|| R::Unknown(name.to_string()), |r| r.reason.clone())
    }

    fn row(&self) -> Option<&'static Row> {
        TABLE.iter().find(|r| r.reason == *self)
    }

    /// The public (wire) name; an unknown reason keeps the name it came with.
    pub fn name(&self) -> &str {
        match self {
            R::Unknown(name) => name,
            known => known.row().map_or("", |r| r.name),
        }
    }

    /// What the reason means, in words; an unknown one says so.
    pub fn words(&self) -> &str {
        self.row()
            .map_or("a reason this gpuwatch does not know", |r| r.words)
    }

    /// The short on-screen label; an unknown reason shows its name.
    pub fn label(&self) -> &str {
        self.row().map_or_else(|| self.name(), |r| r.label)
    }

    pub fn kind(&self) -> ThrottleKind {
        self.row().map_or(Slowdown, |r| r.kind)
    }

    pub fn nvml_bit(&self) -> Option<u64> {
        self.row().map(|r| r.nvml_bit)
    }
}

impl From<&str> for ThrottleReason {
    fn from(name: &str) -> Self {
        ThrottleReason::from_name(name)
    }
}

impl fmt::Display for ThrottleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// On the wire a reason is its name, exactly as before the enum existed.
impl Serialize for ThrottleReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ThrottleReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(ThrottleReason::from_name(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_known_reason_round_trips_by_name_and_through_json() {
        for r in &TABLE {
            assert_eq!(ThrottleReason::from_name(r.name), r.reason);
            assert_eq!(r.reason.name(), r.name);
            let json = serde_json::to_string(&r.reason).unwrap();
            assert_eq!(json, format!("\"{}\"", r.name));
            let back: ThrottleReason = serde_json::from_str(&json).unwrap();
            assert_eq!(back, r.reason);
            assert_eq!(
                ThrottleReason::from_nvml_bits(r.nvml_bit),
                vec![r.reason.clone()]
            );
        }
    }

    /// A new variant fails to compile here until it is listed, and the count below then
    /// fails until it has a row: no variant can be without a name.
    const VARIANTS: usize = {
        const fn listed(r: &ThrottleReason) -> usize {
            match r {
                R::GpuIdle
                | R::ApplicationsClocksSetting
                | R::SwPowerCap
                | R::HwSlowdown
                | R::SyncBoost
                | R::SwThermalSlowdown
                | R::HwThermalSlowdown
                | R::HwPowerBrakeSlowdown
                | R::DisplayClockSetting
                | R::Unknown(_) => 9,
            }
        }
        listed(&R::GpuIdle)
    };

    #[test]
    fn every_variant_but_unknown_has_a_row() {
        assert_eq!(TABLE.len(), VARIANTS);
    }

    #[test]
    fn bits_names_and_variants_are_unique_and_each_bit_is_one_bit() {
        let bits: HashSet<u64> = TABLE.iter().map(|r| r.nvml_bit).collect();
        let names: HashSet<&str> = TABLE.iter().map(|r| r.name).collect();
        let reasons: HashSet<&ThrottleReason> = ThrottleReason::known().collect();
        assert_eq!(bits.len(), TABLE.len());
        assert_eq!(names.len(), TABLE.len());
        assert_eq!(reasons.len(), TABLE.len());
        assert!(TABLE.iter().all(|r| r.nvml_bit.is_power_of_two()));
        assert!(
            !reasons
                .iter()
                .any(|r| matches!(r, ThrottleReason::Unknown(_)))
        );
    }

    #[test]
    fn an_unknown_name_is_kept_shown_as_itself_loud_and_written_back_unchanged() {
        let r: ThrottleReason = serde_json::from_str("\"made_up_reason\"").unwrap();
        assert_eq!(r, ThrottleReason::Unknown("made_up_reason".into()));
        assert_eq!(r.label(), "made_up_reason");
        assert_eq!(r.kind(), ThrottleKind::Slowdown);
        assert_eq!(r.nvml_bit(), None);
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"made_up_reason\"");
        assert!(
            serde_json::from_str::<ThrottleReason>("7").is_err(),
            "a name is a string"
        );
    }

    #[test]
    fn a_list_from_a_newer_peer_reads_and_writes_back_byte_for_byte() {
        let wire = r#"["gpu_idle","sw_power_cap","clocks_held_by_the_future"]"#;
        let list: Vec<ThrottleReason> = serde_json::from_str(wire).unwrap();
        assert_eq!(list[1], ThrottleReason::SwPowerCap);
        assert_eq!(serde_json::to_string(&list).unwrap(), wire);
    }

    #[test]
    fn a_mask_decodes_in_table_order() {
        let got = ThrottleReason::from_nvml_bits(0x40 | 0x4 | 0x1_0000);
        assert_eq!(
            got,
            [
                ThrottleReason::SwPowerCap,
                ThrottleReason::HwThermalSlowdown
            ]
        );
        assert!(ThrottleReason::from_nvml_bits(0).is_empty());
        assert_eq!(ThrottleReason::GpuIdle.label(), "idle");
        assert_eq!(ThrottleReason::SwPowerCap.kind(), ThrottleKind::PowerCap);
    }
}
