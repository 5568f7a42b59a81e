//! Several hosts as one source: the local GPUs (optionally) plus each remote host's latest
//! snapshot, every remote GPU tagged with its host (local GPUs stay untagged: they are the
//! only ones whose processes can be signalled from here). A host that stops answering keeps its GPUs'
//! slots (shown lost) and its reason in `Sample::hosts`, while the others keep updating.
//! The network and the clock come in through [`PollIo`], so tests script both.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::remote::poller::{Fleet, Runtime};
use super::remote::{HostSlot, HttpTransport, Transport};
use crate::reading::{GpuId, GpuReading, GpuStatus, HostInfo, HostStatus, Sample};
use crate::source::{GpuSource, SourceError};

pub struct MultiSource {
    local: Option<(String, Box<dyn GpuSource>)>,
    fleet: Fleet,
    /// What each remote is called on screen, in the fleet's order.
    names: Vec<String>,
    /// Whether the first sample was taken (it waits for every host's first answer).
    started: bool,
    /// Pairs of hosts (earlier, later) already said to share GPU UUIDs: said once, not at
    /// every sample.
    collisions_said: HashSet<(String, String)>,
    /// What to tell the user after this sample (see [`GpuSource::notices`]).
    notices: Vec<String>,
}

/// The outside world of the pollers: the network, and the runtime the polling runs on.
#[derive(Clone)]
pub struct PollIo {
    pub transport: Arc<dyn Transport>,
    pub runtime: Runtime,
}

impl PollIo {
    /// HTTP, polled on a thread of its own.
    pub fn system() -> PollIo {
        PollIo {
            transport: Arc::new(HttpTransport),
            runtime: Runtime::OwnThread,
        }
    }
}

impl MultiSource {
    /// `local`: this machine's source and the name to show for it. Polls over HTTP.
    pub fn new(
        local: Option<(String, Box<dyn GpuSource>)>,
        addresses: &[String],
        interval: Duration,
    ) -> Self {
        Self::with_io(local, addresses, interval, PollIo::system())
    }

    /// The same with the network and the runtime given.
    pub fn with_io(
        local: Option<(String, Box<dyn GpuSource>)>,
        addresses: &[String],
        interval: Duration,
        io: PollIo,
    ) -> Self {
        MultiSource {
            local,
            fleet: Fleet::start(addresses, interval, io.transport, io.runtime),
            names: display_names(addresses),
            started: false,
            collisions_said: HashSet::new(),
            notices: Vec::new(),
        }
    }
}

/// The names shown for hosts: `gpu1:9400` → `gpu1` (the port adds nothing on screen),
/// unless two addresses share a host, which then keep their ports.
pub fn display_names(addresses: &[String]) -> Vec<String> {
    let host = |a: &str| a.rsplit_once(':').map_or(a, |(h, _)| h).to_string();
    // Counted once (not every address against every other: 20,000 hosts made that 4e8 steps).
    let mut seen: HashMap<String, usize> = HashMap::new();
    for a in addresses {
        *seen.entry(host(a)).or_default() += 1;
    }
    addresses
        .iter()
        .map(|a| {
            let h = host(a);
            if seen[&h] > 1 { a.clone() } else { h }
        })
        .collect()
}

fn tag(sample: &mut Sample, host: &str) {
    for g in &mut sample.gpus {
        g.host = Some(host.to_string());
    }
}

/// GPU UUIDs reported so far in this sample, and by which host.
type Taken = HashMap<GpuId, String>;

/// Gives each GPU of `host`'s sample whose UUID an earlier host already reported an id of
/// its own (`GPU-…@host`), with its processes and MIG instances, so the two are shown as two
/// GPUs: keyed by one id they were merged into one, holding both hosts' processes (a copied
/// snapshot, a cloned VM, a misconfigured exporter). Returns the earlier hosts it collided with.
fn keep_apart(sample: &mut Sample, host: &str, taken: &mut Taken) -> Vec<String> {
    let mut earlier = Vec::new();
    let apart = |id: &GpuId| GpuId(format!("{}@{host}", id.0));
    for g in &mut sample.gpus {
        // Only earlier hosts count: one host's own repeats cannot be told apart by host.
        let Some(first) = taken.get(&g.id) else {
            continue;
        };
        if !earlier.contains(first) {
            earlier.push(first.clone());
        }
        let new = apart(&g.id);
        for p in sample.processes.iter_mut().filter(|p| p.gpu == g.id) {
            p.gpu = new.clone();
        }
        for m in &mut g.mig_devices {
            m.id = apart(&m.id);
        }
        g.id = new;
    }
    for g in &sample.gpus {
        taken
            .entry(g.id.clone())
            .or_insert_with(|| host.to_string());
    }
    earlier
}

