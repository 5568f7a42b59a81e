//! Tests of `MultiSource` on a scripted network and tokio's paused clock: the pollers are
//! tasks on the test's runtime, every wait of theirs is on virtual time, and the test moves
//! time by sleeping (the runtime jumps to the next timer at once). Nothing sleeps for real.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::*;
use crate::source::remote::poller::Runtime;
use crate::source::remote::{CONCURRENCY, Fetch, TIMEOUT, Transport};
use crate::source::sim::{SimClock, SimSource};
use crate::state::{Msg, State, ViewConfig, update};

/// What a scripted host does when asked.
#[derive(Clone)]
enum Reply {
    Doc(String),
    Fail(&'static str),
    /// Answers after this long (the poller gives up at its timeout).
    After(Duration, Box<Reply>),
}

/// Answers per host from a script; the last reply repeats. Records every call, and how many
/// fetches were in flight at once.
#[derive(Default)]
struct FakeNet {
    script: Mutex<HashMap<String, VecDeque<Reply>>>,
    /// (address, when in whole seconds from `start`).
    calls: Mutex<Vec<(String, u64)>>,
    in_flight: Mutex<(usize, usize)>,
    start: Mutex<Option<tokio::time::Instant>>,
}

impl FakeNet {
    fn new(script: &[(&str, Vec<Reply>)]) -> Arc<FakeNet> {
        let net = FakeNet::default();
        for (a, r) in script {
            net.set(a, r.clone());
        }
        *net.start.lock().unwrap() = Some(tokio::time::Instant::now());
        Arc::new(net)
    }

    fn set(&self, address: &str, replies: Vec<Reply>) {
        let mut script = self.script.lock().unwrap();
        script.insert(address.to_string(), replies.into());
    }

    /// When `address` was polled, in whole seconds from the start.
    fn polls(&self, address: &str) -> Vec<u64> {
        let calls = self.calls.lock().unwrap();
        let at = calls.iter().filter(|(a, _)| a == address);
        at.map(|(_, t)| *t).collect()
    }

    /// The most fetches that were in flight at once.
    fn most_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }
}

/// Counts a fetch in flight until dropped (done or cut off by the timeout).
struct InFlight(Arc<FakeNet>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.lock().unwrap().0 -= 1;
    }
}

