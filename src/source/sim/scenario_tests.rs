//! Unit tests of the demo scenario: every situation appears in each block of eight GPUs.

use super::*;

#[test]
fn every_situation_is_in_each_block_and_the_notebook_spans_two_gpus() {
    for role in [
        Role::Training,
        Role::Warns(WarningCode::OomRisk),
        Role::Warns(WarningCode::Overheating),
        Role::Warns(WarningCode::IdleHolder),
        Role::Warns(WarningCode::StaleVram),
        Role::Free,
    ] {
        assert!(ROLES.iter().any(|r| r.role == role), "{role:?}");
    }
    let notebooks = ROLES
        .iter()
        .filter(|r| r.jobs.iter().any(|j| matches!(j.pid, Pid::PerBlock(_))))
        .count();
    assert_eq!(notebooks, 2);
    assert_eq!(user_of(4), user_of(7), "one notebook, one owner");
    let roots = ROLES
        .iter()
        .flat_map(|r| r.jobs)
        .filter(|j| j.owner == Owner::Root);
    assert_eq!(roots.count(), 1);
}

#[test]
fn the_oom_job_dies_short_of_full_and_restarts() {
    let (mem, alive, generation) = oom_cycle(0.0);
    assert_eq!((mem, alive, generation), (40.0, true, 0));
    let deaths = (0..400).map(f64::from).filter(|&t| !oom_cycle(t).1);
    let first_death = deaths.clone().next().unwrap();
    let (_, _, next) = oom_cycle(first_death + 6.0);
    assert_eq!(next, 1);
    assert_eq!(oom_generation_start(1), first_death + 6.0);
    let peak = (0..400)
        .map(|t| oom_cycle(f64::from(t)).0)
        .fold(0.0, f64::max);
    assert!(peak + DRIVER_RESERVED_GIB <= VRAM_TOTAL_GIB * 0.99);
}

#[test]
fn the_hot_gpu_runs_in_bursts_and_cools_between_them() {
    let hot = ROLES
        .iter()
        .find(|r| r.role == Role::Warns(WarningCode::Overheating))
        .unwrap();
    assert_eq!(hot.temp.at(0.0), 84.0);
    assert_eq!(hot.temp.at(100.0), 92.0);
    assert!(!hot.temp.paused(239.0));
    assert!(hot.temp.paused(240.0) && hot.temp.at(250.0) < 80.0);
    assert_eq!(hot.temp.at(300.0), 84.0, "the next burst");
    assert!(!hot.temp.paused(300.0));
}

#[test]
fn the_demo_opens_with_each_role_raising_its_warning_on_its_gpu() {
    use crate::source::GpuSource;
    use crate::state::{Msg, State, ViewConfig, update};
    use std::time::Duration;
    let start = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
    let second = Duration::from_secs(1);
    let mut sim =
        super::super::SimSource::new(8, 42, second, super::super::SimClock::Virtual { start });
    // What `--demo` does: run the story past the idle holder's 30 minutes, then one live sample.
    let mut state = State::new(ViewConfig::default());
    for sample in sim.backfill(Duration::from_secs(31 * 60), Duration::from_secs(300)) {
        update(&mut state, Msg::Sample(Box::new(sample)));
    }
    update(&mut state, Msg::Sample(Box::new(sim.sample().unwrap())));
    let raised: Vec<(Option<u32>, WarningCode)> = state
        .model
        .warnings()
        .iter()
        .map(|w| (w.gpu_index(), w.kind.code()))
        .collect();
    for (i, spec) in ROLES.iter().enumerate() {
        if let Role::Warns(code) = spec.role {
            assert!(
                raised.contains(&(Some(i as u32), code)),
                "GPU {i}: {code} not in {raised:?}"
            );
        }
    }
}
