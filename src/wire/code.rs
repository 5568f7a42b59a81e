//! A warning's code: which kind of warning it is, with no numbers and no words. The one
//! spelling of each kind's name, shared by the JSON document (its `kind` tag), the metrics'
//! `kind` label, `--alert-on` and `[alerts.kinds.KIND]`, the alert payloads and the tests,
//! so a new kind is one row here and every output spells it the same.

use std::fmt;

/// Declares `WarningCode` from one row per kind (variant and name), so the list of
/// every code (`ALL`) and the names cannot drift from the variants.
macro_rules! warning_codes {
    ($($(#[$doc:meta])* $code:ident => $name:literal,)+) => {
        /// Which kind of warning (fieldless; the numbers are the warning's own).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum WarningCode {
            $($(#[$doc])* $code,)+
        }

        impl WarningCode {
            /// Every code, in the order gpuwatch lists them (`--alert-on`'s error, the
            /// `config init` template).
            pub const ALL: &'static [WarningCode] = &[$(WarningCode::$code,)+];

            /// The kind's name in every output: `oom_risk`, `overheating`, ….
            pub const fn name(self) -> &'static str {
                match self {
                    $(WarningCode::$code => $name,)+
                }
            }
        }
    };
}

warning_codes! {
    /// VRAM nearly full, or filling fast.
    OomRisk => "oom_risk",
    /// Running hot, or held at the critical temperature.
    Overheating => "overheating",
    /// A GPU stopped answering.
    Lost => "lost",
    /// A process holds VRAM on a GPU idle for long.
    IdleHolder => "idle_holder",
    /// A watched host does not answer.
    HostDown => "host_down",
    /// VRAM in use with no process listed.
    StaleVram => "stale_vram",
    /// Unpinned processes of several owners share GPU 0 while others are free.
    PileUp => "pile_up",
    /// A critical XID error.
    Xid => "xid",
    /// A row remapping pending or failed.
    RemappedRows => "remapped_rows",
    /// A page retirement pending.
    RetiredPages => "retired_pages",
    /// The PCIe replay counter grew.
    PcieReplays => "pcie_replays",
    /// Corrected ECC errors grew.
    EccCorrected => "ecc_corrected",
    /// The hardware held the clocks down.
    HwSlowdown => "hw_slowdown",
    /// A pod's process holds VRAM on a GPU the kubelet allocated to other pods.
    Squatter => "squatter",
}

impl WarningCode {
    /// The code named `name` (exactly as `name()` spells it), or `None`.
    pub fn from_name(name: &str) -> Option<WarningCode> {
        WarningCode::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Every name, joined by `sep` (for messages and the template).
    pub fn names(sep: &str) -> String {
        let names: Vec<&str> = WarningCode::ALL.iter().map(|c| c.name()).collect();
        names.join(sep)
    }
}

/// Ordered by name, so whatever is sorted or keyed by code (alert summaries, per-kind rules,
/// metric series) keeps the order it had when kinds were strings.
impl Ord for WarningCode {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for WarningCode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for WarningCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Written as its name, so a code in a JSON payload reads like the document's `kind`.
impl serde::Serialize for WarningCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_distinct_name_that_reads_back() {
        let mut seen = std::collections::BTreeSet::new();
        for &code in WarningCode::ALL {
            assert!(seen.insert(code.name()), "{code:?} repeats a name");
            assert_eq!(WarningCode::from_name(code.name()), Some(code));
            assert_eq!(code.to_string(), code.name());
            assert_eq!(serde_json::to_value(code).unwrap(), code.name());
        }
    }

    #[test]
    fn codes_sort_by_name() {
        let mut codes = WarningCode::ALL.to_vec();
        codes.sort();
        let names: Vec<&str> = codes.iter().map(|c| c.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert!(WarningCode::EccCorrected < WarningCode::OomRisk);
    }

    #[test]
    fn a_name_is_matched_exactly() {
        assert_eq!(WarningCode::from_name("overheat"), None);
        assert_eq!(WarningCode::from_name("Overheating"), None);
        assert_eq!(WarningCode::from_name(" xid"), None);
        assert_eq!(WarningCode::from_name(""), None);
    }
}
