//! The words for typed data: a warning's one-line sentence, shared by the warnings bar,
//! `--once` text and the JSON document's `message`. Pure formatting; the warning itself
//! (kind, subject, numbers) is `model::warnings`'s and carries no text.

use super::format::{duration_short, gib, truncate};
use crate::model::warnings::{Subject, Warning, WarningKind};
use crate::reading::health::{RemappedRows, RetiredPages, xid_meaning};
use crate::reading::throttle::ThrottleReason;
use crate::units::{Bytes, Celsius};
use std::time::Duration;

/// The one-line text of a warning, as the warnings bar and `--once` show it.
/// One small function per kind below; this only names the GPU and dispatches.
pub fn warning_line(w: &Warning) -> String {
    let index = gpu_name(&w.subject);
    match &w.kind {
        WarningKind::OomRisk {
            used,
            total,
            percent,
            time_to_full,
            instance,
        } => {
            let on = match instance {
                Some(i) => format!("{index} MIG {}", instance_name(i)),
                None => index,
            };
            oom_risk(&on, *used, *total, *percent, *time_to_full)
        }
        WarningKind::Overheating {
            temperature,
            held_for,
            critical_at,
            slowdown,
        } => overheating(&index, *temperature, *held_for, *critical_at, *slowdown),
        WarningKind::Lost => format!("GPU {index} lost — not responding (fallen off the bus?)"),
        WarningKind::IdleHolder {
            pid,
            user,
            command,
            vram,
            idle_for,
        } => idle_holder(
            &index,
            *pid,
            user.as_deref(),
            command.as_deref(),
            *vram,
            *idle_for,
        ),
        WarningKind::HostDown { reason } => host_not_answering(&w.subject, reason),
        WarningKind::StaleVram { used, held_for } => format!(
            "GPU {index} {} GiB held by no process for {} — stale allocation?",
            gib(*used),
            duration_short(*held_for)
        ),
        WarningKind::PileUp {
            unpinned,
            owners,
            free,
        } => pile_up(&index, unpinned.len(), *owners, free),
        WarningKind::Xid { code, count, ago } => xid(&index, *code, *count, *ago),
        WarningKind::RemappedRows(r) => remapped_rows(&index, r),
        WarningKind::RetiredPages(p) => retired_pages(&index, p),
        WarningKind::PcieReplays { total, growth } => replays(&index, *total, *growth),
        WarningKind::EccCorrected { total, growth } => ecc(&index, *total, *growth),
        WarningKind::HwSlowdown { reason, held_for } => slowdown(&index, reason, *held_for),
        WarningKind::Squatter {
            uid,
            namespace,
            pod,
            vram,
            allocated_to,
        } => squatter(
            &index,
            uid,
            namespace.as_deref(),
            pod.as_deref(),
            *vram,
            allocated_to,
        ),
    }
}

/// `GPU 0 is allocated to ml/trainer-0, but pod ml/squatter (9a9a9a9a) holds 2.7 GiB on it`:
/// the pod by its names and the UID's first group (what its cgroup path shows), or the
/// short UID alone when no record names it.
fn squatter(
    index: &str,
    uid: &str,
    namespace: Option<&str>,
    pod: Option<&str>,
    vram: Option<Bytes>,
    allocated_to: &[String],
) -> String {
    let short = uid.split('-').next().unwrap_or(uid);
    let who = match (namespace, pod) {
        (Some(ns), Some(pod)) => format!("{ns}/{pod} ({short})"),
        _ => short.to_string(),
    };
    let holds = vram.map_or_else(|| "runs".to_string(), |v| format!("holds {} GiB", gib(v)));
    format!(
        "GPU {index} is allocated to {}, but pod {who} {holds} on it",
        allocated_to.join(", ")
    )
}

fn retired_pages(index: &str, p: &RetiredPages) -> String {
    format!(
        "GPU {index} page retirement pending ({} double-bit, {} single-bit pages) — \
         reload the driver or reboot to apply",
        p.double_bit, p.single_bit
    )
}

fn replays(index: &str, total: u64, growth: u64) -> String {
    format!("GPU {index} PCIe replays +{growth} (total {total}) — check the link and riser")
}

