//! Resolves flags, environment, the TOML config file and defaults into one typed `Settings`
//! (flag > env > file > default), checking every value and naming where a bad one came
//! from: `--flag`, `GPUWATCH_FLAG` or `FILE:LINE: key`. No I/O beyond reading the file; the
//! environment is injected so tests never see the real one.

mod file;
mod template;
mod values;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use file::LoadedFile;
pub use template::{InitError, check_file, default_file_text, init_file, run_config_command};
pub use values::{env_var, parse_duration, theme_by_name};

use crate::cli::{Cli, PickArgs, PickFormat, SourceKind};
use crate::model::procs::{Column, SortDir, SortKey};
use crate::model::warnings::Thresholds;
use crate::pick::{self, Criteria};
use crate::select::{GpuSelector, parse_gpu_list};
use crate::source::sim::MAX_GPUS;
use crate::ui::theme::ThemeName;
use values::Resolver;

pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
pub const DEFAULT_HISTORY: Duration = Duration::from_secs(5 * 60);
pub const DEFAULT_SORT: SortKey = SortKey::Vram;

/// One line: `ORIGIN: WHY (got VALUE)`, where ORIGIN is `--flag`, `GPUWATCH_FLAG` or
/// `FILE:LINE: key`.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsError {
    origin: String,
    why: String,
    /// The value as given, quoted as it was written; `None` when `why` already shows it.
    got: Option<String>,
}

impl SettingsError {
    pub(crate) fn new(origin: String, why: String, got: Option<String>) -> Self {
        SettingsError { origin, why, got }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.why)?;
        match &self.got {
            Some(got) => write!(f, " (got {got})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for SettingsError {}

/// Looks up an environment variable; `process_env` in the binary, a map in tests.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The real environment (variables that are not UTF-8 count as unset).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What `gpuwatch pick` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct PickRequest {
    pub criteria: Criteria,
    pub format: pick::Format,
}

/// Everything the program needs to know, resolved and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub source: SourceKind,
    pub demo_gpus: usize,
    pub seed: u64,
    pub interval: Duration,
    pub history: Duration,
    pub once: bool,
    pub json: bool,
    /// Mono whenever `NO_COLOR` is set or `--no-color` is given, whatever else says.
    pub theme: ThemeName,
    pub compact: bool,
    pub readonly: bool,
    pub mouse: bool,
    /// Process-table columns shown, in order (never empty, no repeats).
    pub columns: Vec<Column>,
    pub sort: SortKey,
    pub sort_dir: SortDir,
    /// `--only`: the GPUs to show; `None` shows all.
    pub only: Option<Vec<GpuSelector>>,
    pub nvml_lib: Option<PathBuf>,
    pub thresholds: Thresholds,
    /// The config file actually read (`None` when there was none).
    pub config_path: Option<PathBuf>,
    /// `gpuwatch pick`; `None` for the monitor and `--once`.
    pub pick: Option<PickRequest>,
    /// Hidden testing aid (`--debug-panic-after`).
    pub debug_panic_after: Option<u64>,
}

/// Where the config file is, and what named it when that was explicit (then it must exist).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigLocation {
    pub path: PathBuf,
    /// `--config` or `GPUWATCH_CONFIG`; `None` for the usual place.
    pub named_by: Option<&'static str>,
}

/// `--config`, else `GPUWATCH_CONFIG`, else `$XDG_CONFIG_HOME/gpuwatch/config.toml` (when
/// absolute, as the XDG spec asks), else `$HOME/.config/gpuwatch/config.toml`.
pub fn config_location(flag: Option<&Path>, env: Env) -> Option<ConfigLocation> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(path) = flag {
        return Some(ConfigLocation {
            path: path.to_path_buf(),
            named_by: Some("--config"),
        });
    }
    if let Some(path) = set("GPUWATCH_CONFIG") {
        return Some(ConfigLocation {
            path: path.into(),
            named_by: Some("GPUWATCH_CONFIG"),
        });
    }
    let base = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|home| Path::new(&home).join(".config")))?;
    Some(ConfigLocation {
        path: base.join("gpuwatch").join("config.toml"),
        named_by: None,
    })
}

