//! `--prometheus URL`: the fleet as a Prometheus server knows it. Each refresh is one
//! instant query for every known GPU series (gpuwatch's `gpuwatch_gpu_*` and dcgm-exporter's
//! `DCGM_FI_DEV_*`, narrowed by `--selector`) plus `up`, and one range query per chart
//! (temperature, power, utilization, VRAM) for the history since the last refresh — never a
//! query per GPU. Hosts come from the `host`/`Hostname` labels, else the scrape `instance`.
//! A host whose series vanish keeps its GPUs, shown lost, with the reason (`up` = 0, or no
//! series); if Prometheus itself fails every GPU is shown lost. Processes are not in these
//! metrics, so none are listed: unknown, not invented. The network and clock are injected.
//! Everything is bounded: an answer's bytes (`api::MAX_ANSWER`), its series, labels and
//! points (`answer::LIMITS`), the GPUs shown (`MAX_GPUS`) and the hosts remembered
//! (`FORGET_AFTER`); what was left out is said in a notice, and carried on every sample
//! (`HostInfo::cuts`, the JSON's `cuts`).

mod answer;
pub mod api;
mod fleet;
mod heap;
mod history;
mod mig;
pub mod series;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use answer::Cut;
use api::Api;
use fleet::Reading;

use crate::reading::cut::{Bound, LeftOut};
use crate::reading::{GpuReading, GpuStatus, HostInfo, HostStatus, Sample};
use crate::source::{GpuSource, SourceError};

/// How long one query may take: a 1,000-host answer is tens of MB, so more than a remote
/// snapshot's 2 s.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The most GPUs one refresh shows (and remembers): 1,000 hosts × 8 GPUs and room to
/// spare; the series of GPUs beyond them are left out and counted.
pub const MAX_GPUS: usize = 10_000;

/// A host with no series for this long is forgotten (until then its GPUs are shown lost):
/// hosts that come and go must not pile up.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

/// What the TUI says at start in this mode.
pub const NOTICE: &str = "from Prometheus: per-process rows are not in the metrics (unknown)";

pub struct PrometheusSource {
    api: Box<dyn Api>,
    /// Where the data comes from, for the header and for errors.
    server: String,
    /// The `--selector`'s matchers, without braces (`cluster="a"`), or empty.
    matchers: String,
    history: history::Window,
    clock: Box<dyn Fn() -> SystemTime + Send>,
    /// Every host seen lately: its last GPUs (shown lost when it vanishes) and its scrape
    /// targets.
    known: HashMap<String, Known>,
    /// Which bounds the last notice said were hit, so it is said once, not every refresh.
    said_cut: Option<Vec<Bound>>,
    /// GPUs already said to have no `gpu` label (host, UUID), so each is said once.
    said_unindexed: std::collections::HashSet<(String, String)>,
    notices: Vec<String>,
}

#[derive(Debug, Clone, Default)]
struct Known {
    gpus: Vec<GpuReading>,
    instances: Vec<String>,
    /// When its series were last in an answer.
    seen: Option<SystemTime>,
}

/// Checks `--selector`: `{...}` with matchers inside; returns the inside.
pub fn parse_selector(text: &str) -> Result<String, String> {
    let t = text.trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .ok_or_else(|| format!("{t:?} is not a series selector like '{{cluster=\"a\"}}'"))?;
    if inner.contains(['{', '}']) {
        return Err(format!(
            "{t:?} is not a series selector like '{{cluster=\"a\"}}'"
        ));
    }
    Ok(inner.trim().trim_end_matches(',').to_string())
}

impl PrometheusSource {
    /// `server`: how to name it on screen; `matchers`: from [`parse_selector`]; `interval`
    /// and `window`: the history's step and length.
    pub fn new(
        api: Box<dyn Api>,
        server: &str,
        matchers: &str,
        interval: Duration,
        window: Duration,
        clock: Box<dyn Fn() -> SystemTime + Send>,
    ) -> Self {
        PrometheusSource {
            api,
            server: server.to_string(),
            matchers: matchers.to_string(),
            history: history::Window::new(interval, window),
            clock,
            known: HashMap::new(),
            said_cut: None,
            said_unindexed: Default::default(),
            notices: Vec::new(),
        }
    }

