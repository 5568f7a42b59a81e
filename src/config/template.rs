//! `gpuwatch config init` and `gpuwatch config check`: the commented default file (written
//! from the real defaults, so it cannot drift from them), writing it without clobbering,
//! and checking a file exactly as a normal start would read it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::parse::{source_config_name, theme_config_name};
use super::{
    DEFAULT_HISTORY, DEFAULT_INTERVAL, DEFAULT_LISTEN, DEFAULT_SORT, Env, Settings, SettingsError,
};
use crate::cli::{Cli, ConfigCommand, SourceKind};
use crate::model::procs::{Column, SortDir};
use crate::model::warnings::Thresholds;
use crate::ui::theme::ThemeName;
use crate::units::Bytes;

/// The file `config init` writes: every key, set to its default, with what it means.
/// One piece per part of the file, in file order, separated by a blank line.
pub fn default_file_text() -> String {
    [
        top_level_keys(),
        sort_and_columns_tables(),
        thresholds_table(),
        record_remote_serve_tables(),
        alerts_table(),
    ]
    .join("\n")
}

/// How a duration default is written: `"1s"`, `"5m"`, quoted as TOML wants.
fn dur(d: Duration) -> String {
    format!("\"{}\"", humantime::format_duration(d))
}

/// The header comment and the keys outside any table.
fn top_level_keys() -> String {
    format!(
        r#"# gpuwatch settings. Every value below is the default; delete a line to go back to it.
# A flag (see gpuwatch --help) beats the environment (GPUWATCH_<FLAG>), which beats this file.
# Durations: "500ms", "2s", "5m", "1h", or a number of seconds.
# Sizes: "1GiB", "512MiB", "4096B": binary units ("G" is GiB); "GB" and bare numbers are refused.

# Where readings come from (--source): "nvml" (NVIDIA GPUs), "amd" (amdgpu), "intel"
# (i915/xe), "auto" (every vendor present, else the simulated demo fleet) or "demo".
source = "{source}"
# The demo fleet's story (--demo-scenario): "default" (an NVIDIA server shared by a few
# users) or "mixed" (the same plus an H100 in MIG mode, an AMD and an Intel GPU).
demo_scenario = "{scenario}"
# Time between samples, at least 100ms (--interval).
interval = {interval}
# How far back sparklines and VRAM trends reach (--history).
history = {history}
# Start with one line per GPU instead of panels (--compact).
compact = false
# Never send signals to processes (--readonly).
readonly = false
# Let the mouse select rows and scroll; off keeps text selection in tmux working (--mouse).
mouse = false
# "dark" or "light" for the terminal's background, or "mono" for no colour (--theme).
# NO_COLOR or --no-color always means mono.
theme = "{theme}"
# Only these GPUs, by index or UUID, comma-separated (--only).
# only = "0,2"
# The libnvidia-ml.so.1 to load instead of the system's (--nvml-lib).
# nvml_lib = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
# The kubelet's pod-resources socket, asked which pod holds each GPU (--kubelet-socket);
# when set it must be a socket.
# kubelet_socket = "{kubelet}"
"#,
        kubelet = crate::procinfo::kubelet::DEFAULT_SOCKET,
        source = source_config_name(SourceKind::Nvml),
        scenario = crate::source::sim::Scenario::Default.name(),
        interval = dur(DEFAULT_INTERVAL),
        history = dur(DEFAULT_HISTORY),
        theme = theme_config_name(ThemeName::Dark),
    )
}

/// `[sort]` and `[columns]`, named from the real column vocabulary.
fn sort_and_columns_tables() -> String {
    let columns: Vec<_> = Column::ALL
        .iter()
        .map(|c| format!("\"{}\"", c.config_name()))
        .collect();
    // Only columns that can be sorted by (not `type`).
    let column_names: Vec<_> = Column::ALL
        .iter()
        .filter(|c| c.sort_key().is_some())
        .map(|c| c.config_name())
        .collect();
    format!(
        r#"[sort]
# Column the process table starts sorted by (--sort): {column_list}.
column = "{sort}"
# Largest first. A --sort flag uses its column's own direction instead.
descending = {descending}

[columns]
# Process-table columns shown, in this order; at least one.
visible = [{columns}]
"#,
        column_list = column_names.join(", "),
        sort = DEFAULT_SORT.config_name(),
        descending = DEFAULT_SORT.default_direction() == SortDir::Descending,
        columns = columns.join(", "),
    )
}

