//! `gpuwatch serve`: a Prometheus exporter. Runs the same sampler and `state::update` as
//! the TUI (so warnings and the process table agree), renders each sample's documents once,
//! and serves the latest over HTTP(S). Owns startup, the sample loop and shutdown; never
//! touches the terminal code.

mod alerting;
mod auth;
mod bind;
mod dcgm;
mod http;
mod listener;
mod lookups;
pub mod metrics;
mod mig;
mod negotiate;
mod process;
mod readings;
mod redact;
mod slots;
pub mod stats;
pub mod text;
mod tls;
mod webconfig;
mod workload;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};

use crate::alert_settings::AlertSettings;
use crate::config::ServeSettings;
use crate::sampler::{self, SamplerEvent};
use crate::source::GpuSource;
use crate::state::{Msg, State, ViewConfig, update};

use http::{Published, Shared};
pub use metrics::MetricOptions;
use stats::{Stats, TimedSource};
use webconfig::WebConfig;

/// A port we cannot have: the same code as other usage errors.
const EXIT_USAGE: u8 = 2;

/// How long open connections may take to finish after SIGINT/SIGTERM before we exit anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// `gpuwatch serve` after the settings are resolved (`config` checked the address) and the
/// source is built: reads the web config, binds, serves until SIGINT/SIGTERM (exit 0). A
/// port we cannot have or a bad web config is one line and exit 2; runtime failures exit 1.
pub fn main(
    settings: &ServeSettings,
    alerts: &AlertSettings,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
) -> ExitCode {
    let web = match &settings.web_config {
        Some(path) => match WebConfig::load(path) {
            Ok(web) => web,
            Err(why) => return fail(&why, EXIT_USAGE),
        },
        None => WebConfig::open(),
    };
    let listeners = match bind::bind_all(settings) {
        Ok(l) => l,
        Err(why) => return fail(&why, EXIT_USAGE),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}"), 1),
    };
    let result = runtime.block_on(serve(listeners, source, config, web, settings, alerts));
    // A poll stuck in the driver holds a blocking-pool thread that would keep dropping the
    // runtime waiting for ever: give it a moment, then leave it behind.
    runtime.shutdown_timeout(crate::sampler::ABANDON_AFTER);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => fail(&why, 1),
    }
}

fn fail(why: &str, code: u8) -> ExitCode {
    eprintln!("gpuwatch: {}", crate::text_safe::escape(why));
    ExitCode::from(code)
}

/// What the sample loop needs besides the sampler's channel.
struct Follow {
    options: MetricOptions,
    /// Replaces the source's host name (`--hostname`, `NODE_NAME`).
    hostname: Option<String>,
    stats: Arc<Stats>,
    publish: watch::Sender<Arc<Published>>,
    alerts: alerting::Alerts,
}

