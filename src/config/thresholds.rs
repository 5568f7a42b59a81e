//! The warning thresholds (`--oom-warn` … `--stale-min-vram`, the file's `[thresholds]`):
//! each flag > env > key > `Thresholds::default()`, and each warning level checked against
//! its critical level. Resolution only; the warnings themselves live in `state::warnings`.

use super::SettingsError;
use super::values::{self, Resolver};
use crate::cli::Cli;
use crate::model::warnings::Thresholds;
use crate::units::Bytes;
use std::time::Duration;

/// Resolves every threshold. The helpers run in the order the keys are listed, so a start
/// with several bad values names the same (first) one as before.
pub(super) fn thresholds(cli: &Cli, r: &Resolver) -> Result<Thresholds, SettingsError> {
    let d = Thresholds::default();
    let (oom_warn_percent, oom_critical_percent) = oom_levels(cli, r, &d)?;
    let (temp_warn, temp_critical) = temp_levels(cli, r, &d)?;
    let (oom_time_to_full, temp_hold) = warning_delays(cli, r, &d)?;
    let (idle_min_vram, idle_after, stale_min_vram, stale_after) = holders(cli, r, &d)?;
    Ok(Thresholds {
        oom_warn_percent,
        oom_critical_percent,
        oom_time_to_full,
        temp_warn,
        temp_critical,
        temp_hold,
        idle_min_vram,
        idle_after,
        stale_min_vram,
        stale_after,
    })
}

/// The VRAM warning and critical percentages, the warning one no higher than the other.
fn oom_levels(cli: &Cli, r: &Resolver, d: &Thresholds) -> Result<(f64, f64), SettingsError> {
    let t = &r.file_config().thresholds;
    let oom_warn = r.percent(
        ("oom-warn", &cli.oom_warn),
        ("thresholds.oom_warn_percent", &t.oom_warn_percent),
        d.oom_warn_percent,
    )?;
    let oom_critical = r.percent(
        ("oom-critical", &cli.oom_critical),
        ("thresholds.oom_critical_percent", &t.oom_critical_percent),
        d.oom_critical_percent,
    )?;
    values::ordered(&oom_warn, &oom_critical)?;
    Ok((oom_warn.value, oom_critical.value))
}

/// The warning and critical temperatures, the warning one no higher than the other.
fn temp_levels(cli: &Cli, r: &Resolver, d: &Thresholds) -> Result<(u32, u32), SettingsError> {
    let t = &r.file_config().thresholds;
    let temp_warn = r.celsius(
        ("temp-warn", &cli.temp_warn),
        ("thresholds.temp_warn", &t.temp_warn),
        d.temp_warn,
    )?;
    let temp_critical = r.celsius(
        ("temp-critical", &cli.temp_critical),
        ("thresholds.temp_critical", &t.temp_critical),
        d.temp_critical,
    )?;
    values::ordered(&temp_warn, &temp_critical)?;
    Ok((temp_warn.value, temp_critical.value))
}

/// How soon VRAM may fill (`oom_time_to_full`) and how long heat must hold (`temp_hold`).
fn warning_delays(
    cli: &Cli,
    r: &Resolver,
    d: &Thresholds,
) -> Result<(Duration, Duration), SettingsError> {
    let t = &r.file_config().thresholds;
    let oom_time_to_full = r.duration(
        ("oom-time-to-full", &cli.oom_time_to_full),
        ("thresholds.oom_time_to_full", &t.oom_time_to_full),
        d.oom_time_to_full,
    )?;
    let temp_hold = r.duration(
        ("temp-hold", &cli.temp_hold),
        ("thresholds.temp_hold", &t.temp_hold),
        d.temp_hold,
    )?;
    Ok((oom_time_to_full.value, temp_hold.value))
}

/// The idle-holder and stale-VRAM sizes and durations, in that order.
fn holders(
    cli: &Cli,
    r: &Resolver,
    d: &Thresholds,
) -> Result<(Bytes, Duration, Bytes, Duration), SettingsError> {
    let t = &r.file_config().thresholds;
    let idle_min_vram = r.size(
        ("idle-min-vram", &cli.idle_min_vram),
        ("thresholds.idle_min_vram", &t.idle_min_vram),
        d.idle_min_vram,
    )?;
    let idle_after = r.duration(
        ("idle-after", &cli.idle_after),
        ("thresholds.idle_after", &t.idle_after),
        d.idle_after,
    )?;
    let stale_min_vram = r.size(
        ("stale-min-vram", &cli.stale_min_vram),
        ("thresholds.stale_min_vram", &t.stale_min_vram),
        d.stale_min_vram,
    )?;
    let stale_after = r.duration(
        ("stale-after", &cli.stale_after),
        ("thresholds.stale_after", &t.stale_after),
        d.stale_after,
    )?;
    Ok((
        idle_min_vram.value,
        idle_after.value,
        stale_min_vram.value,
        stale_after.value,
    ))
}
