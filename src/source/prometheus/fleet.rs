//! The instant answer read into the fleet: each series' GPU by its UUID, its value into the
//! reading the field table names, identity from whichever series has it, MIG instances
//! apart, and the GPUs grouped by host. Series arrive one at a time ([`Reading::add`]) as
//! the answer is parsed; at most `MAX_GPUS` GPUs are read, the rest counted. Pure.

use std::collections::{HashMap, HashSet};

use super::api::{Labels, Series};
use super::series::{self, Identity, Target};
use super::{Known, MAX_GPUS, mig};
use crate::reading::workload::PodAllocation;
use crate::reading::{GpuId, GpuReading, Vendor};

/// One instant answer, read: GPUs by host, each scrape target's `up`, driver versions.
#[derive(Default)]
pub(super) struct Fleet {
    pub(super) hosts: HashMap<String, Known>,
    pub(super) up: HashMap<String, f64>,
    drivers: Vec<String>,
    /// Series of GPUs beyond the first `MAX_GPUS`, left out.
    pub(super) left_out: usize,
    /// (host, GPU UUID, index given) of each GPU none of whose series had a `gpu` label.
    pub(super) unindexed: Vec<(String, String, u32)>,
}

/// A fleet being read, one series at a time as the answer is parsed (a fleet's answer is
/// hundreds of thousands of series: none is kept once read).
#[derive(Default)]
pub(super) struct Reading {
    fleet: Fleet,
    gpus: HashMap<String, (Identity, GpuReading)>,
    instances: HashMap<String, Vec<mig::Building>>,
}

impl Reading {
    pub(super) fn add(&mut self, s: &Series) {
        let Some(&(_, value)) = s.points.last() else {
            return;
        };
        let name = s.labels.get("__name__").map_or("", String::as_str);
        if name == "up" {
            if let Some(i) = s.labels.get("instance") {
                self.fleet.up.insert(i.clone(), value);
            }
            return;
        }
        let (Some(metric), Some(id)) = (series::metric(name), series::identity(&s.labels)) else {
            return;
        };
        if self.gpus.len() >= MAX_GPUS && !self.gpus.contains_key(&id.uuid) {
            self.fleet.left_out += 1;
            return;
        }
        let (known, g) = self.gpus.entry(id.uuid.clone()).or_insert_with(|| {
            // The index is settled in `place` when no series says it (never 0 by default:
            // that is another GPU's).
            let g = GpuReading::absent(GpuId(id.uuid.clone()), id.index.unwrap_or(0), "");
            (id.clone(), g)
        });
        if known.index.is_none()
            && let Some(i) = id.index
        {
            known.index = Some(i);
            g.index = i;
        }
        fill_identity(g, &id, &s.labels, &mut self.fleet.drivers);
        if mig::instance_of(&s.labels).is_some() {
            // One instance's value (its framebuffer), not the GPU's.
            let list = self.instances.entry(id.uuid.clone()).or_default();
            mig::apply(
                list,
                &g.id,
                &s.labels,
                metric.mig_memory(),
                metric.base(value),
            );
        } else if !matches!(metric.target, Target::Info) {
            series::set(g, metric.target, metric.base(value));
        }
    }

    pub(super) fn finish(mut self) -> Fleet {
        for (uuid, list) in self.instances {
            if let Some((_, g)) = self.gpus.get_mut(&uuid) {
                mig::finish(g, list);
            }
        }
        self.fleet.place(self.gpus.into_values().collect());
        self.fleet
    }
}