    /// The instant query: every known series and `up`, with the selector.
    fn instant_query(&self) -> String {
        let sep = if self.matchers.is_empty() { "" } else { "," };
        format!(
            "{{__name__=~\"{}|up\"{sep}{}}}",
            series::names_regex(),
            self.matchers
        )
    }

    /// The instant query's answer, read into the fleet as it is parsed.
    fn read_fleet(&self, path: &str) -> Result<(fleet::Fleet, Cut), String> {
        let body = self.api.get(path)?;
        let mut reading = Reading::default();
        let cut = answer::read_each(&body, &answer::LIMITS, &mut |s| reading.add(&s))?;
        Ok((reading.finish(), cut))
    }
}

impl GpuSource for PrometheusSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let sample = self.refresh();
        // The answers and the window are freed by now; a large fleet's would otherwise stay
        // resident (`heap`).
        if sample
            .as_ref()
            .is_ok_and(|s| s.gpus.len() >= heap::TRIM_FROM_GPUS)
        {
            heap::give_back_freed();
        }
        sample
    }

    fn notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }
}

impl PrometheusSource {
    /// One refresh: the instant answer, the history since the last, the hosts seen and gone.
    fn refresh(&mut self) -> Result<Sample, SourceError> {
        let now = (self.clock)();
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let (mut fleet, mut cut) =
            match self.read_fleet(&api::instant_path(&self.instant_query(), secs)) {
                Ok(read) => read,
                Err(why) => return self.server_failed(now, &why),
            };
        let history = self.history.fetch(&*self.api, &self.matchers, secs);
        let mut out = Sample {
            time: now,
            host: HostInfo {
                hostname: format!("prometheus {}", self.server),
                driver_version: fleet.driver_version(),
                cuda_version: None,
                // A fleet has no one host's load; node-exporter's series are not read.
                load: Default::default(),
                lookups: Vec::new(),
                cuts: Vec::new(),
            },
            gpus: Vec::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
            history,
        };
        let mut names: Vec<String> = fleet.hosts.keys().cloned().collect();
        names.sort();
        for name in &names {
            let mut host = fleet.hosts.remove(name).unwrap_or_default();
            host.seen = Some(now);
            out.gpus.extend(host.gpus.iter().cloned());
            out.hosts.push(HostStatus {
                name: name.clone(),
                error: None,
            });
            self.known.insert(name.clone(), host);
        }
        self.forget(now);
        self.add_vanished(&mut out, &names, &fleet.up);
        cut.add(self.history.take_cut());
        out.host.cuts = left_out(cut, fleet.left_out);
        self.note_cut(&out.host.cuts);
        self.note_unindexed(&fleet.unindexed);
        Ok(out)
    }
    /// Forgets hosts unseen for `FORGET_AFTER`, and the longest unseen beyond `MAX_GPUS`
    /// GPUs remembered, so hosts that come and go cost nothing once gone.
    fn forget(&mut self, now: SystemTime) {
        let fresh = |seen: Option<SystemTime>| {
            seen.is_some_and(|t| now.duration_since(t).unwrap_or_default() < FORGET_AFTER)
        };
        self.known.retain(|_, k| fresh(k.seen));
        let mut total: usize = self.known.values().map(|k| k.gpus.len()).sum();
        if total <= MAX_GPUS {
            return;
        }
        let mut by_age: Vec<(Option<SystemTime>, String)> = self
            .known
            .iter()
            .map(|(name, k)| (k.seen, name.clone()))
            .collect();
        by_age.sort();
        for (_, name) in by_age {
            if total <= MAX_GPUS {
                break;
            }
            if let Some(k) = self.known.remove(&name) {
                total -= k.gpus.len();
            }
        }
    }

