//! Attribution from /proc/PID/cgroup: which container, pod, Slurm job, systemd service or
//! login session a process runs under, from the path its cgroup has — cgroup v2's single
//! `0::/path` line or v1's one line per hierarchy. No daemon, no privilege: every runtime
//! names its cgroups in documented shapes, recognised here. Pure parsing; names for the
//! ids are looked up elsewhere.
//!
//! Written by hand: no crate parses these paths into workloads (the cgroups crates manage
//! cgroups, they do not classify other runtimes' paths).

use crate::reading::workload::{ContainerNames, Engine, PodNames, PodQos, SlurmNames, Workload};

/// The most specific workload any of the file's hierarchies names: a pod beats a bare
/// container, which beats a Slurm job, a service, then a session. `None` for a process
/// in no recognisable unit (the root cgroup, `init.scope`, a hand-made cgroup).
pub fn workload(cgroup_file: &str) -> Option<Workload> {
    cgroup_file
        .lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .filter_map(classify)
        .max_by_key(rank)
}

fn rank(w: &Workload) -> u8 {
    match w {
        Workload::Pod { .. } => 5,
        Workload::Container { .. } => 4,
        Workload::Slurm { .. } => 3,
        Workload::Service { .. } => 2,
        Workload::Session { .. } => 1,
    }
}

/// One cgroup path. Below a user's service manager (`user@UID.service`, a subtree systemd
/// delegates to that user, who may make any cgroup there) nothing is a pod, a Slurm job or
/// a system engine's container, whatever its name says: a container there is that user's
/// rootless engine's, asked of that engine only (issue 26, point 3).
fn classify(path: &str) -> Option<Workload> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if let Some(uid) = delegated_to(&parts) {
        return match container(&parts) {
            Some(Workload::Container {
                engine, id, names, ..
            }) => Some(Workload::Container {
                engine,
                id,
                names,
                delegated_to: Some(uid),
            }),
            _ => systemd(&parts),
        };
    }
    pod(&parts)
        .or_else(|| container(&parts))
        .or_else(|| slurm(&parts))
        .or_else(|| systemd(&parts))
}

/// The user whose service manager's subtree the path is in (`user@1000.service` → 1000).
fn delegated_to(parts: &[&str]) -> Option<u32> {
    parts.iter().find_map(|p| {
        p.strip_prefix("user@")?
            .strip_suffix(".service")?
            .parse::<u32>()
            .ok()
    })
}

/// Kubernetes, both cgroup drivers and all QoS classes:
/// systemd `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope`,
/// cgroupfs `kubepods/besteffort/pod<uid>/<id>` (guaranteed pods sit right under `kubepods`).
/// Read from inside a private cgroup namespace (every pod, gpuwatch's own DaemonSet pod
/// included) another pod's path is relative to ours and `kubepods` is cut off:
/// `/../../../besteffort/pod<uid>/<id>`; a `pod<uid>` component is enough there.
fn pod(parts: &[&str]) -> Option<Workload> {
    let start = parts
        .iter()
        .position(|p| p.starts_with("kubepods"))
        .or_else(|| (parts.first() == Some(&"..")).then_some(0))?;
    let below = &parts[start..];
    let (index, uid) = below.iter().enumerate().find_map(|(i, p)| {
        let name = p.strip_suffix(".slice").unwrap_or(p);
        let uid = name.rsplit_once("-pod").map(|(_, u)| u).or_else(|| {
            name.strip_prefix("pod")
                .filter(|_| !name.starts_with("pods"))
        })?;
        // The systemd driver writes the UID's dashes as underscores.
        let uid = uid.replace('_', "-");
        is_uid(&uid).then_some((i, uid))
    })?;
    let qos = if below[..index].iter().any(|p| p.contains("besteffort")) {
        PodQos::BestEffort
    } else if below[..index].iter().any(|p| p.contains("burstable")) {
        PodQos::Burstable
    } else {
        PodQos::Guaranteed
    };
    let container = below
        .get(index + 1)
        .and_then(|p| scope_container(p).or_else(|| bare_id(p).map(|id| (Engine::Containerd, id))));
    Some(Workload::Pod {
        uid,
        qos,
        container,
        names: PodNames::default(),
    })
}

