//! The alert state machine on scripted warnings and an injected clock (no sleeping).

use super::*;
use crate::alert_settings::rules::KindRule;
use crate::alerts::limit::MAX_PER_WINDOW;
use crate::model::warnings::{Subject, WarningKind};
use crate::reading::GpuId;
use crate::units::Celsius;

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
}

fn on(gpu: u32, kind: WarningCode, severity: Severity) -> Observed {
    Observed {
        warning: Warning {
            severity,
            subject: Subject::Gpu {
                id: GpuId(format!("GPU-{gpu}")),
                index: gpu,
                host: None,
            },
            kind: WarningKind::Overheating {
                temperature: Celsius(91),
                held_for: Duration::ZERO,
                critical_at: Celsius(90),
                slowdown: None,
            },
        },
        kind,
        host: "h".into(),
        message: format!("GPU {gpu} hot"),
        owners: vec![("carol".into(), Bytes::from_gib(52.3).into())],
    }
}

fn hot(gpu: u32) -> Observed {
    on(gpu, WarningCode::Overheating, Severity::Critical)
}

/// (status, GPU index, repeat) of each alert; held-back summaries as ("held", total).
fn said(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Alert(a) => format!(
                "{} {} {}{}",
                a.status.name(),
                a.facts.kind,
                a.facts.warning.gpu_index().unwrap_or(99),
                if a.repeat { " again" } else { "" }
            ),
            Event::HeldBack(h) => format!("held {}", h.total()),
        })
        .collect()
}

/// `rules` with OOM risk alerting from warning severity, at once.
fn oom_from_warning(mut rules: Rules) -> Rules {
    rules.kinds.insert(
        WarningCode::OomRisk,
        KindRule {
            min: Some(Some(Severity::Warning)),
            hold: Some(Duration::ZERO),
            repeat: None,
        },
    );
    rules
}

#[test]
fn a_critical_warning_fires_once_and_resolves_once() {
    let mut e = Engine::new(Rules::default());
    assert_eq!(said(&e.step(t(0), &[hot(3)])), ["firing overheating 3"]);
    for s in 1..100 {
        assert!(e.step(t(s), &[hot(3)]).is_empty(), "sent again at {s}");
    }
    // Clear from 100 s: resolved once it has stayed clear for the resolve hold (5 min).
    for s in 100..400 {
        assert!(e.step(t(s), &[]).is_empty(), "said at {s}");
    }
    let out = e.step(t(400), &[]);
    assert_eq!(said(&out), ["resolved overheating 3"]);
    let Event::Alert(a) = &out[0] else { panic!() };
    assert_eq!((a.started, a.cleared, a.at), (t(0), Some(t(100)), t(400)));
    assert_eq!(a.facts.owners[0].0, "carol", "the facts last seen");
    assert_eq!(a.flaps, 0);
    assert!(e.step(t(401), &[]).is_empty());
}

/// The demo's OOM crash loop (issue 20): a job fills its GPU, is killed, restarts, every
/// 80 s. Over 300 s that is one alert: one firing, no repeat, no resolved while it keeps
/// coming back, and one resolved after the last crash plus the hold, counting the flaps.
#[test]
fn a_crash_loop_is_one_alert_resolved_after_the_last_crash_and_the_hold() {
    let crashing = |s: u64| (60..75).contains(&(s % 80));
    let oom = || on(2, WarningCode::OomRisk, Severity::Critical);
    let mut e = Engine::new(Rules::default());
    let mut out = Vec::new();
    for s in 0..300 {
        let now: Vec<Observed> = if crashing(s) { vec![oom()] } else { vec![] };
        out.extend(e.step(t(s), &now).into_iter().map(|ev| (s, ev)));
    }
    let firing: Vec<String> = out
        .iter()
        .map(|(s, ev)| format!("{s}: {:?}", said(std::slice::from_ref(ev))))
        .collect();
    assert_eq!(
        firing,
        ["60: [\"firing oom_risk 2\"]"],
        "three crashes, one alert"
    );
    // The last crash cleared at 235 s: resolved at 535, not a second before.
    for s in 300..535 {
        assert!(e.step(t(s), &[]).is_empty(), "said at {s}");
    }
    let out = e.step(t(535), &[]);
    assert_eq!(said(&out), ["resolved oom_risk 2"]);
    let Event::Alert(a) = &out[0] else { panic!() };
    assert_eq!((a.started, a.cleared, a.flaps), (t(60), Some(t(235)), 2));
    assert!(!a.at_start, "it started while watching");
}

/// With no resolve hold, every clear resolves at once (the behaviour before issue 20), so
/// each comeback is a new alert.
#[test]
fn a_zero_resolve_hold_resolves_at_once_and_a_comeback_is_new() {
    let rules = Rules {
        resolve_after: Duration::ZERO,
        ..Rules::default()
    };
    let mut e = Engine::new(rules);
    assert_eq!(said(&e.step(t(0), &[hot(1)])), ["firing overheating 1"]);
    assert_eq!(said(&e.step(t(1), &[])), ["resolved overheating 1"]);
    assert_eq!(said(&e.step(t(2), &[hot(1)])), ["firing overheating 1"]);
}

