//! One remote host: a background thread polls its `gpuwatch serve` snapshot
//! (`/api/v1/snapshot`) with a timeout, keeps the latest sample, and backs off while the host
//! fails. Reading the latest never waits on the network, so a slow or dead host cannot
//! stall the others or the UI.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use super::Sample;

/// How long one poll may take before the host counts as failing.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait between retries of a failing host.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What the poller last learned about a host.
#[derive(Debug, Clone, Default)]
pub struct HostSlot {
    /// The latest good sample (kept while the host fails, so its GPUs keep their slots).
    pub latest: Option<Sample>,
    /// Why the last poll failed; `None` after a good one.
    pub error: Option<String>,
}

/// A remote host being polled. Dropping it stops the poller.
pub struct RemoteHost {
    pub name: String,
    slot: Arc<Mutex<HostSlot>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Parses `host:port` (the port is required: it is the exporter's).
pub fn parse_address(text: &str) -> Result<String, String> {
    let t = text.trim();
    let (host, port) = t
        .rsplit_once(':')
        .ok_or_else(|| format!("{t:?} needs a port, e.g. {t}:9400"))?;
    if host.is_empty() || host.contains('/') {
        return Err(format!("{t:?} is not HOST:PORT"));
    }
    port.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{t:?} has no valid port"))?;
    Ok(t.to_string())
}

/// Reads `--hosts-file`: one HOST:PORT a line; blank lines and `#` comments are skipped.
/// Errors name the file and line.
pub fn read_hosts_file(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        hosts.push(parse_address(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?);
    }
    if hosts.is_empty() {
        return Err(format!("{}: no HOST:PORT lines", path.display()));
    }
    Ok(hosts)
}

impl RemoteHost {
    /// Starts polling `address` (HOST:PORT) every `interval`.
    pub fn start(address: &str, interval: Duration) -> RemoteHost {
        let slot = Arc::new(Mutex::new(HostSlot::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let url = format!("http://{address}/api/v1/snapshot");
        let thread = {
            let (slot, stop) = (slot.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("poll {address}"))
                .spawn(move || poll_loop(&url, interval, &slot, &stop))
                .ok()
        };
        RemoteHost {
            name: address.to_string(),
            slot,
            stop,
            thread,
        }
    }

    /// The latest state, without waiting.
    pub fn latest(&self) -> HostSlot {
        self.slot.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The thread notices within one sleep step; no need to wait for it.
        drop(self.thread.take());
    }
}

fn poll_loop(url: &str, interval: Duration, slot: &Mutex<HostSlot>, stop: &AtomicBool) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(true)
        .build()
        .into();
    let mut backoff = interval;
    while !stop.load(Ordering::Relaxed) {
        let result = fetch(&agent, url);
        let wait = match result {
            Ok(sample) => {
                if let Ok(mut s) = slot.lock() {
                    s.latest = Some(sample);
                    s.error = None;
                }
                backoff = interval;
                interval
            }
            Err(why) => {
                if let Ok(mut s) = slot.lock() {
                    s.error = Some(why);
                }
                // Double the wait on each failure, up to a ceiling, so a dead host costs
                // almost nothing; the first success resets it.
                backoff = (backoff * 2).min(MAX_BACKOFF);
                backoff
            }
        };
        sleep_unless_stopped(wait, stop);
    }
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let step = Duration::from_millis(100);
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::Relaxed) {
        let d = left.min(step);
        std::thread::sleep(d);
        left -= d;
    }
}

fn fetch(agent: &ureq::Agent, url: &str) -> Result<Sample, String> {
    let mut response = agent.get(url).call().map_err(describe)?;
    let text = response.body_mut().read_to_string().map_err(describe)?;
    crate::source::wire::read_snapshot(&text, SystemTime::now())
}

/// A short reason for the header, without the URL noise.
fn describe(e: ureq::Error) -> String {
    match e {
        ureq::Error::StatusCode(code) => format!("HTTP {code}"),
        ureq::Error::Timeout(_) => format!("no answer within {}s", TIMEOUT.as_secs()),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_address(" gpu1:9400 ").unwrap(), "gpu1:9400");
        assert_eq!(parse_address("10.0.0.5:9400").unwrap(), "10.0.0.5:9400");
        assert!(parse_address("gpu1").unwrap_err().contains("needs a port"));
        assert!(
            parse_address("gpu1:http")
                .unwrap_err()
                .contains("no valid port")
        );
        assert!(parse_address(":9400").is_err());
        assert!(parse_address("http://gpu1:9400").is_err());
    }

    #[test]
    fn hosts_files_name_the_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "# lab\ngpu1:9400\n\n  gpu2:9400  # rack 2\n").unwrap();
        assert_eq!(
            read_hosts_file(&path).unwrap(),
            vec!["gpu1:9400", "gpu2:9400"]
        );
        std::fs::write(&path, "gpu1:9400\ngpu2\n").unwrap();
        let err = read_hosts_file(&path).unwrap_err();
        assert_eq!(
            err,
            format!(
                "{}:2: \"gpu2\" needs a port, e.g. gpu2:9400",
                path.display()
            )
        );
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(
            read_hosts_file(&path)
                .unwrap_err()
                .ends_with("no HOST:PORT lines")
        );
    }
}
