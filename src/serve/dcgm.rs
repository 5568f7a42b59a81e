//! `--dcgm-compat`: the dcgm-exporter metric names, units and labels that existing Grafana
//! dashboards (e.g. NVIDIA's 12239) query, computed from the same readings. Only `DEV_*`
//! fields NVML gives us; never `DCGM_FI_PROF_*`, which need DCGM's profiling counters.

use std::collections::HashMap;

use crate::source::{GpuId, GpuReading};
use crate::state::State;
use crate::units::{Bytes, Percent};

use super::readings::GpuSeries;
use super::text::{Exposition, Family, Kind, Labels};

const fn field(
    name: &'static str,
    kind: Kind,
    help: &'static str,
    value: fn(&GpuReading) -> Option<f64>,
) -> GpuSeries {
    GpuSeries {
        family: Family { name, kind, help },
        value,
    }
}

fn percent(p: Option<Percent>) -> Option<f64> {
    p.map(|p| f64::from(p.0))
}

/// DCGM reports framebuffer sizes as whole MiB.
fn mib(b: Option<Bytes>) -> Option<f64> {
    b.map(|b| (b.0 / Bytes::MIB) as f64)
}

/// dcgm-exporter's names, types, units and help texts (from its default counters list).
const FIELDS: &[GpuSeries] = &[
    field(
        "DCGM_FI_DEV_SM_CLOCK",
        Kind::Gauge,
        "SM clock frequency (in MHz).",
        |g| g.sm_clock.map(|c| f64::from(c.0)),
    ),
    field(
        "DCGM_FI_DEV_MEM_CLOCK",
        Kind::Gauge,
        "Memory clock frequency (in MHz).",
        |g| g.memory_clock.map(|c| f64::from(c.0)),
    ),
    field(
        "DCGM_FI_DEV_GPU_TEMP",
        Kind::Gauge,
        "GPU temperature (in C).",
        |g| g.temperature.map(|t| f64::from(t.0)),
    ),
    field(
        "DCGM_FI_DEV_POWER_USAGE",
        Kind::Gauge,
        "Power draw (in W).",
        |g| g.power.map(|w| w.0),
    ),
    field(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        Kind::Counter,
        "Total energy consumption since boot (in mJ).",
        |g| g.energy_joules.map(|j| (j * 1000.0).round()),
    ),
    field(
        "DCGM_FI_DEV_GPU_UTIL",
        Kind::Gauge,
        "GPU utilization (in %).",
        |g| percent(g.util),
    ),
    field(
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        Kind::Gauge,
        "Memory utilization (in %).",
        |g| percent(g.memory_util),
    ),
    field(
        "DCGM_FI_DEV_ENC_UTIL",
        Kind::Gauge,
        "Encoder utilization (in %).",
        |g| percent(g.encoder_util),
    ),
    field(
        "DCGM_FI_DEV_DEC_UTIL",
        Kind::Gauge,
        "Decoder utilization (in %).",
        |g| percent(g.decoder_util),
    ),
    field(
        "DCGM_FI_DEV_FB_FREE",
        Kind::Gauge,
        "Framebuffer memory free (in MiB).",
        |g| mib(g.memory_free),
    ),
    field(
        "DCGM_FI_DEV_FB_USED",
        Kind::Gauge,
        "Framebuffer memory used (in MiB).",
        |g| mib(g.memory_used),
    ),
    field(
        "DCGM_FI_DEV_MEMORY_TEMP",
        Kind::Gauge,
        "Memory temperature (in C).",
        |g| g.health.memory_temperature.map(|t| f64::from(t.0)),
    ),
    field(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        Kind::Counter,
        "Total number of PCIe retries.",
        |g| g.health.pcie_replays.map(|n| n as f64),
    ),
    // DCGM's XID field is the latest XID's number, 0 while none arrived.
    field(
        "DCGM_FI_DEV_XID_ERRORS",
        Kind::Gauge,
        "Value of the last XID error encountered.",
        |g| g.health.xid.map(|x| x.last.map_or(0.0, |x| x.code as f64)),
    ),
    field(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        Kind::Counter,
        "Number of remapped rows for uncorrectable errors",
        |g| g.health.remapped_rows.map(|r| r.uncorrectable as f64),
    ),
    field(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        Kind::Counter,
        "Number of remapped rows for correctable errors",
        |g| g.health.remapped_rows.map(|r| r.correctable as f64),
    ),
    field(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        Kind::Gauge,
        "Whether remapping of rows has failed",
        |g| {
            g.health
                .remapped_rows
                .map(|r| f64::from(u8::from(r.failed)))
        },
    ),
];

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
    for series in FIELDS {
        let gpus = state
            .model
            .gpus()
            .iter()
            .filter_map(|g| (series.value)(g).map(|v| (gpu_labels(g), v)));
        // A MIG instance's framebuffer: the GPU's labels plus GPU_I_ID and GPU_I_PROFILE,
        // in the same family (dcgm-exporter's layout).
        let instances = super::mig::dcgm_value(series.family.name)
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
        e.family(series.family, gpus.chain(instances));
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
