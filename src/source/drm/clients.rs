//! Which processes use which DRM device, and how much: walks `/proc/*/fd` for links into
//! `/dev/dri/`, reads those fds' fdinfo, and turns cumulative engine time into a % as the
//! delta between two samples. Owns the previous sample's counters; knows nothing of sysfs
//! (the caller maps device nodes to PCI addresses).
//!
//! Unlike NVML there is no driver call listing a GPU's processes: the kernel only says it
//! per open file, so every PID's fd directory is looked at (as nvtop and amdgpu_top do).
//! That reads one directory and one link per fd, and fdinfo only for DRM fds. A process
//! whose fd directory we may not read (another user's, without root) cannot be seen at all.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::fdinfo::{self, COMPUTE_ENGINES, DrmClient, MAIN_ENGINES};
use super::sysfs;
use crate::reading::ProcKind;
use crate::units::Percent;

/// One process's use of one DRM device in this sample.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcUsage {
    pub pid: u32,
    /// The device's PCI address.
    pub pdev: String,
    pub memory: Option<u64>,
    /// Busiest main engine over the last interval; `None` on the first sighting.
    pub util: Option<Percent>,
    pub kind: ProcKind,
}

/// A client's counters at one sample, to take the next delta from.
#[derive(Debug, Clone)]
struct Counters {
    client: DrmClient,
    at: Instant,
}

/// Identifies one client across samples: the PID, the device and the client id (the fd
/// number when the driver gives no id).
type ClientKey = (u32, String, u64);

#[derive(Debug)]
pub struct ClientScan {
    root: PathBuf,
    previous: HashMap<ClientKey, Counters>,
}

impl ClientScan {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ClientScan {
            root: root.into(),
            previous: HashMap::new(),
        }
    }

    /// Every process's use of the devices `node_pdev` knows (a `/dev/dri` node name such as
    /// `renderD128` → its PCI address), at `now`. A DRM fd whose fdinfo cannot be read
    /// still places the process on its device, with its numbers unknown.
    pub fn scan(&mut self, node_pdev: &HashMap<String, String>, now: Instant) -> Vec<ProcUsage> {
        let mut current = HashMap::new();
        let mut out = Vec::new();
        for pid in pids(&self.root) {
            let clients = self.process_clients(pid, node_pdev);
            out.extend(self.usage(pid, clients, now, &mut current));
        }
        self.previous = current;
        out
    }

    /// The DRM clients one process holds, one per (device, client id), with `None` for a
    /// device fd whose fdinfo could not be read.
    fn process_clients(
        &self,
        pid: u32,
        node_pdev: &HashMap<String, String>,
    ) -> Vec<(String, u64, Option<DrmClient>)> {
        let dir = self.root.join(pid.to_string());
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let mut clients = Vec::new();
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let Some(node) = target
                .to_str()
                .and_then(|t| t.strip_prefix("/dev/dri/"))
                .map(str::to_string)
            else {
                continue;
            };
            let Some(pdev) = node_pdev.get(&node) else {
                continue;
            };
            let fd_num: u64 = fd
                .file_name()
                .to_str()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let text = sysfs::read_small(&dir.join("fdinfo").join(fd.file_name()));
            let client = text.as_deref().and_then(fdinfo::parse);
            // The same client behind several fds (dup, inherited) counts once.
            let id = client.as_ref().and_then(|c| c.client_id).unwrap_or(fd_num);
            let key_pdev = client.as_ref().map_or(pdev.clone(), |c| c.pdev.clone());
            if client.is_some() && !seen.insert((key_pdev.clone(), id)) {
                continue;
            }
            clients.push((key_pdev, id, client));
        }
        clients
    }

    /// Sums one process's clients per device; records their counters in `current`.
    fn usage(
        &self,
        pid: u32,
        clients: Vec<(String, u64, Option<DrmClient>)>,
        now: Instant,
        current: &mut HashMap<ClientKey, Counters>,
    ) -> Vec<ProcUsage> {
        let mut per_device: Vec<ProcUsage> = Vec::new();
        for (pdev, id, client) in clients {
            let key = (pid, pdev.clone(), id);
            let (memory, util, kind) = match &client {
                Some(c) => {
                    let util = self
                        .previous
                        .get(&key)
                        .and_then(|p| busy(&p.client, c, p.at, now));
                    (c.device_memory, util, kind(c))
                }
                None => (None, None, ProcKind::Compute),
            };
            if let Some(c) = client {
                current.insert(key, Counters { client: c, at: now });
            }
            match per_device.iter_mut().find(|u| u.pdev == pdev) {
                Some(u) => {
                    u.memory = add(u.memory, memory);
                    u.util = add(u.util.map(|p| u64::from(p.0)), util.map(|p| u64::from(p.0)))
                        .map(|p| Percent(p.min(100) as u32));
                    u.kind = merge_kind(u.kind, kind);
                }
                None => per_device.push(ProcUsage {
                    pid,
                    pdev,
                    memory,
                    util,
                    kind,
                }),
            }
        }
        per_device
    }
}

