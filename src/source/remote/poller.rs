//! Polls every remote host as a task on one tokio runtime, at most [`CONCURRENCY`] fetches
//! at a time, each cut off at [`TIMEOUT`], with [`Backoff`] for failing hosts. Keeps each
//! host's latest [`HostSlot`]; reading one never waits on the network, so a slow or dead host
//! cannot stall the others or the UI. A task per host costs a few hundred bytes, not a
//! thread's stack: 200 hosts are 200 tasks on one thread, with 32 sockets open at most.
//!
//! In the program the runtime is its own thread's (snapshot parsing stays off the UI
//! thread, and every mode — TUI, `--once`, `serve`, `pick` — polls the same way); tests give
//! a handle to their own paused-time runtime and move time themselves.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Semaphore;

use super::{Backoff, CONCURRENCY, HostSlot, TIMEOUT, Transport, parse_snapshot};

/// Where the polling tasks run.
#[derive(Clone)]
pub enum Runtime {
    /// A thread of the fleet's own with a current-thread runtime; stops when the fleet drops.
    OwnThread,
    /// An existing runtime (tests: a paused clock).
    On(tokio::runtime::Handle),
}

/// Every remote host being polled, in the order given. Dropping it stops the polling.
pub struct Fleet {
    slots: Vec<Arc<Mutex<HostSlot>>>,
    answered: Arc<Answered>,
    /// The tasks, when they run on a runtime that outlives the fleet.
    tasks: Vec<tokio::task::AbortHandle>,
    /// Ends the own thread's runtime (and with it every task).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// Raised after every poll, for the first sample's wait.
#[derive(Default)]
struct Answered {
    lock: Mutex<()>,
    changed: Condvar,
}

impl Answered {
    fn notify(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.changed.notify_all();
    }
}

/// One host's polling, as the task needs it.
struct Host {
    address: String,
    interval: Duration,
    transport: Arc<dyn Transport>,
    permits: Arc<Semaphore>,
    slot: Arc<Mutex<HostSlot>>,
    answered: Arc<Answered>,
}

impl Fleet {
    /// Starts polling each of `addresses` (HOST:PORT) every `interval`.
    pub fn start(
        addresses: &[String],
        interval: Duration,
        transport: Arc<dyn Transport>,
        runtime: Runtime,
    ) -> Fleet {
        let answered = Arc::new(Answered::default());
        let slots: Vec<Arc<Mutex<HostSlot>>> = addresses.iter().map(|_| Arc::default()).collect();
        let permits = Arc::new(Semaphore::new(CONCURRENCY));
        let hosts: Vec<Host> = addresses
            .iter()
            .zip(&slots)
            .map(|(address, slot)| Host {
                address: address.clone(),
                interval,
                transport: transport.clone(),
                permits: permits.clone(),
                slot: slot.clone(),
                answered: answered.clone(),
            })
            .collect();
        let mut fleet = Fleet {
            slots,
            answered,
            tasks: Vec::new(),
            stop: None,
        };
        match runtime {
            Runtime::On(handle) => {
                fleet.tasks = hosts
                    .into_iter()
                    .map(|h| handle.spawn(h.poll()).abort_handle())
                    .collect();
            }
            Runtime::OwnThread => {
                let (stop, stopped) = tokio::sync::oneshot::channel();
                if let Err(why) = own_thread(hosts, stopped) {
                    fleet.fail_all(&format!("cannot start polling: {why}"));
                }
                fleet.stop = Some(stop);
            }
        }
        fleet
    }

    /// The latest state of host `i`, without waiting.
    pub fn latest(&self, i: usize) -> HostSlot {
        self.slots[i].lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether every host has answered or failed at least once.
    pub fn all_settled(&self) -> bool {
        self.slots
            .iter()
            .all(|s| s.lock().map(|s| s.settled()).unwrap_or(true))
    }

    /// Blocks (real time) until every host has answered or failed once, or `deadline`.
    pub fn wait_settled(&self, deadline: Instant) {
        let mut guard = self.answered.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            if self.all_settled() || now >= deadline {
                return;
            }
            guard = match self.answered.changed.wait_timeout(guard, deadline - now) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn fail_all(&self, why: &str) {
        for slot in &self.slots {
            if let Ok(mut s) = slot.lock() {
                s.error = Some(why.to_string());
            }
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        // A fetch in flight is dropped with its task: its socket closes at once.
        self.tasks.iter().for_each(|t| t.abort());
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Runs the hosts' tasks on a current-thread runtime of a thread of their own, until `stop`
/// fires or its sender is dropped.
fn own_thread(hosts: Vec<Host>, stop: tokio::sync::oneshot::Receiver<()>) -> std::io::Result<()> {
    // Name lookups run on the blocking pool; at most one per poll in flight.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(CONCURRENCY)
        .build()?;
    std::thread::Builder::new()
        .name("remote poller".into())
        .spawn(move || {
            for h in hosts {
                rt.spawn(h.poll());
            }
            let _ = rt.block_on(stop);
            // Not waiting for a name lookup still in the blocking pool.
            rt.shutdown_background();
        })?;
    Ok(())
}

impl Host {
    /// Polls forever (until the task is dropped), telling `answered` after each poll.
    async fn poll(self) {
        let mut backoff = Backoff::new(self.interval);
        loop {
            let fetched = {
                // Never closed; a permit bounds the sockets and parsing in flight.
                let _permit = self.permits.acquire().await;
                match tokio::time::timeout(TIMEOUT, self.transport.fetch(&self.address)).await {
                    Ok(result) => result,
                    Err(_) => Err(format!("no answer within {TIMEOUT:?}")),
                }
            };
            let result = fetched.and_then(|text| parse_snapshot(&text, SystemTime::now()));
            // Timed from the end of this poll, before anyone is told of it.
            let wait = backoff.after(result.is_ok());
            if let Ok(mut s) = self.slot.lock() {
                match result {
                    Ok(sample) => {
                        s.latest = Some(sample);
                        s.error = None;
                    }
                    Err(why) => s.error = Some(why),
                }
            }
            self.answered.notify();
            tokio::time::sleep(wait).await;
        }
    }
}
