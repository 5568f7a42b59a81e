//! What each Prometheus series means for a GPU: every numeric reading comes from the field
//! table (`reading::fields`: gpuwatch's own `gpuwatch_gpu_*` names in base units and
//! dcgm-exporter's `DCGM_FI_DEV_*` with their scale), so every series the exporter writes is
//! read back; identity, the lost flag and MIG instances are the few structured series named
//! here. A GPU's identity comes from the labels (`uuid`/`UUID`, `gpu`, `name`/`modelName`,
//! host from `host`, `Hostname` or `instance`). Pure. A field no series gives stays `None`:
//! never invented.

use super::api::Labels;

use crate::reading::fields::{self, Field, Key, Scale, Spelling};
use crate::reading::{GpuReading, GpuStatus, Vendor};

/// A MIG instance's memory figure (see `prometheus::mig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigMemory {
    Total,
    Used,
    Free,
}

/// What a known series is about.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `gpuwatch_gpu_info`: identity labels only.
    Info,
    /// `gpuwatch_gpu_lost`: 1 when the GPU fell off the bus.
    Lost,
    /// `gpuwatch_mig_memory_*_bytes`: only ever an instance's.
    Mig(MigMemory),
    /// A numeric reading: a row of the field table, in either exporter's spelling.
    Reading(&'static Field),
}

/// A series gpuwatch knows: what it is about and how its value reads in base units.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub target: Target,
    spelling: Spelling,
}

impl Metric {
    /// The series' value in the base unit of its field (bytes, ratio, hertz, joules...).
    pub fn base(&self, value: f64) -> f64 {
        match self.spelling {
            Spelling::Native => value,
            Spelling::Dcgm(scale) => scale.from_dcgm(value),
        }
    }

    /// The MIG instance memory figure this series gives when it carries `GPU_I_ID`
    /// (dcgm-exporter writes an instance's framebuffer under the GPU's names).
    pub fn mig_memory(&self) -> Option<MigMemory> {
        match self.target {
            Target::Mig(m) => Some(m),
            Target::Reading(f) => match f.key {
                Key::MemoryTotal => Some(MigMemory::Total),
                Key::MemoryUsed => Some(MigMemory::Used),
                Key::MemoryFree => Some(MigMemory::Free),
                _ => None,
            },
            Target::Info | Target::Lost => None,
        }
    }
}

/// The series that are not one numeric reading: identity, the lost flag, MIG instances.
const STRUCTURED: [(&str, Target); 5] = [
    ("gpuwatch_gpu_info", Target::Info),
    ("gpuwatch_gpu_lost", Target::Lost),
    (
        "gpuwatch_mig_memory_total_bytes",
        Target::Mig(MigMemory::Total),
    ),
    (
        "gpuwatch_mig_memory_used_bytes",
        Target::Mig(MigMemory::Used),
    ),
    (
        "gpuwatch_mig_memory_free_bytes",
        Target::Mig(MigMemory::Free),
    ),
];

/// The metric a series name is, if gpuwatch reads it: the structured series, then every
/// field table row that can be read back (gpuwatch's exporter, then dcgm-exporter's names).
pub fn metric(name: &str) -> Option<Metric> {
    if let Some((_, target)) = STRUCTURED.iter().find(|(n, _)| *n == name) {
        return Some(Metric {
            target: *target,
            spelling: Spelling::Native,
        });
    }
    let (field, spelling) = fields::by_metric(name)?;
    field.set?;
    Some(Metric {
        target: Target::Reading(field),
        spelling,
    })
}

/// The regex alternation of every known name, for one instant query that fetches them all.
pub fn names_regex() -> String {
    let names: Vec<&str> = STRUCTURED
        .iter()
        .map(|(n, _)| *n)
        .chain(fields::metric_names())
        .filter(|n| metric(n).is_some())
        .collect();
    names.join("|")
}

/// The GPU a series is about, from its labels; `None` when it names no UUID (a series that
/// cannot be placed is left out rather than given a made-up identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uuid: String,
    pub index: Option<u32>,
    pub name: Option<String>,
    /// gpuwatch's `vendor` label (`None` when absent or a vendor this build does not know).
    pub vendor: Option<Vendor>,
    /// Named the dcgm-exporter way (`UUID`): NVIDIA's, unless a `vendor` label says more
    /// (gpuwatch's `--dcgm-compat` writes those names for every vendor's GPUs).
    pub dcgm: bool,
    /// `host` (a gpuwatch watching others) or `Hostname` (dcgm-exporter); `None`: only the
    /// scrape target (`instance`) says where it is.
    pub host: Option<String>,
    pub instance: Option<String>,
}

