//! Record and replay: the shipped demo recording plays through the same pipeline and the
//! same warnings fire as they did live; a damaged recording still plays, with the bad
//! lines reported by number; the replay TUI pauses, seeks and changes speed.

use crate::common;

use std::path::Path;
use std::time::Duration;

use gpuwatch::model::warnings::Severity;
use gpuwatch::record;
use gpuwatch::source::GpuSource;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::state::{Msg, State, update};
use gpuwatch::wire::WarningCode::{self, OomRisk, Overheating, StaleVram, Xid};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/demo-recording.ndjson"
);
/// A frozen copy of the demo recording in format 1 (before the wire module), which must
/// keep replaying whatever the demo fixture becomes.
const V1_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/recording-v1.ndjson"
);

/// (GPU, kind, severity) of every warning raised while playing the whole recording.
fn warnings_fired(path: &Path) -> Vec<(u32, WarningCode, Severity)> {
    let recording = record::read(path).unwrap();
    let n = recording.samples.len();
    let (mut source, _control) = ReplaySource::new(recording);
    let mut state = State::new(common::config());
    let mut fired = Vec::new();
    for _ in 0..n {
        update(&mut state, Msg::Sample(Box::new(source.sample().unwrap())));
        for w in state.model.warnings() {
            let kind = w.kind.code();
            let gpu = w
                .gpu_index()
                .expect("a recording of one host warns about GPUs");
            if !fired.contains(&(gpu, kind, w.severity)) {
                fired.push((gpu, kind, w.severity));
            }
        }
    }
    fired
}

/// What the demo fleet (6 GPUs, seed 42, 2 s, 96 s) fires, sorted.
const DEMO_WARNINGS: [(u32, WarningCode, Severity); 6] = [
    (1, Xid, Severity::Critical),
    (2, OomRisk, Severity::Warning),
    (2, OomRisk, Severity::Critical),
    (3, Overheating, Severity::Warning),
    (3, Overheating, Severity::Critical),
    (5, StaleVram, Severity::Warning),
];

fn sorted_warnings(path: &Path) -> Vec<(u32, WarningCode, Severity)> {
    let mut fired = warnings_fired(path);
    fired.sort_by_key(|w| (w.0, w.1, w.2));
    fired
}

#[test]
fn the_demo_recording_fires_the_warnings_it_fired_live() {
    assert_eq!(sorted_warnings(Path::new(FIXTURE)), DEMO_WARNINGS);
}

#[test]
fn a_version_1_recording_still_replays_with_the_same_warnings() {
    let v1 = record::read(Path::new(V1_FIXTURE)).unwrap();
    assert_eq!(v1.header.gpuwatch_recording, 1);
    assert!(v1.skipped.is_empty(), "{:?}", v1.skipped);
    // Format 1 had no health readings: all but the demo's XID (the first entry).
    assert_eq!(sorted_warnings(Path::new(V1_FIXTURE)), DEMO_WARNINGS[1..]);
}

#[test]
fn a_recording_written_today_replays_like_the_version_1_one() {
    // The same simulation `record_demo` records, written in the current format.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo-now.ndjson");
    let interval = Duration::from_secs(2);
    let start = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let sim = gpuwatch::source::sim::SimSource::new(
        6,
        42,
        interval,
        gpuwatch::source::sim::SimClock::Virtual { start },
    );
    let mut rec = record::RecordingSource::new(Box::new(sim), &path, interval, None).unwrap();
    for _ in 0..48 {
        rec.sample().unwrap();
    }
    drop(rec); // the recorder writes on its own thread; dropping waits for it
    let now = record::read(&path).unwrap();
    assert_eq!(now.header.gpuwatch_recording, record::RECORDING_VERSION);
    let first = std::fs::read_to_string(&path).unwrap();
    assert!(
        first.lines().nth(1).unwrap().contains("\"uuid\":"),
        "the wire shape"
    );
    // The v1 copy was recorded before the demo gained its workloads and pile-up; the demo
    // fixture is the same simulation as today's, so today's format reads back exactly it.
    let fixture = record::read(Path::new(FIXTURE)).unwrap();
    assert_eq!(
        now.samples, fixture.samples,
        "the format reads back what it wrote"
    );
    assert_eq!(sorted_warnings(&path), DEMO_WARNINGS);
    // And a v1 recording's samples, written again today, read back the same.
    let v1 = record::read(Path::new(V1_FIXTURE)).unwrap();
    let want = v1.samples.clone();
    let again = dir.path().join("v1-now.ndjson");
    let (replayed, _control) = ReplaySource::new(v1);
    let mut rec = record::RecordingSource::new(Box::new(replayed), &again, interval, None).unwrap();
    for _ in 0..want.len() {
        rec.sample().unwrap();
    }
    drop(rec);
    assert_eq!(without_peaks(record::read(&again).unwrap().samples), want);
}

/// The samples as a live source gives them: a recording's lines also say each process's
/// peak so far, which only a source with a past knows.
fn without_peaks(mut samples: Vec<gpuwatch::reading::Sample>) -> Vec<gpuwatch::reading::Sample> {
    for p in samples.iter_mut().flat_map(|s| &mut s.processes) {
        p.peak_gpu_memory = None;
    }
    samples
}

