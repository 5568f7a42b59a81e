//! The readings vocabulary: what one poll of the hardware returns (`Sample`, `GpuReading`,
//! `ProcReading`, host facts, a history point), the field table, health, MIG, throttle
//! reasons, workloads, outside lookups' status, what a source left out (`cut`) and the
//! device-list grammar. Every layer above speaks it: sources fill it, the wire format
//! writes it, the model derives from it.
//! Imports nothing of the crate but `units` (the layer rule, tests/it/layers.rs).

pub mod cut;
pub mod device_list;
pub mod fields;
pub mod health;
pub mod lookup;
pub mod mig;
pub mod throttle;
pub mod workload;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// A GPU's stable identity: its UUID. Indices can change across reboots or with
/// `CUDA_VISIBLE_DEVICES`; the UUID does not, so history is keyed by it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuId(pub String);

impl GpuId {
    /// What every stand-in id starts with. No vendor writes a UUID this way (NVML's are
    /// `GPU-…`/`MIG-…`, the DRM sources' `AMD-…`/`INTEL-…`), so a stand-in never collides
    /// with a real GPU's id.
    const NO_UUID: &'static str = "no-uuid:";

    /// The stand-in id of a GPU whose UUID could not be read: `no-uuid:nvml/1` names the
    /// source and the slot, so it stays put across samples and says what it is.
    pub fn without_uuid(source: &str, index: u32) -> Self {
        GpuId(format!("{}{source}/{index}", Self::NO_UUID))
    }

    /// The UUID, or `None` when this id is a stand-in ([`GpuId::without_uuid`]): what a
    /// `uuid` field shows (`[N/A]`, never the stand-in as if it were one).
    pub fn uuid(&self) -> Option<&str> {
        (!self.0.starts_with(Self::NO_UUID)).then_some(self.0.as_str())
    }
}

/// One poll of every GPU on a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When the sample was taken (wall clock; the simulated source uses a virtual clock).
    pub time: SystemTime,
    pub host: HostInfo,
    pub gpus: Vec<GpuReading>,
    pub processes: Vec<ProcReading>,
    /// Remote hosts and whether they answer, when watching several (`--remote`).
    pub hosts: Vec<HostStatus>,
    /// Chart points from a source that keeps history itself (Prometheus): when `Some`, the
    /// history store (panels and detail view) takes these (per GPU, oldest first, only those newer than what they hold)
    /// instead of this sample's readings. `None` for sources that only know the present.
    pub history: Option<std::collections::HashMap<GpuId, Vec<HistoryPoint>>>,
}

/// The shortest time between two samples: `--interval`'s floor, and the fastest a recording
/// replays (a header's `"interval_ms": 0` would otherwise spin a core).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The most points a back-fill brings (`Sample::history`: the demo's opening,
/// `--prometheus`'s first range query): a chart draws one column per point and no
/// terminal's chart is wider, so older points would cost time and memory at start and never
/// be seen. The history's ring keeps recording up to its capacity from there.
pub const SHOWN_POINTS: usize = 500;

/// One point of a GPU's history: each of the field table's charted readings
/// (`fields::CHARTED`) in base units, `None` where unknown (a gap, not a zero).
///
/// Unknown is kept as NaN rather than `Option<f64>`: a history is 300 and more of these per
/// GPU, and at 8,000 GPUs (`--prometheus` over 1,000 hosts) the `Option`s' tags and padding
/// were 166 MiB of the 366 MiB the histories held (160 bytes a point, then 88). A NaN is no
/// reading, so one set is kept as unknown too; values are otherwise bit for bit as given.
/// The time is nanoseconds from the epoch (8 bytes; a `SystemTime` is 16): 80 bytes a point.
/// This is the form points travel in (a source's back-fill) and are read back in; the
/// history stores them column by column in 4 bytes a value where that is exact
/// (`history::column`).
#[derive(Debug, Clone)]
pub struct HistoryPoint {
    nanos: i64,
    values: [f64; fields::CHARTED.len()],
}

impl PartialEq for HistoryPoint {
    /// Two points are equal when they hold the same readings, unknown matching unknown
    /// (NaN is never equal to itself, so the arrays are not compared as floats).
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
            && self
                .values
                .iter()
                .zip(&other.values)
                .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
    }
}

