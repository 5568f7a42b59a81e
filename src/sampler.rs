//! The sampler task: polls a source every interval on tokio's blocking pool (NVML calls
//! block) and sends each sample over a bounded channel. Owns the source; knows nothing of
//! the UI. Ends when the receiver is dropped.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use crate::source::{GpuSource, Sample};

#[derive(Debug)]
pub enum SamplerEvent {
    Sample(Box<Sample>),
    /// The whole poll failed; the message says why. The sampler keeps trying.
    Failed(String),
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
        let polled = tokio::task::spawn_blocking(move || {
            let result = source.sample();
            (source, result)
        })
        .await;
        let event = match polled {
            Ok((back, result)) => {
                source = back;
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
