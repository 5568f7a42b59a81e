//! The sampler task: polls a source every interval on tokio's blocking pool (NVML calls
//! block) and sends each sample over a bounded channel. Owns the source; knows nothing of
//! the UI. Ends when the receiver is dropped. A poll that does not come back (a wedged
//! driver call) is reported as overdue every second while it lasts, and never keeps the
//! receiver from going away: the blocked thread is abandoned, not waited for.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::reading::Sample;
use crate::source::GpuSource;

mod until;
pub use until::{Decide, until};

#[derive(Debug)]
pub enum SamplerEvent {
    Sample(Box<Sample>),
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

pub fn channel() -> (mpsc::Sender<SamplerEvent>, mpsc::Receiver<SamplerEvent>) {
    mpsc::channel(CHANNEL_DEPTH)
}

/// Runs until the receiver is dropped (or the source panics).
pub async fn run(
    mut source: Box<dyn GpuSource>,
    interval: Duration,
    tx: mpsc::Sender<SamplerEvent>,
) {
    let mut ticker = tokio::time::interval(interval);
    // A slow poll must not cause a burst of catch-up polls.
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = tx.closed() => return,
        }
        let poll = tokio::task::spawn_blocking(move || {
            let result = source.sample();
            let notices = source.notices();
            (source, result, notices)
        });
        let Some(polled) = wait_for(poll, interval, &tx).await else {
            return;
        };
        let event = match polled {
            Ok((back, result, notices)) => {
                source = back;
                for notice in notices {
                    if tx.send(SamplerEvent::Notice(notice)).await.is_err() {
                        return;
                    }
                }
                match result {
                    Ok(sample) => SamplerEvent::Sample(Box::new(sample)),
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
async fn wait_for<T>(
    mut poll: tokio::task::JoinHandle<T>,
    interval: Duration,
    tx: &mpsc::Sender<SamplerEvent>,
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
