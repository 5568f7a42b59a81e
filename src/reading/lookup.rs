//! How the outside lookups that name a GPU's holders (the kubelet, the Docker and Podman
//! engines, Slurm's `scontrol`) last went: the vocabulary the JSON, the exporter and the
//! notices share. Owns no I/O: `procinfo` asks, keeps the last error here, and the modes
//! say it.

use std::collections::HashMap;

/// Which outside service a lookup asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LookupKind {
    /// The kubelet's pod-resources socket: which pod each GPU is allocated to.
    Kubelet,
    /// The Docker engine's API socket: a container's name, image and Compose labels.
    Docker,
    /// Podman's API socket (Docker-compatible).
    Podman,
    /// `scontrol show job`: a Slurm job's name, user and account.
    Slurm,
}

impl LookupKind {
    /// The name in the JSON's `lookups[].kind` and the exporter's `kind` label.
    pub fn name(self) -> &'static str {
        match self {
            LookupKind::Kubelet => "kubelet",
            LookupKind::Docker => "docker",
            LookupKind::Podman => "podman",
            LookupKind::Slurm => "slurm",
        }
    }
}

/// How the latest call went. A failure keeps its whole message: it says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupState {
    Ok,
    Failed(String),
}

/// One lookup's latest outcome and how many of its calls failed since start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupStatus {
    pub kind: LookupKind,
    pub state: LookupState,
    /// Failed calls since gpuwatch started (a counter: it never goes down).
    pub errors: u64,
}

impl LookupStatus {
    /// The failure's message, `None` when the latest call answered.
    pub fn error(&self) -> Option<&str> {
        match &self.state {
            LookupState::Ok => None,
            LookupState::Failed(why) => Some(why),
        }
    }
}

impl LookupStatus {
    /// The status after one more call: `Ok(())` answered, `Err` failed with that message.
    pub fn after(
        previous: Option<&LookupStatus>,
        kind: LookupKind,
        call: Result<(), String>,
    ) -> Self {
        let errors = previous.map_or(0, |p| p.errors);
        let (state, errors) = match call {
            Ok(()) => (LookupState::Ok, errors),
            Err(why) => (LookupState::Failed(why), errors + 1),
        };
        LookupStatus {
            kind,
            state,
            errors,
        }
    }
}

/// What was last said about each lookup, so a lasting failure is said once and a recovery
/// once (stderr in `serve` and `--once`, the TUI's status line). A lookup never said about
/// counts as working: a first answer is not news.
#[derive(Debug, Default)]
pub struct Said(HashMap<LookupKind, LookupState>);

impl Said {
    /// One line per lookup whose state changed since the last call.
    pub fn news(&mut self, statuses: &[LookupStatus]) -> Vec<String> {
        let mut lines = Vec::new();
        for status in statuses {
            let before = self.0.get(&status.kind).unwrap_or(&LookupState::Ok);
            if *before == status.state {
                continue;
            }
            let kind = status.kind.name();
            lines.push(match &status.state {
                LookupState::Ok => format!("{kind} lookup answers again"),
                LookupState::Failed(why) => format!("{kind} lookup failed: {why}"),
            });
            self.0.insert(status.kind, status.state.clone());
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_news_once_and_so_is_the_recovery() {
        let mut said = Said::default();
        let ok = LookupStatus::after(None, LookupKind::Docker, Ok(()));
        assert_eq!(said.news(std::slice::from_ref(&ok)), Vec::<String>::new());
        let failed = LookupStatus::after(Some(&ok), LookupKind::Docker, Err("403".into()));
        assert_eq!(failed.errors, 1);
        assert_eq!(
            said.news(std::slice::from_ref(&failed)),
            ["docker lookup failed: 403"]
        );
        let again = LookupStatus::after(Some(&failed), LookupKind::Docker, Err("403".into()));
        assert_eq!(again.errors, 2, "counted per call");
        assert!(
            said.news(std::slice::from_ref(&again)).is_empty(),
            "said once"
        );
        let back = LookupStatus::after(Some(&again), LookupKind::Docker, Ok(()));
        assert_eq!(back.errors, 2, "a counter never goes down");
        assert_eq!(said.news(&[back]), ["docker lookup answers again"]);
    }
}
