//! Names for the ids a cgroup gives (issue 10, "who really holds a GPU"): a container's
//! name, image and compose service from its engine, a Slurm job's name, user and account
//! from `scontrol` or the job's environment. Owns the cache and the one background worker
//! that asks; must never block its caller: `fill` answers from the cache at once, queues
//! what it does not know, and names that arrive later show on a later sample.
//!
//! Rules: each lookup is bounded (`Policy::timeout`, 200 ms); a failure is remembered
//! and retried only after `retry_after` (60 s), so a host without Docker is not asked
//! every second; ids not asked about for `forget_after` are forgotten and at most
//! `capacity` are kept. The lookups are injected (`Lookups`) so tests need no engine.

mod cache;
pub mod docker;
pub mod slurm;
mod worker;

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use cache::Policy;

use crate::reading::lookup::{LookupKind, LookupStatus};
use crate::reading::workload::{ContainerNames, Engine, PodNames, ProcEnv, SlurmNames, Workload};
use cache::Lookup;
use worker::{Book, Shared, Worker};

/// What an engine says about a container: its own names, and the pod labels a
/// Kubernetes runtime put on it (cri-dockerd does; empty otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerFacts {
    pub names: ContainerNames,
    pub pod: PodNames,
}

/// Why a lookup gave no names. All are cached and retried after `retry_after`, except
/// `Unsupported`, which is cached as an answer with no names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// Nothing to ask: no socket, no command.
    #[error("{0}")]
    Unavailable(String),
    #[error("permission denied on {0} (is this user in the docker group?)")]
    Denied(String),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("the engine does not know this id")]
    NotFound,
    /// An answer, but not one we can use: an error status, an exit code, garbage.
    #[error("{0}")]
    Failed(String),
    #[error("no lookup for this kind of workload")]
    Unsupported,
}

/// Names a container, by engine and full id, within `timeout`.
pub trait ContainerLookup: Send {
    fn container(
        &self,
        engine: Engine,
        id: &str,
        timeout: Duration,
    ) -> Result<ContainerFacts, LookupError>;
}

impl<F> ContainerLookup for F
where
    F: Fn(Engine, &str, Duration) -> Result<ContainerFacts, LookupError> + Send,
{
    fn container(&self, e: Engine, id: &str, t: Duration) -> Result<ContainerFacts, LookupError> {
        self(e, id, t)
    }
}

/// Names a container of one user's rootless engine (the user whose delegated cgroup
/// subtree holds it), within `timeout`. Never the system's engine: a user can make a cgroup
/// named after any container id in their own subtree.
pub trait RootlessLookup: Send {
    fn container(
        &self,
        uid: u32,
        engine: Engine,
        id: &str,
        timeout: Duration,
    ) -> Result<ContainerFacts, LookupError>;
}

impl<F> RootlessLookup for F
where
    F: Fn(u32, Engine, &str, Duration) -> Result<ContainerFacts, LookupError> + Send,
{
    fn container(
        &self,
        uid: u32,
        e: Engine,
        id: &str,
        t: Duration,
    ) -> Result<ContainerFacts, LookupError> {
        self(uid, e, id, t)
    }
}

/// Names a Slurm job within `timeout`.
pub trait SlurmLookup: Send {
    fn job(&self, job: u64, timeout: Duration) -> Result<SlurmNames, LookupError>;
}

impl<F> SlurmLookup for F
where
    F: Fn(u64, Duration) -> Result<SlurmNames, LookupError> + Send,
{
    fn job(&self, job: u64, timeout: Duration) -> Result<SlurmNames, LookupError> {
        self(job, timeout)
    }
}

/// Every outside source of names, injected.
pub struct Lookups {
    pub containers: Box<dyn ContainerLookup>,
    /// Users' rootless engines, for containers in their delegated subtrees.
    pub rootless: Box<dyn RootlessLookup>,
    pub slurm: Box<dyn SlurmLookup>,
}

impl Lookups {
    /// This host's engine sockets and `scontrol` on `$PATH`.
    pub fn system() -> Self {
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
        let path =
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
        Lookups {
            containers: Box::new(docker::EngineApi::system(
                std::env::var("DOCKER_HOST").ok().as_deref(),
                std::env::var("CONTAINER_HOST").ok().as_deref(),
                runtime_dir.as_deref(),
            )),
            rootless: Box::new(docker::Rootless::system()),
            slurm: Box::new(slurm::Scontrol::new(path)),
        }
    }

