//! The rules and the ranking on hand-built states: who counts as someone else, stale
//! memory, the inherited list, and reasons compared without their numbers.

use super::*;
use crate::reading::{GpuId, HostInfo, HostProc, ProcDetails, ProcKind, ProcReading, Sample};
use crate::state::{Msg, ViewConfig, update};
use crate::units::Percent;

fn gpu(index: u32, total_gib: f64, used_gib: f64, util: u32) -> GpuReading {
    let mut g = GpuReading::absent(GpuId(format!("GPU-{index}")), index, "g");
    g.memory_total = Some(Bytes::from_gib(total_gib));
    g.memory_used = Some(Bytes::from_gib(used_gib));
    g.util = Some(Percent(util));
    g
}

/// A process on GPU `index` holding `gib`; `user` `None` is one we cannot see.
fn proc(pid: u32, index: u32, user: Option<(&str, u32)>, gib: f64) -> ProcReading {
    ProcReading {
        peak_gpu_memory: None,
        pid,
        gpu: GpuId(format!("GPU-{index}")),
        kind: ProcKind::Compute,
        gpu_memory: Some(Bytes::from_gib(gib)),
        sm_util: None,
        host: match user {
            Some((user, uid)) => HostProc::Visible(ProcDetails {
                user: user.into(),
                uid,
                command: "python train.py".into(),
                cpu_percent: None,
                host_memory: None,
                started: std::time::SystemTime::UNIX_EPOCH,
                context: Default::default(),
            }),
            None => HostProc::OtherNamespace,
        },
    }
}

const ME: Option<(&str, u32)> = Some(("me", 1000));

fn state(gpus: Vec<GpuReading>, processes: Vec<ProcReading>) -> State {
    let mut s = State::new(ViewConfig {
        current_user: Some("me".into()),
        current_uid: Some(1000),
        ..ViewConfig::default()
    });
    let sample = Sample {
        time: std::time::SystemTime::UNIX_EPOCH,
        host: HostInfo::default(),
        gpus,
        processes,
        hosts: Vec::new(),
        history: None,
    };
    update(&mut s, Msg::Sample(Box::new(sample)));
    s
}

fn criteria(count: usize, min_free: Option<f64>) -> Criteria {
    Criteria {
        count,
        min_free: min_free.map(Bytes::from_gib),
        max_util: 10,
    }
}

fn picked(s: &State, c: &Criteria) -> Result<String, String> {
    let choice = choose(s, c, None);
    match choice.picked(c) {
        Some(g) => Ok(format(g, Format::Indices).unwrap()),
        None => Err(choice.shortfall(c)),
    }
}

#[test]
fn clean_gpus_first_then_most_free_then_least_busy() {
    // 0: 80 GiB with my own 10 GiB job (not clean), 1: clean 40 GiB, 2: clean 40 GiB but
    // 3 % busy, 3: 90 % busy.
    let s = state(
        vec![
            gpu(0, 80.0, 10.0, 0),
            gpu(1, 40.0, 0.5, 0),
            gpu(2, 40.0, 0.5, 3),
            gpu(3, 80.0, 0.5, 90),
        ],
        vec![proc(10, 0, ME, 10.0)],
    );
    assert_eq!(picked(&s, &criteria(3, None)).unwrap(), "1,2,0");
    assert_eq!(
        picked(&s, &criteria(1, Some(50.0))).unwrap(),
        "0",
        "only GPU 0 has 50 GiB free; my own job does not disqualify it"
    );
    let err = picked(&s, &criteria(4, None)).unwrap_err();
    assert_eq!(
        err,
        "need 4 GPUs with ≤10% util, no warning and nobody else's memory; 3 qualify (1,2,0)"
    );
    let choice = choose(&s, &criteria(4, None), None);
    assert_eq!(choice.explanations(), ["GPU 3 skipped: 90% busy"]);
}

#[test]
fn other_users_unknown_users_and_stale_memory_disqualify() {
    let s = state(
        vec![
            gpu(0, 80.0, 41.2, 0),
            gpu(1, 80.0, 3.0, 0),
            gpu(2, 80.0, 12.9, 0),
            gpu(3, 80.0, 5.0, 0),
            gpu(4, 80.0, 0.0, 0),
        ],
        vec![
            // An idle teammate still holds the memory: 0 % busy is not free.
            proc(20, 0, Some(("alice", 1001)), 40.0),
            proc(21, 0, Some(("alice", 1001)), 1.2),
            proc(22, 1, None, 3.0),
            // 3: mine and bob's.
            proc(23, 3, ME, 2.0),
            proc(24, 3, Some(("bob", 1002)), 3.0),
        ],
    );
    let c = criteria(1, None);
    let choice = choose(&s, &c, None);
    assert_eq!(
        format(choice.picked(&c).unwrap(), Format::Indices).unwrap(),
        "4"
    );
    assert_eq!(
        choice.explanations(),
        [
            "GPU 0 skipped: held by alice (41.2 GiB)",
            "GPU 1 skipped: held by pid 22 of an unknown user (3.0 GiB)",
            "GPU 2 skipped: 12.9 GiB held by no process",
            "GPU 3 skipped: held by bob (3.0 GiB)",
        ]
    );
}

