//! `--dcgm-compat`: the dcgm-exporter metric names, units and labels that existing Grafana
//! dashboards (e.g. NVIDIA's 12239) query, computed from the same readings. Only `DEV_*`
//! fields NVML gives us; never `DCGM_FI_PROF_*`, which need DCGM's profiling counters.

use std::collections::HashMap;

use crate::reading::fields::{self, Key};
use crate::reading::{GpuId, GpuReading};
use crate::state::State;

use super::text::{Exposition, Family, Labels};

/// The fields `--dcgm-compat` writes, in dcgm-exporter's default-counters order (the
/// names, scales, types and help texts are the field table's `dcgm` column).
const ORDER: [Key; 18] = [
    Key::SmClock,
    Key::MemoryClock,
    Key::Temperature,
    Key::Power,
    Key::EnergyJoules,
    Key::Util,
    Key::MemoryUtil,
    Key::EncoderUtil,
    Key::DecoderUtil,
    Key::MemoryFree,
    Key::MemoryUsed,
    Key::MemoryReserved,
    Key::MemoryTemperature,
    Key::PcieReplays,
    Key::DcgmXid,
    Key::RemappedUncorrectable,
    Key::RemappedCorrectable,
    Key::RemappedFailed,
];

/// One written DCGM family and its value for a GPU, in DCGM's unit.
fn series(key: Key) -> Option<(Family, impl Fn(&GpuReading) -> Option<f64>)> {
    let field = fields::field(key);
    let dcgm = field.dcgm?;
    let (kind, help) = dcgm.written?;
    let family = Family {
        name: dcgm.name,
        kind,
        help,
    };
    Some((family, move |g: &GpuReading| {
        (field.get)(g).map(|v| dcgm.scale.to_dcgm(v))
    }))
}

pub(super) fn render(e: &mut Exposition, state: &State, pods: &HashMap<GpuId, Labels>) {
    // A GPU watched on another host (`--remote`) carries that host's name.
    let host = |g: &GpuReading| {
        g.host
            .clone()
            .unwrap_or_else(|| state.model.host().hostname.clone())
    };
    let driver = state.model.host().driver_version.clone();
    // dcgm-exporter adds the pod a GPU is allocated to; so do we, when one pod holds it.
    let gpu_labels = |g: &GpuReading| {
        let mut l = labels(g, &host(g));
        // dcgm-exporter's `DCGM_FI_DRIVER_VERSION` label (its name for the driver version).
        l.extend(driver.clone().map(|v| ("DCGM_FI_DRIVER_VERSION", v)));
        l.extend(pods.get(&g.id).cloned().unwrap_or_default());
        l
    };
    for (family, value) in ORDER.into_iter().filter_map(series) {
        let gpus = state
            .model
            .gpus()
            .iter()
            .filter_map(|g| value(g).map(|v| (gpu_labels(g), v)));
        // A MIG instance's framebuffer: the GPU's labels plus GPU_I_ID and GPU_I_PROFILE,
        // in the same family (dcgm-exporter's layout).
        let instances = super::mig::dcgm_value(family.name)
            .into_iter()
            .flat_map(|value| {
                super::mig::samples(state, value, |g, m| {
                    let mut l = gpu_labels(g);
                    l.extend(super::mig::instance_labels(
                        m.gpu_instance_id,
                        m.profile.as_deref(),
                    ));
                    l
                })
            });
        e.family(family, gpus.chain(instances));
    }
}

/// dcgm-exporter's label set: `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`,
/// `Hostname` (its spelling; dashboards filter on these).
fn labels(g: &GpuReading, hostname: &str) -> Labels {
    let mut labels = vec![("gpu", g.index.to_string()), ("UUID", g.id.0.clone())];
    if let Some(bus) = &g.pci_bus_id {
        labels.push(("pci_bus_id", bus.clone()));
    }
    labels.extend([
        ("device", format!("nvidia{}", g.index)),
        ("modelName", g.name.clone()),
        ("Hostname", hostname.to_string()),
    ]);
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order list names each field the table says `--dcgm-compat` writes, once: a row
    /// given a written DCGM name is not silently left out of the output.
    #[test]
    fn the_order_is_every_written_dcgm_field_once() {
        let written: Vec<Key> = fields::TABLE
            .iter()
            .filter(|f| f.dcgm.is_some_and(|d| d.written.is_some()))
            .map(|f| f.key)
            .collect();
        assert_eq!(written.len(), ORDER.len());
        for key in ORDER {
            assert!(written.contains(&key), "{key:?} is not written");
            assert_eq!(ORDER.iter().filter(|k| **k == key).count(), 1, "{key:?}");
        }
    }
}
