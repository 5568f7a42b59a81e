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
    /// Whether the root is the kernel's procfs, where a kept handle fails by itself once
    /// its process is gone (`for_root`).
    procfs: bool,
}

impl Scratch {
    /// Buffers for reading under `root`, which may be the kernel's procfs or a copied tree.
    pub fn for_root(root: &Path) -> Self {
        Scratch {
            procfs: is_procfs(root),
            ..Scratch::default()
        }
    }

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
        // On procfs a kept stat handle belongs to its process, not to the number: once the
        // process is reaped (or the number is reused) reading it fails with ESRCH, and the
        // fresh open below says whether the number is anyone now. A copied tree's files
        // read on after their directory is gone, so only there is the directory checked:
        // a statx per process per sample was a quarter of the CPU at 1,000 processes
        // (perf, issue 25).
        if let Some(file) = kept
            && (self.procfs || self.dir.exists())
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

/// Whether `root` is a mount of the kernel's procfs (`PROC_SUPER_MAGIC`); false when it
/// cannot be told, so the directory is then checked.
fn is_procfs(root: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(root.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `path` is NUL-terminated and `fs` is a statfs-sized buffer the call fills.
    let ok = unsafe { libc::statfs(path.as_ptr(), fs.as_mut_ptr()) } == 0;
    // SAFETY: filled by the successful call (and zeroed before it in any case).
    ok && unsafe { fs.assume_init() }.f_type == libc::PROC_SUPER_MAGIC
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

    #[test]
    fn only_the_kernels_procfs_is_trusted_to_fail_once_a_process_is_gone() {
        assert!(is_procfs(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_procfs(dir.path()));
        assert!(!is_procfs(&dir.path().join("missing")));
    }

    /// A real process's kept handle, after the process is reaped: not read (on procfs the
    /// read fails), and the fresh open fails too, so the process is gone.
    #[test]
    fn a_reaped_processs_kept_handle_is_not_read_on_procfs() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut scratch = Scratch::for_root(Path::new("/proc"));
        assert!(scratch.procfs);
        scratch.set_dir(Path::new("/proc"), child.id());
        let kept = scratch.read_stat(None).unwrap();
        assert!(scratch.read_stat(Some(&kept)).is_ok(), "alive: read");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            scratch.read_stat(Some(&kept)).is_err(),
            "reaped, read as {:?}",
            String::from_utf8_lossy(&scratch.text)
        );
    }
}
