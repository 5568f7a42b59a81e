//! Slurm job facts: `scontrol show job -o <id>` when the command is there, run with a
//! deadline and killed (with anything it started) when it overruns; else what the job's
//! own environment says (`SLURM_JOB_NAME`, `_USER`, `_ACCOUNT`). Owns the command runner
//! and both parsers; must not cache or retry (the resolver does).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{LookupError, SlurmLookup};
use crate::reading::workload::{ArrayTask, ProcEnv, SlurmNames, Workload};

/// One job's line is well under a kilobyte; a job array prints one per task.
const MAX_OUTPUT: u64 = 256 * 1024;

/// Runs `scontrol`, found on `path` (a `PATH`-style list) when the lookup is made, so a
/// host without Slurm costs a few `stat`s per job id and no process.
#[derive(Debug, Clone)]
pub struct Scontrol {
    pub path: OsString,
}

impl Scontrol {
    pub fn new(path: impl Into<OsString>) -> Self {
        Scontrol { path: path.into() }
    }

    fn program(&self) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        std::env::split_paths(&self.path)
            .map(|dir| dir.join("scontrol"))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }
}

impl SlurmLookup for Scontrol {
    fn job(&self, job: u64, timeout: Duration) -> Result<SlurmNames, LookupError> {
        let program = self
            .program()
            .ok_or_else(|| LookupError::Unavailable("no scontrol on PATH".into()))?;
        let deadline = Instant::now() + timeout;
        let out = run(
            Command::new(&program).args(["show", "job", "-o", &job.to_string()]),
            deadline,
            timeout,
        )?;
        parse_job(&out, job)
    }
}

/// Runs `command` to completion by `deadline`, returning its standard output. In its own
/// process group, so an overrun kills whatever it started too (a wrapper script's
/// children would otherwise hold the pipe open).
fn run(command: &mut Command, deadline: Instant, timeout: Duration) -> Result<String, LookupError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| LookupError::Failed(format!("cannot run scontrol: {e}")))?;
    let stdout = child.stdout.take().expect("piped");
    // std has no read with a deadline on a pipe: a helper thread reads, this one waits.
    // It ends when the pipe closes, which the kill below guarantees.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(MAX_OUTPUT).read_to_end(&mut out);
        let _ = tx.send(read.map(|_| out));
    });
    let left = deadline.saturating_duration_since(Instant::now());
    let out = match rx.recv_timeout(left) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            kill(&mut child);
            return Err(LookupError::Failed(format!("reading scontrol: {e}")));
        }
        Err(_) => {
            kill(&mut child);
            return Err(LookupError::TimedOut(timeout));
        }
    };
    match wait(&mut child, deadline) {
        Some(status) if status.success() => Ok(String::from_utf8_lossy(&out).into_owned()),
        Some(status) => Err(LookupError::Failed(format!("scontrol {status}"))),
        None => {
            kill(&mut child);
            Err(LookupError::TimedOut(timeout))
        }
    }
}

/// The exit status once the child has exited, or `None` at the deadline. Polled: the
/// output is already read, so this is the moment between closing stdout and exiting.
fn wait(child: &mut Child, deadline: Instant) -> Option<std::process::ExitStatus> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills the child's whole process group and reaps the child.
fn kill(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the group the child leads (it was
        // spawned with process_group(0)); it touches no memory.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Parses `scontrol show job -o` output: one line per job (or array task) of `Key=Value`
/// pairs separated by spaces. Values may hold spaces (JobName, Comment, Command, paths),
/// so a word starts a new pair only when it begins with a key-shaped word and `=`; and
/// JobName, which is free text, runs up to ` UserId=`, its fixed successor.
pub fn parse_job(output: &str, job: u64) -> Result<SlurmNames, LookupError> {
    let wanted = job.to_string();
    let lines: Vec<_> = output.lines().map(pairs).collect();
    // The job's own line first: an array's first task has the array's id as its JobId,
    // and its line need not come first.
    let own = lines
        .iter()
        .find(|pairs| value(pairs, "JobId") == Some(&wanted));
    own.or_else(|| {
        lines
            .iter()
            .find(|pairs| value(pairs, "ArrayJobId") == Some(&wanted))
    })
    .map(|pairs| SlurmNames {
        name: value(pairs, "JobName").map(str::to_string),
        user: value(pairs, "UserId").and_then(user_name),
        account: value(pairs, "Account").map(str::to_string),
        array: array_task(value(pairs, "ArrayJobId"), value(pairs, "ArrayTaskId")),
    })
    .ok_or_else(|| LookupError::Failed(format!("no line for job {job} in scontrol's output")))
}

fn pairs(line: &str) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=').filter(|(k, _)| is_key(k)) else {
            break;
        };
        let end = if key == "JobName" {
            after.find(" UserId=")
        } else {
            next_pair(after)
        };
        let end = end.unwrap_or(after.len());
        out.push((key, after[..end].trim()));
        rest = after[end..].trim_start();
    }
    out
}

