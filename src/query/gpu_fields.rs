//! The `--query-gpu` catalogue: one row per field nvidia-smi names (its name, its aliases, the
//! unit its CSV header and values carry) and where gpuwatch reads it. Every numeric reading
//! comes from the field table, names and all (a row's `smi` part: a new reading needs no
//! edit here); this file holds the rest, small functions for identities, enums and
//! gpuwatch's own `gpuwatch.*` extras. No formatting of rows here.

use std::time::SystemTime;

use crate::model::Model;
use crate::model::owners::{is_free, owners};
use crate::reading::GpuReading;
use crate::reading::fields::{self, Key};

/// What a field needs besides the GPU: the model (owners, warnings), when the sample was
/// taken and in which time zone to write it, and how many GPUs the query shows.
pub struct Ctx<'a> {
    pub model: &'a Model,
    pub time: SystemTime,
    pub offset: chrono::FixedOffset,
    pub count: usize,
}

pub use crate::reading::fields::Shown;

/// Where a field's value comes from.
#[derive(Clone, Copy)]
pub enum Get {
    Table(Key, Shown),
    /// Text; `None` when the source could not tell (`[N/A]`).
    Other(fn(&Ctx, &GpuReading) -> Option<String>),
}

/// One `--query-gpu` field.
#[derive(Clone, Copy)]
pub struct GpuField {
    /// nvidia-smi's name, which the header always shows (also when asked by an alias).
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// The unit in the header (`memory.used [MiB]`) and after each value (`58071 MiB`).
    pub unit: Option<&'static str>,
    pub get: Get,
    /// What the field is, for `docs/query.md` and the error listing fields.
    pub help: &'static str,
}

const fn other(
    name: &'static str,
    aliases: &'static [&'static str],
    get: fn(&Ctx, &GpuReading) -> Option<String>,
    help: &'static str,
) -> GpuField {
    GpuField {
        name,
        aliases,
        unit: None,
        get: Get::Other(get),
        help,
    }
}

/// The unit nvidia-smi writes a field-table reading in (`memory.used [MiB]`, `58071 MiB`).
pub const fn unit(shown: Shown) -> Option<&'static str> {
    match shown {
        Shown::MiB => Some("MiB"),
        Shown::Percent => Some("%"),
        Shown::Watts => Some("W"),
        Shown::MHz => Some("MHz"),
        Shown::Whole | Shown::Pstate => None,
    }
}

/// Every `--query-gpu` field, in the order `docs/query.md` lists them: the identities, the
/// field table's readings in table order, then modes and gpuwatch's extras.
pub const GPU_FIELDS: &[GpuField] = &catalogue();

/// Who the GPU is. One row a line: a table reads down better than rustfmt's one argument a
/// line.
#[rustfmt::skip]
const IDENTITY: &[GpuField] = &[
    other("timestamp", &[], |c, _| Some(timestamp(c.time, c.offset)), "When the sample was taken, local time: 2026/12/02 07:10:00.123."),
    other("driver_version", &[], |c, _| c.model.host().driver_version.clone(), "The driver's version."),
    other("count", &[], |c, _| Some(c.count.to_string()), "How many GPUs the query shows."),
    other("name", &["gpu_name"], |_, g| Some(g.name.clone()), "The GPU's product name."),
    other("index", &[], |_, g| Some(g.index.to_string()), "The GPU's index on its host (PCI bus order)."),
    other("uuid", &["gpu_uuid"], |_, g| g.id.uuid().map(str::to_string), "The GPU's UUID (GPU-…; AMD-…/INTEL-… for the DRM sources; [N/A] when the GPU did not give one)."),
    other("pci.bus_id", &["gpu_bus_id"], |_, g| g.pci_bus_id.clone(), "PCI bus id, domain:bus:device.function."),
];