fn ecc(index: &str, total: u64, growth: u64) -> String {
    format!("GPU {index} corrected ECC errors +{growth} (total {total}) — memory may be degrading")
}

fn slowdown(index: &str, reason: &ThrottleReason, held_for: Duration) -> String {
    format!(
        "GPU {index} clocks held down by {} for {} — check power and cooling",
        reason.label(),
        duration_short(held_for)
    )
}

/// An XID by number and, for the common ones, what it means.
fn xid(index: &str, code: u64, count: u64, ago: Duration) -> String {
    let meaning = xid_meaning(code).map_or_else(String::new, |m| format!(" ({m})"));
    format!(
        "GPU {index} XID {code}{meaning} {} ago — {count} XID error{} since gpuwatch started",
        duration_short(ago),
        if count == 1 { "" } else { "s" }
    )
}

fn remapped_rows(index: &str, r: &RemappedRows) -> String {
    let rows = format!(
        "{} uncorrectable, {} correctable rows remapped",
        r.uncorrectable, r.correctable
    );
    if r.failed {
        format!("GPU {index} row remapping failed ({rows}) — the GPU needs service")
    } else {
        format!("GPU {index} row remapping pending ({rows}) — reset the GPU to apply")
    }
}

/// How the GPU is named: its index, or `host:index` when watching several hosts (empty for
/// a host-wide warning, whose sentence names the host itself).
fn gpu_name(subject: &Subject) -> String {
    match subject {
        Subject::Gpu {
            index,
            host: Some(h),
            ..
        } => format!("{h}:{index}"),
        Subject::Gpu { index, .. } => index.to_string(),
        Subject::Host { .. } => String::new(),
    }
}

/// `3g.40gb gi1 (MIG-4b6f1c2d)`: the profile and GPU instance people recognise, and the
/// UUID's first group that `--only` and `CUDA_VISIBLE_DEVICES` take.
fn instance_name(i: &crate::model::mig::InstanceTag) -> String {
    let gi = i
        .gpu_instance
        .map_or_else(|| "gi?".into(), |g| format!("gi{g}"));
    format!(
        "{} {gi} ({})",
        i.profile.as_deref().unwrap_or("instance"),
        crate::model::mig::short_uuid(&i.id)
    )
}

fn oom_risk(
    index: &str,
    used: Bytes,
    total: Bytes,
    percent: f64,
    time_to_full: Option<Duration>,
) -> String {
    let mut s = format!(
        "GPU {index} VRAM {percent:.0}% ({}/{} GiB) — OOM risk",
        gib(used),
        gib(total)
    );
    if let Some(ttf) = time_to_full {
        s += &format!(", full in ~{} at current rate", duration_short(ttf));
    }
    s
}

/// "Running hot" until it has held at the limit for a while, then "overheating"; the limit
/// named is the slowdown threshold when the GPU reports one, else the critical level.
fn overheating(
    index: &str,
    temperature: Celsius,
    held_for: Duration,
    critical_at: Celsius,
    slowdown: Option<Celsius>,
) -> String {
    let limit = match slowdown {
        Some(s) => format!("slowdown at {}°C", s.0),
        None => format!("critical at {}°C", critical_at.0),
    };
    if held_for.is_zero() {
        format!("GPU {index} {}°C — running hot ({limit})", temperature.0)
    } else {
        format!(
            "GPU {index} {}°C for {} — overheating ({limit})",
            temperature.0,
            duration_short(held_for)
        )
    }
}

fn idle_holder(
    index: &str,
    pid: u32,
    user: Option<&str>,
    command: Option<&str>,
    vram: Bytes,
    idle_for: Duration,
) -> String {
    // A process not visible from here has no user or command to name.
    let user = user.map_or_else(|| format!("PID {pid}'s owner"), str::to_string);
    format!(
        "{user} holds {} GiB on GPU {index}, idle for {} (PID {pid} {})",
        gib(vram),
        duration_short(idle_for),
        truncate(command.unwrap_or(""), 40)
    )
}