#[test]
fn the_caller_is_told_by_name_or_else_by_uid() {
    let s = state(vec![gpu(0, 80.0, 2.0, 0)], vec![proc(1, 0, ME, 2.0)]);
    let g = &s.model.gpus()[0];
    let by_uid = Caller {
        user: None,
        uid: Some(1000),
        job: None,
    };
    assert!(others_holding(&s.model, g, by_uid).is_empty());
    let nobody = Caller::default();
    assert_eq!(others_holding(&s.model, g, nobody)[0].name, "me");
}

#[test]
fn only_the_inherited_gpus_qualify() {
    let s = state(vec![gpu(0, 80.0, 0.0, 0), gpu(1, 80.0, 0.0, 0)], vec![]);
    let allowed: HashSet<GpuId> = [GpuId("GPU-1".into())].into();
    let c = criteria(1, None);
    let choice = choose(&s, &c, Some(&allowed));
    assert_eq!(
        format(choice.picked(&c).unwrap(), Format::Env).unwrap(),
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1"
    );
    assert_eq!(
        choice.explanations(),
        ["GPU 0 skipped: not in CUDA_VISIBLE_DEVICES"]
    );
}

#[test]
fn reasons_compare_without_their_numbers() {
    let busy = |util, alice_gib| {
        state(
            vec![gpu(0, 80.0, 0.0, util), gpu(1, 80.0, alice_gib, 0)],
            vec![proc(1, 1, Some(("alice", 1001)), alice_gib)],
        )
    };
    let c = criteria(1, None);
    let (a, b, freed) = (busy(50, 10.0), busy(70, 12.0), busy(5, 10.0));
    let reasons = |s: &State| choose(s, &c, None).reasons();
    assert!(
        reasons(&a).same(&reasons(&b)),
        "busier and more VRAM: same reasons"
    );
    assert!(!reasons(&a).same(&reasons(&freed)), "GPU 0 now qualifies");
}

/// A process of `me`'s in Slurm job `job`.
fn in_slurm_job(mut p: ProcReading, job: u64) -> ProcReading {
    if let HostProc::Visible(d) = &mut p.host {
        d.context.workload = Some(std::sync::Arc::new(
            crate::reading::workload::Workload::Slurm {
                job,
                step: Some("0".into()),
                uid: None,
                names: Default::default(),
            },
        ));
    }
    p
}

#[test]
fn the_callers_other_jobs_are_someone_else_and_its_own_job_is_not() {
    use crate::model::jobs::JobKey;
    let s = state(
        vec![
            gpu(0, 80.0, 4.0, 0),
            gpu(1, 80.0, 2.0, 0),
            gpu(2, 80.0, 1.0, 0),
        ],
        vec![
            in_slurm_job(proc(1, 0, ME, 4.0), 48200),
            in_slurm_job(proc(2, 1, ME, 2.0), 48121),
            proc(3, 2, ME, 1.0),
        ],
    );
    let me_in = |job: Option<&'static JobKey>| Caller {
        user: Some("me"),
        uid: Some(1000),
        job,
    };
    static OURS: JobKey = JobKey::Slurm(48121);
    let held = |index: usize, caller| {
        others_holding(&s.model, &s.model.gpus()[index], caller)
            .into_iter()
            .map(|h| h.name)
            .collect::<Vec<_>>()
    };
    // pick inside job 48121: its own job's memory is its own; job 48200 is another job.
    assert_eq!(held(0, me_in(Some(&OURS))), ["slurm 48200 (me)"]);
    assert!(held(1, me_in(Some(&OURS))).is_empty());
    // A plain login-shell process of the same user is the caller's wherever pick runs.
    assert!(held(2, me_in(Some(&OURS))).is_empty());
    assert!(held(2, me_in(None)).is_empty());
    // pick from a login shell: every batch job, even the user's own, is another job.
    assert_eq!(held(1, me_in(None)), ["slurm 48121 (me)"]);
}

