//! Host-side facts about GPU processes, read from /proc: user, command line, CPU% (delta
//! between two samples), resident memory and start time. Owns the per-process and user-name
//! caches. It reads only the PIDs it is asked about — never scans all of /proc — and the
//! /proc root is injected so tests use a fixture tree. In a child PID namespace it reads
//! nothing for NVML's (host) PIDs at all: see `pidns`. Workload names (container, job)
//! come through a `names::NameResolver`, which answers from its cache and looks misses up
//! on its own thread: this code never waits on a socket or a command.

mod ancestors;
pub mod cgroup;
mod files;
pub mod host;
pub mod kubelet;
pub mod names;
mod pidns;
pub mod pods;
mod stat_read;

pub use names::NameResolver;
pub use pidns::PidNamespace;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::fast_hash::{FastMap, FastSet};
use crate::reading::workload::{ProcContext, Workload};
use crate::reading::{HostProc, ProcDetails};
use crate::units::Bytes;
pub use files::Uids;
use files::{Stat, join_cmdline, parse_stat, parse_uids, read_boot_time, read_env};

/// Who a PID is right now, for the last check before a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub started: SystemTime,
    pub uid: u32,
    /// The number to signal: NVML's PID on the host, the process's PID in our namespace
    /// when gpuwatch runs in a child one reading the host's /proc.
    pub pid_here: u32,
}

/// What stays true for one process (a PID plus its start time): read once, then reused.
#[derive(Debug, Clone)]
struct Known {
    /// `starttime` from /proc/PID/stat, in clock ticks after boot: with the PID, the
    /// process identity (a reused PID has a different start time).
    start_ticks: u64,
    /// The effective uid: the owner shown and checked.
    uid: u32,
    /// Shown beside the owner when it differs (a setuid program).
    real_uid: u32,
    command: Arc<str>,
    /// Its cgroup's workload and its GPU-related environment: fixed for a process's life
    /// (a process cannot move itself out of its container; `environ` is what it was
    /// started with), so read once.
    context: ProcContext,
    /// The workload is a Slurm job only the process's environment names (no cgroup does):
    /// anyone can set `SLURM_JOB_ID`, so it holds only while the job's user is the
    /// process's own (never blame another user's job).
    claimed: bool,
    /// The resolver has said all it will about the workload's names: stop asking.
    named: bool,
    /// utime + stime at the previous sample, and when that sample was taken.
    cpu_ticks: u64,
    seen_at: Instant,
    /// /proc/PID/stat kept open and re-read each sample: an open+close per process per
    /// second was the sampler's largest cost. Reading it fails once the process is gone,
    /// so a reused PID can never be read through an old handle.
    stat_file: Option<Arc<File>>,
}

/// How long the first sample waits for container and job names (each lookup is bounded to
/// 200 ms; several run one after another on the resolver's worker).
const FIRST_SAMPLE_NAME_WAIT: Duration = Duration::from_millis(300);

/// /proc/PID/stat handles kept open between samples: a quarter of the open-files limit
/// (raised to the hard one at start, `fd_limit`), never fewer than 256 nor more than 4,096,
/// so thousands of GPU processes cannot exhaust it. It was 256 whatever the limit, and
/// checked against every process known (see `lookup`): at 1,000 GPU processes every
/// /proc/PID/stat was opened, read and closed each sample, 80 % of gpuwatch's CPU at 64 GPUs
/// (`GPUS=64 PROCS=1000 scripts/overhead.sh`).
fn max_kept_stat_files() -> usize {
    (crate::fd_limit::soft() / 4).clamp(256, 4096)
}

/// What `ProcInfo::presence` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A process has that PID; it started then.
    Running { started: SystemTime },
    /// No process has that PID.
    Absent,
    /// This PID namespace cannot see NVML's PIDs (a container with its own /proc).
    Unknowable,
}

