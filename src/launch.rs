//! From resolved `Settings` to a running mode: builds the source (live NVML or the demo
//! fleet, a replay, remote hosts, wrapped for recording), the view configuration, and runs
//! `--once`, `pick` (once or waiting) or the TUI. Reads `Settings` only, never raw flags; never draws.

use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::Result;

use crate::app::{self, Exit};
use crate::cli::SourceKind;
use crate::config::{PrometheusSettings, Settings};
use crate::headless;
use crate::mode::Watch;
use crate::model::jobs::JobKey;
use crate::pick::{self, wait::Outcome};
use crate::procinfo::pods::PodDirectory;
use crate::reading::{Sample, Vendor};
use crate::record::{self, RecordingSource};
use crate::sampler;
use crate::source::drm::DrmSource;
use crate::source::multi::MultiSource;
use crate::source::nvml::NvmlSource;
use crate::source::prometheus::api::{Auth, HttpApi};
use crate::source::prometheus::{self, PrometheusSource};
use crate::source::remote;
use crate::source::replay::{ReplayHandle, ReplaySource};
use crate::source::sim::{SimClock, SimSource};
use crate::source::vendors::Vendors;
use crate::source::{GpuSource, SourceError};
use crate::state::{State, ViewConfig};
use crate::text_safe::escape;

/// The source and what the modes need to know about it.
pub struct Built {
    pub source: Box<dyn GpuSource>,
    /// The simulated fleet: its processes cannot be signalled.
    pub demo: bool,
    /// Time between samples (a replay goes at its recording's pace).
    pub interval: Duration,
    replay: Option<(ReplayHandle, i64)>,
    /// Samples to apply before the first frame: the demo's back-filled history.
    prelude: Vec<Sample>,
    /// Something to say on the status line at start (e.g. skipped recording lines).
    notice: Option<String>,
}

/// Whether the demo fleet opens mid-story (the monitor, `--once`) or from its first second
/// (`serve`, `pick`: they answer about now, and their tests count from the start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    MidStory,
    Fresh,
}

/// Builds the source `settings` ask for. Errors are one line (exit 2: bad input or no
/// usable source).
pub fn build(settings: &Settings, opening: Opening) -> Result<Built, String> {
    let remote = &settings.remote;
    let mut built = match (&settings.replay, &settings.prometheus) {
        (Some(_), Some(_)) => return Err("--prometheus: not with replay".into()),
        (None, Some(_)) if remote.any() => {
            return Err("--prometheus: not with --remote/--hosts-file (pick one)".into());
        }
        (Some(file), None) => replay_source(file)?,
        (None, Some(p)) => prometheus_source(p, settings)?,
        (None, None) if remote.any() => remote_source(settings)?,
        (None, None) => {
            let (source, demo, prelude) = live_source(settings, opening)?;
            // With --source auto the fallback must be obvious on screen, not just on stderr.
            let notice = (demo && settings.source == SourceKind::Auto)
                .then(|| "no usable GPU here: showing the simulated demo fleet".to_string());
            Built {
                source,
                demo,
                interval: settings.interval,
                replay: None,
                prelude,
                notice,
            }
        }
    };
    if let Some(rec) = &settings.record {
        let max = rec.max_size.map(|b| b.0);
        let inner = std::mem::replace(&mut built.source, Box::new(NoSource));
        let mut recorder = RecordingSource::new(inner, &rec.path, built.interval, max)?;
        // The demo's back-filled history is part of what the user saw: it goes in first.
        recorder.record_earlier(&built.prelude);
        built.source = Box::new(recorder);
    }
    check_only(&mut built, settings)?;
    Ok(built)
}

/// `--only` that selects nothing is a typo to report (exit 2), not "0 GPUs" to show; only
/// a sample can tell. So when `--only` is given one sample is taken here, before any mode
/// starts, checked, and handed back as the mode's first sample: every mode (`--once`,
/// `pick`, `serve`, the TUI) gets the same check, and the TUI fails before it takes over
/// the terminal. A host that is down may hold the GPU meant, so then nothing is refused.
fn check_only(built: &mut Built, settings: &Settings) -> Result<(), String> {
    let Some(only) = &settings.only else {
        return Ok(());
    };
    let first = built.source.sample();
    if let Ok(sample) = &first
        && sample.hosts.iter().all(|h| h.error.is_none())
        && let Some(why) = crate::reading::device_list::unmatched(only, &sample.gpus)
    {
        return Err(format!("{}: {why}", settings.only_origin));
    }
    let inner = std::mem::replace(&mut built.source, Box::new(NoSource));
    built.source = Box::new(Primed {
        first: Some(first),
        inner,
    });
    Ok(())
}

