//! The exporter's own metrics: how long polling and rendering took, how old the published
//! sample is, sampler errors, scrapes and open connections, and the process's CPU, memory and
//! descriptors under the names Prometheus client libraries use (`process_*`). Rendered per
//! scrape (they are about now, not about the sample), from atomics the serve loop and the
//! listener update and from /proc/self. To add a counter (alerts sent, say): a field, and a
//! row in `Stats::counters`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::reading::Sample;
use crate::source::{GpuSource, SourceError};

use super::text::{Exposition, Family, Kind, Labels, Texts};

/// A monotonically rising count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A duration last measured, if ever (stored as nanoseconds + 1 so 0 means "never").
#[derive(Debug, Default)]
pub struct LastDuration(AtomicU64);

impl LastDuration {
    pub fn set(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1);
        self.0.store(nanos + 1, Ordering::Relaxed);
    }
    pub fn get(&self) -> Option<Duration> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            n => Some(Duration::from_nanos(n - 1)),
        }
    }
}

/// Shared by the serve loop, the timed source, the listener and the handlers.
#[derive(Debug, Default)]
pub struct Stats {
    pub sampler_errors: Counter,
    /// `/metrics` answers in the 0.0.4 text format.
    pub scrapes_text: Counter,
    /// `/metrics` answers in OpenMetrics.
    pub scrapes_openmetrics: Counter,
    pub poll: LastDuration,
    pub render: LastDuration,
    pub open_connections: AtomicUsize,
}

const fn gauge(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind: Kind::Gauge,
        help,
    }
}

const fn counter(name: &'static str, help: &'static str) -> Family {
    Family {
        name,
        kind: Kind::Counter,
        help,
    }
}

const SAMPLE_AGE: Family = gauge(
    "gpuwatch_exporter_sample_age_seconds",
    "Seconds since the sample being served was published (a few intervals at most while the GPU source answers).",
);
const POLL: Family = gauge(
    "gpuwatch_exporter_poll_duration_seconds",
    "How long the latest poll of the GPU source took.",
);
const RENDER: Family = gauge(
    "gpuwatch_exporter_render_duration_seconds",
    "How long turning the latest sample into the metrics and snapshot documents took.",
);
const CONNECTIONS: Family = gauge(
    "gpuwatch_exporter_connections",
    "HTTP connections open now (at most --max-connections).",
);
const CPU: Family = counter(
    "process_cpu_seconds_total",
    "User and system CPU time the exporter has used, in seconds.",
);
const RSS: Family = gauge(
    "process_resident_memory_bytes",
    "Resident memory of the exporter.",
);
const VSIZE: Family = gauge(
    "process_virtual_memory_bytes",
    "Virtual memory size of the exporter.",
);
const OPEN_FDS: Family = gauge("process_open_fds", "Open file descriptors.");
const MAX_FDS: Family = gauge(
    "process_max_fds",
    "The soft limit on open file descriptors.",
);
const START: Family = gauge(
    "process_start_time_seconds",
    "When the exporter started, in seconds since the Unix epoch.",
);

impl Stats {
    /// Every counter family with its labelled counters: the one list to extend.
    fn counters(&self) -> [(Family, Vec<(Labels, &Counter)>); 2] {
        let format = |name: &str| vec![("format", name.to_string())];
        [
            (
                counter(
                    "gpuwatch_exporter_sampler_errors_total",
                    "Polls of the GPU source that failed.",
                ),
                vec![(Labels::new(), &self.sampler_errors)],
            ),
            (
                counter(
                    "gpuwatch_exporter_scrapes_total",
                    "Requests for /metrics answered, by the text format sent.",
                ),
                vec![
                    (format("text"), &self.scrapes_text),
                    (format("openmetrics"), &self.scrapes_openmetrics),
                ],
            ),
        ]
    }

