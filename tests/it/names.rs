//! Workload names end to end (issue 10): the real Docker API client against a stand-in
//! engine on a unix socket in a temp dir (answers, chunked answers, 404, 500, garbage, an
//! oversized answer, a stale socket, a server that accepts and never answers), and the
//! real `scontrol` runner against a fake `scontrol` script on an injected PATH (answers,
//! exits 1, sleeps past the timeout, prints garbage). Bounded waits only: no test sleeps
//! blindly, and a lookup that hangs must fail within its timeout.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use gpuwatch::procinfo::names::docker::EngineApi;
use gpuwatch::procinfo::names::slurm::Scontrol;
use gpuwatch::procinfo::names::{
    ContainerLookup, Filled, Key, LookupError, Lookups, NameResolver, Policy, SlurmLookup,
};
use gpuwatch::reading::workload::{ContainerNames, Engine, ProcEnv, SlurmNames, Workload};

const TIMEOUT: Duration = Duration::from_millis(200);
/// The bound a timed-out lookup must come back within: its timeout plus scheduling slack
/// on a loaded CI machine.
const BOUND: Duration = Duration::from_millis(1000);

/// A 64-hex container id whose first digit picks the stand-in's behaviour.
fn id(kind: char) -> String {
    format!("{kind}{}", "0".repeat(63))
}

const INSPECT: &str = r#"{"Id":"a000","Name":"/llm-train-worker-1","State":{"Running":true},
  "Config":{"Image":"pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime","Labels":{
  "com.docker.compose.project":"llm-train","com.docker.compose.service":"worker"}}}"#;

/// A stand-in Docker Engine API: one thread per connection, answering by the id's first
/// digit (or, `empty`, 404 to all: an engine without the container), and counting the
/// requests per id.
struct StandIn {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    asked: Arc<Mutex<HashMap<String, usize>>>,
}

impl StandIn {
    fn start() -> Self {
        Self::serving(false)
    }

    fn serving(empty: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let asked = Arc::new(Mutex::new(HashMap::new()));
        let counts = Arc::clone(&asked);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counts = Arc::clone(&counts);
                std::thread::spawn(move || serve(stream, &counts, empty));
            }
        });
        StandIn {
            _dir: dir,
            socket,
            asked,
        }
    }

    fn api(&self) -> EngineApi {
        EngineApi {
            docker: vec![self.socket.clone()],
            podman: vec![self.socket.clone()],
        }
    }

    fn asked(&self, id: &str) -> usize {
        self.asked.lock().unwrap().get(id).copied().unwrap_or(0)
    }
}

