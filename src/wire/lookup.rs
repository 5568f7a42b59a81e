//! A lookup's latest outcome as the snapshot's `lookups[]` member: kind, state and the
//! error's whole message, so a script sees why pods or jobs are not named.

use serde::Serialize;

use crate::reading::lookup::{LookupState, LookupStatus};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lookup {
    /// `kubelet`, `docker`, `podman` or `slurm`.
    pub kind: &'static str,
    /// `ok` or `failed`.
    pub state: &'static str,
    /// Why the latest call failed; `null` when it answered.
    pub error: Option<String>,
}

impl Lookup {
    pub fn of(status: &LookupStatus) -> Lookup {
        Lookup {
            kind: status.kind.name(),
            state: match status.state {
                LookupState::Ok => "ok",
                LookupState::Failed(_) => "failed",
            },
            error: status.error().map(str::to_string),
        }
    }
}