impl Fleet {
    /// Names each GPU's host and groups them: `host`/`Hostname` when a label says, else the
    /// scrape target with its port only when two targets share a machine.
    fn place(&mut self, gpus: Vec<(Identity, GpuReading)>) {
        let mut instances: Vec<String> = gpus
            .iter()
            .filter_map(|(id, _)| id.instance.clone())
            .collect();
        instances.sort();
        instances.dedup();
        let shown: HashMap<&String, String> = instances
            .iter()
            .zip(crate::source::multi::display_names(&instances))
            .collect();
        let unindexed: HashSet<GpuId> = gpus
            .iter()
            .filter(|(id, _)| id.index.is_none())
            .map(|(_, g)| g.id.clone())
            .collect();
        for (id, mut g) in gpus {
            let host = id
                .host
                .clone()
                .or_else(|| id.instance.as_ref().map(|i| shown[i].clone()))
                .unwrap_or_else(|| "unknown".into());
            series::derive_total(&mut g);
            g.host = Some(host.clone());
            let known = self.hosts.entry(host).or_default();
            if let Some(i) = &id.instance
                && !known.instances.contains(i)
            {
                known.instances.push(i.clone());
            }
            known.gpus.push(g);
        }
        for (host, k) in self.hosts.iter_mut() {
            for (uuid, index) in number_unindexed(&mut k.gpus, &unindexed) {
                self.unindexed.push((host.clone(), uuid, index));
            }
            k.gpus
                .sort_by(|a, b| (a.index, &a.id).cmp(&(b.index, &b.id)));
        }
    }

    /// The driver version when every GPU that says one says the same.
    pub(super) fn driver_version(&self) -> Option<String> {
        let first = self.drivers.first()?;
        self.drivers
            .iter()
            .all(|d| d == first)
            .then(|| first.clone())
    }
}

/// Gives each of a host's GPUs that no series gave an index (`unindexed`) one after the
/// highest index a labelled GPU has there, in UUID order: two GPUs never share an index
/// (`-i 0`, `--only 0` and the panels name one GPU), and the caller says which were
/// numbered so. Returns (UUID, index given) for each.
fn number_unindexed(gpus: &mut [GpuReading], unindexed: &HashSet<GpuId>) -> Vec<(String, u32)> {
    // With no labelled GPU on the host, numbering starts at 0: nothing to collide with.
    let first = gpus
        .iter()
        .filter(|g| !unindexed.contains(&g.id))
        .map(|g| g.index + 1)
        .max()
        .unwrap_or(0);
    let mut missing: Vec<&mut GpuReading> = gpus
        .iter_mut()
        .filter(|g| unindexed.contains(&g.id))
        .collect();
    missing.sort_by(|a, b| a.id.cmp(&b.id));
    missing
        .into_iter()
        .zip(first..)
        .map(|(g, index)| {
            g.index = index;
            (g.id.0.clone(), index)
        })
        .collect()
}

/// Name, PCI bus id, driver version and pod allocation from whichever series has them.
fn fill_identity(g: &mut GpuReading, id: &Identity, labels: &Labels, drivers: &mut Vec<String>) {
    if g.name.is_empty()
        && let Some(n) = &id.name
    {
        g.name = n.clone();
    }
    // A `vendor` label wins; a dcgm-exporter series only says NVIDIA when nothing else has.
    if id.vendor.is_some() {
        g.vendor = id.vendor;
    } else if id.dcgm && g.vendor.is_none() {
        g.vendor = Some(Vendor::Nvidia);
    }
    let get = |k: &str| labels.get(k).filter(|v| !v.is_empty());
    if g.pci_bus_id.is_none() {
        g.pci_bus_id = get("pci_bus_id").cloned();
    }
    if let Some(d) = get("driver_version").or_else(|| get("DCGM_FI_DRIVER_VERSION"))
        && !drivers.contains(d)
    {
        drivers.push(d.clone());
    }
    // dcgm-exporter names the pod a GPU is allocated to (as does gpuwatch's exporter).
    if g.allocations.is_empty()
        && let (Some(pod), Some(namespace)) = (get("pod"), get("namespace"))
    {
        g.allocations.push(PodAllocation {
            namespace: namespace.clone(),
            pod: pod.clone(),
            container: get("container").cloned().unwrap_or_default(),
            instance: None,
        });
    }
}
