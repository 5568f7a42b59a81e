//! Resolves flags, environment, the TOML config file and defaults into one typed `Settings`
//! (flag > env > file > default), checking every value and naming where a bad one came
//! from: `--flag`, `GPUWATCH_FLAG` or `FILE:LINE: key`. No I/O beyond reading the file; the
//! environment is injected so tests never see the real one.

mod alerts;
mod env;
mod file;
mod ignored;
mod listen;
mod outputs;
mod parse;
mod rows;
mod rows_serve;
mod serve;
mod sources;
pub mod table;
mod template;
mod thresholds;
mod values;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use env::{check_env_names, check_env_values, env_var, known_env_vars};
pub use file::LoadedFile;
pub use listen::ListenAddress;
pub use parse::{parse_duration, theme_by_name};
pub use serve::{DEFAULT_LISTEN, DEFAULT_PORT, DEFAULT_PROCESS_METRICS_LIMIT};
pub use sources::{DEFAULT_DEMO_GPUS, DEFAULT_SEED};
pub use template::{InitError, check_file, default_file_text, init_file, run_config_command};

use crate::cli::{Cli, SourceKind};
use crate::model::procs::{Column, SortDir, SortKey};
use crate::model::warnings::Thresholds;
use crate::present::ThemeName;
use crate::reading::MIN_INTERVAL;
use crate::reading::device_list::GpuSelector;
use crate::units::Bytes;
use values::Resolver;

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

/// `--record`: where every sample is written as NDJSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSettings {
    pub path: PathBuf,
    /// Past this size a new file starts, the old one kept as `PATH.1`.
    pub max_size: Option<Bytes>,
}

/// Other hosts to watch (`--remote`, `--hosts-file`), and whether this one shows too.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RemoteSettings {
    /// Checked `HOST:PORT`s.
    pub addresses: Vec<String>,
    /// Read when the source is built, not here: resolving does no I/O but the config file.
    pub hosts_file: Option<PathBuf>,
    pub with_local: bool,
}

impl RemoteSettings {
    /// Whether any remote host was asked for.
    pub fn any(&self) -> bool {
        !self.addresses.is_empty() || self.hosts_file.is_some()
    }
}

/// `--prometheus`: the server to read the fleet from, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusSettings {
    /// `http(s)://HOST:PORT[/prefix]`, checked.
    pub url: String,
    /// The selector's matchers without braces (`cluster="a"`), or empty.
    pub matchers: String,
    pub user: Option<String>,
    /// Read when the source is built (resolving reads no file but the config).
    pub password_file: Option<PathBuf>,
    pub bearer_token_file: Option<PathBuf>,
    /// `--prometheus-ca-file`: the CAs an https server's certificate must chain to (the
    /// system's when `None`); read when the source is built.
    pub ca_file: Option<PathBuf>,
}

/// `gpuwatch serve`: where to listen and which extra metric families to export.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSettings {
    pub listen: SocketAddr,
    /// Where the address came from (`--listen`, `GPUWATCH_LISTEN`, `FILE:LINE: serve.listen`,
    /// `--web.listen-address`, `FILE:LINE: serve.web_listen_address`), so a port in use is
    /// blamed on the place to change.
    pub listen_origin: String,
    /// `--web.listen-address` or `[serve] web_listen_address`, each; when any is given, these
    /// instead of `listen`.
    pub listen_addresses: Vec<ListenAddress>,
    /// `--web.telemetry-path`: where the metrics are served (`/metrics`).
    pub telemetry_path: String,
    pub dcgm_compat: bool,
    /// Per-PID series (opt-in); per-user and per-workload totals are always there.
    pub process_metrics: bool,
    /// At most this many processes get per-PID series (the largest VRAM holders).
    pub process_metrics_limit: usize,
    /// Leave user names and command lines out of the snapshot and the process series.
    pub redact: bool,
    /// `--hostname`, else `NODE_NAME`; `None` uses the host's own name.
    pub hostname: Option<String>,
    /// `--web.config.file`: TLS and basic auth, in the Prometheus exporter toolkit's format.
    pub web_config: Option<PathBuf>,
    pub limits: ConnectionLimits,
}

/// What one client may hold of the exporter (slow or idle clients must not starve scrapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections held at once (and no more than the descriptors allow); when full, the one
    /// idle or half-sent longest gives way to a new client.
    pub max_connections: usize,
    /// For the TLS handshake and each request's headers, counted from the connection's start
    /// or the previous response (so it also closes idle keep-alive connections).
    pub header_timeout: Duration,
    /// No byte moved either way for this long: the connection is closed.
    pub idle_timeout: Duration,
}

/// Everything the program needs to know, resolved and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub source: SourceKind,
    pub demo_gpus: usize,
    /// The demo fleet's story (`--demo-scenario`).
    pub demo_scenario: crate::source::sim::Scenario,
    pub seed: u64,
    /// `gpuwatch replay FILE`: play this recording instead of a live source.
    pub replay: Option<PathBuf>,
    pub record: Option<RecordSettings>,
    pub remote: RemoteSettings,
    pub prometheus: Option<PrometheusSettings>,
    pub serve: ServeSettings,
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
    /// Where `only` came from (`--only` or `GPUWATCH_ONLY`), for "matches no GPU".
    pub only_origin: String,
    pub nvml_lib: Option<PathBuf>,
    /// Where the AMD and Intel sources read sysfs, and every source /proc (`--sysfs-root`,
    /// `--proc-root`).
    pub drm_roots: crate::source::drm::Roots,
    /// The kubelet pod-resources socket (`--kubelet-socket`).
    pub kubelet_socket: PathBuf,
    pub thresholds: Thresholds,
    /// Where alerts go and when (`--alert-*`, `[alerts]`).
    pub alerts: crate::alert_settings::AlertSettings,
    /// Hidden testing aid (`--demo-speed`): the demo scenario runs this many times faster.
    pub demo_speed: f64,
    /// The config file actually read (`None` when there was none).
    pub config_path: Option<PathBuf>,
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
    // The settings table gives `config` a variable; the name is spelled out here because it is `'static`.
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

