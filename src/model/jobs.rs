//! How a workload is named where people look: the JOB column, the GPU's owners line, the
//! per-job view and the filter's `job:`/`container:`/`pod:` terms. One short label per
//! workload (`slurm 48121 train-llama`, `docker trainer-1`, `k8s ml/bert-7f9c`,
//! `svc jupyter`); a login session has none, the user says it all. Pure.

use crate::reading::workload::{ContainerNames, Engine, PodNames, SlurmNames, Workload};

/// Characters of a container id or pod UID shown when no name is known (as `docker ps`).
const SHORT_ID: usize = 12;

/// A batch job as the scheduler or engine knows it, to tell two jobs of one user apart:
/// `pick` treats another job's memory as someone else's. Services and login sessions are
/// the person, not a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobKey {
    Slurm(u64),
    /// A container's full id.
    Container(String),
    /// A pod's UID (all its containers are one job).
    Pod(String),
}

impl JobKey {
    pub fn of(w: &Workload) -> Option<JobKey> {
        match w {
            Workload::Slurm { job, .. } => Some(JobKey::Slurm(*job)),
            Workload::Container { id, .. } => Some(JobKey::Container(id.clone())),
            Workload::Pod { uid, .. } => Some(JobKey::Pod(uid.clone())),
            Workload::Service { .. } | Workload::Session { .. } => None,
        }
    }
}

/// The label for the JOB column; `None` for a plain login-session process.
pub fn label(w: &Workload) -> Option<String> {
    Some(match w {
        Workload::Slurm { job, names, .. } => match &names.name {
            Some(name) => format!("slurm {} {name}", slurm_id(*job, names)),
            None => format!("slurm {}", slurm_id(*job, names)),
        },
        Workload::Container {
            engine, id, names, ..
        } => {
            format!("{} {}", engine_word(*engine), container_name(id, names))
        }
        Workload::Pod { uid, names, .. } => match (&names.namespace, &names.name) {
            (Some(ns), Some(name)) => format!("k8s {ns}/{name}"),
            (None, Some(name)) => format!("k8s {name}"),
            _ => format!("k8s pod {}", short(uid)),
        },
        Workload::Service { name, .. } => format!("svc {name}"),
        Workload::Session { .. } => return None,
    })
}

/// The label without a Slurm job's name, for the GPU's owners line where room is short
/// (`slurm 48121 (alice)`): people know their job by its number.
pub fn short_label(w: &Workload) -> Option<String> {
    match w {
        Workload::Slurm { job, names, .. } => Some(format!("slurm {}", slurm_id(*job, names))),
        _ => label(w),
    }
}

/// A Slurm job's id as its users know it: `5_1` for task 1 of array 5 (whose own job id is
/// another number), else the job id.
pub fn slurm_id(job: u64, names: &SlurmNames) -> String {
    names
        .array
        .map_or_else(|| job.to_string(), |a| a.to_string())
}

/// Containers run by containerd or CRI-O outside Kubernetes are rare enough that the
/// engine's own name says more than a generic word.
fn engine_word(e: Engine) -> &'static str {
    e.name()
}

/// A container's name, or its short id (as `docker ps` shows) when the engine did not say.
pub fn container_name(id: &str, names: &ContainerNames) -> String {
    names.name.clone().unwrap_or_else(|| short(id))
}

fn short(id: &str) -> String {
    id.chars().take(SHORT_ID).collect()
}

/// A pod's `namespace/name`, when both are known.
fn qualified(names: &PodNames) -> Option<String> {
    names
        .namespace
        .as_ref()
        .zip(names.name.as_ref())
        .map(|(n, p)| format!("{n}/{p}"))
}

/// Which facet of a workload a filter term names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facet {
    /// Any workload by its id (`job:`): a Slurm job id exactly (`5` is job 5 and every task
    /// of array 5, `5_1` one task), a container's or pod's name exactly or id prefix.
    Job,
    /// Any workload by text (`job~`): its label, Slurm job id prefix, container name or id,
    /// pod name or UID, as substrings.
    JobText,
    /// A container (bare, or a pod's): its name, id prefix, compose service or image.
    Container,
    /// A Kubernetes pod: its name, namespace/name, or UID prefix.
    Pod,
}

