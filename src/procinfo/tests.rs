//! ProcInfo against fixture /proc trees: identity, CPU deltas, caches, namespaces,
//! workloads and environments.

use super::*;
use crate::reading::workload::{Engine, Workload};

const BTIME: u64 = 1_700_000_000;

/// A fixture /proc tree in a temporary folder.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("stat"),
            format!("cpu  1 2 3 4\nintr 5\nbtime {BTIME}\nprocesses 9\n"),
        )
        .unwrap();
        Fixture { dir }
    }

    fn proc_info(&self) -> ProcInfo {
        ProcInfo::new(self.dir.path(), 100, 4096)
    }

    /// Writes a process: its stat line with the given CPU and start ticks and RSS pages.
    fn process(&self, pid: u32, comm: &str, uid: u32, cmdline: &[u8], cpu: u64, start: u64) {
        let d = self.dir.path().join(pid.to_string());
        std::fs::create_dir_all(&d).unwrap();
        self.set_cpu(pid, comm, cpu, start);
        std::fs::write(
            d.join("status"),
            format!("Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nVmRSS:\t1 kB\n"),
        )
        .unwrap();
        std::fs::write(d.join("cmdline"), cmdline).unwrap();
    }

    fn set_cpu(&self, pid: u32, comm: &str, cpu: u64, start: u64) {
        // utime carries all the CPU ticks, stime is 0; rss is 2560 pages (10 MiB).
        let line = format!(
            "{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194304 100 0 0 0 {cpu} 0 0 0 20 0 1 0 \
             {start} 123456789 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0\n"
        );
        std::fs::write(self.dir.path().join(pid.to_string()).join("stat"), line).unwrap();
    }
}

fn visible(h: HostProc) -> ProcDetails {
    match h {
        HostProc::Visible(d) => d,
        other => panic!("expected a visible process, got {other:?}"),
    }
}

#[test]
fn reads_user_command_memory_and_start_time() {
    let fx = Fixture::new();
    fx.process(
        4242,
        "python3",
        0,
        b"python3\0train.py\0--lr\x000.1\0",
        50,
        12_345,
    );
    let mut info = fx.proc_info();
    let d = visible(info.lookup(4242, Instant::now()));
    assert_eq!(d.uid, 0);
    assert_eq!(&*d.user, "root");
    assert_eq!(&*d.command, "python3 train.py --lr 0.1");
    assert_eq!(d.host_memory, Some(Bytes(2560 * 4096)));
    assert_eq!(
        d.started,
        SystemTime::UNIX_EPOCH + Duration::from_secs(BTIME) + Duration::from_millis(123_450)
    );
    assert_eq!(d.cpu_percent, None, "no CPU% before a second sample");
}

#[test]
fn cpu_percent_is_the_delta_between_samples() {
    let fx = Fixture::new();
    fx.process(7, "worker", 0, b"worker\0", 1_000, 500);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    assert_eq!(visible(info.lookup(7, t0)).cpu_percent, None);
    // 150 ticks at 100 Hz = 1.5 s of CPU over 1 s: 150% (more than one core).
    fx.set_cpu(7, "worker", 1_150, 500);
    let d = visible(info.lookup(7, t0 + Duration::from_secs(1)));
    assert_eq!(d.cpu_percent, Some(150.0));
    // Idle since: a real zero, not absent.
    let d = visible(info.lookup(7, t0 + Duration::from_secs(3)));
    assert_eq!(d.cpu_percent, Some(0.0));
}

#[test]
fn a_reused_pid_is_a_new_process() {
    let fx = Fixture::new();
    fx.process(9, "old", 0, b"old-job\0", 1_000, 500);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    info.lookup(9, t0);
    // Same PID, later start time: static data is re-read and there is no CPU delta.
    fx.process(9, "new", 4_242_424, b"new-job\0", 10, 9_000);
    let d = visible(info.lookup(9, t0 + Duration::from_secs(1)));
    assert_eq!(&*d.command, "new-job");
    assert_eq!(d.cpu_percent, None);
    assert_eq!(&*d.user, "4242424", "an unknown UID shows as its number");
}

