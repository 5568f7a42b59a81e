//! The alert state machine: fed the current warnings at each sample time, it says which
//! alerts to send now. A warning fires once it has held for its `for` time, is sent again
//! every `repeat` while it holds (and at once when it turns critical), and sends `resolved`
//! when it clears. One alert per (host, kind, GPU). Pure: the time is passed in, nothing is
//! sent from here, and it knows warnings only by their code, so new kinds need nothing
//! here. The global rate limit is `limit`'s.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::limit::RateLimit;
use super::rules::Rules;
use crate::model::warnings::{Severity, Warning};
use crate::source::wire::WarningCode;
use crate::units::Bytes;

/// One warning as alerts see it: the typed warning, its words, and the facts around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub warning: Warning,
    /// The warning's code (`overheating`).
    pub kind: WarningCode,
    /// The host the GPU (or the warning) belongs to.
    pub host: String,
    /// `ui::text::warning_line`'s sentence.
    pub message: String,
    /// Who holds the GPU: (user or job, VRAM), largest first.
    pub owners: Vec<(String, Bytes)>,
}

/// (host, kind, GPU UUID or "" for a host-wide warning).
pub type Key = (String, WarningCode, String);

impl Observed {
    pub fn key(&self) -> Key {
        let gpu = self.warning.gpu().map(|g| g.0.clone()).unwrap_or_default();
        (self.host.clone(), self.kind, gpu)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Firing,
    Resolved,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Firing => "firing",
            Status::Resolved => "resolved",
        }
    }
}

/// One message to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub status: Status,
    /// The latest facts (for `resolved`, the last ones seen before it cleared).
    pub facts: Observed,
    /// When the warning started to hold (at an alerting severity).
    pub started: SystemTime,
    pub at: SystemTime,
    /// A repeat of an alert already sent.
    pub repeat: bool,
    /// A synthetic alert from `gpuwatch alert test`.
    pub test: bool,
}

/// What the rate limit held back since it last let something through.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldBack {
    pub at: SystemTime,
    /// How many alerts per (kind, status).
    pub counts: BTreeMap<(WarningCode, Status), usize>,
}

impl HeldBack {
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    // Boxed: an alert carries the warning and its facts, a summary only counts.
    Alert(Box<Alert>),
    HeldBack(HeldBack),
}

/// What the machine remembers about one (host, kind, GPU).
#[derive(Debug, Clone)]
struct Tracked {
    since: SystemTime,
    /// The severity last sent, once fired.
    sent: Option<Severity>,
    last_sent: SystemTime,
    last: Observed,
}

#[derive(Debug)]
pub struct Engine {
    rules: Rules,
    tracked: BTreeMap<Key, Tracked>,
    limit: RateLimit,
}

impl Engine {
    pub fn new(rules: Rules) -> Self {
        Engine {
            rules,
            tracked: BTreeMap::new(),
            limit: RateLimit::default(),
        }
    }

    /// The alerts to send at `now` for the warnings that hold now (most severe first for
    /// one GPU, as `model::warnings::sort` orders them: the first of a key wins).
    pub fn step(&mut self, now: SystemTime, warnings: &[Observed]) -> Vec<Event> {
        let mut current: BTreeMap<Key, &Observed> = BTreeMap::new();
        for w in warnings {
            if self.rules.wanted(w.kind, w.warning.severity) {
                current.entry(w.key()).or_insert(w);
            }
        }
        let mut out = Vec::new();
        // Cleared: resolved if it had fired, forgotten either way.
        let gone: Vec<Key> = self
            .tracked
            .keys()
            .filter(|k| !current.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(t) = self.tracked.remove(&key)
                && t.sent.is_some()
            {
                out.push(alert(Status::Resolved, t.last, t.since, now, false));
            }
        }
        for (key, w) in current {
            if let Some(a) = self.hold(key, w, now) {
                out.push(a);
            }
        }
        self.limit.admit(now, out)
    }

    /// Updates one holding warning; the alert to send for it now, if any.
    fn hold(&mut self, key: Key, w: &Observed, now: SystemTime) -> Option<Event> {
        let t = self.tracked.entry(key).or_insert_with(|| Tracked {
            since: now,
            sent: None,
            last_sent: now,
            last: w.clone(),
        });
        t.last = w.clone();
        let severity = w.warning.severity;
        let held = now.duration_since(t.since).unwrap_or(Duration::ZERO);
        let repeat = self.rules.repeat(w.kind);
        let send = match t.sent {
            None => held >= self.rules.hold(w.kind, severity),
            // Worse than what was said: say it now, not at the next repeat.
            Some(sent) if severity > sent => true,
            Some(_) => {
                !repeat.is_zero()
                    && now.duration_since(t.last_sent).unwrap_or(Duration::ZERO) >= repeat
            }
        };
        if !send {
            return None;
        }
        let again = t.sent.is_some();
        t.sent = Some(severity);
        t.last_sent = now;
        Some(alert(Status::Firing, w.clone(), t.since, now, again))
    }
}

fn alert(
    status: Status,
    facts: Observed,
    started: SystemTime,
    at: SystemTime,
    repeat: bool,
) -> Event {
    Event::Alert(Box::new(Alert {
        status,
        facts,
        started,
        at,
        repeat,
        test: false,
    }))
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
