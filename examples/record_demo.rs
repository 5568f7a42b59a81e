//! Writes the demo recording shipped in tests/fixtures (and usable as a replay demo):
//! the simulated fleet on a virtual clock, so the file is the same every time. It writes
//! the current recording format; tests/fixtures/recording-v1.ndjson keeps a frozen copy in
//! format 1, which must keep replaying, so regenerating the demo file never loses that.
//!
//! cargo run --example record_demo [-- GPUS SECONDS INTERVAL_SECS OUT.ndjson]

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use gpuwatch::record::RecordingSource;
use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{SimClock, SimSource};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let gpus: usize = arg(0, "6").parse().expect("GPUS");
    let seconds: u64 = arg(1, "96").parse().expect("SECONDS");
    let step: u64 = arg(2, "2").parse().expect("INTERVAL_SECS");
    let out = PathBuf::from(arg(3, "tests/fixtures/demo-recording.ndjson"));
    let interval = Duration::from_secs(step);
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let sim = SimSource::new(gpus, 42, interval, SimClock::Virtual { start });
    let mut rec = RecordingSource::new(Box::new(sim), &out, interval, None).expect("writable");
    let samples = seconds / step;
    for _ in 0..samples {
        rec.sample().expect("the simulation never fails");
    }
    println!(
        "wrote {} ({gpus} GPUs, {samples} samples every {step} s)",
        out.display()
    );
}
