//! Robustness (issue 6): what must never take gpuwatch down or leave a terminal broken.
//! Owns these tests only: terminal restore gaps not covered by `tmux_e2e.rs` (SIGINT from
//! outside, mouse mode after a panic, resizing down to 20x5 and back), NVML faults against
//! the fake library (every query NOT_SUPPORTED, a process list that grows between NVML's
//! size and fill calls, PIDs that exit between calls, a GPU lost and back through the whole
//! pipeline), and a simulated day through `update` with bounded memory.
//! No timed assertions: every wait is "until it shows, or fail after a generous timeout".

use crate::common;

use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use common::tmux::Tmux;
use gpuwatch::model::warnings::WarningKind;
use gpuwatch::procinfo::ProcInfo;
use gpuwatch::reading::{GpuId, GpuStatus, HostProc, ProcReading, Sample};
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use gpuwatch::state::{Action, Msg, State, update};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// A real terminal
// ---------------------------------------------------------------------------------------

/// tmux_e2e.rs resizes to 40x10 once; this goes down to 20x5 (too small even for the whole
/// "too small" sentence), bounces through sizes without waiting (a burst of resize events,
/// as dragging a split does), and comes back to a normal frame with the app still running.
#[test]
fn resizing_down_to_20x5_and_back_up_keeps_running() {
    let Some(t) = Tmux::start("resize-tiny", 120, 40) else {
        return;
    };
    t.launch_demo("");
    t.resize(20, 5);
    let screen = t.wait_for("too small", Duration::from_secs(10));
    assert_eq!(
        t.display("#{alternate_on}"),
        "1",
        "still running:\n{screen}"
    );
    for (w, h) in [(200, 60), (21, 6), (59, 14), (60, 15), (20, 5), (80, 24)] {
        t.resize(w, h);
    }
    t.resize(120, 40);
    t.wait_for("Processes (", Duration::from_secs(10));
    // A sample after the bounce still lands: the loop did not stall on the resize burst.
    let clock = |s: &str| s.lines().next().unwrap_or("").to_string();
    let before = clock(&t.capture());
    let start = Instant::now();
    while clock(&t.capture()) == before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the header clock stopped after resizing:\n{}",
            t.capture()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t.send(&["q"]);
    t.wait_restored();
    t.exit_status_is(0);
}

/// Ctrl-C typed in the pane is a key in raw mode (tmux_e2e covers it); SIGINT sent from
/// outside (`kill -INT`, a supervisor, `timeout -s INT`) takes the signal path instead.
#[test]
fn sigint_from_outside_restores_the_terminal_and_exits_130() {
    let Some(t) = Tmux::start("sigint", 100, 30) else {
        return;
    };
    t.launch_demo("");
    t.signal_child("INT");
    t.wait_restored();
    t.exit_status_is(130);
}

/// Ctrl-C typed in the pane quits cleanly (tmux_e2e checks the restore, not the status).
#[test]
fn ctrl_c_typed_in_the_pane_exits_cleanly() {
    let Some(t) = Tmux::start("ctrl-c", 100, 30) else {
        return;
    };
    t.launch_demo("");
    t.send(&["C-c"]);
    t.wait_restored();
    t.send(&["echo exit=$?", "Enter"]);
    let screen = t.wait_for("exit=", Duration::from_secs(10));
    assert!(
        screen.contains("exit=0") || screen.contains("exit=130"),
        "Ctrl-C is a normal quit (0) or an interrupt (130):\n{screen}"
    );
}

/// With `--mouse`, a panic must also switch mouse reporting off, or every later click in
/// the shell prints escape codes.
#[test]
fn panic_with_mouse_on_turns_mouse_reporting_off() {
    let Some(t) = Tmux::start("panic-mouse", 100, 30) else {
        return;
    };
    let cmd = format!(
        "{} --demo --mouse --debug-panic-after 2",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    t.send(&[&cmd, "Enter"]);
    t.wait_restored();
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "mouse reporting off");
    t.exit_status_is(101);
}

#[test]
fn quitting_with_mouse_on_turns_mouse_reporting_off() {
    let Some(t) = Tmux::start("quit-mouse", 100, 30) else {
        return;
    };
    t.launch_demo("--mouse");
    assert_eq!(t.display("#{mouse_any_flag}"), "1", "mouse reporting on");
    t.send(&["q"]);
    t.wait_restored();
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "mouse reporting off");
}