/// Whether `needle` (lowercase) names this workload through `facet`: names match as
/// substrings, ids as prefixes; `job:` asks for an id or a name exactly (`job:2` is not
/// job 4 named `Nodes=2`, nor job 20).
pub fn matches(w: &Workload, facet: Facet, needle: &str) -> bool {
    let has = |s: &Option<String>| {
        s.as_deref()
            .is_some_and(|s| s.to_lowercase().contains(needle))
    };
    let is = |s: &Option<String>| s.as_deref().is_some_and(|s| s.to_lowercase() == needle);
    match (facet, w) {
        (Facet::Job, Workload::Slurm { job, names, .. }) => {
            job.to_string() == needle
                || names
                    .array
                    .is_some_and(|a| a.to_string() == needle || a.job.to_string() == needle)
        }
        (Facet::Job, Workload::Container { id, names, .. }) => {
            id.starts_with(needle) || is(&names.name) || is(&names.compose_service)
        }
        (Facet::Job, Workload::Pod { uid, names, .. }) => {
            uid.starts_with(needle) || is(&names.name) || is(&qualified(names))
        }
        (Facet::JobText, _) if label(w).is_some_and(|l| l.to_lowercase().contains(needle)) => true,
        (Facet::JobText, Workload::Slurm { job, .. }) => job.to_string().starts_with(needle),
        (Facet::JobText | Facet::Container, Workload::Container { id, names, .. }) => {
            id.starts_with(needle)
                || has(&names.name)
                || has(&names.compose_service)
                || has(&names.image)
        }
        (Facet::JobText | Facet::Pod, Workload::Pod { uid, names, .. }) => {
            uid.starts_with(needle) || has(&names.name) || has(&qualified(names))
        }
        (
            Facet::Container,
            Workload::Pod {
                container, names, ..
            },
        ) => {
            container
                .as_ref()
                .is_some_and(|(_, id)| id.starts_with(needle))
                || has(&names.container)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::workload::{ArrayTask, ContainerNames, PodNames, PodQos};

    const ID: &str = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";

    fn slurm(name: Option<&str>) -> Workload {
        Workload::Slurm {
            job: 48121,
            step: Some("0".into()),
            uid: Some(1000),
            names: SlurmNames {
                name: name.map(Into::into),
                ..SlurmNames::default()
            },
        }
    }

    fn docker(name: Option<&str>) -> Workload {
        Workload::Container {
            engine: Engine::Docker,
            id: ID.into(),
            names: ContainerNames {
                name: name.map(Into::into),
                ..ContainerNames::default()
            },
            delegated_to: None,
        }
    }

    fn pod(ns: Option<&str>, name: Option<&str>) -> Workload {
        Workload::Pod {
            uid: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f".into(),
            qos: PodQos::Burstable,
            container: Some((Engine::Containerd, ID.into())),
            names: PodNames {
                name: name.map(Into::into),
                namespace: ns.map(Into::into),
                container: Some("trainer".into()),
            },
        }
    }

    #[test]
    fn labels_name_the_job_or_fall_back_to_short_ids() {
        assert_eq!(
            label(&slurm(Some("train-llama"))).unwrap(),
            "slurm 48121 train-llama"
        );
        assert_eq!(label(&slurm(None)).unwrap(), "slurm 48121");
        assert_eq!(
            label(&docker(Some("trainer-1"))).unwrap(),
            "docker trainer-1"
        );
        assert_eq!(label(&docker(None)).unwrap(), "docker 3f2a1b9c0d12");
        assert_eq!(
            label(&pod(Some("ml"), Some("bert-7f9c"))).unwrap(),
            "k8s ml/bert-7f9c"
        );
        assert_eq!(label(&pod(None, None)).unwrap(), "k8s pod 1c2d3e4f-5a6");
        let svc = Workload::Service {
            name: "jupyter".into(),
            user: None,
        };
        assert_eq!(label(&svc).unwrap(), "svc jupyter");
        let session = Workload::Session {
            uid: Some(1000),
            id: "3".into(),
        };
        assert_eq!(label(&session), None);
    }

    #[test]
    fn job_matches_an_id_exactly_and_job_text_searches() {
        let named = |job, name: &str, array| Workload::Slurm {
            job,
            step: None,
            uid: None,
            names: SlurmNames {
                name: Some(name.into()),
                array,
                ..SlurmNames::default()
            },
        };
        // Job 4's name holds a 2: `job:2` is job 2 only, not 4, nor 20-29.
        let four = named(4, "lr=3e-4 Nodes=2", None);
        let two = named(2, "x", None);
        let twenty = named(20, "y", None);
        assert!(matches(&two, Facet::Job, "2"));
        assert!(!matches(&four, Facet::Job, "2"));
        assert!(!matches(&twenty, Facet::Job, "2"));
        assert!(
            matches(&four, Facet::JobText, "nodes=2"),
            "job~ searches text"
        );
        // Array 5's tasks have their own job ids (6, 7) and are known as 5_0, 5_1.
        let task = |job, t| named(job, "sweep", Some(ArrayTask { job: 5, task: t }));
        assert!(matches(&task(6, 0), Facet::Job, "5"));
        assert!(matches(&task(7, 1), Facet::Job, "5"));
        assert!(matches(&task(7, 1), Facet::Job, "5_1"));
        assert!(!matches(&task(6, 0), Facet::Job, "5_1"));
        assert!(matches(&task(7, 1), Facet::Job, "7"), "its own id too");
        assert_eq!(label(&task(7, 1)).unwrap(), "slurm 5_1 sweep");
        assert_eq!(short_label(&task(7, 1)).unwrap(), "slurm 5_1");
        // Containers and pods: a name exactly or an id prefix.
        assert!(matches(&docker(Some("trainer-1")), Facet::Job, "trainer-1"));
        assert!(!matches(&docker(Some("trainer-1")), Facet::Job, "trainer"));
        assert!(matches(
            &docker(Some("trainer-1")),
            Facet::JobText,
            "trainer"
        ));
        assert!(matches(&docker(None), Facet::Job, "3f2a"));
        assert!(matches(
            &pod(Some("ml"), Some("bert")),
            Facet::Job,
            "ml/bert"
        ));
        assert!(matches(&pod(Some("ml"), Some("bert")), Facet::Job, "bert"));
        assert!(!matches(&pod(Some("ml"), Some("bert")), Facet::Job, "ber"));
    }

    #[test]
    fn filter_facets_match_names_and_id_prefixes() {
        assert!(matches(&slurm(None), Facet::Job, "48121"));
        assert!(matches(
            &slurm(Some("train-llama")),
            Facet::JobText,
            "llama"
        ));
        assert!(!matches(&slurm(None), Facet::Container, "48121"));
        assert!(matches(
            &docker(Some("trainer-1")),
            Facet::Container,
            "trainer"
        ));
        assert!(matches(&docker(None), Facet::Container, "3f2a"));
        assert!(
            !matches(&docker(None), Facet::Container, "2a1b"),
            "ids match as prefixes"
        );
        assert!(matches(
            &pod(Some("ml"), Some("bert-7f9c")),
            Facet::Pod,
            "bert"
        ));
        assert!(matches(
            &pod(Some("ml"), Some("bert-7f9c")),
            Facet::Pod,
            "ml/bert"
        ));
        assert!(matches(&pod(None, None), Facet::Pod, "1c2d"));
        assert!(
            matches(&pod(None, None), Facet::Container, "trainer"),
            "a pod's container"
        );
        assert!(!matches(&docker(None), Facet::Pod, "3f2a"));
    }
}
