//! Recordings: every sample as one JSON line (NDJSON) after a header line, written by
//! `--record FILE` in any mode and read back by `gpuwatch replay`. Owns the file format,
//! the writing wrapper around a source, and a reader that reports a bad line with its number
//! and skips it, so the rest still plays.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history::procs::{ProcHistories, ProcId};
use crate::reading::Sample;
use crate::source::{GpuSource, SourceError};
use crate::wire;

mod open;
mod writer;
use writer::Writer;

/// The longest line a recording may hold; a longer one is skipped (a sample of 16 GPUs and
/// a thousand processes is a few hundred KiB).
pub const MAX_LINE: usize = 16 << 20;

/// Major version of the recording format this gpuwatch writes: the sample lines are
/// `source::wire`'s document, so it follows the schema's major version. Recordings of
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
        Duration::from_millis(self.interval_ms).max(crate::config::MIN_INTERVAL)
    }
}

/// A source that hands every sample it passes on to the recorder (`writer`), which writes it
/// on its own thread. With a size limit, a full file is renamed to `FILE.1` (replacing an
/// older one) and a new one begun.
pub struct RecordingSource {
    inner: Box<dyn GpuSource>,
    writer: Writer,
    /// Each process's peak VRAM per GPU so far, for the lines' `peak_gpu_memory`.
    peaks: ProcHistories,
}

impl RecordingSource {
    /// Opens `path` by the rules of `open` (a symbolic link, a FIFO, someone else's file are
    /// refused), empties it and writes the header: fails early, before the UI starts, when
    /// the file cannot be written.
    pub fn new(
        inner: Box<dyn GpuSource>,
        path: &Path,
        interval: Duration,
        max_bytes: Option<u64>,
    ) -> Result<Self, String> {
        let header = serde_json::to_string(&Header::new(interval)).expect("plain data") + "\n";
        let why = |e: std::io::Error| format!("cannot record to {}: {e}", path.display());
        let mut file = open::open_for_writing(path, open::Existing::Replace).map_err(why)?;
        file.write_all(header.as_bytes()).map_err(why)?;
        let written = header.len() as u64;
        Ok(RecordingSource {
            inner,
            writer: Writer::start(file, written, path, header, max_bytes),
            peaks: ProcHistories::default(),
        })
    }

    /// Samples dropped because the disk could not keep up.
    pub fn dropped(&self) -> u64 {
        self.writer.dropped()
    }

    /// Writes samples the view starts with before any sample of the source (the demo's
    /// back-filled history), so a replay of the file opens where the user's screen did.
    /// Called once before the UI starts: it waits for the disk rather than dropping, since
    /// these are hundreds of lines at once, more than the queue holds.
    pub fn record_earlier(&mut self, samples: &[Sample]) {
        for sample in samples {
            let line = self.line_for(sample);
            self.writer.push_waiting(line);
        }
    }

    /// The sample's line, with each process's peak VRAM so far.
    fn line_for(&mut self, sample: &Sample) -> String {
        // One-point rings: only the peaks are wanted here, bounded like the UI's.
        self.peaks.record(sample.time, &sample.processes, 1);
        let peaks = &self.peaks;
        wire::recorded_sample_line(sample, |p| {
            peaks.get(&ProcId::of(p)).and_then(|h| h.peak_on(&p.gpu))
        }) + "\n"
    }
}

