//! Container names from the Docker Engine API (and Podman's Docker-compatible one) over
//! their unix sockets: `GET /containers/<id>/json` → name, image, compose project and
//! service, and the Kubernetes labels cri-dockerd puts on a pod's containers. Owns the
//! socket list per engine and the inspect parser; must not cache or retry (the resolver
//! does) and never runs on the sampler's or the draw path's thread.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{ContainerFacts, ContainerLookup, LookupError};
use crate::http_client::{self, Endpoint, Limits, Request, blocking};
use crate::reading::workload::{ContainerNames, Engine, PodNames};

/// An inspect answer is a few kilobytes (tens with many labels or a long environment);
/// anything past this is not an inspect answer we want to hold.
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Where each engine's API listens. Only Docker and Podman have one we speak; containerd
/// and CRI-O speak gRPC (CRI), which is not worth a protobuf stack for a name.
#[derive(Debug, Clone, Default)]
pub struct EngineApi {
    pub docker: Vec<PathBuf>,
    pub podman: Vec<PathBuf>,
}

impl EngineApi {
    /// The usual sockets: the one `$DOCKER_HOST` names for Docker and the one
    /// `$CONTAINER_HOST` names for Podman, when they are `unix://` ones (as the docker and
    /// podman-remote CLIs take them; a TCP engine is not asked: names are not worth a
    /// network round trip), then rootful, then the rootless one of the user running us
    /// (`runtime_dir` is `$XDG_RUNTIME_DIR`; another user's rootless engine is not ours
    /// to ask).
    pub fn system(
        docker_host: Option<&str>,
        container_host: Option<&str>,
        runtime_dir: Option<&Path>,
    ) -> Self {
        let mut api = EngineApi {
            docker: vec!["/var/run/docker.sock".into()],
            podman: vec!["/run/podman/podman.sock".into()],
        };
        let unix = |host: Option<&str>| {
            host.and_then(|h| h.strip_prefix("unix://"))
                .filter(|socket| !socket.is_empty())
                .map(PathBuf::from)
        };
        if let Some(socket) = unix(docker_host) {
            api.docker.insert(0, socket);
        }
        if let Some(socket) = unix(container_host) {
            api.podman.insert(0, socket);
        }
        if let Some(dir) = runtime_dir {
            api.docker.push(dir.join("docker.sock"));
            api.podman.push(dir.join("podman/podman.sock"));
        }
        api
    }

    fn sockets(&self, engine: Engine) -> &[PathBuf] {
        match engine {
            Engine::Docker => &self.docker,
            Engine::Podman => &self.podman,
            Engine::Containerd | Engine::CriO => &[],
        }
    }
}

impl ContainerLookup for EngineApi {
    /// Asks each of the engine's sockets in turn until one answers: a missing or refused
    /// socket is skipped, and so is a 404: the rootful and the rootless engine keep
    /// separate containers. Any other answer is final. All within `timeout`.
    fn container(
        &self,
        engine: Engine,
        id: &str,
        timeout: Duration,
    ) -> Result<ContainerFacts, LookupError> {
        if engine == Engine::Containerd {
            return self.cri_dockerd(id, timeout);
        }
        let sockets = self.sockets(engine);
        if sockets.is_empty() {
            return Err(LookupError::Unsupported);
        }
        // The id goes into a request line: only the hex id the cgroup parser produces.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(LookupError::Failed(format!("not a container id: {id:?}")));
        }
        let deadline = Instant::now() + timeout;
        let path = format!("/containers/{id}/json");
        let (mut denied, mut unknown) = (None, false);
        for socket in sockets {
            match get(socket, &path, deadline) {
                Ok(answer) if answer.status == http::StatusCode::NOT_FOUND => unknown = true,
                Ok(answer) => return facts(engine, answer),
                Err(http_client::Error::Connect(e)) if socket_missing(&e) => continue,
                Err(http_client::Error::Connect(e))
                    if e.kind() == std::io::ErrorKind::PermissionDenied =>
                {
                    denied = Some(socket.display().to_string())
                }
                Err(http_client::Error::TimedOut(_)) => return Err(LookupError::TimedOut(timeout)),
                Err(other) => {
                    return Err(LookupError::Failed(format!(
                        "{} API at {}: {other}",
                        engine.name(),
                        socket.display()
                    )));
                }
            }
        }
        Err(match denied {
            // The usual case on a shared server: not in the `docker` group. Said even if
            // another engine did not know the id: that one may well be behind this one.
            Some(at) => LookupError::Denied(at),
            None if unknown => LookupError::NotFound,
            None => LookupError::Unavailable(format!(
                "no {} API socket (tried {})",
                engine.name(),
                sockets
                    .iter()
                    .map(|s| s.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        })
    }
}

/// Users' rootless Docker and Podman engines, at `<runtime_root>/<uid>/docker.sock` and
/// `<runtime_root>/<uid>/podman/podman.sock` (`/run/user`, systemd's `XDG_RUNTIME_DIR`).
/// Only the user's own engine is asked: its answer for the id is the engine saying the
/// container is its own; the system's engine is never asked about a user's cgroup.
#[derive(Debug, Clone)]
pub struct Rootless {
    pub runtime_root: PathBuf,
}

impl Rootless {
    pub fn system() -> Self {
        Rootless {
            runtime_root: "/run/user".into(),
        }
    }
}

impl super::RootlessLookup for Rootless {
    fn container(
        &self,
        uid: u32,
        engine: Engine,
        id: &str,
        timeout: Duration,
    ) -> Result<ContainerFacts, LookupError> {
        let dir = self.runtime_root.join(uid.to_string());
        let api = EngineApi {
            docker: vec![dir.join("docker.sock")],
            podman: vec![dir.join("podman/podman.sock")],
        };
        let facts = ContainerLookup::container(&api, engine, id, timeout)?;
        // A user's engine makes no pods: labels claiming one name nothing here.
        Ok(ContainerFacts {
            names: facts.names,
            pod: PodNames::default(),
        })
    }
}

impl EngineApi {
    /// A container taken to be containerd's (a pod container's bare id on the cgroupfs
    /// driver) that Docker may know after all: cri-dockerd's pod containers have that shape,
    /// and Docker answers with the `io.kubernetes.*` labels it put on them. Docker not being
    /// there, or not knowing the id, is the usual case and no failure: no names.
    fn cri_dockerd(&self, id: &str, timeout: Duration) -> Result<ContainerFacts, LookupError> {
        match ContainerLookup::container(self, Engine::Docker, id, timeout) {
            Err(LookupError::NotFound | LookupError::Unavailable(_)) => {
                Err(LookupError::Unsupported)
            }
            other => other,
        }
    }
}

/// `GET path` on the engine's socket with what is left of `deadline`.
fn get(
    socket: &Path,
    path: &str,
    deadline: Instant,
) -> Result<http_client::Response, http_client::Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(http_client::Error::TimedOut(left));
    }
    let request = Request::get(path).header(http::header::ACCEPT, "application/json");
    let limits = Limits {
        timeout: left,
        max_body: MAX_ANSWER,
    };
    blocking::send(&Endpoint::unix(socket), request, limits)
}

