//! Health warnings from a GPU's health readings (`source::health`): XID errors, remapped
//! rows and retired pages, growth of the PCIe replay and corrected-ECC counters, and clocks
//! held down by the hardware (HW slowdown, power brake). Pure, like the rest of `warnings`:
//! the previous `HealthMemory` goes in, the next comes out; no clock but `now`.
//!
//! An XID is an event, not a level: its warning stays up for `XID_HOLD` after the latest
//! one so nobody misses it between two glances. Counter growth likewise holds for
//! `GROWTH_HOLD` after the counter last grew.

use std::time::{Duration, SystemTime};

use super::warnings::{Severity, WarningKind};
use crate::reading::GpuReading;
use crate::reading::throttle::ThrottleReason;

/// How long an XID keeps its GPU's warning up after it arrived.
pub const XID_HOLD: Duration = Duration::from_secs(10 * 60);
/// How long counter growth (PCIe replays, corrected ECC) stays a warning after the last rise.
pub const GROWTH_HOLD: Duration = Duration::from_secs(5 * 60);
/// How long the hardware must hold the clocks down before it is a warning (a brief brake
/// during a power transient is normal).
pub const SLOWDOWN_HOLD: Duration = Duration::from_secs(30);

/// The clock reasons that mean the hardware itself stepped in (thermal slowdown is the
/// overheating warning's).
const HW_REASONS: [ThrottleReason; 2] = [
    ThrottleReason::HwSlowdown,
    ThrottleReason::HwPowerBrakeSlowdown,
];

/// What one growing counter looked like at the last sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Growth {
    /// The counter's last value.
    last: Option<u64>,
    /// When it last rose, and by how much in this spell of growth.
    grew_at: Option<SystemTime>,
    grown: u64,
}

impl Growth {
    /// The next state for `value` at `now`, and the growth in the current spell when it is
    /// still within `GROWTH_HOLD` of the last rise.
    fn step(&self, value: Option<u64>, now: SystemTime) -> (Growth, Option<u64>) {
        let Some(value) = value else {
            return (Growth::default(), None);
        };
        let mut next = *self;
        next.last = Some(value);
        // A smaller value is a counter reset (driver reload): a new baseline, not growth.
        if let Some(last) = self.last.filter(|&l| value > l) {
            next.grown += value - last;
            next.grew_at = Some(now);
        }
        let holding = next
            .grew_at
            .is_some_and(|at| now.duration_since(at).unwrap_or_default() < GROWTH_HOLD);
        if !holding {
            next.grew_at = None;
            next.grown = 0;
        }
        (next, holding.then_some(next.grown))
    }
}

/// Per-GPU memory the health warnings need between samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HealthMemory {
    replays: Growth,
    ecc_corrected: Growth,
    /// Since when each of `HW_REASONS` has held the clocks down.
    slowdown_since: [Option<SystemTime>; 2],
}

/// The health warnings of one GPU now, with their severities.
pub fn evaluate(
    prev: &HealthMemory,
    gpu: &GpuReading,
    now: SystemTime,
    alarm: &mut HealthMemory,
) -> Vec<(Severity, WarningKind)> {
    let h = &gpu.health;
    let mut out = Vec::new();
    if let Some(xid) = h.xid
        && let Some(last) = xid.last
    {
        let ago = now.duration_since(last.at).unwrap_or_default();
        if ago < XID_HOLD {
            out.push((
                Severity::Critical,
                WarningKind::Xid {
                    code: last.code,
                    count: xid.count,
                    ago,
                },
            ));
        }
    }
    if let Some(r) = h.remapped_rows.filter(|r| r.failed || r.pending) {
        let severity = if r.failed {
            Severity::Critical
        } else {
            Severity::Warning
        };
        out.push((severity, WarningKind::RemappedRows(r)));
    }
    if let Some(p) = h.retired_pages.filter(|p| p.pending) {
        out.push((Severity::Warning, WarningKind::RetiredPages(p)));
    }
    let (replays, grown) = prev.replays.step(h.pcie_replays, now);
    alarm.replays = replays;
    if let (Some(growth), Some(total)) = (grown, h.pcie_replays) {
        out.push((
            Severity::Warning,
            WarningKind::PcieReplays { total, growth },
        ));
    }
    let (ecc, grown) = prev.ecc_corrected.step(h.ecc_corrected, now);
    alarm.ecc_corrected = ecc;
    if let (Some(growth), Some(total)) = (grown, h.ecc_corrected) {
        out.push((
            Severity::Warning,
            WarningKind::EccCorrected { total, growth },
        ));
    }
    out.extend(slowdowns(prev, gpu, now, alarm));
    out
}

/// HW slowdown / power brake held for `SLOWDOWN_HOLD` or longer, one warning per reason.
fn slowdowns(
    prev: &HealthMemory,
    gpu: &GpuReading,
    now: SystemTime,
    alarm: &mut HealthMemory,
) -> Vec<(Severity, WarningKind)> {
    let mut out = Vec::new();
    for (i, reason) in HW_REASONS.iter().enumerate() {
        let active = gpu
            .throttle_reasons
            .as_ref()
            .is_some_and(|rs| rs.contains(reason));
        alarm.slowdown_since[i] = active.then(|| prev.slowdown_since[i].unwrap_or(now));
        let Some(since) = alarm.slowdown_since[i] else {
            continue;
        };
        let held_for = now.duration_since(since).unwrap_or_default();
        if held_for >= SLOWDOWN_HOLD {
            out.push((
                Severity::Warning,
                WarningKind::HwSlowdown {
                    reason: reason.clone(),
                    held_for,
                },
            ));
        }
    }
    out
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