/// A host's last known GPUs with nothing known about them now.
fn lost(gpus: &[GpuReading]) -> Vec<GpuReading> {
    gpus.iter()
        .map(|g| {
            let mut l = GpuReading::absent(g.id.clone(), g.index, g.name.clone());
            l.vendor = g.vendor;
            l.host = g.host.clone();
            l.status = GpuStatus::Lost;
            l
        })
        .collect()
}

impl MultiSource {
    /// Waits (at most one poll timeout) until every host has answered or failed once, so
    /// the first sample — all that `--once` and `pick` see — is not just "waiting".
    /// A host still queued behind the bounded concurrency is shown as still waiting.
    fn wait_for_first_answers(&self) {
        let deadline = Instant::now() + super::remote::TIMEOUT + Duration::from_millis(500);
        self.fleet.wait_settled(deadline);
    }
}

impl MultiSource {
    /// Says once per pair of hosts that they report the same GPU UUIDs.
    fn say_collision(&mut self, first: String, later: &str) {
        if self
            .collisions_said
            .insert((first.clone(), later.to_string()))
        {
            self.notices.push(format!(
                "{later} reports GPUs with the same UUIDs as {first} (a copied snapshot or a \
                 misconfigured host?): both are shown, {later}'s as UUID@{later}"
            ));
        }
    }
}

impl GpuSource for MultiSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        if !self.started {
            self.started = true;
            self.wait_for_first_answers();
        }
        let mut out = Sample {
            time: SystemTime::now(),
            host: HostInfo::default(),
            gpus: Vec::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
            history: None,
        };
        // Driver and CUDA versions are shown only when every host agrees.
        let mut versions: Vec<(Option<String>, Option<String>)> = Vec::new();
        let mut taken = Taken::new();
        let mut collisions = Vec::new();
        if let Some((name, source)) = &mut self.local {
            let error = match source.sample() {
                Ok(mut s) => {
                    keep_apart(&mut s, name, &mut taken);
                    versions.push((s.host.driver_version.clone(), s.host.cuda_version.clone()));
                    out.gpus.extend(s.gpus);
                    out.processes.extend(s.processes);
                    None
                }
                Err(e) => Some(e.to_string()),
            };
            out.hosts.push(HostStatus {
                name: name.clone(),
                error,
            });
        }
        for (i, name) in self.names.iter().enumerate() {
            let slot = self.fleet.latest(i);
            if let Some(latest) = &slot.latest {
                versions.push((
                    latest.host.driver_version.clone(),
                    latest.host.cuda_version.clone(),
                ));
            }
            for first in add_remote(&mut out, name, slot, &mut taken) {
                collisions.push((first, name.clone()));
            }
        }
        for (first, later) in collisions {
            self.say_collision(first, &later);
        }
        let names: Vec<&str> = out.hosts.iter().map(|h| h.name.as_str()).collect();
        out.host.hostname = names.join(", ");
        if let Some(first) = versions
            .first()
            .filter(|f| versions.iter().all(|v| v == *f))
        {
            (out.host.driver_version, out.host.cuda_version) = first.clone();
        }
        Ok(out)
    }

    fn notices(&mut self) -> Vec<String> {
        let mut notices = std::mem::take(&mut self.notices);
        if let Some((_, local)) = &mut self.local {
            notices.extend(local.notices());
        }
        notices
    }
}

/// One remote host's part of the merged sample: its GPUs (lost while it fails, their
/// processes dropped, kept apart from earlier hosts' GPUs of the same UUID), and its status
/// line. Returns the earlier hosts whose GPU UUIDs it repeats.
fn add_remote(out: &mut Sample, name: &str, slot: HostSlot, taken: &mut Taken) -> Vec<String> {
    let mut earlier = Vec::new();
    let error = match (&slot.latest, &slot.error) {
        (None, None) => Some("waiting for the first answer".to_string()),
        (_, e) => e.clone(),
    };
    match (slot.latest, &slot.error) {
        (Some(mut latest), None) => {
            tag(&mut latest, name);
            earlier = keep_apart(&mut latest, name, taken);
            out.gpus.extend(latest.gpus);
            out.processes.extend(latest.processes);
        }
        (Some(mut latest), Some(_)) => {
            tag(&mut latest, name);
            earlier = keep_apart(&mut latest, name, taken);
            out.gpus.extend(lost(&latest.gpus));
        }
        (None, _) => {}
    }
    out.hosts.push(HostStatus {
        name: name.to_string(),
        error,
    });
    earlier
}

#[cfg(test)]
#[path = "multi_tests.rs"]
mod tests;