#[test]
fn replay_matches_the_live_run_sample_for_sample() {
    // The fixture holds the samples `cargo run --example record_demo` writes (it was
    // written in format 1; the example now writes the current format, with the same
    // samples): the same simulation, replayed, gives the same state as running it live.
    let recording = record::read(Path::new(FIXTURE)).unwrap();
    assert_eq!(recording.header.interval(), Duration::from_secs(2));
    let start = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let mut live = gpuwatch::source::sim::SimSource::new(
        6,
        42,
        Duration::from_secs(2),
        gpuwatch::source::sim::SimClock::Virtual { start },
    );
    for recorded in without_peaks(recording.samples) {
        assert_eq!(live.sample().unwrap(), recorded);
    }
}

#[test]
fn a_damaged_recording_plays_and_names_the_bad_lines() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[5] = lines[5][..lines[5].len() / 3].to_string(); // truncated mid-sample
    lines[9] = "this is not json".into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.ndjson");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let r = record::read(&path).unwrap();
    assert_eq!(
        r.skipped.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![6, 10]
    );
    assert_eq!(r.samples.len(), lines.len() - 3);
    // The warnings still fire from what is left.
    assert!(warnings_fired(&path).contains(&(3, Overheating, Severity::Critical)));
}

#[test]
fn replaying_something_else_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello\n").unwrap();
    let out = common::clean_command()
        .args(["replay"])
        .arg(&path)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(&format!(
            "gpuwatch: {}:1: not a gpuwatch recording header",
            path.display()
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn record_then_replay_headless() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ndjson");
    common::clean_command()
        .args(["--demo", "--once", "--record"])
        .arg(&path)
        .assert()
        .success();
    // (What it holds: `recording_the_demo_keeps_the_history_it_opened_with`.)
    // The recording plays back as a source: --once (implied off a terminal) shows it.
    let out = common::clean_command()
        .arg("replay")
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("demo-gpu-server")
    );
}

#[test]
fn replay_keys_in_a_real_terminal() {
    let Some(t) = common::tmux::Tmux::start("replay", 120, 40) else {
        return;
    };
    t.send(&[
        &format!("{} replay {FIXTURE}", env!("CARGO_BIN_EXE_gpuwatch")),
        "Enter",
    ]);
    t.wait_for("REPLAY 1×", Duration::from_secs(10));
    t.send(&["+"]);
    t.wait_for("REPLAY 2×", Duration::from_secs(10));
    t.send(&["p"]);
    let before = percent(&t.wait_for("% paused", Duration::from_secs(10)));
    t.send(&["Right"]);
    // 30 s of a 2 s recording is 15 samples, 31 % of 48; it lands on the next tick.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = percent(&t.capture());
        if now >= before + 25 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no jump: {before}% → {now}%"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.send(&["q"]);
    t.wait_restored();
}

/// The N of "REPLAY 2× N%" in the header.
fn percent(screen: &str) -> usize {
    let at = screen.find("× ").expect("a replay header") + "× ".len();
    screen[at..]
        .split('%')
        .next()
        .unwrap()
        .trim()
        .parse()
        .expect("a percentage")
}

#[test]
fn recording_the_demo_keeps_the_history_it_opened_with() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.ndjson");
    common::clean_command()
        .args(["--demo", "--once", "--record"])
        .arg(&file)
        .assert()
        .success();
    let recording = record::read(&file).unwrap();
    // The back-fill (hundreds of samples, oldest first) and then the one live sample.
    let times: Vec<_> = recording.samples.iter().map(|s| s.time).collect();
    assert!(times.len() > 300, "{} samples recorded", times.len());
    assert!(times.windows(2).all(|w| w[0] < w[1]), "in time order");
    // Played back, it raises what the demo opened with, time-based ones included.
    let kinds: std::collections::BTreeSet<_> =
        warnings_fired(&file).into_iter().map(|w| w.1).collect();
    for kind in [
        OomRisk,
        Overheating,
        WarningCode::IdleHolder,
        StaleVram,
        Xid,
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
}

#[test]
fn a_replay_shows_the_recorded_peak_even_when_it_was_reached_before_the_file_began() {
    // A rotated recording's second file, or a replay that skipped ahead: the peak a line
    // carries is older than anything the replay has seen.
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut first: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    let proc = &mut first["processes"][0];
    let pid = proc["pid"].as_u64().unwrap();
    let used = proc["used_gpu_memory"].as_u64().unwrap();
    let earlier_peak = used + 7 * 1024 * 1024 * 1024;
    proc["peak_gpu_memory"] = earlier_peak.into();
    lines[1] = first.to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("second-part.ndjson");
    std::fs::write(&file, lines[..2].join("\n") + "\n").unwrap();
    let out = common::clean_command()
        .arg("replay")
        .arg(&file)
        .args(["--once", "--json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let shown = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_u64() == Some(pid))
        .unwrap();
    assert_eq!(shown["used_gpu_memory"].as_u64(), Some(used));
    assert_eq!(
        shown["peak_gpu_memory"].as_u64(),
        Some(earlier_peak),
        "{shown}"
    );
}
