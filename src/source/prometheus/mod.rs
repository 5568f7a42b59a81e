//! `--prometheus URL`: the fleet as a Prometheus server knows it. Each refresh is one
//! instant query for every known GPU series (gpuwatch's `gpuwatch_gpu_*` and dcgm-exporter's
//! `DCGM_FI_DEV_*`, narrowed by `--selector`) plus `up`, and one range query per chart
//! (temperature, power, utilization, VRAM) for the history since the last refresh — never a
//! query per GPU. Hosts come from the `host`/`Hostname` labels, else the scrape `instance`.
//! A host whose series vanish keeps its GPUs, shown lost, with the reason (`up` = 0, or no
//! series); if Prometheus itself fails every GPU is shown lost. Processes are not in these
//! metrics, so none are listed: unknown, not invented. The network and clock are injected.

pub mod api;
mod history;
mod mig;
pub mod series;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use api::{Api, Series};
use series::{Identity, Target};

use super::workload::PodAllocation;
use super::{
    GpuId, GpuReading, GpuSource, GpuStatus, HostInfo, HostStatus, Sample, SourceError, Vendor,
};

/// How long one query may take: a 1,000-host answer is tens of MB, so more than a remote
/// snapshot's 2 s.
pub const TIMEOUT: Duration = Duration::from_secs(5);

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
    /// Every host seen: its last GPUs (shown lost when it vanishes) and its scrape targets.
    known: HashMap<String, Known>,
}

#[derive(Debug, Clone, Default)]
struct Known {
    gpus: Vec<GpuReading>,
    instances: Vec<String>,
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

    fn query(&self, path: &str) -> Result<Vec<Series>, String> {
        api::parse_answer(&self.api.get(path)?)
    }
}

impl GpuSource for PrometheusSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let now = (self.clock)();
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let answer = match self.query(&api::instant_path(&self.instant_query(), secs)) {
            Ok(a) => a,
            Err(why) => return self.server_failed(now, &why),
        };
        let mut fleet = Fleet::read(&answer);
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
            },
            gpus: Vec::new(),
            processes: Vec::new(),
            hosts: Vec::new(),
            history,
        };
        let mut names: Vec<String> = fleet.hosts.keys().cloned().collect();
        names.sort();
        for name in &names {
            let host = fleet.hosts.remove(name).unwrap_or_default();
            out.gpus.extend(host.gpus.iter().cloned());
            out.hosts.push(HostStatus {
                name: name.clone(),
                error: None,
            });
            self.known.insert(name.clone(), host);
        }
        self.add_vanished(&mut out, &names, &fleet.up);
        Ok(out)
    }
}

impl PrometheusSource {
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

/// One instant answer, read: GPUs by host, each scrape target's `up`, driver versions.
#[derive(Default)]
struct Fleet {
    hosts: HashMap<String, Known>,
    up: HashMap<String, f64>,
    drivers: Vec<String>,
}

impl Fleet {
    fn read(answer: &[Series]) -> Fleet {
        let mut fleet = Fleet::default();
        let mut gpus: HashMap<String, (Identity, GpuReading)> = HashMap::new();
        let mut instances: HashMap<String, Vec<mig::Building>> = HashMap::new();
        for s in answer {
            let Some(&(_, value)) = s.points.last() else {
                continue;
            };
            let name = s.labels.get("__name__").map_or("", String::as_str);
            if name == "up" {
                if let Some(i) = s.labels.get("instance") {
                    fleet.up.insert(i.clone(), value);
                }
                continue;
            }
            let (Some(metric), Some(id)) = (series::metric(name), series::identity(&s.labels))
            else {
                continue;
            };
            let (_, g) = gpus.entry(id.uuid.clone()).or_insert_with(|| {
                let g = GpuReading::absent(GpuId(id.uuid.clone()), id.index.unwrap_or(0), "");
                (id.clone(), g)
            });
            fill_identity(g, &id, &s.labels, &mut fleet.drivers);
            if mig::instance_of(&s.labels).is_some() {
                // One instance's value (its framebuffer), not the GPU's.
                let list = instances.entry(id.uuid.clone()).or_default();
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
        for (uuid, list) in instances {
            if let Some((_, g)) = gpus.get_mut(&uuid) {
                mig::finish(g, list);
            }
        }
        fleet.place(gpus.into_values().collect());
        fleet
    }

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
            .zip(super::multi::display_names(&instances))
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
        for k in self.hosts.values_mut() {
            k.gpus
                .sort_by(|a, b| (a.index, &a.id).cmp(&(b.index, &b.id)));
        }
    }

    /// The driver version when every GPU that says one says the same.
    fn driver_version(&self) -> Option<String> {
        let first = self.drivers.first()?;
        self.drivers
            .iter()
            .all(|d| d == first)
            .then(|| first.clone())
    }
}

/// Name, PCI bus id, driver version and pod allocation from whichever series has them.
fn fill_identity(
    g: &mut GpuReading,
    id: &Identity,
    labels: &HashMap<String, String>,
    drivers: &mut Vec<String>,
) {
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

#[cfg(test)]
mod tests;
