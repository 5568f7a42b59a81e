//! `pick`'s loop over samples: each sample goes through `state::update` (so warnings and
//! holders are the monitor's), then the rules; without `--wait` the first sample decides,
//! with it the loop goes on until enough GPUs qualify, the timeout passes or a signal
//! comes. Prints nothing itself: status lines go to an injected `say`, the result is
//! returned, so tests drive it with a channel and paused time.

use std::collections::HashSet;
use std::future::Future;

use tokio::sync::mpsc::Receiver;

use super::{Choice, Reasons, Request, choose, format, kubelet_unasked};
use crate::reading::{GpuId, Sample};
use crate::sampler::{Decide, SamplerEvent, until};
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
    /// The GPUs picked cannot be written in the format asked for (exit 2): `--format env`
    /// across vendors.
    Unprintable(String),
    /// A signal ended the wait: exit 128 + its number, quietly.
    Stopped(u8),
}

/// Runs the pick over the samples from `rx`, starting from an empty `state`. `stop`
/// resolves to a signal number when the user interrupts; `say` gets the waiting lines.
pub async fn run(
    rx: &mut Receiver<SamplerEvent>,
    state: State,
    req: &Request,
    stop: impl Future<Output = u8>,
    say: &mut dyn FnMut(&str),
) -> Outcome {
    let timeout = req.timeout.filter(|_| req.wait);
    let mut waiter = Waiter::new(state, req, say);
    until(rx, &mut waiter, timeout, stop).await
}

/// What the loop remembers between samples.
struct Waiter<'r, 's> {
    state: State,
    req: &'r Request,
    /// Where the waiting lines go.
    say: &'s mut dyn FnMut(&str),
    /// The GPUs the inherited `CUDA_VISIBLE_DEVICES` names, found in the first sample.
    allowed: Option<HashSet<GpuId>>,
    /// The last sample's shortfall and explanations, for giving up.
    last: Option<(String, Vec<String>)>,
    /// What the status line last said, so it is said again only when it changes.
    shown: Option<Reasons>,
    failure: Option<String>,
}

impl<'r, 's> Waiter<'r, 's> {
    fn new(state: State, req: &'r Request, say: &'s mut dyn FnMut(&str)) -> Self {
        Waiter {
            state,
            req,
            say,
            allowed: None,
            last: None,
            shown: None,
            failure: None,
        }
    }
}

impl Decide for Waiter<'_, '_> {
    type Outcome = Outcome;

    /// A sample: the outcome when it settles the pick, else a status line if anything changed.
    fn on_sample(&mut self, sample: Sample) -> Option<Outcome> {
        self.failure = None;
        if self.allowed.is_none()
            && let Some(inherited) = &self.req.inherited
        {
            // Checked against every GPU the source lists, before `--only` narrows them.
            match inherited.resolve(&sample.gpus) {
                Ok(set) => self.allowed = Some(set),
                Err(why) => return Some(Outcome::BadVisible(why)),
            }
        }
        match decide(&mut self.state, sample, self.req, self.allowed.as_ref()) {
            Verdict::Picked(outcome) => Some(outcome),
            Verdict::Short { why, explain, .. } if !self.req.wait => {
                Some(Outcome::Short { why, explain })
            }
            Verdict::Short {
                why,
                explain,
                status,
                reasons,
            } => {
                if !self.shown.as_ref().is_some_and(|s| s.same(&reasons)) {
                    (self.say)(&status);
                    self.shown = Some(reasons);
                }
                self.last = Some((why, explain));
                None
            }
        }
    }

    /// The source failed this tick: fatal for one pick, a status line while waiting (NVML
    /// may answer again next time).
    fn on_failure(&mut self, why: String) -> Option<Outcome> {
        if !self.req.wait {
            return Some(Outcome::Failed(why));
        }
        if self.failure.as_ref() != Some(&why) {
            (self.say)(&format!("waiting: {why}"));
        }
        // After a failure the next sample's reasons are news, even if unchanged.
        self.shown = None;
        self.failure = Some(why);
        None
    }

    fn on_notice(&mut self, text: &str) {
        (self.say)(text);
    }

    fn gave_up(&mut self) -> Outcome {
        let after = humantime::format_duration(self.req.timeout.unwrap_or_default());
        match (self.failure.take(), self.last.take()) {
            (Some(why), _) => Outcome::Failed(format!("gave up after {after}: {why}")),
            (None, Some((why, explain))) => Outcome::Short {
                why: format!("gave up after {after}: {why}"),
                explain,
            },
            (None, None) => Outcome::Failed(format!("gave up after {after}, before any sample")),
        }
    }