// ---------------------------------------------------------------------------------------
// NVML faults, against the fake library
// ---------------------------------------------------------------------------------------

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/robustness/faults.json"
);
/// Far above any pid_max: never a process in this PID namespace.
const FOREIGN_PID: u32 = 3_900_000;

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap()
}

/// A scenario in a temp folder with a private copy of the fake beside it (its own state,
/// so these tests run in parallel with each other and with nvml_fake.rs).
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(scenario: &Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("scenario.json"),
            serde_json::to_string_pretty(scenario).unwrap(),
        )
        .unwrap();
        Fake { dir }
    }

    fn open(&self) -> NvmlSource {
        let lib = self.dir.path().join("libnvidia-ml.so.1");
        std::fs::copy(common::fake_lib(), &lib).unwrap();
        NvmlSource::open(Some(&lib)).expect("the fake NVML opens")
    }

    /// The binary on this scenario's fake NVML.
    fn command(&self) -> assert_cmd::Command {
        let mut cmd = common::clean_command();
        cmd.env(
            "GPUWATCH_FAKE_NVML_SCENARIO",
            self.dir.path().join("scenario.json"),
        )
        .arg("--nvml-lib")
        .arg(common::fake_lib());
        cmd
    }

    fn once(&self, json: bool) -> std::process::Output {
        let mut cmd = self.command();
        cmd.arg("--once");
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    }
}

struct Sleeper(Child);

