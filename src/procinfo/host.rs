//! The host line's numbers, from /proc (or a fixture tree shaped like it): CPU use since
//! the previous read (`/proc/stat`), RAM and swap (`/proc/meminfo`), the load average
//! (`/proc/loadavg`). The data loader and the page cache are the usual suspects when a GPU
//! starves, so the monitor shows them beside the GPUs. Three small files a sample, read by
//! the sampler's source, never on the draw path; a file that is missing or garbled leaves
//! its fields `None` (shown `N/A`), never zero. The files stay open and are read again
//! from the start each sample (the kernel writes them afresh): opening and closing three
//! files every second was a third of the host line's cost.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::reading::HostLoad;
use crate::units::Bytes;

/// Reads the host's load; keeps the previous CPU counters for the next delta.
#[derive(Debug)]
pub struct HostReader {
    root: PathBuf,
    prev: Option<CpuTimes>,
    stat: Reread,
    loadavg: Reread,
    meminfo: Reread,
}

/// /proc/stat on a machine with thousands of CPUs and interrupts is a few hundred KiB.
const MAX_PROC_FILE: usize = 4 << 20;

/// One /proc file kept open, read whole from offset 0 into a buffer that is kept too.
#[derive(Debug)]
struct Reread {
    name: &'static str,
    file: Option<File>,
    text: Vec<u8>,
}

impl Reread {
    fn new(name: &'static str) -> Self {
        Reread {
            name,
            file: None,
            text: Vec::new(),
        }
    }

    /// The file's text now; `None` when it cannot be opened or read (tried again next time).
    /// One read into a buffer big enough for all of it: the kernel writes a /proc file
    /// afresh for each read call, so reading /proc/stat in pieces would pay for it twice.
    fn read(&mut self, root: &std::path::Path) -> Option<&str> {
        if self.file.is_none() {
            self.file = File::open(root.join(self.name)).ok();
        }
        let file = self.file.as_ref()?;
        let mut room = self.text.capacity().max(4096);
        loop {
            self.text.resize(room, 0);
            match file.read_at(&mut self.text, 0) {
                Ok(n) if n < room => {
                    self.text.truncate(n);
                    break;
                }
                // Filled to the brim: there may be more; again with twice the room.
                Ok(_) if room < MAX_PROC_FILE => room *= 2,
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.file = None;
                    return None;
                }
            }
        }
        std::str::from_utf8(&self.text).ok()
    }
}

/// Jiffies from the aggregate `cpu` line of /proc/stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

impl HostReader {
    /// A /proc tree at `root` (`/proc` on a live host).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        HostReader {
            root: root.into(),
            prev: None,
            stat: Reread::new("stat"),
            loadavg: Reread::new("loadavg"),
            meminfo: Reread::new("meminfo"),
        }
    }

    /// The load now. CPU % needs two reads, so the first read has none.
    pub fn read(&mut self) -> HostLoad {
        let (times, cpus) = self.stat.read(&self.root).map_or((None, None), parse_stat);
        let cpu_percent = match (self.prev, times) {
            (Some(a), Some(b)) if b.total > a.total && b.busy >= a.busy => {
                Some((b.busy - a.busy) as f64 * 100.0 / (b.total - a.total) as f64)
            }
            _ => None,
        };
        // A counter that went backwards (a fixture swapped, a counter reset) starts over.
        self.prev = times;
        let mut load = HostLoad {
            cpu_percent,
            cpus,
            load_average: self.loadavg.read(&self.root).and_then(parse_loadavg),
            ..HostLoad::default()
        };
        if let Some(meminfo) = self.meminfo.read(&self.root) {
            fill_memory(&mut load, meminfo);
        }
        load
    }
}

/// The aggregate CPU times and the number of CPUs (`cpuN` lines).
fn parse_stat(text: &str) -> (Option<CpuTimes>, Option<u32>) {
    let mut times = None;
    let mut cpus = 0u32;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        match fields.next() {
            Some("cpu") => {
                let n: Vec<u64> = fields.map_while(|f| f.parse().ok()).collect();
                // user nice system idle iowait irq softirq steal (guest time is already
                // inside user): idle and iowait are the CPU doing nothing.
                if n.len() >= 4 {
                    let total: u64 = n.iter().take(8).sum();
                    let idle = n[3] + n.get(4).copied().unwrap_or(0);
                    times = Some(CpuTimes {
                        busy: total - idle,
                        total,
                    });
                }
            }
            Some(name) if name.starts_with("cpu") => cpus += 1,
            _ => {}
        }
    }
    (times, (cpus > 0).then_some(cpus))
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut f = text.split_ascii_whitespace().map(|v| v.parse::<f64>().ok());
    Some([f.next()??, f.next()??, f.next()??])
}

