//! Several hosts as one source: the local GPUs (optionally) plus each remote host's latest
//! snapshot, every remote GPU tagged with its host (local GPUs stay untagged: they are the
//! only ones whose processes can be signalled from here). A host that stops answering keeps its GPUs'
//! slots (shown lost) and its reason in `Sample::hosts`, while the others keep updating.
//! The network and the clock come in through [`PollIo`], so tests script both.

use std::sync::Arc;
use std::time::Duration;

use super::remote::{HostSlot, PollIo, RemoteHost, Wake};
use super::{GpuReading, GpuSource, GpuStatus, HostInfo, HostStatus, Sample, SourceError};

pub struct MultiSource {
    local: Option<(String, Box<dyn GpuSource>)>,
    remotes: Vec<RemoteHost>,
    io: PollIo,
    /// Raised by every poller after each poll (the first sample waits on it).
    answered: Arc<Wake>,
    /// What each remote is called on screen, in `remotes` order.
    names: Vec<String>,
    /// Whether the first sample was taken (it waits for every host's first answer).
    started: bool,
}

impl MultiSource {
    /// `local`: this machine's source and the name to show for it. Polls over HTTP on
    /// the system clock.
    pub fn new(
        local: Option<(String, Box<dyn GpuSource>)>,
        addresses: &[String],
        interval: Duration,
    ) -> Self {
        Self::with_io(local, addresses, interval, PollIo::system())
    }

    /// The same with the network and the clock given.
    pub fn with_io(
        local: Option<(String, Box<dyn GpuSource>)>,
        addresses: &[String],
        interval: Duration,
        io: PollIo,
    ) -> Self {
        let answered = Wake::new();
        let remotes = addresses
            .iter()
            .map(|a| RemoteHost::start(a, interval, io.clone(), answered.clone()))
            .collect();
        let names = display_names(addresses);
        MultiSource {
            local,
            remotes,
            io,
            answered,
            names,
            started: false,
        }
    }
}

/// The names shown for hosts: `gpu1:9400` → `gpu1` (the port adds nothing on screen),
/// unless two addresses share a host, which then keep their ports.
pub fn display_names(addresses: &[String]) -> Vec<String> {
    let host = |a: &str| a.rsplit_once(':').map_or(a, |(h, _)| h).to_string();
    addresses
        .iter()
        .map(|a| {
            let h = host(a);
            let shared = addresses.iter().filter(|b| host(b) == h).count() > 1;
            if shared { a.clone() } else { h }
        })
        .collect()
}

fn tag(sample: &mut Sample, host: &str) {
    for g in &mut sample.gpus {
        g.host = Some(host.to_string());
    }
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
    /// A host whose transport overruns its timeout is shown as still waiting.
    fn wait_for_first_answers(&self) {
        let clock = &self.io.clock;
        let deadline = clock.now() + super::remote::TIMEOUT + Duration::from_millis(500);
        loop {
            // Lowered before looking, so an answer that lands after the look wakes the sleep.
            self.answered.take();
            if self.remotes.iter().all(|r| r.latest().settled()) || clock.now() >= deadline {
                return;
            }
            clock.sleep_until(deadline, &self.answered);
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
            time: self.io.clock.wall(),
            host: HostInfo::default(),
            gpus: Vec::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
        };
        // Driver and CUDA versions are shown only when every host agrees.
        let mut versions: Vec<(Option<String>, Option<String>)> = Vec::new();
        if let Some((name, source)) = &mut self.local {
            let error = match source.sample() {
                Ok(s) => {
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
        for (remote, name) in self.remotes.iter().zip(&self.names) {
            let slot = remote.latest();
            if let Some(latest) = &slot.latest {
                versions.push((
                    latest.host.driver_version.clone(),
                    latest.host.cuda_version.clone(),
                ));
            }
            add_remote(&mut out, name, slot);
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
}

/// One remote host's part of the merged sample: its GPUs (lost while it fails, their
/// processes dropped), and its status line.
fn add_remote(out: &mut Sample, name: &str, slot: HostSlot) {
    let error = match (&slot.latest, &slot.error) {
        (None, None) => Some("waiting for the first answer".to_string()),
        (_, e) => e.clone(),
    };
    match (slot.latest, &slot.error) {
        (Some(mut latest), None) => {
            tag(&mut latest, name);
            out.gpus.extend(latest.gpus);
            out.processes.extend(latest.processes);
        }
        (Some(mut latest), Some(_)) => {
            tag(&mut latest, name);
            out.gpus.extend(lost(&latest.gpus));
        }
        (None, _) => {}
    }
    out.hosts.push(HostStatus {
        name: name.to_string(),
        error,
    });
}

#[cfg(test)]
#[path = "multi_tests.rs"]
mod tests;
