//! `gpuwatch pick`: which GPUs (or, on a GPU in MIG mode, which instances: `slot`) a new
//! job may take, from the state of one sample — the rules (only GPUs the caller may use,
//! nobody else's memory on them, no warning, idle enough, enough VRAM free), the ranking,
//! and the words for each GPU passed over. Pure: no I/O and
//! no clock; `wait` drives it over samples and `launch` prints.

mod env;
pub mod slot;
pub mod visible;
pub mod wait;

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use crate::model::Model;
use crate::model::jobs::{JobKey, short_label};
use crate::model::owners::{is_free, unattributed};
use crate::model::procs::ProcRow;
use crate::reading::{GpuId, GpuReading, GpuStatus};
use crate::state::State;
use crate::units::Bytes;
use slot::Slot;
use visible::Inherited;

/// What `gpuwatch pick` was asked for, resolved by `config`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub criteria: Criteria,
    pub format: Format,
    /// An inherited `CUDA_VISIBLE_DEVICES`: only these GPUs may be picked.
    pub inherited: Option<Inherited>,
    /// Keep sampling until enough GPUs qualify.
    pub wait: bool,
    /// With `wait`: give up after this long.
    pub timeout: Option<Duration>,
    /// Also explain the skipped GPUs when the pick succeeds.
    pub verbose: bool,
    /// Pick even when the kubelet of this Kubernetes node could not be asked.
    pub ignore_kubelet: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Criteria {
    pub count: usize,
    /// Each chosen GPU must have at least this much VRAM free.
    pub min_free: Option<Bytes>,
    /// Each chosen GPU must be at most this busy (%).
    pub max_util: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `2,3`: this host's (NVML's) indices, in PCI bus order.
    Indices,
    /// `GPU-…,GPU-…`
    Uuids,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`, for `export $(…)`. NVML
    /// numbers GPUs in PCI bus order while CUDA defaults to fastest-first, so the order is
    /// pinned to make the indices mean the same GPUs. AMD and Intel GPUs get their own
    /// runtime's variable (`env`).
    Env,
}

/// Who asks: their own processes never disqualify a GPU.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    pub user: Option<&'a str>,
    pub uid: Option<u32>,
    /// The job `pick` runs in, if any: the same user's processes in it are the caller's.
    pub job: Option<&'a JobKey>,
}

impl<'a> Caller<'a> {
    pub fn of(state: &'a State) -> Self {
        Caller {
            user: state.config.current_user.as_deref(),
            uid: state.config.current_uid,
            job: state.config.current_job.as_ref(),
        }
    }
}

/// Someone other than the caller with memory on a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Holder {
    /// The user, or `pid N` when the process's user cannot be told.
    pub name: String,
    pub known_user: bool,
    /// `None` when any of their processes' VRAM is unknown.
    pub vram: Option<Bytes>,
}

/// Why a GPU was passed over; the first rule it fails, in the order checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Skip {
    /// Not in the inherited `CUDA_VISIBLE_DEVICES`.
    NotVisible,
    Lost,
    HeldBy(Vec<Holder>),
    /// VRAM used that no process accounts for (a stale allocation, or a process we cannot see).
    NoProcess(Bytes),
    /// The warning's text.
    Warning(String),
    FreeUnknown,
    TooLittleFree {
        free: Bytes,
        need: Bytes,
    },
    Busy(u32),
    UtilUnknown,
    /// A MIG instance with the caller's own processes on it: an instance is one job's.
    InUse(usize),
    /// MIG is on and the GPU lists no instance: CUDA can run nothing on it.
    MigWithoutInstances,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gib = |b: Bytes| format!("{:.1} GiB", b.as_gib());
        match self {
            Skip::NotVisible => write!(f, "not in {}", visible::VAR),
            Skip::Lost => write!(f, "lost (not responding)"),
            Skip::HeldBy(who) => {
                let who: Vec<String> = who
                    .iter()
                    .map(|h| {
                        let vram = h.vram.map_or_else(|| "VRAM unknown".into(), gib);
                        match h.known_user {
                            true => format!("{} ({vram})", h.name),
                            false => format!("{} of an unknown user ({vram})", h.name),
                        }
                    })
                    .collect();
                write!(f, "held by {}", who.join(", "))
            }
            Skip::NoProcess(b) => write!(f, "{} held by no process", gib(*b)),
            Skip::Warning(w) => write!(f, "warning: {w}"),
            Skip::FreeUnknown => write!(f, "free VRAM unknown"),
            Skip::TooLittleFree { free, need } => {
                write!(f, "{} free, {} needed", gib(*free), gib(*need))
            }
            Skip::Busy(u) => write!(f, "{u}% busy"),
            Skip::UtilUnknown => write!(f, "utilization unknown"),
            Skip::InUse(n) => write!(
                f,
                "MIG instance in use by {n} of your own process{}",
                if *n == 1 { "" } else { "es" }
            ),
            Skip::MigWithoutInstances => write!(f, "MIG on with no instance to run on"),
        }
    }
}

impl Skip {
    /// The reason without its numbers, to group GPUs by: `busy`, `held by alice, bob`.
    fn kind_words(&self) -> String {
        match self {
            Skip::NotVisible
            | Skip::FreeUnknown
            | Skip::UtilUnknown
            | Skip::MigWithoutInstances => self.to_string(),
            Skip::InUse(_) => "in use by your own processes".into(),
            Skip::Lost => "lost".into(),
            Skip::HeldBy(who) => format!("held by {}", names(who).join(", ")),
            Skip::NoProcess(_) => "VRAM held by no process".into(),
            Skip::Warning(_) => "warning".into(),
            Skip::TooLittleFree { .. } => "too little VRAM free".into(),
            Skip::Busy(_) => "busy".into(),
        }
    }

    /// The same reason, numbers aside (a job's VRAM or a GPU's utilization moves every
    /// sample; the waiting status line should not).
    fn same_kind(&self, other: &Skip) -> bool {
        match (self, other) {
            (Skip::HeldBy(a), Skip::HeldBy(b)) => names(a) == names(b),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// The holders' names in name order: who holds most may change from sample to sample.
fn names(who: &[Holder]) -> Vec<&str> {
    let mut names: Vec<&str> = who.iter().map(|h| h.name.as_str()).collect();
    names.sort_unstable();
    names
}

/// Who besides the caller holds memory on this GPU: the owner of every process on it that
/// is not the caller's, VRAM summed per owner. A process is the caller's when it is the
/// same Unix user's and not in another job: the same user's other Slurm job, container or
/// pod counts as someone else (`slurm 48200 (alice)`), since piling onto it slows that job
/// just the same. A process whose user cannot be told (another PID namespace, hidden,
/// exited) is someone else's: it holds the memory all the same. The one place this rule
/// lives.
pub fn others_holding(model: &Model, gpu: &GpuReading, me: Caller) -> Vec<Holder> {
    others_on(model, &Slot::Gpu(gpu), me)
}

/// The rows on a slot: the GPU's, or those on the instance.
fn rows_on<'m>(model: &'m Model, slot: &Slot) -> impl Iterator<Item = &'m ProcRow> {
    let (gpu, instance) = match slot {
        Slot::Gpu(g) => (g.id.clone(), None),
        Slot::Instance(g, m) => (g.id.clone(), Some(m.id.clone())),
    };
    model.procs().all.iter().filter(move |r| {
        r.key.gpu == gpu
            && instance
                .as_ref()
                .is_none_or(|m| r.instance.as_ref().is_some_and(|i| i.id == *m))
    })
}

/// `others_holding` for a GPU or a MIG instance.
fn others_on(model: &Model, slot: &Slot, me: Caller) -> Vec<Holder> {
    let gpu = slot.gpu();
    let mut out: Vec<Holder> = Vec::new();
    for row in rows_on(model, slot) {
        let same_user = match (&row.user, me.user, row.uid, me.uid) {
            (Some(user), Some(me), _, _) => **user == *me,
            (_, _, Some(uid), Some(me)) => uid == me,
            _ => false,
        };
        let workload = row.context.workload.as_deref();
        let its_job = workload.and_then(JobKey::of);
        let other_job = its_job.is_some() && its_job.as_ref() != me.job;
        if same_user && !other_job {
            continue;
        }
        let (name, known_user) = match (&row.user, workload) {
            (Some(u), Some(w)) if same_user => match short_label(w) {
                Some(job) => (format!("{job} ({u})"), true),
                None => (String::from(&**u), true),
            },
            (Some(u), _) => (String::from(&**u), true),
            (None, _) => (format!("pid {}", row.key.pid), false),
        };
        match out.iter_mut().find(|h| h.name == name) {
            Some(h) => h.vram = h.vram.zip(row.vram).map(|(a, b)| a + b),
            None => out.push(Holder {
                name,
                known_user,
                vram: row.vram,
            }),
        }
    }
    // Pods the kubelet allocated the GPU to, whose processes we cannot see.
    for pod in model
        .holders(&gpu.id)
        .map_or(&[][..], |h| h.pods.as_slice())
    {
        out.push(Holder {
            name: pod.clone(),
            known_user: true,
            vram: None,
        });
    }
    out.sort_by(|a, b| b.vram.cmp(&a.vram).then_with(|| a.name.cmp(&b.name)));
    out
}

/// Why a GPU (or MIG instance) does not qualify, or `None` when it does.
fn disqualified(
    state: &State,
    slot: &Slot,
    c: &Criteria,
    allowed: Option<&HashSet<GpuId>>,
) -> Option<Skip> {
    let g = slot.gpu();
    // An inherited list naming a MIG GPU whole lets its instances be picked.
    if allowed.is_some_and(|a| !a.contains(slot.id()) && !a.contains(&g.id)) {
        return Some(Skip::NotVisible);
    }
    if g.status == GpuStatus::Lost {
        return Some(Skip::Lost);
    }
    if matches!(slot, Slot::Gpu(_)) && g.mig_enabled == Some(true) {
        return Some(Skip::MigWithoutInstances);
    }
    let others = others_on(&state.model, slot, Caller::of(state));
    if !others.is_empty() {
        return Some(Skip::HeldBy(others));
    }
    let stale = match slot {
        Slot::Gpu(g) => unattributed(&state.model, g),
        Slot::Instance(_, m) => slot::instance_unattributed(&state.model, m),
    };
    if let Some(rest) = stale {
        return Some(Skip::NoProcess(rest));
    }
    if let Slot::Instance(..) = slot {
        let mine = rows_on(&state.model, slot).count();
        if mine > 0 {
            return Some(Skip::InUse(mine));
        }
    }
    if let Some(w) = state.model.warnings().iter().find(|w| slot.hit_by(w)) {
        return Some(Skip::Warning(crate::present::warnings::warning_line(w)));
    }
    let Some(free) = slot.free_memory() else {
        return Some(Skip::FreeUnknown);
    };
    if let Some(need) = c.min_free
        && free < need
    {
        return Some(Skip::TooLittleFree { free, need });
    }
    if let Slot::Instance(_, m) = slot {
        // Only GPM (Hopper+) gives an instance's activity; without it an instance with no
        // process on it runs nothing (its GPU's util, if known, is the other instances').
        return match m.util {
            Some(u) if u.0 > c.max_util => Some(Skip::Busy(u.0)),
            _ => None,
        };
    }
    match g.util {
        Some(u) if u.0 <= c.max_util => None,
        Some(u) => Some(Skip::Busy(u.0)),
        None => Some(Skip::UtilUnknown),
    }
}

/// What one state says: the qualifying GPUs (or instances), best first, and why each
/// other one was skipped.
#[derive(Debug)]
pub struct Choice<'a> {
    pub ranked: Vec<Slot<'a>>,
    pub skipped: Vec<(Slot<'a>, Skip)>,
}

/// Ranks the GPUs that qualify: GPUs nobody uses at all first (no process, no VRAM held —
/// the header's "free"), so a new job does not land beside the caller's own idle notebook
/// when a clean GPU exists; then most free VRAM (to the GiB), least busy, lowest index.
/// A MIG instance that qualifies has no process on it: it counts as clean.
pub fn choose<'a>(state: &'a State, c: &Criteria, allowed: Option<&HashSet<GpuId>>) -> Choice<'a> {
    let mut ranked: Vec<Slot> = Vec::new();
    let mut skipped = Vec::new();
    for slot in slot::candidates(&state.model) {
        match disqualified(state, &slot, c, allowed) {
            None => ranked.push(slot),
            Some(why) => skipped.push((slot, why)),
        }
    }
    ranked.sort_by_key(|slot| {
        let clean = match slot {
            Slot::Gpu(g) => is_free(&state.model, g),
            Slot::Instance(..) => true,
        };
        let free_gib = slot.free_memory().map_or(0, |b| b.0 / Bytes::GIB);
        (
            !clean,
            std::cmp::Reverse(free_gib),
            slot.gpu().util.map_or(u32::MAX, |u| u.0),
            slot.gpu().index,
            slot.label(),
        )
    });
    Choice { ranked, skipped }
}

impl<'a> Choice<'a> {
    /// The best `count` when that many qualify.
    pub fn picked(&self, c: &Criteria) -> Option<&[Slot<'a>]> {
        (self.ranked.len() >= c.count).then(|| &self.ranked[..c.count])
    }

    /// `need 2 GPUs with ≤10% util, no warning and nobody else's memory; 1 qualifies (7)`.
    pub fn shortfall(&self, c: &Criteria) -> String {
        let mut need = format!(
            "{} GPU{} with ",
            c.count,
            if c.count == 1 { "" } else { "s" }
        );
        if let Some(min) = c.min_free {
            need += &format!("≥{:.1} GiB free, ", min.as_gib());
        }
        need += &format!("≤{}% util, no warning and nobody else's memory", c.max_util);
        let n = self.ranked.len();
        let labels: Vec<String> = self.ranked.iter().map(Slot::label).collect();
        format!(
            "need {need}; {n} qualif{} ({})",
            if n == 1 { "ies" } else { "y" },
            if labels.is_empty() {
                "none".into()
            } else {
                labels.join(",")
            }
        )
    }

    /// `GPU 3 skipped: held by alice (41.2 GiB)`, one per GPU passed over.
    pub fn explanations(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(g, why)| format!("GPU {} skipped: {why}", g.label()))
            .collect()
    }

    /// `0,1 held by alice; 5 VRAM held by no process`: the skipped GPUs grouped by reason,
    /// for a status line that stays one line on a big host.
    pub fn grouped(&self) -> String {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (g, why) in &self.skipped {
            let words = why.kind_words();
            match groups.iter_mut().find(|(w, _)| *w == words) {
                Some((_, gpus)) => gpus.push(g.label()),
                None => groups.push((words, vec![g.label()])),
            }
        }
        let parts: Vec<String> = groups
            .into_iter()
            .map(|(words, gpus)| format!("{} {words}", gpus.join(",")))
            .collect();
        parts.join("; ")
    }

    /// What this choice comes to, owned, to compare with the next sample's.
    pub fn reasons(&self) -> Reasons {
        let mut qualifying: Vec<GpuId> = self.ranked.iter().map(|g| g.id().clone()).collect();
        qualifying.sort();
        let skipped = self
            .skipped
            .iter()
            .map(|(g, why)| (g.id().clone(), why.clone()))
            .collect();
        Reasons {
            qualifying,
            skipped,
        }
    }
}