#[test]
fn static_data_is_cached_per_process() {
    let fx = Fixture::new();
    fx.process(11, "job", 0, b"job --first\0", 0, 77);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    info.lookup(11, t0);
    // Rewriting cmdline is not noticed for the same (PID, start time): it was cached.
    std::fs::write(fx.dir.path().join("11/cmdline"), b"changed\0").unwrap();
    let d = visible(info.lookup(11, t0 + Duration::from_secs(1)));
    assert_eq!(&*d.command, "job --first");
}

#[test]
fn empty_cmdline_falls_back_to_the_name_and_odd_names_parse() {
    let fx = Fixture::new();
    fx.process(12, "kworker/0:1 (x)", 0, b"", 0, 1);
    let d = visible(fx.proc_info().lookup(12, Instant::now()));
    assert_eq!(&*d.command, "[kworker/0:1 (x)]");
}

#[test]
fn on_the_host_a_missing_pid_has_exited_and_an_unreadable_one_is_hidden() {
    let fx = Fixture::new();
    // A directory whose stat cannot be read: what hidepid=1 looks like (files EACCES).
    // Root can read anything, so the fixture leaves the file out instead of chmod-ing it.
    std::fs::create_dir_all(fx.dir.path().join("13")).unwrap();
    let mut info = fx.proc_info();
    assert_eq!(info.namespace(), PidNamespace::Host);
    // Never seen and not there: exited (a bare host has no other namespace to blame),
    // and it stays exited for as long as NVML keeps listing it.
    for _ in 0..3 {
        assert_eq!(info.lookup(99_999, Instant::now()), HostProc::Exited);
    }
    assert_eq!(info.lookup(13, Instant::now()), HostProc::Hidden);
}

#[test]
fn in_a_child_namespace_host_pids_are_never_read_locally() {
    let fx = Fixture::new();
    // What `unshare --pid --fork --mount-proc sh -c 'sleep 100 & …'` shows: PID 1 is
    // the local sh, PID 2 the local sleep. NVML's 1 and 2 are host PIDs, not these.
    std::fs::create_dir_all(fx.dir.path().join("self/ns")).unwrap();
    std::os::unix::fs::symlink("pid:[4026532999]", fx.dir.path().join("self/ns/pid")).unwrap();
    fx.process(1, "sh", 0, b"sh\0-c\0sleep 100\0", 1, 1);
    fx.process(2, "sleep", 0, b"sleep\x00100\0", 1, 2);
    let mut info = fx.proc_info();
    assert_eq!(info.namespace(), PidNamespace::Child);
    let seen = info.sample([1, 2], Instant::now());
    assert_eq!(seen[&1], HostProc::OtherNamespace);
    assert_eq!(seen[&2], HostProc::OtherNamespace);
    assert_eq!(
        info.identity(2),
        None,
        "nothing to re-check a signal against"
    );
    assert_eq!(info.cache_sizes(), (0, 0));
}

#[test]
fn in_a_child_namespace_reading_the_hosts_proc_our_processes_are_mapped() {
    // `unshare --pid --fork` without --mount-proc: /proc is the host's, so NVML's host
    // PIDs are its directories; ours are reachable by their PID here (NSpid's last entry).
    let fx = Fixture::new();
    let ours = "pid:[4026532451]";
    let link = |pid: &str, ns: &str| {
        let dir = fx.dir.path().join(pid).join("ns");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(ns, dir.join("pid")).unwrap();
    };
    let nspid = |pid: u32, line: &str| {
        let status = fx.dir.path().join(pid.to_string()).join("status");
        let mut text = std::fs::read_to_string(&status).unwrap();
        text.push_str(&format!("NSpid:\t{line}\n"));
        std::fs::write(status, text).unwrap();
    };
    link("self", ours);
    std::fs::write(fx.dir.path().join("self/status"), "NSpid:\t81000\t1\n").unwrap();
    fx.process(1, "systemd", 0, b"/sbin/init\0", 1, 1);
    link("1", "pid:[4026531836]");
    nspid(1, "1");
    // Host PID 81300 is our PID 7, a user's job; host PID 2 is the host's kthreadd, while
    // our own PID 2 is something else entirely.
    fx.process(81300, "python", 1000, b"python\0train.py\0", 5, 40);
    link("81300", ours);
    nspid(81300, "81300\t7");
    fx.process(2, "kthreadd", 0, b"", 0, 1);
    link("2", "pid:[4026531836]");
    nspid(2, "2");
    let mut info = fx.proc_info();
    assert_eq!(
        info.namespace(),
        PidNamespace::ChildWithHostProc { own: 4026532451 }
    );
    let seen = info.sample([81300, 2, 99_999], Instant::now());
    assert_eq!(&*visible(seen[&81300].clone()).command, "python train.py");
    assert_eq!(
        seen[&2],
        HostProc::OtherNamespace,
        "a host process is not ours"
    );
    assert_eq!(
        seen[&99_999],
        HostProc::Exited,
        "the host's /proc lists every process"
    );
    let id = info.identity(81300).expect("our process");
    assert_eq!((id.uid, id.pid_here), (1000, 7));
    assert_eq!(
        info.identity(2),
        None,
        "nothing to signal outside our namespace"
    );
}

