//! Parsing the /proc files `ProcInfo` reads: `stat`, `status`, `cmdline`, `environ` (only
//! its GPU-related variables) and the host's boot time. Pure text-to-value functions plus
//! the two reads that cannot fail loudly; no caching here.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::source::workload::ProcEnv;

/// The parts of /proc/PID/stat we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stat {
    pub comm: String,
    /// The parent's PID (field 4), for the parent chain.
    pub ppid: u32,
    pub cpu_ticks: u64,
    pub start_ticks: u64,
    pub rss_pages: u64,
}

/// The GPU-related variables of /proc/PID/environ; `None` when it cannot be read (another
/// user's process, unless we are root). Only the kept prefixes leave this function.
pub(super) fn read_env(dir: &Path) -> Option<ProcEnv> {
    let raw = std::fs::read(dir.join("environ")).ok()?;
    Some(ProcEnv::from_vars(raw.split(|&b| b == 0).filter_map(
        |entry| {
            let text = std::str::from_utf8(entry).ok()?;
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        },
    )))
}

/// `btime` from /proc/stat. Every Linux /proc has it; if it cannot be read the start times
/// are counted from the epoch, which shows as absurdly old rather than silently wrong-ish.
pub(super) fn read_boot_time(root: &Path) -> SystemTime {
    std::fs::read_to_string(root.join("stat"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .map_or(SystemTime::UNIX_EPOCH, |secs| {
            SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
        })
}

/// Parses /proc/PID/stat. The command name (field 2) may contain spaces and parentheses,
/// so it is everything between the first '(' and the *last* ')'.
pub(super) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Fields after the name, numbered as in proc(5) from 3 (state). Read once per GPU
    // process per sample: one pass that parses only the five fields used, no Vec.
    const WANTED: [usize; 5] = [4, 14, 15, 22, 24];
    let mut values = [0u64; 5];
    let mut found = 0;
    for (i, field) in text.get(close + 1..)?.split_whitespace().enumerate() {
        if i + 3 == WANTED[found] {
            values[found] = field.parse().ok()?;
            found += 1;
            if found == WANTED.len() {
                break;
            }
        }
    }
    if found < WANTED.len() {
        return None;
    }
    let [ppid, utime, stime, start_ticks, rss_pages] = values;
    Some(Stat {
        comm,
        ppid: u32::try_from(ppid).ok()?,
        cpu_ticks: utime + stime,
        start_ticks,
        rss_pages,
    })
}

/// The real UID from the `Uid:` line of /proc/PID/status (real, effective, saved, fs).
/// The four user ids of a process (`Uid:` in /proc/PID/status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uids {
    pub real: u32,
    /// The one the kernel checks permissions with: the owner gpuwatch shows.
    pub effective: u32,
    /// What it may switch back to: a saved 0 can become root again at will.
    pub saved: u32,
    pub filesystem: u32,
}

impl Uids {
    /// Root's, for the "never root's processes" rule: any of the four is 0 (a setuid-root
    /// program started by nobody has real uid nobody, and is root all the same).
    pub fn any_root(&self) -> bool {
        [self.real, self.effective, self.saved, self.filesystem].contains(&0)
    }
}

pub(super) fn parse_uids(status: &str) -> Option<Uids> {
    let mut ids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .map(|v| v.parse::<u32>().ok());
    let real = ids.next()??;
    // Old kernels list fewer: each missing one is the one before it.
    let effective = ids.next().flatten().unwrap_or(real);
    let saved = ids.next().flatten().unwrap_or(effective);
    let filesystem = ids.next().flatten().unwrap_or(effective);
    Some(Uids {
        real,
        effective,
        saved,
        filesystem,
    })
}

/// /proc/PID/cmdline is NUL-separated (and NUL-terminated): show it space-separated.
pub(super) fn join_cmdline(raw: &[u8]) -> String {
    raw.split(|&b| b == 0)
        .filter(|arg| !arg.is_empty())
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}
