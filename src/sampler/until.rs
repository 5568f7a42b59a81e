//! Waiting on samples until something is decided, a timeout passes or a signal comes: the
//! one loop under `pick --wait` and `wait`. The deciding is the caller's (`Decide`); this
//! owns the order of events and the words for a source that failed or stalled.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;

use super::SamplerEvent;
use crate::reading::Sample;

/// What a waiting command decides at each event; `None` goes on waiting.
pub trait Decide {
    type Outcome;
    fn on_sample(&mut self, sample: Sample) -> Option<Self::Outcome>;
    /// The source failed this tick, or has not answered for a while (`why` says which).
    fn on_failure(&mut self, why: String) -> Option<Self::Outcome>;
    /// A notice from the sampler (a lookup that failed): said, never deciding.
    fn on_notice(&mut self, text: &str);
    /// The timeout passed.
    fn gave_up(&mut self) -> Self::Outcome;
    /// A signal came (its number).
    fn stopped(&mut self, signal: u8) -> Self::Outcome;
    /// The sampler stopped.
    fn closed(&mut self) -> Self::Outcome;
}

/// Feeds `decider` the events from `rx` until it decides, `timeout` passes (`None`: never)
/// or `stop` resolves to a signal number.
pub async fn until<D: Decide>(
    rx: &mut Receiver<SamplerEvent>,
    decider: &mut D,
    timeout: Option<Duration>,
    stop: impl Future<Output = u8>,
) -> D::Outcome {
    let give_up = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop, give_up);
    loop {
        let event = tokio::select! {
            signal = &mut stop => return decider.stopped(signal),
            () = &mut give_up => return decider.gave_up(),
            event = rx.recv() => event,
        };
        let decided = match event {
            Some(SamplerEvent::Sample(sample)) => decider.on_sample(*sample),
            Some(SamplerEvent::Failed(why)) => {
                decider.on_failure(format!("reading GPUs failed: {why}"))
            }
            Some(SamplerEvent::Stalled(waited)) => decider.on_failure(format!(
                "GPU source not answering for {} s",
                waited.as_secs()
            )),
            Some(SamplerEvent::Notice(text)) => {
                decider.on_notice(&text);
                None
            }
            None => Some(decider.closed()),
        };
        if let Some(outcome) = decided {
            return outcome;
        }
    }
}