impl Transport for Arc<FakeNet> {
    fn fetch(&self, address: &str) -> Fetch {
        let start = self.start.lock().unwrap().unwrap();
        let at = start.elapsed().as_secs();
        self.calls.lock().unwrap().push((address.into(), at));
        let reply = {
            let mut script = self.script.lock().unwrap();
            let queue = script.get_mut(address).expect("a scripted host");
            if queue.len() > 1 {
                queue.pop_front().unwrap()
            } else {
                queue[0].clone()
            }
        };
        {
            let mut f = self.in_flight.lock().unwrap();
            f.0 += 1;
            f.1 = f.1.max(f.0);
        }
        let guard = InFlight(self.clone());
        Box::pin(async move {
            let _guard = guard;
            let mut reply = reply;
            loop {
                match reply {
                    Reply::Doc(text) => return Ok(text),
                    Reply::Fail(why) => return Err(why.into()),
                    Reply::After(d, then) => {
                        tokio::time::sleep(d).await;
                        reply = *then;
                    }
                }
            }
        })
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

fn multi(net: &Arc<FakeNet>, hosts: &[&str]) -> MultiSource {
    multi_with(None, net, hosts)
}

/// Polled on the test's (paused) runtime.
fn multi_with(
    local: Option<(String, Box<dyn GpuSource>)>,
    net: &Arc<FakeNet>,
    hosts: &[&str],
) -> MultiSource {
    let io = PollIo {
        transport: Arc::new(net.clone()),
        runtime: Runtime::On(tokio::runtime::Handle::current()),
    };
    let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    MultiSource::with_io(local, &hosts, SEC, io)
}

/// Lets the pollers run for `d` of virtual time (plus a hair, so work due at the end is done).
async fn run_for(d: Duration) {
    tokio::time::sleep(d + Duration::from_millis(1)).await;
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

/// Issue 15, item 6: naming is linear (it compared every address with every other: 4e8
/// comparisons for 20,000 hosts). 200,000 addresses, a tenth sharing a machine.
#[test]
fn naming_many_hosts_is_linear() {
    let many: Vec<String> = (0..200_000)
        .map(|i| {
            format!(
                "10.{}.{}.{}:{}",
                i / 65536,
                i / 256 % 256,
                i % 256,
                9400 + u32::from(i % 10 == 0)
            )
        })
        .chain(["10.0.0.0:9999".to_string()])
        .collect();
    let names = display_names(&many);
    assert_eq!(names[1], "10.0.0.1");
    assert_eq!(
        names[0], "10.0.0.0:9401",
        "shares its machine with the last"
    );
    assert_eq!(names.len(), many.len());
}

#[tokio::test(start_paused = true)]
async fn hosts_merge_and_bad_hosts_say_why() {
    let net = FakeNet::new(&[
        ("a:9400", vec![Reply::Doc(doc(2))]),
        (
            "b:9400",
            vec![Reply::Doc("<html>not a snapshot</html>".into())],
        ),
        ("c:9400", vec![Reply::Fail("connection refused")]),
    ]);
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
        &net,
        &["a:9400", "b:9400", "c:9400"],
    );
    run_for(Duration::ZERO).await;
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
}

#[tokio::test(start_paused = true)]
async fn a_failing_host_backs_off_to_30s_and_recovers_at_the_interval() {
    let net = FakeNet::new(&[
        ("live:1", vec![Reply::Doc(doc(1))]),
        ("dead:1", vec![Reply::Fail("connection refused")]),
    ]);
    let mut m = multi(&net, &["live:1", "dead:1"]);
    run_for(Duration::from_secs(70)).await;
    m.sample().unwrap();
    assert_eq!(net.polls("dead:1"), [0, 2, 6, 14, 30, 60]);
    assert_eq!(net.polls("live:1"), (0..=70).collect::<Vec<_>>());
    net.set("dead:1", vec![Reply::Doc(doc(1))]);
    run_for(Duration::from_secs(23)).await;
    assert_eq!(net.polls("dead:1")[6..], [90, 91, 92, 93]);
    let s = m.sample().unwrap();
    assert_eq!(error_of(&s, "dead"), None);
    assert_eq!(s.gpus.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_dead_host_keeps_its_gpus_as_lost_then_resumes() {
    let answer = Reply::Doc(doc(1));
    let script = vec![answer.clone(), Reply::Fail("connection refused"), answer];
    let net = FakeNet::new(&[("a:1", script)]);
    let mut m = multi(&net, &["a:1"]);
    run_for(Duration::ZERO).await;
    let s = m.sample().unwrap();
    assert_eq!(s.gpus[0].status, GpuStatus::Ok);
    assert!(!s.processes.is_empty());

    run_for(SEC).await;
    let s = m.sample().unwrap();
    assert_eq!(s.gpus.len(), 1, "the slot stays");
    assert_eq!(s.gpus[0].status, GpuStatus::Lost);
    assert_eq!(s.gpus[0].host.as_deref(), Some("a"));
    assert!(s.processes.is_empty());
    assert_eq!(error_of(&s, "a"), Some("connection refused"));

    // One failure: the next poll is 2 s later, and it answers.
    run_for(2 * SEC).await;
    let s = m.sample().unwrap();
    assert_eq!((s.gpus[0].status, error_of(&s, "a")), (GpuStatus::Ok, None));
    assert_eq!(net.polls("a:1"), [0, 1, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_host_times_out_and_never_holds_up_the_others() {
    let slow = Reply::After(10 * SEC, Box::new(Reply::Doc(doc(1))));
    let net = FakeNet::new(&[
        ("fast:1", vec![Reply::Doc(doc(1)), Reply::Doc(doc(2))]),
        ("slow:1", vec![slow]),
    ]);
    let mut m = multi(&net, &["fast:1", "slow:1"]);
    // Not the first sample's wait (tested on its own below): that would block this runtime.
    m.started = true;
    run_for(SEC).await;
    let s = m.sample().unwrap();
    assert_eq!(error_of(&s, "slow"), Some("waiting for the first answer"));
    assert_eq!(s.gpus.len(), 2, "the fast host's second answer");
    run_for(SEC).await;
    let s = m.sample().unwrap();
    assert_eq!(error_of(&s, "slow"), Some("no answer within 2s"));
    assert_eq!(error_of(&s, "fast"), None);

    // The slow host is asked again 2 s after its timeout, at 4 s; sampling never waits.
    run_for(3 * SEC).await;
    let s = m.sample().unwrap();
    assert_eq!(net.polls("slow:1"), [0, 4]);
    assert_eq!(error_of(&s, "fast"), None);
    assert_eq!(net.polls("fast:1"), [0, 1, 2, 3, 4, 5]);
}

/// 200 hosts, a quarter dead and a quarter hanging: never more than [`CONCURRENCY`] fetches
/// at once, every host settles within a few timeouts, and the live ones keep their
/// interval once the dead ones have backed off.
#[tokio::test(start_paused = true)]
async fn two_hundred_hosts_poll_with_bounded_concurrency() {
    let addresses: Vec<String> = (0..200).map(|i| format!("h{i}:1")).collect();
    let hang = Reply::After(3600 * SEC, Box::new(Reply::Fail("late")));
    let script: Vec<(&str, Vec<Reply>)> = addresses
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let reply = match i % 4 {
                0 => Reply::Fail("connection refused"),
                1 => hang.clone(),
                _ => Reply::Doc(doc(1)),
            };
            (a.as_str(), vec![reply])
        })
        .collect();
    let net = FakeNet::new(&script);
    let names: Vec<&str> = addresses.iter().map(String::as_str).collect();
    let mut m = multi(&net, &names);
    // 50 hanging hosts hold a permit for 2 s each: at most 32 at once, so all have failed
    // once within a few timeouts.
    run_for(8 * SEC).await;
    let s = m.sample().unwrap();
    assert!(
        net.most_in_flight() <= CONCURRENCY,
        "{}",
        net.most_in_flight()
    );
    assert_eq!(net.most_in_flight(), CONCURRENCY, "the bound is used");
    let waiting = s
        .hosts
        .iter()
        .filter(|h| h.error.as_deref() == Some("waiting for the first answer"));
    assert_eq!(waiting.count(), 0);
    assert_eq!(
        s.gpus.iter().filter(|g| g.status == GpuStatus::Ok).count(),
        100
    );
    let timed_out = s
        .hosts
        .iter()
        .filter(|h| h.error.as_deref() == Some("no answer within 2s"));
    assert_eq!(timed_out.count(), 50);
    // Later the dead and hanging hosts wait 30 s between tries, and the live ones are polled
    // about every second: 20 s of it polls each live host at least 15 times.
    run_for(60 * SEC).await;
    let before = net.polls("h2:1").len();
    run_for(20 * SEC).await;
    let live = net.polls("h2:1").len() - before;
    assert!(live >= 15, "{live} polls in 20 s");
    assert!(net.polls("h1:1").len() < 12, "{:?}", net.polls("h1:1"));
}

#[test]
fn the_first_sample_waits_for_first_answers_at_most_a_timeout() {
    // On the program's own polling thread and real time: a host that hangs is given up on
    // at the timeout; the first sample waits no longer than that (plus half a second).
    let hang = Reply::After(3600 * SEC, Box::new(Reply::Fail("late")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let net = rt.block_on(async { FakeNet::new(&[("stuck:1", vec![hang])]) });
    let io = PollIo {
        transport: Arc::new(net.clone()),
        runtime: Runtime::OwnThread,
    };
    let mut m = MultiSource::with_io(None, &["stuck:1".to_string()], SEC, io);
    let started = std::time::Instant::now();
    let s = m.sample().unwrap();
    let took = started.elapsed();
    assert!(took <= TIMEOUT + Duration::from_millis(1500), "{took:?}");
    assert!(s.gpus.is_empty());
    let why = error_of(&s, "stuck").unwrap();
    assert!(
        why == "no answer within 2s" || why == "waiting for the first answer",
        "{why}"
    );
}

/// Issue 20: two hosts that report the same GPU UUIDs (here the same snapshot) are both
/// shown, each GPU holding only its own host's processes, and the collision is said once.
/// Before, the model keyed both by one UUID: one GPU with both hosts' owners, doubled.
#[tokio::test(start_paused = true)]
async fn hosts_reporting_the_same_uuids_are_both_shown_and_said_once() {
    let net = FakeNet::new(&[
        ("a:1", vec![Reply::Doc(doc(2))]),
        ("b:1", vec![Reply::Doc(doc(2))]),
    ]);
    let mut m = multi(&net, &["a:1", "b:1"]);
    run_for(Duration::ZERO).await;
    let s = m.sample().unwrap();
    let ids: HashSet<&GpuId> = s.gpus.iter().map(|g| &g.id).collect();
    assert_eq!((s.gpus.len(), ids.len()), (4, 4), "{ids:?}");
    let notices = m.notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("b reports GPUs with the same UUIDs as a"),
        "{notices:?}"
    );
    let mut state = State::new(ViewConfig::default());
    update(&mut state, Msg::Sample(Box::new(s)));
    for g in state.model.gpus() {
        let held: u64 = crate::model::owners::owners(&state.model, g)
            .iter()
            .map(|(_, b)| b.known.0)
            .sum();
        let used = g.memory_used.expect("the demo reads VRAM").0;
        assert!(
            held <= used,
            "{}: owners hold {held} of {used} used",
            g.label()
        );
    }
    let on = |host: &str| {
        let gpu = |id: &GpuId| state.model.gpus().iter().find(|g| g.id == *id).unwrap();
        let rows = state.model.procs().all.iter();
        rows.filter(|r| gpu(&r.key.gpu).host.as_deref() == Some(host))
            .count()
    };
    assert!(
        on("a") > 0 && on("a") == on("b"),
        "{} vs {}",
        on("a"),
        on("b")
    );
    run_for(SEC).await;
    m.sample().unwrap();
    assert!(m.notices().is_empty(), "said once, not at every sample");
}
