//! Warnings evaluated over sequences of readings: levels, hysteresis, time-to-full,
//! held heat, lost GPUs, and the order warnings are shown in.

use super::*;
use crate::units::Bytes;

fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
}

fn gpu(used_gib: f64, temp: u32) -> GpuReading {
    let mut g = GpuReading::absent(GpuId("GPU-a".into()), 3, "g");
    g.memory_total = Some(Bytes::from_gib(80.0));
    g.memory_used = Some(Bytes::from_gib(used_gib));
    g.temperature = Some(Celsius(temp));
    g
}

/// Feeds (seconds, used GiB, °C) readings in order, returning the warnings after each.
fn run(readings: &[(u64, f64, u32)], slowdown: Option<u32>) -> Vec<Vec<Warning>> {
    // These readings list no processes; stale-VRAM warnings are `etiquette`'s to test.
    let th = Thresholds {
        stale_min_vram: Bytes(u64::MAX),
        ..Thresholds::default()
    };
    let mut alarm = Alarm::default();
    let mut hist = GpuHistory::new(300);
    readings
        .iter()
        .map(|&(s, used, temp)| {
            let mut g = gpu(used, temp);
            g.temperature_slowdown = slowdown.map(Celsius);
            hist.push(t(s), &g);
            let (next, w) = evaluate(&alarm, &g, &[], &hist, &th, t(s));
            alarm = next;
            w
        })
        .collect()
}

fn severities(w: &[Warning]) -> Vec<Severity> {
    w.iter().map(|w| w.severity).collect()
}

#[test]
fn vram_thresholds_and_hysteresis() {
    // 80 GiB total: 71.2 = 89 %, 72.8 = 91 %, 78.4 = 98 %, 76.8 = 96 %, 70.4 = 88 %, 69.6 = 87 %.
    // A minute apart, so the 30 s trend window never holds enough points for a
    // time-to-full prediction: only the levels count here.
    let w = run(
        &[
            (0, 71.2, 40),
            (60, 72.8, 40),
            (120, 78.4, 40),
            (180, 76.8, 40),
            (240, 70.4, 40),
            (300, 69.6, 40),
        ],
        None,
    );
    assert!(w[0].is_empty(), "89% is below the warning level");
    assert_eq!(severities(&w[1]), vec![Severity::Warning]);
    assert_eq!(severities(&w[2]), vec![Severity::Critical]);
    assert_eq!(
        severities(&w[3]),
        vec![Severity::Critical],
        "96% stays critical (within the margin)"
    );
    assert_eq!(
        severities(&w[4]),
        vec![Severity::Warning],
        "88% stays a warning"
    );
    assert!(w[5].is_empty(), "87% clears");
    // The words are `ui::text`'s (tested there); here, the numbers they are made of.
    assert!(
        matches!(w[2][0].kind, WarningKind::OomRisk { used, total, percent, time_to_full: None, instance: None }
            if used == Bytes::from_gib(78.4) && total == Bytes::from_gib(80.0)
                && (percent - 98.0).abs() < 0.01),
        "{:?}",
        w[2][0]
    );
    assert_eq!(
        w[2][0].subject,
        Subject::Gpu {
            id: GpuId("GPU-a".into()),
            index: 3,
            host: None
        }
    );
}

#[test]
fn a_nearly_full_mig_instance_is_at_risk_while_its_gpu_is_not() {
    use crate::reading::mig::MigReading;
    let th = Thresholds {
        stale_min_vram: Bytes(u64::MAX),
        ..Thresholds::default()
    };
    let mut alarm = Alarm::default();
    let mut hist = GpuHistory::new(300);
    // The GPU is half full; its 3g.40gb instance goes 98%, 96% (stays critical: the
    // margin), 93% (a warning), 87% (clears).
    let mut severities_seen = Vec::new();
    for (s, inst_gib) in [(0, 39.2), (1, 38.4), (2, 37.2), (3, 34.8)] {
        let mut g = gpu(40.0, 40);
        g.mig_devices = vec![MigReading {
            id: GpuId("MIG-4b6f1c2d-0a1b".into()),
            gpu_instance_id: Some(1),
            compute_instance_id: Some(0),
            profile: Some("3g.40gb".into()),
            memory_total: Some(Bytes::from_gib(40.0)),
            memory_used: Some(Bytes::from_gib(inst_gib)),
            util: None,
            pids: vec![],
        }];
        hist.push(t(s), &g);
        let (next, w) = evaluate(&alarm, &g, &[], &hist, &th, t(s));
        alarm = next;
        assert!(w.len() <= 1, "{w:?}");
        if let Some(w) = w.first() {
            match &w.kind {
                WarningKind::OomRisk {
                    instance: Some(i),
                    percent,
                    ..
                } => {
                    assert_eq!(i.id.0, "MIG-4b6f1c2d-0a1b");
                    assert!((percent - inst_gib / 40.0 * 100.0).abs() < 0.01);
                }
                other => panic!("{other:?}"),
            }
            assert_eq!(
                w.gpu(),
                Some(&GpuId("GPU-a".into())),
                "the GPU is the subject"
            );
        }
        severities_seen.push(severities(&w));
    }
    assert_eq!(
        severities_seen,
        [
            vec![Severity::Critical],
            vec![Severity::Critical],
            vec![Severity::Warning],
            vec![]
        ]
    );
}

