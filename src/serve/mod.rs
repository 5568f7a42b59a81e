//! `gpuwatch serve`: a Prometheus exporter. Runs the same sampler and `state::update` as
//! the TUI (so warnings and the process table agree), renders each sample's documents once,
//! and serves the latest over HTTP. Owns the listener, the sample loop and shutdown; never
//! touches the terminal code.

mod alerting;
mod dcgm;
mod http;
pub mod metrics;
mod process;
mod readings;
pub mod text;
mod workload;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};

use crate::alerts::AlertSettings;
use crate::config::ServeSettings;
use crate::sampler::{self, SamplerEvent};
use crate::source::GpuSource;
use crate::state::{Msg, State, ViewConfig, update};

use http::Published;
pub use metrics::MetricOptions;

/// A port we cannot have: the same code as other usage errors.
const EXIT_USAGE: u8 = 2;

/// How long open connections may take to finish after SIGINT/SIGTERM before we exit anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// `gpuwatch serve` after the settings are resolved (`config` checked the address) and the
/// source is built: binds, serves until SIGINT/SIGTERM (exit 0). A port we cannot have is
/// one line and exit 2; runtime failures exit 1.
pub fn main(
    settings: &ServeSettings,
    alerts: &AlertSettings,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
) -> ExitCode {
    let options = MetricOptions {
        dcgm_compat: settings.dcgm_compat,
        process_metrics: settings.process_metrics,
    };
    let listener = match bind(settings.listen, &settings.listen_origin) {
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
    let result = runtime.block_on(serve(listener, source, config, options, alerts));
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

/// Binds before the runtime starts, so a port in use is reported as a usage error.
/// `origin` names where the address was set.
fn bind(addr: SocketAddr, origin: &str) -> Result<std::net::TcpListener, String> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| format!("{origin}: cannot listen on {addr}: {e}"))?;
    // Tokio requires a non-blocking socket.
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("{origin}: cannot use {addr}: {e}"))?;
    Ok(listener)
}

async fn serve(
    listener: std::net::TcpListener,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    options: MetricOptions,
    alerts: &AlertSettings,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let stop = stop_on_signal().map_err(|e| format!("cannot watch for signals: {e}"))?;
    let state = State::new(config);
    let alerting = alerting::Alerts::start(alerts);
    let (publish, latest) = watch::channel(Arc::new(Published::render(&state, options, "")));
    let (tx, rx) = sampler::channel();
    let sampler = tokio::spawn(sampler::run(source, state.config.interval, tx));
    // Tests (and scripts using port 0) read the real address from this line.
    eprintln!("gpuwatch: serving http://{addr}/metrics");

    let graceful = wait_for(stop.clone());
    let server = axum::serve(listener, http::router(latest)).with_graceful_shutdown(graceful);
    let deadline = async move {
        wait_for(stop).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let result = tokio::select! {
        served = server.into_future() => served.map_err(|e| format!("serving HTTP failed: {e}")),
        () = deadline => Ok(()),
        why = follow(rx, state, options, publish, alerting) => Err(why),
    };
    sampler.abort();
    result
}

/// Applies every sampler event to the state, steps the alerts, and publishes the freshly
/// rendered documents; records alert deliveries as they come back (saying a sink's failure
/// on stderr once). Returns only when the sampler is gone, with why.
async fn follow(
    mut rx: mpsc::Receiver<SamplerEvent>,
    mut state: State,
    options: MetricOptions,
    publish: watch::Sender<Arc<Published>>,
    mut alerts: alerting::Alerts,
) -> String {
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            Some(line) = alerts.delivered() => {
                eprintln!("gpuwatch: {line}");
                continue;
            }
        };
        let Some(event) = event else { break };
        let msg = match event {
            SamplerEvent::Sample(sample) => {
                if state.model.source_error().is_some() {
                    eprintln!("gpuwatch: reading GPUs works again");
                }
                Msg::Sample(sample)
            }
            SamplerEvent::Failed(why) => {
                // Once per outage, not once per interval.
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
        };
        let sampled = matches!(msg, Msg::Sample(_));
        update(&mut state, msg);
        if sampled {
            alerts.on_sample(&state);
        }
        let extra = alerts.metrics();
        publish.send_replace(Arc::new(Published::render(&state, options, &extra)));
    }
    let last = state.model.source_error().unwrap_or_default();
    format!("the GPU sampler stopped: {last}")
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

async fn wait_for(mut stop: watch::Receiver<bool>) {
    // An error means the signal task is gone, which only happens at shutdown anyway.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_a_usage_error_naming_the_address() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = bind(addr, "--listen").unwrap_err();
        assert!(err.contains(&addr.to_string()), "{err}");
        assert!(!err.contains('\n'));
    }
}
