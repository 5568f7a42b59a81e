//! Parsing one `/proc/PID/fdinfo/FD` of a DRM file into what gpuwatch uses: the driver,
//! the device (`drm-pdev`), the client id, device-local memory and cumulative engine time.
//! The keys are the kernel's "DRM client usage stats" (Documentation/gpu/drm-usage-stats.rst),
//! shared by amdgpu, i915 and xe. Pure text to value; no file access, no state.

use std::collections::BTreeMap;

/// One DRM client (one open of a DRM device) as its fdinfo describes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DrmClient {
    /// `drm-driver`: `amdgpu`, `i915`, `xe`, ...
    pub driver: String,
    /// `drm-pdev`: the PCI address, e.g. `0000:03:00.0`.
    pub pdev: String,
    /// `drm-client-id`: unique per open; several fds (dup, fork) can share one client, and
    /// its numbers must then be counted once.
    pub client_id: Option<u64>,
    /// Memory in device-local regions (`vram*`, `local*`), in bytes; `None` when the file
    /// names no such region (an integrated GPU, an older kernel).
    pub device_memory: Option<u64>,
    /// Cumulative busy time per engine class (`drm-engine-<class>: N ns`), with its
    /// capacity (`drm-engine-capacity-<class>`, 1 when absent).
    pub engine_ns: BTreeMap<String, (u64, u64)>,
    /// xe's engine use: `drm-cycles-<class>` and `drm-total-cycles-<class>` per class.
    pub engine_cycles: BTreeMap<String, (u64, u64)>,
}

/// Engine classes that count as "the GPU is computing" for a process's GPU %: amdgpu's
/// gfx and compute rings, i915's render and compute, xe's render (rcs) and compute (ccs).
pub const MAIN_ENGINES: &[&str] = &["gfx", "compute", "render", "rcs", "ccs"];
/// Of those, the ones only compute work uses (a process busy only there is `C`).
pub const COMPUTE_ENGINES: &[&str] = &["compute", "ccs"];

/// Parses an fdinfo text; `None` unless it is a DRM file with a driver and a device.
pub fn parse(text: &str) -> Option<DrmClient> {
    let mut c = DrmClient::default();
    // Memory per region from the three spellings, best first: resident (what is in the
    // region now), the legacy drm-memory-, then total (which counts what is allocated).
    let mut regions: BTreeMap<String, [Option<u64>; 3]> = BTreeMap::new();
    let mut capacity: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "drm-driver" {
            c.driver = value.to_string();
        } else if key == "drm-pdev" {
            c.pdev = value.to_string();
        } else if key == "drm-client-id" {
            c.client_id = value.parse().ok();
        } else if let Some(class) = key.strip_prefix("drm-engine-capacity-") {
            if let Ok(n) = value.parse() {
                capacity.insert(class.to_string(), n);
            }
        } else if let Some(class) = key.strip_prefix("drm-engine-") {
            if let Some(ns) = value.strip_suffix("ns").and_then(|v| v.trim().parse().ok()) {
                c.engine_ns.insert(class.to_string(), (ns, 1));
            }
        } else if let Some(class) = key.strip_prefix("drm-total-cycles-") {
            if let Ok(n) = value.parse() {
                c.engine_cycles.entry(class.to_string()).or_default().1 = n;
            }
        } else if let Some(class) = key.strip_prefix("drm-cycles-") {
            if let Ok(n) = value.parse() {
                c.engine_cycles.entry(class.to_string()).or_default().0 = n;
            }
        } else if let Some((rank, region)) = memory_key(key)
            && let Some(bytes) = parse_size(value)
        {
            regions.entry(region.to_string()).or_default()[rank] = Some(bytes);
        }
    }
    if c.driver.is_empty() || c.pdev.is_empty() {
        return None;
    }
    for (class, cap) in capacity {
        if let Some(e) = c.engine_ns.get_mut(&class) {
            e.1 = cap.max(1);
        }
    }
    let device: Vec<u64> = regions
        .iter()
        .filter(|(name, _)| name.starts_with("vram") || name.starts_with("local"))
        .filter_map(|(_, ranks)| ranks.iter().flatten().next().copied())
        .collect();
    c.device_memory = (!device.is_empty()).then(|| device.iter().sum());
    Some(c)
}