/// A comeback worse than what was said is still said at once, with the flaps so far.
#[test]
fn a_comeback_within_the_hold_that_is_worse_is_said_and_counts_the_flap() {
    let mut e = Engine::new(oom_from_warning(Rules::default()));
    let oom = |s| on(2, WarningCode::OomRisk, s);
    assert_eq!(
        said(&e.step(t(0), &[oom(Severity::Warning)])),
        ["firing oom_risk 2"]
    );
    assert!(e.step(t(10), &[]).is_empty());
    let out = e.step(t(20), &[oom(Severity::Critical)]);
    assert_eq!(said(&out), ["firing oom_risk 2 again"]);
    let Event::Alert(a) = &out[0] else { panic!() };
    assert_eq!((a.flaps, a.started), (1, t(0)));
}

/// What the first step sees was there at start; what appears later is news.
#[test]
fn warnings_at_the_first_step_are_marked_as_there_at_start() {
    let mut e = Engine::new(Rules::default());
    let first = e.step(t(0), &[hot(1)]);
    let later = e.step(t(1), &[hot(1), hot(2)]);
    let at_start = |events: &[Event]| -> Vec<bool> {
        events
            .iter()
            .map(|ev| matches!(ev, Event::Alert(a) if a.at_start))
            .collect()
    };
    assert_eq!(at_start(&first), [true]);
    assert_eq!(said(&later), ["firing overheating 2"]);
    assert_eq!(at_start(&later), [false]);
}

#[test]
fn a_warning_must_hold_for_its_time_and_a_short_one_never_fires() {
    let idle = |gpu| on(gpu, WarningCode::IdleHolder, Severity::Warning);
    let mut e = Engine::new(Rules::default());
    assert!(e.step(t(0), &[idle(4)]).is_empty());
    assert!(e.step(t(59), &[idle(4)]).is_empty());
    // Cleared before its minute: no alert and no resolved.
    assert!(e.step(t(60), &[]).is_empty());
    assert!(e.step(t(61), &[idle(4)]).is_empty());
    assert_eq!(said(&e.step(t(121), &[idle(4)])), ["firing idle_holder 4"]);
    // Warnings of kinds that go out only when critical are not tracked at all.
    let warm = on(3, WarningCode::Overheating, Severity::Warning);
    assert!(e.step(t(500), &[idle(4), warm]).is_empty());
}

#[test]
fn it_repeats_while_it_holds_and_says_at_once_when_it_gets_worse() {
    let rules = Rules {
        repeat: Duration::from_secs(3600),
        ..Rules::default()
    };
    let mut e = Engine::new(oom_from_warning(rules));
    let oom = |s| on(2, WarningCode::OomRisk, s);
    assert_eq!(
        said(&e.step(t(0), &[oom(Severity::Warning)])),
        ["firing oom_risk 2"]
    );
    assert_eq!(
        said(&e.step(t(10), &[oom(Severity::Critical)])),
        ["firing oom_risk 2 again"]
    );
    assert!(
        e.step(t(20), &[oom(Severity::Warning)]).is_empty(),
        "better is no news"
    );
    assert!(e.step(t(3609), &[oom(Severity::Warning)]).is_empty());
    assert_eq!(
        said(&e.step(t(3610), &[oom(Severity::Warning)])),
        ["firing oom_risk 2 again"]
    );
}

#[test]
fn one_alert_per_host_kind_and_gpu() {
    let mut e = Engine::new(Rules::default());
    let mut other_host = hot(3);
    other_host.host = "h2".into();
    let lost = on(3, WarningCode::Lost, Severity::Critical);
    let out = e.step(t(0), &[hot(3), hot(3), other_host, lost, hot(5)]);
    assert_eq!(
        said(&out),
        [
            "firing lost 3",
            "firing overheating 3",
            "firing overheating 5",
            "firing overheating 3"
        ]
    );
}

#[test]
fn the_rate_limit_holds_back_and_then_sums_up() {
    let mut e = Engine::new(Rules {
        resolve_after: Duration::ZERO,
        ..Rules::default()
    });
    let many: Vec<Observed> = (0..30).map(hot).collect();
    let out = e.step(t(0), &many);
    assert_eq!(out.len(), MAX_PER_WINDOW);
    // Nothing new, no room yet: nothing said.
    assert!(e.step(t(30), &many).is_empty());
    // All clear within the minute: all 30 resolved are held back as well (the 10 whose
    // firing was held back count as fired: they must not fire late).
    assert!(e.step(t(59), &[]).is_empty());
    let out = e.step(t(60), &[]);
    assert_eq!(said(&out), ["held 40"]);
    let Event::HeldBack(h) = &out[0] else {
        panic!()
    };
    assert_eq!(h.counts[&(WarningCode::Overheating, Status::Firing)], 10);
    assert_eq!(h.counts[&(WarningCode::Overheating, Status::Resolved)], 30);
}
