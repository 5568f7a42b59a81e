//! Alerts that leave the terminal: the warnings the model raises, turned by a pure state
//! machine (`engine`, `rules`, `limit`) into firing and resolved messages, rendered
//! (`payload`) and delivered off the sampler's path (`queue`) to webhooks or a command
//! (`sinks`); the TUI adds the terminal bell, for criticals new while it watches. `Alerting`
//! ties them together for `serve` and the TUI: each loop calls `on_sample` after `update`
//! and `on_delivery` with each result. Never draws, never waits on a sink.

pub mod engine;
pub mod limit;
pub mod payload;
mod process_group;
pub mod queue;
pub mod sinks;
pub mod test;

use std::collections::HashMap;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::alert_settings::AlertSettings;
use crate::model::Model;
use crate::model::owners::owners;
use crate::model::warnings::{Severity, Subject};
use crate::reading::{GpuId, GpuReading};
use engine::{Engine, Event, Observed, Status};
use queue::{Delivery, DeliveryLog, Dispatcher};

/// The engine, the delivery threads and their log, for one running mode.
pub struct Alerting {
    /// Nothing listens (no sink, no bell): the engine is not run at all.
    idle: bool,
    engine: Engine,
    dispatcher: Dispatcher,
    pub log: DeliveryLog,
}

impl Alerting {
    /// Starts the sinks' threads; their results arrive on the receiver. `bell`: the caller
    /// rings the bell on what `on_sample` returns.
    pub fn start(settings: &AlertSettings, bell: bool) -> (Alerting, UnboundedReceiver<Delivery>) {
        let (dispatcher, results) = Dispatcher::start(settings.sinks.clone());
        let alerting = Alerting {
            idle: settings.sinks.is_empty() && !bell,
            engine: Engine::new(settings.rules.clone()),
            dispatcher,
            log: DeliveryLog::default(),
        };
        (alerting, results)
    }

    /// Steps the engine on the model's latest sample and queues what it says; returns the
    /// events too (the TUI rings the bell on some). Nothing before the first sample.
    pub fn on_sample(&mut self, model: &Model) -> Vec<Event> {
        let Some(now) = model.now().filter(|_| !self.idle) else {
            return Vec::new();
        };
        let mut events = self.engine.step(now, &observe(model));
        let mut resolved = events.iter_mut().filter_map(|event| match event {
            Event::Alert(a) if a.status == Status::Resolved => Some(a),
            _ => None,
        });
        if let Some(first) = resolved.next() {
            // Looked up by GPU once, not by a scan of the fleet per alert: a whole fleet's
            // alerts resolve together when its answer comes back (issue 26 §10).
            let gpus: HashMap<(&GpuId, &Option<String>), &GpuReading> =
                model.gpus().iter().map(|g| ((&g.id, &g.host), g)).collect();
            for a in std::iter::once(first).chain(resolved) {
                a.now = reading_now(&gpus, &a.facts.warning.subject);
            }
        }
        self.dispatcher.send(&events);
        events
    }

    /// Records one delivery result; a line to say when a sink starts failing or recovers.
    pub fn on_delivery(&mut self, d: &Delivery) -> Option<String> {
        self.log.record(d)
    }

    /// What the sinks' threads still have to deliver (`queue::drain` waits for it).
    pub fn backlog(&self) -> queue::Backlog {
        self.dispatcher.backlog()
    }
}

/// The GPU's readings now, for a resolved alert's numbers.
fn reading_now(
    gpus: &HashMap<(&GpuId, &Option<String>), &GpuReading>,
    subject: &Subject,
) -> Option<GpuReading> {
    let Subject::Gpu { id, host, .. } = subject else {
        return None;
    };
    gpus.get(&(id, host)).map(|g| (*g).clone())
}

/// A critical alert firing for the first time, whatever the bell's setting.
fn first_critical(event: &Event) -> Option<&engine::Alert> {
    match event {
        Event::Alert(a)
            if a.status == Status::Firing
                && !a.repeat
                && a.facts.warning.severity == Severity::Critical =>
        {
            Some(a)
        }
        _ => None,
    }
}

/// Whether an event is news worth the terminal bell: a critical alert firing for the first
/// time, for a warning that was not already there when gpuwatch started.
pub fn rings_bell(event: &Event) -> bool {
    first_critical(event).is_some_and(|a| !a.at_start)
}

/// The line that says, once, the critical alerts that were already there at start (the
/// bell stays quiet for them: nobody needs waking for what they saw when they looked).
pub fn start_notice(events: &[Event]) -> Option<String> {
    let already: Vec<String> = events
        .iter()
        .filter_map(first_critical)
        .filter(|a| a.at_start)
        .map(|a| match a.facts.warning.gpu_index() {
            Some(i) => format!("{} on GPU {i}", a.facts.kind),
            None => format!("{} on {}", a.facts.kind, a.facts.host),
        })
        .collect();
    (!already.is_empty()).then(|| format!("critical since before start: {}", already.join(", ")))
}

/// The model's warnings with their words, code, host and the GPU's owners.
pub fn observe(model: &Model) -> Vec<Observed> {
    model
        .warnings()
        .iter()
        .map(|w| {
            let host = match &w.subject {
                Subject::Gpu { host: Some(h), .. } => h.clone(),
                Subject::Gpu { host: None, .. } => model.host().hostname.clone(),
                Subject::Host { name } => name.clone(),
            };
            let holders = w
                .gpu()
                // By the model's index, not a scan of the fleet: 10,000 GPUs with a warning
                // each made this 10^8 comparisons per sample, on the UI task (issue 26 §10).
                .and_then(|id| model.gpu(id))
                .map(|g| owners(model, g).to_vec())
                .unwrap_or_default();
            Observed {
                kind: w.kind.code(),
                message: crate::present::warnings::warning_line(w),
                host,
                owners: holders,
                warning: w.clone(),
            }
        })
        .collect()
}
