//! The kernel-DRM sources: AMD GPUs through amdgpu and Intel GPUs through i915/xe, with no
//! vendor library (no ROCm, no Level Zero). GPU readings come from sysfs (`sysfs`,
//! `readings`), processes from DRM fdinfo under /proc (`fdinfo`, `clients`), and their owners
//! from `procinfo` exactly as for NVML processes. Both roots are injected (`--sysfs-root`,
//! `--proc-root`), so a captured tree replays anywhere. A card that disappears keeps its
//! slot, shown lost; a field no file gives is `None`.

pub mod clients;
pub mod fdinfo;
pub mod pci_ids;
mod readings;
pub mod sysfs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use crate::procinfo::ProcInfo;
use crate::reading::{GpuReading, GpuStatus, HostInfo, HostProc, ProcReading, Sample, Vendor};
use crate::source::{GpuSource, SourceError};
use crate::units::{Bytes, Percent};
use clients::ClientScan;
use readings::EnergyMark;

/// What is remembered about one card (by PCI address) across samples.
#[derive(Debug)]
struct Slot {
    pci_slot: String,
    /// Its last reading, so a card that disappears keeps its identity (shown lost).
    last: GpuReading,
    energy: EnergyMark,
}

pub struct DrmSource {
    vendors: Vec<Vendor>,
    sys: PathBuf,
    clients: ClientScan,
    procinfo: ProcInfo,
    slots: Vec<Slot>,
    /// The PCI ID database files to name cards from (beside the sysfs root's `sys`).
    pci_ids: [PathBuf; 2],
    host: HostInfo,
    /// CPU, RAM, swap and load for the host line, from the same /proc root.
    host_load: crate::procinfo::host::HostReader,
}