#[test]
fn sample_looks_up_each_pid_once_and_forgets_the_rest() {
    let fx = Fixture::new();
    fx.process(20, "a", 0, b"a\0", 100, 5);
    fx.process(21, "b", 0, b"b\0", 100, 5);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    let first = info.sample([20, 21, 20], t0);
    assert_eq!(first.len(), 2);
    fx.set_cpu(20, "a", 200, 5);
    // 21 is no longer on a GPU: its cache entry goes, so a later sighting starts afresh.
    let second = info.sample([20], t0 + Duration::from_secs(1));
    assert_eq!(visible(second[&20].clone()).cpu_percent, Some(100.0));
    assert!(!info.known.contains_key(&21));
    let third = info.sample([20, 21], t0 + Duration::from_secs(2));
    assert_eq!(visible(third[&21].clone()).cpu_percent, None);
}

#[test]
fn stat_parsing_rejects_garbage() {
    assert_eq!(parse_stat("not a stat line"), None);
    assert_eq!(parse_stat("1 (x) S 1 2"), None);
    assert_eq!(
        parse_uids("Name:\tx\nUid:\t1000\t1001\t1001\t1001\n").map(|u| u.effective),
        Some(1001),
        "the effective uid is the owner"
    );
    let setuid = parse_uids("Uid:\t65534\t0\t0\t0\n").unwrap();
    assert!(setuid.any_root() && setuid.real == 65534 && setuid.effective == 0);
    let saved = parse_uids("Uid:\t1000\t1000\t0\t1000\n").unwrap();
    assert!(saved.any_root(), "a saved 0 can become root again");
    assert!(
        !parse_uids("Uid:\t1000\t1000\t1000\t1000\n")
            .unwrap()
            .any_root()
    );
    assert_eq!(join_cmdline(b"a\0b c\0\0"), "a b c");
}