/// Reads /proc (or a fixture tree shaped like it) for the PIDs NVML reports.
#[derive(Debug)]
pub struct ProcInfo {
    root: PathBuf,
    ticks_per_second: u64,
    page_size: u64,
    /// When the host booted (`btime`), read on first use; start times are relative to it.
    boot_time: Option<SystemTime>,
    /// Keyed by numbers the kernel hands out, looked up for every process every sample.
    users: FastMap<u32, Arc<str>>,
    known: FastMap<u32, Known>,
    namespace: PidNamespace,
    names: NameResolver,
    /// Whether a sample has been taken: the first one waits briefly for names.
    sampled: bool,
    /// How many /proc/PID/stat handles stay open between samples (`max_kept_stat_files`),
    /// and how many are (counted at each sample; an upper bound in between).
    max_kept_stat_files: usize,
    kept_stat_files: usize,
    /// The path and text buffers `lookup` reads each process's stat file with.
    scratch: stat_read::Scratch,
    /// The ancestors read this sample, shared by the processes that have them.
    ancestors: ancestors::Ancestors,
}

impl ProcInfo {
    /// This host's /proc, with the kernel's clock tick rate and page size.
    pub fn system() -> Self {
        Self::system_at("/proc")
    }

    /// A /proc at `root` (`--proc-root`, e.g. a captured tree) read with this host's clock
    /// tick rate and page size, naming workloads through the system's engines.
    pub fn system_at(root: impl Into<PathBuf>) -> Self {
        // SAFETY: sysconf only reads configuration values.
        let (tck, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        // sysconf answers -1 when it does not know; Linux's usual values are a sane fallback.
        let tck = u64::try_from(tck).ok().filter(|&t| t > 0).unwrap_or(100);
        let page = u64::try_from(page).ok().filter(|&p| p > 0).unwrap_or(4096);
        Self::new(root, tck, page).with_names(NameResolver::system())
    }

    /// The PIDs asked about were found in this very /proc (DRM fdinfo), not reported by a
    /// driver that speaks in host PIDs (NVML): they name our processes in any namespace.
    pub fn with_local_pids(mut self) -> Self {
        self.namespace = PidNamespace::Host;
        self
    }

    /// A /proc tree at `root`, with explicit units so fixtures do not depend on the host.
    pub fn new(root: impl Into<PathBuf>, ticks_per_second: u64, page_size: u64) -> Self {
        let root = root.into();
        ProcInfo {
            namespace: PidNamespace::detect(&root),
            scratch: stat_read::Scratch::for_root(&root),
            root,
            ticks_per_second: ticks_per_second.max(1),
            page_size,
            boot_time: None,
            users: FastMap::default(),
            known: FastMap::default(),
            // Fixtures never ask a real engine; `system` and tests opt in.
            names: NameResolver::disabled(),
            sampled: false,
            max_kept_stat_files: max_kept_stat_files(),
            kept_stat_files: 0,
            ancestors: ancestors::Ancestors::default(),
        }
    }

    /// Names workloads through `names` from now on.
    pub fn with_names(mut self, names: NameResolver) -> Self {
        self.names = names;
        self
    }

    /// The resolver, e.g. to `settle` it before a one-shot print.
    pub fn names(&self) -> &NameResolver {
        &self.names
    }

    /// The PID namespace this /proc was found to belong to.
    pub fn namespace(&self) -> PidNamespace {
        self.namespace
    }

    /// Looks up every PID once (a process on two GPUs is listed twice by NVML but its CPU
    /// delta must be taken once per sample), then forgets PIDs not asked about, so the
    /// caches hold GPU processes only.
    pub fn sample(
        &mut self,
        pids: impl IntoIterator<Item = u32>,
        now: Instant,
    ) -> FastMap<u32, HostProc> {
        let wanted: FastSet<u32> = pids.into_iter().collect();
        self.kept_stat_files = self
            .known
            .values()
            .filter(|k| k.stat_file.is_some())
            .count();
        let mut out: FastMap<u32, HostProc> = wanted
            .iter()
            .map(|&pid| (pid, self.lookup(pid, now)))
            .collect();
        // The first sample is often the only one (`--once`, `pick`): give the engine and
        // Slurm one short wait to name what it found, then read the names from the cache.
        // Later samples never wait; names that arrive late show on the next one.
        if !std::mem::replace(&mut self.sampled, true)
            && self.names.is_enabled()
            && self.names.settle(FIRST_SAMPLE_NAME_WAIT)
        {
            for (&pid, host) in out.iter_mut() {
                if matches!(host, HostProc::Visible(_)) {
                    *host = self.lookup(pid, now);
                }
            }
        }
        self.known.retain(|pid, _| wanted.contains(pid));
        out
    }

    /// How many processes and user names are cached: bounded by the GPU processes of the
    /// latest sample and the distinct owners seen, never by uptime or PIDs ever seen. For
    /// the long-run test that checks exactly that.
    #[doc(hidden)]
    pub fn cache_sizes(&self) -> (usize, usize) {
        (self.known.len(), self.users.len())
    }

    /// One process's host facts at `now` (the caller's clock, so tests need no sleeping).
    pub fn lookup(&mut self, pid: u32, now: Instant) -> HostProc {
        if self.namespace == PidNamespace::Child {
            // NVML's PID is a host PID: the local process with that number, if any, is
            // somebody else. Never read it, so it can never be shown or signalled.
            return HostProc::OtherNamespace;
        }
        // From here on this /proc is the host's (or we are on the host): /proc/PID is
        // the process NVML means.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.set_dir(&self.root, pid);
        let found = self.lookup_in(pid, now, &mut scratch);
        self.scratch = scratch;
        found
    }

    /// `lookup` of the process at `scratch.dir`, reading with `scratch`'s buffers.
    fn lookup_in(&mut self, pid: u32, now: Instant, scratch: &mut stat_read::Scratch) -> HostProc {
        // Taken out and put back once: one hash each way, and the cached facts (command,
        // context) move instead of being cloned for every process every sample. Every
        // return below without the put-back is one where the old entry must go anyway.
        let previous = self.known.remove(&pid);
        let kept_file = previous.as_ref().and_then(|k| k.stat_file.as_ref());
        let Ok(stat_file) = scratch.read_stat(kept_file) else {
            return self.unreadable(pid, &scratch.dir);
        };
        let dir = &scratch.dir;
        let Ok(text) = std::str::from_utf8(&scratch.text) else {
            return self.unreadable(pid, dir);
        };
        let Some(stat) = parse_stat(text) else {
            // The file is there but not in the kernel's format: we cannot tell anything.
            return HostProc::Hidden;
        };
        // A process that has a kept handle keeps one; a new one only while there is room.
        // (The bound was checked against every process known, kept handle or not: past it,
        // the second sample dropped every handle and each was opened again every second.)
        let had_handle = kept_file.is_some();
        let keep_handle = had_handle || self.kept_stat_files < self.max_kept_stat_files;
        if keep_handle && !had_handle {
            self.kept_stat_files += 1;
        }
        let same = previous.filter(|k| k.start_ticks == stat.start_ticks);
        let cpu_percent = same
            .as_ref()
            .and_then(|prev| self.cpu_percent(prev, &stat, now));
        let mut known = match same {
            Some(k) => k,
            // First sighting, or the PID was reused by a new process: read the static parts.
            None if self.namespace.pid_here(&self.root, pid).is_none() => {
                // A host process outside our PID namespace (seen through the host's /proc):
                // it cannot be reached from here, so it is shown as not visible, as in a
                // namespace with its own /proc, and never signalled.
                return HostProc::OtherNamespace;
            }
            None => match self.read_static(dir, &stat, now) {
                Ok(k) => k,
                Err(_) => return self.unreadable(pid, dir),
            },
        };
        if !known.named {
            self.fill_names(&mut known);
        }
        let details = ProcDetails {
            user: self.owner_name(known.uid, known.real_uid),
            uid: known.uid,
            command: known.command.clone(),
            cpu_percent,
            host_memory: Some(Bytes(stat.rss_pages.saturating_mul(self.page_size))),
            started: self.started(stat.start_ticks),
            context: known.context.clone(),
        };
        known.cpu_ticks = stat.cpu_ticks;
        known.seen_at = now;
        // Bounded so thousands of GPU processes cannot exhaust the fd limit.
        known.stat_file = keep_handle.then_some(stat_file);
        self.known.insert(pid, known);
        HostProc::Visible(details)
    }

    /// The workload with the names its resolver knows now (a cache read; a miss is looked
    /// up in the background and shows on a later sample).
    fn fill_names(&mut self, known: &mut Known) {
        let Some(workload) = known.context.workload.as_deref() else {
            known.named = true;
            return;
        };
        let filled = self.names.fill(workload, known.context.env.as_deref());
        if known.claimed && !self.claim_holds(known.uid, &filled.workload) {
            known.context.workload = None;
            known.named = true;
            return;
        }
        if filled.workload != *workload {
            known.context.workload = Some(Arc::new(filled.workload));
        }
        known.named = filled.complete;
    }

    /// Whether a job claimed by a process's environment is the process owner's own: its
    /// user (scontrol's, else the environment's) is unknown or the owner's name.
    fn claim_holds(&mut self, uid: u32, workload: &Workload) -> bool {
        match workload {
            Workload::Slurm { names, .. } => match names.user.as_deref() {
                Some(user) => *user == *self.user_name(uid),
                None => true,
            },
            _ => true,
        }
    }

    /// The process's identity right now — start time, owner and the PID it has in our
    /// namespace — read fresh from /proc, bypassing the caches: used to re-check a process
    /// just before signalling it. `None` when it has exited or cannot be reached from this
    /// PID namespace. The start time is read before and after the rest, so all of it is
    /// known to describe one process even if the PID is reused meanwhile.
    pub fn identity(&mut self, pid: u32) -> Option<Identity> {
        if self.namespace == PidNamespace::Child {
            return None;
        }
        let dir = self.root.join(pid.to_string());
        let start =
            || Some(parse_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)?.start_ticks);
        let before = start()?;
        let uids = parse_uids(&std::fs::read_to_string(dir.join("status")).ok()?)?;
        let pid_here = self.namespace.pid_here(&self.root, pid)?;
        if start()? != before {
            return None;
        }
        Some(Identity {
            started: self.started(before),
            uid: uids.effective,
            pid_here,
        })
    }

