//! Delivery off the sampler's path: each sink has its own thread and a small bounded queue,
//! so a webhook that hangs for its full timeout and retries delays nothing but its own later
//! messages; when its queue is full, new messages for it are dropped and counted. Results
//! come back over a channel the caller's loop reads, and `DeliveryLog` keeps the counts
//! (for `gpuwatch_alerts_sent_total`) and says a sink's failure once, not once per message.

use std::collections::BTreeMap;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::engine::Event;
use super::sinks;
use crate::alert_settings::Sink;

/// Messages waiting per sink; more are dropped (a sink that far behind is failing anyway).
pub const QUEUE: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// What the other side answered (`HTTP 200`, `exit 0`).
    Sent(String),
    Failed(String),
    /// Its queue was full.
    Dropped,
}

impl Outcome {
    /// The `result` label.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Sent(_) => "ok",
            Outcome::Failed(_) => "failed",
            Outcome::Dropped => "dropped",
        }
    }
}

/// One message's fate at one sink.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub sink: usize,
    pub label: &'static str,
    pub shown: String,
    pub outcome: Outcome,
}

struct Worker {
    label: &'static str,
    shown: String,
    tx: SyncSender<Event>,
}

pub struct Dispatcher {
    workers: Vec<Worker>,
    report: UnboundedSender<Delivery>,
}

impl Dispatcher {
    /// Starts one thread per sink; their results arrive on the receiver.
    pub fn start(sinks: Vec<Sink>) -> (Dispatcher, UnboundedReceiver<Delivery>) {
        let (report, results) = unbounded_channel();
        let workers = sinks
            .into_iter()
            .enumerate()
            .map(|(i, sink)| spawn(i, sink, report.clone()))
            .collect();
        (Dispatcher { workers, report }, results)
    }

    /// Queues `events` for every sink without waiting.
    pub fn send(&self, events: &[Event]) {
        for event in events {
            for (i, w) in self.workers.iter().enumerate() {
                match w.tx.try_send(event.clone()) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        let _ = self.report.send(Delivery {
                            sink: i,
                            label: w.label,
                            shown: w.shown.clone(),
                            outcome: Outcome::Dropped,
                        });
                    }
                }
            }
        }
    }
}

fn spawn(i: usize, sink: Sink, report: UnboundedSender<Delivery>) -> Worker {
    let (tx, rx) = sync_channel::<Event>(QUEUE);
    let (label, shown) = (sink.label(), sink.shown());
    let name = shown.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("alerts-{i}"))
        .spawn(move || {
            // Ends when the dispatcher (the only sender) is dropped.
            while let Ok(event) = rx.recv() {
                let outcome = match sinks::deliver(&sink, &event) {
                    Ok(answer) => Outcome::Sent(answer),
                    Err(why) => Outcome::Failed(why),
                };
                let delivery = Delivery {
                    sink: i,
                    label,
                    shown: name.clone(),
                    outcome,
                };
                if report.send(delivery).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        // Without its thread the sink's queue fills and every message counts as dropped.
        eprintln!("gpuwatch: cannot start the alert thread for {shown}: {e}");
    }
    Worker { label, shown, tx }
}

/// Counts per (sink label, result), and which sinks are failing now.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeliveryLog {
    pub counts: BTreeMap<(&'static str, &'static str), u64>,
    failing: BTreeMap<usize, String>,
}

impl DeliveryLog {
    /// Records one delivery; a line to say when a sink starts failing or works again.
    pub fn record(&mut self, d: &Delivery) -> Option<String> {
        *self.counts.entry((d.label, d.outcome.label())).or_default() += 1;
        match &d.outcome {
            Outcome::Sent(_) => self
                .failing
                .remove(&d.sink)
                .map(|_| format!("alert {} works again", d.shown)),
            Outcome::Failed(why) => self.start_failing(d, why),
            Outcome::Dropped => self.start_failing(d, "too far behind; alerts dropped"),
        }
    }

    fn start_failing(&mut self, d: &Delivery, why: &str) -> Option<String> {
        if self.failing.contains_key(&d.sink) {
            return None;
        }
        self.failing.insert(d.sink, why.to_string());
        Some(format!("alert {} failed: {why}", d.shown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(sink: usize, outcome: Outcome) -> Delivery {
        Delivery {
            sink,
            label: "webhook",
            shown: format!("webhook http://h{sink}/…"),
            outcome,
        }
    }

    #[test]
    fn a_failure_is_said_once_per_sink_and_its_recovery_once() {
        let mut log = DeliveryLog::default();
        let failed = || Outcome::Failed("HTTP 500".into());
        assert_eq!(
            log.record(&d(0, failed())).as_deref(),
            Some("alert webhook http://h0/… failed: HTTP 500")
        );
        assert_eq!(log.record(&d(0, failed())), None);
        assert_eq!(log.record(&d(0, Outcome::Dropped)), None);
        assert!(log.record(&d(1, failed())).is_some(), "another sink");
        assert_eq!(
            log.record(&d(0, Outcome::Sent("HTTP 200".into())))
                .as_deref(),
            Some("alert webhook http://h0/… works again")
        );
        assert_eq!(log.record(&d(0, Outcome::Sent("HTTP 200".into()))), None);
        assert_eq!(log.counts[&("webhook", "failed")], 3);
        assert_eq!(log.counts[&("webhook", "dropped")], 1);
        assert_eq!(log.counts[&("webhook", "ok")], 2);
    }
}