#[test]
fn the_workload_and_gpu_environment_are_read_once_per_process() {
    let fx = Fixture::new();
    let id = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";
    fx.process(30, "python3", 1000, b"python3\0train.py\0", 0, 5);
    let d = fx.dir.path().join("30");
    std::fs::write(
        d.join("cgroup"),
        format!("0::/system.slice/docker-{id}.scope\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("environ"),
        b"HOME=/root\0CUDA_VISIBLE_DEVICES=2,3\0AWS_SECRET_ACCESS_KEY=hunter2\0NCCL_DEBUG=INFO\0",
    )
    .unwrap();
    fx.process(31, "bash", 1000, b"bash\0", 0, 6);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    let job = visible(info.lookup(30, t0));
    match job.context.workload.as_deref() {
        Some(Workload::Container {
            engine, id: got, ..
        }) => {
            assert_eq!((*engine, got.as_str()), (Engine::Docker, id))
        }
        other => panic!("{other:?}"),
    }
    let env = job.context.env.as_deref().expect("readable");
    assert_eq!(env.get("CUDA_VISIBLE_DEVICES"), Some("2,3"));
    assert_eq!(
        env.vars()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["CUDA_VISIBLE_DEVICES", "NCCL_DEBUG"],
        "only GPU- and job-related variables are kept"
    );
    // No cgroup file, no environ (not readable): no workload, env unknown — not empty;
    // its parent is init, so its chain is known and empty.
    let shell = visible(info.lookup(31, t0));
    let by_init = ProcContext {
        parents: Some(Arc::new(Vec::new())),
        ..ProcContext::default()
    };
    assert_eq!(shell.context, by_init);
    // Cached with the process: a changed file is not re-read for the same identity.
    std::fs::write(d.join("cgroup"), "0::/\n").unwrap();
    let again = visible(info.lookup(30, t0 + Duration::from_secs(1)));
    assert_eq!(again.context, job.context);
}

/// A docker process (40) and a Slurm process (41) whose environment names its job.
fn named_processes() -> Fixture {
    let fx = Fixture::new();
    let id = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";
    fx.process(40, "python3", 1000, b"python3\0train.py\0", 0, 5);
    std::fs::write(
        fx.dir.path().join("40/cgroup"),
        format!("0::/system.slice/docker-{id}.scope\n"),
    )
    .unwrap();
    fx.process(41, "python3", 1000, b"python3\0sweep.py\0", 0, 6);
    let d = fx.dir.path().join("41");
    std::fs::write(
        d.join("cgroup"),
        "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n",
    )
    .unwrap();
    std::fs::write(
        d.join("environ"),
        b"SLURM_JOB_ID=77\0SLURM_JOB_NAME=sweep\0",
    )
    .unwrap();
    fx
}

#[test]
fn the_first_sample_waits_briefly_for_names_and_later_ones_reuse_them() {
    use crate::reading::workload::SlurmNames;
    use names::{ContainerFacts, Lookups, NameResolver, Policy};
    let fx = named_processes();
    let lookups = Lookups {
        containers: Box::new(|_: Engine, _: &str, _: Duration| {
            let mut facts = ContainerFacts::default();
            facts.names.name = Some("llm-train-worker-1".into());
            Ok(facts)
        }),
        // No scontrol here: the job's environment names it.
        slurm: Box::new(|_: u64, _: Duration| {
            Err(names::LookupError::Unavailable("no scontrol".into()))
        }),
        ..Lookups::none()
    };
    let resolver = NameResolver::new(lookups, Policy::default(), Arc::new(Instant::now));
    let mut info = fx.proc_info().with_names(resolver);
    let container_name = |d: &ProcDetails| match d.context.workload.as_deref() {
        Some(Workload::Container { names, .. }) => names.name.clone(),
        other => panic!("{other:?}"),
    };
    let t0 = Instant::now();
    // The first sample (what `--once` prints) waits up to 300 ms for the lookups.
    let first = info.sample([40, 41], t0);
    assert_eq!(
        container_name(&visible(first[&40].clone())).as_deref(),
        Some("llm-train-worker-1")
    );
    let second = info.sample([40, 41], t0 + Duration::from_secs(1));
    let job = visible(second[&40].clone());
    assert_eq!(container_name(&job).as_deref(), Some("llm-train-worker-1"));
    match visible(second[&41].clone()).context.workload.as_deref() {
        Some(Workload::Slurm { job: 77, names, .. }) => assert_eq!(
            names,
            &SlurmNames {
                name: Some("sweep".into()),
                ..SlurmNames::default()
            }
        ),
        other => panic!("{other:?}"),
    }
    // Named once: later samples share the same workload instead of asking again.
    let third = info.sample([40], t0 + Duration::from_secs(2));
    assert!(Arc::ptr_eq(
        job.context.workload.as_ref().unwrap(),
        visible(third[&40].clone())
            .context
            .workload
            .as_ref()
            .unwrap()
    ));
    assert_eq!(info.names().stats().performed, 2);
}

/// Writes a bare stat line for an ancestor: only its name and parent matter.
fn ancestor(f: &Fixture, pid: u32, comm: &str, ppid: u32) {
    let d = f.dir.path().join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    let line = format!(
        "{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194304 100 0 0 0 1 0 0 0 20 0 1 0 \
         5 123456789 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0\n"
    );
    std::fs::write(d.join("stat"), line).unwrap();
}

#[test]
fn the_parent_chain_is_read_up_to_init_outermost_first() {
    let f = Fixture::new();
    ancestor(&f, 10, "sshd", 1);
    ancestor(&f, 20, "bash", 10);
    ancestor(&f, 30, "tmux: server", 20);
    f.process(40, "python", 1000, b"python\0train.py\0", 0, 500);
    // The GPU process's parent is tmux (field 4 of its stat line).
    let stat = std::fs::read_to_string(f.dir.path().join("40/stat")).unwrap();
    std::fs::write(
        f.dir.path().join("40/stat"),
        stat.replacen(" S 1 ", " S 30 ", 1),
    )
    .unwrap();
    let mut p = f.proc_info();
    let d = visible(p.lookup(40, Instant::now()));
    let chain = d.context.parents.expect("read");
    assert_eq!(*chain, vec!["sshd", "bash", "tmux: server"]);
    // A loop (PID reuse racing the read, or a broken fixture) stops at the depth bound.
    ancestor(&f, 50, "a", 51);
    ancestor(&f, 51, "b", 50);
    f.process(60, "python", 1000, b"python\0", 0, 600);
    let stat = std::fs::read_to_string(f.dir.path().join("60/stat")).unwrap();
    std::fs::write(
        f.dir.path().join("60/stat"),
        stat.replacen(" S 1 ", " S 50 ", 1),
    )
    .unwrap();
    let d = visible(p.lookup(60, Instant::now()));
    assert_eq!(d.context.parents.expect("read").len(), 16);
}

/// Processes seen in one sample share the ancestors read for the first of them (the
/// workers of a job share their launcher); the next sample reads them afresh.
#[test]
fn ancestors_are_read_once_per_sample_for_every_process_that_shares_them() {
    let f = Fixture::new();
    ancestor(&f, 10, "sshd", 1);
    ancestor(&f, 20, "torchrun", 10);
    for (pid, start) in [(40, 500), (41, 501), (42, 502)] {
        f.process(pid, "python", 1000, b"python\0train.py\0", 0, start);
        let path = f.dir.path().join(format!("{pid}/stat"));
        let stat = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, stat.replacen(" S 1 ", " S 20 ", 1)).unwrap();
    }
    let mut p = f.proc_info();
    let now = Instant::now();
    let parents = |h: HostProc| (*visible(h).context.parents.expect("read")).clone();
    assert_eq!(parents(p.lookup(40, now)), ["sshd", "torchrun"]);
    // Gone from /proc, yet named for the other worker of the same sample: not read again.
    std::fs::remove_dir_all(f.dir.path().join("20")).unwrap();
    assert_eq!(parents(p.lookup(41, now)), ["sshd", "torchrun"]);
    // A later sample reads the chain again, and it now stops where the parent is gone.
    let later = now + Duration::from_secs(1);
    assert_eq!(parents(p.lookup(42, later)), Vec::<String>::new());
}

