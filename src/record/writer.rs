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

use super::open::{Existing, open_for_writing, remove_old_segment, rename_noreplace};

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
            match self.reopen() {
                Ok(()) => {}
                // Something not ours took the file's name (a link planted after a
                // rotation, a file of someone else's): never written through, and no
                // reason to stop recording for good either.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    let why = format!("{} was replaced: {e}", self.path.display());
                    self.go_on_fresh(why)?;
                }
                Err(e) => return Err(e),
            }
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

    /// The full file becomes `FILE.1` and a new one begins, created by the same rules as the
    /// first (`O_EXCL`: a link planted meanwhile is refused). Only what this recorder wrote
    /// is moved or replaced: `FILE` is moved only while it still is the file written here
    /// (same device and inode), the older `FILE.1` is removed only when it is a recording of
    /// ours, and the move never replaces a name planted in between. When any of that fails
    /// (a link, a directory or someone else's file in the way) nothing is touched and the
    /// recording goes on in a fresh file, said once, instead of pausing for good.
    fn rotate(&mut self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let rotated = suffixed(&self.path, ".1");
        let inode = |m: std::fs::Metadata| (m.dev(), m.ino());
        let written_here = self.file.take().and_then(|f| f.metadata().ok()).map(inode);
        self.torn = false;
        let at_path = std::fs::symlink_metadata(&self.path).ok().map(inode);
        let moved = if written_here.is_some() && written_here == at_path {
            remove_old_segment(&rotated).and_then(|()| rename_noreplace(&self.path, &rotated))
        } else {
            Err(io::Error::other(
                "it is no longer the file this recording wrote",
            ))
        };
        match moved {
            Ok(()) => self.reopen(),
            Err(e) => self.go_on_fresh(format!("cannot rotate to {}: {e}", rotated.display())),
        }
    }

    /// Carries on in a new file beside the old name (`FILE.<unix seconds>`), created by the
    /// rules of a first open, and says where.
    fn go_on_fresh(&mut self, why: String) -> io::Result<()> {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut last = io::Error::other("no fresh name left");
        for n in 0..16 {
            let fresh = match n {
                0 => suffixed(&self.path, &format!(".{secs}")),
                n => suffixed(&self.path, &format!(".{secs}-{n}")),
            };
            // Only a name nothing holds: an earlier fresh segment of this run (two switches
            // in one second) is a recording of ours, which `Replace` would empty.
            if std::fs::symlink_metadata(&fresh).is_ok() {
                continue;
            }
            match open_for_writing(&fresh, Existing::Replace) {
                Ok(mut file) => {
                    file.write_all(self.header.as_bytes())?;
                    self.written = self.header.len() as u64;
                    self.file = Some(file);
                    self.torn = false;
                    self.say(format!("recording continues in {}: {why}", fresh.display()));
                    self.path = fresh;
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// `path` with `suffix` added to its file name (`rec.ndjson` → `rec.ndjson.1`).
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    name.into()
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

    /// A recorder on a new file at `path`, rotating past `max` bytes, as `Writer::start`'s.
    fn disk(path: &Path, max: u64) -> Disk {
        let header = format!(
            "{}\n",
            serde_json::to_string(&crate::wire::recording::Header::new(Duration::from_secs(1)))
                .unwrap()
        );
        let mut file = open_for_writing(path, Existing::Replace).unwrap();
        file.write_all(header.as_bytes()).unwrap();
        Disk {
            path: path.to_path_buf(),
            written: header.len() as u64,
            header,
            max: Some(max),
            file: Some(file),
            paused: false,
            torn: false,
            shared: Arc::default(),
        }
    }

    fn said(d: &Disk) -> Vec<String> {
        std::mem::take(&mut d.shared.lock().unwrap().notices)
    }

    fn lines(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().skip(1).map(String::from).collect()
    }

    /// Issue 26 §2: a link planted at FILE right after a rotation paused the recording, and
    /// the next rotation renamed the link over FILE.1, so the previous segment was lost. Now
    /// the link is never written through nor moved, and the recording goes on elsewhere.
    #[test]
    fn a_link_planted_after_a_rotation_costs_no_segment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let rotated = dir.path().join("rec.ndjson.1");
        let mut d = disk(&path, 600);
        let mut i = 0;
        while !rotated.exists() {
            d.write(&format!("{{\"line\": {i:03}}}\n"));
            i += 1;
            assert!(i < 50, "no rotation");
        }
        // The moment after the rename: a link takes FILE's name before it is opened again.
        d.file = None;
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let first_segment = lines(&rotated);
        assert!(!first_segment.is_empty(), "a rotation happened");
        let _ = said(&d);
        for i in 100..140 {
            d.write(&format!("{{\"line\": {i:03}}}\n"));
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            lines(&rotated),
            first_segment,
            "the previous segment is kept"
        );
        let notices = said(&d);
        assert!(
            notices
                .iter()
                .any(|n| n.starts_with("recording continues in ")),
            "{notices:?}"
        );
        assert!(!d.paused, "still recording: {notices:?}");
        assert!(
            lines(&d.path).iter().any(|l| l.contains("139")),
            "the newest line is written"
        );
    }

    /// A directory planted at FILE.1 made every rotation fail ("Is a directory") and paused
    /// the recording for good.
    #[test]
    fn a_directory_at_the_rotated_name_does_not_stop_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        std::fs::create_dir(dir.path().join("rec.ndjson.1")).unwrap();
        let mut d = disk(&path, 600);
        for i in 0..60 {
            d.write(&format!("{{\"line\": {i:03}}}\n"));
        }
        assert!(!d.paused, "{:?}", said(&d));
        assert!(dir.path().join("rec.ndjson.1").is_dir(), "left alone");
        assert!(
            lines(&path).iter().any(|l| l.contains("000")),
            "the full file is kept"
        );
        assert!(
            lines(&d.path).iter().any(|l| l.contains("059")),
            "the newest line is written"
        );
        let notices = said(&d);
        assert!(
            notices.iter().any(|n| n.contains("cannot rotate to")),
            "{notices:?}"
        );
    }

    /// A fresh name that an earlier recording of ours already holds (another run that
    /// switched in the same second) is passed over, not emptied.
    #[test]
    fn a_fresh_file_never_empties_an_earlier_recording() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut d = disk(&path, 1 << 20);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        // This second's name and the next one's, in case the clock turns meanwhile.
        let earlier: Vec<PathBuf> = (now..now + 2)
            .map(|secs| suffixed(&path, &format!(".{secs}")))
            .collect();
        for p in &earlier {
            let mut other = disk(p, 1 << 20);
            other.write("{\"line\": 1}\n");
        }
        d.go_on_fresh("test".into()).unwrap();
        assert!(!earlier.contains(&d.path), "{:?}", d.path);
        for p in &earlier {
            assert_eq!(lines(p), ["{\"line\": 1}"], "{p:?}");
        }
    }
}