/// A source whose first sample was already taken (by `check_only`); returns it first.
struct Primed {
    first: Option<Result<Sample, SourceError>>,
    inner: Box<dyn GpuSource>,
}

impl GpuSource for Primed {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        self.first.take().unwrap_or_else(|| self.inner.sample())
    }

    fn notices(&mut self) -> Vec<String> {
        self.inner.notices()
    }
}

/// A placeholder while a source is moved into a wrapper; never sampled.
struct NoSource;

impl GpuSource for NoSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        Err(SourceError::Unavailable("no source".into()))
    }
}

/// Remote hosts (`--remote`, `--hosts-file`), with this machine's GPUs for `--with-local`.
fn remote_source(settings: &Settings) -> Result<Built, String> {
    let remote = &settings.remote;
    let mut addresses = remote.addresses.clone();
    if let Some(path) = &remote.hosts_file {
        addresses.extend(remote::read_hosts_file(path)?);
    }
    remote::check_host_count(addresses.len())?;
    let local = if remote.with_local {
        // Without the back-fill: the hosts' histories start together.
        let (source, _, _) = live_source(settings, Opening::Fresh)?;
        Some((crate::source::hostname(), source))
    } else {
        None
    };
    let multi = MultiSource::new(local, &addresses, settings.interval);
    Ok(Built {
        source: Box::new(multi),
        // Remote processes are never signalled (the rule lives in state::signal); local
        // ones are, so the local source decides.
        demo: remote.with_local && settings.source == SourceKind::Demo,
        interval: settings.interval,
        replay: None,
        prelude: Vec::new(),
        notice: None,
    })
}

/// The fleet as a Prometheus server knows it (`--prometheus`); credentials read here.
fn prometheus_source(p: &PrometheusSettings, settings: &Settings) -> Result<Built, String> {
    let secret = |path: &std::path::Path, what: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim_end_matches(['\n', '\r']).to_string())
            .map_err(|e| format!("{what} {}: {e}", path.display()))
    };
    let auth = match (&p.user, &p.password_file, &p.bearer_token_file) {
        (Some(user), Some(file), _) => Auth::Basic {
            user: user.clone(),
            password: secret(file, "--password-file")?,
        },
        (_, _, Some(file)) => Auth::Bearer(secret(file, "--bearer-token-file")?),
        _ => Auth::None,
    };
    let tls = match &p.ca_file {
        Some(ca) => Some(
            crate::http_client::tls::client_config(Some(ca))
                .map_err(|e| format!("--prometheus-ca-file {e}"))?,
        ),
        None => None,
    };
    let api = HttpApi::new(&p.url, &auth, tls, prometheus::TIMEOUT)
        .map_err(|e| format!("--prometheus: {e}"))?;
    let server = p
        .url
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string();
    let source = PrometheusSource::new(
        Box::new(api),
        &server,
        &p.matchers,
        settings.interval,
        settings.history,
        Box::new(std::time::SystemTime::now),
    );
    Ok(Built {
        source: Box::new(source),
        // Nothing listed can be signalled: there are no process rows.
        demo: false,
        interval: settings.interval,
        replay: None,
        prelude: Vec::new(),
        notice: Some(prometheus::NOTICE.to_string()),
    })
}

fn replay_source(file: &std::path::Path) -> Result<Built, String> {
    let recording = record::read(file)?;
    let interval = recording.header.interval();
    let notice = (!recording.skipped.is_empty()).then(|| {
        let (line, why) = &recording.skipped[0];
        format!(
            "{}: skipped {} unreadable line(s), first at line {line}: {why}",
            file.display(),
            recording.skipped.len()
        )
    });
    if let Some(n) = &notice {
        eprintln!("gpuwatch: {}", escape(n));
    }
    let (source, handle) = ReplaySource::new(recording);
    let seek = ReplaySource::samples_per(interval, Duration::from_secs(30));
    Ok(Built {
        source: Box::new(source),
        demo: true,
        interval,
        replay: Some((handle, seek)),
        prelude: Vec::new(),
        notice,
    })
}

/// The source for live monitoring, whether it is the simulated fleet, and the demo's
/// back-filled history.
type Live = (Box<dyn GpuSource>, bool, Vec<Sample>);

