//! Opening a recording file for writing as root beside other users without being turned
//! against the system: the final component is never followed if it is a symbolic link
//! (`O_NOFOLLOW`), only a regular file of ours with one link that already is a gpuwatch
//! recording (its first line is a recording header) is reused, a new file is
//! created exclusively (`O_EXCL`) and private (0600: it holds other users' command lines),
//! and a directory others may write into is refused unless it is sticky (like /tmp), where
//! they could swap the file between two calls. Owns these rules; rotation uses them too
//! (an older segment is removed only when it is ours, a rename never replaces anything).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// How an existing file is taken over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// A new recording: an old file of ours is emptied (after every check, never through
    /// a link), as `--record` always did.
    Replace,
    /// Carrying on after an error (a full disk): appended to, never emptied.
    Append,
}

fn refuse(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}

/// The checks on the directory `path` is in.
fn check_directory(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(dir)?;
    let mode = meta.permissions().mode();
    // Writable by others (or by a group that is not ours) and not sticky: anyone there may
    // rename or replace the file under us.
    let others = mode & 0o002 != 0 || (mode & 0o020 != 0 && meta.gid() != effective_gid());
    if others && mode & 0o1000 == 0 {
        return Err(refuse(format!(
            "{} is writable by other users and not sticky: choose a private directory",
            dir.display()
        )));
    }
    Ok(())
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn effective_gid() -> u32 {
    // SAFETY: getegid has no preconditions.
    unsafe { libc::getegid() }
}

/// Opens `path` for writing by the rules above. The checks on an existing file are made on
/// the opened descriptor (`fstat`), so what is checked is what is written.
pub fn open_for_writing(path: &Path, existing: Existing) -> io::Result<File> {
    check_directory(path)?;
    let created = OpenOptions::new()
        .write(true)
        .append(existing == Existing::Append)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path);
    match created {
        Ok(file) => return Ok(file),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Said by name first; the checks on the descriptor below are what make it safe.
    let kind = std::fs::symlink_metadata(path)?.file_type();
    if kind.is_symlink() {
        return Err(refuse(
            "it is a symbolic link: refusing to follow it".into(),
        ));
    }
    if !kind.is_file() {
        return Err(refuse(format!(
            "not a regular file ({})",
            crate::safe_file::describe(kind)
        )));
    }
    // O_NONBLOCK: a FIFO swapped in meanwhile is refused (ENXIO), not waited on for a reader.
    // Read as well as write: the header is checked on this very descriptor.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .append(existing == Existing::Append)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("it is a symbolic link: refusing to follow it".into()),
            _ => e,
        })?;
    check_opened(&file)?;
    check_is_a_recording(&file)?;
    clear_nonblock(&file)?;
    if existing == Existing::Replace {
        file.set_len(0)?;
    }
    Ok(file)
}

/// Removes the older rotated segment before a full file takes its place: only a gpuwatch
/// recording of ours (the checks of a first open, made on the opened descriptor) is ever
/// removed. Anything else planted there — a link, a directory, a file of someone else's —
/// is left as it is and refused.
pub fn remove_old_segment(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    drop(open_for_writing(path, Existing::Append)?);
    std::fs::remove_file(path)
}

/// Renames `from` to `to` only where nothing is at `to` (`renameat2` with
/// `RENAME_NOREPLACE`): a name planted between the checks and the rename is never
/// replaced. On a file system without the flag, `to` is checked first (the directory rules
/// above keep other users from racing that).
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (from_c, to_c) = (c_path(from)?, c_path(to)?);
    // The system call itself: glibc's wrapper needs glibc 2.28, newer than the oldest
    // glibc the release binaries run on (scripts/glibc-max.sh).
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            std::fs::rename(from, to)
        }
        _ => Err(e),
    }
}