/// Modes nvidia-smi writes as words, and gpuwatch's own fields.
#[rustfmt::skip]
const EXTRAS: &[GpuField] = &[
    other("compute_mode", &[], |_, g| g.compute_mode.map(|m| m.nvidia_smi_name().into()), "Default, Exclusive_Process, Prohibited or Exclusive_Thread."),
    other("persistence_mode", &[], |_, g| g.persistence_mode.map(|on| enabled(on).into()), "Enabled or Disabled."),
    other("mig.mode.current", &[], |_, g| g.mig_enabled.map(|on| enabled(on).into()), "Enabled or Disabled."),
    other("gpuwatch.host", &[], |_, g| g.host.clone(), "The host the GPU is on (--remote, --prometheus)."),
    other("gpuwatch.vendor", &[], |_, g| g.vendor.map(|v| v.name().into()), "nvidia, amd or intel."),
    other("gpuwatch.owners", &[], |c, g| Some(list(owners(c.model, g).iter().map(|(o, _)| o.clone()))), "Who holds VRAM on it (jobs or users), largest first, ';'-separated."),
    other("gpuwatch.user", &[], |c, g| Some(list(of_rows(c, g, |r| r.user.as_deref().map(str::to_owned)))), "Users with a process on it, ';'-separated."),
    other("gpuwatch.job", &[], |c, g| Some(list(of_rows(c, g, |r| r.job.clone()))), "Jobs (Slurm, container, pod) with a process on it, ';'-separated."),
    other("gpuwatch.free", &[], |c, g| Some(yes_no(is_free(c.model, g)).into()), "yes when nobody uses it (the GPUs --once calls free), else no."),
    other("gpuwatch.warnings", &[], |c, g| Some(list(warnings(c, g))), "Its warning kinds (docs/json.md's names), ';'-separated."),
];

/// How many `--query-gpu` names the field table gives.
const fn table_len() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < fields::TABLE.len() {
        n += fields::TABLE[i].smi.len();
        i += 1;
    }
    n
}

const LEN: usize = IDENTITY.len() + table_len() + EXTRAS.len();

/// The three parts as one list (a const, as the field table is: no copy at run time).
const fn catalogue() -> [GpuField; LEN] {
    let mut out = [IDENTITY[0]; LEN];
    let mut n = 0;
    let mut i = 0;
    while i < IDENTITY.len() {
        out[n] = IDENTITY[i];
        n += 1;
        i += 1;
    }
    let mut row = 0;
    while row < fields::TABLE.len() {
        let f = &fields::TABLE[row];
        let mut j = 0;
        while j < f.smi.len() {
            let smi = &f.smi[j];
            out[n] = GpuField {
                name: smi.name,
                aliases: smi.aliases,
                unit: unit(smi.shown),
                get: Get::Table(f.key, smi.shown),
                help: smi.help,
            };
            n += 1;
            j += 1;
        }
        row += 1;
    }
    let mut k = 0;
    while k < EXTRAS.len() {
        out[n] = EXTRAS[k];
        n += 1;
        k += 1;
    }
    out
}

/// The field `name` stands for (its name or an alias).
pub fn gpu_field(name: &str) -> Option<&'static GpuField> {
    GPU_FIELDS
        .iter()
        .find(|f| f.name == name || f.aliases.contains(&name))
}

/// A field-table reading in nvidia-smi's unit, without the unit; `None` when absent.
pub fn shown(key: Key, shown: Shown, g: &GpuReading) -> Option<String> {
    let v = (fields::field(key).get)(g)?;
    Some(match shown {
        Shown::MiB => ((v / 1_048_576.0).floor() as u64).to_string(),
        Shown::Percent => ((v * 100.0).round() as i64).to_string(),
        Shown::Watts => format!("{v:.2}"),
        Shown::MHz => ((v / 1e6).round() as u64).to_string(),
        Shown::Whole => (v.round() as i64).to_string(),
        Shown::Pstate => format!("P{}", v.round() as u32),
    })
}

/// nvidia-smi's timestamp: local time to the millisecond, `2026/12/02 07:10:00.123`.
pub fn timestamp(time: SystemTime, offset: chrono::FixedOffset) -> String {
    chrono::DateTime::<chrono::Utc>::from(time)
        .with_timezone(&offset)
        .format("%Y/%m/%d %H:%M:%S%.3f")
        .to_string()
}

pub fn enabled(on: bool) -> &'static str {
    if on { "Enabled" } else { "Disabled" }
}

fn yes_no(on: bool) -> &'static str {
    if on { "yes" } else { "no" }
}

/// Distinct values in first-seen order, `;`-separated: a comma would split the CSV cell.
fn list(values: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(";")
}

/// One fact of each process row on this GPU that has it.
fn of_rows<'a>(
    c: &'a Ctx,
    g: &'a GpuReading,
    fact: impl Fn(&crate::model::procs::ProcRow) -> Option<String> + 'a,
) -> impl Iterator<Item = String> + 'a {
    c.model
        .procs()
        .all
        .iter()
        .filter(move |r| r.key.gpu == g.id)
        .filter_map(fact)
}

fn warnings<'a>(c: &'a Ctx, g: &'a GpuReading) -> impl Iterator<Item = String> + 'a {
    c.model
        .warnings()
        .iter()
        .filter(move |w| w.gpu() == Some(&g.id))
        .map(|w| w.kind.code().name().to_string())
}