/// Where the next ` Key=` begins in `text`.
fn next_pair(text: &str) -> Option<usize> {
    text.match_indices(' ').map(|(i, _)| i).find(|&i| {
        let word = &text[i + 1..];
        word.split_once('=')
            .is_some_and(|(k, _)| is_key(k) && !k.contains(' '))
    })
}

/// Slurm's keys: `JobId`, `MCS_label`, `Socks/Node`, `NtasksPerN:B:S:C`, `TRES`.
fn is_key(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b':'))
}

fn value<'a>(pairs: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
        .filter(|v| !v.is_empty() && *v != "(null)")
}

/// `alice(1000)` → `alice`; a UID with no name prints as `(null)(1000)` or `1000(1000)`.
fn user_name(text: &str) -> Option<String> {
    let name = text.split_once('(').map_or(text, |(n, _)| n);
    (!name.is_empty() && !name.bytes().all(|b| b.is_ascii_digit())).then(|| name.to_string())
}

/// What the job's environment says, when the process's environment was readable and
/// belongs to this job (a process can carry a stale `SLURM_*` set from elsewhere).
pub fn from_env(env: &ProcEnv, job: u64) -> SlurmNames {
    let id = env.get("SLURM_JOB_ID").or_else(|| env.get("SLURM_JOBID"));
    if id.and_then(|i| i.trim().parse::<u64>().ok()) != Some(job) {
        return SlurmNames::default();
    }
    let var = |k: &str| env.get(k).filter(|v| !v.is_empty()).map(str::to_string);
    SlurmNames {
        name: var("SLURM_JOB_NAME"),
        user: var("SLURM_JOB_USER"),
        account: var("SLURM_JOB_ACCOUNT"),
        array: array_task(
            env.get("SLURM_ARRAY_JOB_ID"),
            env.get("SLURM_ARRAY_TASK_ID"),
        ),
    }
}

/// An array task from its array job id and task id, both plain numbers (a pending array's
/// `ArrayTaskId=1-10` names many tasks, none of them this one).
fn array_task(job: Option<&str>, task: Option<&str>) -> Option<ArrayTask> {
    Some(ArrayTask {
        job: job?.trim().parse().ok()?,
        task: task?.trim().parse().ok()?,
    })
}