/// A container outside Kubernetes: `docker-<id>.scope` (systemd driver), `docker/<id>`
/// (cgroupfs), `libpod-<id>.scope` (Podman, rootful or rootless, also with a `/container`
/// child), `libpod_parent/libpod-<id>` and, in a Podman pod, `libpod_parent/<podid>/libpod-<id>`
/// (the container is the `libpod-` component, never the pod's id), `cri-containerd-<id>.scope`,
/// `crio-<id>.scope`. The `conmon` monitors are not the container. From inside a private
/// cgroup namespace (Docker's default on cgroup v2) a cgroupfs sibling reads `/../<id>`:
/// a bare id right below `..` is taken as Docker's, whose cgroupfs driver makes that shape.
fn container(parts: &[&str]) -> Option<Workload> {
    let cgroupfs = || {
        parts.iter().enumerate().find_map(|(i, p)| {
            let engine = match *p {
                "docker" | ".." => Engine::Docker,
                "libpod_parent" => Engine::Podman,
                _ => return None,
            };
            // After `..` only as the leaf: `/../<id>/x` is some other shape.
            if *p == ".." && i + 2 != parts.len() {
                return None;
            }
            Some((engine, bare_id(parts.get(i + 1)?)?))
        })
    };
    let (engine, id) = parts
        .iter()
        .find_map(|p| scope_container(p))
        .or_else(cgroupfs)?;
    Some(Workload::Container {
        engine,
        id,
        names: ContainerNames::default(),
        delegated_to: None,
    })
}

/// `docker-<id>.scope`, `libpod-<id>.scope`, `cri-containerd-<id>.scope`, `crio-<id>.scope`.
fn scope_container(part: &str) -> Option<(Engine, String)> {
    let name = part.strip_suffix(".scope").unwrap_or(part);
    const PREFIXES: [(&str, Engine); 4] = [
        ("docker-", Engine::Docker),
        ("libpod-", Engine::Podman),
        ("cri-containerd-", Engine::Containerd),
        ("crio-", Engine::CriO),
    ];
    PREFIXES.iter().find_map(|(prefix, engine)| {
        let id = name.strip_prefix(prefix)?;
        bare_id(id).map(|id| (*engine, id))
    })
}

/// A container id: 64 lowercase hex digits (`conmon-…` and other suffixes are not).
fn bare_id(text: &str) -> Option<String> {
    (text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())).then(|| text.to_string())
}

/// A pod UID: 36 characters of hex and dashes in the 8-4-4-4-12 shape.
fn is_uid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Slurm: v1 `slurm/uid_1000/job_48121/step_0/task_0`, v2
/// `system.slice/slurmstepd.scope/job_48121/step_0/user/task_0`. Debian and Ubuntu build
/// Slurm with `MULTIPLE_SLURMD`, which puts the node's name in: v2
/// `system.slice/<nodename>_slurmstepd.scope/job_…`, v1 `slurm_<nodename>/uid_…/job_…`
/// (the `slurm` prefix covers it).
fn slurm(parts: &[&str]) -> Option<Workload> {
    let start = parts
        .iter()
        .position(|p| p.starts_with("slurm") || p.ends_with("_slurmstepd.scope"))?;
    let below = &parts[start..];
    let job = below
        .iter()
        .find_map(|p| p.strip_prefix("job_")?.parse::<u64>().ok())?;
    let step = below
        .iter()
        .find_map(|p| p.strip_prefix("step_"))
        .map(str::to_string);
    let uid = below
        .iter()
        .find_map(|p| p.strip_prefix("uid_")?.parse::<u32>().ok());
    Some(Workload::Slurm {
        job,
        step,
        uid,
        names: SlurmNames::default(),
    })
}

/// systemd units: `system.slice/jupyter.service`, a user's manager
/// `user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service`, and login
/// sessions `user.slice/user-1000.slice/session-3.scope`.
fn systemd(parts: &[&str]) -> Option<Workload> {
    let user_slice = parts.iter().find_map(|p| {
        p.strip_prefix("user-")?
            .strip_suffix(".slice")?
            .parse::<u32>()
            .ok()
    });
    let manager = parts.iter().position(|p| p.starts_with("user@"));
    let manager_uid = manager.and_then(|i| {
        parts[i]
            .strip_prefix("user@")?
            .strip_suffix(".service")?
            .parse::<u32>()
            .ok()
    });
    let from = manager.map_or(0, |i| i + 1);
    if let Some(service) = parts[from..]
        .iter()
        .rev()
        .find_map(|p| p.strip_suffix(".service"))
    {
        return Some(Workload::Service {
            name: service.to_string(),
            user: manager_uid,
        });
    }
    if let Some(session) = parts
        .iter()
        .find_map(|p| p.strip_prefix("session-")?.strip_suffix(".scope"))
    {
        return Some(Workload::Session {
            uid: user_slice,
            id: session.to_string(),
        });
    }
    // Under a user's manager but in no service of it (a tmux or terminal scope): the
    // person's own processes.
    manager.map(|_| Workload::Session {
        uid: manager_uid.or(user_slice),
        id: format!(
            "user@{}",
            manager_uid
                .or(user_slice)
                .map_or("?".into(), |u| u.to_string())
        ),
    })
}

#[cfg(test)]
mod tests;
