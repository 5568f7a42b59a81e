//! The resolver with injected lookups and a hand-moved clock: misses are queued and never
//! waited on, answers and failures are cached, failures retried after `retry_after`,
//! the Slurm environment fallback, and a prompt stop on drop. No sockets, no sleeps.

use super::*;
use crate::reading::workload::PodQos;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

const ID: &str = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";
const SETTLE: Duration = Duration::from_secs(3);

/// A clock the test moves by hand.
fn clock() -> (Clock, Arc<AtomicU64>) {
    let base = Instant::now();
    let ms = Arc::new(AtomicU64::new(0));
    let theirs = Arc::clone(&ms);
    (
        Arc::new(move || base + Duration::from_millis(theirs.load(Ordering::SeqCst))),
        ms,
    )
}

fn container(id: &str) -> Workload {
    Workload::Container {
        engine: Engine::Docker,
        id: id.into(),
        names: ContainerNames::default(),
        delegated_to: None,
    }
}

fn named(name: &str) -> ContainerFacts {
    ContainerFacts {
        names: ContainerNames {
            name: Some(name.into()),
            ..ContainerNames::default()
        },
        pod: PodNames::default(),
    }
}

fn with_containers(lookup: impl ContainerLookup + 'static, clock: Clock) -> NameResolver {
    let lookups = Lookups {
        containers: Box::new(lookup),
        ..Lookups::none()
    };
    NameResolver::new(lookups, Policy::default(), clock)
}

