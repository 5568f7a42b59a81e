//! Delivery off the sampler's path: each sink has its own thread and a small bounded queue,
//! so a webhook that hangs for its full timeout and retries delays nothing but its own later
//! messages; when its queue is full, new messages for it are dropped and counted. Results
//! come back over a channel the caller's loop reads, and `DeliveryLog` keeps the counts
//! (for `gpuwatch_alerts_sent_total`) and says a sink's failure once, not once per message.
//! On the way out (`drain`, watching `Dispatcher::backlog`) what is queued is still delivered,
//! for a bounded time: a "resolved" lost to a restart leaves the receiver's alert firing
//! forever, since the next run never knew it was.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::Duration;

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
    /// Messages queued or being delivered, until their result is sent: what a stop would
    /// lose. Lowered only after the result is on the channel, so at zero every result is
    /// there to be read.
    pending: Arc<AtomicUsize>,
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
                // Counted before it is queued: the thread may deliver it before `Ok` returns.
                w.pending.fetch_add(1, Ordering::SeqCst);
                match w.tx.try_send(event.clone()) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                        w.pending.fetch_sub(1, Ordering::SeqCst);
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

    /// What the sinks' threads still have to deliver, as it goes down (`drain` waits on it).
    pub fn backlog(&self) -> Backlog {
        Backlog {
            sinks: self
                .workers
                .iter()
                .map(|w| (w.shown.clone(), Arc::clone(&w.pending)))
                .collect(),
        }
    }
}

/// The messages a dispatcher's threads still have to deliver.
pub struct Backlog {
    sinks: Vec<(String, Arc<AtomicUsize>)>,
}

impl Backlog {
    /// Each sink (as shown) with messages not yet delivered, and how many.
    pub fn waiting(&self) -> Vec<(&str, usize)> {
        self.sinks
            .iter()
            .map(|(shown, n)| (shown.as_str(), n.load(Ordering::SeqCst)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// How long an exit waits for the messages still queued. `serve` waits after its 5 s grace
/// for open connections, so both fit in the 10 s `docker stop` gives before SIGKILL; the
/// TUI waits only when something is queued.
pub const STOP_DRAIN: Duration = Duration::from_secs(4);

/// How often a drain looks whether the backlog is gone meanwhile.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// At exit, with nothing more being queued: waits up to `limit` for the messages in
/// `backlog` to be delivered, recording each result in `log` and handing `say` the lines
/// worth saying (a sink failing, and at the end what was not delivered in time, if any).
/// Returns as soon as nothing is left.
pub async fn drain(
    backlog: &Backlog,
    results: &mut UnboundedReceiver<Delivery>,
    log: &mut DeliveryLog,
    limit: Duration,
    mut say: impl FnMut(String),
) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut record = |d: Delivery| {
        if let Some(line) = log.record(&d) {
            say(line);
        }
    };
    loop {
        if backlog.waiting().is_empty() {
            // Every result is on the channel by now (see `Worker::pending`).
            while let Ok(d) = results.try_recv() {
                record(d);
            }
            return;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            break;
        }
        match tokio::time::timeout(DRAIN_POLL.min(deadline - now), results.recv()).await {
            Ok(Some(d)) => record(d),
            Ok(None) => return,
            Err(_) => {}
        }
    }
    for (shown, n) in backlog.waiting() {
        let s = if n == 1 { "" } else { "s" };
        say(format!(
            "alert {shown}: {n} message{s} not delivered: still sending after {limit:?} at stop"
        ));
    }
}

fn spawn(i: usize, sink: Sink, report: UnboundedSender<Delivery>) -> Worker {
    let (tx, rx) = sync_channel::<Event>(QUEUE);
    let (label, shown) = (sink.label(), sink.shown());
    let name = shown.clone();
    let pending = Arc::new(AtomicUsize::new(0));
    let left = Arc::clone(&pending);
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
                let sent = report.send(delivery);
                left.fetch_sub(1, Ordering::SeqCst);
                if sent.is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        // Without its thread the sink's queue fills and every message counts as dropped.
        eprintln!("gpuwatch: cannot start the alert thread for {shown}: {e}");
    }
    Worker {
        label,
        shown,
        tx,
        pending,
    }
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
    use std::time::{Instant, SystemTime};

    /// A command sink that appends one line per message to `log` after `seconds`.
    fn slow_command(log: &std::path::Path, seconds: f64) -> Sink {
        Sink::Command {
            command: format!(
                "sleep {seconds}; echo \"$GPUWATCH_ALERT_STATUS\" >> {}",
                log.display()
            ),
        }
    }

    fn three_events() -> Vec<Event> {
        let e = crate::alerts::test::synthetic("node-1", SystemTime::now());
        vec![e.clone(), e.clone(), e]
    }

    /// Starts `sinks`, queues `events`, and drains for up to `limit`: the log and what the
    /// drain said.
    async fn drained(
        sinks: Vec<Sink>,
        events: &[Event],
        limit: Duration,
    ) -> (DeliveryLog, Vec<String>) {
        let (dispatcher, mut results) = Dispatcher::start(sinks);
        dispatcher.send(events);
        let (mut log, mut said) = (DeliveryLog::default(), Vec::new());
        drain(&dispatcher.backlog(), &mut results, &mut log, limit, |l| {
            said.push(l)
        })
        .await;
        (log, said)
    }

    /// Before, the caller's exit ended the threads: what was queued behind the running
    /// delivery was never sent (a "resolved" lost at a restart keeps an alert firing).
    #[tokio::test]
    async fn a_closed_dispatcher_still_delivers_what_was_queued() {
        let dir = tempfile::tempdir().unwrap();
        let log_file = dir.path().join("log");
        let sinks = vec![slow_command(&log_file, 0.2)];
        let (log, said) = drained(sinks, &three_events(), Duration::from_secs(10)).await;
        let lines = std::fs::read_to_string(&log_file).unwrap_or_default();
        assert_eq!(
            lines.lines().count(),
            3,
            "delivered: {lines:?}; said {said:?}"
        );
        assert_eq!(log.counts[&("command", "ok")], 3);
        assert!(said.is_empty(), "{said:?}");
    }

    /// A sink slower than the stop allows is given up on at the limit, and said.
    #[tokio::test]
    async fn a_drain_gives_up_at_its_limit_and_says_what_was_not_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let sinks = vec![slow_command(&dir.path().join("log"), 3.0)];
        let start = Instant::now();
        let (_, said) = drained(sinks, &three_events(), Duration::from_millis(300)).await;
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("alert command \"sleep 3")
                && said[0]
                    .ends_with(": 3 messages not delivered: still sending after 300ms at stop"),
            "{said:?}"
        );
    }

    #[tokio::test]
    async fn a_drain_with_nothing_queued_says_nothing() {
        let sinks = vec![Sink::Command {
            command: "true".into(),
        }];
        let start = Instant::now();
        let (_, said) = drained(sinks, &[], Duration::from_secs(5)).await;
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert!(said.is_empty(), "{said:?}");
    }

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
