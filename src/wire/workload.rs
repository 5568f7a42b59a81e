//! A process's workload in the public JSON document (schema 2.1): what it runs under
//! beyond its user, with the ids and names dcgm-exporter's labels use (`container`,
//! `pod`, `namespace`, `hpc_job`). Converts both ways, so a gpuwatch watching another
//! host's snapshot shows the same jobs. Fields that do not apply are left out.

use serde::{Deserialize, Serialize};

use crate::reading::workload::{ContainerNames, Engine, PodNames, PodQos, SlurmNames, Workload};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Container,
    Pod,
    Slurm,
    Service,
    Session,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadDoc {
    pub kind: Option<Kind>,
    /// `docker`, `podman`, `containerd`, `crio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The container's name (a pod's container name for pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compose_project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compose_service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// `guaranteed`, `burstable`, `besteffort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_qos: Option<String>,
    /// The Slurm job id, as text (dcgm-exporter's `hpc_job` label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpc_job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpc_job_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpc_job_user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpc_account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_step: Option<String>,
    /// The systemd unit without `.service`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The UID whose service manager runs the service, or whose session it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

const ENGINES: [Engine; 4] = [
    Engine::Docker,
    Engine::Podman,
    Engine::Containerd,
    Engine::CriO,
];

fn engine_named(name: &str) -> Option<Engine> {
    ENGINES.into_iter().find(|e| e.name() == name)
}

fn qos_name(q: PodQos) -> &'static str {
    match q {
        PodQos::Guaranteed => "guaranteed",
        PodQos::Burstable => "burstable",
        PodQos::BestEffort => "besteffort",
    }
}

fn qos_named(name: &str) -> Option<PodQos> {
    [PodQos::Guaranteed, PodQos::Burstable, PodQos::BestEffort]
        .into_iter()
        .find(|q| qos_name(*q) == name)
}

impl WorkloadDoc {
    pub fn from_workload(w: &Workload) -> WorkloadDoc {
        let mut d = WorkloadDoc::default();
        match w {
            Workload::Container {
                engine,
                id,
                names,
                delegated_to,
            } => {
                d.kind = Some(Kind::Container);
                d.unit_uid = *delegated_to;
                d.engine = Some(engine.name().into());
                d.container_id = Some(id.clone());
                d.container = names.name.clone();
                d.image = names.image.clone();
                d.compose_project = names.compose_project.clone();
                d.compose_service = names.compose_service.clone();
            }
            Workload::Pod {
                uid,
                qos,
                container,
                names,
            } => {
                d.kind = Some(Kind::Pod);
                d.pod_uid = Some(uid.clone());
                d.pod_qos = Some(qos_name(*qos).into());
                d.engine = container.as_ref().map(|(e, _)| e.name().into());
                d.container_id = container.as_ref().map(|(_, id)| id.clone());
                d.pod = names.name.clone();
                d.namespace = names.namespace.clone();
                d.container = names.container.clone();
            }
            Workload::Slurm {
                job,
                step,
                uid,
                names,
            } => {
                d.kind = Some(Kind::Slurm);
                d.hpc_job = Some(job.to_string());
                d.slurm_step = step.clone();
                d.unit_uid = *uid;
                d.hpc_job_name = names.name.clone();
                d.hpc_job_user = names.user.clone();
                d.hpc_account = names.account.clone();
            }
            Workload::Service { name, user } => {
                d.kind = Some(Kind::Service);
                d.service = Some(name.clone());
                d.unit_uid = *user;
            }
            Workload::Session { uid, id } => {
                d.kind = Some(Kind::Session);
                d.session = Some(id.clone());
                d.unit_uid = *uid;
            }
        }
        d
    }

    /// Back to a workload; `None` when the kind is unknown (a newer minor) or what it
    /// needs is missing — the process is then shown without one, never with a wrong one.
    pub fn into_workload(self) -> Option<Workload> {
        Some(match self.kind? {
            Kind::Container => Workload::Container {
                engine: engine_named(self.engine.as_deref()?)?,
                id: self.container_id?,
                names: ContainerNames {
                    name: self.container,
                    image: self.image,
                    compose_project: self.compose_project,
                    compose_service: self.compose_service,
                },
                delegated_to: self.unit_uid,
            },
            Kind::Pod => Workload::Pod {
                uid: self.pod_uid?,
                qos: qos_named(self.pod_qos.as_deref()?)?,
                container: self
                    .engine
                    .as_deref()
                    .and_then(engine_named)
                    .zip(self.container_id),
                names: PodNames {
                    name: self.pod,
                    namespace: self.namespace,
                    container: self.container,
                },
            },
            Kind::Slurm => Workload::Slurm {
                job: self.hpc_job?.parse().ok()?,
                step: self.slurm_step,
                uid: self.unit_uid,
                names: SlurmNames {
                    name: self.hpc_job_name,
                    user: self.hpc_job_user,
                    account: self.hpc_account,
                    array: None,
                },
            },
            Kind::Service => Workload::Service {
                name: self.service?,
                user: self.unit_uid,
            },
            Kind::Session => Workload::Session {
                uid: self.unit_uid,
                id: self.session?,
            },
        })
    }
}