    /// The self-metrics now; `published` is when the served sample was published, if any.
    pub fn render(&self, published: Option<Instant>) -> Texts {
        let mut e = Exposition::new();
        let one = |v: Option<f64>| v.map(|v| (Labels::new(), v));
        let age = published.map(|t| t.elapsed().as_secs_f64());
        e.family(SAMPLE_AGE, one(age));
        e.family(POLL, one(self.poll.get().map(|d| d.as_secs_f64())));
        e.family(RENDER, one(self.render.get().map(|d| d.as_secs_f64())));
        for (family, counters) in self.counters() {
            e.family(
                family,
                counters.into_iter().map(|(l, c)| (l, c.get() as f64)),
            );
        }
        let open = self.open_connections.load(Ordering::Relaxed);
        e.family(CONNECTIONS, one(Some(open as f64)));
        let me = own_process();
        e.family(CPU, one(me.cpu_seconds));
        e.family(RSS, one(me.resident_bytes));
        e.family(VSIZE, one(me.virtual_bytes));
        e.family(OPEN_FDS, one(me.open_fds));
        e.family(MAX_FDS, one(me.max_fds));
        e.family(START, one(me.start_time));
        e.finish_both()
    }
}

/// The exporter process as /proc/self tells it; a field it cannot read is `None` (absent).
#[derive(Debug, Default)]
struct OwnProcess {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<f64>,
    virtual_bytes: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
    start_time: Option<f64>,
}

fn own_process() -> OwnProcess {
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let (ticks, page) = (ticks.max(1) as f64, page.max(1) as f64);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command, which is in parentheses and may hold spaces: state is [0].
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or_else(Vec::new, |(_, rest)| rest.split_whitespace().collect());
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|b| b.trim().parse::<f64>().ok())
    });
    let max_fds = crate::fd_limit::read_soft().map(|n| n as f64);
    OwnProcess {
        // utime and stime are fields 14 and 15 of stat(5), [11] and [12] here.
        cpu_seconds: field(11).zip(field(12)).map(|(u, s)| (u + s) / ticks),
        virtual_bytes: field(20),
        resident_bytes: field(21).map(|pages| pages * page),
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as f64),
        max_fds,
        start_time: boot.zip(field(19)).map(|(b, start)| b + start / ticks),
    }
}

/// Wraps the GPU source to time each poll (the sampler stays unaware of the exporter).
pub struct TimedSource {
    pub inner: Box<dyn GpuSource>,
    pub stats: std::sync::Arc<Stats>,
}

impl GpuSource for TimedSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let start = Instant::now();
        let result = self.inner.sample();
        self.stats.poll.set(start.elapsed());
        result
    }

    // A wrapper passes its inner source's notices on (the recorder paused on a full disk).
    fn notices(&mut self) -> Vec<String> {
        self.inner.notices()
    }
}

/// Seconds since the epoch for `t` (for tests of `process_start_time_seconds`).
#[cfg(test)]
fn epoch(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_reads_cpu_memory_fds_and_a_plausible_start() {
        let me = own_process();
        assert!(me.cpu_seconds.is_some_and(|c| c >= 0.0));
        assert!(me.resident_bytes.is_some_and(|b| b > 1e6), "{me:?}");
        assert!(me.open_fds.is_some_and(|n| n >= 3.0), "{me:?}");
        let now = epoch(std::time::SystemTime::now());
        let start = me.start_time.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start}"
        );
    }

    #[test]
    fn counters_and_durations_appear_once_set() {
        let stats = Stats::default();
        let before = stats.render(None).text;
        assert!(!before.contains("gpuwatch_exporter_poll_duration_seconds"));
        assert!(!before.contains("gpuwatch_exporter_sample_age_seconds"));
        assert!(before.contains("gpuwatch_exporter_sampler_errors_total 0\n"));
        stats.sampler_errors.inc();
        stats.poll.set(Duration::from_millis(250));
        let after = stats.render(Some(Instant::now())).text;
        assert!(after.contains("gpuwatch_exporter_sampler_errors_total 1\n"));
        assert!(after.contains("gpuwatch_exporter_poll_duration_seconds 0.25\n"));
        assert!(after.contains("gpuwatch_exporter_sample_age_seconds "));
    }
}
