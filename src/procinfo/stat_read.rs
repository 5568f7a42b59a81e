//! Reading /proc/PID/stat for `ProcInfo::lookup`, for every GPU process every sample:
//! through the handle kept from the last sample, into a path and a buffer reused from one
//! process to the next (a path joined and a text allocated per process per sample were a
//! fifth of a lookup's instructions at 1,000 processes, issue 25). No parsing here
//! (`files::parse_stat`), no caching beyond the buffers.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The buffers of one lookup, kept for the next.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// /proc/PID of the process looked up (`set_dir`).
    pub dir: PathBuf,
    /// The bytes of its stat file (`read_stat`).
    pub text: Vec<u8>,
}

impl Scratch {
    /// Points `dir` at `root`/`pid`, as `root.join(pid.to_string())` would, without
    /// allocating once the buffer has grown to fit.
    pub fn set_dir(&mut self, root: &Path, pid: u32) {
        self.dir.clear();
        self.dir.push(root);
        let mut digits = [0u8; 10];
        self.dir.push(decimal(pid, &mut digits));
    }

    /// Reads `dir`/stat into `text`, through the handle kept from the last sample when it
    /// still reads, else freshly opened; returns the handle to keep.
    pub fn read_stat(&mut self, kept: Option<&Arc<File>>) -> io::Result<Arc<File>> {
        // The directory check is one cheap syscall; it keeps an exited process from being
        // read through its old handle wherever /proc entries do not fail once gone.
        if let Some(file) = kept
            && self.dir.exists()
            && read_small(file, &mut self.text)
        {
            return Ok(file.clone());
        }
        let file = Arc::new(File::open(self.dir.join("stat"))?);
        // One read: `read_to_end` probes and grows, three reads for a 300-byte file.
        if !read_small(&file, &mut self.text) {
            self.text.clear();
            (&*file).read_to_end(&mut self.text)?;
        }
        Ok(file)
    }
}

/// A small file read whole into `buf` in one `pread` from offset 0; false when it is empty,
/// does not fit 1 KiB or cannot be read (the caller reads it the long way).
fn read_small(file: &File, buf: &mut Vec<u8>) -> bool {
    buf.resize(1024, 0);
    match file.read_at(buf, 0) {
        Ok(n) if n > 0 && n < buf.len() => {
            buf.truncate(n);
            true
        }
        _ => false,
    }
}

/// `n` in decimal, written into the end of `buf`.
fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..]).expect("ASCII digits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dir_is_the_root_joined_with_the_pid() {
        let mut scratch = Scratch::default();
        for root in ["/proc", "/proc/", "fixture/proc", ""] {
            for pid in [0, 1, 7, 10, 4242, 99_999, u32::MAX] {
                scratch.set_dir(Path::new(root), pid);
                assert_eq!(scratch.dir, Path::new(root).join(pid.to_string()));
            }
        }
    }

    #[test]
    fn a_stat_file_is_read_whole_through_a_kept_handle_then_anew() {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("42");
        std::fs::create_dir(&proc_dir).unwrap();
        std::fs::write(proc_dir.join("stat"), "42 (a) S 1").unwrap();
        let mut scratch = Scratch::default();
        scratch.set_dir(dir.path(), 42);
        let kept = scratch.read_stat(None).unwrap();
        assert_eq!(scratch.text, b"42 (a) S 1");
        // Shorter now: the buffer holds the new text only.
        std::fs::write(proc_dir.join("stat"), "42 (b) R").unwrap();
        let again = scratch.read_stat(Some(&kept)).unwrap();
        assert!(Arc::ptr_eq(&kept, &again), "the kept handle is read");
        assert_eq!(scratch.text, b"42 (b) R");
        // Longer than one read takes: read to its end.
        let long = format!("42 ({}) S 1", "x".repeat(2000));
        std::fs::write(proc_dir.join("stat"), &long).unwrap();
        scratch.read_stat(Some(&kept)).unwrap();
        assert_eq!(scratch.text, long.as_bytes());
        // Gone: the old handle is not read.
        std::fs::remove_dir_all(&proc_dir).unwrap();
        assert!(scratch.read_stat(Some(&kept)).is_err());
    }
}