impl HistoryPoint {
    /// A point at `time` with nothing known yet.
    pub fn at(time: SystemTime) -> Self {
        HistoryPoint {
            nanos: nanos_of(time),
            values: [f64::NAN; fields::CHARTED.len()],
        }
    }

    /// A reading's charted fields, through the field table's getters.
    pub fn of(time: SystemTime, g: &GpuReading) -> Self {
        HistoryPoint {
            nanos: nanos_of(time),
            values: fields::CHARTED.map(|key| (fields::field(key).get)(g).unwrap_or(f64::NAN)),
        }
    }

    /// When the readings were taken (to the nanosecond, as given, within 292 years of 1970).
    pub fn time(&self) -> SystemTime {
        let from_epoch = Duration::from_nanos(self.nanos.unsigned_abs());
        if self.nanos >= 0 {
            SystemTime::UNIX_EPOCH + from_epoch
        } else {
            SystemTime::UNIX_EPOCH - from_epoch
        }
    }

    /// The reading `key` in base units; `None` when unknown or not charted.
    pub fn get(&self, key: fields::Key) -> Option<f64> {
        let i = fields::CHARTED.iter().position(|k| *k == key)?;
        let v = self.values[i];
        (!v.is_nan()).then_some(v)
    }

    /// Nanoseconds from the epoch, as kept (`history` stores them column by column).
    pub(crate) fn nanos(&self) -> i64 {
        self.nanos
    }

    /// Every charted value in `fields::CHARTED`'s order, NaN where unknown.
    pub(crate) fn raw(&self) -> &[f64; fields::CHARTED.len()] {
        &self.values
    }

    /// A point from what `nanos` and `raw` gave.
    pub(crate) fn from_raw(nanos: i64, values: [f64; fields::CHARTED.len()]) -> Self {
        HistoryPoint { nanos, values }
    }

    /// Sets `key` (base units); a key that is not charted is not kept.
    pub fn set(&mut self, key: fields::Key, value: Option<f64>) {
        if let Some(i) = fields::CHARTED.iter().position(|k| *k == key) {
            self.values[i] = value.unwrap_or(f64::NAN);
        }
    }
}

/// `time` as nanoseconds from the epoch, negative before it; a time beyond ±292 years of
/// 1970 is held at the nearest that fits.
fn nanos_of(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

/// One watched host's reachability.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStatus {
    pub name: String,
    /// Why the last poll failed; `None` while the host answers.
    pub error: Option<String>,
}

/// Facts about the host: its name and versions (which change rarely) and how busy it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostInfo {
    pub hostname: String,
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    /// CPU, RAM, swap and load average at this sample (the host line).
    pub load: HostLoad,
    /// How the outside lookups naming GPU holders last went; empty where none is made
    /// (not a Kubernetes node, the demo, a remote host).
    pub lookups: Vec<lookup::LookupStatus>,
    /// What the source left out of this sample to stay within its bounds; empty when
    /// nothing was (every source but `--prometheus`, always).
    pub cuts: Vec<cut::LeftOut>,
}

/// How busy the host itself is, from /proc (`procinfo::host`): a GPU starved by its data
/// loader or by swapping shows here first. Every field is `None` where the source cannot
/// tell (a remote host whose snapshot does not carry it, the first read of CPU %).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostLoad {
    /// All CPUs together since the previous sample, 0–100.
    pub cpu_percent: Option<f64>,
    /// Logical CPUs.
    pub cpus: Option<u32>,
    pub memory_total: Option<Bytes>,
    /// Total minus available (the page cache counts as free, as `free` counts it).
    pub memory_used: Option<Bytes>,
    pub swap_total: Option<Bytes>,
    pub swap_used: Option<Bytes>,
    /// 1, 5 and 15 minute load averages.
    pub load_average: Option<[f64; 3]>,
}

/// Who made a GPU, which says which source read it and which driver serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    Nvidia,
    Amd,
    Intel,
}

impl Vendor {
    pub const ALL: [Vendor; 3] = [Vendor::Nvidia, Vendor::Amd, Vendor::Intel];