    fn stopped(&mut self, signal: u8) -> Outcome {
        Outcome::Stopped(signal)
    }

    fn closed(&mut self) -> Outcome {
        Outcome::Failed("the sampler stopped before a sample".into())
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
    if let Some(why) = kubelet_unasked(&state.model, req) {
        return Verdict::Short {
            status: format!("waiting: {why}"),
            explain: Vec::new(),
            reasons: Reasons::default(),
            why,
        };
    }
    let choice: Choice = choose(state, &req.criteria, allowed);
    match choice.picked(&req.criteria) {
        Some(gpus) => Verdict::Picked(match format(gpus, req.format) {
            Ok(line) => Outcome::Picked {
                line,
                explain: if req.verbose {
                    choice.explanations()
                } else {
                    Vec::new()
                },
            },
            Err(why) => Outcome::Unprintable(why),
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::pick::{Criteria, Format};
    use crate::reading::{GpuReading, HostInfo};
    use crate::sampler;
    use crate::state::ViewConfig;
    use crate::units::{Bytes, Percent};

    fn sample(util: u32) -> SamplerEvent {
        let mut g = GpuReading::absent(GpuId("GPU-0".into()), 0, "g");
        g.memory_total = Some(Bytes::from_gib(80.0));
        g.memory_used = Some(Bytes(0));
        g.util = Some(Percent(util));
        SamplerEvent::Sample(Box::new(Sample {
            time: SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus: vec![g],
            processes: Vec::new(),
            hosts: Vec::new(),
            history: None,
        }))
    }

    fn request(wait: bool, timeout: Option<Duration>) -> Request {
        Request {
            criteria: Criteria {
                count: 1,
                min_free: None,
                max_util: 10,
            },
            format: Format::Indices,
            inherited: None,
            wait,
            timeout,
            verbose: false,
            ignore_kubelet: false,
        }
    }

    /// Runs the loop over `events` (the channel stays open after them) and returns the
    /// outcome with the status lines said.
    async fn drive(
        req: &Request,
        events: Vec<SamplerEvent>,
        stop: impl Future<Output = u8>,
    ) -> (Outcome, Vec<String>) {
        let (tx, mut rx) = sampler::channel();
        let feeder = tokio::spawn(async move {
            for e in events {
                tx.send(e).await.unwrap();
            }
            // Keep the channel open: the loop must end for its own reasons.
            std::future::pending::<()>().await;
        });
        let mut said = Vec::new();
        let state = State::new(ViewConfig::default());
        let outcome = run(&mut rx, state, req, stop, &mut |l| said.push(l.to_string())).await;
        feeder.abort();
        (outcome, said)
    }

    #[tokio::test(start_paused = true)]
    async fn status_lines_only_when_the_reasons_change() {
        let events = vec![
            sample(50),
            sample(70),
            SamplerEvent::Failed("NVML hiccup".into()),
            sample(60),
            sample(3),
        ];
        let req = request(true, None);
        let (outcome, said) = drive(&req, events, std::future::pending()).await;
        let busy = "waiting: need 1 GPU with ≤10% util, no warning and nobody else's memory; \
                    0 qualify (none); skipped: 0 busy";
        assert_eq!(
            said,
            [busy, "waiting: reading GPUs failed: NVML hiccup", busy]
        );
        assert_eq!(
            outcome,
            Outcome::Picked {
                line: "0".into(),
                explain: vec![]
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_timeout_gives_up_with_the_last_reasons() {
        let req = request(true, Some(Duration::from_secs(600)));
        let start = tokio::time::Instant::now();
        let (outcome, _) = drive(&req, vec![sample(50)], std::future::pending()).await;
        assert_eq!(start.elapsed(), Duration::from_secs(600));
        let Outcome::Short { why, explain } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(why.starts_with("gave up after 10m: need 1 GPU"), "{why}");
        assert_eq!(explain, ["GPU 0 skipped: 50% busy"]);
    }

    #[tokio::test(start_paused = true)]
    async fn one_sample_decides_without_wait_and_a_signal_ends_a_wait() {
        let (outcome, said) = drive(
            &request(false, None),
            vec![sample(50)],
            std::future::pending(),
        )
        .await;
        assert!(matches!(outcome, Outcome::Short { .. }), "{outcome:?}");
        assert!(said.is_empty(), "no status line without --wait");
        let stop = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            15
        };
        let (outcome, _) = drive(&request(true, None), vec![sample(50)], stop).await;
        assert_eq!(outcome, Outcome::Stopped(15));
    }
}