fn live_source(settings: &Settings, opening: Opening) -> Result<Live, String> {
    let demo = || -> Live {
        let mut sim = SimSource::new(
            settings.demo_gpus,
            settings.seed,
            settings.interval,
            SimClock::Real,
        )
        .with_speed(settings.demo_speed)
        .with_scenario(settings.demo_scenario);
        let prelude = if opening == Opening::MidStory {
            sim.backfill(demo_lead(settings), settings.history)
        } else {
            Vec::new()
        };
        (Box::new(sim), true, prelude)
    };
    let nvml = || {
        NvmlSource::open(settings.nvml_lib.as_deref()).map(|s| {
            s.with_proc_root(&settings.drm_roots.proc)
                .with_pods(PodDirectory::new(
                    settings.kubelet_socket.clone(),
                    crate::procinfo::pods::POLL_INTERVAL,
                ))
        })
    };
    let drm = |vendors: &[Vendor]| DrmSource::open(vendors, &settings.drm_roots);
    let boxed = |s: Box<dyn GpuSource>| (s, false, Vec::new());
    match settings.source {
        SourceKind::Demo => Ok(demo()),
        SourceKind::Nvml => nvml()
            .map(|s| boxed(Box::new(s)))
            .map_err(|e| e.to_string()),
        SourceKind::Amd => drm(&[Vendor::Amd]).map(|s| boxed(Box::new(s))),
        SourceKind::Intel => drm(&[Vendor::Intel]).map(|s| boxed(Box::new(s))),
        SourceKind::Auto => {
            // Every vendor present, NVIDIA first so its indices stay CUDA's.
            let mut parts: Vec<Box<dyn GpuSource>> = Vec::new();
            let nvml_error = match nvml() {
                Ok(s) => {
                    parts.push(Box::new(s));
                    None
                }
                Err(e) => Some(e),
            };
            if let Ok(s) = drm(&[Vendor::Amd, Vendor::Intel]) {
                parts.push(Box::new(s));
            }
            Ok(match parts.len() {
                0 => {
                    if let Some(e) = nvml_error {
                        eprintln!("gpuwatch: {}", escape(&e.to_string()));
                    }
                    eprintln!("gpuwatch: no usable GPU here; showing the simulated demo fleet");
                    demo()
                }
                1 => boxed(parts.remove(0)),
                _ => boxed(Box::new(Vendors::new(parts))),
            })
        }
    }
}

/// How much scenario time the demo runs before its first frame: the history window, and
/// long enough for every warning that needs time to be raised (an idle holder, a stale
/// allocation, a temperature held). Capped so a huge `--idle-after` cannot stall start-up.
fn demo_lead(settings: &Settings) -> Duration {
    let th = &settings.thresholds;
    let margin = Duration::from_secs(60);
    let lead = settings
        .history
        .max(th.idle_after + margin)
        .max(th.stale_after + margin)
        .max(th.temp_hold + margin);
    lead.min(Duration::from_secs(6 * 3600))
}

/// What the state and views need from the settings, at the source's pace (`interval`: a
/// replay keeps its recording's), with the history window counted in those samples.
pub fn view_config(settings: &Settings, interval: Duration) -> ViewConfig {
    ViewConfig {
        interval,
        // A replay's own pace may be faster than `--interval`: the bound holds for it too.
        history_len: ((settings.history.as_secs_f64() / interval.as_secs_f64()).ceil() as usize)
            .clamp(1, crate::history::MAX_POINTS),
        thresholds: settings.thresholds.clone(),
        current_user: uzers::get_current_username().map(|u| u.to_string_lossy().into_owned()),
        current_uid: Some(uzers::get_current_uid()),
        current_job: own_job(),
        utc_offset: *chrono::Local::now().offset(),
        readonly: settings.readonly,
        columns: settings.columns.clone(),
        sort: settings.sort,
        sort_dir: settings.sort_dir,
        only: settings.only.clone(),
        processes_known: settings.prometheus.is_none(),
    }
}

/// The job gpuwatch runs in, from its own cgroup (read once at start), else the
/// `SLURM_JOB_ID` Slurm sets where it does not confine jobs to cgroups.
fn own_job() -> Option<JobKey> {
    std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|text| crate::procinfo::cgroup::workload(&text))
        .and_then(|w| JobKey::of(&w))
        .or_else(|| {
            let id = std::env::var("SLURM_JOB_ID").ok()?;
            Some(JobKey::Slurm(id.trim().parse().ok()?))
        })
}

