//! A GPU's health counters as a source reports them: memory temperature, PCIe replays,
//! corrected ECC errors, retired pages, remapped rows and the XID errors seen since gpuwatch
//! started. Data only (what the warnings make of it is `model::health`'s); every field is
//! `None` where the device or source cannot tell, which is not the same as a zero.

use std::time::SystemTime;

use crate::units::Celsius;

/// The health readings of one GPU at one sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Health {
    /// HBM / memory temperature, where the board has the sensor.
    pub memory_temperature: Option<Celsius>,
    /// PCIe link replays since the driver loaded (each one a retransmitted packet).
    pub pcie_replays: Option<u64>,
    /// Corrected (single-bit) ECC errors since the driver loaded (volatile counter).
    pub ecc_corrected: Option<u64>,
    /// Pages retired for ECC errors (pre-Ampere boards; Ampere and later remap rows).
    pub retired_pages: Option<RetiredPages>,
    pub remapped_rows: Option<RemappedRows>,
    /// Critical XID errors NVML delivered since gpuwatch opened the device; `None` where the
    /// device does not deliver XID events.
    pub xid: Option<XidTally>,
}

/// Dynamic page retirement (NVML's retired-pages counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetiredPages {
    /// Pages retired for repeated single-bit errors.
    pub single_bit: u64,
    /// Pages retired for double-bit errors.
    pub double_bit: u64,
    /// A retirement waits for the next driver reload (or reboot) to take effect.
    pub pending: bool,
}

/// Row remapping (Ampere and later): spare rows replacing rows with errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemappedRows {
    /// Rows remapped for correctable errors.
    pub correctable: u64,
    /// Rows remapped for uncorrectable errors.
    pub uncorrectable: u64,
    /// A remapping waits for a GPU reset to take effect.
    pub pending: bool,
    /// A remapping failed (no spare row left): the GPU needs service.
    pub failed: bool,
}

/// The XID errors one GPU reported since gpuwatch started watching it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidTally {
    /// How many XID events arrived.
    pub count: u64,
    /// The most recent one, when any arrived.
    pub last: Option<Xid>,
}

/// One XID error: its number and when gpuwatch received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xid {
    pub code: u64,
    pub at: SystemTime,
}

impl XidTally {
    /// A tally with nothing seen yet (the device delivers XID events; none arrived).
    pub const NONE: XidTally = XidTally {
        count: 0,
        last: None,
    };

    /// Counts one more XID, received at `at`.
    pub fn record(&mut self, code: u64, at: SystemTime) {
        self.count += 1;
        self.last = Some(Xid { code, at });
    }
}

/// What the common XID numbers mean (NVIDIA's XID catalogue, shortened); `None` for the
/// others, which are shown by number only.
pub fn xid_meaning(code: u64) -> Option<&'static str> {
    Some(match code {
        13 => "graphics engine exception",
        31 => "GPU memory page fault",
        43 => "GPU stopped processing",
        48 => "double-bit ECC error",
        63 => "ECC page retirement or row remapping recorded",
        64 => "ECC page retirement or row remapping failed",
        74 => "NVLink error",
        79 => "GPU has fallen off the bus",
        94 => "contained ECC error",
        95 => "uncontained ECC error",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_xids_have_meanings_and_others_do_not() {
        for code in [13, 31, 43, 48, 63, 64, 74, 79, 94, 95] {
            assert!(xid_meaning(code).is_some(), "{code}");
        }
        assert_eq!(xid_meaning(79), Some("GPU has fallen off the bus"));
        assert_eq!(xid_meaning(62), None);
    }

    #[test]
    fn a_tally_counts_and_keeps_the_latest() {
        let mut t = XidTally::NONE;
        let at = SystemTime::UNIX_EPOCH;
        t.record(13, at);
        t.record(79, at);
        assert_eq!(t.count, 2);
        assert_eq!(t.last.map(|x| x.code), Some(79));
    }
}