    /// Whether `pid` (NVML's host PID) names a running process now, and since when, read
    /// fresh: `gpuwatch wait --released` tells a typo from a finished job, and the job from
    /// a later process that gets its number.
    pub fn presence(&mut self, pid: u32) -> Presence {
        if self.namespace == PidNamespace::Child {
            return Presence::Unknowable;
        }
        let stat = std::fs::read_to_string(self.root.join(pid.to_string()).join("stat"));
        match stat.ok().as_deref().and_then(parse_stat) {
            Some(stat) => Presence::Running {
                started: self.started(stat.start_ticks),
            },
            None => Presence::Absent,
        }
    }

    /// All four user ids of `pid` right now, read fresh (for the last check before a
    /// signal: root's if any is 0).
    pub fn uids(&self, pid: u32) -> Option<Uids> {
        if self.namespace == PidNamespace::Child {
            return None;
        }
        let status = std::fs::read_to_string(self.root.join(pid.to_string()).join("status"));
        parse_uids(&status.ok()?)
    }

    /// Classifies a PID whose files cannot be read (in the host namespace: a child one
    /// never gets here). A directory we cannot read: hidden from us (hidepid). No
    /// directory: the process has exited and NVML, whose lists lag, still reports it — for
    /// as long as it does, not just for one sample; on the host every PID NVML reports is
    /// in our /proc while it lives.
    fn unreadable(&mut self, pid: u32, dir: &Path) -> HostProc {
        self.known.remove(&pid);
        match std::fs::symlink_metadata(dir) {
            Ok(_) => HostProc::Hidden,
            Err(_) => HostProc::Exited,
        }
    }

