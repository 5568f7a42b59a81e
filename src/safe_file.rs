//! Reading files someone else may have chosen (a config file, a hosts file, a recording)
//! without being made to wait or to fill memory: only regular files are read (`/dev/zero`,
//! `/dev/urandom` and FIFOs never end, and opening a FIFO blocks until a writer comes), and
//! text files only up to a size. Owns those checks; what the text means is the caller's.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The most a config or hosts file may hold: far beyond any real one (a few KiB), small
/// enough that parsing it costs little.
pub const MAX_TEXT_FILE: u64 = 1 << 20;

/// Opens `path` for reading, refusing anything but a regular file. The open itself is
/// non-blocking so a FIFO with no writer is refused instead of waiting forever; the flag
/// is cleared again before reading, since it means nothing for a regular file.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", describe(kind)),
        ));
    }
    Ok(file)
}

/// What a non-regular file is, in the words `ls -l` readers know.
pub fn describe(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// Reads a regular text file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    let file = open_regular(path)?;
    let mut text = String::new();
    // `take` as well as the size check: the file may grow between the two.
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("larger than {} (the limit for this file)", human(limit)),
        ));
    }
    Ok(text)
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_without_blocking() {
        let e = read_text(Path::new("/dev/zero"), MAX_TEXT_FILE).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a character device)");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, MAX_TEXT_FILE).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a FIFO)");
        let e = read_text(dir.path(), MAX_TEXT_FILE).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file (a directory)");
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'#'; 2049]).unwrap();
        let e = read_text(&path, 2048).unwrap_err();
        assert_eq!(e.to_string(), "larger than 2 KiB (the limit for this file)");
        std::fs::write(&path, vec![b'#'; 2048]).unwrap();
        assert_eq!(read_text(&path, 2048).unwrap(), "#".repeat(2048));
    }
}
