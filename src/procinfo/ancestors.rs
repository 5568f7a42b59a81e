//! The names of a GPU process's ancestors (`sshd → bash → tmux → python`), read from each
//! one's /proc/PID/stat once per sample however many processes share them: the workers of
//! one job share their launcher, shell and session, and a first sample of 1,000 such
//! processes read the same four or five `stat` files 1,000 times each (issue 25: 10,000
//! `stat` reads and parses where a few do).

use std::path::Path;
use std::time::Instant;

use super::files::parse_stat;
use crate::fast_hash::FastMap;

/// Deep enough for sshd → bash → tmux → bash → srun → python; a bound, since a /proc
/// fixture (or a race with PID reuse) could make the chain loop.
const MAX_DEPTH: usize = 16;

/// Each ancestor read during one sample: its command name and parent, or `None` when it
/// could not be read.
#[derive(Debug, Default)]
pub(super) struct Ancestors {
    sample: Option<Instant>,
    read: FastMap<u32, Option<(String, u32)>>,
}

impl Ancestors {
    /// The names of the ancestors from `ppid` up, outermost first, stopping below init
    /// (PID 1) or at the first that cannot be read. `now` is the sample's time: what was
    /// read for an earlier sample is not reused (a PID may name another process since).
    pub fn chain(&mut self, root: &Path, mut ppid: u32, now: Instant) -> Vec<String> {
        if self.sample != Some(now) {
            self.sample = Some(now);
            self.read.clear();
        }
        let mut chain = Vec::new();
        while ppid > 1 && chain.len() < MAX_DEPTH {
            let entry = self.read.entry(ppid).or_insert_with(|| {
                let text = std::fs::read_to_string(root.join(ppid.to_string()).join("stat"));
                let text = text.ok()?;
                let stat = parse_stat(&text)?;
                Some((stat.comm.to_string(), stat.ppid))
            });
            let Some((name, parent)) = entry else {
                break;
            };
            chain.push(name.clone());
            ppid = *parent;
        }
        chain.reverse();
        chain
    }
}
