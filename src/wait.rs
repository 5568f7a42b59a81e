//! `gpuwatch wait --released PID` / `--gpu N --free`: the seed's "confirm VRAM is released
//! before handing over", as a command a script can run. Each sample goes through
//! `state::update` (so holders are the monitor's); the wait ends when the process holds
//! nothing on any GPU, or the GPU has no process and no memory held by no process. The
//! process is the one that had the PID when the wait began (PID + start time, as signals
//! do): a later process given the same number is not it. A PID that names no process and
//! holds nothing is refused (a typo must not let a script go ahead on a busy GPU). Prints
//! nothing itself: the caller says the outcome; tests drive it with a channel and paused time.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;

use crate::model::Model;
use crate::model::owners::unattributed;
use crate::model::procs::ProcRow;
use crate::procinfo::Presence;
use crate::reading::Sample;
use crate::reading::device_list::GpuSelector;
use crate::sampler::{Decide, SamplerEvent, until};
use crate::state::{Msg, State, update};
use crate::text_safe::escape;
use crate::ui::format::bytes_short;

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// This host PID holds no VRAM (no context) on any GPU.
    Released(u32),
    /// Nothing holds memory on this GPU.
    Free(GpuSelector),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub target: Target,
    pub timeout: Option<Duration>,
}

#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Released or free (exit 0).
    Done(String),
    /// Gave up after the timeout: what still holds memory (exit 1).
    TimedOut(String),
    /// The GPU named is not here, or the sampler stopped (exit 1).
    Failed(String),
    /// The PID names no process and holds no GPU memory: likely a typo (exit 2).
    NoSuchProcess(String),
    /// A signal ended the wait (exit 128 + n).
    Stopped(u8),
}

/// Waits over the samples from `rx`; `stop` resolves to a signal number. `found`: what
/// /proc said of a `--released` PID when the wait began (ignored for `--free`).
pub async fn run(
    rx: &mut Receiver<SamplerEvent>,
    state: State,
    req: &Request,
    found: Presence,
    stop: impl Future<Output = u8>,
) -> Outcome {
    let mut waiter = Waiter {
        state,
        req,
        found,
        holding: String::from("no sample was read"),
    };
    until(rx, &mut waiter, req.timeout, stop).await
}

/// What the wait remembers between samples.
struct Waiter<'r> {
    state: State,
    req: &'r Request,
    found: Presence,
    /// What still held memory at the last sample, for giving up.
    holding: String,
}

impl Decide for Waiter<'_> {
    type Outcome = Outcome;

    fn on_sample(&mut self, sample: Sample) -> Option<Outcome> {
        update(&mut self.state, Msg::Sample(Box::new(sample)));
        let model = &self.state.model;
        if let Some(typo) = no_such_process(model, &self.req.target, self.found) {
            return Some(typo);
        }
        match still_held(model, &self.req.target, self.found) {
            Ok(None) => Some(Outcome::Done(done_line(model, &self.req.target))),
            Ok(Some(what)) => {
                self.holding = what;
                None
            }
            Err(why) => Some(Outcome::Failed(why)),
        }
    }

    fn on_failure(&mut self, why: String) -> Option<Outcome> {
        self.holding = why;
        None
    }

    fn on_notice(&mut self, text: &str) {
        eprintln!("gpuwatch: {}", escape(text));
    }

    fn gave_up(&mut self) -> Outcome {
        let after = humantime::format_duration(self.req.timeout.unwrap_or_default());
        Outcome::TimedOut(format!("gave up after {after}: {}", self.holding))
    }

    fn stopped(&mut self, signal: u8) -> Outcome {
        Outcome::Stopped(signal)
    }

    fn closed(&mut self) -> Outcome {
        Outcome::Failed("the sampler stopped".into())
    }
}

/// A `--released` PID that named no process when the wait began and holds nothing on any GPU.
fn no_such_process(model: &Model, target: &Target, found: Presence) -> Option<Outcome> {
    let Target::Released(pid) = target else {
        return None;
    };
    let listed = model.procs().all.iter().any(|r| r.key.pid == *pid);
    (found == Presence::Absent && !listed).then(|| {
        Outcome::NoSuchProcess(format!(
            "no such process: PID {pid} is not running and holds no GPU memory"
        ))
    })
}

fn done_line(model: &Model, target: &Target) -> String {
    match target {
        Target::Released(pid) if model.procs().all.iter().any(|r| r.key.pid == *pid) => {
            format!(
                "PID {pid} has exited and holds no GPU memory (its number is another process's now)"
            )
        }
        Target::Released(pid) => format!("PID {pid} holds no GPU memory"),
        Target::Free(gpu) => format!("GPU {} is free", gpu_name(gpu)),
    }
}

/// Whether a row is the process the wait is for: the same start time as when the wait
/// began. A row whose start time is unknown counts (it may be ours: never say released
/// too early).
fn is_waited_for(row: &ProcRow, pid: u32, found: Presence) -> bool {
    row.key.pid == pid
        && match (found, row.key.started) {
            (Presence::Running { started }, Some(row_started)) => row_started == started,
            _ => true,
        }
}

fn gpu_name(gpu: &GpuSelector) -> String {
    match gpu {
        GpuSelector::Index(i) => i.to_string(),
        GpuSelector::Uuid(u) => u.clone(),
    }
}

/// What still holds memory, `None` when nothing does; an error when the GPU is not here.
pub fn still_held(
    model: &Model,
    target: &Target,
    found: Presence,
) -> Result<Option<String>, String> {
    let rows = &model.procs().all;
    match target {
        Target::Released(pid) => {
            let held: Vec<String> = rows
                .iter()
                .filter(|r| is_waited_for(r, *pid, found))
                .map(|r| format!("{} on GPU {}", vram(r.vram), r.gpu_index))
                .collect();
            Ok((!held.is_empty()).then(|| format!("PID {pid} still holds {}", held.join(", "))))
        }
        Target::Free(selector) => {
            let Some(gpu) = model.gpus().iter().find(|g| selector.matches(g)) else {
                return Err(format!("no GPU {} here", gpu_name(selector)));
            };
            let mut held: Vec<String> = rows
                .iter()
                .filter(|r| r.key.gpu == gpu.id)
                .map(|r| {
                    let who = r.user.clone().unwrap_or_else(|| "unknown user".into());
                    format!("PID {} ({who}) {}", r.key.pid, vram(r.vram))
                })
                .collect();
            if let Some(rest) = unattributed(model, gpu) {
                held.push(format!("{} held by no process", bytes_short(rest)));
            }
            Ok((!held.is_empty())
                .then(|| format!("GPU {} still held: {}", gpu.index, held.join(", "))))
        }
    }
}

fn vram(b: Option<crate::units::Bytes>) -> String {
    b.map_or_else(|| "an unknown amount".into(), bytes_short)
}