/// Reads and parses the config file; a missing file is fine unless it was named explicitly.
fn load(location: Option<ConfigLocation>) -> Result<Option<LoadedFile>, SettingsError> {
    let Some(ConfigLocation { path, named_by }) = location else {
        return Ok(None);
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => LoadedFile::parse(&path, text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && named_by.is_none() => Ok(None),
        Err(e) => Err(SettingsError::new(
            named_by.map_or_else(|| path.display().to_string(), str::to_string),
            format!("cannot read {}: {e}", path.display()),
            None,
        )),
    }
}

impl Settings {
    /// Resolves flags, `env` (which also locates the config file and gives `NO_COLOR`) and
    /// the file. `stdout_is_tty` is whether output goes to a terminal (injected for tests).
    pub fn resolve(cli: &Cli, env: Env, stdout_is_tty: bool) -> Result<Self, SettingsError> {
        let file = load(config_location(cli.config.as_deref(), env))?;
        let r = Resolver::new(env, file.as_ref());
        let fc = r.file_config();

        let interval = r.duration(
            ("interval", &cli.interval),
            ("interval", &fc.interval),
            DEFAULT_INTERVAL,
        )?;
        if interval.value < MIN_INTERVAL {
            return Err(interval.invalid("must be at least 100ms"));
        }
        let history = r.duration(
            ("history", &cli.history),
            ("history", &fc.history),
            DEFAULT_HISTORY,
        )?;
        if history.value < interval.value {
            return Err(history.invalid("must be at least one interval"));
        }
        if !(1..=MAX_GPUS).contains(&cli.demo_gpus) {
            return Err(flag_error(
                "demo-gpus",
                cli.demo_gpus,
                "must be between 1 and 64",
            ));
        }
        let theme = r.theme(&cli.theme, &fc.theme)?;
        let no_color = cli.no_color || env("NO_COLOR").is_some_and(|v| !v.is_empty());
        let (sort, sort_dir) = r.sort(&cli.sort, &fc.sort)?;
        let only = r
            .text("only", &cli.only)?
            .map(|got| parse_gpu_list(&got.value).map_err(|why| got.invalid_because(why)));
        Ok(Settings {
            source: if cli.demo {
                SourceKind::Demo
            } else {
                cli.source
            },
            demo_gpus: cli.demo_gpus,
            seed: cli.seed,
            interval: interval.value,
            history: history.value,
            once: cli.once || cli.json || !stdout_is_tty,
            json: cli.json,
            theme: if no_color { ThemeName::Mono } else { theme },
            compact: r.switch(("compact", cli.compact), ("compact", &fc.compact))?,
            readonly: r.switch(("readonly", cli.readonly), ("readonly", &fc.readonly))?,
            mouse: r.switch(("mouse", cli.mouse), ("mouse", &fc.mouse))?,
            columns: r.columns(&fc.columns)?,
            sort,
            sort_dir,
            only: only.transpose()?,
            nvml_lib: cli.nvml_lib.clone(),
            thresholds: thresholds(cli, &r)?,
            config_path: file.as_ref().map(|f| f.path.clone()),
            pick: match &cli.command {
                Some(crate::cli::Command::Pick(args)) => Some(pick_request(args)?),
                _ => None,
            },
            debug_panic_after: cli.debug_panic_after,
        })
    }

    /// Samples each GPU's history keeps: the history window over the interval.
    pub fn history_len(&self) -> usize {
        (self.history.as_secs_f64() / self.interval.as_secs_f64())
            .ceil()
            .max(1.0) as usize
    }
}

fn thresholds(cli: &Cli, r: &Resolver) -> Result<Thresholds, SettingsError> {
    let d = Thresholds::default();
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
    Ok(Thresholds {
        oom_warn_percent: oom_warn.value,
        oom_critical_percent: oom_critical.value,
        oom_time_to_full: r
            .duration(
                ("oom-time-to-full", &cli.oom_time_to_full),
                ("thresholds.oom_time_to_full", &t.oom_time_to_full),
                d.oom_time_to_full,
            )?
            .value,
        temp_warn: temp_warn.value,
        temp_critical: temp_critical.value,
        temp_hold: r
            .duration(
                ("temp-hold", &cli.temp_hold),
                ("thresholds.temp_hold", &t.temp_hold),
                d.temp_hold,
            )?
            .value,
        idle_min_vram: r
            .size(
                ("idle-min-vram", &cli.idle_min_vram),
                ("thresholds.idle_min_vram", &t.idle_min_vram),
                d.idle_min_vram,
            )?
            .value,
        idle_after: r
            .duration(
                ("idle-after", &cli.idle_after),
                ("thresholds.idle_after", &t.idle_after),
                d.idle_after,
            )?
            .value,
        stale_min_vram: r
            .size(
                ("stale-min-vram", &cli.stale_min_vram),
                ("thresholds.stale_min_vram", &t.stale_min_vram),
                d.stale_min_vram,
            )?
            .value,
        stale_after: r
            .duration(
                ("stale-after", &cli.stale_after),
                ("thresholds.stale_after", &t.stale_after),
                d.stale_after,
            )?
            .value,
    })
}

fn pick_request(args: &PickArgs) -> Result<PickRequest, SettingsError> {
    if args.count == 0 {
        return Err(flag_error("count", args.count, "must be at least 1"));
    }
    if args.max_util > 100 {
        return Err(flag_error(
            "max-util",
            args.max_util,
            "must be a percentage between 0 and 100",
        ));
    }
    let min_free = match &args.min_free {
        Some(text) => Some(
            pick::parse_size(text)
                .map_err(|why| SettingsError::new("--min-free".into(), why, None))?,
        ),
        None => None,
    };
    Ok(PickRequest {
        criteria: Criteria {
            count: args.count,
            min_free,
            max_util: args.max_util,
        },
        format: match args.format {
            PickFormat::Indices => pick::Format::Indices,
            PickFormat::Uuids => pick::Format::Uuids,
            PickFormat::Env => pick::Format::Env,
        },
    })
}

/// An error about a flag that only the command line can give.
fn flag_error(flag: &str, value: impl fmt::Display, why: &str) -> SettingsError {
    SettingsError::new(
        format!("--{flag}"),
        why.into(),
        Some(format!("{:?}", value.to_string())),
    )
}

#[cfg(test)]
mod tests;