/// Slurm without cgroups (`proctrack/linuxproc`): the job's tasks sit in the root cgroup
/// or slurmd's service; the job comes from the task's environment (with its step and array
/// task). A cgroup that names a workload is never overridden by a variable.
#[test]
fn slurm_without_cgroups_takes_the_job_from_the_environment() {
    let fx = Fixture::new();
    let env = b"SLURM_JOB_ID=9\0SLURM_STEP_ID=0\0SLURM_ARRAY_JOB_ID=5\0SLURM_ARRAY_TASK_ID=1\0";
    for (pid, cgroup) in [
        (50, "0::/\n".to_string()),
        (51, "0::/system.slice/slurmd.service\n".to_string()),
        (52, "0::/system.slice/jupyter.service\n".to_string()),
    ] {
        fx.process(pid, "python3", 1000, b"python3\0x.py\0", 0, 5);
        let d = fx.dir.path().join(pid.to_string());
        std::fs::write(d.join("cgroup"), cgroup).unwrap();
        std::fs::write(d.join("environ"), env).unwrap();
    }
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    for pid in [50, 51] {
        let d = visible(info.lookup(pid, t0));
        match d.context.workload.as_deref() {
            Some(Workload::Slurm { job: 9, step, .. }) => {
                assert_eq!(step.as_deref(), Some("0"), "pid {pid}")
            }
            other => panic!("pid {pid}: {other:?}"),
        }
    }
    let svc = visible(info.lookup(52, t0));
    assert!(
        matches!(
            svc.context.workload.as_deref(),
            Some(Workload::Service { name, .. }) if name == "jupyter"
        ),
        "{:?}",
        svc.context.workload
    );
    // With a resolver, the array task comes from the environment too.
    let mut resolver = names::NameResolver::new(
        names::Lookups::none(),
        names::Policy::default(),
        Arc::new(Instant::now),
    );
    let w = visible(info.lookup(50, t0)).context;
    let filled = resolver.fill(w.workload.as_deref().unwrap(), w.env.as_deref());
    match filled.workload {
        Workload::Slurm { names, .. } => assert_eq!(
            names.array,
            Some(crate::reading::workload::ArrayTask { job: 5, task: 1 })
        ),
        other => panic!("{other:?}"),
    }
}