    /// The public name (JSON, metrics labels, `--source`).
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Intel => "intel",
        }
    }

    pub fn from_name(name: &str) -> Option<Vendor> {
        Vendor::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Which CUDA contexts a GPU accepts, as NVML and nvidia-smi name the modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ComputeMode {
    /// Any number of contexts from any processes.
    Default,
    /// One context, from one thread (no longer supported by drivers; still reported).
    ExclusiveThread,
    /// No contexts at all.
    Prohibited,
    /// One context, from one process (a GPU a scheduler hands to one job).
    ExclusiveProcess,
}

impl ComputeMode {
    pub const ALL: [ComputeMode; 4] = [
        ComputeMode::Default,
        ComputeMode::ExclusiveThread,
        ComputeMode::Prohibited,
        ComputeMode::ExclusiveProcess,
    ];

    /// The public name (JSON): `default`, `exclusive_thread`, `prohibited`, `exclusive_process`.
    pub fn name(self) -> &'static str {
        match self {
            ComputeMode::Default => "default",
            ComputeMode::ExclusiveThread => "exclusive_thread",
            ComputeMode::Prohibited => "prohibited",
            ComputeMode::ExclusiveProcess => "exclusive_process",
        }
    }

    pub fn from_name(name: &str) -> Option<ComputeMode> {
        ComputeMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// nvidia-smi's spelling (`--query-gpu=compute_mode`, `nvidia-smi -q`).
    pub fn nvidia_smi_name(self) -> &'static str {
        match self {
            ComputeMode::Default => "Default",
            ComputeMode::ExclusiveThread => "Exclusive_Thread",
            ComputeMode::Prohibited => "Prohibited",
            ComputeMode::ExclusiveProcess => "Exclusive_Process",
        }
    }
}

/// Whether a GPU answered this poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuStatus {
    Ok,
    /// The GPU fell off the bus or stopped answering: its slot stays, its readings are absent.
    Lost,
}

/// One GPU's readings. Every reading is an `Option`: `None` means the source could not
/// tell (shown as `N/A`), which is different from a real zero.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub id: GpuId,
    /// Which host the GPU is on, when watching several (`--remote`); `None` for one host.
    pub host: Option<String>,
    pub index: u32,
    pub name: String,
    /// Who made it; `None` from documents written before gpuwatch said (schema < 2.2).
    pub vendor: Option<Vendor>,
    pub status: GpuStatus,
    pub util: Option<Percent>,
    pub memory_util: Option<Percent>,
    pub memory_total: Option<Bytes>,
    pub memory_used: Option<Bytes>,
    pub temperature: Option<Celsius>,
    /// The temperature at which the device starts slowing itself down, when reported.
    pub temperature_slowdown: Option<Celsius>,
    pub power: Option<Watts>,
    pub power_limit: Option<Watts>,
    pub fan: Option<Percent>,
    pub sm_clock: Option<MegaHertz>,
    pub memory_clock: Option<MegaHertz>,
    /// Performance state, 0 (fastest) to 15.
    pub pstate: Option<u32>,
    // The fields below are the NVML source's details (issue 3); sources that cannot tell
    // leave them `None`.
    /// PCI bus id as NVML formats it, e.g. `00000000:17:00.0`.
    pub pci_bus_id: Option<String>,
    /// VRAM the driver reserves for itself (not usable by processes).
    pub memory_reserved: Option<Bytes>,
    pub memory_free: Option<Bytes>,
    /// The temperature at which the device shuts itself down.
    pub temperature_shutdown: Option<Celsius>,
    /// Energy used since the driver was loaded, in joules.
    pub energy_joules: Option<f64>,
    pub sm_clock_max: Option<MegaHertz>,
    pub memory_clock_max: Option<MegaHertz>,
    /// The graphics clock and its maximum (NVML's `NVML_CLOCK_GRAPHICS`; `clocks.gr`).
    pub graphics_clock: Option<MegaHertz>,
    pub graphics_clock_max: Option<MegaHertz>,
    /// The video encoder/decoder clock (NVML's `NVML_CLOCK_VIDEO`; `clocks.video`).
    pub video_clock: Option<MegaHertz>,
    pub encoder_util: Option<Percent>,
    pub decoder_util: Option<Percent>,
    pub pcie_link_gen: Option<u32>,
    /// Lanes in use (x1..x16).
    pub pcie_link_width: Option<u32>,
    /// The fastest generation and widest link the GPU and its slot can run at (a link
    /// below them trains down, e.g. a riser or a BIOS setting).
    pub pcie_link_gen_max: Option<u32>,
    pub pcie_link_width_max: Option<u32>,
    /// PCIe traffic out of the GPU over NVML's last ~20 ms window, in bytes per second.
    pub pcie_tx_per_second: Option<Bytes>,
    /// PCIe traffic into the GPU, in bytes per second.
    pub pcie_rx_per_second: Option<Bytes>,
    /// Why clocks are held down right now; empty when nothing holds them. On the wire
    /// each is its snake_case name (`sw_power_cap`, `gpu_idle`, ...; see `throttle::TABLE`).
    pub throttle_reasons: Option<Vec<throttle::ThrottleReason>>,
    /// Uncorrected ECC errors since the driver loaded (volatile counter).
    pub ecc_errors_uncorrected: Option<u64>,
    /// Whether MIG (multi-instance GPU) mode is on.
    pub mig_enabled: Option<bool>,
    /// Which CUDA contexts the GPU accepts (nvidia-smi's compute mode).
    pub compute_mode: Option<ComputeMode>,
    /// Whether the driver stays loaded with no client (nvidia-smi's persistence mode).
    pub persistence_mode: Option<bool>,
    /// Memory temperature, PCIe replays, corrected ECC, retired pages, remapped rows, XIDs.
    pub health: health::Health,
    /// Its MIG instances while MIG is on (empty otherwise, and from sources without MIG).
    pub mig_devices: Vec<mig::MigReading>,
    /// The Kubernetes pods this GPU is allocated to, as the kubelet says (empty off
    /// Kubernetes, and from sources that cannot tell).
    pub allocations: Vec<workload::PodAllocation>,
}

