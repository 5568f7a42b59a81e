//! One card's readings from sysfs, per vendor: amdgpu's device files (busy %, VRAM, DPM
//! clocks, PCIe link, `unique_id`, `product_name`) and, for both vendors, the card's hwmon
//! (temperature with its critical/emergency limits, power or energy, power cap, fan PWM).
//! What a file does not say stays `None`; Intel's kernel drivers expose no GPU-wide busy %
//! or VRAM use in sysfs, so those are `N/A` there.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::pci_ids;
use super::sysfs::{self, Card, dpm_levels, link_gen, number, text};
use crate::reading::{GpuId, GpuReading, Vendor};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// The previous energy counter reading (joules, when), for power from energy deltas.
pub type EnergyMark = Option<(f64, Instant)>;

/// The GPU's identity: `AMD-<unique_id>` when amdgpu gives one (stable across slots and
/// reboots), otherwise the vendor and PCI address.
pub fn id(card: &Card) -> GpuId {
    let prefix = match card.vendor {
        Vendor::Amd => "AMD",
        Vendor::Intel => "INTEL",
        Vendor::Nvidia => "NVIDIA",
    };
    match text(&card.device().join("unique_id")) {
        Some(uid) => GpuId(format!("{prefix}-{uid}")),
        None => GpuId(format!("{prefix}-{}", card.pci_slot)),
    }
}

/// `product_name` (amdgpu reads it from the board's FRU), else the name the PCI ID
/// database `db` gives the card (`Radeon RX 7900 XTX`, `Arc A770`), else the vendor and
/// PCI device id. Read once per card: the database is a file of a megabyte or more.
pub fn name(card: &Card, db: &[PathBuf]) -> String {
    let dev = card.device();
    if let Some(n) = text(&dev.join("product_name")) {
        return n;
    }
    let hex = |f: &str| {
        let t = text(&dev.join(f))?;
        u16::from_str_radix(t.trim_start_matches("0x"), 16).ok()
    };
    if let (Some(vendor), Some(device)) = (hex("vendor"), hex("device")) {
        let subsystem = hex("subsystem_vendor").zip(hex("subsystem_device"));
        let ids = pci_ids::Ids {
            vendor,
            device,
            subsystem,
        };
        if let Some(n) = pci_ids::name(db, ids) {
            return n;
        }
    }
    let device = text(&dev.join("device")).unwrap_or_else(|| "?".into());
    match card.vendor {
        Vendor::Amd => format!("AMD GPU {device}"),
        Vendor::Intel => format!("Intel GPU {device}"),
        Vendor::Nvidia => format!("NVIDIA GPU {device}"),
    }
}

/// Everything sysfs says about `card`, with `index` its place among this source's GPUs and
/// `name` what [`name`] called it. `energy` is its previous energy reading, updated here.
pub fn read(
    card: &Card,
    index: u32,
    name: String,
    energy: &mut EnergyMark,
    now: Instant,
) -> GpuReading {
    let mut g = GpuReading::absent(id(card), index, name);
    g.vendor = Some(card.vendor);
    g.pci_bus_id = Some(card.pci_slot.clone());
    let dev = card.device();
    g.pcie_link_gen = link_gen(&dev.join("current_link_speed"));
    g.pcie_link_width = number(&dev.join("current_link_width")).map(|w| w as u32);
    match card.vendor {
        Vendor::Amd => amd(&mut g, &dev),
        Vendor::Intel => intel_clocks(&mut g, card),
        Vendor::Nvidia => {}
    }
    if let Some(hw) = sysfs::hwmon(card) {
        hwmon(&mut g, &hw, energy, now);
    }
    g
}

fn amd(g: &mut GpuReading, dev: &Path) {
    let pct = |f: &str| number(&dev.join(f)).map(|p| Percent(p.min(100) as u32));
    g.util = pct("gpu_busy_percent");
    g.memory_util = pct("mem_busy_percent");
    g.memory_total = number(&dev.join("mem_info_vram_total")).map(Bytes);
    g.memory_used = number(&dev.join("mem_info_vram_used")).map(Bytes);
    let (sclk, sclk_max) = dpm_levels(&dev.join("pp_dpm_sclk"));
    let (mclk, mclk_max) = dpm_levels(&dev.join("pp_dpm_mclk"));
    g.sm_clock = sclk.map(MegaHertz);
    g.sm_clock_max = sclk_max.map(MegaHertz);
    g.memory_clock = mclk.map(MegaHertz);
    g.memory_clock_max = mclk_max.map(MegaHertz);
    graphics_is_shader_clock(g);
}

/// AMD's SCLK and Intel's GT frequency are the clock that runs the shaders: what nvidia-smi
/// calls the graphics clock (`clocks.gr`) and gpuwatch also shows as the SM clock, so both
/// names answer with the one reading.
fn graphics_is_shader_clock(g: &mut GpuReading) {
    g.graphics_clock = g.sm_clock;
    g.graphics_clock_max = g.sm_clock_max;
}

/// i915 puts its GT frequencies on the card (`gt_act_freq_mhz`, `gt_RP0_freq_mhz`); xe
/// under `device/tile0/gt0/freq0/` (`act_freq`, `max_freq`).
fn intel_clocks(g: &mut GpuReading, card: &Card) {
    let xe = card.device().join("tile0/gt0/freq0");
    let mhz = |p: &Path| number(p).map(|v| MegaHertz(v as u32));
    g.sm_clock = mhz(&card.dir.join("gt_act_freq_mhz")).or_else(|| mhz(&xe.join("act_freq")));
    g.sm_clock_max = mhz(&card.dir.join("gt_RP0_freq_mhz")).or_else(|| mhz(&xe.join("max_freq")));
    graphics_is_shader_clock(g);
}

/// hwmon units: millidegrees, microwatts, microjoules; `pwm1` is 0..`pwm1_max` (255).
fn hwmon(g: &mut GpuReading, hw: &Path, energy: &mut EnergyMark, now: Instant) {
    let milli_c = |f: String| number(&hw.join(f)).map(|m| Celsius((m / 1000) as u32));
    if let Some(n) = sysfs::temperature_sensor(hw) {
        g.temperature = milli_c(format!("temp{n}_input"));
        // amdgpu: `_crit` is where the firmware starts throttling, `_emergency` where it
        // shuts down; NVML's slowdown and shutdown thresholds mean the same.
        g.temperature_slowdown = milli_c(format!("temp{n}_crit"));
        g.temperature_shutdown = milli_c(format!("temp{n}_emergency"));
    }
    let watts = |f: &str| number(&hw.join(f)).map(|uw| Watts(uw as f64 / 1e6));
    g.power = watts("power1_average").or_else(|| watts("power1_input"));
    g.power_limit = watts("power1_cap").or_else(|| watts("power1_max"));
    let joules = number(&hw.join("energy1_input")).map(|uj| uj as f64 / 1e6);
    g.energy_joules = joules;
    if g.power.is_none()
        && let (Some(j), Some((prev, then))) = (joules, *energy)
        && let Some(dt) = now.checked_duration_since(then).filter(|d| !d.is_zero())
        && j >= prev
    {
        g.power = Some(Watts((j - prev) / dt.as_secs_f64()));
    }
    *energy = joules.map(|j| (j, now));
    if let Some(pwm) = number(&hw.join("pwm1")) {
        let max = number(&hw.join("pwm1_max"))
            .filter(|&m| m > 0)
            .unwrap_or(255);
        g.fan = Some(Percent(((pwm.min(max) * 100 + max / 2) / max) as u32));
    }
}
