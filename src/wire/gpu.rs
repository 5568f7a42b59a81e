//! One GPU in the public JSON document, both ways. Names follow `nvidia-smi --query-gpu`
//! (and gpustat's `--json`) in snake_case; units are base units (bytes, °C, W, %, MHz, J).
//! Owns the members that are not numeric readings (identity, throttle reasons, modes, MIG,
//! pods, the nested health objects) and the conversion; the numeric readings are the field
//! table's (`wire::readings`), the object's order and serde `wire::gpu_json`'s, the values
//! `reading::GpuReading`.

use serde::{Deserialize, Serialize};

use super::readings::Readings;
use crate::reading::health::{Health, RemappedRows, RetiredPages, Xid, XidTally};
use crate::reading::mig::MigReading;
use crate::reading::throttle::ThrottleReason;
use crate::reading::workload::PodAllocation;
use crate::reading::{GpuId, GpuReading, GpuStatus, Vendor};
use crate::units::{Bytes, Percent};

/// Whether the GPU answered this poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Lost,
}

/// A GPU as the document carries it. Every reading is `null` when unknown, never a
/// made-up number; `0` is a real zero. Written and read by `gpu_json` (the members' order,
/// and which may be missing from an older document).
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub index: u32,
    pub uuid: String,
    /// The watched host the GPU is on (`--remote`); `null` for one host.
    pub host: Option<String>,
    pub name: String,
    /// `nvidia`, `amd` or `intel` (2.2); `null` when the writer did not say.
    pub vendor: Option<String>,
    pub status: Status,
    pub pci_bus_id: Option<String>,
    /// The field table's numeric readings that are members of the GPU object itself
    /// (`utilization_gpu`, `memory_used`, `clocks_sm`, …; names after nvidia-smi's): each
    /// row's `json` part says its name, unit and JSON type. A member an older document
    /// lacks reads as unknown.
    pub readings: Readings,
    /// Why the clocks are held down now (`clocks_throttle_reasons.*`), as snake_case names;
    /// `[]` when nothing holds them.
    pub clocks_throttle_reasons: Option<Vec<String>>,
    /// (2.3) `compute_mode`: `default`, `exclusive_process`, `prohibited`, `exclusive_thread`.
    pub compute_mode: Option<String>,
    /// (2.2) Its MIG instances while MIG is on; `[]` otherwise.
    pub mig_devices: Vec<MigDoc>,
    /// The Kubernetes pods the kubelet allocated this GPU to (2.1); `[]` off Kubernetes.
    pub pods: Vec<PodDoc>,
    /// Page retirement (2.2, `retired_pages.*`); `null` where the board has none.
    pub retired_pages: Option<RetiredPagesDoc>,
    /// Row remapping (2.2, `remapped_rows.*`); `null` before Ampere or when unknown.
    pub remapped_rows: Option<RemappedRowsDoc>,
    /// Critical XID errors since gpuwatch started watching (2.2); `null` where the GPU does
    /// not deliver XID events.
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
            readings: Readings::of(g),
            clocks_throttle_reasons: throttle_reason_names(g),
            compute_mode: g.compute_mode.map(|m| m.name().to_string()),
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
        g.throttle_reasons = throttle_reasons_from_names(self.clocks_throttle_reasons);
        // A mode this version does not know is unknown, not an error (a newer writer).
        g.compute_mode = self
            .compute_mode
            .as_deref()
            .and_then(crate::reading::ComputeMode::from_name);
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
        // After the health structures: the flat health readings (memory temperature, PCIe
        // replays, corrected ECC) are members of `health` too.
        self.readings.write_into(&mut g);
        g
    }

    /// The nested health readings (2.2); all `null` in an older document. The flat ones
    /// are the field table's (`readings`).
    fn health(&self) -> Health {
        Health {
            memory_temperature: None,
            pcie_replays: None,
            ecc_corrected: None,
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
