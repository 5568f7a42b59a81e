//! Health warnings over sequences of readings: XID hold, remap/retire levels, counter growth
//! and its reset, and the slowdown hold.

use super::*;
use crate::reading::GpuId;
use crate::reading::health::{RemappedRows, RetiredPages, XidTally};

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
}

fn gpu() -> GpuReading {
    GpuReading::absent(GpuId("GPU-a".into()), 0, "g")
}

/// Runs readings (seconds, reading) in order; the warnings after each.
fn run(readings: Vec<(u64, GpuReading)>) -> Vec<Vec<(Severity, WarningKind)>> {
    let mut alarm = HealthMemory::default();
    readings
        .into_iter()
        .map(|(s, g)| {
            let mut next = HealthMemory::default();
            let w = evaluate(&alarm, &g, t(s), &mut next);
            alarm = next;
            w
        })
        .collect()
}

#[test]
fn an_xid_is_critical_for_its_hold_then_clears() {
    let mut g = gpu();
    let mut tally = XidTally::NONE;
    tally.record(79, t(5));
    tally.record(79, t(6));
    g.health.xid = Some(tally);
    let w = run(vec![(10, g.clone()), (6 + XID_HOLD.as_secs(), g.clone())]);
    assert_eq!(
        w[0],
        vec![(
            Severity::Critical,
            WarningKind::Xid {
                code: 79,
                count: 2,
                ago: Duration::from_secs(4)
            }
        )]
    );
    assert!(w[1].is_empty(), "{:?}", w[1]);
    g.health.xid = Some(XidTally::NONE);
    assert!(run(vec![(0, g)])[0].is_empty(), "capable, none seen");
}

#[test]
fn remapped_rows_failed_is_critical_pending_a_warning_applied_nothing() {
    let rows = |pending, failed| RemappedRows {
        correctable: 0,
        uncorrectable: 2,
        pending,
        failed,
    };
    let sev = |r: RemappedRows| {
        let mut g = gpu();
        g.health.remapped_rows = Some(r);
        run(vec![(0, g)])[0].iter().map(|w| w.0).collect::<Vec<_>>()
    };
    assert_eq!(sev(rows(false, true)), vec![Severity::Critical]);
    assert_eq!(sev(rows(true, false)), vec![Severity::Warning]);
    assert!(sev(rows(false, false)).is_empty());
    let mut g = gpu();
    g.health.retired_pages = Some(RetiredPages {
        single_bit: 1,
        double_bit: 1,
        pending: true,
    });
    assert!(matches!(
        run(vec![(0, g)])[0][..],
        [(Severity::Warning, WarningKind::RetiredPages(_))]
    ));
}

#[test]
fn counter_growth_warns_for_its_hold_and_a_reset_is_no_growth() {
    let at = |n: u64| {
        let mut g = gpu();
        g.health.pcie_replays = Some(n);
        g
    };
    let hold = GROWTH_HOLD.as_secs();
    let w = run(vec![
        (0, at(5)),
        (1, at(5)),
        (2, at(9)),
        (3, at(12)),
        (3 + hold - 1, at(12)),
        (3 + hold, at(12)),
        (3 + hold + 1, at(2)),
    ]);
    assert!(w[0].is_empty(), "the first value is a baseline");
    assert!(w[1].is_empty());
    assert_eq!(
        w[2],
        vec![(
            Severity::Warning,
            WarningKind::PcieReplays {
                total: 9,
                growth: 4
            }
        )]
    );
    assert!(matches!(
        w[3][..],
        [(_, WarningKind::PcieReplays { growth: 7, .. })]
    ));
    assert_eq!(w[4].len(), 1, "still within the hold");
    assert!(w[5].is_empty(), "the hold ran out");
    assert!(w[6].is_empty(), "a smaller value is a reset");
}

#[test]
fn a_hw_slowdown_warns_once_held() {
    let braking = |on: bool| {
        let mut g = gpu();
        g.throttle_reasons = Some(if on {
            vec![ThrottleReason::HwPowerBrakeSlowdown]
        } else {
            vec![]
        });
        g
    };
    let hold = SLOWDOWN_HOLD.as_secs();
    let w = run(vec![
        (0, braking(true)),
        (hold - 1, braking(true)),
        (hold, braking(true)),
        (hold + 1, braking(false)),
        (hold + 2, braking(true)),
    ]);
    assert!(w[0].is_empty() && w[1].is_empty());
    assert!(matches!(
        &w[2][..],
        [(Severity::Warning, WarningKind::HwSlowdown { reason: ThrottleReason::HwPowerBrakeSlowdown, held_for })]
            if *held_for == SLOWDOWN_HOLD
    ));
    assert!(
        w[3].is_empty() && w[4].is_empty(),
        "released: the hold starts over"
    );
}
