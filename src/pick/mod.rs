//! `gpuwatch pick`: which GPUs a new job may take, from the state of one sample — the rules
//! (only GPUs the caller may use, nobody else's memory on them, no warning, idle enough,
//! enough VRAM free), the ranking, and the words for each GPU passed over. Pure: no I/O and
//! no clock; `wait` drives it over samples and `launch` prints.

pub mod visible;
pub mod wait;

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use crate::model::Model;
use crate::model::owners::{is_free, unattributed};
use crate::source::{GpuId, GpuReading, GpuStatus};
use crate::state::State;
use crate::units::Bytes;
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
    /// pinned to make the indices mean the same GPUs.
    Env,
}

/// Who asks: their own processes never disqualify a GPU.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    pub user: Option<&'a str>,
    pub uid: Option<u32>,
}

impl<'a> Caller<'a> {
    pub fn of(state: &'a State) -> Self {
        Caller {
            user: state.config.current_user.as_deref(),
            uid: state.config.current_uid,
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
        }
    }
}

impl Skip {
    /// The reason without its numbers, to group GPUs by: `busy`, `held by alice, bob`.
    fn kind_words(&self) -> String {
        match self {
            Skip::NotVisible | Skip::FreeUnknown | Skip::UtilUnknown => self.to_string(),
            Skip::Lost => "lost".into(),
            Skip::HeldBy(who) => {
                let names: Vec<&str> = who.iter().map(|h| h.name.as_str()).collect();
                format!("held by {}", names.join(", "))
            }
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
            (Skip::HeldBy(a), Skip::HeldBy(b)) => {
                a.iter().map(|h| &h.name).eq(b.iter().map(|h| &h.name))
            }
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// Who besides the caller holds memory on this GPU: the owner of every process on it that
/// is not the caller's, by Unix user, VRAM summed per user. A process whose user cannot be
/// told (another PID namespace, hidden, exited) is someone else's: it holds the memory all
/// the same. The one place this rule lives, so that a rule by job or container (another
/// Slurm job of the same user) can be added here.
pub fn others_holding(model: &Model, gpu: &GpuReading, me: Caller) -> Vec<Holder> {
    let mut out: Vec<Holder> = Vec::new();
    for row in model.procs().all.iter().filter(|r| r.key.gpu == gpu.id) {
        let mine = match (&row.user, me.user, row.uid, me.uid) {
            (Some(user), Some(me), _, _) => user == me,
            (_, _, Some(uid), Some(me)) => uid == me,
            _ => false,
        };
        if mine {
            continue;
        }
        let (name, known_user) = match &row.user {
            Some(u) => (u.clone(), true),
            None => (format!("pid {}", row.key.pid), false),
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
    out.sort_by(|a, b| b.vram.cmp(&a.vram).then_with(|| a.name.cmp(&b.name)));
    out
}

/// Why a GPU does not qualify, or `None` when it does.
fn disqualified(
    state: &State,
    g: &GpuReading,
    c: &Criteria,
    allowed: Option<&HashSet<GpuId>>,
) -> Option<Skip> {
    if allowed.is_some_and(|a| !a.contains(&g.id)) {
        return Some(Skip::NotVisible);
    }
    if g.status == GpuStatus::Lost {
        return Some(Skip::Lost);
    }
    let others = others_holding(&state.model, g, Caller::of(state));
    if !others.is_empty() {
        return Some(Skip::HeldBy(others));
    }
    if let Some(rest) = unattributed(&state.model, g) {
        return Some(Skip::NoProcess(rest));
    }
    if let Some(w) = state.model.warnings().iter().find(|w| w.gpu == g.id) {
        return Some(Skip::Warning(w.message.clone()));
    }
    let Some(free) = free_memory(g) else {
        return Some(Skip::FreeUnknown);
    };
    if let Some(need) = c.min_free
        && free < need
    {
        return Some(Skip::TooLittleFree { free, need });
    }
    match g.util {
        Some(u) if u.0 <= c.max_util => None,
        Some(u) => Some(Skip::Busy(u.0)),
        None => Some(Skip::UtilUnknown),
    }
}

fn free_memory(g: &GpuReading) -> Option<Bytes> {
    Some(g.memory_total?.saturating_sub(g.memory_used?))
}

/// What one state says: the qualifying GPUs, best first, and why each other one was skipped.
#[derive(Debug)]
pub struct Choice<'a> {
    pub ranked: Vec<&'a GpuReading>,
    pub skipped: Vec<(&'a GpuReading, Skip)>,
}

/// Ranks the GPUs that qualify: GPUs nobody uses at all first (no process, no VRAM held —
/// the header's "free"), so a new job does not land beside the caller's own idle notebook
/// when a clean GPU exists; then most free VRAM (to the GiB), least busy, lowest index.
pub fn choose<'a>(state: &'a State, c: &Criteria, allowed: Option<&HashSet<GpuId>>) -> Choice<'a> {
    let mut ranked: Vec<&GpuReading> = Vec::new();
    let mut skipped = Vec::new();
    for g in state.model.gpus() {
        match disqualified(state, g, c, allowed) {
            None => ranked.push(g),
            Some(why) => skipped.push((g, why)),
        }
    }
    ranked.sort_by_key(|g| {
        let clean = is_free(&state.model, g);
        let free_gib = free_memory(g).map_or(0, |b| b.0 / Bytes::GIB);
        (
            !clean,
            std::cmp::Reverse(free_gib),
            g.util.map_or(u32::MAX, |u| u.0),
            g.index,
        )
    });
    Choice { ranked, skipped }
}

impl<'a> Choice<'a> {
    /// The best `count` when that many qualify.
    pub fn picked(&self, c: &Criteria) -> Option<&[&'a GpuReading]> {
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
        let labels: Vec<String> = self.ranked.iter().map(|g| g.label()).collect();
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
        let mut qualifying: Vec<GpuId> = self.ranked.iter().map(|g| g.id.clone()).collect();
        qualifying.sort();
        let skipped = self
            .skipped
            .iter()
            .map(|(g, why)| (g.id.clone(), why.clone()))
            .collect();
        Reasons {
            qualifying,
            skipped,
        }
    }
}

/// Which GPUs qualify and why the others do not, detached from the state it came from.
#[derive(Debug, Clone)]
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

pub fn format(gpus: &[&GpuReading], format: Format) -> String {
    let indices = || {
        gpus.iter()
            .map(|g| g.index.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match format {
        Format::Indices => indices(),
        Format::Uuids => gpus
            .iter()
            .map(|g| g.id.0.clone())
            .collect::<Vec<_>>()
            .join(","),
        Format::Env => format!(
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={}",
            indices()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{GpuId, HostInfo, HostProc, ProcDetails, ProcKind, ProcReading, Sample};
    use crate::state::{Msg, ViewConfig, update};
    use crate::units::Percent;

    fn gpu(index: u32, total_gib: f64, used_gib: f64, util: u32) -> GpuReading {
        let mut g = GpuReading::absent(GpuId(format!("GPU-{index}")), index, "g");
        g.memory_total = Some(Bytes::from_gib(total_gib));
        g.memory_used = Some(Bytes::from_gib(used_gib));
        g.util = Some(Percent(util));
        g
    }

    /// A process on GPU `index` holding `gib`; `user` `None` is one we cannot see.
    fn proc(pid: u32, index: u32, user: Option<(&str, u32)>, gib: f64) -> ProcReading {
        ProcReading {
            pid,
            gpu: GpuId(format!("GPU-{index}")),
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(gib)),
            sm_util: None,
            host: match user {
                Some((user, uid)) => HostProc::Visible(ProcDetails {
                    user: user.into(),
                    uid,
                    command: "python train.py".into(),
                    cpu_percent: None,
                    host_memory: None,
                    started: std::time::SystemTime::UNIX_EPOCH,
                    context: Default::default(),
                }),
                None => HostProc::OtherNamespace,
            },
        }
    }

    const ME: Option<(&str, u32)> = Some(("me", 1000));

    fn state(gpus: Vec<GpuReading>, processes: Vec<ProcReading>) -> State {
        let mut s = State::new(ViewConfig {
            current_user: Some("me".into()),
            current_uid: Some(1000),
            ..ViewConfig::default()
        });
        let sample = Sample {
            time: std::time::SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus,
            processes,
            hosts: Vec::new(),
        };
        update(&mut s, Msg::Sample(Box::new(sample)));
        s
    }

    fn criteria(count: usize, min_free: Option<f64>) -> Criteria {
        Criteria {
            count,
            min_free: min_free.map(Bytes::from_gib),
            max_util: 10,
        }
    }

    fn picked(s: &State, c: &Criteria) -> Result<String, String> {
        let choice = choose(s, c, None);
        match choice.picked(c) {
            Some(g) => Ok(format(g, Format::Indices)),
            None => Err(choice.shortfall(c)),
        }
    }

    #[test]
    fn clean_gpus_first_then_most_free_then_least_busy() {
        // 0: 80 GiB with my own 10 GiB job (not clean), 1: clean 40 GiB, 2: clean 40 GiB but
        // 3 % busy, 3: 90 % busy.
        let s = state(
            vec![
                gpu(0, 80.0, 10.0, 0),
                gpu(1, 40.0, 0.5, 0),
                gpu(2, 40.0, 0.5, 3),
                gpu(3, 80.0, 0.5, 90),
            ],
            vec![proc(10, 0, ME, 10.0)],
        );
        assert_eq!(picked(&s, &criteria(3, None)).unwrap(), "1,2,0");
        assert_eq!(
            picked(&s, &criteria(1, Some(50.0))).unwrap(),
            "0",
            "only GPU 0 has 50 GiB free; my own job does not disqualify it"
        );
        let err = picked(&s, &criteria(4, None)).unwrap_err();
        assert_eq!(
            err,
            "need 4 GPUs with ≤10% util, no warning and nobody else's memory; 3 qualify (1,2,0)"
        );
        let choice = choose(&s, &criteria(4, None), None);
        assert_eq!(choice.explanations(), ["GPU 3 skipped: 90% busy"]);
    }

    #[test]
    fn other_users_unknown_users_and_stale_memory_disqualify() {
        let s = state(
            vec![
                gpu(0, 80.0, 41.2, 0),
                gpu(1, 80.0, 3.0, 0),
                gpu(2, 80.0, 12.9, 0),
                gpu(3, 80.0, 5.0, 0),
                gpu(4, 80.0, 0.0, 0),
            ],
            vec![
                // An idle teammate still holds the memory: 0 % busy is not free.
                proc(20, 0, Some(("alice", 1001)), 40.0),
                proc(21, 0, Some(("alice", 1001)), 1.2),
                proc(22, 1, None, 3.0),
                // 3: mine and bob's.
                proc(23, 3, ME, 2.0),
                proc(24, 3, Some(("bob", 1002)), 3.0),
            ],
        );
        let c = criteria(1, None);
        let choice = choose(&s, &c, None);
        assert_eq!(format(choice.picked(&c).unwrap(), Format::Indices), "4");
        assert_eq!(
            choice.explanations(),
            [
                "GPU 0 skipped: held by alice (41.2 GiB)",
                "GPU 1 skipped: held by pid 22 of an unknown user (3.0 GiB)",
                "GPU 2 skipped: 12.9 GiB held by no process",
                "GPU 3 skipped: held by bob (3.0 GiB)",
            ]
        );
    }

    #[test]
    fn the_caller_is_told_by_name_or_else_by_uid() {
        let s = state(vec![gpu(0, 80.0, 2.0, 0)], vec![proc(1, 0, ME, 2.0)]);
        let g = &s.model.gpus()[0];
        let by_uid = Caller {
            user: None,
            uid: Some(1000),
        };
        assert!(others_holding(&s.model, g, by_uid).is_empty());
        let nobody = Caller::default();
        assert_eq!(others_holding(&s.model, g, nobody)[0].name, "me");
    }

    #[test]
    fn only_the_inherited_gpus_qualify() {
        let s = state(vec![gpu(0, 80.0, 0.0, 0), gpu(1, 80.0, 0.0, 0)], vec![]);
        let allowed: HashSet<GpuId> = [GpuId("GPU-1".into())].into();
        let c = criteria(1, None);
        let choice = choose(&s, &c, Some(&allowed));
        assert_eq!(
            format(choice.picked(&c).unwrap(), Format::Env),
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1"
        );
        assert_eq!(
            choice.explanations(),
            ["GPU 0 skipped: not in CUDA_VISIBLE_DEVICES"]
        );
    }

    #[test]
    fn reasons_compare_without_their_numbers() {
        let busy = |util, alice_gib| {
            state(
                vec![gpu(0, 80.0, 0.0, util), gpu(1, 80.0, alice_gib, 0)],
                vec![proc(1, 1, Some(("alice", 1001)), alice_gib)],
            )
        };
        let c = criteria(1, None);
        let (a, b, freed) = (busy(50, 10.0), busy(70, 12.0), busy(5, 10.0));
        let reasons = |s: &State| choose(s, &c, None).reasons();
        assert!(
            reasons(&a).same(&reasons(&b)),
            "busier and more VRAM: same reasons"
        );
        assert!(!reasons(&a).same(&reasons(&freed)), "GPU 0 now qualifies");
    }
}