/// The Slurm job a process's environment says it runs in (`SLURM_JOB_ID`, `SLURM_STEP_ID`),
/// for Slurm without cgroups (`proctrack/linuxproc` or `pgid`, common on small clusters),
/// where a job's processes sit in slurmd's cgroup or the root one and the path names no
/// job. Only asked when the cgroup names no workload: a variable is easier to set than a
/// cgroup path.
pub fn workload_from_env(env: &ProcEnv) -> Option<Workload> {
    let job = env
        .get("SLURM_JOB_ID")
        .or_else(|| env.get("SLURM_JOBID"))?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(Workload::Slurm {
        job,
        step: env
            .get("SLURM_STEP_ID")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        uid: None,
        names: SlurmNames::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scontrol show job -o 48121` on Slurm 23.11, trimmed of the less useful keys.
    const LINE: &str = "JobId=48121 JobName=llama ft run 2 UserId=alice(1000) GroupId=ml(2000) \
        MCS_label=N/A Priority=4294901757 Nice=0 Account=nlp-lab QOS=normal JobState=RUNNING \
        Reason=None Dependency=(null) RunTime=01:02:03 TimeLimit=2-00:00:00 \
        Partition=gpu NodeList=gpu07 BatchHost=gpu07 NumNodes=1 NumCPUs=16 \
        ReqB:S:C:T=0:0:*:* TRES=cpu=16,mem=128G,node=1,billing=16,gres/gpu=4 \
        Socks/Node=* NtasksPerN:B:S:C=0:0:*:* Command=/home/alice/run me.sh \
        WorkDir=/home/alice/llama ft Comment=tuning with lr=3e-4 Power= \
        TresPerNode=gres/gpu:4";

    #[test]
    fn names_come_from_a_one_line_job_record() {
        let names = parse_job(LINE, 48121).unwrap();
        assert_eq!(names.name.as_deref(), Some("llama ft run 2"));
        assert_eq!(names.user.as_deref(), Some("alice"));
        assert_eq!(names.account.as_deref(), Some("nlp-lab"));
        let pairs = pairs(LINE);
        assert_eq!(value(&pairs, "Command"), Some("/home/alice/run me.sh"));
        assert_eq!(value(&pairs, "WorkDir"), Some("/home/alice/llama ft"));
        assert_eq!(value(&pairs, "Comment"), Some("tuning with lr=3e-4"));
        assert_eq!(
            value(&pairs, "TRES"),
            Some("cpu=16,mem=128G,node=1,billing=16,gres/gpu=4")
        );
        assert_eq!(value(&pairs, "Power"), None);
    }

    #[test]
    fn a_job_name_may_look_like_pairs_itself() {
        let line = "JobId=5 JobName=lr=3e-4 Nodes=2 UserId=bob(1001) Account=cv";
        let names = parse_job(line, 5).unwrap();
        assert_eq!(names.name.as_deref(), Some("lr=3e-4 Nodes=2"));
        assert_eq!(names.user.as_deref(), Some("bob"));
        assert_eq!(names.account.as_deref(), Some("cv"));
    }

    #[test]
    fn array_tasks_null_accounts_and_unnamed_users() {
        let out = "JobId=7001 ArrayJobId=7000 ArrayTaskId=1 JobName=sweep UserId=(null)(4242) Account=(null)\n\
                   JobId=7002 ArrayJobId=7000 ArrayTaskId=2 JobName=sweep UserId=(null)(4242) Account=(null)\n";
        let names = parse_job(out, 7000).unwrap();
        assert_eq!(names.name.as_deref(), Some("sweep"));
        assert_eq!(names.user, None);
        assert_eq!(names.account, None);
        assert_eq!(user_name("1000(1000)"), None);
        // A task is known as `array_task`; the one asked about, wherever its line is.
        let task = parse_job(out, 7002).unwrap();
        assert_eq!(task.array, Some(ArrayTask { job: 7000, task: 2 }));
        assert_eq!(task.array.unwrap().to_string(), "7000_2");
        let first = "JobId=7001 ArrayJobId=7000 ArrayTaskId=1 JobName=a UserId=bob(1)\n\
                     JobId=7000 ArrayJobId=7000 ArrayTaskId=3 JobName=a UserId=bob(1)\n";
        assert_eq!(
            parse_job(first, 7000).unwrap().array,
            Some(ArrayTask { job: 7000, task: 3 })
        );
        let pending = "JobId=7100 ArrayJobId=7100 ArrayTaskId=1-10 JobName=a UserId=bob(1)\n";
        assert_eq!(parse_job(pending, 7100).unwrap().array, None);
    }

    #[test]
    fn garbage_or_another_job_is_a_failure() {
        for out in [
            "",
            "slurm_load_jobs error: Invalid job id specified",
            "JobId=1 JobName=x",
        ] {
            assert!(
                matches!(parse_job(out, 48121), Err(LookupError::Failed(_))),
                "{out:?}"
            );
        }
    }

    #[test]
    fn the_environment_answers_only_for_its_own_job() {
        let env = ProcEnv::from_vars(
            [
                ("SLURM_JOB_ID", "48121"),
                ("SLURM_JOB_NAME", "llama ft"),
                ("SLURM_JOB_USER", "alice"),
                ("SLURM_JOB_ACCOUNT", ""),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let names = from_env(&env, 48121);
        assert_eq!(names.name.as_deref(), Some("llama ft"));
        assert_eq!(names.user.as_deref(), Some("alice"));
        assert_eq!(names.account, None);
        assert_eq!(from_env(&env, 1), SlurmNames::default());
    }

    #[test]
    fn no_scontrol_on_the_path_is_unavailable_without_running_anything() {
        let empty = tempfile::tempdir().unwrap();
        let lookup = Scontrol::new(empty.path());
        assert!(matches!(
            lookup.job(1, Duration::from_millis(50)),
            Err(LookupError::Unavailable(_))
        ));
    }
}
