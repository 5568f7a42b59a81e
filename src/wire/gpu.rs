//! One GPU in the public JSON document, both ways. Names follow `nvidia-smi --query-gpu`
//! (and gpustat's `--json`) in snake_case; units are base units (bytes, °C, W, %, MHz, J).
//! Owns only the field names and the conversion; the readings are `source::GpuReading`.

use serde::{Deserialize, Serialize};

use crate::reading::health::{Health, RemappedRows, RetiredPages, Xid, XidTally};
use crate::reading::mig::MigReading;
use crate::reading::throttle::ThrottleReason;
use crate::reading::workload::PodAllocation;
use crate::reading::{GpuId, GpuReading, GpuStatus, Vendor};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// Whether the GPU answered this poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Lost,
}

/// A GPU as the document carries it. Every reading is `null` when unknown, never a
/// made-up number; `0` is a real zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub index: u32,
    pub uuid: String,
    /// The watched host the GPU is on (`--remote`); `null` for one host.
    #[serde(default)]
    pub host: Option<String>,
    pub name: String,
    /// `nvidia`, `amd` or `intel` (2.2); `null` when the writer did not say.
    #[serde(default)]
    pub vendor: Option<String>,
    pub status: Status,
    pub pci_bus_id: Option<String>,
    /// % (nvidia-smi `utilization.gpu`).
    pub utilization_gpu: Option<u32>,
    /// % of time the memory controller was busy (`utilization.memory`).
    pub utilization_memory: Option<u32>,
    pub utilization_encoder: Option<u32>,
    pub utilization_decoder: Option<u32>,
    /// Bytes (nvidia-smi's `memory.*` are MiB; these are exact).
    pub memory_total: Option<u64>,
    pub memory_used: Option<u64>,
    pub memory_free: Option<u64>,
    pub memory_reserved: Option<u64>,
    /// °C (`temperature.gpu`).
    pub temperature_gpu: Option<u32>,
    pub temperature_slowdown: Option<u32>,
    pub temperature_shutdown: Option<u32>,
    /// W (`power.draw`).
    pub power_draw: Option<f64>,
    /// W (`enforced.power.limit`).
    pub enforced_power_limit: Option<f64>,
    /// J since the driver loaded (NVML's total energy consumption).
    pub total_energy_consumption: Option<f64>,
    /// % (`fan.speed`).
    pub fan_speed: Option<u32>,
    /// MHz (`clocks.sm`, `clocks.mem`, `clocks.max.sm`, `clocks.max.mem`).
    pub clocks_sm: Option<u32>,
    pub clocks_mem: Option<u32>,
    pub clocks_max_sm: Option<u32>,
    pub clocks_max_mem: Option<u32>,
    /// 0 (fastest) to 15; nvidia-smi writes `P0`.
    pub pstate: Option<u32>,
    pub pcie_link_gen_current: Option<u32>,
    pub pcie_link_width_current: Option<u32>,
    /// The link's maximum generation and width (`pcie.link.gen.max`, `pcie.link.width.max`;
    /// 2.2); absent from older documents, which read as unknown.
    #[serde(default)]
    pub pcie_link_gen_max: Option<u32>,
    #[serde(default)]
    pub pcie_link_width_max: Option<u32>,
    /// Bytes per second over NVML's last ~20 ms window.
    pub pcie_tx_throughput: Option<u64>,
    pub pcie_rx_throughput: Option<u64>,
    /// Why the clocks are held down now (`clocks_throttle_reasons.*`), as snake_case names;
    /// `[]` when nothing holds them.
    pub clocks_throttle_reasons: Option<Vec<String>>,
    /// Uncorrected ECC errors since the driver loaded (`ecc.errors.uncorrected.volatile.total`).
    pub ecc_errors_uncorrected_volatile: Option<u64>,
    pub mig_enabled: Option<bool>,
    /// (2.3) `compute_mode`: `default`, `exclusive_process`, `prohibited`, `exclusive_thread`.
    #[serde(default)]
    pub compute_mode: Option<String>,
    /// (2.3) `persistence_mode`.
    #[serde(default)]
    pub persistence_mode: Option<bool>,
    /// (2.2) Its MIG instances while MIG is on; `[]` otherwise.
    #[serde(default)]
    pub mig_devices: Vec<MigDoc>,
    /// The Kubernetes pods the kubelet allocated this GPU to (2.1); `[]` off Kubernetes.
    #[serde(default)]
    pub pods: Vec<PodDoc>,
    /// °C of the memory (HBM) where the board has the sensor (2.2, `temperature.memory`).
    #[serde(default)]
    pub temperature_memory: Option<u32>,
    /// PCIe replays since the driver loaded (2.2, `pcie.link.replay` in `nvidia-smi -q`).
    #[serde(default)]
    pub pcie_replay_counter: Option<u64>,
    /// Corrected ECC errors since the driver loaded (2.2, `ecc.errors.corrected.volatile.total`).
    #[serde(default)]
    pub ecc_errors_corrected_volatile: Option<u64>,
    /// Page retirement (2.2, `retired_pages.*`); `null` where the board has none.
    #[serde(default)]
    pub retired_pages: Option<RetiredPagesDoc>,
    /// Row remapping (2.2, `remapped_rows.*`); `null` before Ampere or when unknown.
    #[serde(default)]
    pub remapped_rows: Option<RemappedRowsDoc>,
    /// Critical XID errors since gpuwatch started watching (2.2); `null` where the GPU does
    /// not deliver XID events.
    #[serde(default)]
    pub xid_errors: Option<XidDoc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetiredPagesDoc {
    pub single_bit_ecc: u64,
    pub double_bit_ecc: u64,
    pub pending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RemappedRowsDoc {
    pub correctable: u64,
    pub uncorrectable: u64,
    pub pending: bool,
    pub failure: bool,
}

/// How many XIDs arrived, and the latest one (`null` when none).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct XidDoc {
    pub count: u64,
    pub last: Option<u64>,
    /// Seconds since the epoch when gpuwatch received the latest one.
    pub last_time: Option<f64>,
}