/// `[thresholds]`, from `Thresholds::default()`.
fn thresholds_table() -> String {
    let t = Thresholds::default();
    format!(
        r#"[thresholds]
# VRAM use (%) that warns (--oom-warn) and that is critical (--oom-critical).
oom_warn_percent = {oom_warn}
oom_critical_percent = {oom_critical}
# Also warn when VRAM would be full this soon at its recent growth rate (--oom-time-to-full).
oom_time_to_full = {ttf}
# °C that warns (--temp-warn), and that is critical once held for temp_hold (--temp-critical,
# --temp-hold); a GPU's own lower slowdown temperature is used instead of temp_critical.
temp_warn = {temp_warn}
temp_critical = {temp_critical}
temp_hold = {temp_hold}
# A process holding at least idle_min_vram on a GPU idle for idle_after is reported as
# holding it idle (--idle-min-vram, --idle-after).
idle_min_vram = {idle_min}
idle_after = {idle_after}
# VRAM in use with no process listed, at least stale_min_vram for stale_after, is reported as
# a stale allocation (--stale-min-vram, --stale-after).
stale_min_vram = {stale_min}
stale_after = {stale_after}
"#,
        oom_warn = t.oom_warn_percent,
        oom_critical = t.oom_critical_percent,
        ttf = dur(t.oom_time_to_full),
        temp_warn = t.temp_warn,
        temp_critical = t.temp_critical,
        temp_hold = dur(t.temp_hold),
        idle_min = size(t.idle_min_vram),
        idle_after = dur(t.idle_after),
        stale_min = size(t.stale_min_vram),
        stale_after = dur(t.stale_after),
    )
}

/// `[record]`, `[remote]`, `[serve]` and `[prometheus]`: the other modes' settings, mostly off by default.
fn record_remote_serve_tables() -> String {
    format!(
        r#"[record]
# Write every sample as NDJSON to this file, in any mode (--record); no recording by default.
# path = "gpuwatch.ndjson"
# Past this size start a new file, keeping the previous one as PATH.1 (--record-max-size);
# no limit by default.
# max_size = "100MiB"

[remote]
# Other hosts running `gpuwatch serve` to watch, as HOST:PORT (--remote).
hosts = []
# A file listing more hosts, one HOST:PORT a line (--hosts-file); none by default.
# hosts_file = "/etc/gpuwatch/hosts"
# With remote hosts, show this machine's GPUs too (--with-local).
with_local = false

[serve]
# gpuwatch serve: the IP:PORT to listen on; 0.0.0.0 exposes it on every interface (--listen).
listen = "{listen}"
# Also export dcgm-exporter's DCGM_FI_DEV_* names for existing dashboards (--dcgm-compat).
dcgm_compat = false
# Also export per-PID series labelled by PID, user and command (--process-metrics); per-user
# and per-workload totals are always exported.
process_metrics = false
# With process_metrics: at most this many processes get series, the largest VRAM holders
# (--process-metrics-limit).
process_metrics_limit = {limit}
# Leave user names and command lines out of the snapshot and the series (--redact).
redact = false
# The host name on the metrics and the snapshot (--hostname); by default $NODE_NAME when set
# (a Kubernetes DaemonSet), else this host's name.
# hostname = "gpu-node-1"
# TLS and basic auth, in the Prometheus exporter toolkit's web config format
# (--web.config.file); plain HTTP without a password by default.
# web_config_file = "/etc/gpuwatch/web.yml"
# Connections served at once; more wait to be accepted (--max-connections).
max_connections = {max_connections}
# Time for the TLS handshake and each request's headers, also ending idle keep-alive
# connections (--http-header-timeout).
header_timeout = "{header}"
# A connection on which nothing moves either way for this long is closed (--http-idle-timeout).
idle_timeout = "{idle}"

[prometheus]
# Draw the fleet a Prometheus server scrapes (gpuwatch's or dcgm-exporter's series), as
# http://HOST:PORT (--prometheus); off by default.
# url = "http://prometheus:9090"
# Only series matching this selector (--selector).
# selector = '{{cluster="a"}}'
# Basic auth: the user, and a file holding the password (--prometheus-user,
# --password-file).
# user = "gpuwatch"
# password_file = "/etc/gpuwatch/prometheus-password"
# Or a file holding a bearer token (--bearer-token-file).
# bearer_token_file = "/var/run/secrets/prometheus-token"
"#,
        listen = DEFAULT_LISTEN,
        limit = super::serve::DEFAULT_PROCESS_METRICS_LIMIT,
        max_connections = super::serve::DEFAULT_MAX_CONNECTIONS,
        header = humantime::format_duration(super::serve::DEFAULT_HEADER_TIMEOUT),
        idle = humantime::format_duration(super::serve::DEFAULT_IDLE_TIMEOUT),
    )
}

