//! Reading DRM cards from sysfs: which cards there are (`class/drm/card*`, their driver and
//! PCI address from `device/uevent`), which `/dev/dri` node belongs to which device, and the
//! small value files (amdgpu's `gpu_busy_percent`, `pp_dpm_sclk`, ...; hwmon's `temp*_input`,
//! `power1_average`, ...). Pure reads under an injected root; a file that is missing or not
//! in the documented format is `None`, never an error.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::reading::Vendor;
use crate::safe_file;

/// The most a sysfs value file or an fdinfo is read: real ones are under a page (an
/// fdinfo with every engine and region listed is about 1 KiB). Past that, or not a
/// regular file (a FIFO another user planted in a replayed tree, a device), the file is
/// unreadable: `None`, not a wait and not a 100 MB string.
pub const MAX_VALUE_FILE: u64 = 64 << 10;

/// A small sysfs or /proc file's text, read non-blocking and capped; `None` for anything
/// else.
pub fn read_small(path: &Path) -> Option<String> {
    safe_file::read_text(path, MAX_VALUE_FILE).ok()
}

/// One DRM card as sysfs lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// `card0`.
    pub name: String,
    pub vendor: Vendor,
    /// `device/uevent`'s `PCI_SLOT_NAME`, e.g. `0000:03:00.0` (what fdinfo's `drm-pdev` says).
    pub pci_slot: String,
    /// `.../class/drm/card0`.
    pub dir: PathBuf,
}

impl Card {
    pub fn device(&self) -> PathBuf {
        self.dir.join("device")
    }
}

/// The vendor a kernel driver name belongs to, for the drivers gpuwatch reads.
pub fn vendor_of_driver(driver: &str) -> Option<Vendor> {
    match driver {
        "amdgpu" => Some(Vendor::Amd),
        "i915" | "xe" => Some(Vendor::Intel),
        _ => None,
    }
}

/// `DRIVER` and `PCI_SLOT_NAME` from a `device/uevent`.
fn uevent(dir: &Path) -> Option<(String, String)> {
    let text = read_small(&dir.join("device/uevent"))?;
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    Some((field("DRIVER")?, field("PCI_SLOT_NAME")?))
}

/// Every `card<N>` under `<sys>/class/drm` with a driver gpuwatch reads, in card order.
/// Connectors (`card0-DP-1`) and render nodes are not cards.
pub fn cards(sys: &Path) -> Vec<Card> {
    let class = sys.join("class/drm");
    let Ok(entries) = std::fs::read_dir(&class) else {
        return Vec::new();
    };
    let mut cards: Vec<(u32, Card)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let n: u32 = name.strip_prefix("card")?.parse().ok()?;
            let dir = class.join(&name);
            let (driver, pci_slot) = uevent(&dir)?;
            let vendor = vendor_of_driver(&driver)?;
            Some((
                n,
                Card {
                    name,
                    vendor,
                    pci_slot,
                    dir,
                },
            ))
        })
        .collect();
    cards.sort_by_key(|(n, _)| *n);
    cards.into_iter().map(|(_, c)| c).collect()
}

/// Which PCI device each `/dev/dri` node (`card0`, `renderD128`) belongs to, for the
/// devices in `cards`.
pub fn node_devices(sys: &Path, cards: &[Card]) -> HashMap<String, String> {
    let class = sys.join("class/drm");
    let Ok(entries) = std::fs::read_dir(&class) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if !(name.starts_with("card") || name.starts_with("renderD")) || name.contains('-') {
                return None;
            }
            let (_, slot) = uevent(&class.join(&name))?;
            cards
                .iter()
                .any(|c| c.pci_slot == slot)
                .then_some((name, slot))
        })
        .collect()
}

/// A file's text, trimmed.
pub fn text(path: &Path) -> Option<String> {
    let t = read_small(path)?;
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// A file holding one unsigned number.
pub fn number(path: &Path) -> Option<u64> {
    text(path)?.parse().ok()
}

/// A `pp_dpm_sclk`-style table (`1: 800Mhz *`): the current level (marked `*`) and the
/// highest level, in MHz.
pub fn dpm_levels(path: &Path) -> (Option<u32>, Option<u32>) {
    let Some(t) = text(path) else {
        return (None, None);
    };
    let mut current = None;
    let mut max = None;
    for line in t.lines() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let rest = rest.trim();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(mhz) = digits.parse::<u32>() else {
            continue;
        };
        max = Some(max.map_or(mhz, |m: u32| m.max(mhz)));
        if rest.ends_with('*') {
            current = Some(mhz);
        }
    }
    (current, max)
}

/// `current_link_speed` (`16.0 GT/s PCIe`) as a PCIe generation.
pub fn link_gen(path: &Path) -> Option<u32> {
    let t = text(path)?;
    let rate: f64 = t.split_whitespace().next()?.parse().ok()?;
    // Each generation's signalling rate (GT/s), from PCIe 1.0 to 6.0.
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .position(|&r| (rate - r).abs() < 0.01)
        .map(|i| i as u32 + 1)
}

/// The card's hwmon directory (`device/hwmon/hwmon3`), when it has one.
pub fn hwmon(card: &Card) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(card.device().join("hwmon"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("hwmon"))
        })
        .collect();
    dirs.sort();
    dirs.into_iter().next()
}

/// The hwmon temperature sensor to show, by label in order of preference (amdgpu: `edge`,
/// then `junction`; xe: `pkg`), else `temp1`: its number, e.g. 2 for `temp2_*`.
pub fn temperature_sensor(hwmon: &Path) -> Option<u32> {
    let labelled = |n: u32| text(&hwmon.join(format!("temp{n}_label")));
    for wanted in ["edge", "junction", "pkg"] {
        if let Some(n) = (1..=8).find(|&n| labelled(n).as_deref() == Some(wanted)) {
            return Some(n);
        }
    }
    hwmon.join("temp1_input").exists().then_some(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn dpm_tables_give_the_starred_level_and_the_highest() {
        let dir = tempfile::tempdir().unwrap();
        let p = file(
            dir.path(),
            "pp_dpm_sclk",
            "0: 500Mhz\n1: 1800Mhz *\n2: 2100Mhz\n",
        );
        assert_eq!(dpm_levels(&p), (Some(1800), Some(2100)));
        // Some boards mark no level (the clock is between levels, shown as 'S:'): no current.
        let p = file(dir.path(), "pp_dpm_mclk", "0: 96Mhz\n1: 1000Mhz\n");
        assert_eq!(dpm_levels(&p), (None, Some(1000)));
        assert_eq!(dpm_levels(&dir.path().join("missing")), (None, None));
    }

    #[test]
    fn link_speeds_map_to_generations_and_unknown_text_to_none() {
        let dir = tempfile::tempdir().unwrap();
        for (text, generation) in [("16.0 GT/s PCIe", Some(4)), ("2.5 GT/s PCIe", Some(1))] {
            assert_eq!(link_gen(&file(dir.path(), "s", text)), generation);
        }
        assert_eq!(link_gen(&file(dir.path(), "s", "Unknown")), None);
        assert_eq!(link_gen(&file(dir.path(), "s", "12.0 GT/s")), None);
    }
}
