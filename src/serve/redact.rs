//! `--redact`: takes out of the snapshot document the exporter serves every field that
//! names or identifies a person or their commands: user names and UIDs (the process's, a
//! unit's or session's owner, a Slurm job's user), command lines and ancestors' names, a
//! Slurm job's name and account (chosen by its user), the GPU environment, and warning
//! sentences that name a user or a command. The fields become `null` (or absent, where the
//! document leaves out what does not apply), as for a process whose details are unknown,
//! so the document still validates. Pure.

use crate::wire::workload::WorkloadDoc;
use crate::wire::{Snapshot, WarningKind};

pub fn redact(doc: &mut Snapshot) {
    for p in &mut doc.processes {
        p.user = None;
        p.uid = None;
        p.command = None;
        p.context.environment = None;
        p.context.parents = None;
        if let Some(w) = &mut p.context.workload {
            redact_workload(w);
        }
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

/// The workload keeps what the metrics' labels show (container, pod, namespace, job id,
/// system service): where the GPU time goes, not who asked for it.
fn redact_workload(w: &mut WorkloadDoc) {
    w.unit_uid = None;
    w.hpc_job_user = None;
    w.hpc_job_name = None;
    w.hpc_account = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo has no Slurm job user (scontrol's or `SLURM_JOB_USER`); a workload with
    /// every field set keeps only the ones the metrics' labels show.
    #[test]
    fn a_workload_keeps_no_user_uid_or_job_name() {
        let some = |s: &str| Some(s.to_string());
        let mut w = WorkloadDoc {
            hpc_job: some("48121"),
            hpc_job_name: some("train-llama"),
            hpc_job_user: some("carol"),
            hpc_account: some("carol-lab"),
            unit_uid: Some(1003),
            ..WorkloadDoc::default()
        };
        redact_workload(&mut w);
        let want = WorkloadDoc {
            hpc_job: some("48121"),
            ..WorkloadDoc::default()
        };
        assert_eq!(w, want);
    }
}