fn serve(mut stream: UnixStream, asked: &Mutex<HashMap<String, usize>>, empty: bool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap_or(0);
    // The rest of the head, up to the blank line.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let id = request_line
        .strip_prefix("GET /containers/")
        .and_then(|r| r.split('/').next())
        .unwrap_or("")
        .to_string();
    *asked.lock().unwrap().entry(id.clone()).or_default() += 1;
    let json = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nApi-Version: 1.47\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let answer = match id.chars().next().filter(|_| !empty) {
        Some('a') => json("200 OK", INSPECT),
        Some('b') => json(
            "404 Not Found",
            &format!(r#"{{"message":"No such container: {id}"}}"#),
        ),
        Some('c') => json("200 OK", "<html>hello</html>"),
        Some('d') => "\u{0}\u{1}garbage\r\n\r\n".to_string(),
        Some('e') => {
            // Accepts, reads the request, never answers; lets go when the test is over.
            std::thread::sleep(Duration::from_secs(5));
            return;
        }
        Some('f') => {
            let (one, two) = INSPECT.split_at(40);
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
                 {:x}\r\n{one}\r\n{:x}\r\n{two}\r\n0\r\n\r\n",
                one.len(),
                two.len()
            )
        }
        Some('1') => json(
            "200 OK",
            &format!(r#"{{"Name":"/{}"}}"#, "x".repeat(2 << 20)),
        ),
        Some(_) => json("500 Internal Server Error", r#"{"message":"boom"}"#),
        None => json("404 Not Found", r#"{"message":"No such container"}"#),
    };
    // The client may hang up first (the oversized answer): that is fine.
    let _ = stream.write_all(answer.as_bytes());
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

#[test]
fn the_engine_api_names_a_container_plain_or_chunked() {
    let engine = StandIn::start();
    let api = engine.api();
    let expected = ContainerNames {
        name: Some("llm-train-worker-1".into()),
        image: Some("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime".into()),
        compose_project: Some("llm-train".into()),
        compose_service: Some("worker".into()),
    };
    for kind in ['a', 'f'] {
        let facts = api.container(Engine::Docker, &id(kind), TIMEOUT).unwrap();
        assert_eq!(facts.names, expected, "{kind}");
    }
    // Podman speaks the same API on its own socket.
    let facts = api.container(Engine::Podman, &id('a'), TIMEOUT).unwrap();
    assert_eq!(facts.names, expected);
}

#[test]
fn the_engine_api_fails_cleanly_on_every_bad_answer() {
    let engine = StandIn::start();
    let api = engine.api();
    let ask = |kind| api.container(Engine::Docker, &id(kind), TIMEOUT);
    assert_eq!(ask('b'), Err(LookupError::NotFound));
    for kind in ['c', 'd', '1', '9'] {
        let (answer, took) = timed(|| ask(kind));
        assert!(
            matches!(answer, Err(LookupError::Failed(_))),
            "{kind}: {answer:?}"
        );
        assert!(took < BOUND, "{kind} took {took:?}");
    }
    let (answer, took) = timed(|| ask('e'));
    assert_eq!(answer, Err(LookupError::TimedOut(TIMEOUT)));
    assert!(took >= TIMEOUT && took < BOUND, "took {took:?}");
}

#[test]
fn missing_and_stale_sockets_and_engines_without_the_id_are_skipped() {
    let engine = StandIn::start();
    let rootful = StandIn::serving(true);
    let dir = tempfile::tempdir().unwrap();
    // A socket file nobody listens on any more: what a crashed engine leaves behind.
    let stale = dir.path().join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    let api = EngineApi {
        docker: vec![
            dir.path().join("absent.sock"),
            stale.clone(),
            rootful.socket.clone(),
            engine.socket.clone(),
        ],
        podman: vec![rootful.socket.clone()],
    };
    assert!(api.container(Engine::Docker, &id('a'), TIMEOUT).is_ok());
    assert_eq!(rootful.asked(&id('a')), 1, "asked first, did not know it");
    assert_eq!(
        api.container(Engine::Podman, &id('a'), TIMEOUT),
        Err(LookupError::NotFound)
    );
    let none = EngineApi {
        docker: vec![dir.path().join("absent.sock"), stale],
        podman: vec![],
    };
    let (answer, took) = timed(|| none.container(Engine::Docker, &id('a'), TIMEOUT));
    assert!(
        matches!(answer, Err(LookupError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(took < BOUND);
}

fn container(kind: char) -> Workload {
    Workload::Container {
        engine: Engine::Docker,
        id: id(kind),
        names: ContainerNames::default(),
        delegated_to: None,
    }
}

fn name_of(filled: &Filled) -> Option<&str> {
    match &filled.workload {
        Workload::Container { names, .. } => names.name.as_deref(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hung_engine_delays_no_caller_and_its_failure_is_cached() {
    let engine = StandIn::start();
    let lookups = Lookups {
        containers: Box::new(engine.api()),
        ..Lookups::none()
    };
    let mut resolver = NameResolver::new(lookups, Policy::default(), Arc::new(Instant::now));
    // The hung id first, so the good one waits behind it on the worker — not in `fill`.
    let (_, took) = timed(|| {
        for _ in 0..20 {
            assert!(!resolver.fill(&container('e'), None).complete);
            assert!(!resolver.fill(&container('a'), None).complete);
        }
    });
    assert!(took < Duration::from_millis(500), "fill waited: {took:?}");
    assert!(resolver.settle(Duration::from_secs(3)));
    let named = resolver.fill(&container('a'), None);
    assert!(named.complete);
    assert_eq!(name_of(&named), Some("llm-train-worker-1"));
    // The hung engine was asked once; asking again within retry_after is a cache read.
    for _ in 0..20 {
        let hung = resolver.fill(&container('e'), None);
        assert_eq!((hung.complete, name_of(&hung)), (false, None));
    }
    assert!(resolver.settle(Duration::from_secs(3)));
    assert_eq!(engine.asked(&id('e')), 1);
    assert_eq!(
        resolver.failure(&Key::Container(Engine::Docker, id('e'))),
        Some(LookupError::TimedOut(TIMEOUT))
    );
    assert_eq!(engine.asked(&id('a')), 1);
    assert_eq!(resolver.stats().performed, 2);
}

// ---- scontrol ----------------------------------------------------------------------

/// The fake `scontrol`, written once per test binary before any test runs it: writing an
/// executable while another thread forks can make its exec fail with "text file busy".
fn fake_scontrol() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("scontrol");
        let text = format!(
            r#"#!/bin/sh
[ "$1 $2 $3" = "show job -o" ] || {{ echo "usage" >&2; exit 2; }}
case "$4" in
  48121) echo "JobId=48121 JobName=llama ft UserId=alice(1000) GroupId=ml(2000) MCS_label=N/A Account=nlp-lab QOS=normal JobState=RUNNING" ;;
  2) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1 ;;
  3) sleep 30 & echo $! > "{dir}/sleeper"; wait ;;
  *) echo "<<<<<<< HEAD" ;;
esac
"#,
            dir = dir.path().display()
        );
        std::fs::write(&script, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    })
    .path()
}

#[test]
fn scontrol_names_a_job_and_fails_on_exit_codes_and_garbage() {
    let scontrol = Scontrol::new(fake_scontrol());
    let names = scontrol.job(48121, TIMEOUT).unwrap();
    assert_eq!(
        names,
        SlurmNames {
            name: Some("llama ft".into()),
            user: Some("alice".into()),
            account: Some("nlp-lab".into()),
            array: None,
        }
    );
    for job in [2, 4] {
        let (answer, took) = timed(|| scontrol.job(job, TIMEOUT));
        assert!(
            matches!(answer, Err(LookupError::Failed(_))),
            "{job}: {answer:?}"
        );
        assert!(took < BOUND);
    }
    let missing = tempfile::tempdir().unwrap();
    assert!(matches!(
        Scontrol::new(missing.path()).job(48121, TIMEOUT),
        Err(LookupError::Unavailable(_))
    ));
}

#[test]
fn a_slow_scontrol_is_killed_with_what_it_started() {
    let dir = fake_scontrol();
    let (answer, took) = timed(|| Scontrol::new(dir).job(3, TIMEOUT));
    assert_eq!(answer, Err(LookupError::TimedOut(TIMEOUT)));
    assert!(took >= TIMEOUT && took < BOUND, "took {took:?}");
    // The script's own child went with it (its process group was killed): gone, or a
    // zombie waiting for its new parent to reap it.
    let pid = std::fs::read_to_string(dir.join("sleeper")).unwrap();
    let pid = pid.trim();
    let stat = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let alive = std::fs::read_to_string(&stat).is_ok_and(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        });
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the sleeper {pid} outlived the timeout"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_job_scontrol_cannot_name_keeps_its_environment_names() {
    let lookups = Lookups {
        slurm: Box::new(Scontrol::new(fake_scontrol())),
        ..Lookups::none()
    };
    let mut resolver = NameResolver::new(lookups, Policy::default(), Arc::new(Instant::now));
    let env = ProcEnv::from_vars(
        [
            ("SLURM_JOB_ID", "2"),
            ("SLURM_JOB_NAME", "eval"),
            ("SLURM_JOB_ACCOUNT", "vision"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let job = Workload::Slurm {
        job: 2,
        step: Some("batch".into()),
        uid: None,
        names: SlurmNames::default(),
    };
    resolver.fill(&job, Some(&env));
    assert!(resolver.settle(Duration::from_secs(3)));
    let filled = resolver.fill(&job, Some(&env));
    assert!(!filled.complete, "scontrol failed: retried later");
    assert!(matches!(
        resolver.failure(&Key::Slurm(2)),
        Some(LookupError::Failed(why)) if why.contains("exit status: 1")
    ));
    match filled.workload {
        Workload::Slurm { names, .. } => {
            assert_eq!(names.name.as_deref(), Some("eval"));
            assert_eq!(names.account.as_deref(), Some("vision"));
        }
        other => panic!("{other:?}"),
    }
}