/// Where the DRM sources look: sysfs and /proc roots.
#[derive(Debug, Clone, PartialEq)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl DrmSource {
    /// The cards of `vendors` under `roots`, or an error naming what was looked for when
    /// there are none (`--source amd` on a box without amdgpu cards).
    pub fn open(vendors: &[Vendor], roots: &Roots) -> Result<Self, String> {
        let procinfo = ProcInfo::system_at(&roots.proc).with_local_pids();
        let source = Self::with_procinfo(vendors, roots, procinfo);
        if !source.present() {
            let drivers = vendors
                .iter()
                .map(|v| match v {
                    Vendor::Amd => "amdgpu",
                    Vendor::Intel => "i915/xe",
                    Vendor::Nvidia => "nvidia",
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(format!(
                "no {drivers} GPU under {}; is the driver loaded? try: gpuwatch --demo",
                roots.sys.join("class/drm").display()
            ));
        }
        Ok(source)
    }

    /// The same with the process lookups given (tests use a fixture /proc with fixed units).
    pub fn with_procinfo(vendors: &[Vendor], roots: &Roots, procinfo: ProcInfo) -> Self {
        DrmSource {
            vendors: vendors.to_vec(),
            sys: roots.sys.clone(),
            clients: ClientScan::new(&roots.proc),
            procinfo,
            slots: Vec::new(),
            pci_ids: pci_ids::files(roots.sys.parent().unwrap_or(&roots.sys)),
            host: HostInfo {
                hostname: crate::source::hostname(),
                driver_version: None,
                cuda_version: None,
                load: Default::default(),
                lookups: Vec::new(),
            },
            host_load: crate::procinfo::host::HostReader::new(&roots.proc),
        }
    }

    /// Whether any card of this source's vendors is there now.
    pub fn present(&self) -> bool {
        !self.cards().is_empty()
    }

    fn cards(&self) -> Vec<sysfs::Card> {
        let mut cards = sysfs::cards(&self.sys);
        cards.retain(|c| self.vendors.contains(&c.vendor));
        cards
    }

    /// One sample at `now` (the caller's clock, so engine and power deltas are testable).
    pub fn sample_at(&mut self, now: Instant) -> Sample {
        let cards = self.cards();
        for card in &cards {
            if !self.slots.iter().any(|s| s.pci_slot == card.pci_slot) {
                let index = self.slots.len() as u32;
                self.slots.push(Slot {
                    pci_slot: card.pci_slot.clone(),
                    last: GpuReading::absent(
                        readings::id(card),
                        index,
                        readings::name(card, &self.pci_ids),
                    ),
                    energy: None,
                });
            }
        }
        let gpus: Vec<GpuReading> = (0..self.slots.len())
            .map(|i| self.read_slot(i, &cards, now))
            .collect();
        let nodes = sysfs::node_devices(&self.sys, &cards);
        let by_pdev: HashMap<&str, &GpuReading> = self
            .slots
            .iter()
            .zip(&gpus)
            .filter(|(_, g)| g.status == GpuStatus::Ok)
            .map(|(s, g)| (s.pci_slot.as_str(), g))
            .collect();
        let usage: Vec<_> = self
            .clients
            .scan(&nodes, now)
            .into_iter()
            .filter(|u| by_pdev.contains_key(u.pdev.as_str()))
            .collect();
        let busy = engines_busy(&usage);
        let hosts = self.procinfo.sample(usage.iter().map(|u| u.pid), now);
        let processes = usage
            .into_iter()
            .map(|u| ProcReading {
                peak_gpu_memory: None,
                pid: u.pid,
                gpu: by_pdev[u.pdev.as_str()].id.clone(),
                kind: u.kind,
                gpu_memory: u.memory.map(Bytes),
                sm_util: u.util,
                // Found in this /proc a moment ago; gone by the lookup means it exited.
                host: hosts.get(&u.pid).cloned().unwrap_or(HostProc::Exited),
            })
            .collect();
        let mut gpus = gpus;
        for (slot, g) in self.slots.iter().zip(&mut gpus) {
            // i915 and xe give no GPU-wide busy % in sysfs: the clients' engine time says it.
            if g.vendor == Some(Vendor::Intel) && g.util.is_none() && g.status == GpuStatus::Ok {
                g.util = busy.get(&slot.pci_slot).copied().flatten();
            }
        }
        Sample {
            time: SystemTime::now(),
            host: HostInfo {
                load: self.host_load.read(),
                lookups: Vec::new(),
                ..self.host.clone()
            },
            gpus,
            processes,
            hosts: Vec::new(),
            history: None,
        }
    }

    /// Slot `i`'s reading: read from its card when present, else its last identity, lost.
    fn read_slot(&mut self, i: usize, cards: &[sysfs::Card], now: Instant) -> GpuReading {
        let slot = &mut self.slots[i];
        match cards.iter().find(|c| c.pci_slot == slot.pci_slot) {
            Some(card) => {
                let name = slot.last.name.clone();
                let g = readings::read(card, i as u32, name, &mut slot.energy, now);
                slot.last = g.clone();
                g
            }
            None => {
                let mut g =
                    GpuReading::absent(slot.last.id.clone(), i as u32, slot.last.name.clone());
                g.vendor = slot.last.vendor;
                g.pci_bus_id = slot.last.pci_bus_id.clone();
                g.status = GpuStatus::Lost;
                slot.energy = None;
                g
            }
        }
    }
}

/// Each device's busy % as the sum of its clients' (as nvtop does), capped at 100; `None`
/// for a device where any client's is unknown yet (its first sighting). A device with no
/// client is not listed: nothing says how busy it is (other users' fdinfo may be hidden).
fn engines_busy(usage: &[clients::ProcUsage]) -> HashMap<String, Option<Percent>> {
    let mut busy: HashMap<String, Option<Percent>> = HashMap::new();
    for u in usage {
        let sum = busy.entry(u.pdev.clone()).or_insert(Some(Percent(0)));
        *sum = sum.zip(u.util).map(|(a, b)| Percent((a.0 + b.0).min(100)));
    }
    busy
}

impl GpuSource for DrmSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        Ok(self.sample_at(Instant::now()))
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