impl XidDoc {
    fn of(t: &XidTally) -> XidDoc {
        XidDoc {
            count: t.count,
            last: t.last.map(|x| x.code),
            last_time: t.last.and_then(|x| super::epoch_secs(x.at)),
        }
    }

    /// A latest XID without a readable time cannot be shown as "ago", so it is dropped;
    /// the count stays.
    fn into_tally(self) -> XidTally {
        let last = match (self.last, self.last_time.map(super::epoch)) {
            (Some(code), Some(Ok(at))) => Some(Xid { code, at }),
            _ => None,
        };
        XidTally {
            count: self.count,
            last,
        }
    }
}

fn health_doc(h: &Health) -> (Option<RetiredPagesDoc>, Option<RemappedRowsDoc>) {
    (
        h.retired_pages.map(|p| RetiredPagesDoc {
            single_bit_ecc: p.single_bit,
            double_bit_ecc: p.double_bit,
            pending: p.pending,
        }),
        h.remapped_rows.map(|r| RemappedRowsDoc {
            correctable: r.correctable,
            uncorrectable: r.uncorrectable,
            pending: r.pending,
            failure: r.failed,
        }),
    )
}

/// One MIG instance (a compute instance in a GPU instance) of a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigDoc {
    /// `MIG-…`, what `CUDA_VISIBLE_DEVICES` takes.
    pub uuid: String,
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
    /// e.g. `3g.40gb`.
    pub profile: Option<String>,
    pub memory_total: Option<u64>,
    pub memory_used: Option<u64>,
    /// Always `null` today: NVML gives no utilisation per instance.
    pub utilization_gpu: Option<u32>,
    /// The GPU's processes (in `processes`) on this instance.
    pub pids: Vec<u32>,
}

impl MigDoc {
    fn from_reading(m: &MigReading) -> MigDoc {
        MigDoc {
            uuid: m.id.0.clone(),
            gpu_instance_id: m.gpu_instance_id,
            compute_instance_id: m.compute_instance_id,
            profile: m.profile.clone(),
            memory_total: m.memory_total.map(|b| b.0),
            memory_used: m.memory_used.map(|b| b.0),
            utilization_gpu: m.util.map(|p| p.0),
            pids: m.pids.clone(),
        }
    }

