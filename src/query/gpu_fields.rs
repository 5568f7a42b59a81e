//! The `--query-gpu` catalogue: one row per field nvidia-smi names (its name, its aliases, the
//! unit its CSV header and values carry) and where gpuwatch reads it: a `fields::Key` of the
//! field table for every numeric reading (never a second getter of it), or a small function
//! for identities, enums and gpuwatch's own `gpuwatch.*` extras. No formatting of rows here.

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

/// How a field-table reading (in base units) is written, as nvidia-smi writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Bytes as whole MiB, rounded down (nvidia-smi divides NVML's bytes by 1 MiB).
    MiB,
    /// A 0-1 ratio as whole percent.
    Percent,
    /// Watts with two decimals (`71.29`).
    Watts,
    /// Hertz as whole MHz.
    MHz,
    /// A whole number as it is (°C, counts, link generation).
    Whole,
    /// `P0`..`P15`.
    Pstate,
}

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

const fn table(
    name: &'static str,
    aliases: &'static [&'static str],
    unit: Option<&'static str>,
    key: Key,
    shown: Shown,
    help: &'static str,
) -> GpuField {
    GpuField {
        name,
        aliases,
        unit,
        get: Get::Table(key, shown),
        help,
    }
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

const MIB: Option<&str> = Some("MiB");
const PCT: Option<&str> = Some("%");
const W: Option<&str> = Some("W");
const MHZ: Option<&str> = Some("MHz");

use Shown::{MHz, MiB, Percent, Pstate, Watts, Whole};

/// Every `--query-gpu` field, in the order `docs/query.md` lists them. One row a line: a
/// table reads down better than rustfmt's one argument a line. A row's name is the one
/// nvidia-smi's `--help-query-gpu` lists first (`"clocks.current.sm" or "clocks.sm"`), which
/// is the name its CSV header prints whichever of the two was asked for.
#[rustfmt::skip]
pub const GPU_FIELDS: &[GpuField] = &[
    other("timestamp", &[], |c, _| Some(timestamp(c.time, c.offset)), "When the sample was taken, local time: 2026/12/02 07:10:00.123."),
    other("driver_version", &[], |c, _| c.model.host().driver_version.clone(), "The driver's version."),
    other("count", &[], |c, _| Some(c.count.to_string()), "How many GPUs the query shows."),
    other("name", &["gpu_name"], |_, g| Some(g.name.clone()), "The GPU's product name."),
    other("index", &[], |_, g| Some(g.index.to_string()), "The GPU's index on its host (PCI bus order)."),
    other("uuid", &["gpu_uuid"], |_, g| g.id.uuid().map(str::to_string), "The GPU's UUID (GPU-…; AMD-…/INTEL-… for the DRM sources; [N/A] when the GPU did not give one)."),
    other("pci.bus_id", &["gpu_bus_id"], |_, g| g.pci_bus_id.clone(), "PCI bus id, domain:bus:device.function."),
    table("pstate", &[], None, Key::Pstate, Pstate, "Performance state, P0 (fastest) to P15."),
    table("temperature.gpu", &[], None, Key::Temperature, Whole, "Core temperature, °C."),
    table("temperature.memory", &[], None, Key::MemoryTemperature, Whole, "HBM temperature, °C."),
    table("utilization.gpu", &[], PCT, Key::Util, Percent, "Share of the last sample period a kernel ran."),
    table("utilization.memory", &[], PCT, Key::MemoryUtil, Percent, "Share of the last sample period memory was read or written."),
    table("utilization.encoder", &[], PCT, Key::EncoderUtil, Percent, "Video encoder utilization."),
    table("utilization.decoder", &[], PCT, Key::DecoderUtil, Percent, "Video decoder utilization."),
    table("memory.total", &[], MIB, Key::MemoryTotal, MiB, "VRAM in total."),
    table("memory.reserved", &[], MIB, Key::MemoryReserved, MiB, "VRAM the driver keeps for itself."),
    table("memory.used", &[], MIB, Key::MemoryUsed, MiB, "VRAM in use."),
    table("memory.free", &[], MIB, Key::MemoryFree, MiB, "VRAM free."),
    table("power.draw", &[], W, Key::Power, Watts, "Power draw."),
    // NVML has a management limit and the enforced one (the lower of it and others); the
    // sources read the enforced limit only, which is the management limit unless another
    // limit holds the GPU lower (docs/query.md says so).
    table("power.limit", &[], W, Key::PowerLimit, Watts, "The power limit (the enforced one; see docs/query.md)."),
    table("enforced.power.limit", &[], W, Key::PowerLimit, Watts, "The power limit the GPU is held to."),
    table("clocks.current.graphics", &["clocks.gr"], MHZ, Key::GraphicsClock, MHz, "Graphics (shader) clock."),
    table("clocks.current.sm", &["clocks.sm"], MHZ, Key::SmClock, MHz, "SM clock."),
    table("clocks.current.memory", &["clocks.mem"], MHZ, Key::MemoryClock, MHz, "Memory clock."),
    table("clocks.max.graphics", &["clocks.max.gr"], MHZ, Key::GraphicsClockMax, MHz, "Highest graphics clock."),
    table("clocks.max.sm", &[], MHZ, Key::SmClockMax, MHz, "Highest SM clock."),
    table("clocks.max.memory", &["clocks.max.mem"], MHZ, Key::MemoryClockMax, MHz, "Highest memory clock."),
    table("fan.speed", &[], PCT, Key::Fan, Percent, "Fan speed as a share of its maximum."),
    table("pcie.link.gen.current", &[], None, Key::PcieGen, Whole, "PCIe generation in use."),
    // nvidia-smi deprecates `pcie.link.gen.current` for this name; both ask NVML the same.
    table("pcie.link.gen.gpucurrent", &[], None, Key::PcieGen, Whole, "PCIe generation in use (nvidia-smi's newer name)."),
    table("pcie.link.gen.max", &[], None, Key::PcieGenMax, Whole, "Fastest PCIe generation of GPU and slot."),
    table("pcie.link.width.current", &[], None, Key::PcieWidth, Whole, "PCIe lanes in use."),
    table("pcie.link.width.max", &[], None, Key::PcieWidthMax, Whole, "Widest PCIe link of GPU and slot."),
    table("ecc.errors.corrected.volatile.total", &[], None, Key::EccCorrected, Whole, "Corrected ECC errors since the driver loaded."),
    table("ecc.errors.uncorrected.volatile.total", &[], None, Key::EccUncorrected, Whole, "Uncorrected ECC errors since the driver loaded."),
    other("compute_mode", &[], |_, g| g.compute_mode.map(|m| m.nvidia_smi_name().into()), "Default, Exclusive_Process, Prohibited or Exclusive_Thread."),
    other("persistence_mode", &[], |_, g| g.persistence_mode.map(|on| enabled(on).into()), "Enabled or Disabled."),
    other("mig.mode.current", &[], |_, g| g.mig_enabled.map(|on| enabled(on).into()), "Enabled or Disabled."),
    other("gpuwatch.host", &[], |_, g| g.host.clone(), "The host the GPU is on (--remote, --prometheus)."),
    other("gpuwatch.vendor", &[], |_, g| g.vendor.map(|v| v.name().into()), "nvidia, amd or intel."),
    other("gpuwatch.owners", &[], |c, g| Some(list(owners(c.model, g).iter().map(|(o, _)| o.clone()))), "Who holds VRAM on it (jobs or users), largest first, ';'-separated."),
    other("gpuwatch.user", &[], |c, g| Some(list(of_rows(c, g, |r| r.user.clone()))), "Users with a process on it, ';'-separated."),
    other("gpuwatch.job", &[], |c, g| Some(list(of_rows(c, g, |r| r.job.clone()))), "Jobs (Slurm, container, pod) with a process on it, ';'-separated."),
    other("gpuwatch.free", &[], |c, g| Some(yes_no(is_free(c.model, g)).into()), "yes when nobody uses it (the GPUs --once calls free), else no."),
    other("gpuwatch.warnings", &[], |c, g| Some(list(warnings(c, g))), "Its warning kinds (docs/json.md's names), ';'-separated."),
];

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
        MiB => ((v / 1_048_576.0).floor() as u64).to_string(),
        Percent => ((v * 100.0).round() as i64).to_string(),
        Watts => format!("{v:.2}"),
        MHz => ((v / 1e6).round() as u64).to_string(),
        Whole => (v.round() as i64).to_string(),
        Pstate => format!("P{}", v.round() as u32),
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
