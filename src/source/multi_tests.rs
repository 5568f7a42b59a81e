//! Tests of `MultiSource` on a scripted network and a clock that only the test moves: the
//! pollers are real threads, but every wait of theirs is on the fake clock, and the test
//! waits (`settle`) until each poller is asleep again before it looks. Nothing sleeps.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::*;
use crate::source::remote::{Clock, TIMEOUT, Transport, Wake};
use crate::source::sim::{SimClock, SimSource};
use crate::state::{Msg, State, ViewConfig, update};

/// Time that moves only when the test says so; it knows who sleeps until when.
struct FakeClock {
    base: Instant,
    state: Mutex<ClockState>,
    /// Notified when a sleeper comes or goes (for `settle`).
    changed: Condvar,
}

#[derive(Default)]
struct ClockState {
    now: Duration,
    next_id: u64,
    /// (id, deadline as an offset from `base`, what wakes it early).
    sleepers: Vec<(u64, Duration, Arc<Wake>)>,
}

impl FakeClock {
    fn new() -> Arc<FakeClock> {
        Arc::new(FakeClock {
            base: Instant::now(),
            state: Mutex::new(ClockState::default()),
            changed: Condvar::new(),
        })
    }

    fn elapsed(&self) -> Duration {
        self.state.lock().unwrap().now
    }

    fn advance(&self, by: Duration) {
        let wakes: Vec<Arc<Wake>> = {
            let mut s = self.state.lock().unwrap();
            s.now += by;
            s.sleepers.iter().map(|(_, _, w)| w.clone()).collect()
        };
        for w in wakes {
            w.notify();
        }
    }

    /// Blocks until `n` threads sleep on this clock with a deadline still ahead: every
    /// poller has done what the last `advance` allowed. A real-time bound turns a wrong
    /// expectation into a failure instead of a hang.
    fn settle(&self, n: usize) {
        let guard = self.state.lock().unwrap();
        let (_guard, timeout) = self
            .changed
            .wait_timeout_while(guard, Duration::from_secs(10), |s| {
                s.sleepers.iter().filter(|(_, d, _)| *d > s.now).count() < n
            })
            .unwrap();
        assert!(!timeout.timed_out(), "{n} sleepers never settled");
    }

    /// Moves time on in `step`s up to `until` (from the start), settling `n` pollers each step.
    fn run_until(&self, until: Duration, step: Duration, n: usize) {
        self.settle(n);
        while self.elapsed() < until {
            self.advance(step);
            self.settle(n);
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.base + self.elapsed()
    }
    fn wall(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600) + self.elapsed()
    }
    fn sleep_until(&self, deadline: Instant, wake: &Arc<Wake>) -> bool {
        let until = deadline.saturating_duration_since(self.base);
        let id = {
            let mut s = self.state.lock().unwrap();
            s.next_id += 1;
            let id = s.next_id;
            s.sleepers.push((id, until, wake.clone()));
            id
        };
        self.changed.notify_all();
        let raised = wake.wait_while(|| self.elapsed() < until);
        self.state
            .lock()
            .unwrap()
            .sleepers
            .retain(|(i, _, _)| *i != id);
        self.changed.notify_all();
        raised
    }
}

/// What a scripted host does when asked.
#[derive(Clone)]
enum Reply {
    Doc(String),
    Fail(&'static str),
    /// Never answers: the transport gives up at its timeout, as ureq does.
    Slow,
    /// A transport that ignores its timeout and takes this long.
    Overrun(Duration),
}

/// Answers per host from a script; the last reply repeats. Records every call.
struct FakeNet {
    clock: Arc<FakeClock>,
    script: Mutex<HashMap<String, VecDeque<Reply>>>,
    /// (address, when, timeout asked for).
    calls: Mutex<Vec<(String, Duration, Duration)>>,
}

impl FakeNet {
    fn new(clock: &Arc<FakeClock>, script: &[(&str, Vec<Reply>)]) -> Arc<FakeNet> {
        let script = script
            .iter()
            .map(|(a, r)| (a.to_string(), r.iter().cloned().collect()))
            .collect();
        Arc::new(FakeNet {
            clock: clock.clone(),
            script: Mutex::new(script),
            calls: Mutex::new(Vec::new()),
        })
    }

    fn set(&self, address: &str, replies: Vec<Reply>) {
        let mut script = self.script.lock().unwrap();
        script.insert(address.to_string(), replies.into());
    }

    /// When `address` was polled, in whole seconds from the start.
    fn polls(&self, address: &str) -> Vec<u64> {
        let calls = self.calls.lock().unwrap();
        let at = calls.iter().filter(|(a, _, _)| a == address);
        at.map(|(_, t, _)| t.as_secs()).collect()
    }