    fn into_reading(self) -> MigReading {
        MigReading {
            id: GpuId(self.uuid),
            gpu_instance_id: self.gpu_instance_id,
            compute_instance_id: self.compute_instance_id,
            profile: self.profile,
            memory_total: self.memory_total.map(Bytes),
            memory_used: self.memory_used.map(Bytes),
            util: self.utilization_gpu.map(Percent),
            pids: self.pids,
        }
    }
}

/// One allocation of a GPU to a pod's container, as the kubelet reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodDoc {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// The one place the throttle reasons become their document names (the names are
/// `ThrottleReason`'s table).
pub fn throttle_reason_names(g: &GpuReading) -> Option<Vec<String>> {
    g.throttle_reasons
        .as_ref()
        .map(|rs| rs.iter().map(|r| r.name().to_string()).collect())
}

/// The one place the document's throttle reason names become readings again; a name
/// this build does not know is kept as `Unknown` (shown by its name), never dropped.
pub fn throttle_reasons_from_names(names: Option<Vec<String>>) -> Option<Vec<ThrottleReason>> {
    names.map(|ns| ns.iter().map(|n| ThrottleReason::from_name(n)).collect())
}

impl Gpu {
    pub fn from_reading(g: &GpuReading) -> Gpu {
        let (retired_pages, remapped_rows) = health_doc(&g.health);
        Gpu {
            index: g.index,
            uuid: g.id.0.clone(),
            host: g.host.clone(),
            name: g.name.clone(),
            vendor: g.vendor.map(|v| v.name().to_string()),
            status: match g.status {
                GpuStatus::Ok => Status::Ok,
                GpuStatus::Lost => Status::Lost,
            },
            pci_bus_id: g.pci_bus_id.clone(),
            utilization_gpu: g.util.map(|p| p.0),
            utilization_memory: g.memory_util.map(|p| p.0),
            utilization_encoder: g.encoder_util.map(|p| p.0),
            utilization_decoder: g.decoder_util.map(|p| p.0),
            memory_total: g.memory_total.map(|b| b.0),
            memory_used: g.memory_used.map(|b| b.0),
            memory_free: g.memory_free.map(|b| b.0),
            memory_reserved: g.memory_reserved.map(|b| b.0),
            temperature_gpu: g.temperature.map(|c| c.0),
            temperature_slowdown: g.temperature_slowdown.map(|c| c.0),
            temperature_shutdown: g.temperature_shutdown.map(|c| c.0),
            power_draw: g.power.map(|w| w.0),
            enforced_power_limit: g.power_limit.map(|w| w.0),
            total_energy_consumption: g.energy_joules,
            fan_speed: g.fan.map(|p| p.0),
            clocks_sm: g.sm_clock.map(|m| m.0),
            clocks_mem: g.memory_clock.map(|m| m.0),
            clocks_max_sm: g.sm_clock_max.map(|m| m.0),
            clocks_max_mem: g.memory_clock_max.map(|m| m.0),
            pstate: g.pstate,
            pcie_link_gen_current: g.pcie_link_gen,
            pcie_link_width_current: g.pcie_link_width,
            pcie_link_gen_max: g.pcie_link_gen_max,
            pcie_link_width_max: g.pcie_link_width_max,
            pcie_tx_throughput: g.pcie_tx_per_second.map(|b| b.0),
            pcie_rx_throughput: g.pcie_rx_per_second.map(|b| b.0),
            clocks_throttle_reasons: throttle_reason_names(g),
            ecc_errors_uncorrected_volatile: g.ecc_errors_uncorrected,
            mig_enabled: g.mig_enabled,
            compute_mode: g.compute_mode.map(|m| m.name().to_string()),
            persistence_mode: g.persistence_mode,
            mig_devices: g.mig_devices.iter().map(MigDoc::from_reading).collect(),
            pods: g
                .allocations
                .iter()
                .map(|a| PodDoc {
                    namespace: a.namespace.clone(),
                    pod: a.pod.clone(),
                    container: a.container.clone(),
                })
                .collect(),
            temperature_memory: g.health.memory_temperature.map(|c| c.0),
            pcie_replay_counter: g.health.pcie_replays,
            ecc_errors_corrected_volatile: g.health.ecc_corrected,
            retired_pages,
            remapped_rows,
            xid_errors: g.health.xid.as_ref().map(XidDoc::of),
        }
    }

