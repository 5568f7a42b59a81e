//! `--redact`: takes user names and command lines (and what reveals them: UIDs, the GPU
//! environment, warning sentences that name a user or a command) out of the snapshot
//! document the exporter serves. The fields become `null`, as for a process whose details
//! are unknown, so the document still validates. Pure.

use crate::source::wire::{Snapshot, WarningKind};

pub fn redact(doc: &mut Snapshot) {
    for p in &mut doc.processes {
        p.user = None;
        p.uid = None;
        p.command = None;
        p.context.environment = None;
    }
    for w in &mut doc.warnings {
        // The sentence may name the user or command; the typed fields carry the rest.
        w.message = None;
        if let WarningKind::IdleHolder { user, command, .. } = &mut w.kind {
            *user = None;
            *command = None;
        }
    }
}
