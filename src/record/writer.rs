//! The recorder: its own thread, fed lines through a bounded queue, so file I/O never runs on
//! the sampler's path (a slow disk, a full disk or an NFS stall cannot hold back sampling).
//! When the queue is full a line is dropped and counted, never waited for. After a write
//! error the file is re-opened for append, never emptied, and writing resumes when it can;
//! "recording paused" and "recording resumed" are said once each, as notices the sampler
//! passes on. Owns the file while recording; rotation to `FILE.1` happens here.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::open::{Existing, open_for_writing};

/// Lines waiting for the disk. Minutes of samples at the 100 ms minimum interval; a line
/// is a few KiB, so this bounds the queue to about a MiB.
pub const QUEUE_DEPTH: usize = 256;

/// How long ending a recording waits for queued lines to reach the file.
const FINISH_WAIT: Duration = Duration::from_secs(5);

/// What the recorder has to say to the user, taken by the sampler.
#[derive(Debug, Default)]
struct Shared {
    notices: Vec<String>,
}

/// The sampler's end of the recorder.
pub struct Writer {
    tx: Option<SyncSender<String>>,
    shared: Arc<Mutex<Shared>>,
    /// Lines dropped because the queue was full, and how many of them were already said.
    dropped: u64,
    dropped_said: u64,
    finished: Receiver<()>,
}

impl Writer {
    /// Starts the recorder on an already opened file that holds `written` bytes.
    pub fn start(file: File, written: u64, path: &Path, header: String, max: Option<u64>) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let mut disk = Disk {
            path: path.to_path_buf(),
            header,
            max,
            file: Some(file),
            written,
            paused: false,
            torn: false,
            shared: shared.clone(),
        };
        Self::spawn(shared, move |line| disk.write(&line))
    }

    /// The queue and the thread that hands each line to `consume`.
    fn spawn(shared: Arc<Mutex<Shared>>, mut consume: impl FnMut(String) + Send + 'static) -> Self {
        let (tx, rx) = sync_channel::<String>(QUEUE_DEPTH);
        let (done_tx, finished) = sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("recorder".into())
            .spawn(move || {
                for line in rx {
                    consume(line);
                }
                let _ = done_tx.send(());
            });
        if let Err(e) = spawned
            && let Ok(mut s) = shared.lock()
        {
            s.notices.push(format!("recording stopped: {e}"));
        }
        Writer {
            tx: Some(tx),
            shared,
            dropped: 0,
            dropped_said: 0,
            finished,
        }
    }

    /// Queues one line; never blocks. A full queue drops it and counts it.
    pub fn push(&mut self, line: String) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped += 1,
            Err(TrySendError::Disconnected(_)) => self.tx = None,
        }
    }

    /// Queues one line, waiting while the queue is full: only for the lines written before
    /// sampling starts (`RecordingSource::record_earlier`), never on the sampler's path.
    pub fn push_waiting(&mut self, line: String) {
        let Some(tx) = &self.tx else { return };
        if tx.send(line).is_err() {
            self.tx = None;
        }
    }

    /// What the recorder said since the last call, and a count of dropped lines if new.
    pub fn notices(&mut self) -> Vec<String> {
        let mut out = self
            .shared
            .lock()
            .map(|mut s| std::mem::take(&mut s.notices))
            .unwrap_or_default();
        if self.dropped > self.dropped_said {
            out.push(format!(
                "recording is behind the disk: {} sample(s) dropped so far",
                self.dropped
            ));
            self.dropped_said = self.dropped;
        }
        out
    }

    /// Lines dropped so far because the disk was slower than sampling.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl Drop for Writer {
    /// Lets the recorder write what is queued, waiting a bounded time (a wedged disk must
    /// not keep the program from exiting).
    fn drop(&mut self) {
        self.tx = None;
        let _ = self.finished.recv_timeout(FINISH_WAIT);
    }
}

/// The recorder thread's side: the file and what it knows of it.
struct Disk {
    path: PathBuf,
    header: String,
    max: Option<u64>,
    /// `None` after a failure: re-opened (for append) at the next line.
    file: Option<File>,
    written: u64,
    /// A write failed and that was said; the next good write says "resumed".
    paused: bool,
    /// A failed write may have left half a line: a line break goes first when resuming.
    torn: bool,
    shared: Arc<Mutex<Shared>>,
}

impl Disk {
    fn write(&mut self, line: &str) {
        match self.try_write(line) {
            Ok(()) if self.paused => {
                self.paused = false;
                self.say(format!("recording resumed ({})", self.path.display()));
            }
            Ok(()) => {}
            Err(e) => {
                self.file = None;
                self.torn = true;
                if !self.paused {
                    self.paused = true;
                    let why = match e.raw_os_error() {
                        Some(libc::ENOSPC) | Some(libc::EDQUOT) => "disk full".to_string(),
                        _ => e.to_string(),
                    };
                    self.say(format!("recording paused: {why} ({})", self.path.display()));
                }
            }
        }
    }

    fn say(&self, notice: String) {
        if let Ok(mut s) = self.shared.lock() {
            s.notices.push(notice);
        }
    }

    fn try_write(&mut self, line: &str) -> io::Result<()> {
        let full = self
            .max
            .is_some_and(|max| self.written + line.len() as u64 > max);
        if full && self.written > self.header.len() as u64 {
            self.rotate()?;
        }
        if self.file.is_none() {
            self.reopen()?;
        }
        let torn = std::mem::take(&mut self.torn);
        let Some(file) = self.file.as_mut() else {
            unreachable!("opened just above")
        };
        if torn {
            file.write_all(b"\n")?;
            self.written += 1;
        }
        // One write per line, unbuffered: a recording must survive the program being killed.
        file.write_all(line.as_bytes())?;
        self.written += line.len() as u64;
        Ok(())
    }

    /// The file again, for append: what was written before stays.
    fn reopen(&mut self) -> io::Result<()> {
        let mut file = open_for_writing(&self.path, Existing::Append)?;
        self.written = file.metadata()?.len();
        if self.written == 0 {
            file.write_all(self.header.as_bytes())?;
            self.written = self.header.len() as u64;
            self.torn = false;
        }
        self.file = Some(file);
        Ok(())
    }

    /// The full file becomes `FILE.1` (replacing an older one) and a new one begins, created
    /// by the same rules as the first (`O_EXCL`: a link planted meanwhile is refused).
    fn rotate(&mut self) -> io::Result<()> {
        let mut rotated = self.path.clone().into_os_string();
        rotated.push(".1");
        self.file = None;
        std::fs::rename(&self.path, rotated)?;
        self.torn = false;
        self.reopen()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that never finishes a write: sampling must not wait for it.
    #[test]
    fn a_stuck_disk_drops_and_counts_and_never_blocks_the_sampler() {
        let (unblock, stuck) = std::sync::mpsc::channel::<()>();
        let stuck = Mutex::new(stuck);
        let mut w = Writer::spawn(Arc::default(), move |_| {
            let _ = stuck.lock().unwrap().recv();
        });
        for i in 0..QUEUE_DEPTH + 10 {
            w.push(format!("line {i}\n"));
        }
        // The thread holds at most one line; the queue the rest it has room for.
        assert!((9..=10).contains(&w.dropped()), "{}", w.dropped());
        let said = w.notices();
        assert_eq!(said.len(), 1);
        assert!(
            said[0].starts_with("recording is behind the disk: "),
            "{said:?}"
        );
        assert!(w.notices().is_empty(), "said once until more are dropped");
        drop(unblock);
    }
}