impl GpuReading {
    /// A reading with only identity filled in: every measurement absent.
    pub fn absent(id: GpuId, index: u32, name: impl Into<String>) -> Self {
        GpuReading {
            id,
            host: None,
            index,
            name: name.into(),
            vendor: None,
            status: GpuStatus::Ok,
            util: None,
            memory_util: None,
            memory_total: None,
            memory_used: None,
            temperature: None,
            temperature_slowdown: None,
            power: None,
            power_limit: None,
            fan: None,
            sm_clock: None,
            memory_clock: None,
            pstate: None,
            pci_bus_id: None,
            memory_reserved: None,
            memory_free: None,
            temperature_shutdown: None,
            energy_joules: None,
            sm_clock_max: None,
            memory_clock_max: None,
            graphics_clock: None,
            graphics_clock_max: None,
            video_clock: None,
            encoder_util: None,
            decoder_util: None,
            pcie_link_gen: None,
            pcie_link_width: None,
            pcie_link_gen_max: None,
            pcie_link_width_max: None,
            pcie_tx_per_second: None,
            pcie_rx_per_second: None,
            throttle_reasons: None,
            ecc_errors_uncorrected: None,
            mig_enabled: None,
            compute_mode: None,
            persistence_mode: None,
            health: health::Health::default(),
            mig_devices: Vec::new(),
            allocations: Vec::new(),
        }
    }

    /// How the GPU is named on screen: `3`, or `gpu1:3` when watching several hosts.
    pub fn label(&self) -> String {
        match &self.host {
            Some(h) => format!("{h}:{}", self.index),
            None => self.index.to_string(),
        }
    }

    /// `label()`'s width in characters, without building it: compact mode sizes its label
    /// column by the widest of every GPU's on each frame (10,000 in a fleet).
    pub fn label_width(&self) -> usize {
        let digits = self.index.checked_ilog10().map_or(1, |d| d as usize + 1);
        self.host.as_ref().map_or(0, |h| h.chars().count() + 1) + digits
    }

    /// Used VRAM as a fraction of total, when both are known and total is non-zero.
    pub fn memory_ratio(&self) -> Option<f64> {
        match (self.memory_used, self.memory_total) {
            (Some(used), Some(total)) if total.0 > 0 => Some(used.0 as f64 / total.0 as f64),
            _ => None,
        }
    }
}

/// Compute (CUDA) or graphics context; a process may hold both on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProcKind {
    Compute,
    Graphics,
    Both,
}

impl ProcKind {
    pub fn label(self) -> &'static str {
        match self {
            ProcKind::Compute => "C",
            ProcKind::Graphics => "G",
            ProcKind::Both => "C+G",
        }
    }
}

