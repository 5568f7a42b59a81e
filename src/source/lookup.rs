//! How the outside lookups that name a GPU's holders (the kubelet today; container engines
//! and Slurm next) last went: the vocabulary the JSON, the exporter and the notices share.
//! Owns no I/O: `procinfo` asks, keeps the last error here, and the modes say it.

/// Which outside service a lookup asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LookupKind {
    /// The kubelet's pod-resources socket: which pod each GPU is allocated to.
    Kubelet,
}

impl LookupKind {
    /// The name in the JSON's `lookups[].kind` and the exporter's `kind` label.
    pub fn name(self) -> &'static str {
        match self {
            LookupKind::Kubelet => "kubelet",
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