#[test]
fn fast_growth_predicts_time_to_full() {
    // 40 GiB growing 0.5 GiB/s: 40 GiB left at 0.5 GiB/s = 80 s.
    let readings: Vec<_> = (0..10).map(|s| (s, 40.0 + 0.5 * s as f64, 40)).collect();
    let w = run(&readings, None);
    assert!(
        w[0].is_empty() && w[1].is_empty(),
        "needs three points for a trend"
    );
    let last = w.last().unwrap();
    assert_eq!(severities(last), vec![Severity::Warning]);
    match &last[0].kind {
        WarningKind::OomRisk {
            time_to_full: Some(ttf),
            ..
        } => {
            assert!((ttf.as_secs_f64() - 71.0).abs() < 1.0, "{ttf:?}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn slow_growth_or_a_drop_is_no_risk() {
    let slow: Vec<_> = (0..10).map(|s| (s, 40.0 + 0.01 * s as f64, 40)).collect();
    assert!(run(&slow, None).iter().all(|w| w.is_empty()));
    let drop: Vec<_> = (0..10).map(|s| (s, 70.0 - 5.0 * s as f64, 40)).collect();
    assert!(run(&drop, None).iter().all(|w| w.is_empty()));
}

#[test]
fn heat_needs_to_be_held_before_critical() {
    let mut r = vec![(0, 10.0, 80), (1, 10.0, 86)];
    r.extend((2..40).map(|s| (s, 10.0, 91)));
    let w = run(&r, None);
    assert!(w[0].is_empty());
    assert_eq!(severities(&w[1]), vec![Severity::Warning]);
    assert_eq!(
        w[1][0].kind,
        WarningKind::Overheating {
            temperature: Celsius(86),
            held_for: Duration::from_secs(0),
            critical_at: Celsius(90),
            slowdown: None,
        }
    );
    // Hot from t=2: still a warning at t=31 (29 s), critical from t=32 (30 s).
    assert_eq!(severities(&w[31]), vec![Severity::Warning]);
    assert_eq!(severities(&w[32]), vec![Severity::Critical]);
    assert_eq!(
        w[39][0].kind,
        WarningKind::Overheating {
            temperature: Celsius(91),
            held_for: Duration::from_secs(37),
            critical_at: Celsius(90),
            slowdown: None,
        }
    );
}

#[test]
fn heat_hysteresis_and_device_slowdown() {
    // A dip to 88 °C (within 3 °C of 90) keeps the hot spell going; 86 ends it.
    let mut r: Vec<_> = (0..31).map(|s| (s, 10.0, 90)).collect();
    r.push((31, 10.0, 88));
    r.push((32, 10.0, 86));
    r.push((33, 10.0, 83));
    r.push((34, 10.0, 81));
    let w = run(&r, None);
    assert_eq!(severities(&w[30]), vec![Severity::Critical]);
    assert_eq!(severities(&w[31]), vec![Severity::Critical]);
    assert_eq!(severities(&w[32]), vec![Severity::Warning]);
    assert_eq!(
        severities(&w[33]),
        vec![Severity::Warning],
        "83 is within 3 °C of 85"
    );
    assert!(w[34].is_empty());

    // A device that slows down at 87 °C is critical from 87, and says so.
    let r: Vec<_> = (0..31).map(|s| (s, 10.0, 87)).collect();
    let w = run(&r, Some(87));
    assert_eq!(severities(&w[30]), vec![Severity::Critical]);
    assert_eq!(
        w[30][0].kind,
        WarningKind::Overheating {
            temperature: Celsius(87),
            held_for: Duration::from_secs(30),
            critical_at: Celsius(87),
            slowdown: Some(Celsius(87)),
        }
    );
}

#[test]
fn lost_gpu_is_critical_and_absent_readings_raise_nothing() {
    let th = Thresholds::default();
    let hist = GpuHistory::new(10);
    let mut g = GpuReading::absent(GpuId("GPU-a".into()), 1, "g");
    assert!(
        evaluate(&Alarm::default(), &g, &[], &hist, &th, t(0))
            .1
            .is_empty()
    );
    g.status = GpuStatus::Lost;
    let w = evaluate(&Alarm::default(), &g, &[], &hist, &th, t(0)).1;
    assert_eq!(severities(&w), vec![Severity::Critical]);
    assert_eq!(w[0].kind, WarningKind::Lost);
}

#[test]
fn critical_first_then_by_gpu_then_hosts() {
    let on = |index: u32, severity| Warning {
        severity,
        subject: Subject::Gpu {
            id: GpuId(format!("GPU-{index}")),
            index,
            host: None,
        },
        kind: WarningKind::Lost,
    };
    let mut w = vec![
        host_down("b", "refused"),
        on(5, Severity::Warning),
        on(2, Severity::Critical),
        host_down("a", "refused"),
        on(1, Severity::Warning),
        on(7, Severity::Critical),
    ];
    sort(&mut w);
    let order: Vec<(Severity, Option<u32>)> =
        w.iter().map(|w| (w.severity, w.gpu_index())).collect();
    let (c, w_) = (Severity::Critical, Severity::Warning);
    assert_eq!(
        order,
        vec![
            (c, Some(2)),
            (c, Some(7)),
            (c, None),
            (c, None),
            (w_, Some(1)),
            (w_, Some(5)),
        ]
    );
    assert_eq!(w[2].subject, Subject::Host { name: "b".into() }, "stable");
    assert_eq!(w[2].gpu(), None);
}