    /// CPU use since `prev`, the previous sample of the same process (the caller checked the
    /// start time); `None` when no time has passed.
    fn cpu_percent(&self, prev: &Known, stat: &Stat, now: Instant) -> Option<f32> {
        let elapsed = now.checked_duration_since(prev.seen_at)?;
        if elapsed.is_zero() {
            return None;
        }
        let ticks = stat.cpu_ticks.saturating_sub(prev.cpu_ticks) as f64;
        let busy = ticks / self.ticks_per_second as f64;
        Some((busy / elapsed.as_secs_f64() * 100.0) as f32)
    }

    fn read_static(&mut self, dir: &Path, stat: &Stat, now: Instant) -> io::Result<Known> {
        let status = std::fs::read_to_string(dir.join("status"))?;
        let uids = parse_uids(&status)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line in status"))?;
        // A kernel thread or a zombie has an empty command line; show its name instead,
        // in brackets as ps does.
        let command = std::fs::read(dir.join("cmdline"))
            .ok()
            .map(|raw| join_cmdline(&raw))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| format!("[{}]", stat.comm))
            .into();
        let env = read_env(dir);
        let from_cgroup = std::fs::read_to_string(dir.join("cgroup"))
            .ok()
            .and_then(|text| cgroup::workload(&text));
        let (workload, claimed) = workload(from_cgroup, env.as_ref());
        let context = ProcContext {
            workload: workload.map(Arc::new),
            env: env.map(Arc::new),
            parents: Some(Arc::new(self.ancestors.chain(&self.root, stat.ppid, now))),
        };
        Ok(Known {
            start_ticks: stat.start_ticks,
            uid: uids.effective,
            real_uid: uids.real,
            command,
            context,
            claimed,
            named: false,
            cpu_ticks: stat.cpu_ticks,
            seen_at: now,
            stat_file: None,
        })
    }

    /// The effective user's name, with the real one beside it when they differ (as a
    /// setuid program runs): `root (real nobody)`.
    fn owner_name(&mut self, effective: u32, real: u32) -> Arc<str> {
        let name = self.user_name(effective);
        if real == effective {
            return name;
        }
        format!("{name} (real {})", self.user_name(real)).into()
    }

    /// The user name through NSS (cached per UID), or the number when there is none.
    fn user_name(&mut self, uid: u32) -> Arc<str> {
        self.users
            .entry(uid)
            .or_insert_with(|| {
                uzers::get_user_by_uid(uid)
                    .map(|u| u.name().to_string_lossy().into())
                    .unwrap_or_else(|| uid.to_string().into())
            })
            .clone()
    }

    fn started(&mut self, start_ticks: u64) -> SystemTime {
        let boot = *self
            .boot_time
            .get_or_insert_with(|| read_boot_time(&self.root));
        // Integer arithmetic: a float would round the identity-bearing start time.
        let tps = self.ticks_per_second;
        boot + Duration::from_secs(start_ticks / tps)
            + Duration::from_nanos((start_ticks % tps) * 1_000_000_000 / tps)
    }
}

/// The workload the cgroup names; where it names none, or only Slurm's own daemon (under
/// `proctrack/linuxproc` or `pgid` a job's tasks stay in slurmd's cgroup, or the root one),
/// the Slurm job the process's environment names, when it was readable; with whether the
/// environment claimed it.
fn workload(
    from_cgroup: Option<Workload>,
    env: Option<&crate::reading::workload::ProcEnv>,
) -> (Option<Workload>, bool) {
    let slurm_daemon = matches!(
        &from_cgroup,
        Some(Workload::Service { name, user: None }) if name == "slurmd" || name == "slurmstepd"
    );
    if from_cgroup.is_some() && !slurm_daemon {
        return (from_cgroup, false);
    }
    match env.and_then(names::slurm::workload_from_env) {
        Some(job) => (Some(job), true),
        None => (from_cgroup, false),
    }
}

#[cfg(test)]
mod tests;