/// A GPU in MIG mode with a 3g.40gb instance (GI 1) holding `used_gib` and a 2g.20gb
/// instance (GI 5) nearly empty, next to a whole free GPU 1.
fn mig_state(procs: Vec<ProcReading>, used_gib: f64) -> State {
    use crate::reading::mig::MigReading;
    let mut g0 = gpu(0, 80.0, used_gib + 0.1, 30);
    g0.mig_enabled = Some(true);
    let mig = |id: &str, gi, total, used, pids| MigReading {
        id: GpuId(id.into()),
        gpu_instance_id: Some(gi),
        compute_instance_id: Some(0),
        profile: None,
        memory_total: Some(Bytes::from_gib(total)),
        memory_used: Some(Bytes::from_gib(used)),
        util: None,
        pids,
    };
    let pids = procs.iter().map(|p| p.pid).collect();
    g0.mig_devices = vec![
        mig("MIG-aaaa", 1, 40.0, used_gib, pids),
        mig("MIG-bbbb", 5, 20.0, 0.1, vec![]),
    ];
    state(vec![g0, gpu(1, 40.0, 0.5, 0)], procs)
}

#[test]
fn on_a_mig_gpu_the_candidates_are_its_instances_and_taken_ones_are_skipped() {
    let s = mig_state(vec![proc(7, 0, Some(("alice", 1001)), 20.0)], 20.0);
    let c = criteria(2, Some(10.0));
    let choice = choose(&s, &c, None);
    // GPU 1 (40 GiB free) before the free 2g.20gb instance; the whole MIG GPU never.
    assert_eq!(
        format(choice.picked(&c).unwrap(), Format::Uuids).unwrap(),
        "GPU-1,MIG-bbbb"
    );
    assert_eq!(
        choice.explanations(),
        ["GPU 0/1 skipped: held by alice (20.0 GiB)"]
    );
    // The caller's own process takes an instance too: an instance is one job's.
    let s = mig_state(vec![proc(8, 0, ME, 2.0)], 2.0);
    let choice = choose(&s, &criteria(1, None), None);
    assert_eq!(
        choice.explanations(),
        ["GPU 0/1 skipped: MIG instance in use by 1 of your own process"]
    );
    // Instances are written by UUID, CUDA's only name for them.
    let only_instance = criteria(1, Some(15.0));
    let allowed: HashSet<GpuId> = [GpuId("MIG-bbbb".into())].into();
    let choice = choose(&s, &only_instance, Some(&allowed));
    assert_eq!(
        format(choice.picked(&only_instance).unwrap(), Format::Env).unwrap(),
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=MIG-bbbb"
    );
    assert_eq!(
        format(choice.picked(&only_instance).unwrap(), Format::Indices).unwrap(),
        "MIG-bbbb"
    );
}

#[test]
fn a_neighbours_oom_risk_does_not_rule_an_instance_out() {
    // The 3g.40gb instance 98% full (a critical OOM risk on GPU 0) with no process listed.
    let s = mig_state(vec![], 39.2);
    let c = criteria(2, None);
    let choice = choose(&s, &c, None);
    assert_eq!(
        choice.explanations(),
        ["GPU 0/1 skipped: 39.2 GiB held by no process"]
    );
    assert_eq!(
        format(choice.picked(&c).unwrap(), Format::Uuids).unwrap(),
        "GPU-1,MIG-bbbb",
        "the other instance is not at risk"
    );
}

#[test]
fn an_instance_busy_by_gpm_is_skipped_and_an_unknown_activity_is_not() {
    use crate::reading::mig::MigReading;
    let mut g0 = gpu(0, 80.0, 1.0, 30);
    g0.mig_enabled = Some(true);
    let mig = |id: &str, gi, util: Option<u32>| MigReading {
        id: GpuId(id.into()),
        gpu_instance_id: Some(gi),
        compute_instance_id: Some(0),
        profile: None,
        memory_total: Some(Bytes::from_gib(20.0)),
        memory_used: Some(Bytes::from_gib(0.1)),
        util: util.map(Percent),
        pids: vec![],
    };
    g0.mig_devices = vec![mig("MIG-aaaa", 1, Some(50)), mig("MIG-bbbb", 2, None)];
    let s = state(vec![g0], vec![]);
    let c = criteria(1, None);
    let choice = choose(&s, &c, None);
    assert_eq!(choice.explanations(), ["GPU 0/1 skipped: 50% busy"]);
    assert_eq!(
        format(choice.picked(&c).unwrap(), Format::Uuids).unwrap(),
        "MIG-bbbb"
    );
}
