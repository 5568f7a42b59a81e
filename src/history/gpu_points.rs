//! The GPU detail view's series: one ring of whole readings per GPU (utilisation, memory
//! utilisation, VRAM, temperature, power, clocks, PCIe traffic), beside the panel's own
//! rings in `GpuHistory` rather than in them, so the panels' sparklines and these charts
//! can change independently. Storage only; `f32` keeps a point at 88 bytes (a chart
//! needs no more precision), `None` is a gap.

use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

use super::Ring;
use crate::source::{GpuId, GpuReading};

/// One GPU reading as the detail charts draw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuPoint {
    pub at: SystemTime,
    pub util: Option<f32>,
    pub memory_util: Option<f32>,
    /// Bytes.
    pub vram_used: Option<f32>,
    pub temperature: Option<f32>,
    pub power: Option<f32>,
    pub sm_clock: Option<f32>,
    pub memory_clock: Option<f32>,
    /// Bytes per second.
    pub pcie_tx: Option<f32>,
    pub pcie_rx: Option<f32>,
}

impl GpuPoint {
    pub fn of(at: SystemTime, g: &GpuReading) -> GpuPoint {
        GpuPoint {
            at,
            util: g.util.map(|p| p.0 as f32),
            memory_util: g.memory_util.map(|p| p.0 as f32),
            vram_used: g.memory_used.map(|b| b.0 as f32),
            temperature: g.temperature.map(|c| c.0 as f32),
            power: g.power.map(|w| w.0 as f32),
            sm_clock: g.sm_clock.map(|m| m.0 as f32),
            memory_clock: g.memory_clock.map(|m| m.0 as f32),
            pcie_tx: g.pcie_tx_per_second.map(|b| b.0 as f32),
            pcie_rx: g.pcie_rx_per_second.map(|b| b.0 as f32),
        }
    }
}

/// Every present GPU's ring of points, keyed by UUID.
#[derive(Debug, Clone, Default)]
pub struct GpuPoints {
    map: HashMap<GpuId, Ring<GpuPoint>>,
}

impl GpuPoints {
    /// Pushes one sample's readings; GPUs that left are forgotten (bounded by the fleet).
    pub fn record(&mut self, now: SystemTime, gpus: &[GpuReading], capacity: usize) {
        let present: HashSet<&GpuId> = gpus.iter().map(|g| &g.id).collect();
        self.map.retain(|id, _| present.contains(id));
        for g in gpus {
            self.map
                .entry(g.id.clone())
                .or_insert_with(|| Ring::new(capacity))
                .push(GpuPoint::of(now, g));
        }
    }

    pub fn get(&self, id: &GpuId) -> Option<&Ring<GpuPoint>> {
        self.map.get(id)
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{MegaHertz, Percent};
    use std::time::Duration;

    #[test]
    fn points_follow_the_fleet_and_keep_gaps() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let mut a = GpuReading::absent(GpuId("a".into()), 0, "g");
        a.util = Some(Percent(0));
        a.sm_clock = Some(MegaHertz(1410));
        let b = GpuReading::absent(GpuId("b".into()), 1, "g");
        let mut p = GpuPoints::default();
        p.record(t, &[a.clone(), b], 3);
        let pa = p.get(&a.id).unwrap().latest().unwrap();
        assert_eq!(pa.util, Some(0.0), "a real zero");
        assert_eq!(pa.memory_util, None, "absent stays absent");
        assert_eq!(pa.sm_clock, Some(1410.0));
        p.record(t, &[a.clone()], 3);
        assert!(
            p.get(&GpuId("b".into())).is_none(),
            "a GPU that left is forgotten"
        );
        for _ in 0..5 {
            p.record(t, &[a.clone()], 3);
        }
        assert_eq!(p.get(&a.id).unwrap().len(), 3);
    }
}
