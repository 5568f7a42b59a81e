//! Shared-server etiquette warnings: a process holding VRAM on a GPU idle for a long time,
//! and VRAM still in use with no process listed (a stale allocation). Pure; part of the
//! warning evaluation, with the same per-GPU alarm memory for "since when".

use std::time::SystemTime;

use super::warnings::{Alarm, Thresholds, WarningKind};
use crate::reading::{GpuReading, ProcReading};

use super::activity::IDLE_MAX_UTIL;

pub(super) fn evaluate(
    prev: &Alarm,
    gpu: &GpuReading,
    procs: &[&ProcReading],
    th: &Thresholds,
    now: SystemTime,
    alarm: &mut Alarm,
) -> Vec<WarningKind> {
    let mut out = Vec::new();
    let since = |prev: Option<SystemTime>| Some(prev.unwrap_or(now));
    let held = |since: Option<SystemTime>| {
        since
            .and_then(|s| now.duration_since(s).ok())
            .unwrap_or_default()
    };

    let idle = gpu.util.is_some_and(|u| u.0 <= IDLE_MAX_UTIL);
    alarm.idle_since = if idle { since(prev.idle_since) } else { None };
    let idle_for = held(alarm.idle_since);
    if alarm.idle_since.is_some() && idle_for >= th.idle_after {
        for p in procs {
            let Some(vram) = p.gpu_memory.filter(|v| *v >= th.idle_min_vram) else {
                continue;
            };
            let details = p.details();
            out.push(WarningKind::IdleHolder {
                pid: p.pid,
                user: details.map(|d| String::from(&*d.user)),
                command: details.map(|d| String::from(&*d.command)),
                vram,
                idle_for,
            });
        }
    }

    let stale = procs.is_empty() && gpu.memory_used.is_some_and(|u| u >= th.stale_min_vram);
    alarm.stale_since = if stale { since(prev.stale_since) } else { None };
    let stale_for = held(alarm.stale_since);
    if let Some(used) = gpu
        .memory_used
        .filter(|_| stale && stale_for >= th.stale_after)
    {
        out.push(WarningKind::StaleVram {
            used,
            held_for: stale_for,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::{GpuId, HostProc, ProcDetails, ProcKind};
    use crate::units::{Bytes, Percent};
    use std::time::Duration;

    fn t(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    fn gpu(util: u32, used_gib: f64) -> GpuReading {
        let mut g = GpuReading::absent(GpuId("GPU-a".into()), 4, "g");
        g.util = Some(Percent(util));
        g.memory_used = Some(Bytes::from_gib(used_gib));
        g.memory_total = Some(Bytes::from_gib(80.0));
        g
    }

    fn proc(pid: u32, gib: f64) -> ProcReading {
        ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: GpuId("GPU-a".into()),
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(gib)),
            sm_util: None,
            host: HostProc::Visible(ProcDetails {
                user: "dave".into(),
                uid: 1004,
                command: "jupyter".into(),
                cpu_percent: None,
                host_memory: None,
                started: t(0),
                context: Default::default(),
            }),
        }
    }

    /// Runs (seconds, util, used GiB, processes) through the evaluation in order.
    fn run(steps: &[(u64, u32, f64, Vec<ProcReading>)]) -> Vec<Vec<WarningKind>> {
        let th = Thresholds {
            idle_after: Duration::from_secs(600),
            stale_after: Duration::from_secs(60),
            ..Thresholds::default()
        };
        let mut prev = Alarm::default();
        steps
            .iter()
            .map(|(s, util, used, procs)| {
                let refs: Vec<&ProcReading> = procs.iter().collect();
                let mut alarm = Alarm::default();
                let out = evaluate(&prev, &gpu(*util, *used), &refs, &th, t(*s), &mut alarm);
                prev = alarm;
                out
            })
            .collect()
    }

    #[test]
    fn idle_holders_after_the_idle_time_only_above_the_vram_floor() {
        let holders = || vec![proc(4000, 30.2), proc(4001, 0.5)];
        let out = run(&[
            (0, 0, 31.0, holders()),
            (599, 0, 31.0, holders()),
            (600, 1, 31.0, holders()),
            (700, 35, 31.0, holders()),
            (701, 0, 31.0, holders()),
        ]);
        assert!(out[0].is_empty() && out[1].is_empty());
        assert_eq!(
            out[2].len(),
            1,
            "only the 30 GiB holder, not the 0.5 GiB one"
        );
        match &out[2][0] {
            WarningKind::IdleHolder {
                pid,
                user,
                idle_for,
                ..
            } => {
                assert_eq!(
                    (*pid, user.as_deref(), idle_for.as_secs()),
                    (4000, Some("dave"), 600)
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(out[3].is_empty(), "busy again: cleared");
        assert!(out[4].is_empty(), "idle time starts over");
    }

    #[test]
    fn stale_vram_needs_no_process_for_the_stale_time() {
        let out = run(&[
            (0, 0, 12.4, vec![]),
            (59, 0, 12.4, vec![]),
            (60, 0, 12.4, vec![]),
            (61, 0, 12.4, vec![proc(1, 12.0)]),
            (62, 0, 0.5, vec![]),
        ]);
        assert!(out[0].is_empty() && out[1].is_empty());
        assert!(
            matches!(out[2][..], [WarningKind::StaleVram { held_for, .. }] if held_for.as_secs() == 60)
        );
        assert!(out[3].is_empty(), "a process holds it");
        assert!(out[4].is_empty(), "below the floor");
    }
}
