//! One remote host: a background thread polls its `gpuwatch serve` snapshot
//! (`/api/v1/snapshot`) through a [`Transport`] with a timeout, keeps the latest sample, and
//! backs off while the host fails. Reading the latest never waits on the network, so a slow
//! or dead host cannot stall the others or the UI. The network and time are injected
//! ([`Transport`], [`Clock`]) so the polling is tested without sockets and without sleeping.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::Sample;

/// How long one poll may take before the host counts as failing.
pub const TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait between retries of a failing host.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Fetches one host's snapshot document.
pub trait Transport: Send + Sync {
    /// The document's text from `address` (HOST:PORT), or a short reason it could not be
    /// had. Returns within `timeout`: a host that takes longer is failing.
    fn fetch(&self, address: &str, timeout: Duration) -> Result<String, String>;
}

/// Plain HTTP with ureq: `GET http://HOST:PORT/api/v1/snapshot`.
pub struct HttpTransport {
    agent: ureq::Agent,
}

impl Default for HttpTransport {
    fn default() -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(true)
            .build()
            .into();
        HttpTransport { agent }
    }
}

impl Transport for HttpTransport {
    fn fetch(&self, address: &str, timeout: Duration) -> Result<String, String> {
        let url = format!("http://{address}/api/v1/snapshot");
        let describe = |e| describe(e, timeout);
        let request = self.agent.get(&url).config().timeout_global(Some(timeout));
        let mut response = request.build().call().map_err(describe)?;
        response.body_mut().read_to_string().map_err(describe)
    }
}

/// A short reason for the header, without the URL noise.
fn describe(e: ureq::Error, timeout: Duration) -> String {
    match e {
        ureq::Error::StatusCode(code) => format!("HTTP {code}"),
        ureq::Error::Timeout(_) => format!("no answer within {timeout:?}"),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

/// The one place a fetched document becomes a sample (the wire format lives elsewhere).
/// `received` stamps a document that carries no time of its own.
pub fn parse_snapshot(text: &str, received: SystemTime) -> Result<Sample, String> {
    crate::source::wire::read_snapshot(text, received)
}

/// Time as the pollers see it: readings, and waiting that a [`Wake`] can cut short.
pub trait Clock: Send + Sync {
    /// Monotonic time, for deadlines and backoff.
    fn now(&self) -> Instant;
    /// Wall time, to stamp samples.
    fn wall(&self) -> SystemTime;
    /// Blocks until `deadline` or until `wake` is raised, whichever comes first; returns
    /// whether `wake` was raised.
    fn sleep_until(&self, deadline: Instant, wake: &Arc<Wake>) -> bool;
}

/// The real clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
    fn sleep_until(&self, deadline: Instant, wake: &Arc<Wake>) -> bool {
        let mut raised = wake.raised.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            if *raised || now >= deadline {
                return *raised;
            }
            raised = match wake.changed.wait_timeout(raised, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// A flag a sleeping thread can be woken by: a poller's "stop", or "a host answered" for
/// whoever waits on the first answers.
#[derive(Debug, Default)]
pub struct Wake {
    raised: Mutex<bool>,
    changed: Condvar,
}

impl Wake {
    pub fn new() -> Arc<Wake> {
        Arc::new(Wake::default())
    }

    pub fn raise(&self) {
        *self.raised.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    /// Whether it was raised, lowering it again.
    pub fn take(&self) -> bool {
        std::mem::take(&mut *self.raised.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Blocks while it is not raised and `keep_waiting` holds, re-checking both whenever
    /// [`Wake::notify`] is called; returns whether it was raised. For clocks other than the
    /// system's (a test's clock notifies its sleepers when it moves).
    pub fn wait_while(&self, keep_waiting: impl Fn() -> bool) -> bool {
        let mut raised = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        while !*raised && keep_waiting() {
            raised = self.changed.wait(raised).unwrap_or_else(|e| e.into_inner());
        }
        *raised
    }

    /// Wakes the waiters to re-check, without raising.
    pub fn notify(&self) {
        let _guard = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        self.changed.notify_all();
    }
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

/// The outside world of the pollers: the network and time.
#[derive(Clone)]
pub struct PollIo {
    pub transport: Arc<dyn Transport>,
    pub clock: Arc<dyn Clock>,
}

impl PollIo {
    /// HTTP on the system clock.
    pub fn system() -> PollIo {
        PollIo {
            transport: Arc::new(HttpTransport::default()),
            clock: Arc::new(SystemClock),
        }
    }
}

/// A remote host being polled. Dropping it stops the poller.
pub struct RemoteHost {
    pub name: String,
    slot: Arc<Mutex<HostSlot>>,
    stop: Arc<Wake>,
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
    let text = crate::safe_file::read_text(path, crate::safe_file::MAX_TEXT_FILE)
        .map_err(|e| format!("{}: {e}", path.display()))?;
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
    /// Starts polling `address` (HOST:PORT) every `interval`; `answered` is raised after
    /// every poll.
    pub fn start(address: &str, interval: Duration, io: PollIo, answered: Arc<Wake>) -> RemoteHost {
        let slot = Arc::new(Mutex::new(HostSlot::default()));
        let stop = Wake::new();
        let thread = {
            let (slot, stop, address) = (slot.clone(), stop.clone(), address.to_string());
            std::thread::Builder::new()
                .name(format!("poll {address}"))
                .spawn(move || poll_loop(&address, interval, &io, &slot, &stop, &answered))
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
        // Wakes the poller from its wait; one in the middle of a fetch ends after it (within
        // the timeout). No need to wait for it.
        self.stop.raise();
        drop(self.thread.take());
    }
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

/// Polls until `stop` is raised, raising `answered` after each poll.
fn poll_loop(
    address: &str,
    interval: Duration,
    io: &PollIo,
    slot: &Mutex<HostSlot>,
    stop: &Arc<Wake>,
    answered: &Wake,
) {
    let mut backoff = Backoff::new(interval);
    loop {
        let result = io
            .transport
            .fetch(address, TIMEOUT)
            .and_then(|text| parse_snapshot(&text, io.clock.wall()));
        // Timed from the end of this poll, before anyone is told of it.
        let next = io.clock.now() + backoff.after(result.is_ok());
        if let Ok(mut s) = slot.lock() {
            match result {
                Ok(sample) => {
                    s.latest = Some(sample);
                    s.error = None;
                }
                Err(why) => s.error = Some(why),
            }
        }
        answered.raise();
        if io.clock.sleep_until(next, stop) {
            return;
        }
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
    fn a_raised_wake_cuts_a_real_sleep_short() {
        let wake = Wake::new();
        wake.raise();
        let far = Instant::now() + Duration::from_secs(3600);
        assert!(SystemClock.sleep_until(far, &wake));
        assert!(wake.take());
        assert!(!wake.take(), "take lowers it");
        // A deadline already past returns at once, not raised.
        assert!(!SystemClock.sleep_until(Instant::now(), &wake));
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