fn container_name(filled: &Filled) -> Option<&str> {
    match &filled.workload {
        Workload::Container { names, .. } => names.name.as_deref(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_miss_is_queued_and_named_on_a_later_ask() {
    let (clock, _) = clock();
    let mut r = with_containers(
        |_: Engine, id: &str, _: Duration| Ok(named(&format!("c-{}", &id[..4]))),
        clock,
    );
    let first = r.fill(&container(ID), None);
    assert_eq!(
        first,
        Filled {
            workload: container(ID),
            complete: false
        }
    );
    assert!(r.settle(SETTLE));
    let second = r.fill(&container(ID), None);
    assert!(second.complete);
    assert_eq!(container_name(&second), Some("c-3f2a"));
    assert_eq!(r.stats().performed, 1);
}

#[test]
fn failures_are_cached_and_retried_after_a_while() {
    let (clock, ms) = clock();
    let mut r = with_containers(
        |_: Engine, _: &str, _: Duration| Err(LookupError::Unavailable("no docker".into())),
        clock,
    );
    r.fill(&container(ID), None);
    assert!(r.settle(SETTLE));
    for second in 1..60 {
        ms.store(second * 1000 - 1, Ordering::SeqCst);
        let filled = r.fill(&container(ID), None);
        assert!(!filled.complete);
        assert_eq!(container_name(&filled), None);
    }
    assert!(r.settle(SETTLE));
    assert_eq!(r.stats().performed, 1, "not asked again within retry_after");
    ms.store(60_000, Ordering::SeqCst);
    r.fill(&container(ID), None);
    assert!(r.settle(SETTLE));
    assert_eq!(r.stats().performed, 2, "retried after retry_after");
}

#[test]
fn a_stuck_lookup_never_blocks_the_caller() {
    let (clock, _) = clock();
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let mut r = with_containers(
        move |_: Engine, id: &str, _: Duration| {
            if id == ID {
                // Stands in for a socket that takes its whole timeout.
                let _ = gate.lock().unwrap().recv_timeout(SETTLE);
            }
            Ok(named(id))
        },
        clock,
    );
    let start = Instant::now();
    r.fill(&container(ID), None);
    let other = "a".repeat(64);
    for _ in 0..100 {
        assert!(!r.fill(&container(&other), None).complete);
    }
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "fill waited on a lookup"
    );
    assert!(
        !r.settle(Duration::from_millis(20)),
        "the stuck lookup is still in flight"
    );
    release.send(()).unwrap();
    assert!(r.settle(SETTLE));
    assert_eq!(
        container_name(&r.fill(&container(&other), None)),
        Some(other.as_str())
    );
    assert_eq!(
        r.stats().performed,
        2,
        "the queued id was sent once, not 100 times"
    );
}

#[test]
fn slurm_jobs_take_the_environment_until_scontrol_answers() {
    let (clock, _) = clock();
    let lookups = Lookups {
        slurm: Box::new(|job: u64, _: Duration| {
            Ok(SlurmNames {
                name: Some(format!("job{job}")),
                user: None,
                account: Some("nlp".into()),
                array: None,
            })
        }),
        ..Lookups::none()
    };
    let mut r = NameResolver::new(lookups, Policy::default(), clock);
    let env = ProcEnv::from_vars(
        [
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NAME", "from-env"),
            ("SLURM_JOB_USER", "bob"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let job = Workload::Slurm {
        job: 7,
        step: Some("0".into()),
        uid: None,
        names: SlurmNames::default(),
    };
    let names = |f: Filled| match f.workload {
        Workload::Slurm { names, .. } => (names, f.complete),
        other => panic!("{other:?}"),
    };
    let (early, complete) = names(r.fill(&job, Some(&env)));
    assert!(!complete);
    assert_eq!(early.name.as_deref(), Some("from-env"));
    assert!(r.settle(SETTLE));
    let (late, complete) = names(r.fill(&job, Some(&env)));
    assert!(complete);
    assert_eq!(
        late,
        SlurmNames {
            name: Some("job7".into()),
            user: Some("bob".into()),
            account: Some("nlp".into()),
            array: None,
        },
        "scontrol first, the environment for what it left out"
    );
}

#[test]
fn pods_on_docker_get_their_pod_labels_and_others_need_no_lookup() {
    let (clock, _) = clock();
    let mut r = with_containers(
        |_: Engine, _: &str, _: Duration| {
            Ok(ContainerFacts {
                pod: PodNames {
                    name: Some("job-7f9c".into()),
                    namespace: Some("ml".into()),
                    container: Some("trainer".into()),
                },
                ..ContainerFacts::default()
            })
        },
        clock,
    );
    let pod = |container| Workload::Pod {
        uid: "0d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f".into(),
        qos: PodQos::Burstable,
        container,
        names: PodNames::default(),
    };
    let bare = pod(None);
    assert_eq!(
        r.fill(&bare, None),
        Filled {
            workload: bare.clone(),
            complete: true
        }
    );
    let service = Workload::Service {
        name: "jupyter".into(),
        user: None,
    };
    assert!(r.fill(&service, None).complete);
    assert_eq!(
        r.stats().cached,
        0,
        "nothing asked for workloads without ids to name"
    );
    let on_docker = pod(Some((Engine::Docker, ID.to_string())));
    r.fill(&on_docker, None);
    assert!(r.settle(SETTLE));
    match r.fill(&on_docker, None).workload {
        Workload::Pod { names, .. } => assert_eq!(names.namespace.as_deref(), Some("ml")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn disabled_never_looks_anything_up() {
    let mut r = NameResolver::disabled();
    let filled = r.fill(&container(ID), None);
    assert_eq!(
        filled,
        Filled {
            workload: container(ID),
            complete: true
        }
    );
    assert!(r.settle(Duration::ZERO));
    assert_eq!(r.stats().performed, 0);
}

#[test]
fn drop_stops_the_worker_after_the_lookup_in_progress() {
    let (clock, _) = clock();
    let (started, first) = mpsc::channel::<()>();
    let started = Mutex::new(started);
    let mut r = with_containers(
        move |_: Engine, _: &str, _: Duration| {
            let _ = started.lock().unwrap().send(());
            std::thread::sleep(Duration::from_millis(30));
            Err(LookupError::TimedOut(Duration::from_millis(30)))
        },
        clock,
    );
    for i in 0..50u32 {
        r.fill(&container(&format!("{i:064x}")), None);
    }
    first.recv_timeout(SETTLE).expect("the worker started");
    let start = Instant::now();
    drop(r);
    // One lookup in progress (30 ms), not the 49 queued behind it (1.5 s).
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_panicking_lookup_is_a_failure_not_a_dead_worker() {
    let (clock, _) = clock();
    let mut r = with_containers(
        |_: Engine, id: &str, _: Duration| {
            assert!(id != ID, "engine client bug");
            Ok(named("fine"))
        },
        clock,
    );
    r.fill(&container(ID), None);
    let other = "b".repeat(64);
    r.fill(&container(&other), None);
    assert!(r.settle(SETTLE));
    assert_eq!(
        container_name(&r.fill(&container(&other), None)),
        Some("fine")
    );
    assert!(!r.fill(&container(ID), None).complete);
}

#[test]
fn what_nothing_can_name_is_answered_once_and_never_retried() {
    let (clock, ms) = clock();
    // `Lookups::none`: every kind Unsupported, as containerd is to the engine client.
    let mut r = NameResolver::new(Lookups::none(), Policy::default(), clock);
    let on_containerd = Workload::Container {
        engine: Engine::Containerd,
        id: ID.into(),
        names: ContainerNames::default(),
        delegated_to: None,
    };
    assert!(!r.fill(&on_containerd, None).complete);
    assert!(r.settle(SETTLE));
    ms.store(3_600_000, Ordering::SeqCst);
    assert_eq!(
        r.fill(&on_containerd, None),
        Filled {
            workload: on_containerd.clone(),
            complete: true
        }
    );
    assert!(r.settle(SETTLE));
    assert_eq!(r.stats().performed, 1);
}
