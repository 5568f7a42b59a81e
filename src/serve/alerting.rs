//! The exporter's alerts: runs `alerts::Alerting` on every sample and renders its delivery
//! counts as `gpuwatch_alerts_sent_total{sink,result}`. Only when a sink is configured do
//! the counters appear (a zero for each sink's `ok` and `failed` from the start).

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use super::text::{Exposition, Family, Kind, Texts};
use crate::alert_settings::AlertSettings;
use crate::alerts::Alerting;
use crate::alerts::queue::{self, Delivery};
use crate::state::State;

const SENT: Family = Family {
    name: "gpuwatch_alerts_sent_total",
    kind: Kind::Counter,
    help: "Alert messages by sink and result (ok, failed after retries, dropped when its queue was full).",
};

pub struct Alerts {
    alerting: Alerting,
    results: UnboundedReceiver<Delivery>,
    labels: Vec<&'static str>,
}

impl Alerts {
    pub fn start(settings: &AlertSettings) -> Alerts {
        let (alerting, results) = Alerting::start(settings, false);
        let mut labels: Vec<&'static str> = settings.sinks.iter().map(|s| s.label()).collect();
        labels.dedup();
        Alerts {
            alerting,
            results,
            labels,
        }
    }

    pub fn on_sample(&mut self, state: &State) {
        self.alerting.on_sample(&state.model);
    }

    /// The next delivery result that is worth a line on stderr (waits for one).
    pub async fn delivered(&mut self) -> Option<String> {
        loop {
            let d = self.results.recv().await?;
            if let Some(line) = self.alerting.on_delivery(&d) {
                return Some(line);
            }
        }
    }

    /// At stop: waits up to `limit` for the messages still queued to be delivered, saying
    /// on stderr what failed and what was left undelivered.
    pub async fn finish(&mut self, limit: Duration) {
        let backlog = self.alerting.backlog();
        if !backlog.waiting().is_empty() {
            eprintln!(
                "gpuwatch: stopping: delivering the alert messages still queued (up to {limit:?})"
            );
        }
        let log = &mut self.alerting.log;
        queue::drain(&backlog, &mut self.results, log, limit, |line| {
            eprintln!("gpuwatch: {line}")
        })
        .await;
    }

    /// The counter family, empty when no sink is configured.
    pub fn metrics(&self) -> Texts {
        let mut counts = self.alerting.log.counts.clone();
        for label in &self.labels {
            for result in ["ok", "failed"] {
                counts.entry((label, result)).or_default();
            }
        }
        let mut e = Exposition::new();
        e.family(
            SENT,
            counts.into_iter().map(|((sink, result), n)| {
                (
                    vec![("sink", sink.to_string()), ("result", result.to_string())],
                    n as f64,
                )
            }),
        );
        e.finish_both()
    }
}
