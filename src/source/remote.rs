//! Remote hosts: what polling one host's `gpuwatch serve` snapshot (`/api/v1/snapshot`)
//! means — addresses, the hosts file, the timeout, the backoff, what is kept of a host — and
//! the [`Transport`] that fetches a document. The polling itself runs on a tokio runtime
//! with bounded concurrency (`poller`); the HTTP client is `http`. The network is injected
//! ([`Transport`]) and time is tokio's, so the schedule is tested on paused time without
//! sockets.

mod http;
pub mod poller;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use crate::reading::Sample;

pub use http::HttpTransport;

/// How long one poll may take before the host counts as failing.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait between retries of a failing host.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Most hosts one gpuwatch watches (`--remote` + `--hosts-file`). Past this the screen is no
/// longer a useful view, and a fleet that size is better read from Prometheus.
pub const MAX_HOSTS: usize = 1000;
/// Most polls in flight at once: 200 hosts cost this many sockets, not 200, and dead hosts
/// waiting out their timeout cannot hold more than this many of them.
pub const CONCURRENCY: usize = 32;

/// What a [`Transport`] returns: the document's text, or a short reason.
pub type Fetch = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// Fetches one host's snapshot document.
pub trait Transport: Send + Sync + 'static {
    /// The document's text from `address` (HOST:PORT), or a short reason it could not be
    /// had. The poller cuts it off at [`TIMEOUT`] (dropping the future), so a transport need
    /// not time itself.
    fn fetch(&self, address: &str) -> Fetch;
}

/// The one place a fetched document becomes a sample (the wire format lives elsewhere).
/// `received` stamps a document that carries no time of its own.
pub fn parse_snapshot(text: &str, received: SystemTime) -> Result<Sample, String> {
    crate::wire::read_snapshot(text, received)
}

/// What the poller last learned about a host.
#[derive(Debug, Clone, Default)]
pub struct HostSlot {
    /// The latest good sample (kept while the host fails, so its GPUs keep their slots).
    pub latest: Option<Sample>,
    /// Why the last poll failed; `None` after a good one.
    pub error: Option<String>,
}

impl HostSlot {
    /// Whether the host has answered or failed at least once.
    pub fn settled(&self) -> bool {
        self.latest.is_some() || self.error.is_some()
    }
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
    let text = crate::safe_file::read_text(path, crate::safe_file::MAX_TEXT_FILE)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        hosts.push(parse_address(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?);
        // Stops at the first host past the limit: a huge file is refused, never held.
        if hosts.len() > MAX_HOSTS {
            return Err(format!(
                "{}:{}: {}",
                path.display(),
                i + 1,
                too_many(hosts.len())
            ));
        }
    }
    if hosts.is_empty() {
        return Err(format!("{}: no HOST:PORT lines", path.display()));
    }
    Ok(hosts)
}

/// Refuses a fleet of more than [`MAX_HOSTS`] hosts (`--remote` and `--hosts-file` together).
pub fn check_host_count(n: usize) -> Result<(), String> {
    if n > MAX_HOSTS {
        Err(too_many(n))
    } else {
        Ok(())
    }
}

fn too_many(n: usize) -> String {
    let shown = if n > MAX_HOSTS + 1 {
        n.to_string()
    } else {
        format!("more than {MAX_HOSTS}")
    };
    format!(
        "{shown} hosts: gpuwatch watches at most {MAX_HOSTS} with --remote/--hosts-file \
         (for a larger fleet, let Prometheus scrape it and use --prometheus)"
    )
}

/// When to poll again: every interval while the host answers; while it fails, twice as
/// long after each failure, up to [`MAX_BACKOFF`], so a dead host costs almost nothing.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    interval: Duration,
    wait: Duration,
}

impl Backoff {
    pub fn new(interval: Duration) -> Backoff {
        Backoff {
            interval,
            wait: interval,
        }
    }

    /// The wait after a poll that succeeded (`true`) or failed.
    pub fn after(&mut self, ok: bool) -> Duration {
        self.wait = if ok {
            self.interval
        } else {
            (self.wait * 2).min(MAX_BACKOFF)
        };
        self.wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_ceiling_and_resets_on_success() {
        let mut b = Backoff::new(Duration::from_secs(1));
        let secs = |b: &mut Backoff, ok| b.after(ok).as_secs();
        let failing: Vec<u64> = (0..7).map(|_| secs(&mut b, false)).collect();
        assert_eq!(failing, [2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(secs(&mut b, true), 1);
        assert_eq!(secs(&mut b, false), 2);
    }

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
