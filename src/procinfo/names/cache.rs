//! The resolver's memory: per id, queued, found (with the names) or failed (and when), and
//! when it was last asked about. Pure: every call takes `now`, so the retry and eviction
//! rules are tested without a clock. Must not look anything up.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Key, LookupError, Names};

/// How long answers are kept and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Each lookup's bound (a socket round trip, a command run).
    pub timeout: Duration,
    /// A failed lookup is not retried before this: an engine that is not installed, or
    /// will not let us in, is not asked again every sample.
    pub retry_after: Duration,
    /// An id nobody asked about for this long is forgotten (its processes are gone).
    pub forget_after: Duration,
    /// At most this many ids are remembered; also the bound on the queue.
    pub capacity: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            timeout: Duration::from_millis(200),
            retry_after: Duration::from_secs(60),
            forget_after: Duration::from_secs(600),
            capacity: 512,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Sent to the worker; not to be sent again until it answers.
    Queued,
    Found(Names),
    /// Kept with its reason, for diagnostics and tests.
    Failed {
        at: Instant,
        error: LookupError,
    },
}

#[derive(Debug)]
struct Entry {
    state: State,
    asked: Instant,
}

/// What the caller should do about an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Known: use these names.
    Found(Names),
    /// Being looked up, or failed recently: no names yet, nothing to do.
    Wait,
    /// Queue a lookup (the entry is marked queued; call `unqueue` if that fails).
    Ask,
}

#[derive(Debug, Default)]
pub struct Cache {
    entries: HashMap<Key, Entry>,
}

impl Cache {
    /// What is known about `key` at `now`, remembering that it was asked about.
    pub fn ask(&mut self, key: &Key, now: Instant, policy: &Policy) -> Lookup {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.asked = now;
            return match &entry.state {
                State::Found(names) => Lookup::Found(names.clone()),
                State::Queued => Lookup::Wait,
                State::Failed { at, .. }
                    if now.saturating_duration_since(*at) < policy.retry_after =>
                {
                    Lookup::Wait
                }
                State::Failed { .. } => {
                    entry.state = State::Queued;
                    Lookup::Ask
                }
            };
        }
        if self.entries.len() >= policy.capacity.max(1) {
            self.evict(now, policy);
        }
        if self.entries.len() >= policy.capacity.max(1) {
            // Full of ids still in use or in flight: ask again on a later sample.
            return Lookup::Wait;
        }
        self.entries.insert(
            key.clone(),
            Entry {
                state: State::Queued,
                asked: now,
            },
        );
        Lookup::Ask
    }

    /// The queue was full: forget the mark so the next ask queues it again.
    pub fn unqueue(&mut self, key: &Key) {
        if self
            .entries
            .get(key)
            .is_some_and(|e| e.state == State::Queued)
        {
            self.entries.remove(key);
        }
    }

    /// Stores a lookup's outcome. An id forgotten meanwhile stays forgotten.
    pub fn answer(&mut self, key: &Key, outcome: Result<Names, LookupError>, now: Instant) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.state = match outcome {
                Ok(names) => State::Found(names),
                Err(error) => State::Failed { at: now, error },
            };
        }
    }

    /// Drops ids not asked about within `forget_after`; if that frees nothing, the
    /// least recently asked answered one, so a burst of new ids still gets names.
    fn evict(&mut self, now: Instant, policy: &Policy) {
        self.entries
            .retain(|_, e| now.saturating_duration_since(e.asked) < policy.forget_after);
        if self.entries.len() < policy.capacity.max(1) {
            return;
        }
        let oldest = self
            .entries
            .iter()
            .filter(|(_, e)| e.state != State::Queued)
            .min_by_key(|(_, e)| e.asked)
            .map(|(k, _)| k.clone());
        if let Some(key) = oldest {
            self.entries.remove(&key);
        }
    }

    pub fn state(&self, key: &Key) -> Option<&State> {
        self.entries.get(key).map(|e| &e.state)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::workload::SlurmNames;

    fn names(n: &str) -> Names {
        Names::Slurm(SlurmNames {
            name: Some(n.into()),
            ..SlurmNames::default()
        })
    }

    #[test]
    fn an_id_is_queued_once_then_found() {
        let (mut c, p, t) = (Cache::default(), Policy::default(), Instant::now());
        let k = Key::Slurm(1);
        assert_eq!(c.ask(&k, t, &p), Lookup::Ask);
        assert_eq!(
            c.ask(&k, t, &p),
            Lookup::Wait,
            "in flight: not queued twice"
        );
        c.answer(&k, Ok(names("a")), t);
        assert_eq!(
            c.ask(&k, t + p.retry_after * 5, &p),
            Lookup::Found(names("a"))
        );
    }

    #[test]
    fn a_failure_is_remembered_then_retried() {
        let (mut c, p, t) = (Cache::default(), Policy::default(), Instant::now());
        let k = Key::Slurm(2);
        c.ask(&k, t, &p);
        c.answer(&k, Err(LookupError::NotFound), t);
        let soon = t + p.retry_after - Duration::from_secs(1);
        assert_eq!(c.ask(&k, soon, &p), Lookup::Wait);
        assert_eq!(c.ask(&k, t + p.retry_after, &p), Lookup::Ask);
        assert_eq!(c.state(&k), Some(&State::Queued));
    }

    #[test]
    fn the_cache_is_bounded_and_forgets_idle_ids_first() {
        let p = Policy {
            capacity: 3,
            ..Policy::default()
        };
        let (mut c, t) = (Cache::default(), Instant::now());
        for job in 0..3 {
            c.ask(&Key::Slurm(job), t, &p);
            c.answer(&Key::Slurm(job), Ok(names("x")), t);
        }
        // Job 0 is still asked about; 1 and 2 are not.
        let later = t + p.forget_after;
        c.ask(&Key::Slurm(0), later, &p);
        assert_eq!(c.ask(&Key::Slurm(9), later, &p), Lookup::Ask);
        assert_eq!(c.len(), 2, "the idle ids went");
        assert!(c.state(&Key::Slurm(0)).is_some());
        // All in use: the least recently asked answered id makes room.
        c.ask(&Key::Slurm(10), later, &p);
        c.answer(&Key::Slurm(9), Err(LookupError::NotFound), later);
        assert_eq!(
            c.ask(&Key::Slurm(11), later + Duration::from_secs(1), &p),
            Lookup::Ask
        );
        assert_eq!(c.len(), 3);
        // Everything queued: no room, the caller waits rather than growing the cache.
        let full = Policy { capacity: 1, ..p };
        let mut c = Cache::default();
        c.ask(&Key::Slurm(1), t, &full);
        assert_eq!(c.ask(&Key::Slurm(2), t, &full), Lookup::Wait);
        c.unqueue(&Key::Slurm(1));
        assert_eq!(c.len(), 0);
    }
}