/// RAM used is total minus available (what the kernel could give a new process without
/// swapping; the page cache is reclaimable), as `free` and nvitop count it.
fn fill_memory(load: &mut HostLoad, text: &str) {
    let kib = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            let n: u64 = rest.split_ascii_whitespace().next()?.parse().ok()?;
            Some(Bytes(n * 1024))
        })
    };
    let (total, available) = (kib("MemTotal"), kib("MemAvailable"));
    load.memory_total = total;
    load.memory_used = total.zip(available).map(|(t, a)| t.saturating_sub(a));
    let (swap_total, swap_free) = (kib("SwapTotal"), kib("SwapFree"));
    load.swap_total = swap_total;
    load.swap_used = swap_total.zip(swap_free).map(|(t, f)| t.saturating_sub(f));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn fixture(stat: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("stat"), stat).unwrap();
        fs::write(
            dir.path().join("meminfo"),
            "MemTotal:       16384000 kB\nMemFree:         1000000 kB\nMemAvailable:    4096000 kB\n\
             SwapTotal:       2048000 kB\nSwapFree:        1024000 kB\n",
        )
        .unwrap();
        fs::write(dir.path().join("loadavg"), "1.50 0.75 0.25 2/345 6789\n").unwrap();
        dir
    }

    const STAT_A: &str = "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n\
                          cpu1 50 0 50 350 50 0 0 0 0 0\nintr 1 2 3\n";
    // 200 more jiffies: 50 busy (user), 150 idle.
    const STAT_B: &str = "cpu  150 0 100 850 100 0 0 0 0 0\ncpu0 75 0 50 425 50 0 0 0 0 0\n\
                          cpu1 75 0 50 425 50 0 0 0 0 0\nintr 1 2 3\n";

    #[test]
    fn reads_cpu_memory_swap_and_load_from_a_fixture_tree() {
        let dir = fixture(STAT_A);
        let mut r = HostReader::new(dir.path());
        let first = r.read();
        assert_eq!(first.cpu_percent, None, "one read has no delta");
        assert_eq!(first.cpus, Some(2));
        assert_eq!(first.memory_total, Some(Bytes(16_384_000 * 1024)));
        assert_eq!(
            first.memory_used,
            Some(Bytes((16_384_000 - 4_096_000) * 1024))
        );
        assert_eq!(first.swap_total, Some(Bytes(2_048_000 * 1024)));
        assert_eq!(first.swap_used, Some(Bytes(1_024_000 * 1024)));
        assert_eq!(first.load_average, Some([1.5, 0.75, 0.25]));
        fs::write(dir.path().join("stat"), STAT_B).unwrap();
        let second = r.read();
        assert_eq!(second.cpu_percent, Some(25.0));
    }

    #[test]
    fn missing_or_garbled_files_are_unknown_not_zero() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = HostReader::new(dir.path());
        assert_eq!(r.read(), HostLoad::default());
        fs::write(dir.path().join("loadavg"), "high\n").unwrap();
        fs::write(dir.path().join("meminfo"), "MemTotal: 1000 kB\n").unwrap();
        fs::write(dir.path().join("stat"), "cpu x y\n").unwrap();
        let load = r.read();
        assert_eq!(load.load_average, None);
        assert_eq!(load.memory_total, Some(Bytes(1000 * 1024)));
        assert_eq!(load.memory_used, None, "no MemAvailable: used is unknown");
        assert_eq!((load.cpu_percent, load.cpus), (None, None));
    }

    #[test]
    fn a_counter_going_backwards_gives_no_cpu_percent() {
        let dir = fixture(STAT_B);
        let mut r = HostReader::new(dir.path());
        r.read();
        fs::write(dir.path().join("stat"), STAT_A).unwrap();
        assert_eq!(r.read().cpu_percent, None);
    }
}