impl Sleeper {
    fn start() -> Self {
        Sleeper(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("spawn sleep"),
        )
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
    /// Ends the process and reaps it, so its PID leaves /proc.
    fn exit(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.exit();
    }
}

fn sample(src: &mut NvmlSource) -> Sample {
    src.sample()
        .expect("a fault on one GPU or process never fails the whole sample")
}

fn on_gpu(s: &Sample, gpu: usize) -> Vec<&ProcReading> {
    s.processes
        .iter()
        .filter(|p| p.gpu == s.gpus[gpu].id)
        .collect()
}

/// Feeds samples through `update` and draws each at 120x40: the whole pipeline, not just
/// the source, must take the fault. Returns the state and the last frame's text.
fn through_the_pipeline(samples: &[Sample]) -> (State, String) {
    let mut state = State::new(common::config());
    update(
        &mut state,
        Msg::Resize {
            width: 120,
            height: 40,
        },
    );
    let mut frame = String::new();
    for s in samples {
        update(&mut state, Msg::Sample(Box::new(s.clone())));
        frame = common::screen(&state, 120, 40);
    }
    (state, frame)
}

/// A board that refuses everything — name, UUID, PCI info, every reading, both process
/// lists, utilization samples — still gets a slot (by index), N/A everywhere, in the
/// source, the TUI frame, and both `--once` outputs.
#[test]
fn a_gpu_that_answers_not_supported_to_everything_is_shown_as_na() {
    let mut s = fixture();
    s["gpus"][1]["all_not_supported"] = json!(true);
    let fake = Fake::new(&s);
    let mut src = fake.open();
    let samples: Vec<Sample> = (0..3).map(|_| sample(&mut src)).collect();
    for smp in &samples {
        let g = &smp.gpus[1];
        assert_eq!(
            g.status,
            GpuStatus::Ok,
            "answering NOT_SUPPORTED is not lost"
        );
        assert_eq!(
            g.id,
            GpuId::without_uuid("nvml", 1),
            "no UUID: a stand-in that says so"
        );
        assert_eq!(g.id.uuid(), None, "the stand-in is not a UUID");
        let absent = gpuwatch::reading::GpuReading {
            status: GpuStatus::Ok,
            // Which source read it is known even when the GPU answers nothing.
            vendor: Some(gpuwatch::reading::Vendor::Nvidia),
            ..gpuwatch::reading::GpuReading::absent(g.id.clone(), 1, g.name.clone())
        };
        assert_eq!(g, &absent, "every reading absent, none zero");
        assert!(on_gpu(smp, 1).is_empty());
        assert_eq!(
            smp.gpus[0].util.map(|u| u.0),
            Some(37),
            "the other GPU reads"
        );
    }
    let (state, frame) = through_the_pipeline(&samples);
    assert_eq!(state.model.history_count(), 2);
    assert!(frame.contains("N/A"), "{frame}");
    assert!(frame.contains("NVIDIA H100"), "{frame}");

    let out = fake.once(true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "utilization_gpu",
        "memory_used",
        "temperature_gpu",
        "power_draw",
        "fan_speed",
        "pstate",
    ] {
        // Present and null: absent from the document would be a different promise.
        assert_eq!(doc["gpus"][1].get(key), Some(&Value::Null), "gpus[1].{key}");
    }
    // The document's id is the stand-in, which no real GPU's UUID can equal.
    assert_eq!(doc["gpus"][1]["uuid"], json!("no-uuid:nvml/1"));
    assert!(doc["gpus"][0]["uuid"].as_str().unwrap().starts_with("GPU-"));
    // nvidia-smi's interface never passes the stand-in off as a UUID.
    let out = fake
        .command()
        .args(["query", "--query-gpu=index,uuid", "--format=csv,noheader"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("0, GPU-"), "{text}");
    assert_eq!(lines[1], "1, [N/A]", "{text}");
    let out = fake.command().arg("-L").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("GPU 1: NVIDIA GPU (UUID: N/A)"), "{text}");
    let out = fake.once(false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("N/A"));
}

/// NVML lists processes in two calls; nvml-wrapper leaves room for 5 more in between. A
/// list that grows by 2 fits; one that grows by 8 answers INSUFFICIENT_SIZE, and without a
/// retry the GPU would show no processes at all for that interval.
#[test]
fn a_process_list_that_grows_between_the_size_and_fill_calls_is_read_whole() {
    let steady = Sleeper::start();
    let joiners = |first: u32, n: u32| -> Vec<Value> {
        (first..first + n)
            .map(|pid| json!({"pid": pid, "used_memory": 1024, "from_tick": 1, "between_calls": true}))
            .collect()
    };
    let mut s = fixture();
    let mut small = vec![json!({"pid": steady.pid(), "used_memory": 4096})];
    small.extend(joiners(FOREIGN_PID, 2));
    let mut burst = vec![json!({"pid": steady.pid(), "used_memory": 4096})];
    burst.extend(joiners(FOREIGN_PID + 100, 8));
    s["gpus"][0]["processes"] = json!(small);
    s["gpus"][1]["processes"] = json!(burst);
    let mut src = Fake::new(&s).open();

    let t0 = sample(&mut src);
    assert_eq!((on_gpu(&t0, 0).len(), on_gpu(&t0, 1).len()), (1, 1));
    let t1 = sample(&mut src);
    assert_eq!(
        on_gpu(&t1, 0).len(),
        3,
        "grew by 2: within nvml-wrapper's headroom"
    );
    assert_eq!(
        on_gpu(&t1, 1).len(),
        9,
        "grew by 8 between the calls: every process still listed"
    );
    let t2 = sample(&mut src);
    assert_eq!((on_gpu(&t2, 0).len(), on_gpu(&t2, 1).len()), (3, 9));
    let (state, frame) = through_the_pipeline(&[t0, t1, t2]);
    assert_eq!(state.model.procs().all.len(), 12);
    assert!(frame.contains("Processes (12)"), "{frame}");
}

/// Processes that exit while gpuwatch looks at them: one between NVML's size and fill
/// calls (the list shrinks under us), one that NVML still lists after it is gone from
/// /proc (the driver lags the kernel). Neither is fatal; the row is kept, never dropped
/// silently, while NVML lists it, and disappears when NVML stops listing it.
#[test]
fn pids_that_exit_between_calls_are_not_fatal() {
    let stays = Sleeper::start();
    let mut lags = Sleeper::start();
    let shrinks = Sleeper::start();
    let mut s = fixture();
    s["gpus"][0]["processes"] = json!([
        {"pid": stays.pid(), "used_memory": 1024},
        {"pid": lags.pid(), "used_memory": 2048, "until_tick": 3},
        {"pid": shrinks.pid(), "used_memory": 4096, "until_tick": 2, "between_calls": true},
    ]);
    let mut src = Fake::new(&s).open();
    let host_of = |smp: &Sample, pid: u32| {
        smp.processes
            .iter()
            .find(|p| p.pid == pid)
            .map(|p| p.host.clone())
    };

    let t0 = sample(&mut src);
    assert_eq!(on_gpu(&t0, 0).len(), 3);
    assert!(matches!(
        host_of(&t0, lags.pid()),
        Some(HostProc::Visible(_))
    ));
    lags.exit();
    let t1 = sample(&mut src);
    assert_eq!(
        on_gpu(&t1, 0).len(),
        3,
        "NVML still lists the exited PID: kept"
    );
    assert_eq!(
        host_of(&t1, lags.pid()),
        Some(HostProc::Exited),
        "gone from /proc after being seen: shown as exited, no stale user or command"
    );
    let t2 = sample(&mut src);
    assert_eq!(
        host_of(&t2, shrinks.pid()),
        None,
        "exited between the calls"
    );
    assert_eq!(on_gpu(&t2, 0).len(), 2);
    let t3 = sample(&mut src);
    assert_eq!(on_gpu(&t3, 0).len(), 1);
    assert!(matches!(
        host_of(&t3, stays.pid()),
        Some(HostProc::Visible(_))
    ));
    let (state, frame) = through_the_pipeline(&[t0, t1, t2, t3]);
    assert_eq!(state.model.procs().all.len(), 1);
    assert!(frame.contains(&stays.pid().to_string()), "{frame}");
}

/// nvml_fake.rs checks the source marks a GPU lost and back; this follows it through
/// `update`: a critical "lost" warning while lost, cleared when it answers again, its
/// history kept (with gaps) under the same UUID.
#[test]
fn a_gpu_lost_mid_run_and_back_warns_then_clears_through_the_pipeline() {
    let mut s = fixture();
    s["gpus"][1]["lost_ticks"] = json!([2, 3]);
    let mut src = Fake::new(&s).open();
    let samples: Vec<Sample> = (0..5).map(|_| sample(&mut src)).collect();
    let lost = |state: &State| {
        state
            .model
            .warnings()
            .iter()
            .any(|w| w.kind == WarningKind::Lost && w.gpu_index() == Some(1))
    };
    let (state, frame) = through_the_pipeline(&samples[..3]);
    assert!(lost(&state), "lost at tick 2");
    assert!(frame.contains("lost"), "{frame}");
    let (state, _) = through_the_pipeline(&samples);
    assert!(!lost(&state), "answering again at tick 4");
    assert_eq!(state.model.history_count(), 2);
    let t4 = state.model.history(&samples[4].gpus[1].id).unwrap();
    assert_eq!(t4.points().len(), 5, "one history across the loss");
    let temps: Vec<Option<f64>> = t4
        .points()
        .iter()
        .map(|p| p.get(gpuwatch::reading::fields::Key::Temperature))
        .collect();
    assert_eq!(&temps[2..4], &[None, None], "the loss is a gap, not zeros");
}

// ---------------------------------------------------------------------------------------
// A long run: memory bounded by the fleet, not by uptime or PIDs ever seen
// ---------------------------------------------------------------------------------------

/// A simulated day at the default 1 s interval: 86,400 samples, about 11 s in a debug
/// build on a 2-core machine (about 5 s in all with a 2 s interval, if CI ever needs it).
const DAY: Duration = Duration::from_secs(24 * 3600);
const INTERVAL: Duration = Duration::from_secs(1);
const GPUS: usize = 8;
/// New processes every this many samples (every 5 s).
const CHURN_EVERY: u64 = 5;

/// Every CHURN_EVERY samples all processes are replaced by new ones (new PIDs, new start
/// times, a rotating cast of users), and every 6 hours GPU 7 is swapped for a new board.
fn churn(sample: &mut Sample, n: u64) {
    let generation = n / CHURN_EVERY;
    for p in &mut sample.processes {
        p.pid = p.pid.wrapping_add((generation as u32).wrapping_mul(7919)) % 4_000_000;
        if let HostProc::Visible(d) = &mut p.host {
            d.started = sample.time - Duration::from_secs(n % CHURN_EVERY);
            d.user = format!("{}{}", d.user, generation % 50).into();
        }
    }
    let board = n * INTERVAL.as_secs() / (6 * 3600);
    let old = sample.gpus[7].id.clone();
    let new = GpuId(format!("{}-board{board}", old.0));
    sample.gpus[7].id = new.clone();
    for p in sample.processes.iter_mut().filter(|p| p.gpu == old) {
        p.gpu = new.clone();
    }
}

/// Everything `State` holds, sized through its Debug form (which includes the private
/// alarms map): a collection that grew with time would grow this.
fn state_footprint(state: &State) -> usize {
    format!("{state:?}").len()
}

#[test]
fn a_simulated_day_with_process_churn_keeps_memory_bounded() {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let mut sim = gpuwatch::source::sim::SimSource::new(
        GPUS,
        42,
        INTERVAL,
        gpuwatch::source::sim::SimClock::Virtual { start },
    );
    let mut state = State::new(common::config());
    update(
        &mut state,
        Msg::Resize {
            width: 120,
            height: 40,
        },
    );
    let history_len = state.config.history_len;
    let samples = DAY.as_secs() / INTERVAL.as_secs();
    let (mut max_procs, mut max_warnings, mut footprint_at_hour) = (0, 0, 0);
    let mut max_footprint = 0;
    let began = Instant::now();
    for n in 0..samples {
        let mut s = sim.sample().expect("the simulation never fails");
        churn(&mut s, n);
        max_procs = max_procs.max(s.processes.len());
        update(&mut state, Msg::Sample(Box::new(s)));
        if n % 997 == 0 {
            // Keep a selection alive across churn, as someone browsing the table would.
            update(&mut state, Msg::Action(Action::SelectDown));
        }
        max_warnings = max_warnings.max(state.model.warnings().len());
        assert!(
            state.model.history_count() <= GPUS,
            "histories: {}",
            state.model.history_count()
        );
        assert!(state.model.procs().all.len() <= max_procs);
        if n % 7200 == 3600 {
            // Every two simulated hours: measure everything the state holds.
            let f = state_footprint(&state);
            if footprint_at_hour == 0 {
                footprint_at_hour = f;
            }
            max_footprint = max_footprint.max(f);
        }
    }
    eprintln!(
        "simulated day: {samples} samples in {:?} (debug build), {max_procs} processes per \
         sample, footprint {footprint_at_hour} → max {max_footprint} bytes of Debug text",
        began.elapsed()
    );
    assert_eq!(
        state.model.history_count(),
        GPUS,
        "the swapped board's history was dropped"
    );
    for (_, h) in state.model.histories().iter() {
        assert!(h.points().len() <= history_len);
    }
    assert!(max_warnings <= 3 * GPUS, "warnings: {max_warnings}");
    assert_eq!(
        format!("{state:?}").matches("Alarm {").count(),
        GPUS,
        "one alarm per GPU present"
    );
    // Readings change the text's length a little (numbers of different widths); growth
    // with time would be far more than 10 %.
    assert!(
        max_footprint <= footprint_at_hour + footprint_at_hour / 10,
        "state grew over the day: {footprint_at_hour} → {max_footprint}"
    );
}

/// ProcInfo against a /proc fixture whose GPU processes are replaced every sample: its
/// per-process cache holds the current processes only, and the user-name cache grows with
/// distinct owners, not with PIDs.
#[test]
fn procinfo_caches_follow_the_current_processes_not_every_pid_ever_seen() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("stat"), "cpu  1 2 3 4\nbtime 1700000000\n").unwrap();
    let write = |pid: u32, uid: u32| {
        let d = root.path().join(pid.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("stat"),
            format!(
                "{pid} (job) S 1 {pid} {pid} 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0 {pid} 1000 \
                 100 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("status"),
            format!("Name:\tjob\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
        )
        .unwrap();
        std::fs::write(d.join("cmdline"), b"job\0--rank\x000\0").unwrap();
    };
    const PER_SAMPLE: u32 = 8;
    const OWNERS: u32 = 5;
    let mut info = ProcInfo::new(root.path(), 100, 4096);
    let t0 = Instant::now();
    let mut previous: Vec<u32> = Vec::new();
    for generation in 0..400u32 {
        let pids: Vec<u32> = (0..PER_SAMPLE)
            .map(|i| 10_000 + generation * PER_SAMPLE + i)
            .collect();
        for &pid in &pids {
            // UIDs far from any real account, so no NSS name is found (the number shows).
            write(pid, 4_000_000 + pid % OWNERS);
        }
        // Half the old processes have exited (their /proc entries are gone) but NVML
        // still lists them this once; the other half are simply no longer listed.
        for &old in &previous {
            std::fs::remove_dir_all(root.path().join(old.to_string())).unwrap();
        }
        let listed: Vec<u32> = pids
            .iter()
            .chain(previous.iter().take(PER_SAMPLE as usize / 2))
            .copied()
            .collect();
        let now = t0 + Duration::from_secs(u64::from(generation));
        let out = info.sample(listed.iter().copied(), now);
        assert_eq!(out.len(), listed.len(), "every listed PID answered");
        let (known, users) = info.cache_sizes();
        assert!(known <= PER_SAMPLE as usize, "per-process cache: {known}");
        assert!(users <= OWNERS as usize, "user-name cache: {users}");
        previous = pids;
    }
}
