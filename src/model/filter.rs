//! The process filter typed after `/`: plain words match user, job, command, PID, or the
//! MIG instance a process runs on (its `MIG-` UUID or profile, e.g. `3g.40gb`); fields
//! `user:` `gpu:` `cmd:` `pid:` `job:` (an id, exactly) `job~` (text) `container:` `pod:` and comparisons `vram>10G`
//! `vram<1G` narrow further; all terms must hold (AND). Parsing and matching only; invalid text is an error to show, never a crash.

use super::jobs::{self, Facet};
use super::procs::ProcRow;
use crate::units::Bytes;

#[derive(Debug, Clone, PartialEq)]
enum Term {
    /// Matches user, job, command or MIG instance (case-insensitive substring) or PID (prefix).
    Text(String),
    User(String),
    Gpu(Vec<u32>),
    Command(String),
    Pid(u32),
    /// `job:`, `job~`, `container:`, `pod:` — a workload by name or id (see `jobs::matches`).
    Workload(Facet, String),
    /// `vram>SIZE` (strictly) or `vram>=SIZE`; `inclusive` tells which.
    VramAbove(Bytes, bool),
    VramBelow(Bytes, bool),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    terms: Vec<Term>,
}

const HELP: &str = "use words, user:NAME, gpu:N[,N], cmd:TEXT, pid:N, job:ID, job~TEXT, \
                    container:NAME, pod:NAME, vram>SIZE, vram<SIZE";

impl Filter {
    /// Parses the filter line; an empty line is the empty filter (matches everything).
    pub fn parse(text: &str) -> Result<Filter, String> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            terms.push(parse_term(word)?);
        }
        Ok(Filter { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, row: &ProcRow) -> bool {
        self.matches_lowered(row, &Lowered::of(row))
    }

    /// `matches` with the row's text already lower-cased (once per sample, by the table):
    /// a keystroke then costs no lower-casing of long command lines.
    pub fn matches_lowered(&self, row: &ProcRow, lowered: &Lowered) -> bool {
        self.terms.iter().all(|t| term_matches(t, row, lowered))
    }
}

/// The longest filter line kept: a paste of kilobytes into the prompt is cut here, so a
/// keystroke never costs seconds of matching.
pub const MAX_FILTER_CHARS: usize = 256;

/// A row's text as the filter compares it: lower-cased once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lowered {
    user: String,
    job: Option<String>,
    command: String,
    /// The MIG instance's UUID and profile, `mig-4b6f… 3g.40gb`.
    instance: Option<String>,
}

impl Lowered {
    pub fn of(row: &ProcRow) -> Lowered {
        Lowered {
            user: row.user.as_deref().unwrap_or("").to_lowercase(),
            job: row.job.as_ref().map(|j| j.to_lowercase()),
            command: row.command.to_lowercase(),
            instance: row.instance.as_ref().map(|i| {
                format!("{} {}", i.id.0, i.profile.as_deref().unwrap_or("")).to_lowercase()
            }),
        }
    }
}

fn parse_term(word: &str) -> Result<Term, String> {
    let lower = word.to_lowercase();
    for (op, above, inclusive) in [
        (">=", true, true),
        ("<=", false, true),
        (">", true, false),
        ("<", false, false),
    ] {
        if let Some(rest) = lower.strip_prefix("vram").and_then(|r| r.strip_prefix(op)) {
            let size = rest
                .parse::<Bytes>()
                .map_err(|e| format!("vram{op}: {e}"))?;
            return Ok(if above {
                Term::VramAbove(size, inclusive)
            } else {
                Term::VramBelow(size, inclusive)
            });
        }
    }
    // `job~text`: the workload's label, names and ids as text (`job:` wants an id).
    if let Some(text) = ["job~", "j~"].iter().find_map(|p| lower.strip_prefix(p)) {
        if text.is_empty() {
            return Err(format!("job~: needs a value ({HELP})"));
        }
        return Ok(Term::Workload(Facet::JobText, text.to_string()));
    }
    let Some((field, value)) = lower.split_once(':') else {
        return Ok(Term::Text(lower));
    };
    if value.is_empty() {
        return Err(format!("{field}: needs a value ({HELP})"));
    }
    match field {
        "user" | "u" => Ok(Term::User(value.to_string())),
        "cmd" | "command" | "c" => Ok(Term::Command(value.to_string())),
        "gpu" | "g" => value
            .split(',')
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| format!("gpu: {v:?} is not a GPU index"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Term::Gpu),
        "job" | "j" => Ok(Term::Workload(Facet::Job, value.to_string())),
        "container" => Ok(Term::Workload(Facet::Container, value.to_string())),
        "pod" => Ok(Term::Workload(Facet::Pod, value.to_string())),
        "pid" | "p" => value
            .parse::<u32>()
            .map(Term::Pid)
            .map_err(|_| format!("pid: {value:?} is not a PID")),
        other => Err(format!("unknown filter field {other:?} ({HELP})")),
    }
}