/// `[alerts]`: sinks off, the rules' defaults, and one example kind table commented out.
fn alerts_table() -> String {
    use crate::alerts::rules;
    format!(
        r#"[alerts]
# POST each alert to these URLs (--alert-webhook); http://, or https:// when gpuwatch is built
# with the tls feature. Shown redacted in every message.
webhooks = []
# The webhook body: "json" (gpuwatch's document), "slack" or "discord" (--alert-format).
format = "json"
# A shell command run for each alert, the facts in GPUWATCH_ALERT_* variables and the JSON on
# stdin (--alert-command); none by default.
# command = "logger -t gpuwatch \"$GPUWATCH_ALERT_MESSAGE\""
# Ring the terminal bell in the monitor on a new critical alert (--no-bell turns it off).
bell = true
# How long a warning must hold before it alerts (--alert-for); critical ones: for_critical.
for_warning = {for_warning}
for_critical = {for_critical}
# Send a firing alert again this often while it holds; "0s" never (--alert-repeat).
repeat = {repeat}
# A fired alert is resolved only once its warning has stayed clear this long; one that comes
# back sooner is the same alert, still firing (--alert-resolve-after; "0s" at once).
resolve_after = {resolve_after}
# Per warning kind ({kinds}): from which severity it goes out ("warning",
# "critical" or "off"), and its own `for` and `repeat`. By default critical of every kind
# goes out, and {warning_kinds} as warnings too.
# [alerts.kinds.overheating]
# severity = "critical"
# for = "30s"
# repeat = "1h"
"#,
        for_warning = dur(rules::DEFAULT_FOR_WARNING),
        for_critical = dur(rules::DEFAULT_FOR_CRITICAL),
        repeat = dur(rules::DEFAULT_REPEAT),
        resolve_after = dur(rules::DEFAULT_RESOLVE_AFTER),
        kinds = crate::wire::WarningCode::names(", "),
        warning_kinds = rules::WARNING_KINDS.map(|k| k.name()).join(" and "),
    )
}

/// `"1GiB"`, `"512MiB"`: the largest binary unit that divides the size exactly.
fn size(b: Bytes) -> String {
    for (unit, scale) in [
        ("GiB", Bytes::GIB),
        ("MiB", Bytes::MIB),
        ("KiB", Bytes::KIB),
    ] {
        if b.0.is_multiple_of(scale) {
            return format!("\"{}{unit}\"", b.0 / scale);
        }
    }
    format!("\"{}B\"", b.0)
}

/// Why `config init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{0}: already exists; use --force to replace it")]
    Exists(PathBuf),
    #[error("cannot write {path}: {err}")]
    Write { path: PathBuf, err: std::io::Error },
}

/// Writes the default file to `path`, making its folders; refuses to replace a file
/// unless `force`.
pub fn init_file(path: &Path, force: bool) -> Result<(), InitError> {
    let write_err = |err| InitError::Write {
        path: path.to_path_buf(),
        err,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(write_err)?;
    }
    let mut options = std::fs::OpenOptions::new();
    // create_new checks and creates in one step, so a file that appears meanwhile is kept.
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => InitError::Exists(path.to_path_buf()),
        _ => write_err(e),
    })?;
    file.write_all(default_file_text().as_bytes())
        .map_err(write_err)
}

/// Resolves `path` alone, as a start with no flags and no environment would: the file's
/// own values against the defaults.
pub fn check_file(path: &Path) -> Result<Settings, SettingsError> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(SettingsError::new(
            path.display().to_string(),
            format!("cannot read: {e}"),
            None,
        ));
    }
    let mut cli = <Cli as clap::Parser>::parse_from(["gpuwatch"]);
    cli.config = Some(path.to_path_buf());
    Settings::resolve(&cli, &|_| None, true)
}

/// The outcome of `gpuwatch config …`: a line for stdout, or a line for stderr and an exit code.
pub fn run_config_command(
    action: &ConfigCommand,
    cli: &Cli,
    env: Env,
) -> Result<String, (String, u8)> {
    let (ConfigCommand::Init { path, .. } | ConfigCommand::Check { path }) = action;
    let target = path
        .clone()
        .or_else(|| super::config_location(cli.config.as_deref(), env).map(|l| l.path))
        .ok_or_else(|| {
            (
                "no config path: give one, or set HOME or XDG_CONFIG_HOME".to_string(),
                2,
            )
        })?;
    match action {
        ConfigCommand::Init { force, .. } => match init_file(&target, *force) {
            Ok(()) => Ok(target.display().to_string()),
            Err(e @ InitError::Exists(_)) => Err((e.to_string(), 2)),
            Err(e) => Err((e.to_string(), 1)),
        },
        ConfigCommand::Check { .. } => match check_file(&target) {
            Ok(_) => Ok(format!("ok: {}", target.display())),
            Err(e) => Err((e.to_string(), 2)),
        },
    }
}