    /// Lookups that always answer `Unsupported`: a base for tests that drive one kind.
    pub fn none() -> Self {
        Lookups {
            containers: Box::new(|_: Engine, _: &str, _: Duration| Err(LookupError::Unsupported)),
            rootless: Box::new(|_: u32, _: Engine, _: &str, _: Duration| {
                Err(LookupError::Unsupported)
            }),
            slurm: Box::new(|_: u64, _: Duration| Err(LookupError::Unsupported)),
        }
    }
}

/// What the cache is keyed by: one entry per container or job, shared by its processes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Container(Engine, String),
    /// A container in a user's delegated subtree: asked of that user's rootless engine.
    UserContainer(u32, Engine, String),
    Slurm(u64),
}

impl Key {
    /// The outside service asked for this key, where one is (containerd and CRI-O outside
    /// Kubernetes have no API asked).
    fn lookup_kind(&self) -> Option<LookupKind> {
        match self {
            Key::Container(Engine::Docker, _) => Some(LookupKind::Docker),
            Key::Container(Engine::Podman, _) => Some(LookupKind::Podman),
            Key::Container(..) => None,
            // A user's own rootless engine runs only while they want it (often not at all,
            // or not while they are logged out): its silence is theirs, not a failure of
            // gpuwatch's to report; the container still shows as theirs, by id.
            Key::UserContainer(..) => None,
            Key::Slurm(_) => Some(LookupKind::Slurm),
        }
    }

    /// What was being named, for a failure's message: `container 0029e24d93de`, `job 8`.
    fn subject(&self) -> String {
        match self {
            Key::Container(_, id) => format!("naming container {}", &id[..id.len().min(12)]),
            Key::UserContainer(uid, _, id) => {
                format!("naming user {uid}'s container {}", &id[..id.len().min(12)])
            }
            Key::Slurm(job) => format!("naming job {job}"),
        }
    }

    /// The answer for an id nothing can name.
    fn unnamed(&self) -> Names {
        match self {
            Key::Container(..) | Key::UserContainer(..) => {
                Names::Container(ContainerFacts::default())
            }
            Key::Slurm(_) => Names::Slurm(SlurmNames::default()),
        }
    }
}

/// A lookup's answer, as cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    Container(ContainerFacts),
    Slurm(SlurmNames),
}

/// When the cache's rules are measured from: injected so tests of retry and eviction do
/// not sleep.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// A workload with whatever names are known now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    pub workload: Workload,
    /// Nothing more will come: the lookup answered, or there is nothing to look up. While
    /// `false` the caller asks again on later samples (each ask is a cache read).
    pub complete: bool,
}

/// Counters for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub cached: usize,
    pub in_flight: usize,
    /// Lookups the worker has performed since start.
    pub performed: u64,
}

/// Fills workloads' names from a cache, looking up misses on one background thread.
pub struct NameResolver {
    inner: Option<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    /// Until the first miss: the worker starts then, so a resolver that never meets a
    /// container or a job (the signaller's `ProcInfo`, a laptop) costs no thread.
    lookups: Option<Lookups>,
    worker: Option<Worker>,
}

impl std::fmt::Debug for NameResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            None => f.write_str("NameResolver(disabled)"),
            Some(inner) => write!(f, "NameResolver({:?})", inner.stats()),
        }
    }
}

impl NameResolver {
    /// Never looks anything up: workloads keep the names they have (fixtures, the demo).
    pub fn disabled() -> Self {
        NameResolver { inner: None }
    }

    /// This host's engines and Slurm, on the real clock, with the default policy.
    pub fn system() -> Self {
        Self::new(Lookups::system(), Policy::default(), Arc::new(Instant::now))
    }