    fn nap(&self, d: Duration) {
        let never = Wake::new();
        self.clock.sleep_until(self.clock.now() + d, &never);
    }
}

impl Transport for FakeNet {
    fn fetch(&self, address: &str, timeout: Duration) -> Result<String, String> {
        let at = self.clock.elapsed();
        let calls = &self.calls;
        calls.lock().unwrap().push((address.into(), at, timeout));
        let reply = {
            let mut script = self.script.lock().unwrap();
            let queue = script.get_mut(address).expect("a scripted host");
            if queue.len() > 1 {
                queue.pop_front().unwrap()
            } else {
                queue[0].clone()
            }
        };
        match reply {
            Reply::Doc(text) => Ok(text),
            Reply::Fail(why) => Err(why.into()),
            Reply::Slow => {
                self.nap(timeout);
                Err(format!("no answer within {}s", timeout.as_secs()))
            }
            Reply::Overrun(d) => {
                self.nap(d);
                Err("late".into())
            }
        }
    }
}

/// What `gpuwatch --once --json` prints for `gpus` simulated GPUs.
fn doc(gpus: usize) -> String {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let mut sim = SimSource::new(gpus, 1, Duration::from_secs(1), SimClock::Virtual { start });
    let mut state = State::new(ViewConfig::default());
    update(&mut state, Msg::Sample(Box::new(sim.sample().unwrap())));
    crate::headless::render_json(&state)
}

const SEC: Duration = Duration::from_secs(1);

fn multi(clock: &Arc<FakeClock>, net: &Arc<FakeNet>, hosts: &[&str]) -> MultiSource {
    multi_with(None, clock, net, hosts)
}

fn multi_with(
    local: Option<(String, Box<dyn GpuSource>)>,
    clock: &Arc<FakeClock>,
    net: &Arc<FakeNet>,
    hosts: &[&str],
) -> MultiSource {
    let io = PollIo {
        transport: net.clone(),
        clock: clock.clone(),
    };
    let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    MultiSource::with_io(local, &hosts, SEC, io)
}

fn error_of<'a>(s: &'a Sample, host: &str) -> Option<&'a str> {
    let h = s
        .hosts
        .iter()
        .find(|h| h.name == host)
        .expect("a host line");
    h.error.as_deref()
}

#[test]
fn names_keep_the_port_only_when_needed() {
    let a = |v: &[&str]| display_names(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(a(&["gpu1:9400", "gpu2:9400"]), ["gpu1", "gpu2"]);
    assert_eq!(
        a(&["lab:9400", "lab:9401", "gpu2:9400"]),
        ["lab:9400", "lab:9401", "gpu2"]
    );
}

#[test]
fn hosts_merge_and_bad_hosts_say_why() {
    let clock = FakeClock::new();
    let net = FakeNet::new(
        &clock,
        &[
            ("a:9400", vec![Reply::Doc(doc(2))]),
            (
                "b:9400",
                vec![Reply::Doc("<html>not a snapshot</html>".into())],
            ),
            ("c:9400", vec![Reply::Fail("connection refused")]),
        ],
    );
    let here: Box<dyn GpuSource> = Box::new(SimSource::new(
        1,
        7,
        SEC,
        SimClock::Virtual {
            start: SystemTime::UNIX_EPOCH,
        },
    ));
    let mut m = multi_with(
        Some(("here".into(), here)),
        &clock,
        &net,
        &["a:9400", "b:9400", "c:9400"],
    );
    // The first sample waited for every host's first answer.
    let s = m.sample().unwrap();
    assert_eq!(s.host.hostname, "here, a, b, c");
    let hosts: Vec<Option<&str>> = s.gpus.iter().map(|g| g.host.as_deref()).collect();
    assert_eq!(
        hosts,
        [None, Some("a"), Some("a")],
        "local GPUs stay untagged"
    );
    let remote_gpu = &s.gpus[1].id;
    assert!(
        s.processes.iter().any(|p| p.gpu == *remote_gpu),
        "remote processes come too"
    );
    assert_eq!(error_of(&s, "here"), None);
    assert_eq!(error_of(&s, "a"), None);
    assert!(
        error_of(&s, "b")
            .unwrap()
            .starts_with("not a gpuwatch snapshot")
    );
    assert_eq!(error_of(&s, "c"), Some("connection refused"));
    assert_eq!(s.time, clock.wall(), "stamped by the injected clock");
    let timeouts = net
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|c| c.2)
        .collect::<Vec<_>>();
    assert!(timeouts.iter().all(|t| *t == TIMEOUT), "{timeouts:?}");
}