/// One process on one GPU (a process on two GPUs is two readings).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcReading {
    pub pid: u32,
    pub gpu: GpuId,
    pub kind: ProcKind,
    pub gpu_memory: Option<Bytes>,
    /// The most VRAM it held on this GPU up to this sample, when the source knows its past
    /// (a recording's or a remote snapshot's `peak_gpu_memory`): the history takes the larger
    /// of this and what it saw, so a replay that skipped ahead, or a rotated recording's
    /// second file, still shows the real peak. `None` from live sources.
    pub peak_gpu_memory: Option<Bytes>,
    /// Share of the GPU's SM time this process used over the last interval.
    pub sm_util: Option<Percent>,
    /// What the host knows about the process; `None` when it is not visible from here.
    pub host: HostProc,
}

/// Host-side facts about a GPU process, from /proc (or the simulation).
#[derive(Debug, Clone, PartialEq)]
pub enum HostProc {
    Visible(ProcDetails),
    /// NVML reports host PIDs; gpuwatch runs in a child PID namespace (a container, `unshare
    /// --pid`), where the same number is a different process or none.
    OtherNamespace,
    /// The PID exists but /proc hides it from us (hidepid).
    Hidden,
    /// It was visible at the last sample and has left /proc since; NVML still lists it for
    /// a moment (its process lists lag the exit).
    Exited,
}

/// How much of a GPU process this host can see: the one list of these, with their names
/// in the JSON document and the exporter, and what the COMMAND column says instead of a
/// command line when there is none to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    Visible,
    OtherNamespace,
    Hidden,
    Exited,
}

impl Visibility {
    pub const ALL: [Visibility; 4] = [
        Visibility::Visible,
        Visibility::OtherNamespace,
        Visibility::Hidden,
        Visibility::Exited,
    ];

    /// The public name (JSON, recordings, metrics labels).
    pub fn name(self) -> &'static str {
        match self {
            Visibility::Visible => "visible",
            Visibility::OtherNamespace => "other_namespace",
            Visibility::Hidden => "hidden",
            Visibility::Exited => "exited",
        }
    }

    pub fn from_name(name: &str) -> Option<Visibility> {
        Visibility::ALL.into_iter().find(|v| v.name() == name)
    }

    /// What stands in for the command line of a process we cannot see; `pid` is the
    /// PID NVML reported.
    pub fn placeholder(self, pid: u32) -> String {
        match self {
            Visibility::Visible => String::new(),
            Visibility::OtherNamespace => {
                format!("(not visible from this PID namespace; host PID {pid})")
            }
            Visibility::Hidden => "(hidden)".into(),
            Visibility::Exited => "(exited)".into(),
        }
    }
}

impl HostProc {
    pub fn visibility(&self) -> Visibility {
        match self {
            HostProc::Visible(_) => Visibility::Visible,
            HostProc::OtherNamespace => Visibility::OtherNamespace,
            HostProc::Hidden => Visibility::Hidden,
            HostProc::Exited => Visibility::Exited,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcDetails {
    /// User name, or the numeric UID when the name cannot be resolved. Shared, like the
    /// command: both are read once per process and handed on every sample (to each GPU the
    /// process is on, the model, the table), where a `String` was copied each time (issue
    /// 25: a tenth of the instructions at 1,000 processes went to those copies and frees).
    pub user: Arc<str>,
    pub uid: u32,
    pub command: Arc<str>,
    /// CPU use over the last interval; can exceed 100 with several cores. `None` on the
    /// first sighting, before there is a previous reading to take a delta from.
    pub cpu_percent: Option<f32>,
    pub host_memory: Option<Bytes>,
    pub started: SystemTime,
    /// Its container, pod, Slurm job or service, and its GPU-related environment.
    pub context: workload::ProcContext,
}

impl ProcReading {
    pub fn details(&self) -> Option<&ProcDetails> {
        match &self.host {
            HostProc::Visible(d) => Some(d),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The width compact mode sizes its labels by is the label's, for one host or several
    /// (names of more than one byte a character included), at every count of digits.
    #[test]
    fn a_labels_width_is_its_length_in_characters() {
        for host in [None, Some("n1"), Some("nœud-été")] {
            for index in [0, 7, 9, 10, 99, 100, 12_345, u32::MAX] {
                let mut g = GpuReading::absent(GpuId("GPU-1".into()), index, "g");
                g.host = host.map(String::from);
                assert_eq!(
                    g.label_width(),
                    g.label().chars().count(),
                    "{:?}",
                    g.label()
                );
            }
        }
    }
}