/// Reads and parses the config file; a missing file is fine unless it was named explicitly,
/// and so is a usual place that cannot be searched (`sudo -u` leaves `HOME` at root's home,
/// which another user cannot enter): that is "no config file", said once on stderr. A file
/// named explicitly that cannot be read is an error. Only a regular file up to
/// `MAX_TEXT_FILE` is read (`--config /dev/urandom` would otherwise read forever).
fn load(location: Option<ConfigLocation>) -> Result<Option<LoadedFile>, SettingsError> {
    use std::io::ErrorKind;
    let Some(ConfigLocation { path, named_by }) = location else {
        return Ok(None);
    };
    match crate::safe_file::read_text(&path, crate::safe_file::MAX_TEXT_FILE) {
        Ok(text) => LoadedFile::parse(&path, text).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound && named_by.is_none() => Ok(None),
        Err(e) if unsearchable(&e) && named_by.is_none() => {
            eprintln!(
                "gpuwatch: note: no config file read ({}: {e})",
                crate::text_safe::escape(&path.display().to_string())
            );
            Ok(None)
        }
        Err(e) => Err(SettingsError::new(
            named_by.map_or_else(|| path.display().to_string(), str::to_string),
            format!("cannot read {}: {e}", path.display()),
            None,
        )),
    }
}

/// A directory on the way that this user may not enter, or a file in place of one.
fn unsearchable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotADirectory
    )
}

impl Settings {
    /// Resolves flags, `env` (which also locates the config file and gives `NO_COLOR`) and
    /// the file. `stdout_is_tty` is whether output goes to a terminal (injected for tests).
    /// Unknown `GPUWATCH_*` names are refused separately, by `check_env_names`, since this
    /// looks variables up by name and never lists them.
    pub fn resolve(cli: &Cli, env: Env, stdout_is_tty: bool) -> Result<Self, SettingsError> {
        let file = load(config_location(cli.config.as_deref(), env))?;
        let r = Resolver::new(env, file.as_ref());
        let fc = r.file_config();
        let (interval, history) = timing(cli, &r)?;
        let (demo_gpus, seed) = sources::demo_fleet(cli, &r)?;
        let theme = r.theme(&cli.theme, &fc.theme)?;
        let no_color = r.switch(("no-color", cli.no_color), ("", &None))?
            || env("NO_COLOR").is_some_and(|v| !v.is_empty());
        let json = r.switch(("json", cli.json), ("", &None))?;
        let once = r.switch(("once", cli.once), ("", &None))?;
        let (sort, sort_dir) = r.sort(&cli.sort, &fc.sort)?;
        let (only, only_origin) = sources::only(cli, &r)?;
        let settings = Settings {
            source: sources::source_kind(cli, &r)?,
            demo_gpus,
            demo_scenario: sources::demo_scenario(cli, &r)?,
            seed,
            replay: sources::replay(cli),
            record: outputs::record(cli, &r)?,
            remote: sources::remote(cli, &r)?,
            prometheus: sources::prometheus(cli, &r)?,
            serve: serve::serve(cli, &r, env)?,
            interval,
            history,
            once: once || json || !stdout_is_tty,
            json,
            theme: if no_color { ThemeName::Mono } else { theme },
            compact: r.switch(("compact", cli.compact), ("compact", &fc.compact))?,
            readonly: r.switch(("readonly", cli.readonly), ("readonly", &fc.readonly))?,
            mouse: r.switch(("mouse", cli.mouse), ("mouse", &fc.mouse))?,
            columns: r.columns(&fc.columns)?,
            sort,
            sort_dir,
            only,
            only_origin,
            nvml_lib: sources::nvml_lib(cli, &r)?,
            drm_roots: sources::drm_roots(cli, &r)?,
            kubelet_socket: sources::kubelet_socket(cli, &r)?,
            thresholds: thresholds::thresholds(cli, &r)?,
            alerts: alerts::alerts(cli, &r)?,
            demo_speed: cli.demo_speed.unwrap_or(1.0).max(0.001),
            config_path: file.as_ref().map(|f| f.path.clone()),
            debug_panic_after: cli.debug_panic_after,
        };
        ignored::check(cli, &r, &settings)?;
        Ok(settings)
    }

    /// Samples each GPU's history keeps: the history window over the interval.
    pub fn history_len(&self) -> usize {
        (self.history.as_secs_f64() / self.interval.as_secs_f64())
            .ceil()
            .max(1.0) as usize
    }
}

/// `--interval` and `--history`, which must hold at least one interval.
fn timing(cli: &Cli, r: &Resolver) -> Result<(Duration, Duration), SettingsError> {
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
    // Bounded so a typo (`100000h`) is an error, not tens of GB allocated.
    let points = history.value.as_secs_f64() / interval.value.as_secs_f64();
    let max = crate::history::MAX_POINTS;
    if points > max as f64 {
        let longest = humantime::format_duration(Duration::from_secs(
            (interval.value.as_secs_f64() * max as f64) as u64,
        ));
        return Err(history.invalid(&format!(
            "is {points:.0} samples per GPU at this interval; at most {max} ({longest} at this interval)"
        )));
    }
    Ok((interval.value, history.value))
}

#[cfg(test)]
mod tests;
