//! The recording file format, read back (`gpuwatch replay`, below the sources) and written
//! (`record`, the wrapper around a source): a header line, then every sample as one line of
//! the snapshot's shapes (`wire`, NDJSON). The reader reports a bad line with its number
//! and skips it, so the rest still plays. No file system here: `record::read` opens the file.

use std::io::{BufRead, Read};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::reading::{MIN_INTERVAL, Sample};
use crate::wire;

/// The longest line a recording may hold; a longer one is skipped (a sample of 16 GPUs and
/// a thousand processes is a few hundred KiB).
pub const MAX_LINE: usize = 16 << 20;

/// Major version of the recording format this gpuwatch writes: the sample lines are
/// `wire`'s document, so it follows the schema's major version. Recordings of
/// major 1 (before the wire module) are still read; any minor is read.
pub const RECORDING_VERSION: u32 = wire::SCHEMA_MAJOR;

/// The first line of every recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The major version: `RECORDING_VERSION` for files this gpuwatch writes.
    pub gpuwatch_recording: u32,
    /// The minor version (absent in major 1 files); read, never required.
    #[serde(default)]
    pub minor: u32,
    /// Time between samples when recorded, in milliseconds (replay ticks at this pace).
    pub interval_ms: u64,
    /// The gpuwatch version that wrote it, for humans.
    pub written_by: String,
}

impl Header {
    pub fn new(interval: Duration) -> Self {
        Header {
            gpuwatch_recording: RECORDING_VERSION,
            minor: wire::SCHEMA_MINOR,
            interval_ms: interval.as_millis() as u64,
            written_by: concat!("gpuwatch ", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }

    /// The pace to replay at, never below `--interval`'s minimum (`"interval_ms": 0` would
    /// otherwise spin a core).
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms).max(MIN_INTERVAL)
    }
}

/// A recording read into memory, with the lines that could not be read.
#[derive(Debug)]
pub struct Recording {
    pub header: Header,
    pub samples: Vec<Sample>,
    /// (1-based line number, what was wrong) for each skipped line.
    pub skipped: Vec<(usize, String)>,
}

/// Reads a recording from any reader (`record::read` opens the file): a missing or foreign
/// header is an error; a bad sample line is skipped and reported; no readable sample is an
/// error. Errors are `LINE: what` (the caller adds the file).
pub fn parse(mut reader: impl BufRead) -> Result<Recording, String> {
    let mut lines = std::iter::from_fn(move || bounded_line(&mut reader));
    let first = match lines.next() {
        Some(Ok(line)) => line,
        Some(Err(e)) => return Err(format!("1: {e}")),
        None => return Err("1: empty file, not a gpuwatch recording".into()),
    };
    let header: Header = serde_json::from_str(&first)
        .map_err(|e| format!("1: not a gpuwatch recording header: {e}"))?;
    if !wire::reads_major(header.gpuwatch_recording) {
        return Err(format!(
            "1: {}",
            wire::version_error("recording format", header.gpuwatch_recording)
        ));
    }
    let mut samples = Vec::new();
    let mut skipped = Vec::new();
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                skipped.push((number, e.to_string()));
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match wire::read_recorded_sample(header.gpuwatch_recording, &line) {
            Ok(s) => samples.push(s),
            Err(e) => skipped.push((number, e.to_string())),
        }
    }
    if samples.is_empty() {
        return Err(format!(
            "{}: no readable sample in the recording",
            skipped.first().map_or(2, |s| s.0)
        ));
    }
    Ok(Recording {
        header,
        samples,
        skipped,
    })
}

/// The next line (without its line break), never holding more than `MAX_LINE` bytes of
/// it: a longer line is read past and reported. `None` at the end.
fn bounded_line(reader: &mut impl BufRead) -> Option<std::io::Result<String>> {
    let mut buf = Vec::new();
    let read = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut buf);
    match read {
        Ok(0) => return None,
        Ok(_) => {}
        Err(e) => return Some(Err(e)),
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > MAX_LINE {
        // Read past the rest of it in bounded steps, keeping nothing.
        loop {
            match reader.fill_buf() {
                Ok([]) | Err(_) => break,
                Ok(chunk) => {
                    let (used, end) = match chunk.iter().position(|&b| b == b'\n') {
                        Some(i) => (i + 1, true),
                        None => (chunk.len(), false),
                    };
                    reader.consume(used);
                    if end {
                        break;
                    }
                }
            }
        }
        let why = format!("line longer than {} MiB", MAX_LINE >> 20);
        return Some(Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            why,
        )));
    }
    Some(String::from_utf8(buf).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_skipped_without_being_kept() {
        let good = "{\"gpuwatch_recording\":1,\"interval_ms\":1000,\"written_by\":\"x\"}";
        let long = "x".repeat(MAX_LINE + 10);
        let mut cursor = std::io::Cursor::new(format!("{good}\n{long}\nend\n"));
        assert_eq!(bounded_line(&mut cursor).unwrap().unwrap(), good);
        let e = bounded_line(&mut cursor).unwrap().unwrap_err();
        assert_eq!(e.to_string(), "line longer than 16 MiB");
        assert_eq!(bounded_line(&mut cursor).unwrap().unwrap(), "end");
        assert!(bounded_line(&mut cursor).is_none());
    }
}
