//! The global rate limit on alerts: at most `MAX_PER_WINDOW` messages a minute, so a host
//! where every GPU goes wrong at once does not flood a chat channel. What is held back is
//! counted and said in one summary message as soon as there is room again. Pure: the time
//! is passed in.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime};

use super::engine::{Event, HeldBack};

pub const MAX_PER_WINDOW: usize = 20;
pub const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub struct RateLimit {
    /// When each message in the current window went out.
    sent: VecDeque<SystemTime>,
    held: BTreeMap<(crate::wire::WarningCode, super::engine::Status), usize>,
}

impl RateLimit {
    /// Lets through what fits in the window at `now` (the summary of what was held back
    /// first, when there is room for it), and counts the rest.
    pub fn admit(&mut self, now: SystemTime, events: Vec<Event>) -> Vec<Event> {
        while self
            .sent
            .front()
            .is_some_and(|t| now.duration_since(*t).unwrap_or(Duration::ZERO) >= WINDOW)
        {
            self.sent.pop_front();
        }
        let mut out = Vec::new();
        if !self.held.is_empty() && self.room() {
            self.sent.push_back(now);
            out.push(Event::HeldBack(HeldBack {
                at: now,
                counts: std::mem::take(&mut self.held),
            }));
        }
        for event in events {
            if self.room() {
                self.sent.push_back(now);
                out.push(event);
            } else if let Event::Alert(a) = &event {
                *self.held.entry((a.facts.kind, a.status)).or_default() += 1;
            }
        }
        out
    }

    fn room(&self) -> bool {
        self.sent.len() < MAX_PER_WINDOW
    }
}