impl GpuSource for RecordingSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let sample = self.inner.sample()?;
        let line = self.line_for(&sample);
        // Only serialising happens here; the disk is the recorder thread's.
        self.writer.push(line);
        Ok(sample)
    }

    fn notices(&mut self) -> Vec<String> {
        let mut out = self.inner.notices();
        out.extend(self.writer.notices());
        out
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

/// Reads a recording. A missing or foreign header is an error; a bad sample line is
/// skipped and reported; a file with no readable sample is an error.
pub fn read(path: &Path) -> Result<Recording, String> {
    let file =
        crate::safe_file::open_regular(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(BufReader::new(file)).map_err(|e| format!("{}:{e}", path.display()))
}

/// Reads a recording from any reader; errors are `LINE: what` (the caller adds the file).
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
    use crate::source::sim::{SimClock, SimSource};
    use std::time::SystemTime;

    fn sim() -> Box<dyn GpuSource> {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        Box::new(SimSource::new(
            2,
            42,
            Duration::from_secs(1),
            SimClock::Virtual { start },
        ))
    }

    fn without_peaks(mut samples: Vec<Sample>) -> Vec<Sample> {
        for p in samples.iter_mut().flat_map(|s| &mut s.processes) {
            p.peak_gpu_memory = None;
        }
        samples
    }

    #[test]
    fn what_is_recorded_reads_back_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec = RecordingSource::new(sim(), &path, Duration::from_secs(1), None).unwrap();
        let live: Vec<Sample> = (0..5).map(|_| rec.sample().unwrap()).collect();
        drop(rec); // waits for the recorder to write what is queued
        let back = read(&path).unwrap();
        assert_eq!(back.header.interval(), Duration::from_secs(1));
        // Read back, each process also has its peak so far, which the live one cannot say.
        for p in back.samples.iter().flat_map(|s| &s.processes) {
            assert!(p.peak_gpu_memory >= p.gpu_memory, "{p:?}");
        }
        assert_eq!(without_peaks(back.samples), live);
        assert!(back.skipped.is_empty());
    }

    #[test]
    fn bad_lines_are_skipped_with_their_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec = RecordingSource::new(sim(), &path, Duration::from_secs(1), None).unwrap();
        for _ in 0..3 {
            rec.sample().unwrap();
        }
        drop(rec);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[2] = "{\"time\": 12, \"garbage\"";
        let truncated = &lines[3][..lines[3].len() / 2];
        let broken = format!("{}\n{}\n{}\n{}\n", lines[0], lines[1], lines[2], truncated);
        let r = parse(broken.as_bytes()).unwrap();
        assert_eq!(r.samples.len(), 1);
        assert_eq!(
            r.skipped.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }

    #[test]
    fn not_a_recording_is_an_error_naming_the_line() {
        assert_eq!(
            parse("".as_bytes()).unwrap_err(),
            "1: empty file, not a gpuwatch recording"
        );
        assert!(
            parse("hello\n".as_bytes())
                .unwrap_err()
                .starts_with("1: not a gpuwatch recording header")
        );
        let v9 = "{\"gpuwatch_recording\":9,\"interval_ms\":1000,\"written_by\":\"x\"}\n{}\n";
        assert!(
            parse(v9.as_bytes())
                .unwrap_err()
                .contains("recording format version 9 is not one this gpuwatch reads")
        );
        let no_samples =
            "{\"gpuwatch_recording\":1,\"interval_ms\":1000,\"written_by\":\"x\"}\nnope\n";
        assert_eq!(
            parse(no_samples.as_bytes()).unwrap_err(),
            "2: no readable sample in the recording"
        );
    }

    #[test]
    fn a_higher_minor_and_unknown_fields_are_read_another_major_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec = RecordingSource::new(sim(), &path, Duration::from_secs(1), None).unwrap();
        let live = rec.sample().unwrap();
        drop(rec);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().replace(
            &format!("\"minor\":{}", crate::wire::SCHEMA_MINOR),
            "\"minor\":9,\"compression\":\"none\"",
        );
        let sample = lines
            .next()
            .unwrap()
            .replacen('{', "{\"from_2_9\":[1,2],", 1);
        let r = parse(format!("{header}\n{sample}\n").as_bytes()).unwrap();
        assert_eq!((r.header.minor, r.samples.len()), (9, 1));
        assert_eq!(without_peaks(r.samples)[0], live);
        let v3 = header.replace("\"gpuwatch_recording\":2", "\"gpuwatch_recording\":3");
        assert!(
            parse(format!("{v3}\n{sample}\n").as_bytes())
                .unwrap_err()
                .starts_with("1: recording format version 3 is not one this gpuwatch reads")
        );
    }

    #[test]
    fn each_line_carries_the_peak_vram_of_each_process_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec = RecordingSource::new(sim(), &path, Duration::from_secs(1), None).unwrap();
        for _ in 0..20 {
            rec.sample().unwrap();
        }
        drop(rec); // the recorder thread writes; closing waits for it
        let text = std::fs::read_to_string(&path).unwrap();
        let mut seen: std::collections::HashMap<(u64, String), u64> = Default::default();
        let mut below_peak = 0;
        for line in text.lines().skip(1) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for p in v["processes"].as_array().unwrap() {
                let key = (p["pid"].as_u64().unwrap(), p["gpu_uuid"].to_string());
                let used = p["used_gpu_memory"].as_u64().unwrap();
                let max = seen.entry(key).or_insert(0);
                *max = (*max).max(used);
                assert_eq!(p["peak_gpu_memory"].as_u64(), Some(*max), "{p}");
                below_peak += usize::from(used < *max);
            }
        }
        assert!(
            below_peak > 0,
            "the demo has a process that shrank; its peak stays"
        );
    }

    #[test]
    fn an_interval_of_zero_replays_at_the_minimum_interval() {
        let header = |ms: u64| Header {
            interval_ms: ms,
            ..Header::new(Duration::from_secs(1))
        };
        assert_eq!(header(0).interval(), crate::config::MIN_INTERVAL);
        assert_eq!(header(2000).interval(), Duration::from_secs(2));
    }

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

    #[test]
    fn a_size_limit_rotates_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec =
            RecordingSource::new(sim(), &path, Duration::from_secs(1), Some(6_000)).unwrap();
        for _ in 0..10 {
            rec.sample().unwrap();
        }
        drop(rec);
        let rotated = dir.path().join("rec.ndjson.1");
        assert!(rotated.exists(), "the full file was kept as .1");
        let (a, b) = (read(&rotated).unwrap(), read(&path).unwrap());
        assert!(std::fs::metadata(&path).unwrap().len() <= 6_000);
        assert!(a.samples.len() + b.samples.len() <= 10 && !b.samples.is_empty());
    }
}