/// `drm-resident-vram0` → (0, "vram0"); the rank orders the spellings by preference.
fn memory_key(key: &str) -> Option<(usize, &str)> {
    [("drm-resident-", 0), ("drm-memory-", 1), ("drm-total-", 2)]
        .iter()
        .find_map(|(prefix, rank)| key.strip_prefix(prefix).map(|r| (*rank, r)))
}

/// `1290016 KiB`, `12 MiB` or a plain number of bytes.
fn parse_size(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    let scale = match parts.next() {
        None => 1,
        Some("KiB") => 1 << 10,
        Some("MiB") => 1 << 20,
        Some("GiB") => 1 << 30,
        Some(_) => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMDGPU_6_6: &str = "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1061\n\
        drm-driver:\tamdgpu\ndrm-client-id:\t14\ndrm-pdev:\t0000:03:00.0\npasid:\t32790\n\
        drm-memory-vram:\t1290016 KiB\ndrm-memory-gtt: \t5888 KiB\ndrm-memory-cpu: \t0 KiB\n\
        amd-memory-visible-vram:\t1290016 KiB\ndrm-engine-gfx:\t52458270 ns\n\
        drm-engine-compute:\t0 ns\ndrm-engine-dec:\t0 ns\n";

    #[test]
    fn amdgpu_legacy_memory_keys_give_vram_in_bytes_and_engine_ns() {
        let c = parse(AMDGPU_6_6).unwrap();
        assert_eq!(c.driver, "amdgpu");
        assert_eq!(c.pdev, "0000:03:00.0");
        assert_eq!(c.client_id, Some(14));
        // gtt and cpu are system memory: not counted as VRAM.
        assert_eq!(c.device_memory, Some(1_290_016 * 1024));
        assert_eq!(c.engine_ns["gfx"], (52_458_270, 1));
        assert_eq!(c.engine_ns["compute"], (0, 1));
    }

    #[test]
    fn resident_beats_legacy_beats_total_and_regions_add_up() {
        let text = "drm-driver: xe\ndrm-pdev: 0000:03:00.0\ndrm-total-vram0: 4 MiB\n\
            drm-resident-vram0: 3 MiB\ndrm-total-vram1: 1024\ndrm-total-system: 9 MiB\n";
        let c = parse(text).unwrap();
        assert_eq!(c.device_memory, Some(3 * 1024 * 1024 + 1024));
    }

    #[test]
    fn i915_engine_capacity_and_xe_cycles_are_kept() {
        let i915 = "drm-driver:\ti915\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t7\n\
            drm-engine-render:\t25662044495 ns\ndrm-engine-video:\t10 ns\n\
            drm-engine-capacity-video:\t2\n";
        let c = parse(i915).unwrap();
        assert_eq!(c.engine_ns["render"], (25_662_044_495, 1));
        assert_eq!(c.engine_ns["video"], (10, 2));
        assert_eq!(c.device_memory, None, "no local region named: N/A, not 0");
        let xe = "drm-driver:\txe\ndrm-pdev:\t0000:03:00.0\ndrm-cycles-rcs:\t28257900\n\
            drm-total-cycles-rcs:\t7655183225\n";
        assert_eq!(
            parse(xe).unwrap().engine_cycles["rcs"],
            (28_257_900, 7_655_183_225)
        );
    }

    #[test]
    fn non_drm_files_and_garbage_are_not_clients() {
        assert_eq!(parse("pos:\t0\nflags:\t02\nmnt_id:\t3\n"), None);
        assert_eq!(parse(""), None);
        assert_eq!(
            parse("drm-driver: amdgpu\n"),
            None,
            "no device: cannot be placed"
        );
        let odd = "drm-driver: amdgpu\ndrm-pdev: 0000:03:00.0\ndrm-memory-vram: lots\n\
            drm-engine-gfx: 12 parsecs\n";
        let c = parse(odd).unwrap();
        assert_eq!(c.device_memory, None);
        assert!(c.engine_ns.is_empty());
    }
}