fn host_not_answering(subject: &Subject, reason: &str) -> String {
    let host = match subject {
        Subject::Host { name } => name.as_str(),
        Subject::Gpu { host, .. } => host.as_deref().unwrap_or(""),
    };
    format!("host {host} not answering: {reason} — its GPUs are shown lost; retrying")
}

/// `n` unpinned processes of `owners` users or jobs on this GPU, with the free GPUs named
/// (singular and plural spelled out, since the sentence is read by people).
fn pile_up(index: &str, n: usize, owners: usize, free: &[u32]) -> String {
    let free: Vec<String> = free.iter().map(u32::to_string).collect();
    format!(
        "GPU {index}: {n} process{} of {owners} user{}/job{} without CUDA_VISIBLE_DEVICES; \
         GPU{} {} {} free — gpuwatch pick",
        if n == 1 { "" } else { "es" },
        if owners == 1 { "" } else { "s" },
        if owners == 1 { "" } else { "s" },
        if free.len() == 1 { "" } else { "s" },
        free.join(","),
        if free.len() == 1 { "is" } else { "are" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::warnings::{Severity, host_down};
    use crate::reading::GpuId;

    fn on_gpu(host: Option<&str>, kind: WarningKind) -> Warning {
        Warning {
            severity: Severity::Warning,
            subject: Subject::Gpu {
                id: GpuId("GPU-a".into()),
                index: 3,
                host: host.map(str::to_string),
            },
            kind,
        }
    }

    fn heat(temp: u32, held: u64, critical_at: u32, slowdown: Option<u32>) -> WarningKind {
        WarningKind::Overheating {
            temperature: Celsius(temp),
            held_for: Duration::from_secs(held),
            critical_at: Celsius(critical_at),
            slowdown: slowdown.map(Celsius),
        }
    }

    #[test]
    fn gpu_health_kinds_have_their_sentences() {
        let oom = |ttf: Option<u64>| WarningKind::OomRisk {
            used: Bytes::from_gib(78.4),
            total: Bytes::from_gib(80.0),
            percent: 98.0,
            time_to_full: ttf.map(Duration::from_secs),
            instance: None,
        };
        let on_instance = WarningKind::OomRisk {
            used: Bytes::from_gib(39.2),
            total: Bytes::from_gib(40.0),
            percent: 98.0,
            time_to_full: None,
            instance: Some(crate::model::mig::InstanceTag {
                id: crate::reading::GpuId("MIG-4b6f1c2d-0a1b".into()),
                gpu_instance: Some(1),
                compute_instance: Some(0),
                profile: Some("3g.40gb".into()),
            }),
        };
        let cases = [
            (oom(None), "GPU 3 VRAM 98% (78.4/80.0 GiB) — OOM risk"),
            (
                on_instance,
                "GPU 3 MIG 3g.40gb gi1 (MIG-4b6f1c2d) VRAM 98% (39.2/40.0 GiB) — OOM risk",
            ),
            (
                oom(Some(71)),
                "GPU 3 VRAM 98% (78.4/80.0 GiB) — OOM risk, full in ~1m11s at current rate",
            ),
            (
                heat(86, 0, 90, None),
                "GPU 3 86°C — running hot (critical at 90°C)",
            ),
            (
                heat(91, 37, 90, None),
                "GPU 3 91°C for 37s — overheating (critical at 90°C)",
            ),
            (
                heat(87, 30, 87, Some(87)),
                "GPU 3 87°C for 30s — overheating (slowdown at 87°C)",
            ),
            (
                WarningKind::Lost,
                "GPU 3 lost — not responding (fallen off the bus?)",
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(warning_line(&on_gpu(None, kind)), want);
        }
    }

    #[test]
    fn vram_holder_kinds_have_their_sentences() {
        let cases = [
            (
                WarningKind::IdleHolder {
                    pid: 4000,
                    user: Some("dave".into()),
                    command: Some("jupyter".into()),
                    vram: Bytes::from_gib(30.2),
                    idle_for: Duration::from_secs(600),
                },
                "dave holds 30.2 GiB on GPU 3, idle for 10m (PID 4000 jupyter)",
            ),
            (
                WarningKind::IdleHolder {
                    pid: 77,
                    user: None,
                    command: None,
                    vram: Bytes::from_gib(2.0),
                    idle_for: Duration::from_secs(3600),
                },
                "PID 77's owner holds 2.0 GiB on GPU 3, idle for 1h (PID 77 )",
            ),
            (
                WarningKind::StaleVram {
                    used: Bytes::from_gib(12.4),
                    held_for: Duration::from_secs(60),
                },
                "GPU 3 12.4 GiB held by no process for 1m — stale allocation?",
            ),
            (
                WarningKind::Squatter {
                    uid: "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee".into(),
                    namespace: Some("ml".into()),
                    pod: Some("squatter".into()),
                    vram: Some(Bytes::from_gib(2.7)),
                    allocated_to: vec!["ml/trainer-0".into()],
                },
                "GPU 3 is allocated to ml/trainer-0, but pod ml/squatter (9a9a9a9a) holds 2.7 GiB on it",
            ),
            (
                WarningKind::Squatter {
                    uid: "9a9a9a9a-bbbb-4ccc-8ddd-eeeeeeeeeeee".into(),
                    namespace: None,
                    pod: None,
                    vram: None,
                    allocated_to: vec!["ml/a".into(), "ml/b".into()],
                },
                "GPU 3 is allocated to ml/a, ml/b, but pod 9a9a9a9a runs on it",
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(warning_line(&on_gpu(None, kind)), want);
        }
    }

    #[test]
    fn xid_and_remapped_rows_have_their_sentences() {
        let rows = |pending, failed| {
            WarningKind::RemappedRows(RemappedRows {
                correctable: 1,
                uncorrectable: 2,
                pending,
                failed,
            })
        };
        let cases = [
            (
                WarningKind::Xid {
                    code: 79,
                    count: 2,
                    ago: Duration::from_secs(65),
                },
                "GPU 3 XID 79 (GPU has fallen off the bus) 1m5s ago — 2 XID errors since gpuwatch started",
            ),
            (
                WarningKind::Xid {
                    code: 62,
                    count: 1,
                    ago: Duration::from_secs(3),
                },
                "GPU 3 XID 62 3s ago — 1 XID error since gpuwatch started",
            ),
            (
                rows(false, true),
                "GPU 3 row remapping failed (2 uncorrectable, 1 correctable rows remapped) — the GPU needs service",
            ),
            (
                rows(true, false),
                "GPU 3 row remapping pending (2 uncorrectable, 1 correctable rows remapped) — reset the GPU to apply",
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(warning_line(&on_gpu(None, kind)), want);
        }
    }

    #[test]
    fn other_health_kinds_have_their_sentences() {
        let cases = [
            (
                WarningKind::RetiredPages(RetiredPages {
                    single_bit: 4,
                    double_bit: 1,
                    pending: true,
                }),
                "GPU 3 page retirement pending (1 double-bit, 4 single-bit pages) — reload the driver or reboot to apply",
            ),
            (
                WarningKind::PcieReplays {
                    total: 40,
                    growth: 7,
                },
                "GPU 3 PCIe replays +7 (total 40) — check the link and riser",
            ),
            (
                WarningKind::EccCorrected {
                    total: 12,
                    growth: 3,
                },
                "GPU 3 corrected ECC errors +3 (total 12) — memory may be degrading",
            ),
            (
                WarningKind::HwSlowdown {
                    reason: ThrottleReason::HwPowerBrakeSlowdown,
                    held_for: Duration::from_secs(45),
                },
                "GPU 3 clocks held down by power brake for 45s — check power and cooling",
            ),
        ];
        for (kind, want) in cases {
            assert_eq!(warning_line(&on_gpu(None, kind)), want);
        }
    }

    #[test]
    fn several_hosts_name_the_gpu_by_host_and_index() {
        assert_eq!(
            warning_line(&on_gpu(Some("gpu1"), WarningKind::Lost)),
            "GPU gpu1:3 lost — not responding (fallen off the bus?)"
        );
        assert_eq!(
            warning_line(&host_down("gpu2:9400", "connection refused")),
            "host gpu2:9400 not answering: connection refused — its GPUs are shown lost; retrying"
        );
    }
}
