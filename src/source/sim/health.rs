//! The demo fleet's health readings: every simulated H100 reports its memory temperature,
//! zero PCIe replays, zero corrected ECC errors and no remapped rows (H100s remap rows; they
//! have no page retirement, so that stays unknown), and delivers XID events; GPU 1 has an
//! XID 31 (a memory page fault, what a buggy kernel causes) `XID_AT` into the demo and every
//! `XID_EVERY` after, so the screens show a health event. Pure function of scenario time.

use std::time::{Duration, SystemTime};

use crate::reading::health::{Health, RemappedRows, Xid, XidTally};
use crate::units::Celsius;

/// The GPU that has the XID, and when.
const XID_GPU: usize = 1;
const XID_CODE: u64 = 31;
const XID_AT: f64 = 20.0;
const XID_EVERY: f64 = 30.0 * 60.0;
/// HBM runs a few degrees above the core on these boards.
const MEMORY_ABOVE_CORE_C: u32 = 3;

/// GPU `i`'s health at `elapsed` seconds into the demo that started at `origin`.
pub(super) fn health(i: usize, core: Option<Celsius>, origin: SystemTime, elapsed: f64) -> Health {
    let mut xid = XidTally::NONE;
    if i == XID_GPU && elapsed >= XID_AT {
        let seen = ((elapsed - XID_AT) / XID_EVERY).floor();
        xid.count = seen as u64 + 1;
        xid.last = Some(Xid {
            code: XID_CODE,
            at: origin + Duration::from_secs_f64(XID_AT + seen * XID_EVERY),
        });
    }
    Health {
        memory_temperature: core.map(|c| Celsius(c.0 + MEMORY_ABOVE_CORE_C)),
        pcie_replays: Some(0),
        ecc_corrected: Some(0),
        retired_pages: None,
        remapped_rows: Some(RemappedRows {
            correctable: 0,
            uncorrectable: 0,
            pending: false,
            failed: false,
        }),
        xid: Some(xid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_1_has_an_xid_from_its_time_on_and_again_every_half_hour() {
        let origin = SystemTime::UNIX_EPOCH;
        let xid = |i, t| health(i, Some(Celsius(60)), origin, t).xid.unwrap();
        assert_eq!(xid(1, 19.0).count, 0);
        assert_eq!(xid(1, 20.0).count, 1);
        assert_eq!(
            xid(1, 25.0).last.map(|x| (x.code, x.at)),
            Some((31, origin + Duration::from_secs(20)))
        );
        assert_eq!(xid(1, 20.0 + XID_EVERY).count, 2);
        assert_eq!(xid(0, 1000.0).count, 0, "only GPU 1");
        assert_eq!(
            health(0, Some(Celsius(60)), origin, 0.0).memory_temperature,
            Some(Celsius(63))
        );
    }
}
