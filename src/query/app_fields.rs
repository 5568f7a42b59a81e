//! The `--query-compute-apps` catalogue: one row per field nvidia-smi names for a compute
//! process (name, aliases, unit, getter over the process row and its GPU), and which rows
//! it lists. No formatting of rows here.

use super::gpu_fields::{Ctx, timestamp};
use crate::model::procs::ProcRow;
use crate::reading::{GpuReading, ProcKind, Visibility};
use crate::units::Bytes;

/// One `--query-compute-apps` field.
#[derive(Clone, Copy)]
pub struct AppField {
    /// nvidia-smi's name, which the header shows (`used_gpu_memory` also when asked as
    /// `used_memory`).
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub unit: Option<&'static str>,
    /// The value without its unit; `None` when unknown (`[N/A]`).
    pub get: fn(&Ctx, &ProcRow, &GpuReading) -> Option<String>,
    pub help: &'static str,
}

/// Every `--query-compute-apps` field.
pub const APP_FIELDS: &[AppField] = &[
    AppField {
        name: "timestamp",
        aliases: &[],
        unit: None,
        get: |c, _, _| Some(timestamp(c.time, c.offset)),
        help: "When the sample was taken, local time.",
    },
    AppField {
        name: "gpu_name",
        aliases: &[],
        unit: None,
        get: |_, _, g| Some(g.name.clone()),
        help: "The GPU's product name.",
    },
    AppField {
        name: "gpu_bus_id",
        aliases: &[],
        unit: None,
        get: |_, _, g| g.pci_bus_id.clone(),
        help: "The GPU's PCI bus id.",
    },
    AppField {
        name: "gpu_uuid",
        aliases: &[],
        unit: None,
        get: |_, _, g| g.id.uuid().map(str::to_string),
        help: "The GPU's UUID ([N/A] when the GPU did not give one).",
    },
    AppField {
        name: "pid",
        aliases: &[],
        unit: None,
        get: |_, r, _| Some(r.key.pid.to_string()),
        help: "The process id (the host's, as NVML reports it).",
    },
    AppField {
        name: "process_name",
        aliases: &["name"],
        unit: None,
        get: |_, r, _| process_name(r),
        help: "The process's name: the first word of its command line.",
    },
    AppField {
        name: "used_gpu_memory",
        aliases: &["used_memory"],
        unit: Some("MiB"),
        get: |_, r, _| r.vram.map(|b| (b.0 / Bytes::MIB).to_string()),
        help: "VRAM the process holds on this GPU.",
    },
    AppField {
        name: "gpuwatch.host",
        aliases: &[],
        unit: None,
        get: |_, r, _| r.host.clone(),
        help: "The host the process runs on (--remote).",
    },
    AppField {
        name: "gpuwatch.user",
        aliases: &[],
        unit: None,
        get: |_, r, _| r.user.as_deref().map(str::to_owned),
        help: "The process's user.",
    },
    AppField {
        name: "gpuwatch.job",
        aliases: &[],
        unit: None,
        get: |_, r, _| r.job.clone(),
        help: "Its Slurm job, container or pod.",
    },
];

/// The field `name` stands for (its name or an alias).
pub fn app_field(name: &str) -> Option<&'static AppField> {
    APP_FIELDS
        .iter()
        .find(|f| f.name == name || f.aliases.contains(&name))
}

/// Whether nvidia-smi's compute-apps list has this row: a compute context (graphics-only
/// processes are `--query-graphics-apps`'s, which gpuwatch does not offer).
pub fn listed(r: &ProcRow) -> bool {
    matches!(r.kind, ProcKind::Compute | ProcKind::Both)
}

/// The first word of the command line (argv[0] as the process set it: `VLLM::EngineCore`
/// after setproctitle, `/usr/bin/python3` otherwise); `None` when the host cannot see it.
fn process_name(r: &ProcRow) -> Option<String> {
    if r.visibility != Visibility::Visible {
        return None;
    }
    r.command.split_whitespace().next().map(str::to_string)
}
