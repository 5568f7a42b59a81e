//! The alert state machine: fed the current warnings at each sample time, it says which
//! alerts to send now. A warning fires once it has held for its `for` time, is sent again
//! every `repeat` while it holds (and at once when it turns critical), and sends `resolved`
//! only once it has stayed clear for the resolve hold: one that comes back before then is
//! the same alert, still firing (a flap, counted, nothing sent), so a job that OOMs and
//! restarts every minute is one alert, not a message a minute. One alert per (host, kind,
//! GPU). Pure: the time is passed in, nothing is sent from here, and it knows warnings only
//! by their code, so new kinds need nothing here. The global rate limit is `limit`'s.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::limit::RateLimit;
use crate::alert_settings::rules::Rules;
use crate::model::warnings::{Severity, Warning};
use crate::reading::GpuReading;
use crate::units::Bytes;
use crate::wire::WarningCode;

/// One warning as alerts see it: the typed warning, its words, and the facts around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub warning: Warning,
    /// The warning's code (`overheating`).
    pub kind: WarningCode,
    /// The host the GPU (or the warning) belongs to.
    pub host: String,
    /// `present::warnings::warning_line`'s sentence.
    pub message: String,
    /// Who holds the GPU: (user or job, VRAM), largest first.
    pub owners: Vec<(String, crate::model::users::Total<Bytes>)>,
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
    /// How often the warning cleared and came back within the resolve hold (one alert).
    pub flaps: u32,
    /// The warning already held at the first sample gpuwatch saw (not news to the bell).
    pub at_start: bool,
    /// For `resolved`: the first sample time the warning was no longer seen at (it has
    /// been clear since).
    pub cleared: Option<SystemTime>,
    /// For `resolved`: the GPU's readings when it resolved (`Alerting` fills them in from
    /// the model; `None` for a host-wide warning or a GPU no longer reported).
    pub now: Option<GpuReading>,
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
    /// Not seen since the sample at this time: clear, waiting out the resolve hold.
    cleared: Option<SystemTime>,
    flaps: u32,
    at_start: bool,
}

#[derive(Debug)]
pub struct Engine {
    rules: Rules,
    tracked: BTreeMap<Key, Tracked>,
    limit: RateLimit,
    /// Whether `step` has run: what the first step sees was there at start.
    stepped: bool,
}

impl Engine {
    pub fn new(rules: Rules) -> Self {
        Engine {
            rules,
            tracked: BTreeMap::new(),
            limit: RateLimit::default(),
            stepped: false,
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
        let at_start = !std::mem::replace(&mut self.stepped, true);
        let mut out = self.clear(now, &current);
        for (key, w) in current {
            if let Some(a) = self.hold(key, w, now, at_start) {
                out.push(a);
            }
        }
        self.limit.admit(now, out)
    }

    /// Those not seen now: one never fired is forgotten; a fired one resolves once it has
    /// been clear for the resolve hold, and is kept until then in case it comes back.
    fn clear(&mut self, now: SystemTime, current: &BTreeMap<Key, &Observed>) -> Vec<Event> {
        let mut out = Vec::new();
        self.tracked.retain(|key, t| {
            if current.contains_key(key) {
                return true;
            }
            if t.sent.is_none() {
                return false;
            }
            let cleared = *t.cleared.get_or_insert(now);
            let clear_for = now.duration_since(cleared).unwrap_or(Duration::ZERO);
            if clear_for < self.rules.resolve_after {
                return true;
            }
            out.push(t.alert(Status::Resolved, now, false));
            false
        });
        out
    }

    /// Updates one holding warning; the alert to send for it now, if any.
    fn hold(&mut self, key: Key, w: &Observed, now: SystemTime, at_start: bool) -> Option<Event> {
        let t = self.tracked.entry(key).or_insert_with(|| Tracked {
            since: now,
            sent: None,
            last_sent: now,
            last: w.clone(),
            cleared: None,
            flaps: 0,
            at_start,
        });
        t.last = w.clone();
        if t.cleared.take().is_some() {
            // Back within the resolve hold: the same alert, still firing.
            t.flaps += 1;
        }
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
        Some(t.alert(Status::Firing, now, again))
    }
}

impl Tracked {
    /// The message about this alert at `now`, with the facts last seen.
    fn alert(&self, status: Status, now: SystemTime, repeat: bool) -> Event {
        Event::Alert(Box::new(Alert {
            status,
            facts: self.last.clone(),
            started: self.since,
            at: now,
            repeat,
            test: false,
            flaps: self.flaps,
            at_start: self.at_start,
            cleared: self.cleared,
            now: None,
        }))
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
