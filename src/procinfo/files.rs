//! Parsing the /proc files `ProcInfo` reads: `stat`, `status`, `cmdline`, `environ` (only
//! its GPU-related variables) and the host's boot time. Pure text-to-value functions plus
//! the two reads that cannot fail loudly; no caching here.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::reading::workload::ProcEnv;

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
/// user's process, unless we are root). Only the kept prefixes leave this function, within
/// `ProcEnv`'s caps; the file is read in pieces, so a process carrying megabytes of
/// variables costs a pass over them, never their copy.
pub(super) fn read_env(dir: &Path) -> Option<ProcEnv> {
    let file = crate::safe_file::open_regular(&dir.join("environ")).ok()?;
    // An environment is at most 6 MiB (the kernel's cap on exec's strings); a larger
    // file is no process's environment, and what it says past that is not read.
    let reader = BufReader::new(file.take(MAX_ENVIRON));
    let mut vars = Vec::new();
    // Enough of an entry to see a name of the longest kept length, `=`, and a value
    // longer than the longest kept one (so `ProcEnv` sees it was cut).
    let keep = ProcEnv::MAX_NAME + 1 + ProcEnv::MAX_VALUE + 4;
    each_entry(reader, keep, |entry| {
        let entry = String::from_utf8_lossy(entry);
        if let Some((k, v)) = entry.split_once('=')
            && ProcEnv::PREFIXES.iter().any(|p| k.starts_with(p))
        {
            vars.push((k.to_string(), v.to_string()));
        }
    })
    .ok()?;
    Some(ProcEnv::from_vars(vars))
}

const MAX_ENVIRON: u64 = 8 << 20;

/// Calls `each` with the first `keep` bytes of every NUL-separated entry of `reader`.
fn each_entry(
    mut reader: impl BufRead,
    keep: usize,
    mut each: impl FnMut(&[u8]),
) -> io::Result<()> {
    let mut entry = Vec::with_capacity(256);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if !entry.is_empty() {
                each(&entry);
            }
            return Ok(());
        }
        let end = buf.iter().position(|&b| b == 0);
        let piece = &buf[..end.unwrap_or(buf.len())];
        let room = keep.saturating_sub(entry.len());
        entry.extend_from_slice(&piece[..piece.len().min(room)]);
        let used = end.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if end.is_some() {
            each(&entry);
            entry.clear();
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_split_on_nul_and_cut_at_keep_even_across_reads() {
        // A 3-byte buffer: entries and their ends fall across refills.
        let raw: &[u8] = b"A=1\0LONGER=abcdefgh\0\0B=2";
        let mut seen = Vec::new();
        let reader = BufReader::with_capacity(3, raw);
        each_entry(reader, 8, |e| {
            seen.push(String::from_utf8(e.to_vec()).unwrap())
        })
        .unwrap();
        assert_eq!(seen, ["A=1", "LONGER=a", "", "B=2"]);
    }

    #[test]
    fn a_megabyte_of_cuda_variables_keeps_the_used_ones_within_the_caps() {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = Vec::new();
        for i in 0..40 {
            raw.extend_from_slice(format!("CUDA_JUNK_{i:02}=").as_bytes());
            raw.extend(std::iter::repeat_n(b'x', 30_000));
            raw.push(0);
        }
        raw.extend_from_slice(b"HOME=/root\0CUDA_VISIBLE_DEVICES=1,2\0SLURM_JOB_ID=7\0");
        std::fs::write(dir.path().join("environ"), &raw).unwrap();
        let env = read_env(dir.path()).unwrap();
        assert_eq!(env.get("CUDA_VISIBLE_DEVICES"), Some("1,2"));
        assert_eq!(env.get("SLURM_JOB_ID"), Some("7"));
        assert_eq!(env.get("HOME"), None);
        let total: usize = env.vars().iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(total <= ProcEnv::MAX_TOTAL, "{total}");
        let junk = env.get("CUDA_JUNK_00").unwrap();
        assert_eq!(junk.len(), ProcEnv::MAX_VALUE);
        assert!(junk.ends_with('…'), "a cut value says so");
        // 16 KiB fits the two used ones and three cut 4 KiB values, in name order.
        let names: Vec<&str> = env.vars().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "CUDA_JUNK_00",
                "CUDA_JUNK_01",
                "CUDA_JUNK_02",
                "CUDA_VISIBLE_DEVICES",
                "SLURM_JOB_ID"
            ]
        );
    }

    #[test]
    fn an_environ_that_is_a_fifo_is_unreadable_not_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let c = std::ffi::CString::new(dir.path().join("environ").as_os_str().as_encoded_bytes())
            .unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_env(dir.path()), None);
    }
}
