//! `gpuwatch alert test`: one synthetic alert through every configured sink, one attempt
//! each, saying what each answered. Blocking; runs before (and instead of) any sampling.

use std::time::{Duration, SystemTime};

use super::engine::{Alert, Event, Observed, Status};
use super::sinks;
use crate::alert_settings::AlertSettings;
use crate::model::warnings::{Severity, Subject, Warning, WarningKind};
use crate::reading::GpuId;
use crate::units::{Bytes, Celsius};

/// A critical overheating GPU 0 on `host`, marked as a test everywhere it shows.
pub fn synthetic(host: &str, now: SystemTime) -> Event {
    let warning = Warning {
        severity: Severity::Critical,
        subject: Subject::Gpu {
            id: GpuId("GPU-00000000-0000-0000-0000-000000000000".into()),
            index: 0,
            host: None,
        },
        kind: WarningKind::Overheating {
            temperature: Celsius(92),
            held_for: Duration::from_secs(30),
            critical_at: Celsius(90),
            slowdown: None,
        },
    };
    Event::Alert(Box::new(Alert {
        status: Status::Firing,
        facts: Observed {
            kind: warning.kind.code(),
            message: format!(
                "test alert from gpuwatch alert test ({})",
                crate::present::warnings::warning_line(&warning)
            ),
            host: host.to_string(),
            owners: vec![("nobody".into(), Bytes::from_gib(1.0).into())],
            warning,
        },
        started: now,
        at: now,
        repeat: false,
        test: true,
        flaps: 0,
        at_start: false,
        cleared: None,
        now: None,
    }))
}

/// One line per sink (`SINK: ANSWER` or `SINK: failed: WHY`), and whether all worked.
/// `None` when no sink is configured.
pub fn run(settings: &AlertSettings, host: &str) -> Option<(Vec<String>, bool)> {
    if settings.sinks.is_empty() {
        return None;
    }
    let event = synthetic(host, SystemTime::now());
    let mut ok = true;
    let lines = settings
        .sinks
        .iter()
        .map(|sink| match sinks::deliver_once(sink, &event) {
            Ok(answer) => format!("{}: {answer}", sink.shown()),
            Err(why) => {
                ok = false;
                format!("{}: failed: {why}", sink.shown())
            }
        })
        .collect();
    Some((lines, ok))
}