    pub fn new(lookups: Lookups, policy: Policy, clock: Clock) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(Book::default()),
            answered: Condvar::new(),
            clock,
            policy,
        });
        NameResolver {
            inner: Some(Inner {
                shared,
                lookups: Some(lookups),
                worker: None,
            }),
        }
    }

    /// `workload` with the names known now; queues a lookup for an unknown id. Never waits
    /// on a lookup. A Slurm job not (yet) named by `scontrol` takes what its own
    /// environment says.
    pub fn fill(&mut self, workload: &Workload, env: Option<&ProcEnv>) -> Filled {
        let mut filled = Filled {
            workload: workload.clone(),
            complete: true,
        };
        let Some(inner) = &mut self.inner else {
            return filled;
        };
        let key = match workload {
            Workload::Container {
                engine,
                id,
                delegated_to: None,
                ..
            } => Key::Container(*engine, id.clone()),
            Workload::Container {
                engine,
                id,
                delegated_to: Some(uid),
                ..
            } => Key::UserContainer(*uid, *engine, id.clone()),
            Workload::Pod {
                container: Some((engine, id)),
                ..
            } => Key::Container(*engine, id.clone()),
            Workload::Slurm { job, .. } => Key::Slurm(*job),
            // TODO(issue 10): pods on containerd/CRI-O need the kubelet or CRI to name them.
            _ => return filled,
        };
        let found = inner.ask(&key);
        filled.complete = found.is_some();
        match (&mut filled.workload, found) {
            (Workload::Container { names, .. }, Some(Names::Container(facts))) => {
                *names = facts.names;
            }
            (Workload::Pod { names, .. }, Some(Names::Container(facts))) => *names = facts.pod,
            (Workload::Slurm { job, names, .. }, found) => {
                let from_env = env.map(|e| slurm::from_env(e, *job)).unwrap_or_default();
                let asked = match found {
                    Some(Names::Slurm(asked)) => asked,
                    _ => SlurmNames::default(),
                };
                // scontrol is the authority; the environment fills what it left out.
                *names = SlurmNames {
                    name: asked.name.or(from_env.name),
                    user: asked.user.or(from_env.user),
                    account: asked.account.or(from_env.account),
                    array: asked.array.or(from_env.array),
                };
            }
            _ => {}
        }
        filled
    }

    /// Whether this resolver looks anything up (`disabled()` does not).
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Waits, at most `timeout`, until every queued lookup has been answered; whether it
    /// got there. For tests and the one-shot modes, which want names before printing.
    pub fn settle(&self, timeout: Duration) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.shared.settle(timeout))
    }

    /// How the latest call of each kind of lookup (Docker, Podman, Slurm) went; empty until
    /// one was made.
    pub fn statuses(&self) -> Vec<LookupStatus> {
        self.inner
            .as_ref()
            .map(|inner| inner.shared.book().statuses.clone())
            .unwrap_or_default()
    }

    /// Why the latest lookup of `key` failed, while that failure is cached.
    pub fn failure(&self, key: &Key) -> Option<LookupError> {
        let book = self.inner.as_ref()?.shared.book();
        match book.cache.state(key)? {
            cache::State::Failed { error, .. } => Some(error.clone()),
            _ => None,
        }
    }

    pub fn stats(&self) -> Stats {
        self.inner.as_ref().map_or(
            Stats {
                cached: 0,
                in_flight: 0,
                performed: 0,
            },
            Inner::stats,
        )
    }
}

impl Inner {
    /// The cached names for `key`, queueing a lookup when it is unknown or due a retry.
    fn ask(&mut self, key: &Key) -> Option<Names> {
        let now = (self.shared.clock)();
        if self.worker.is_none() {
            let lookups = self.lookups.take()?;
            // No thread to be had: run without names rather than fail the sample.
            self.worker = Some(Worker::start(Arc::clone(&self.shared), lookups).ok()?);
        }
        let worker = self.worker.as_ref()?;
        let mut book = self.shared.book();
        match book.cache.ask(key, now, &self.shared.policy) {
            Lookup::Found(names) => Some(names),
            Lookup::Wait => None,
            Lookup::Ask => {
                // Under the lock, so the worker cannot answer before it is counted.
                if worker.queue.try_send(key.clone()).is_ok() {
                    book.in_flight += 1;
                } else {
                    // The queue is full (or the worker is gone): ask on a later sample.
                    book.cache.unqueue(key);
                }
                None
            }
        }
    }

    fn stats(&self) -> Stats {
        let book = self.shared.book();
        Stats {
            cached: book.cache.len(),
            in_flight: book.in_flight,
            performed: book.performed,
        }
    }
}

#[cfg(test)]
mod tests;