    /// Says once per GPU that its series carry no `gpu` label and which index it is shown
    /// as: the index is gpuwatch's, not the exporter's.
    fn note_unindexed(&mut self, unindexed: &[(String, String, u32)]) {
        for (host, uuid, index) in unindexed {
            if self.said_unindexed.insert((host.clone(), uuid.clone())) {
                self.notices.push(format!(
                    "{host}: GPU {uuid} has no `gpu` label (its index is unknown); shown as {index}, after the GPUs whose index is known"
                ));
            }
        }
    }

    /// Says what this refresh left out, once for each new set of bounds hit (the counts
    /// change every refresh; the notice would otherwise repeat forever).
    fn note_cut(&mut self, cuts: &[LeftOut]) {
        if cuts.is_empty() {
            self.said_cut = None;
            return;
        }
        let bounds: Vec<Bound> = cuts.iter().map(|c| c.bound).collect();
        if self.said_cut.as_ref() == Some(&bounds) {
            return;
        }
        self.said_cut = Some(bounds);
        self.notices.push(cut_text(&self.server, cuts));
    }

    /// Hosts seen before with no series now: their GPUs lost, and why.
    fn add_vanished(&self, out: &mut Sample, present: &[String], up: &HashMap<String, f64>) {
        let mut gone: Vec<(&String, &Known)> = self
            .known
            .iter()
            .filter(|(name, _)| present.binary_search(name).is_err())
            .collect();
        gone.sort_by(|a, b| a.0.cmp(b.0));
        for (name, known) in gone {
            out.gpus.extend(lost(&known.gpus));
            let down = known.instances.iter().find(|i| up.get(*i) == Some(&0.0));
            let error = match down {
                Some(i) => format!("Prometheus cannot scrape {i} (up = 0)"),
                None => "no current series in Prometheus".to_string(),
            };
            out.hosts.push(HostStatus {
                name: name.clone(),
                error: Some(error),
            });
        }
    }

    /// Prometheus did not answer: before any answer that is the source failing; after, every
    /// GPU known is shown lost, with the server's reason.
    fn server_failed(&self, now: SystemTime, why: &str) -> Result<Sample, SourceError> {
        let why = format!("Prometheus {}: {why}", self.server);
        if self.known.is_empty() {
            return Err(SourceError::Unavailable(why));
        }
        let mut names: Vec<&String> = self.known.keys().collect();
        names.sort();
        let gpus = names
            .iter()
            .flat_map(|n| lost(&self.known[*n].gpus))
            .collect();
        Ok(Sample {
            time: now,
            host: HostInfo {
                hostname: format!("prometheus {}", self.server),
                ..HostInfo::default()
            },
            gpus,
            processes: Vec::new(),
            hosts: vec![HostStatus {
                name: self.server.clone(),
                error: Some(why),
            }],
            history: None,
        })
    }
}

/// What one refresh left out, by bound (only the bounds hit).
fn left_out(cut: Cut, gpus_left_out: usize) -> Vec<LeftOut> {
    [
        (Bound::Gpus, gpus_left_out, MAX_GPUS),
        (Bound::Series, cut.series, answer::LIMITS.series),
        (Bound::Labels, cut.labels, answer::LIMITS.label_bytes),
        (Bound::Points, cut.points, answer::LIMITS.points),
    ]
    .into_iter()
    .filter(|(_, count, _)| *count > 0)
    .map(|(bound, count, limit)| LeftOut {
        bound,
        count,
        limit,
    })
    .collect()
}

/// The notice for what one refresh left out, and what to do about it.
fn cut_text(server: &str, cuts: &[LeftOut]) -> String {
    let parts: Vec<String> = cuts
        .iter()
        .map(|c| {
            let (count, limit) = (c.count, c.limit);
            match c.bound {
                Bound::Gpus => format!("{count} series of GPUs beyond the first {limit}"),
                Bound::Series => format!("{count} series beyond {limit} in one answer"),
                Bound::Labels => format!("{count} label values longer than {limit} bytes"),
                Bound::Points => format!("{count} history points beyond {limit} per series"),
            }
        })
        .collect();
    format!(
        "Prometheus {server}: left out {} (gpuwatch's bounds); narrow it with --selector",
        parts.join(", ")
    )
}

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

#[cfg(test)]
mod tests;
