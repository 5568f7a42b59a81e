//! The one background thread that performs lookups, one at a time, each bounded by the
//! policy's timeout, and stores their outcomes in the shared cache. Owns the lookups;
//! must never be waited on by the sampler except when the resolver is dropped.

use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cache::{Cache, Policy};
use super::{Clock, Key, LookupError, Lookups, Names};
use crate::reading::lookup::LookupStatus;

/// What the resolver and its worker share.
pub struct Shared {
    pub state: Mutex<Book>,
    /// Signalled after every stored answer (for `NameResolver::settle`).
    pub answered: Condvar,
    pub clock: Clock,
    pub policy: Policy,
}

/// The cache plus the worker's progress.
#[derive(Debug, Default)]
pub struct Book {
    pub cache: Cache,
    /// Ids sent to the worker and not yet answered.
    pub in_flight: usize,
    /// Lookups performed since start (tests check that failures are not re-asked).
    pub performed: u64,
    pub stopping: bool,
    /// How the latest call of each kind of lookup went (issue 22: failures are said).
    pub statuses: Vec<LookupStatus>,
}

impl Book {
    /// Keeps how a call of `key`'s lookup went: an id the engine does not know, or one
    /// nothing can name, is an answer; no socket, a refusal, a timeout or garbage is not.
    fn note(&mut self, key: &Key, outcome: &Result<Names, LookupError>) {
        let Some(kind) = key.lookup_kind() else {
            return;
        };
        let call = match outcome {
            Ok(_) | Err(LookupError::NotFound | LookupError::Unsupported) => Ok(()),
            Err(e) => Err(format!("{}: {e}", key.subject())),
        };
        let at = self.statuses.iter().position(|s| s.kind == kind);
        let status = LookupStatus::after(at.map(|i| &self.statuses[i]), kind, call);
        match at {
            Some(i) => self.statuses[i] = status,
            None => self.statuses.push(status),
        }
    }
}

impl Shared {
    pub fn book(&self) -> MutexGuard<'_, Book> {
        // A panic in a lookup poisons nothing we cannot still read: the cache stays valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until nothing is in flight, at most `timeout`; whether it got there.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut book = self.book();
        while book.in_flight > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            book = self
                .answered
                .wait_timeout(book, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

/// The running worker: the queue's sending end and the thread.
pub struct Worker {
    pub queue: SyncSender<Key>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Worker {
    pub fn start(shared: Arc<Shared>, lookups: Lookups) -> std::io::Result<Worker> {
        let (queue, jobs) = std::sync::mpsc::sync_channel(shared.policy.capacity.max(1));
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("gpuwatch-names".into())
            .spawn(move || run(&theirs, &lookups, &jobs))?;
        Ok(Worker {
            queue,
            thread: Some(thread),
            shared,
        })
    }
}

impl Drop for Worker {
    /// Stops after the lookup in progress (at most one timeout), skipping the queue.
    fn drop(&mut self) {
        self.shared.book().stopping = true;
        // Replacing the sender closes the channel, which wakes an idle worker.
        let (closed, _) = std::sync::mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.queue, closed));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared, lookups: &Lookups, jobs: &Receiver<Key>) {
    while let Ok(key) = jobs.recv() {
        if shared.book().stopping {
            return;
        }
        // A lookup that panics is a failed lookup, not a dead worker with ids in flight.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            look_up(lookups, &key, shared.policy.timeout)
        }))
        .unwrap_or_else(|_| Err(super::LookupError::Failed("the lookup panicked".into())));
        let outcome = match outcome {
            // Nothing will ever name it (containerd without CRI, say): an answer with no
            // names, so it is neither retried nor asked about again.
            Err(super::LookupError::Unsupported) => Ok(key.unnamed()),
            other => other,
        };
        let mut book = shared.book();
        book.note(&key, &outcome);
        book.cache.answer(&key, outcome, (shared.clock)());
        book.in_flight = book.in_flight.saturating_sub(1);
        book.performed += 1;
        drop(book);
        shared.answered.notify_all();
    }
}

fn look_up(lookups: &Lookups, key: &Key, timeout: Duration) -> Result<Names, super::LookupError> {
    match key {
        Key::Container(engine, id) => lookups
            .containers
            .container(*engine, id, timeout)
            .map(Names::Container),
        Key::UserContainer(uid, engine, id) => lookups
            .rootless
            .container(*uid, *engine, id, timeout)
            .map(Names::Container),
        Key::Slurm(job) => lookups.slurm.job(*job, timeout).map(Names::Slurm),
    }
}