#[test]
fn a_failing_host_backs_off_to_30s_and_recovers_at_the_interval() {
    let clock = FakeClock::new();
    let net = FakeNet::new(
        &clock,
        &[
            ("live:1", vec![Reply::Doc(doc(1))]),
            ("dead:1", vec![Reply::Fail("connection refused")]),
        ],
    );
    let mut m = multi(&clock, &net, &["live:1", "dead:1"]);
    m.sample().unwrap();
    clock.run_until(Duration::from_secs(70), SEC, 2);
    assert_eq!(net.polls("dead:1"), [0, 2, 6, 14, 30, 60]);
    assert_eq!(net.polls("live:1"), (0..=70).collect::<Vec<_>>());
    net.set("dead:1", vec![Reply::Doc(doc(1))]);
    clock.run_until(Duration::from_secs(93), SEC, 2);
    assert_eq!(net.polls("dead:1")[6..], [90, 91, 92, 93]);
    let s = m.sample().unwrap();
    assert_eq!(error_of(&s, "dead"), None);
    assert_eq!(s.gpus.len(), 2);
}

#[test]
fn a_dead_host_keeps_its_gpus_as_lost_then_resumes() {
    let clock = FakeClock::new();
    let answer = Reply::Doc(doc(1));
    let script = vec![answer.clone(), Reply::Fail("connection refused"), answer];
    let net = FakeNet::new(&clock, &[("a:1", script)]);
    let mut m = multi(&clock, &net, &["a:1"]);
    let s = m.sample().unwrap();
    assert_eq!(s.gpus[0].status, GpuStatus::Ok);
    assert!(!s.processes.is_empty());

    clock.settle(1);
    clock.advance(SEC);
    clock.settle(1);
    let s = m.sample().unwrap();
    assert_eq!(s.gpus.len(), 1, "the slot stays");
    assert_eq!(s.gpus[0].status, GpuStatus::Lost);
    assert_eq!(s.gpus[0].host.as_deref(), Some("a"));
    assert!(s.processes.is_empty());
    assert_eq!(error_of(&s, "a"), Some("connection refused"));

    // One failure: the next poll is 2 s later, and it answers.
    clock.advance(2 * SEC);
    clock.settle(1);
    let s = m.sample().unwrap();
    assert_eq!((s.gpus[0].status, error_of(&s, "a")), (GpuStatus::Ok, None));
    assert_eq!(net.polls("a:1"), [0, 1, 3]);
}

#[test]
fn a_slow_host_times_out_and_never_holds_up_the_others() {
    let clock = FakeClock::new();
    let net = FakeNet::new(
        &clock,
        &[
            ("fast:1", vec![Reply::Doc(doc(1)), Reply::Doc(doc(2))]),
            ("slow:1", vec![Reply::Slow]),
        ],
    );
    let mut m = multi(&clock, &net, &["fast:1", "slow:1"]);
    let s = std::thread::scope(|scope| {
        let first = scope.spawn(|| m.sample().unwrap());
        // Two pollers and the first sample's wait, all asleep on the clock.
        clock.settle(3);
        assert!(
            !first.is_finished(),
            "the first sample waits for the slow host"
        );
        clock.advance(SEC);
        clock.settle(3);
        clock.advance(SEC);
        first.join().unwrap()
    });
    // The first sample may return before the fast host's poll at 2 s: wait for it.
    clock.settle(2);
    assert_eq!(error_of(&s, "slow"), Some("no answer within 2s"));
    assert_eq!(error_of(&s, "fast"), None);
    assert_eq!(s.gpus.len(), 2, "the fast host's second answer");

    // The slow host is asked again at 4 s and hangs until 6 s; sampling does not wait.
    clock.run_until(Duration::from_secs(5), SEC, 2);
    let s = m.sample().unwrap();
    assert_eq!(net.polls("slow:1"), [0, 4]);
    assert_eq!(error_of(&s, "fast"), None);
    assert_eq!(s.gpus.len(), 2);
    assert_eq!(net.polls("fast:1"), [0, 1, 2, 3, 4, 5]);
}

#[test]
fn the_first_sample_gives_up_on_a_transport_that_overruns() {
    let clock = FakeClock::new();
    let net = FakeNet::new(&clock, &[("stuck:1", vec![Reply::Overrun(10 * SEC)])]);
    let mut m = multi(&clock, &net, &["stuck:1"]);
    let s = std::thread::scope(|scope| {
        let first = scope.spawn(|| m.sample().unwrap());
        clock.settle(2);
        // The wait ends at TIMEOUT + 0.5 s whatever the transport does.
        clock.advance(TIMEOUT + Duration::from_millis(500));
        first.join().unwrap()
    });
    assert_eq!(error_of(&s, "stuck"), Some("waiting for the first answer"));
    assert!(s.gpus.is_empty());
}