async fn serve(
    listeners: Vec<std::net::TcpListener>,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    web: WebConfig,
    settings: &ServeSettings,
    alerts: &AlertSettings,
) -> Result<(), String> {
    let options = MetricOptions {
        dcgm_compat: settings.dcgm_compat,
        process_metrics: settings.process_metrics,
        process_limit: settings.process_metrics_limit,
        redact: settings.redact,
    };
    let listeners = listeners
        .into_iter()
        .map(tokio::net::TcpListener::from_std)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let stop = stop_on_signal().map_err(|e| format!("cannot watch for signals: {e}"))?;
    if let Some(tls) = &web.tls {
        reload_on_hangup(Arc::clone(tls)).map_err(|e| format!("cannot watch for SIGHUP: {e}"))?;
    }
    let stats = Arc::new(Stats::default());
    let state = State::new(config);
    let alerting = alerting::Alerts::start(alerts);
    let none = crate::serve::text::Texts::default();
    let (publish, latest) = watch::channel(Arc::new(Published::render(&state, options, &none)));
    let timed = TimedSource {
        inner: source,
        stats: Arc::clone(&stats),
    };
    let sampler::Sampler { events, task } = sampler::spawn(Box::new(timed), state.config.interval);
    // Tests (and scripts using port 0) read the real address from this line.
    let scheme = if web.tls.is_some() { "https" } else { "http" };
    for listener in &listeners {
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let path = &settings.telemetry_path;
        eprintln!("gpuwatch: serving {scheme}://{addr}{path}");
    }

    let router = http::router(
        Shared {
            latest,
            stats: Arc::clone(&stats),
        },
        &settings.telemetry_path,
    );
    let server = listener::run(
        listeners,
        router,
        web,
        settings.limits,
        Arc::clone(&stats),
        stop.clone(),
    );
    let deadline = async move {
        wait_for(stop).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let mut follow = Follow {
        options,
        hostname: settings.hostname.clone(),
        stats,
        publish,
        alerts: alerting,
    };
    let result = tokio::select! {
        () = server => Ok(()),
        () = deadline => Ok(()),
        why = follow.run(events, state) => Err(why),
    };
    drop(task);
    follow.alerts.finish(crate::alerts::queue::STOP_DRAIN).await;
    result
}

impl Follow {
    /// Applies every sampler event to the state, steps the alerts, and publishes the
    /// freshly rendered documents; records alert deliveries as they come back (saying a
    /// sink's failure on stderr once). Returns only when the sampler is gone, with why.
    async fn run(&mut self, mut rx: mpsc::Receiver<SamplerEvent>, mut state: State) -> String {
        loop {
            let event = tokio::select! {
                event = rx.recv() => event,
                Some(line) = self.alerts.delivered() => {
                    eprintln!("gpuwatch: {line}");
                    continue;
                }
            };
            let Some(event) = event else { break };
            let msg = self.message(event, &state);
            let sampled = matches!(msg, Msg::Sample(_));
            update(&mut state, msg);
            if sampled {
                self.alerts.on_sample(&state);
            }
            let start = Instant::now();
            let published = Published::render(&state, self.options, &self.alerts.metrics());
            self.stats.render.set(start.elapsed());
            self.publish.send_replace(Arc::new(published));
        }
        let last = state.model.source_error().unwrap_or_default();
        format!("the GPU sampler stopped: {last}")
    }

    /// The state's message for a sampler event, saying on stderr what an operator of a
    /// headless exporter needs to know (once per outage, not once per interval).
    fn message(&self, event: SamplerEvent, state: &State) -> Msg {
        match event {
            SamplerEvent::Sample(mut sample) => {
                if state.model.source_error().is_some() {
                    eprintln!("gpuwatch: reading GPUs works again");
                }
                if let Some(name) = &self.hostname {
                    sample.host.hostname.clone_from(name);
                }
                Msg::Sample(sample)
            }
            SamplerEvent::Failed(why) => {
                self.stats.sampler_errors.inc();
                if state.model.source_error().is_none() {
                    eprintln!(
                        "gpuwatch: reading GPUs failed: {} (retrying)",
                        crate::text_safe::escape(&why)
                    );
                }
                Msg::SourceFailed(why)
            }
            SamplerEvent::Stalled(waited) => {
                if state.model.stalled().is_none() {
                    eprintln!(
                        "gpuwatch: GPU source not answering for {} s",
                        waited.as_secs()
                    );
                }
                Msg::SourceStalled(waited)
            }
            SamplerEvent::Notice(text) => {
                eprintln!("gpuwatch: {}", crate::text_safe::escape(&text));
                Msg::Notice(text)
            }
        }
    }
}

/// A flag that turns true on the first SIGINT or SIGTERM.
fn stop_on_signal() -> std::io::Result<watch::Receiver<bool>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        let _ = tx.send(true);
    });
    Ok(rx)
}

/// Re-reads the TLS certificate on every SIGHUP (as `systemctl reload` sends it).
fn reload_on_hangup(tls: Arc<tls::Tls>) -> std::io::Result<()> {
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            tls.reload();
        }
    });
    Ok(())
}

pub(super) async fn wait_for(mut stop: watch::Receiver<bool>) {
    // An error means the signal task is gone, which only happens at shutdown anyway.
    let _ = stop.wait_for(|stopped| *stopped).await;
}
