//! /proc/PID/cgroup lines in the shapes each runtime documents, v1 and v2.

use super::*;

const ID: &str = "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9";
const UID: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

fn container(engine: Engine) -> Option<Workload> {
    Some(Workload::Container {
        engine,
        id: ID.into(),
        names: ContainerNames::default(),
        delegated_to: None,
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
    assert_eq!(
        workload(&rootless),
        Some(Workload::Container {
            engine: Engine::Podman,
            id: ID.into(),
            names: ContainerNames::default(),
            delegated_to: Some(1000),
        }),
        "a rootless container is its user's"
    );
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

/// Debian and Ubuntu build Slurm with `MULTIPLE_SLURMD`: the node's name is in the step
/// scope on v2 (`vm_slurmstepd.scope`, which gave no workload) and in the v1 root.
#[test]
fn debian_slurm_with_the_node_name_in_the_path() {
    let job = |job, step: &str, uid| {
        Some(Workload::Slurm {
            job,
            step: Some(step.into()),
            uid,
            names: SlurmNames::default(),
        })
    };
    let v2 = "0::/system.slice/vm_slurmstepd.scope/job_8/step_0/user/task_0\n";
    assert_eq!(workload(v2), job(8, "0", None));
    let v2_batch =
        "0::/system.slice/gpu-node-07_slurmstepd.scope/job_48121/step_batch/user/task_0\n";
    assert_eq!(workload(v2_batch), job(48121, "batch", None));
    assert_eq!(
        workload("0::/system.slice/vm_slurmstepd.scope/system\n"),
        None,
        "slurmstepd's own cgroup names no job"
    );
    let v1 = "10:freezer:/slurm_vm/uid_1000/job_8/step_0\n\
              4:memory:/slurm_vm/uid_1000/job_8/step_0/task_0\n\
              1:name=systemd:/system.slice/slurmd.service\n";
    assert_eq!(workload(v1), job(8, "0", Some(1000)));
}

/// In a private cgroup namespace (Docker's default on cgroup v2, every pod) other
/// containers' paths are relative to ours.
#[test]
fn paths_relative_to_a_private_cgroup_namespace() {
    // A cgroupfs Docker sibling.
    assert_eq!(
        workload(&format!("0::/../{ID}\n")),
        container(Engine::Docker)
    );
    // A systemd-driver sibling keeps its scope name.
    assert_eq!(
        workload(&format!("0::/../docker-{ID}.scope\n")),
        container(Engine::Docker)
    );
    // Another pod, seen from inside a pod: `kubepods` is above our own root.
    let v1 = format!("6:freezer:/../../../besteffort/pod{UID}/{ID}\n");
    assert_eq!(
        workload(&v1),
        pod(PodQos::BestEffort, Some((Engine::Containerd, ID)))
    );
    let v2 = format!("0::/../../pod{UID}/{ID}\n");
    assert_eq!(
        workload(&v2),
        pod(PodQos::Guaranteed, Some((Engine::Containerd, ID)))
    );
    // Our own cgroup, and shapes that are not a container.
    assert_eq!(workload("0::/\n"), None);
    assert_eq!(workload(&format!("0::/../{ID}/extra\n")), None);
    assert_eq!(workload("0::/../not-an-id\n"), None);
}

/// A Podman pod's container sits below the pod's cgroup: the `libpod-` component is the
/// container (the pod's id, taken before, is unknown to the API: 404).
#[test]
fn a_podman_pod_container_is_its_libpod_component() {
    let pod_id = "9".repeat(64);
    let in_pod = format!("0::/libpod_parent/{pod_id}/libpod-{ID}\n");
    assert_eq!(workload(&in_pod), container(Engine::Podman));
    let v1 = format!("4:memory:/libpod_parent/{pod_id}/libpod-{ID}\n");
    assert_eq!(workload(&v1), container(Engine::Podman));
}

/// Issue 26, point 3: a user may create any cgroup in their delegated subtree; one named
/// like a system container or a pod is theirs, not the system engine's or the kubelet's.
#[test]
fn container_and_pod_shapes_in_a_users_subtree_are_that_users() {
    let base = "0::/user.slice/user-65534.slice/user@65534.service/app.slice";
    assert_eq!(
        workload(&format!("{base}/docker-{ID}.scope\n")),
        Some(Workload::Container {
            engine: Engine::Docker,
            id: ID.into(),
            names: ContainerNames::default(),
            delegated_to: Some(65534),
        })
    );
    let fake_pod = format!("{base}/kubepods/burstable/pod{UID}/{ID}\n");
    let got = workload(&fake_pod);
    assert!(
        !matches!(got, Some(Workload::Pod { .. })),
        "not a pod: {got:?}"
    );
    let fake_job = format!("{base}/slurmstepd.scope/job_5/step_0\n");
    let got = workload(&fake_job);
    assert!(
        !matches!(got, Some(Workload::Slurm { .. })),
        "not a Slurm job: {got:?}"
    );
    // The system's paths are unchanged.
    assert_eq!(
        workload(&format!("0::/system.slice/docker-{ID}.scope\n")),
        container(Engine::Docker)
    );
}
