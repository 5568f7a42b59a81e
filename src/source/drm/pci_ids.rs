//! GPU names from the PCI ID database (`pci.ids`, from pciutils or hwdata), so an AMD or
//! Intel card reads as its users know it (`Radeon RX 7900 XTX`, `Arc A770`) rather than as
//! a PCI device id. Reads one vendor's section line by line, at most [`LIMIT`] bytes of a
//! regular file, and never fails: no database, or no entry, leaves the caller's fallback.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// pci.ids is about 1.4 MB; a file much larger than that is not one to follow to its end.
const LIMIT: u64 = 8 << 20;

/// The database files to try, under the root the sysfs tree hangs from (`/` for `/sys`, a
/// captured tree's own root in tests): pciutils' place, then hwdata's.
pub fn files(root: &Path) -> [PathBuf; 2] {
    [
        root.join("usr/share/misc/pci.ids"),
        root.join("usr/share/hwdata/pci.ids"),
    ]
}

/// A card's ids as sysfs gives them (`vendor`, `device`, `subsystem_vendor`,
/// `subsystem_device`: `0x744c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    pub vendor: u16,
    pub device: u16,
    pub subsystem: Option<(u16, u16)>,
}

/// The name of `ids` in the first of `files` that lists the device: the board's own name
/// when its subsystem is listed (`Radeon RX 7900 XTX`), else the device's marketing name
/// (what pci.ids puts in brackets: `DG2 [Arc A770]` → `Arc A770`), else the device's name.
pub fn name(files: &[PathBuf], ids: Ids) -> Option<String> {
    files.iter().find_map(|f| {
        // Regular files only: a FIFO put there would block the sampler for good.
        let file = crate::safe_file::open_regular(f).ok()?;
        find(BufReader::new(file.take(LIMIT)), ids)
    })
}

fn find(reader: impl BufRead, ids: Ids) -> Option<String> {
    let vendor = format!("{:04x} ", ids.vendor);
    let device = format!("\t{:04x} ", ids.device);
    let board = ids.subsystem.map(|(v, d)| format!("\t\t{v:04x} {d:04x} "));
    let mut device_name: Option<String> = None;
    // Only the vendor's section: its line, then its indented device and board lines.
    let mut lines = reader.split(b'\n').map_while(Result::ok);
    lines.find(|l| l.starts_with(vendor.as_bytes()))?;
    for line in lines {
        let line = String::from_utf8_lossy(&line);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            break; // the next vendor
        }
        if line.starts_with("\t\t") {
            let name = board.as_deref().and_then(|b| line.strip_prefix(b));
            if let (Some(_), Some(name)) = (&device_name, name) {
                return Some(name.trim().to_string());
            }
        } else if device_name.is_some() {
            break; // the next device: no line for this board
        } else if let Some(rest) = line.strip_prefix(&device) {
            device_name = Some(rest.trim().to_string());
        }
    }
    device_name.map(|n| marketing(&n))
}

/// `Navi 31 [Radeon RX 7900 XT/7900 XTX]` → `Radeon RX 7900 XT/7900 XTX`; a name without
/// brackets as it is.
fn marketing(name: &str) -> String {
    match name.rsplit_once('[') {
        Some((_, inner)) if inner.ends_with(']') && inner.len() > 1 => {
            inner[..inner.len() - 1].to_string()
        }
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DB: &str = "\
# pci.ids excerpt
1002  Advanced Micro Devices, Inc. [AMD/ATI]
\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]
\t\t1002 0e3b  Radeon RX 7900 XTX
\t\t1da2 e471  Radeon RX 7900 XT
\t7480  Navi 33 [Radeon RX 7600/7600 XT/7700S]
1022  Advanced Micro Devices, Inc. [AMD]
\t744c  Not a GPU
8086  Intel Corporation
\t56a0  DG2 [Arc A770]
\t56a1  DG2 [Arc A750]
\t\t8086 1021  Arc A750 Limited Edition
\t0b0b  Some device without brackets
C 03  Display controller
";

    fn ids(vendor: u16, device: u16, subsystem: Option<(u16, u16)>) -> Ids {
        Ids {
            vendor,
            device,
            subsystem,
        }
    }

    fn look(i: Ids) -> Option<String> {
        find(DB.as_bytes(), i)
    }

    #[test]
    fn a_board_by_its_subsystem_else_the_devices_marketing_name() {
        let xtx = look(ids(0x1002, 0x744c, Some((0x1002, 0x0e3b))));
        assert_eq!(xtx.as_deref(), Some("Radeon RX 7900 XTX"));
        let other = look(ids(0x1002, 0x744c, Some((0x1458, 0x2400))));
        assert_eq!(
            other.as_deref(),
            Some("Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M")
        );
        assert_eq!(look(ids(0x8086, 0x56a0, None)).as_deref(), Some("Arc A770"));
        // A board line of the next device is not this device's.
        let a770 = look(ids(0x8086, 0x56a0, Some((0x8086, 0x1021))));
        assert_eq!(a770.as_deref(), Some("Arc A770"));
        assert_eq!(
            look(ids(0x8086, 0x0b0b, None)).as_deref(),
            Some("Some device without brackets")
        );
    }

    #[test]
    fn another_vendors_device_of_the_same_number_or_none_is_no_name() {
        assert_eq!(look(ids(0x1002, 0x1234, None)), None);
        assert_eq!(look(ids(0x10de, 0x744c, None)), None);
        assert_eq!(
            name(&files(Path::new("/nonexistent")), ids(0x1002, 0x744c, None)),
            None
        );
    }

    /// A FIFO where the database should be is passed over at once (opening it for reading
    /// would wait for a writer), and the next file is read.
    #[test]
    fn a_fifo_in_the_databases_place_is_skipped_not_waited_on() {
        let t = tempfile::tempdir().unwrap();
        let [misc, hwdata] = files(t.path());
        for f in [&misc, &hwdata] {
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        }
        let path = std::ffi::CString::new(misc.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        std::fs::write(&hwdata, DB).unwrap();
        let arc = name(&[misc, hwdata], ids(0x8086, 0x56a0, None));
        assert_eq!(arc.as_deref(), Some("Arc A770"));
    }
}
