//! The words for a GPU's health readings (`source::health`), shared by the `--once` text
//! and the GPU panel's border: each reading as a short phrase, `N/A` where the device cannot
//! tell. Pure formatting; what is worth a warning is `model::health`'s.

use crate::reading::health::{Health, RemappedRows, RetiredPages, XidTally};
use crate::ui::format::NA;

/// Every health reading as a phrase, in a fixed order (for the `--once` table).
pub fn all(h: &Health) -> Vec<String> {
    vec![
        format!(
            "mem {}",
            h.memory_temperature
                .map_or_else(|| NA.to_string(), |t| format!("{}C", t.0))
        ),
        format!("PCIe replays {}", count(h.pcie_replays)),
        format!("ECC corrected {}", count(h.ecc_corrected)),
        format!(
            "retired pages {}",
            h.retired_pages.as_ref().map_or_else(|| NA.into(), retired)
        ),
        format!(
            "remapped rows {}",
            h.remapped_rows.as_ref().map_or_else(|| NA.into(), remapped)
        ),
        format!("XID {}", h.xid.as_ref().map_or_else(|| NA.into(), xid)),
    ]
}

/// Whether the source told anything about the GPU's health (else the section is left out).
pub fn any_known(h: &Health) -> bool {
    h != &Health::default()
}

/// Only what is out of the ordinary, for the panel's narrow border: an XID seen, rows or
/// pages waiting or failed. Empty for a healthy GPU (and for one that cannot tell).
pub fn notable(h: &Health) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(x) = h.xid.filter(|x| x.count > 0) {
        out.push(format!("XID {}", xid(&x)));
    }
    if let Some(r) = h.remapped_rows.filter(|r| r.pending || r.failed) {
        out.push(format!("rows {}", remapped(&r)));
    }
    if let Some(p) = h.retired_pages.filter(|p| p.pending) {
        out.push(format!("pages {}", retired(&p)));
    }
    out
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| NA.to_string(), |n| n.to_string())
}

fn state(pending: bool, failed: bool) -> &'static str {
    match (pending, failed) {
        (true, true) => " (pending, failed)",
        (false, true) => " (failed)",
        (true, false) => " (pending)",
        (false, false) => "",
    }
}

fn retired(p: &RetiredPages) -> String {
    format!(
        "{} dbe/{} sbe{}",
        p.double_bit,
        p.single_bit,
        state(p.pending, false)
    )
}

fn remapped(r: &RemappedRows) -> String {
    format!(
        "{} unc/{} cor{}",
        r.uncorrectable,
        r.correctable,
        state(r.pending, r.failed)
    )
}

fn xid(x: &XidTally) -> String {
    match x.last {
        Some(last) => format!("{} (last {})", x.count, last.code),
        None => x.count.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Celsius;

    #[test]
    fn readings_have_their_phrases_and_unknowns_say_na() {
        let mut h = Health::default();
        assert!(!any_known(&h));
        assert_eq!(all(&h)[0], "mem N/A");
        assert_eq!(all(&h)[5], "XID N/A");
        h.memory_temperature = Some(Celsius(71));
        h.remapped_rows = Some(RemappedRows {
            correctable: 1,
            uncorrectable: 2,
            pending: false,
            failed: true,
        });
        let mut x = XidTally::NONE;
        x.record(13, std::time::SystemTime::UNIX_EPOCH);
        h.xid = Some(x);
        assert_eq!(
            all(&h),
            [
                "mem 71C",
                "PCIe replays N/A",
                "ECC corrected N/A",
                "retired pages N/A",
                "remapped rows 2 unc/1 cor (failed)",
                "XID 1 (last 13)"
            ]
        );
        assert_eq!(
            notable(&h),
            ["XID 1 (last 13)", "rows 2 unc/1 cor (failed)"]
        );
        h.xid = Some(XidTally::NONE);
        h.remapped_rows = None;
        assert!(notable(&h).is_empty(), "nothing out of the ordinary");
    }
}