/// Runs one of the sampling modes on the built source.
pub async fn run(built: Built, settings: &Settings, watch: &Watch) -> Result<ExitCode> {
    let config = view_config(settings, built.interval);
    let source = built.source;
    match watch {
        Watch::Query(request) => {
            return crate::query::run(request, source, config, built.prelude).await;
        }
        Watch::Pick(request) => return pick(source, config, request).await,
        Watch::Wait(request) => {
            // Only this host's GPUs report PIDs this /proc can say anything about.
            let local = !built.demo
                && built.replay.is_none()
                && settings.prometheus.is_none()
                && settings.remote.addresses.is_empty()
                && settings.remote.hosts_file.is_none();
            return wait(source, config, request, local).await;
        }
        Watch::Once { json } => {
            // A replay's next sample is the recording's next moment, not a CPU reading.
            let cpu_gap = built.replay.is_none().then_some(headless::CPU_SAMPLE_GAP);
            return once(source, config, *json, built.prelude, cpu_gap).await;
        }
        Watch::Monitor => {}
    }
    let replaying = built.replay.is_some();
    let options = app::Options {
        compact: settings.compact,
        panic_after_samples: settings.debug_panic_after,
        mouse: settings.mouse,
        demo: built.demo,
        seek_samples: built.replay.as_ref().map_or(0, |r| r.1),
        replay: built.replay.map(|r| r.0),
        notice: built.notice,
        theme: settings.theme,
        prelude: built.prelude,
        // A replay is history: it must not page anyone or ring about the past.
        alerts: if replaying {
            crate::alert_settings::AlertSettings::default()
        } else {
            settings.alerts.clone()
        },
    };
    Ok(match app::run(source, config, options).await? {
        Exit::Quit => ExitCode::SUCCESS,
        Exit::Signal(n) => ExitCode::from(128 + n as u8),
    })
}

/// `--once`: the snapshot in full, then exit 1 naming each remote host that did not answer
/// (a script must not mistake a partial fleet for the whole one).
async fn once(
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    json: bool,
    prelude: Vec<Sample>,
    cpu_gap: Option<Duration>,
) -> Result<ExitCode> {
    let state = headless::snapshot_after(source, config, prelude, cpu_gap).await?;
    let text = if json {
        headless::render_json(&state)
    } else {
        headless::render_text(&state)
    };
    print!("{text}");
    let down = headless::hosts_down(&state);
    for why in &down {
        eprintln!("gpuwatch: {}", escape(why));
    }
    Ok(if down.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `gpuwatch wait`: exit 0 once released or free (saying so on stderr), 1 naming what
/// still holds memory at the timeout, 2 for a PID that names no process and holds nothing,
/// 128+n on a signal.
async fn wait(
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    request: &crate::wait::Request,
    local: bool,
) -> Result<ExitCode> {
    use crate::procinfo::{Presence, ProcInfo};
    use crate::wait::{Outcome, Target};
    let stop = sampler::stop_signal()?;
    // Before the first sample: the process the PID names now is the one waited for.
    let found = match request.target {
        Target::Released(pid) if local => ProcInfo::system().presence(pid),
        _ => Presence::Unknowable,
    };
    let mut sampler = sampler::spawn(source, config.interval);
    let state = State::new(config);
    let outcome = crate::wait::run(&mut sampler.events, state, request, found, stop).await;
    drop(sampler);
    Ok(match outcome {
        Outcome::Done(line) => {
            eprintln!("gpuwatch wait: {line}");
            ExitCode::SUCCESS
        }
        Outcome::TimedOut(why) | Outcome::Failed(why) => {
            eprintln!("gpuwatch wait: {why}");
            ExitCode::from(1)
        }
        Outcome::NoSuchProcess(why) => {
            eprintln!("gpuwatch wait: {why}");
            ExitCode::from(2)
        }
        Outcome::Stopped(signal) => ExitCode::from(128 + signal),
    })
}

/// `gpuwatch pick`: the chosen GPUs on stdout; why not on stderr (exit 1); an inherited
/// `CUDA_VISIBLE_DEVICES` naming no GPU here exits 2; SIGINT/SIGTERM while waiting exit
/// 130/143 without a word (the user asked for it).
async fn pick(
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    request: &pick::Request,
) -> Result<ExitCode> {
    let stop = sampler::stop_signal()?;
    let mut sampler = sampler::spawn(source, config.interval);
    let state = State::new(config);
    let mut say = |line: &str| eprintln!("gpuwatch pick: {}", escape(line));
    let outcome = pick::wait::run(&mut sampler.events, state, request, stop, &mut say).await;
    drop(sampler);
    Ok(match outcome {
        Outcome::Picked { line, explain } => {
            explain.iter().for_each(|l| say(l));
            println!("{line}");
            ExitCode::SUCCESS
        }
        Outcome::Short { why, explain } => {
            say(&why);
            explain.iter().for_each(|l| say(l));
            ExitCode::from(1)
        }
        Outcome::BadVisible(why) => {
            let raw = request.inherited.as_ref().map_or("", |i| i.raw.as_str());
            eprintln!("gpuwatch: {}: {why} (got {raw:?})", pick::visible::VAR);
            ExitCode::from(2)
        }
        Outcome::Failed(why) => {
            say(&why);
            ExitCode::from(1)
        }
        Outcome::Unprintable(why) => {
            eprintln!("gpuwatch: pick --format: {}", escape(&why));
            ExitCode::from(2)
        }
        Outcome::Stopped(signal) => ExitCode::from(128 + signal),
    })
}
