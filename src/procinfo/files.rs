//! Parsing the /proc files `ProcInfo` reads: `stat`, `status`, `cmdline`, `environ` (only
//! its GPU-related variables) and the host's boot time. Pure text-to-value functions plus
//! the two reads that cannot fail loudly; no caching here.

use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::reading::workload::ProcEnv;

/// The parts of /proc/PID/stat we use, borrowing the name from the text read: it is needed
/// only on a process's first sighting, so it is not copied every sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stat<'a> {
    pub comm: &'a str,
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
        // Most of a process's variables (PATH, HOME, …) start with no kept prefix: passed
        // over on their bytes, not decoded and split (at a first sample of 1,000 processes
        // that was 22 k instructions a process, issue 25).
        if !ProcEnv::PREFIXES
            .iter()
            .any(|p| entry.starts_with(p.as_bytes()))
        {
            return;
        }
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
pub(super) fn parse_stat(text: &str) -> Option<Stat<'_>> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?;
    // Fields after the name, numbered as in proc(5) from 3 (state). Read once per GPU
    // process per sample: one pass over the bytes up to the last field used, parsing only
    // the five used. (`split_whitespace` decoded every character as Unicode: ~2,000
    // instructions a line, the sampler's largest user-space cost at 1,000 processes.)
    const WANTED: [usize; 5] = [4, 14, 15, 22, 24];
    let mut values = [0u64; 5];
    let rest = text.get(close + 1..)?;
    let bytes = rest.as_bytes();
    let (mut at, mut field) = (0, 2);
    for (value, wanted) in values.iter_mut().zip(WANTED) {
        loop {
            while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
                at += 1;
            }
            let start = at;
            while bytes.get(at).is_some_and(|b| !b.is_ascii_whitespace()) {
                at += 1;
            }
            if start == at {
                return None;
            }
            field += 1;
            if field == wanted {
                // Split at ASCII whitespace only, so `start..at` lies on char boundaries.
                *value = rest[start..at].parse().ok()?;
                break;
            }
        }
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

    // Real lines, read from a 6.x kernel's /proc (the PIDs as they were).
    const BUSY: &str = "1 (process_api) S 0 0 0 0 -1 4194560 46269 225118229 0 38109 1702 6619 938847 114161 10 -10 17 0 25 47280128 2734 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    /// `/tmp/a) b (c) d` run as a program: spaces and both parentheses in the name.
    const ODD_NAME: &str = "861 (a) b (c) d) S 858 858 19841 0 -1 4194304 138 0 0 0 0 0 0 0 20 0 1 0 2522194 2990080 425 18446744073709551615 94145299787776 94145299805705 140723233614128 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 94145299819792 94145299821056 94145917222912 140723233618624 140723233618652 140723233618652 140723233619934 0\n";
    const ZOMBIE: &str = "866 (sleep) Z 864 858 19841 0 -1 4227084 138 0 0 0 0 0 0 0 20 0 1 0 2522224 0 0 18446744073709551615 0 0 0 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    /// A kernel thread: no memory, and a name longer than a process's 15 bytes.
    const KTHREAD: &str = "10 (kworker/0:0H-events_highpri) I 2 0 0 0 -1 69238880 0 0 0 0 0 0 0 0 0 -20 1 0 25 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    fn stat(comm: &str, ppid: u32, cpu_ticks: u64, start_ticks: u64, rss_pages: u64) -> Stat<'_> {
        Stat {
            comm,
            ppid,
            cpu_ticks,
            start_ticks,
            rss_pages,
        }
    }

    #[test]
    fn stat_lines_from_a_real_proc_give_their_fields() {
        assert_eq!(
            parse_stat(BUSY),
            Some(stat("process_api", 0, 1702 + 6619, 25, 2734))
        );
        assert_eq!(
            parse_stat(ODD_NAME),
            Some(stat("a) b (c) d", 858, 0, 2522194, 425))
        );
        assert_eq!(parse_stat(ZOMBIE), Some(stat("sleep", 864, 0, 2522224, 0)));
        assert_eq!(
            parse_stat(KTHREAD),
            Some(stat("kworker/0:0H-events_highpri", 2, 0, 25, 0))
        );
    }

    /// The parser before issue 25's byte-level one, kept as the oracle it must agree with.
    fn by_split_whitespace(text: &str) -> Option<Stat<'_>> {
        let comm = text.get(text.find('(')? + 1..text.rfind(')')?)?;
        let fields: Vec<&str> = text
            .get(text.rfind(')')? + 1..)?
            .split_whitespace()
            .collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        Some(Stat {
            comm,
            ppid: u32::try_from(field(4)?).ok()?,
            cpu_ticks: field(14)? + field(15)?,
            start_ticks: field(22)?,
            rss_pages: field(24)?,
        })
    }

    #[test]
    fn stat_parsing_agrees_with_splitting_on_whitespace_cut_anywhere() {
        for line in [BUSY, ODD_NAME, ZOMBIE, KTHREAD] {
            // Every prefix: a line cut short (a field missing, or cut inside a number) is
            // rejected or read exactly as the whitespace split reads it.
            for end in 0..=line.len() {
                let cut = &line[..end];
                assert_eq!(parse_stat(cut), by_split_whitespace(cut), "{cut:?}");
            }
        }
        for odd in [
            "5 (x)  S   7\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            "5 (x) S 7 1 2 3 4 5 6 7 8 9 -1 11 12 13 14 15 16 17 18 19 20",
            "5 (x) S 4294967296 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            "5 (x) S 7 1 2 3 4 5 6 7 8 9 1x 11 12 13 14 15 16 17 18 19 20",
            "5 (x) S 7 1 2 3 4 5 6 7 8 9 18446744073709551616 11 12 13 14 15 16 17 18",
            "5 x) S 7 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            "5 (x S 7 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
        ] {
            assert_eq!(parse_stat(odd), by_split_whitespace(odd), "{odd:?}");
        }
        assert!(
            parse_stat("5 (x)  S   7\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20")
                .is_some()
        );
    }

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
