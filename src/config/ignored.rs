//! Settings this run would not use are refused, naming them (exit 2): a `--seed` with real
//! GPUs or a `--theme` under `serve` would otherwise be dropped without a word. Checks only
//! what was given; resolving the values is done elsewhere.
//!
//! What counts as given: the command line always. The environment too for the demo fleet's
//! settings and `--process-metrics-limit` (they only mean something beside another setting),
//! but not for the monitor's own settings under `serve`: a shell that exports
//! `GPUWATCH_THEME` must still be able to start the exporter. The config file is shared by
//! every mode, so a key there that this run does not use is never an error.

use super::values::Resolver;
use super::{Settings, SettingsError};
use crate::cli::{Cli, Command, SourceKind};

/// Refuses the first setting `cli` or the environment gave that `settings` leave unused.
pub(super) fn check(cli: &Cli, r: &Resolver, settings: &Settings) -> Result<(), SettingsError> {
    demo_fleet(cli, r, settings)?;
    if let Some(Command::Serve(_)) = &cli.command {
        serve_flags(cli)?;
    }
    Ok(())
}

/// `--demo-gpus`, `--seed`, `--demo-scenario`: only where the simulated fleet is sampled.
fn demo_fleet(cli: &Cli, r: &Resolver, s: &Settings) -> Result<(), SettingsError> {
    let Some(reads) = not_the_demo(s) else {
        return Ok(());
    };
    for (flag, given) in [
        ("demo-gpus", &cli.demo_gpus),
        ("seed", &cli.seed),
        ("demo-scenario", &cli.demo_scenario),
    ] {
        if let Some(got) = r.text(flag, given)? {
            return Err(SettingsError::new(
                got.at(),
                format!(
                    "only with the demo fleet (--demo or --source demo); this run reads {reads}"
                ),
                None,
            ));
        }
    }
    Ok(())
}

/// What this run reads instead of the demo fleet, or `None` when it samples the demo (or
/// may: `--source auto` falls back to it where there is no GPU).
fn not_the_demo(s: &Settings) -> Option<&'static str> {
    if s.replay.is_some() {
        return Some("a recording");
    }
    if s.prometheus.is_some() {
        return Some("a Prometheus server (--prometheus)");
    }
    if s.remote.any() && !s.remote.with_local {
        return Some("remote hosts only");
    }
    match s.source {
        SourceKind::Demo | SourceKind::Auto => None,
        SourceKind::Nvml => Some("real GPUs (--source nvml)"),
        SourceKind::Amd => Some("real GPUs (--source amd)"),
        SourceKind::Intel => Some("real GPUs (--source intel)"),
    }
}

/// The monitor's settings and the one-shot output have no meaning for the exporter.
fn serve_flags(cli: &Cli) -> Result<(), SettingsError> {
    const NO_SCREEN: &str = "only in the monitor; serve draws no screen";
    let refused = [
        (
            "once",
            cli.once,
            "not with serve, which serves until stopped (`gpuwatch --once` prints one snapshot)",
        ),
        (
            "json",
            cli.json,
            "not with serve: its JSON is at /api/v1/snapshot (`gpuwatch --once --json` prints one)",
        ),
        ("theme", cli.theme.is_some(), NO_SCREEN),
        ("no-color", cli.no_color, NO_SCREEN),
        ("compact", cli.compact, NO_SCREEN),
        ("mouse", cli.mouse, NO_SCREEN),
        ("sort", cli.sort.is_some(), NO_SCREEN),
        ("no-bell", cli.no_bell, NO_SCREEN),
    ];
    match refused.into_iter().find(|(_, given, _)| *given) {
        Some((flag, _, why)) => Err(SettingsError::new(format!("--{flag}"), why.into(), None)),
        None => Ok(()),
    }
}