pub fn identity(labels: &Labels) -> Option<Identity> {
    let get = |k: &str| labels.get(k).filter(|v| !v.is_empty()).cloned();
    Some(Identity {
        uuid: get("uuid").or_else(|| get("UUID"))?,
        index: get("gpu").and_then(|g| g.parse().ok()),
        name: get("name").or_else(|| get("modelName")),
        vendor: get("vendor").as_deref().and_then(Vendor::from_name),
        dcgm: get("uuid").is_none(),
        host: get("host").or_else(|| get("Hostname")),
        instance: get("instance"),
    })
}

/// Applies a GPU series' value (in base units, see [`Metric::base`]) to its GPU.
pub fn set(g: &mut GpuReading, target: Target, value: f64) {
    match target {
        Target::Reading(field) => {
            if let Some(set) = field.set {
                set(g, value);
            }
        }
        Target::Lost => {
            if value != 0.0 {
                g.status = GpuStatus::Lost;
            }
        }
        // Instance series go to `prometheus::mig`, never to the GPU.
        Target::Info | Target::Mig(_) => {}
    }
}

/// dcgm-exporter has no total: NVML's total is used + free + reserved (the v2 memory info),
/// so it is derived from those when the GPU reported them and no total series came.
pub fn derive_total(g: &mut GpuReading) {
    if g.memory_total.is_none()
        && let (Some(used), Some(free)) = (g.memory_used, g.memory_free)
    {
        g.memory_total = Some(used + free + g.memory_reserved.unwrap_or_default());
    }
}

/// One charted field's history as one PromQL expression that gives both exporters' series in
/// base units (so one range query per charted field, for every GPU), with the selector's
/// matchers inside each metric's braces: `native{sel} or DCGM{sel} * k`.
pub fn history_query(field: &Field, matchers: &str) -> Option<String> {
    let native = field.native.map(|n| n.name.to_string());
    let dcgm = field.dcgm.map(|d| match d.scale {
        Scale::Same => d.name.to_string(),
        Scale::Times(k) => format!("{} / {k}", d.name),
        Scale::Per(k) => format!("{} * {k}", d.name),
    });
    let parts: Vec<String> = native
        .into_iter()
        .chain(dcgm)
        .map(|e| format!("({})", with_matchers(&e, matchers)))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" or "))
}

/// `name * 100` → `name{m} * 100`: the matchers go right after the metric name.
fn with_matchers(expr: &str, matchers: &str) -> String {
    if matchers.is_empty() {
        return expr.to_string();
    }
    match expr.split_once(' ') {
        Some((name, rest)) => format!("{name}{{{matchers}}} {rest}"),
        None => format!("{expr}{{{matchers}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_known_once() {
        let regex = names_regex();
        let names: Vec<&str> = regex.split('|').collect();
        for n in &names {
            assert_eq!(names.iter().filter(|o| *o == n).count(), 1, "{n}");
        }
        assert_eq!(
            metric("DCGM_FI_DEV_FB_USED").unwrap().base(2.0),
            2.0 * 1_048_576.0
        );
        assert!(metric("node_cpu_seconds_total").is_none());
        // Written for dashboards, never read back (it has no time; see the field table).
        assert!(metric("DCGM_FI_DEV_XID_ERRORS").is_none());
    }

    #[test]
    fn history_queries_carry_the_selector_and_give_base_units() {
        let util = fields::field(Key::Util);
        assert_eq!(
            history_query(util, r#"cluster="x""#).unwrap(),
            r#"(gpuwatch_gpu_utilization_ratio{cluster="x"}) or (DCGM_FI_DEV_GPU_UTIL{cluster="x"} / 100)"#
        );
        assert_eq!(
            history_query(fields::field(Key::MemoryUsed), "").unwrap(),
            "(gpuwatch_gpu_memory_used_bytes) or (DCGM_FI_DEV_FB_USED * 1048576)"
        );
        assert_eq!(
            history_query(fields::field(Key::PcieTx), "").unwrap(),
            "(gpuwatch_gpu_pcie_transmit_bytes_per_second)"
        );
    }
}
