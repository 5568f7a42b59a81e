//! Several hosts as one source: the local GPUs (optionally) plus each remote host's latest
//! snapshot, every remote GPU tagged with its host (local GPUs stay untagged: they are the
//! only ones whose processes can be signalled from here). A host that stops answering keeps its GPUs'
//! slots (shown lost) and its reason in `Sample::hosts`, while the others keep updating.

use std::time::{Duration, SystemTime};

use super::remote::RemoteHost;
use super::{GpuReading, GpuSource, GpuStatus, HostInfo, HostStatus, Sample, SourceError};

pub struct MultiSource {
    local: Option<(String, Box<dyn GpuSource>)>,
    remotes: Vec<RemoteHost>,
    /// What each remote is called on screen, in `remotes` order.
    names: Vec<String>,
    /// Whether the first sample was taken (it waits for every host's first answer).
    started: bool,
}

impl MultiSource {
    /// `local`: this machine's source and the name to show for it.
    pub fn new(
        local: Option<(String, Box<dyn GpuSource>)>,
        addresses: &[String],
        interval: Duration,
    ) -> Self {
        let remotes = addresses
            .iter()
            .map(|a| RemoteHost::start(a, interval))
            .collect();
        let names = display_names(addresses);
        MultiSource {
            local,
            remotes,
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
            l.host = g.host.clone();
            l.status = GpuStatus::Lost;
            l
        })
        .collect()
}

impl MultiSource {
    /// Waits (at most one poll timeout) until every host has answered or failed once, so
    /// the first sample — all that `--once` and `pick` see — is not just "waiting".
    fn wait_for_first_answers(&self) {
        let deadline =
            std::time::Instant::now() + super::remote::TIMEOUT + Duration::from_millis(500);
        while std::time::Instant::now() < deadline {
            let settled = self.remotes.iter().all(|r| {
                let s = r.latest();
                s.latest.is_some() || s.error.is_some()
            });
            if settled {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
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
        };
        let mut names = Vec::new();
        // Driver and CUDA versions are shown only when every host agrees.
        let mut versions: Vec<(Option<String>, Option<String>)> = Vec::new();
        if let Some((name, source)) = &mut self.local {
            let status = match source.sample() {
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
                error: status,
            });
            names.push(name.clone());
        }
        for (remote, name) in self.remotes.iter().zip(&self.names) {
            let name = name.clone();
            let slot = remote.latest();
            if let Some(latest) = &slot.latest {
                versions.push((
                    latest.host.driver_version.clone(),
                    latest.host.cuda_version.clone(),
                ));
            }
            match (&slot.latest, &slot.error) {
                (Some(latest), None) => {
                    let mut s = latest.clone();
                    tag(&mut s, &name);
                    out.gpus.extend(s.gpus);
                    out.processes.extend(s.processes);
                }
                (Some(latest), Some(_)) => {
                    let mut s = latest.clone();
                    tag(&mut s, &name);
                    out.gpus.extend(lost(&s.gpus));
                }
                (None, _) => {}
            }
            let error = match (&slot.latest, slot.error) {
                (None, None) => Some("waiting for the first answer".to_string()),
                (_, e) => e,
            };
            out.hosts.push(HostStatus {
                name: name.clone(),
                error,
            });
            names.push(name);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_port_only_when_needed() {
        let a = |v: &[&str]| display_names(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(a(&["gpu1:9400", "gpu2:9400"]), ["gpu1", "gpu2"]);
        assert_eq!(
            a(&["lab:9400", "lab:9401", "gpu2:9400"]),
            ["lab:9400", "lab:9401", "gpu2"]
        );
    }
}
