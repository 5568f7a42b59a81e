//! The sampler task: polls a source every interval on tokio's blocking pool (NVML calls
//! block) and sends each sample over a bounded channel — or what a mode's `then` makes of
//! it on the same thread (the TUI applies it there, off the UI thread: `app::tracker`). Owns the source; knows nothing of
//! the UI. Ends when the receiver is dropped. A poll that does not come back (a wedged
//! driver call) is reported as overdue every second while it lasts, and never keeps the
//! receiver from going away: the blocked thread is abandoned, not waited for.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::reading::Sample;
use crate::source::GpuSource;

mod until;
pub use until::{Decide, stop_signal, until};

/// What the sampler says: a sample (`T`: as the mode's `then` made it), or why none came.
#[derive(Debug)]
pub enum SamplerEvent<T = Box<Sample>> {
    Sample(T),
    /// The whole poll failed; the message says why. The sampler keeps trying.
    Failed(String),
    /// The poll under way has not come back for this long (past `overdue_after`).
    Stalled(Duration),
    /// Something the source has to say that is not a reading (the recorder paused).
    Notice(String),
}

/// How long shutting a runtime down waits for a poll still in the driver before leaving its
/// thread behind (process exit ends it).
pub const ABANDON_AFTER: Duration = Duration::from_millis(500);

/// How often an overdue poll is reported.
const STALL_REPORT: Duration = Duration::from_secs(1);

/// When a poll counts as overdue: three intervals, and never under three seconds (a busy
/// driver may take a second or two).
pub fn overdue_after(interval: Duration) -> Duration {
    (interval * 3).max(Duration::from_secs(3))
}

/// Samples waiting for the UI; if it falls behind, the sampler waits rather than queueing more.
pub const CHANNEL_DEPTH: usize = 4;

pub fn channel<T>() -> (
    mpsc::Sender<SamplerEvent<T>>,
    mpsc::Receiver<SamplerEvent<T>>,
) {
    mpsc::channel(CHANNEL_DEPTH)
}

/// The one handle on a running sampler, which every mode uses: its events, and the task,
/// stopped when the handle (or its `task`) is dropped, so no mode can leave it running.
pub struct Sampler<T = Box<Sample>> {
    pub events: mpsc::Receiver<SamplerEvent<T>>,
    pub task: Task,
}

/// The sampler task; dropping it stops the task (a poll in the driver is abandoned).
pub struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts sampling `source` every `interval` on the current runtime.
pub fn spawn(source: Box<dyn GpuSource>, interval: Duration) -> Sampler {
    spawn_then(source, interval, Box::new)
}

/// Starts sampling `source` every `interval`, handing each sample to `then` on the poll's
/// own thread and sending what it returns. A panic in `then` ends the sampler as a
/// panicking source does.
pub fn spawn_then<T, F>(source: Box<dyn GpuSource>, interval: Duration, then: F) -> Sampler<T>
where
    T: Send + 'static,
    F: FnMut(Sample) -> T + Send + 'static,
{
    let (tx, events) = channel();
    Sampler {
        events,
        task: Task(tokio::spawn(run_then(source, interval, then, tx))),
    }
}

/// Runs until the receiver is dropped (or the source panics).
pub async fn run(source: Box<dyn GpuSource>, interval: Duration, tx: mpsc::Sender<SamplerEvent>) {
    run_then(source, interval, Box::new, tx).await;
}

/// `run`, with each sample handed to `then` on the poll's thread (see `spawn_then`).
pub async fn run_then<T, F>(
    mut source: Box<dyn GpuSource>,
    interval: Duration,
    mut then: F,
    tx: mpsc::Sender<SamplerEvent<T>>,
) where
    T: Send + 'static,
    F: FnMut(Sample) -> T + Send + 'static,
{
    let mut ticker = tokio::time::interval(interval);
    // A slow poll must not cause a burst of catch-up polls.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = tx.closed() => return,
        }
        let poll = tokio::task::spawn_blocking(move || {
            let result = source.sample().map(&mut then);
            let notices = source.notices();
            (source, then, result, notices)
        });
        let Some(polled) = wait_for(poll, interval, &tx).await else {
            return;
        };
        let event = match polled {
            Ok((back, then_back, result, notices)) => {
                source = back;
                then = then_back;
                for notice in notices {
                    if tx.send(SamplerEvent::Notice(notice)).await.is_err() {
                        return;
                    }
                }
                match result {
                    Ok(made) => SamplerEvent::Sample(made),
                    Err(e) => SamplerEvent::Failed(e.to_string()),
                }
            }
            Err(join_error) => {
                // The source panicked and is gone with its thread: report once and stop.
                let _ = tx
                    .send(SamplerEvent::Failed(format!(
                        "GPU source crashed: {join_error}"
                    )))
                    .await;
                return;
            }
        };
        if tx.send(event).await.is_err() {
            return;
        }
    }
}

/// Waits for the poll, saying every `STALL_REPORT` once it is overdue; `None` when the
/// receiver went away meanwhile (the poll's thread is left to finish or hang on its own).
async fn wait_for<T, E>(
    mut poll: tokio::task::JoinHandle<T>,
    interval: Duration,
    tx: &mpsc::Sender<SamplerEvent<E>>,
) -> Option<Result<T, tokio::task::JoinError>> {
    let started = tokio::time::Instant::now();
    let overdue = overdue_after(interval);
    let mut report = tokio::time::interval_at(started + overdue, STALL_REPORT);
    report.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            done = &mut poll => return Some(done),
            _ = report.tick() => {
                // try_send: a UI that is behind gets the next report instead.
                let _ = tx.try_send(SamplerEvent::Stalled(started.elapsed()));
            }
            _ = tx.closed() => return None,
        }
    }
}
