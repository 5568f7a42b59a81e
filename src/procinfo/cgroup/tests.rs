//! /proc/PID/cgroup lines in the shapes each runtime documents, v1 and v2.

use super::*;

const ID: &str = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";
const UID: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

fn container(engine: Engine) -> Option<Workload> {
    Some(Workload::Container {
        engine,
        id: ID.into(),
        names: ContainerNames::default(),
    })
}

fn pod(qos: PodQos, container: Option<(Engine, &str)>) -> Option<Workload> {
    Some(Workload::Pod {
        uid: UID.into(),
        qos,
        container: container.map(|(e, id)| (e, id.to_string())),
        names: PodNames::default(),
    })
}

#[test]
fn docker_with_either_cgroup_driver_and_version() {
    let v2_systemd = format!("0::/system.slice/docker-{ID}.scope\n");
    assert_eq!(workload(&v2_systemd), container(Engine::Docker));
    let v1_cgroupfs = format!(
        "12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n0::/\n"
    );
    assert_eq!(workload(&v1_cgroupfs), container(Engine::Docker));
    // The daemon itself is a service, not a container.
    assert_eq!(
        workload("0::/system.slice/docker.service\n"),
        Some(Workload::Service {
            name: "docker".into(),
            user: None
        })
    );
}

#[test]
fn podman_rootful_and_rootless_but_not_conmon() {
    assert_eq!(
        workload(&format!("0::/machine.slice/libpod-{ID}.scope\n")),
        container(Engine::Podman)
    );
    let rootless = format!(
        "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope/container\n"
    );
    assert_eq!(workload(&rootless), container(Engine::Podman));
    let cgroupfs = format!("0::/libpod_parent/libpod-{ID}\n");
    assert_eq!(workload(&cgroupfs), container(Engine::Podman));
    let conmon = format!("0::/machine.slice/libpod-conmon-{ID}.scope\n");
    assert_eq!(workload(&conmon), None);
}

#[test]
fn containerd_and_crio_outside_kubernetes() {
    assert_eq!(
        workload(&format!("0::/system.slice/cri-containerd-{ID}.scope\n")),
        container(Engine::Containerd)
    );
    assert_eq!(
        workload(&format!("0::/system.slice/crio-{ID}.scope\n")),
        container(Engine::CriO)
    );
    assert_eq!(
        workload(&format!("0::/system.slice/crio-conmon-{ID}.scope\n")),
        None
    );
}

#[test]
fn kubernetes_pods_with_the_systemd_driver_in_every_qos_class() {
    let underscored = UID.replace('-', "_");
    let burstable = format!(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{underscored}.slice/cri-containerd-{ID}.scope\n"
    );
    assert_eq!(
        workload(&burstable),
        pod(PodQos::Burstable, Some((Engine::Containerd, ID)))
    );
    let besteffort = format!(
        "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{underscored}.slice/crio-{ID}.scope\n"
    );
    assert_eq!(
        workload(&besteffort),
        pod(PodQos::BestEffort, Some((Engine::CriO, ID)))
    );
    let guaranteed =
        format!("0::/kubepods.slice/kubepods-pod{underscored}.slice/docker-{ID}.scope\n");
    assert_eq!(
        workload(&guaranteed),
        pod(PodQos::Guaranteed, Some((Engine::Docker, ID)))
    );
}

#[test]
fn kubernetes_pods_with_the_cgroupfs_driver_v1() {
    let burstable = format!(
        "11:memory:/kubepods/burstable/pod{UID}/{ID}\n4:devices:/kubepods/burstable/pod{UID}/{ID}\n"
    );
    assert_eq!(
        workload(&burstable),
        pod(PodQos::Burstable, Some((Engine::Containerd, ID)))
    );
    let guaranteed = format!("11:memory:/kubepods/pod{UID}/{ID}\n");
    assert_eq!(
        workload(&guaranteed),
        pod(PodQos::Guaranteed, Some((Engine::Containerd, ID)))
    );
    // The pod's own cgroup (the sandbox before its containers start): a pod, no container.
    let sandbox = format!("0::/kubepods/besteffort/pod{UID}\n");
    assert_eq!(workload(&sandbox), pod(PodQos::BestEffort, None));
}

#[test]
fn slurm_job_steps_on_v1_and_v2() {
    let v1 = "12:memory:/slurm/uid_1000/job_48121/step_0/task_0\n\
              7:devices:/slurm/uid_1000/job_48121/step_0\n\
              1:name=systemd:/system.slice/slurmd.service\n";
    assert_eq!(
        workload(v1),
        Some(Workload::Slurm {
            job: 48121,
            step: Some("0".into()),
            uid: Some(1000),
            names: SlurmNames::default()
        })
    );
    let v2 = "0::/system.slice/slurmstepd.scope/job_48121/step_batch/user/task_0\n";
    assert_eq!(
        workload(v2),
        Some(Workload::Slurm {
            job: 48121,
            step: Some("batch".into()),
            uid: None,
            names: SlurmNames::default()
        })
    );
    // slurmstepd's own cgroup names no job.
    assert_eq!(workload("0::/system.slice/slurmstepd.scope/system\n"), None);
}

#[test]
fn systemd_services_sessions_and_user_managers() {
    assert_eq!(
        workload("0::/system.slice/jupyter.service\n"),
        Some(Workload::Service {
            name: "jupyter".into(),
            user: None
        })
    );
    assert_eq!(
        workload("0::/user.slice/user-1000.slice/session-3.scope\n"),
        Some(Workload::Session {
            uid: Some(1000),
            id: "3".into()
        })
    );
    assert_eq!(
        workload(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter-lab.service\n"
        ),
        Some(Workload::Service {
            name: "jupyter-lab".into(),
            user: Some(1000)
        })
    );
    // A terminal or tmux scope under the user's manager: the person, no job.
    assert_eq!(
        workload(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/tmux-spawn-42.scope\n"
        ),
        Some(Workload::Session {
            uid: Some(1000),
            id: "user@1000".into()
        })
    );
}

#[test]
fn nothing_recognisable_is_none_and_garbage_never_panics() {
    for text in [
        "",
        "0::/\n",
        "0::/init.scope\n",
        "garbage",
        "1:2",
        "0::/docker/not-an-id\n",
        "0::/kubepods/burstable/podnot-a-uid/x\n",
        "0::/slurm/job_x/step_0\n",
        "0::/user.slice/user-x.slice/session-.scope\n",
    ] {
        let w = workload(text);
        assert!(
            matches!(w, None | Some(Workload::Session { .. })),
            "{text:?} gave {w:?}"
        );
    }
    assert_eq!(workload("0::/gpuwatch-test/my-cgroup\n"), None);
}

#[test]
fn the_most_specific_hierarchy_wins() {
    // v1 with systemd's hierarchy naming a session and the memory one a container.
    let mixed = format!(
        "12:memory:/docker/{ID}\n1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n"
    );
    assert_eq!(workload(&mixed), container(Engine::Docker));
}