/// Which GPUs qualify and why the others do not, detached from the state it came from.
/// The default (none qualify, none skipped) stands for "nothing could be judged".
#[derive(Debug, Clone, Default)]
pub struct Reasons {
    qualifying: Vec<GpuId>,
    skipped: Vec<(GpuId, Skip)>,
}

impl Reasons {
    /// The same GPUs qualify and the others are skipped for the same kinds of reason.
    pub fn same(&self, other: &Reasons) -> bool {
        self.qualifying == other.qualifying
            && self.skipped.len() == other.skipped.len()
            && self
                .skipped
                .iter()
                .zip(&other.skipped)
                .all(|((a, x), (b, y))| a == b && x.same_kind(y))
    }
}

/// Why nothing may be picked from this sample: on a Kubernetes node (the kubelet's socket
/// is there, so a status was kept) whose kubelet could not be asked, a GPU allocated to a
/// pod whose processes are invisible here looks free, and a non-root `pick` once handed
/// such a GPU out (issue 22). `None` when the kubelet answered, off Kubernetes, or when the
/// caller said `--ignore-kubelet`.
pub fn kubelet_unasked(model: &Model, req: &Request) -> Option<String> {
    if req.ignore_kubelet {
        return None;
    }
    let failed = model
        .host()
        .lookups
        .iter()
        .filter(|l| l.kind == crate::reading::lookup::LookupKind::Kubelet)
        .find_map(|l| l.error())?;
    Some(format!(
        "not picking on a Kubernetes node whose kubelet could not be asked which pods hold \
         GPUs (a GPU allocated to a pod would look free): {failed}; --ignore-kubelet picks anyway"
    ))
}

/// The line `pick` prints for the chosen slots. Indices name GPUs only: a MIG instance is
/// written as its `MIG-` UUID in every format, the one way CUDA names an instance. `env`
/// sets the variable of the GPUs' vendor (`env`), and fails for a pick across vendors.
pub fn format(slots: &[Slot], format: Format) -> Result<String, String> {
    Ok(match format {
        Format::Indices => slots.iter().map(Slot::entry).collect::<Vec<_>>().join(","),
        Format::Uuids => slots
            .iter()
            .map(|s| s.id().0.clone())
            .collect::<Vec<_>>()
            .join(","),
        Format::Env => env::line(slots)?,
    })
}

#[cfg(test)]
mod tests;