    pub fn into_reading(self) -> GpuReading {
        let health = self.health();
        let mut g = GpuReading::absent(GpuId(self.uuid), self.index, self.name);
        g.host = self.host;
        // A vendor this build does not know reads as unknown, not as an error.
        g.vendor = self.vendor.as_deref().and_then(Vendor::from_name);
        g.status = match self.status {
            Status::Ok => GpuStatus::Ok,
            Status::Lost => GpuStatus::Lost,
        };
        g.pci_bus_id = self.pci_bus_id;
        g.util = self.utilization_gpu.map(Percent);
        g.memory_util = self.utilization_memory.map(Percent);
        g.encoder_util = self.utilization_encoder.map(Percent);
        g.decoder_util = self.utilization_decoder.map(Percent);
        g.memory_total = self.memory_total.map(Bytes);
        g.memory_used = self.memory_used.map(Bytes);
        g.memory_free = self.memory_free.map(Bytes);
        g.memory_reserved = self.memory_reserved.map(Bytes);
        g.temperature = self.temperature_gpu.map(Celsius);
        g.temperature_slowdown = self.temperature_slowdown.map(Celsius);
        g.temperature_shutdown = self.temperature_shutdown.map(Celsius);
        g.power = self.power_draw.map(Watts);
        g.power_limit = self.enforced_power_limit.map(Watts);
        g.energy_joules = self.total_energy_consumption;
        g.fan = self.fan_speed.map(Percent);
        g.sm_clock = self.clocks_sm.map(MegaHertz);
        g.memory_clock = self.clocks_mem.map(MegaHertz);
        g.sm_clock_max = self.clocks_max_sm.map(MegaHertz);
        g.memory_clock_max = self.clocks_max_mem.map(MegaHertz);
        g.pstate = self.pstate;
        g.pcie_link_gen = self.pcie_link_gen_current;
        g.pcie_link_width = self.pcie_link_width_current;
        g.pcie_link_gen_max = self.pcie_link_gen_max;
        g.pcie_link_width_max = self.pcie_link_width_max;
        g.pcie_tx_per_second = self.pcie_tx_throughput.map(Bytes);
        g.pcie_rx_per_second = self.pcie_rx_throughput.map(Bytes);
        g.throttle_reasons = throttle_reasons_from_names(self.clocks_throttle_reasons);
        g.ecc_errors_uncorrected = self.ecc_errors_uncorrected_volatile;
        g.mig_enabled = self.mig_enabled;
        // A mode this version does not know is unknown, not an error (a newer writer).
        g.compute_mode = self
            .compute_mode
            .as_deref()
            .and_then(crate::reading::ComputeMode::from_name);
        g.persistence_mode = self.persistence_mode;
        g.mig_devices = self
            .mig_devices
            .into_iter()
            .map(MigDoc::into_reading)
            .collect();
        g.allocations = self
            .pods
            .into_iter()
            .map(|p| PodAllocation {
                namespace: p.namespace,
                pod: p.pod,
                container: p.container,
                instance: None,
            })
            .collect();
        g.health = health;
        g
    }

    /// The health readings (2.2); all `null` in an older document.
    fn health(&self) -> Health {
        Health {
            memory_temperature: self.temperature_memory.map(Celsius),
            pcie_replays: self.pcie_replay_counter,
            ecc_corrected: self.ecc_errors_corrected_volatile,
            retired_pages: self.retired_pages.map(|p| RetiredPages {
                single_bit: p.single_bit_ecc,
                double_bit: p.double_bit_ecc,
                pending: p.pending,
            }),
            remapped_rows: self.remapped_rows.map(|r| RemappedRows {
                correctable: r.correctable,
                uncorrectable: r.uncorrectable,
                pending: r.pending,
                failed: r.failure,
            }),
            xid: self.xid_errors.map(XidDoc::into_tally),
        }
    }
}