/// The numeric entries of a /proc tree.
fn pids(root: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// The busiest main engine between two readings of one client, in %: nanoseconds busy
/// over wall time (divided by the class's capacity), or xe's busy cycles over total cycles.
fn busy(before: &DrmClient, after: &DrmClient, then: Instant, now: Instant) -> Option<Percent> {
    let wall_ns = now.checked_duration_since(then)?.as_nanos() as f64;
    let mut best: Option<f64> = None;
    for class in MAIN_ENGINES {
        let by_time = match (before.engine_ns.get(*class), after.engine_ns.get(*class)) {
            (Some(&(b, _)), Some(&(a, cap))) if wall_ns > 0.0 => {
                Some(a.saturating_sub(b) as f64 / (wall_ns * cap as f64))
            }
            _ => None,
        };
        let by_cycles = match (
            before.engine_cycles.get(*class),
            after.engine_cycles.get(*class),
        ) {
            (Some(&(b, bt)), Some(&(a, at))) if at > bt => {
                Some(a.saturating_sub(b) as f64 / (at - bt) as f64)
            }
            _ => None,
        };
        if let Some(share) = by_time.or(by_cycles) {
            best = Some(best.map_or(share, |b| b.max(share)));
        }
    }
    best.map(|s| Percent((s * 100.0).round().clamp(0.0, 100.0) as u32))
}

/// Compute if it has used only compute engines, graphics if only graphics ones, both if
/// both. A client that has used no engine yet is compute: on the servers gpuwatch is for,
/// a process holding VRAM without drawing is a compute job.
fn kind(c: &DrmClient) -> ProcKind {
    let used = |class: &&str| {
        c.engine_ns.get(*class).is_some_and(|e| e.0 > 0)
            || c.engine_cycles.get(*class).is_some_and(|e| e.0 > 0)
    };
    let compute = COMPUTE_ENGINES.iter().any(&used);
    let graphics = MAIN_ENGINES
        .iter()
        .filter(|e| !COMPUTE_ENGINES.contains(e))
        .any(used);
    match (compute, graphics) {
        (_, false) => ProcKind::Compute,
        (false, true) => ProcKind::Graphics,
        (true, true) => ProcKind::Both,
    }
}

fn merge_kind(a: ProcKind, b: ProcKind) -> ProcKind {
    if a == b { a } else { ProcKind::Both }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(ns: &[(&str, u64, u64)]) -> DrmClient {
        DrmClient {
            engine_ns: ns
                .iter()
                .map(|(c, n, cap)| (c.to_string(), (*n, *cap)))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn busy_takes_the_busiest_main_engine_and_divides_by_capacity() {
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_secs(1);
        let before = client(&[("gfx", 0, 1), ("compute", 0, 2), ("dec", 0, 1)]);
        // compute: 1.2 s busy over 1 s on 2 engines = 60 %; dec is not a main engine.
        let after = client(&[
            ("gfx", 300_000_000, 1),
            ("compute", 1_200_000_000, 2),
            ("dec", 900_000_000, 1),
        ]);
        assert_eq!(busy(&before, &after, t0, t1), Some(Percent(60)));
        // A counter that went backwards (a new client with a reused id) is 0, not huge.
        assert_eq!(busy(&after, &before, t0, t1), Some(Percent(0)));
        assert_eq!(
            busy(&before, &after, t1, t0),
            None,
            "the clock went backwards"
        );
        assert_eq!(
            busy(&client(&[]), &client(&[]), t0, t1),
            None,
            "no engines: unknown"
        );
    }
}
