//! Recordings: every sample as one JSON line (NDJSON) after a header line, written by
//! `--record FILE` in any mode and read back by `gpuwatch replay`. Owns the file format,
//! the writing wrapper around a source, and a reader that reports a bad line with its number
//! and skips it, so the rest still plays.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history::procs::{ProcHistories, ProcId};
use crate::source::{GpuSource, Sample, SourceError, wire};

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

    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms.max(1))
    }
}

/// A source that writes every sample it passes on to a recording file. With a size
/// limit, a full file is renamed to `FILE.1` (replacing an older one) and a new one begun.
pub struct RecordingSource {
    inner: Box<dyn GpuSource>,
    path: PathBuf,
    header: Header,
    max_bytes: Option<u64>,
    out: Option<(BufWriter<File>, u64)>,
    /// Each process's peak VRAM per GPU so far, for the lines' `peak_gpu_memory`.
    peaks: ProcHistories,
}

impl RecordingSource {
    /// Creates (or truncates) `path` and writes the header: fails early, before the UI
    /// starts, when the file cannot be written.
    pub fn new(
        inner: Box<dyn GpuSource>,
        path: &Path,
        interval: Duration,
        max_bytes: Option<u64>,
    ) -> Result<Self, String> {
        let mut rec = RecordingSource {
            inner,
            path: path.to_path_buf(),
            header: Header::new(interval),
            max_bytes,
            out: None,
            peaks: ProcHistories::default(),
        };
        rec.start_file()
            .map_err(|e| format!("cannot record to {}: {e}", path.display()))?;
        Ok(rec)
    }

    fn start_file(&mut self) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.path)?;
        let mut w = BufWriter::new(file);
        let line = serde_json::to_string(&self.header)? + "\n";
        w.write_all(line.as_bytes())?;
        w.flush()?;
        self.out = Some((w, line.len() as u64));
        Ok(())
    }

    fn write(&mut self, sample: &Sample) -> std::io::Result<()> {
        // One-point rings: only the peaks are wanted here, bounded like the UI's.
        self.peaks.record(sample.time, &sample.processes, 1);
        let peaks = &self.peaks;
        let line = wire::recorded_sample_line(sample, |p| {
            peaks.get(&ProcId::of(p)).and_then(|h| h.peak_on(&p.gpu))
        }) + "\n";
        let full = match (&self.out, self.max_bytes) {
            (Some((_, written)), Some(max)) => written + line.len() as u64 > max,
            _ => false,
        };
        if full || self.out.is_none() {
            if full {
                let mut rotated = self.path.clone().into_os_string();
                rotated.push(".1");
                std::fs::rename(&self.path, rotated)?;
            }
            self.start_file()?;
        }
        let (w, written) = self.out.as_mut().expect("a file was just started");
        w.write_all(line.as_bytes())?;
        // Flushed every sample: a recording must survive the program being killed.
        w.flush()?;
        *written += line.len() as u64;
        Ok(())
    }
}

impl GpuSource for RecordingSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let sample = self.inner.sample()?;
        if let Err(e) = self.write(&sample) {
            // The reading itself is fine; say the recording failed, and try again next tick.
            self.out = None;
            return Err(SourceError::Unavailable(format!(
                "recording to {} failed: {e}",
                self.path.display()
            )));
        }
        Ok(sample)
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
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(BufReader::new(file)).map_err(|e| format!("{}:{e}", path.display()))
}

/// Reads a recording from any reader; errors are `LINE: what` (the caller adds the file).
pub fn parse(reader: impl BufRead) -> Result<Recording, String> {
    let mut lines = reader.lines();
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

    #[test]
    fn what_is_recorded_reads_back_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec = RecordingSource::new(sim(), &path, Duration::from_secs(1), None).unwrap();
        let live: Vec<Sample> = (0..5).map(|_| rec.sample().unwrap()).collect();
        let back = read(&path).unwrap();
        assert_eq!(back.header.interval(), Duration::from_secs(1));
        assert_eq!(back.samples, live);
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
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap().replace(
            &format!("\"minor\":{}", crate::source::wire::SCHEMA_MINOR),
            "\"minor\":9,\"compression\":\"none\"",
        );
        let sample = lines
            .next()
            .unwrap()
            .replacen('{', "{\"from_2_9\":[1,2],", 1);
        let r = parse(format!("{header}\n{sample}\n").as_bytes()).unwrap();
        assert_eq!((r.header.minor, r.samples.len()), (9, 1));
        assert_eq!(r.samples[0], live);
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
    fn a_size_limit_rotates_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.ndjson");
        let mut rec =
            RecordingSource::new(sim(), &path, Duration::from_secs(1), Some(6_000)).unwrap();
        for _ in 0..10 {
            rec.sample().unwrap();
        }
        let rotated = dir.path().join("rec.ndjson.1");
        assert!(rotated.exists(), "the full file was kept as .1");
        let (a, b) = (read(&rotated).unwrap(), read(&path).unwrap());
        assert!(std::fs::metadata(&path).unwrap().len() <= 6_000);
        assert!(a.samples.len() + b.samples.len() <= 10 && !b.samples.is_empty());
    }
}
