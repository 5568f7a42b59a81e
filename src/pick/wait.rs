//! `pick`'s loop over samples: each sample goes through `state::update` (so warnings and
//! holders are the monitor's), then the rules; without `--wait` the first sample decides,
//! with it the loop goes on until enough GPUs qualify, the timeout passes or a signal
//! comes. Prints nothing itself: status lines go to an injected `say`, the result is
//! returned, so tests drive it with a channel and paused time.

use std::collections::HashSet;
use std::future::Future;

use tokio::sync::mpsc::Receiver;

use super::{Choice, Reasons, Request, choose, format};
use crate::sampler::SamplerEvent;
use crate::source::{GpuId, Sample};
use crate::state::{Msg, State, update};

/// How a pick ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The line for stdout, and (with `--verbose`) why the other GPUs were skipped.
    Picked { line: String, explain: Vec<String> },
    /// Too few GPUs qualify (exit 1): the summary, then one line per GPU skipped.
    Short { why: String, explain: Vec<String> },
    /// The inherited `CUDA_VISIBLE_DEVICES` names no GPU here, or is ambiguous (exit 2).
    BadVisible(String),
    /// No sample could be read (exit 1).
    Failed(String),
    /// A signal ended the wait: exit 128 + its number, quietly.
    Stopped(u8),
}

/// Runs the pick over the samples from `rx`, starting from an empty `state`. `stop`
/// resolves to a signal number when the user interrupts; `say` gets the waiting lines.
pub async fn run(
    rx: &mut Receiver<SamplerEvent>,
    mut state: State,
    req: &Request,
    stop: impl Future<Output = u8>,
    say: &mut dyn FnMut(&str),
) -> Outcome {
    let give_up = async {
        match req.timeout {
            Some(t) if req.wait => tokio::time::sleep(t).await,
            _ => std::future::pending().await,
        }
    };
    tokio::pin!(stop, give_up);
    let mut allowed: Option<HashSet<GpuId>> = None;
    // The last sample's verdict and what the status line last said.
    let mut last: Option<(String, Vec<String>)> = None;
    let mut shown: Option<Reasons> = None;
    let mut last_failure: Option<String> = None;
    loop {
        let event = tokio::select! {
            signal = &mut stop => return Outcome::Stopped(signal),
            () = &mut give_up => return gave_up(req, last, last_failure),
            event = rx.recv() => event,
        };
        let sample = match event {
            Some(SamplerEvent::Sample(s)) => s,
            Some(SamplerEvent::Failed(why)) => {
                let why = format!("reading GPUs failed: {why}");
                if !req.wait {
                    return Outcome::Failed(why);
                }
                if last_failure.as_ref() != Some(&why) {
                    say(&format!("waiting: {why}"));
                }
                shown = None;
                last_failure = Some(why);
                continue;
            }
            None => return Outcome::Failed("the sampler stopped before a sample".into()),
        };
        last_failure = None;
        if allowed.is_none()
            && let Some(inherited) = &req.inherited
        {
            match inherited.resolve(&sample.gpus) {
                Ok(set) => allowed = Some(set),
                Err(why) => return Outcome::BadVisible(why),
            }
        }
        match decide(&mut state, *sample, req, allowed.as_ref()) {
            Verdict::Picked(outcome) => return outcome,
            Verdict::Short {
                why,
                explain,
                status,
                reasons,
            } => {
                if !req.wait {
                    return Outcome::Short { why, explain };
                }
                if !shown.as_ref().is_some_and(|s| s.same(&reasons)) {
                    say(&status);
                    shown = Some(reasons);
                }
                last = Some((why, explain));
            }
        }
    }
}

enum Verdict {
    Picked(Outcome),
    Short {
        why: String,
        explain: Vec<String>,
        /// The one-line status while waiting.
        status: String,
        reasons: Reasons,
    },
}

/// One sample through `update`, then the rules.
fn decide(
    state: &mut State,
    sample: Sample,
    req: &Request,
    allowed: Option<&HashSet<GpuId>>,
) -> Verdict {
    update(state, Msg::Sample(Box::new(sample)));
    let choice: Choice = choose(state, &req.criteria, allowed);
    match choice.picked(&req.criteria) {
        Some(gpus) => Verdict::Picked(Outcome::Picked {
            line: format(gpus, req.format),
            explain: if req.verbose {
                choice.explanations()
            } else {
                Vec::new()
            },
        }),
        None => {
            let why = choice.shortfall(&req.criteria);
            let status = match choice.grouped() {
                skipped if skipped.is_empty() => format!("waiting: {why}"),
                skipped => format!("waiting: {why}; skipped: {skipped}"),
            };
            Verdict::Short {
                explain: choice.explanations(),
                status,
                reasons: choice.reasons(),
                why,
            }
        }
    }
}

fn gave_up(req: &Request, last: Option<(String, Vec<String>)>, failure: Option<String>) -> Outcome {
    let after = humantime::format_duration(req.timeout.unwrap_or_default());
    match (failure, last) {
        (Some(why), _) => Outcome::Failed(format!("gave up after {after}: {why}")),
        (None, Some((why, explain))) => Outcome::Short {
            why: format!("gave up after {after}: {why}"),
            explain,
        },
        (None, None) => Outcome::Failed(format!("gave up after {after}, before any sample")),
    }
}
