//! Resolves raw flags into one typed `Settings`, checking every value and naming the flag
//! in each error. (The TOML config file joins here later: flag > env > file > default.)

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{Cli, SourceKind};
use crate::source::sim::MAX_GPUS;
use crate::state::warnings::Thresholds;

pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SettingsError {
    #[error("--{flag}: {why} (got {value:?})")]
    Invalid {
        flag: &'static str,
        value: String,
        why: String,
    },
}

/// Everything the program needs to know, resolved and validated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub source: SourceKind,
    pub demo_gpus: usize,
    pub seed: u64,
    pub interval: Duration,
    pub history: Duration,
    pub once: bool,
    pub json: bool,
    pub color: bool,
    pub compact: bool,
    pub nvml_lib: Option<PathBuf>,
    pub thresholds: Thresholds,
    /// Hidden testing aid (`--debug-panic-after`).
    pub debug_panic_after: Option<u64>,
}

impl Settings {
    /// Resolves flags; `no_color_env` is the value of `NO_COLOR` and `stdout_is_tty`
    /// whether output goes to a terminal (both injected so tests need neither).
    pub fn resolve(
        cli: &Cli,
        no_color_env: Option<&str>,
        stdout_is_tty: bool,
    ) -> Result<Self, SettingsError> {
        let interval = duration("interval", &cli.interval)?;
        if interval < MIN_INTERVAL {
            return Err(invalid("interval", &cli.interval, "must be at least 100ms"));
        }
        let history = duration("history", &cli.history)?;
        if history < interval {
            return Err(invalid(
                "history",
                &cli.history,
                "must be at least one interval",
            ));
        }
        if !(1..=MAX_GPUS).contains(&cli.demo_gpus) {
            return Err(invalid(
                "demo-gpus",
                &cli.demo_gpus.to_string(),
                "must be between 1 and 64",
            ));
        }
        let percent = |flag, v: f64| {
            if (0.0..=100.0).contains(&v) {
                Ok(v)
            } else {
                Err(invalid(
                    flag,
                    &v.to_string(),
                    "must be a percentage between 0 and 100",
                ))
            }
        };
        let oom_warn = percent("oom-warn", cli.oom_warn)?;
        let oom_critical = percent("oom-critical", cli.oom_critical)?;
        if oom_critical < oom_warn {
            return Err(invalid(
                "oom-critical",
                &cli.oom_critical.to_string(),
                "must not be below --oom-warn",
            ));
        }
        if cli.temp_critical < cli.temp_warn {
            return Err(invalid(
                "temp-critical",
                &cli.temp_critical.to_string(),
                "must not be below --temp-warn",
            ));
        }
        let source = if cli.demo {
            SourceKind::Demo
        } else {
            cli.source
        };
        Ok(Settings {
            source,
            demo_gpus: cli.demo_gpus,
            seed: cli.seed,
            interval,
            history,
            once: cli.once || cli.json || !stdout_is_tty,
            json: cli.json,
            color: !cli.no_color && no_color_env.is_none_or(str::is_empty),
            compact: cli.compact,
            nvml_lib: cli.nvml_lib.clone(),
            debug_panic_after: cli.debug_panic_after,
            thresholds: Thresholds {
                oom_warn_percent: oom_warn,
                oom_critical_percent: oom_critical,
                oom_time_to_full: duration("oom-time-to-full", &cli.oom_time_to_full)?,
                temp_warn: cli.temp_warn,
                temp_critical: cli.temp_critical,
                temp_hold: duration("temp-hold", &cli.temp_hold)?,
                ..Thresholds::default()
            },
        })
    }

    /// Samples each GPU's history keeps: the history window over the interval.
    pub fn history_len(&self) -> usize {
        (self.history.as_secs_f64() / self.interval.as_secs_f64())
            .ceil()
            .max(1.0) as usize
    }
}

fn invalid(flag: &'static str, value: &str, why: &str) -> SettingsError {
    SettingsError::Invalid {
        flag,
        value: value.to_string(),
        why: why.to_string(),
    }
}

/// `500ms`, `2s`, `1m`, or a bare number of seconds like `watch -n` takes.
fn duration(flag: &'static str, text: &str) -> Result<Duration, SettingsError> {
    let trimmed = text.trim();
    if let Ok(secs) = trimmed.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Ok(Duration::from_secs_f64(secs));
    }
    humantime::parse_duration(trimmed).map_err(|e| {
        invalid(
            flag,
            text,
            &format!("not a duration like 500ms, 2s or 5m: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn resolve(args: &[&str]) -> Result<Settings, SettingsError> {
        let mut argv = vec!["gpuwatch"];
        argv.extend_from_slice(args);
        Settings::resolve(&Cli::parse_from(argv), None, true)
    }

    #[test]
    fn defaults() {
        let s = resolve(&[]).unwrap();
        assert_eq!(s.interval, Duration::from_secs(1));
        assert_eq!(s.history_len(), 300);
        assert_eq!(s.source, SourceKind::Nvml);
        assert!(s.color && !s.once);
        assert_eq!(s.thresholds, Thresholds::default());
    }

    #[test]
    fn intervals() {
        assert_eq!(
            resolve(&["--interval", "500ms"]).unwrap().interval,
            Duration::from_millis(500)
        );
        assert_eq!(
            resolve(&["--interval", "2s"]).unwrap().interval,
            Duration::from_secs(2)
        );
        assert_eq!(
            resolve(&["--interval", "2"]).unwrap().interval,
            Duration::from_secs(2)
        );
        let err = resolve(&["--interval", "50ms"]).unwrap_err().to_string();
        assert_eq!(err, "--interval: must be at least 100ms (got \"50ms\")");
        let err = resolve(&["--interval", "soon"]).unwrap_err().to_string();
        assert!(err.starts_with("--interval: not a duration"), "{err}");
    }

    #[test]
    fn history_len_follows_interval() {
        let s = resolve(&["--interval", "500ms", "--history", "1m"]).unwrap();
        assert_eq!(s.history_len(), 120);
    }

    #[test]
    fn bad_values_name_their_flag() {
        for (args, flag) in [
            (&["--demo-gpus", "0"][..], "--demo-gpus"),
            (&["--demo-gpus", "65"][..], "--demo-gpus"),
            (&["--oom-warn", "120"][..], "--oom-warn"),
            (
                &["--oom-warn", "95", "--oom-critical", "90"][..],
                "--oom-critical",
            ),
            (&["--temp-warn", "95"][..], "--temp-critical"),
            (&["--history", "10ms"][..], "--history"),
        ] {
            let err = resolve(args).unwrap_err().to_string();
            assert!(err.starts_with(flag), "{args:?}: {err}");
        }
    }

    #[test]
    fn color_and_once_resolution() {
        let cli = Cli::parse_from(["gpuwatch"]);
        assert!(!Settings::resolve(&cli, Some("1"), true).unwrap().color);
        assert!(
            Settings::resolve(&cli, Some(""), true).unwrap().color,
            "empty NO_COLOR is unset"
        );
        assert!(
            Settings::resolve(&cli, None, false).unwrap().once,
            "not a TTY implies --once"
        );
        assert!(!resolve(&["--no-color"]).unwrap().color);
        assert_eq!(resolve(&["--demo"]).unwrap().source, SourceKind::Demo);
        assert!(resolve(&["--json"]).unwrap().once);
    }
}