fn term_matches(term: &Term, row: &ProcRow, lowered: &Lowered) -> bool {
    match term {
        Term::Text(t) => {
            lowered.user.contains(t.as_str())
                || lowered.job.as_ref().is_some_and(|j| j.contains(t.as_str()))
                || lowered.command.contains(t.as_str())
                || lowered
                    .instance
                    .as_ref()
                    .is_some_and(|i| i.contains(t.as_str()))
                || row.key.pid.to_string().starts_with(t.as_str())
        }
        Term::User(u) => lowered.user == *u,
        Term::Gpu(list) => list.contains(&row.gpu_index),
        Term::Command(c) => lowered.command.contains(c.as_str()),
        Term::Pid(p) => row.key.pid == *p,
        Term::Workload(facet, needle) => row
            .context
            .workload
            .as_deref()
            .is_some_and(|w| jobs::matches(w, *facet, needle)),
        Term::VramAbove(b, inclusive) => {
            row.vram.is_some_and(|v| v > *b || (*inclusive && v == *b))
        }
        Term::VramBelow(b, inclusive) => {
            row.vram.is_some_and(|v| v < *b || (*inclusive && v == *b))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::procs::{ProcKey, Visibility};
    use crate::reading::{GpuId, ProcKind};

    fn row(pid: u32, gpu: u32, user: &str, cmd: &str, vram_gib: f64) -> ProcRow {
        ProcRow {
            key: ProcKey {
                pid,
                started: None,
                gpu: GpuId(format!("GPU-{gpu}")),
            },
            gpu_index: gpu,
            host: None,
            kind: ProcKind::Compute,
            vram: Some(Bytes::from_gib(vram_gib)),
            gpu_util: None,
            cpu: None,
            host_memory: None,
            elapsed: None,
            user: Some(user.into()),
            uid: Some(1000),
            command: cmd.into(),
            visibility: Visibility::Visible,
            job: None,
            context: Default::default(),
            instance: None,
        }
    }

    fn pids(filter: &str) -> Vec<u32> {
        let rows = [
            row(1000, 0, "alice", "python train.py", 70.0),
            row(2020, 2, "bob", "python finetune.py", 40.0),
            row(3030, 3, "carol", "./bench_matmul", 52.0),
            row(4000, 4, "dave", "jupyter kernel", 0.5),
        ];
        let f = Filter::parse(filter).unwrap();
        rows.iter()
            .filter(|r| f.matches(r))
            .map(|r| r.key.pid)
            .collect()
    }

    #[test]
    fn plain_words_match_user_command_or_pid() {
        assert_eq!(pids(""), vec![1000, 2020, 3030, 4000]);
        assert_eq!(pids("ALICE"), vec![1000]);
        assert_eq!(pids("python"), vec![1000, 2020]);
        assert_eq!(pids("30"), vec![3030]);
    }

    #[test]
    fn plain_words_match_the_mig_instance_uuid_or_profile() {
        let mut on_mig = row(5000, 0, "erin", "python serve.py", 8.0);
        on_mig.instance = Some(crate::model::mig::InstanceTag {
            id: GpuId("MIG-4b6f1c2d-0a1b".into()),
            gpu_instance: Some(1),
            compute_instance: Some(0),
            profile: Some("3g.40gb".into()),
        });
        let plain = row(5001, 0, "erin", "python serve.py", 8.0);
        for word in ["mig-4b6f", "3G.40GB", "4b6f1c2d"] {
            let f = Filter::parse(word).unwrap();
            assert!(f.matches(&on_mig), "{word}");
            assert!(!f.matches(&plain), "{word}");
        }
    }

    #[test]
    fn fields_and_comparisons_combine_with_and() {
        assert_eq!(pids("user:bob"), vec![2020]);
        assert_eq!(pids("user:bo"), Vec::<u32>::new(), "user: is an exact name");
        assert_eq!(pids("gpu:3"), vec![3030]);
        assert_eq!(pids("gpu:0,4"), vec![1000, 4000]);
        assert_eq!(pids("cmd:python vram>50G"), vec![1000]);
        assert_eq!(pids("vram<1G"), vec![4000]);
        assert_eq!(pids("vram>40GiB"), vec![1000, 3030]);
        assert_eq!(pids("vram>=40GiB"), vec![1000, 2020, 3030]);
        assert_eq!(pids("pid:2020"), vec![2020]);
    }

    #[test]
    fn job_container_and_pod_terms_match_workloads() {
        use crate::reading::workload::{ContainerNames, Engine, SlurmNames, Workload};
        use std::sync::Arc;
        let with = |mut r: ProcRow, w: Workload| {
            r.job = jobs::label(&w);
            r.context.workload = Some(Arc::new(w));
            r
        };
        let rows = [
            with(
                row(1, 0, "alice", "python train.py", 40.0),
                Workload::Slurm {
                    job: 48121,
                    step: Some("0".into()),
                    uid: Some(1000),
                    names: SlurmNames {
                        name: Some("train-llama".into()),
                        ..Default::default()
                    },
                },
            ),
            with(
                row(2, 1, "root", "python serve.py", 20.0),
                Workload::Container {
                    engine: Engine::Docker,
                    id: "ab12".repeat(16),
                    names: ContainerNames {
                        name: Some("trainer-1".into()),
                        ..Default::default()
                    },
                    delegated_to: None,
                },
            ),
            row(3, 2, "carol", "python notebook.py", 1.0),
        ];
        let pids = |text: &str| -> Vec<u32> {
            let f = Filter::parse(text).unwrap();
            rows.iter()
                .filter(|r| f.matches(r))
                .map(|r| r.key.pid)
                .collect()
        };
        assert_eq!(pids("job:48121"), vec![1]);
        assert_eq!(pids("job:trainer-1"), vec![2], "job: names any workload");
        // `job:` is an id or a name exactly (it once matched 4812 and `trainer` too);
        // `job~` searches the text.
        assert_eq!(pids("job:4812"), Vec::<u32>::new());
        assert_eq!(pids("job:trainer"), Vec::<u32>::new());
        assert_eq!(pids("job~trainer"), vec![2]);
        assert_eq!(pids("job~llama"), vec![1]);
        assert!(Filter::parse("job~").is_err());
        assert_eq!(pids("container:trainer"), vec![2]);
        assert_eq!(pids("container:ab12ab"), vec![2], "an id prefix");
        assert_eq!(pids("container:48121"), Vec::<u32>::new());
        assert_eq!(pids("pod:trainer"), Vec::<u32>::new());
        assert_eq!(
            pids("llama"),
            vec![1],
            "plain words match the JOB label too"
        );
    }

    #[test]
    fn invalid_syntax_is_an_error_message() {
        assert!(
            Filter::parse("foo:bar")
                .unwrap_err()
                .starts_with("unknown filter field \"foo\"")
        );
        assert_eq!(
            Filter::parse("gpu:x").unwrap_err(),
            "gpu: \"x\" is not a GPU index"
        );
        assert!(
            Filter::parse("vram>lots")
                .unwrap_err()
                .starts_with("vram>:")
        );
        assert!(
            Filter::parse("user:")
                .unwrap_err()
                .starts_with("user: needs a value")
        );
        assert!(Filter::parse("pid:abc").is_err());
    }
}