/// The checks on the opened descriptor: what is checked is what will be written.
fn check_opened(file: &File) -> io::Result<()> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refuse(format!(
            "not a regular file ({})",
            crate::safe_file::describe(meta.file_type())
        )));
    }
    if meta.uid() != effective_uid() {
        return Err(refuse(format!(
            "it belongs to uid {}, not to this user: refusing to write into it",
            meta.uid()
        )));
    }
    if meta.nlink() > 1 {
        return Err(refuse(format!(
            "it has {} hard links: refusing to write through them",
            meta.nlink()
        )));
    }
    Ok(())
}

/// The longest first line looked at: a header is under 200 bytes.
const HEADER_PEEK: usize = 4096;

/// Only a gpuwatch recording is ever emptied or added to: root's `--record /etc/passwd` (a
/// typo, or a path from a config file someone else wrote) once truncated the system's
/// password file. Anything else, an empty file included (an empty `/etc/cron.deny` means
/// something too), is refused by name.
fn check_is_a_recording(file: &File) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; HEADER_PEEK];
    let mut len = 0;
    while len < head.len() {
        match file.read_at(&mut head[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let first_line = head[..len]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let is_header = serde_json::from_slice::<crate::wire::recording::Header>(first_line).is_ok();
    if !is_header {
        let what = if len == 0 {
            "an empty file"
        } else {
            "its first line is not a recording header"
        };
        return Err(refuse(format!(
            "it exists and is not a gpuwatch recording ({what}): refusing to overwrite it; \
             choose a new file name"
        )));
    }
    Ok(())
}

fn clear_nonblock(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_symlink_is_never_followed_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.path().join("rec.ndjson");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = open_for_writing(&link, Existing::Replace).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a symbolic link: refusing to follow it"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn new_files_are_private_and_append_never_empties() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let header = serde_json::to_string(&crate::wire::recording::Header::new(
            std::time::Duration::from_secs(1),
        ))
        .unwrap();
        let mut f = open_for_writing(&path, Existing::Replace).unwrap();
        writeln!(f, "{header}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mut f = open_for_writing(&path, Existing::Append).unwrap();
        f.write_all(b"two\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{header}\ntwo\n")
        );
        open_for_writing(&path, Existing::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }

    #[test]
    fn only_a_gpuwatch_recording_is_ever_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        std::fs::write(&passwd, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        let empty = dir.path().join("cron.deny");
        std::fs::write(&empty, "").unwrap();
        for (path, what) in [
            (&passwd, "its first line is not a recording header"),
            (&empty, "an empty file"),
        ] {
            for existing in [Existing::Replace, Existing::Append] {
                let e = open_for_writing(path, existing).unwrap_err();
                assert_eq!(
                    e.to_string(),
                    format!(
                        "it exists and is not a gpuwatch recording ({what}): refusing to \
                         overwrite it; choose a new file name"
                    )
                );
            }
        }
        assert_eq!(
            std::fs::read_to_string(&passwd).unwrap(),
            "root:x:0:0:root:/root:/bin/bash\n"
        );
        // A recording of ours is taken over as before.
        let rec = dir.path().join("rec.ndjson");
        let header = serde_json::to_string(&crate::wire::recording::Header::new(
            std::time::Duration::from_secs(1),
        ))
        .unwrap();
        std::fs::write(&rec, format!("{header}\n{{}}\n")).unwrap();
        open_for_writing(&rec, Existing::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&rec).unwrap(), "");
    }

    #[test]
    fn hard_links_and_open_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other");
        std::fs::write(&other, "x").unwrap();
        let path = dir.path().join("rec.ndjson");
        std::fs::hard_link(&other, &path).unwrap();
        let e = open_for_writing(&path, Existing::Replace).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it has 2 hard links: refusing to write through them"
        );
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = open_for_writing(&open.join("r"), Existing::Replace).unwrap_err();
        assert!(
            e.to_string()
                .contains("is writable by other users and not sticky")
        );
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        open_for_writing(&open.join("r"), Existing::Replace).unwrap();
    }
}