/// Handles kept open, counted from the cache (for the test below).
fn kept_handles(info: &ProcInfo) -> usize {
    info.known
        .values()
        .filter(|k| k.stat_file.is_some())
        .count()
}

/// With the open-files limit raised (as `main` does), a sample of 300 GPU processes keeps
/// every one's /proc/PID/stat open for the next: the later samples read each with one
/// `pread` instead of an open, reads and a close. And past the bound (100 here), as many as
/// it allows stay kept. Before, the bound was 256 whatever the limit and was checked
/// against every process known: past it, the second sample let go of every handle, so at
/// 1,000 processes all were opened every second (80 % of the CPU at 64 GPUs).
#[test]
fn hundreds_of_gpu_processes_keep_their_stat_files_open_within_the_fd_limit() {
    crate::fd_limit::raise_to_hard();
    let wanted = 300;
    if crate::fd_limit::soft() < wanted * 4 + 64 {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: the hard open-files limit {} is too low for this test",
            crate::fd_limit::soft()
        );
        eprintln!("skipped: the open-files limit is below {}", wanted * 4 + 64);
        return;
    }
    let mut children: Vec<std::process::Child> = (0..wanted)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("sleep")
        })
        .collect();
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    let now = std::time::Instant::now();
    let kept_after_samples = |max: Option<usize>| {
        let mut info = ProcInfo::new("/proc", 100, 4096).with_local_pids();
        if let Some(max) = max {
            info.max_kept_stat_files = max;
        }
        let first = info.sample(pids.iter().copied(), now);
        let visible = first
            .values()
            .filter(|h| matches!(h, HostProc::Visible(_)))
            .count();
        let mut kept = Vec::new();
        for s in 1..4 {
            info.sample(
                pids.iter().copied(),
                now + std::time::Duration::from_secs(s),
            );
            kept.push(kept_handles(&info));
        }
        (visible, kept)
    };
    let within = kept_after_samples(None);
    let past = kept_after_samples(Some(100));
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(within.0, wanted, "every child is readable");
    assert_eq!(within.1, [wanted; 3], "handles kept for the next samples");
    assert_eq!(past.1, [100; 3], "past the bound, as many as it allows");
}

/// A process's user and command are read on its first sighting and handed on by sharing,
/// not copied every sample (issue 25: those copies and frees were a tenth of the work at
/// 1,000 processes); a reused PID is a new process and reads its own.
#[test]
fn user_and_command_are_shared_between_samples_of_one_process() {
    let fx = Fixture::new();
    fx.process(30, "train", 4242424, b"train\0--fast\0", 10, 5);
    let mut info = fx.proc_info();
    let t0 = Instant::now();
    let first = visible(info.lookup(30, t0));
    fx.set_cpu(30, "train", 20, 5);
    let second = visible(info.lookup(30, t0 + Duration::from_secs(1)));
    assert!(Arc::ptr_eq(&first.command, &second.command));
    assert!(Arc::ptr_eq(&first.user, &second.user));
    fx.process(30, "other", 4242424, b"other\0", 0, 900);
    let reused = visible(info.lookup(30, t0 + Duration::from_secs(2)));
    assert_eq!(&*reused.command, "other");
    assert!(!Arc::ptr_eq(&first.command, &reused.command));
}