/// No socket there, or a stale one nobody listens on: the engine is not running.
fn socket_missing(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionRefused, NotFound};
    matches!(e.kind(), NotFound | ConnectionRefused)
}

fn facts(engine: Engine, answer: http_client::Response) -> Result<ContainerFacts, LookupError> {
    match answer.status.as_u16() {
        200 => parse_inspect(&answer.body),
        status => Err(LookupError::Failed(format!(
            "{} API answered HTTP {status}",
            engine.name()
        ))),
    }
}

/// The parts of `docker inspect`'s JSON we read; everything else is ignored.
#[derive(Deserialize)]
struct Inspect {
    #[serde(rename = "Name")]
    name: Option<String>,
    #[serde(rename = "Config")]
    config: Option<Config>,
}

#[derive(Deserialize)]
struct Config {
    #[serde(rename = "Image")]
    image: Option<String>,
    /// `null` when a container has none.
    #[serde(rename = "Labels")]
    labels: Option<std::collections::HashMap<String, String>>,
}

/// Parses an inspect answer. Docker names start with `/` (a leftover of container links);
/// empty strings are absent, not names.
pub fn parse_inspect(body: &[u8]) -> Result<ContainerFacts, LookupError> {
    let inspect: Inspect = serde_json::from_slice(body)
        .map_err(|e| LookupError::Failed(format!("not an inspect answer: {e}")))?;
    let config = inspect.config.unwrap_or(Config {
        image: None,
        labels: None,
    });
    let labels = config.labels.unwrap_or_default();
    let label = |key: &str| labels.get(key).cloned().filter(|v| !v.is_empty());
    let names = ContainerNames {
        name: inspect
            .name
            .map(|n| n.trim_start_matches('/').to_string())
            .filter(|n| !n.is_empty()),
        image: config.image.filter(|i| !i.is_empty()),
        compose_project: label("com.docker.compose.project"),
        compose_service: label("com.docker.compose.service"),
    };
    let pod = PodNames {
        name: label("io.kubernetes.pod.name"),
        namespace: label("io.kubernetes.pod.namespace"),
        container: label("io.kubernetes.container.name"),
    };
    Ok(ContainerFacts { names, pod })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An excerpt of `docker inspect` (Docker 27) for a compose service.
    const COMPOSE: &str = r#"{
      "Id": "3f2a1b9c0d12e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9",
      "Created": "2026-11-30T09:12:44.1234Z",
      "Path": "python",
      "Args": ["train.py"],
      "State": {"Status": "running", "Running": true, "Pid": 48121},
      "Image": "sha256:9d1c0e5f",
      "Name": "/llm-train-worker-1",
      "HostConfig": {"Runtime": "nvidia", "DeviceRequests": [{"Count": -1, "Capabilities": [["gpu"]]}]},
      "Config": {
        "Hostname": "3f2a1b9c0d12",
        "Env": ["PATH=/usr/bin", "NVIDIA_VISIBLE_DEVICES=all"],
        "Cmd": ["python", "train.py"],
        "Image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "Labels": {
          "com.docker.compose.project": "llm-train",
          "com.docker.compose.service": "worker",
          "com.docker.compose.container-number": "1"
        }
      }
    }"#;

    #[test]
    fn a_missing_or_stale_socket_is_skipped_a_denied_one_is_not() {
        use std::io::ErrorKind::*;
        assert!(socket_missing(&NotFound.into()));
        assert!(socket_missing(&ConnectionRefused.into()));
        // Tests run as root, which no socket refuses: the mapping is checked here.
        assert!(!socket_missing(&PermissionDenied.into()));
    }

    #[test]
    fn a_compose_container_has_its_name_image_project_and_service() {
        let facts = parse_inspect(COMPOSE.as_bytes()).unwrap();
        assert_eq!(
            facts.names,
            ContainerNames {
                name: Some("llm-train-worker-1".into()),
                image: Some("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime".into()),
                compose_project: Some("llm-train".into()),
                compose_service: Some("worker".into()),
            }
        );
        assert_eq!(facts.pod, PodNames::default());
    }

    #[test]
    fn null_labels_empty_strings_and_pod_labels() {
        let plain = r#"{"Name":"/jovial_turing","Config":{"Image":"","Labels":null}}"#;
        let facts = parse_inspect(plain.as_bytes()).unwrap();
        assert_eq!(facts.names.name.as_deref(), Some("jovial_turing"));
        assert_eq!(facts.names.image, None);
        assert_eq!(facts.names.compose_project, None);
        // cri-dockerd's labels on a pod's container.
        let pod = r#"{"Name":"/k8s_trainer_job-7f9c_ml_0d7e_0","Config":{"Labels":{
            "io.kubernetes.pod.name":"job-7f9c","io.kubernetes.pod.namespace":"ml",
            "io.kubernetes.container.name":"trainer"}}}"#;
        let facts = parse_inspect(pod.as_bytes()).unwrap();
        assert_eq!(facts.pod.name.as_deref(), Some("job-7f9c"));
        assert_eq!(facts.pod.namespace.as_deref(), Some("ml"));
        assert_eq!(facts.pod.container.as_deref(), Some("trainer"));
    }

    #[test]
    fn garbage_and_wrong_shapes_are_failures() {
        for body in [
            "",
            "<html>502 Bad Gateway</html>",
            "[1,2]",
            r#"{"Name": 3}"#,
        ] {
            assert!(
                matches!(parse_inspect(body.as_bytes()), Err(LookupError::Failed(_))),
                "{body:?}"
            );
        }
    }

    #[test]
    fn docker_host_names_the_first_socket_when_it_is_a_unix_one() {
        let api = EngineApi::system(Some("unix:///run/user/1000/docker.sock"), None, None);
        assert_eq!(api.docker[0], Path::new("/run/user/1000/docker.sock"));
        assert_eq!(api.docker[1], Path::new("/var/run/docker.sock"));
        assert_eq!(api.podman, [Path::new("/run/podman/podman.sock")]);
        for other in ["tcp://10.0.0.1:2375", "unix://", "ssh://host"] {
            let api = EngineApi::system(Some(other), Some(other), None);
            assert_eq!(api.docker, [Path::new("/var/run/docker.sock")], "{other}");
            assert_eq!(
                api.podman,
                [Path::new("/run/podman/podman.sock")],
                "{other}"
            );
        }
    }

    #[test]
    fn container_host_names_podmans_first_socket_when_it_is_a_unix_one() {
        let api = EngineApi::system(None, Some("unix:///tmp/podman/podman.sock"), None);
        assert_eq!(api.podman[0], Path::new("/tmp/podman/podman.sock"));
        assert_eq!(api.podman[1], Path::new("/run/podman/podman.sock"));
        assert_eq!(api.docker, [Path::new("/var/run/docker.sock")]);
    }

    #[test]
    fn engines_without_a_socket_we_speak_are_unsupported_and_ids_are_checked() {
        let api = EngineApi::system(None, None, None);
        let t = Duration::from_millis(50);
        assert!(matches!(
            api.container(Engine::Containerd, "ab", t),
            Err(LookupError::Unsupported)
        ));
        let api = EngineApi {
            docker: vec!["/nonexistent/docker.sock".into()],
            podman: vec![],
        };
        assert!(matches!(
            api.container(Engine::Docker, "../../info?", t),
            Err(LookupError::Failed(_))
        ));
        assert!(matches!(
            api.container(Engine::Docker, "abc123", t),
            Err(LookupError::Unavailable(_))
        ));
    }
}
