//! The GPU-0 pile-up: a process started without `CUDA_VISIBLE_DEVICES` uses every GPU and
//! puts its work on device 0, so on a shared server everybody's forgotten jobs land on
//! GPU 0 while other GPUs sit free. Raised when processes of two or more users or jobs
//! share a host's GPU 0, at least one of them is known to have no pinning (its
//! environment was readable and neither `CUDA_VISIBLE_DEVICES` nor a container's
//! `NVIDIA_VISIBLE_DEVICES` was set), and another GPU of the same host is free. Under MIG
//! each instance is a device of its own (CUDA's device 0 is then one instance), so the
//! processes must share one instance: on different instances they were pinned by MIG UUID
//! or are alone on theirs. Pure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Model;
use super::holders::owner_name;
use super::owners::is_free;
use super::procs::ProcRow;
use super::visible::{Pinning, pinning_for};
use super::warnings::{Severity, Subject, Warning, WarningKind};
use crate::reading::{GpuId, GpuReading};

/// Whether a row on `gpu` is known to run unpinned (an unreadable environment is not
/// evidence); pinned means by the variables of the GPU's vendor.
pub fn unpinned(row: &ProcRow, gpu: &GpuReading) -> bool {
    pinning_for(row.context.env.as_deref(), gpu.vendor) == Pinning::Unset
}

/// The pile-up warnings of the model's latest sample, one per host at most.
///
/// Linear in GPUs and rows: the rows are grouped by GPU and the GPUs by host once, and a
/// host's free GPUs are looked for only when its GPU 0 has loose rows. Scanning every GPU
/// for every host's GPU 0 was quadratic: 1,250 hosts × 10,000 GPUs on each sample of a
/// Prometheus fleet, which the keys waited behind (issue 26 §10).
pub fn evaluate(model: &Model) -> Vec<Warning> {
    let mut rows_on: HashMap<&GpuId, Vec<&ProcRow>> = HashMap::new();
    // One lookup per run of a GPU's rows (they come grouped by GPU), not one per row.
    for run in model.procs().all.chunk_by(|a, b| a.key.gpu == b.key.gpu) {
        rows_on.entry(&run[0].key.gpu).or_default().extend(run);
    }
    let mut on_host: HashMap<Option<&str>, Vec<&GpuReading>> = HashMap::new();
    for g in model.gpus() {
        on_host.entry(g.host.as_deref()).or_default().push(g);
    }
    model
        .gpus()
        .iter()
        .filter(|g| g.index == 0)
        .filter_map(|gpu0| {
            let rows = rows_on.get(&gpu0.id)?;
            let host = on_host
                .get(&gpu0.host.as_deref())
                .map_or(&[][..], Vec::as_slice);
            on_gpu0(model, gpu0, rows, host)
        })
        .collect()
}

/// GPU 0's warning from its `rows` and the GPUs of its `host` (itself included).
fn on_gpu0(
    model: &Model,
    gpu0: &GpuReading,
    rows: &[&ProcRow],
    host: &[&GpuReading],
) -> Option<Warning> {
    let loose = piled_up(rows, gpu0);
    if loose.is_empty() {
        return None;
    }
    let free: Vec<u32> = host
        .iter()
        .filter(|g| g.id != gpu0.id && is_free(model, g))
        .map(|g| g.index)
        .collect();
    if free.is_empty() {
        return None;
    }
    let users: BTreeSet<String> = loose.iter().map(|r| owner_name(r)).collect();
    Some(Warning {
        severity: Severity::Warning,
        subject: Subject::Gpu {
            id: gpu0.id.clone(),
            index: gpu0.index,
            host: gpu0.host.clone(),
        },
        kind: WarningKind::PileUp {
            unpinned: loose.iter().map(|r| r.key.pid).collect(),
            owners: users.len(),
            free,
        },
    })
}

/// The unpinned rows among GPU 0's `rows` that share one device with another owner's: the
/// whole GPU, or under MIG one instance (a row whose instance is unknown is no evidence).
fn piled_up<'a>(rows: &[&'a ProcRow], gpu0: &GpuReading) -> Vec<&'a ProcRow> {
    if gpu0.mig_devices.is_empty() {
        return shared(rows, gpu0);
    }
    let mut by_instance: BTreeMap<&crate::reading::GpuId, Vec<&ProcRow>> = BTreeMap::new();
    for r in rows {
        if let Some(tag) = &r.instance {
            by_instance.entry(&tag.id).or_default().push(r);
        }
    }
    let mut loose: Vec<&ProcRow> = Vec::new();
    for on_one in by_instance.values() {
        loose.extend(shared(on_one, gpu0));
    }
    // In the table's order, as without MIG.
    loose.sort_by_key(|r| rows.iter().position(|x| std::ptr::eq(*x, *r)));
    loose
}

/// The unpinned rows of one device's `rows`, when two owners or more share it; else none.
fn shared<'a>(rows: &[&'a ProcRow], gpu0: &GpuReading) -> Vec<&'a ProcRow> {
    let owners: BTreeSet<String> = rows.iter().map(|r| owner_name(r)).collect();
    if owners.len() < 2 {
        return Vec::new();
    }
    rows.iter().copied().filter(|r| unpinned(r, gpu0)).collect()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::model::ViewConfig;
    use crate::reading::GpuId;
    use crate::reading::mig::MigReading;
    use crate::source::GpuSource;
    use crate::source::sim::{SimClock, SimSource};

    fn instance(n: u32, pids: &[u32]) -> MigReading {
        MigReading {
            id: GpuId(format!("MIG-000{n}-aaaa")),
            gpu_instance_id: Some(n),
            compute_instance_id: Some(0),
            profile: Some("1g.10gb".into()),
            memory_total: None,
            memory_used: None,
            util: None,
            pids: pids.to_vec(),
        }
    }

    /// The demo's 8 GPUs after 5 samples, GPU 0 split into MIG instances holding `split`.
    fn pileup_with(split: &[&[u32]]) -> Option<WarningKind> {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        let clock = SimClock::Virtual { start };
        let mut sim = SimSource::new(8, 42, Duration::from_secs(1), clock);
        let config = ViewConfig::default();
        let mut model = Model::new(&config);
        for _ in 0..5 {
            let mut s = sim.sample().unwrap();
            let mig = split.iter().enumerate();
            s.gpus[0].mig_devices = mig.map(|(i, p)| instance(i as u32 + 1, p)).collect();
            model.apply_sample(s, &config);
        }
        let mut kinds = model.warnings().iter().map(|w| w.kind.clone());
        kinds.find(|k| matches!(k, WarningKind::PileUp { .. }))
    }

    /// Issue 20: erin's 5000 and frank's 5100 run unpinned on GPU 0 (the demo's pile-up);
    /// on different MIG instances each is alone on its device, so nothing piles up.
    #[test]
    fn processes_on_different_mig_instances_of_gpu_0_do_not_pile_up() {
        let whole = pileup_with(&[]);
        assert!(
            matches!(&whole, Some(WarningKind::PileUp { unpinned, .. }) if *unpinned == [5000, 5100]),
            "{whole:?}"
        );
        assert_eq!(pileup_with(&[&[1000], &[5000], &[5100]]), None);
        // Sharing one instance is a pile-up again; a row with no instance is no evidence.
        let one = pileup_with(&[&[1000], &[5000, 5100]]);
        assert!(
            matches!(&one, Some(WarningKind::PileUp { unpinned, .. }) if *unpinned == [5000, 5100]),
            "{one:?}"
        );
        assert_eq!(
            pileup_with(&[&[1000]]),
            None,
            "5000 and 5100 on no instance"
        );
    }
}
