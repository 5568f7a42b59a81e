//! The rows of the settings table (`table.rs` says what a row is; the exporter's and alerts'
//! rows are in `rows_serve.rs`). Add a setting here, give it its clap field in `cli.rs` and
//! its resolver; the env list, `config init` and
//! docs/settings.md follow from the row. Defaults come from the constants the resolvers use.

use std::time::Duration;

use super::parse::{source_config_name, theme_config_name};
use super::table::{Setting, Value};
use super::{DEFAULT_HISTORY, DEFAULT_INTERVAL, DEFAULT_SORT};
use crate::cli::SourceKind;
use crate::model::procs::{Column, SortDir};
use crate::model::warnings::Thresholds;
use crate::present::ThemeName;
use crate::units::Bytes;

use Value::{Default, Switch, Unset};

/// How a duration default is written: `"1s"`, `"5m"`, quoted as TOML wants.
pub(super) fn dur(d: Duration) -> String {
    format!("\"{}\"", humantime::format_duration(d))
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

pub(super) fn quoted(text: &str) -> String {
    format!("{text:?}")
}

pub(super) const fn none(example: &'static str) -> Value {
    Unset {
        shown: "none",
        example,
    }
}

/// The monitor's, the sources' and the warnings' settings, in `config init` file order.
pub(super) const LOCAL: &[Setting] = &[
    Setting::new(
        "source",
        "source",
        Default(|| quoted(source_config_name(SourceKind::Nvml))),
        "Where readings come from: \"nvml\" (NVIDIA GPUs), \"amd\" (amdgpu), \"intel\" (i915/xe), \
         \"auto\" (every vendor present, else the simulated demo fleet) or \"demo\"",
    ),
    Setting::new(
        "demo-scenario",
        "demo_scenario",
        Default(|| quoted(crate::source::sim::Scenario::Default.name())),
        "The demo fleet's story: \"default\" (an NVIDIA server shared by a few users) or \"mixed\" \
         (the same plus an H100 in MIG mode, an AMD and an Intel GPU)",
    ),
    Setting::new(
        "interval",
        "interval",
        Default(|| dur(DEFAULT_INTERVAL)),
        "Time between samples, at least 100ms",
    ),
    Setting::new(
        "history",
        "history",
        Default(|| dur(DEFAULT_HISTORY)),
        "How far back sparklines and VRAM trends reach",
    ),
    Setting::new(
        "compact",
        "compact",
        Switch(false),
        "Start with one line per GPU instead of panels",
    ),
    Setting::new(
        "readonly",
        "readonly",
        Switch(false),
        "Never send signals to processes",
    ),
    Setting::new(
        "mouse",
        "mouse",
        Switch(false),
        "Let the mouse select rows and scroll; off keeps text selection in tmux working",
    ),
    Setting::new(
        "theme",
        "theme",
        Default(|| quoted(theme_config_name(ThemeName::Dark))),
        "\"dark\" or \"light\" for the terminal's background, or \"mono\" for no colour; NO_COLOR \
         or --no-color always means mono",
    ),
    Setting::new(
        "only",
        "only",
        Unset {
            shown: "all",
            example: "0,2",
        },
        "Only these GPUs, by index or UUID, comma-separated; an entry that matches no GPU is an error",
    ),
    Setting::new(
        "nvml-lib",
        "nvml_lib",
        Unset {
            shown: "the system's",
            example: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        },
        "The libnvidia-ml.so.1 to load instead of the system's",
    ),
    Setting::new(
        "kubelet-socket",
        "kubelet_socket",
        Unset {
            shown: crate::procinfo::kubelet::DEFAULT_SOCKET,
            example: crate::procinfo::kubelet::DEFAULT_SOCKET,
        },
        "The kubelet's pod-resources socket, asked which pod holds each GPU; nothing is asked \
         when the default does not exist, and one that is set must be a socket",
    ),
    Setting::new(
        "sort",
        "sort.column",
        Default(|| quoted(DEFAULT_SORT.config_name())),
        "Column the process table starts sorted by: any column but type, e.g. \"gpu_util\"",
    ),
    Setting::file_only(
        "sort.descending",
        Default(|| (DEFAULT_SORT.default_direction() == SortDir::Descending).to_string()),
        "Largest first; a --sort flag uses its column's own direction instead",
    ),
    Setting::file_only(
        "columns.visible",
        Default(|| {
            let names: Vec<_> = Column::ALL
                .iter()
                .map(|c| quoted(c.config_name()))
                .collect();
            format!("[{}]", names.join(", "))
        }),
        "Process-table columns shown, in this order; at least one",
    ),
    Setting::new(
        "oom-warn",
        "thresholds.oom_warn_percent",
        Default(|| Thresholds::default().oom_warn_percent.to_string()),
        "VRAM use (%) that warns",
    ),
    Setting::new(
        "oom-critical",
        "thresholds.oom_critical_percent",
        Default(|| Thresholds::default().oom_critical_percent.to_string()),
        "VRAM use (%) that is critical",
    ),
    Setting::new(
        "oom-time-to-full",
        "thresholds.oom_time_to_full",
        Default(|| dur(Thresholds::default().oom_time_to_full)),
        "Also warn when VRAM would be full this soon at its recent growth rate",
    ),
    Setting::new(
        "temp-warn",
        "thresholds.temp_warn",
        Default(|| Thresholds::default().temp_warn.to_string()),
        "°C that warns",
    ),
    Setting::new(
        "temp-critical",
        "thresholds.temp_critical",
        Default(|| Thresholds::default().temp_critical.to_string()),
        "°C that is critical once held for temp_hold; a GPU's own lower slowdown temperature \
         is used instead",
    ),
    Setting::new(
        "temp-hold",
        "thresholds.temp_hold",
        Default(|| dur(Thresholds::default().temp_hold)),
        "How long the critical temperature must hold before it is critical",
    ),
    Setting::new(
        "idle-min-vram",
        "thresholds.idle_min_vram",
        Default(|| size(Thresholds::default().idle_min_vram)),
        "A process holding at least this much on a GPU idle for idle_after is an idle holder",
    ),
    Setting::new(
        "idle-after",
        "thresholds.idle_after",
        Default(|| dur(Thresholds::default().idle_after)),
        "How long a GPU must be idle before a process holding it is an idle holder",
    ),
    Setting::new(
        "stale-min-vram",
        "thresholds.stale_min_vram",
        Default(|| size(Thresholds::default().stale_min_vram)),
        "VRAM in use with no process listed, at least this much for stale_after, is a stale \
         allocation",
    ),
    Setting::new(
        "stale-after",
        "thresholds.stale_after",
        Default(|| dur(Thresholds::default().stale_after)),
        "How long VRAM must be held by no process before it is a stale allocation",
    ),
    Setting::new(
        "record",
        "record.path",
        none("gpuwatch.ndjson"),
        "Write every sample as NDJSON to this file, in any mode (play it back with gpuwatch replay)",
    ),
    Setting::new(
        "record-max-size",
        "record.max_size",
        Unset {
            shown: "no limit",
            example: "100MiB",
        },
        "Past this size start a new file, keeping the previous one as PATH.1",
    ),
    Setting::new(
        "remote",
        "remote.hosts",
        Default(|| "[]".into()),
        "Other hosts running `gpuwatch serve` to watch, as HOST:PORT (comma-separated as a flag)",
    ),
    Setting::new(
        "hosts-file",
        "remote.hosts_file",
        none("/etc/gpuwatch/hosts"),
        "A file listing more hosts, one HOST:PORT a line",
    ),
    Setting::new(
        "with-local",
        "remote.with_local",
        Switch(false),
        "With remote hosts, show this machine's GPUs too",
    ),
];

/// The flags the config file has no key for.
pub(super) const FLAG_ONLY: &[Setting] = &[
    Setting::new(
        "alert-on",
        "",
        Unset {
            shown: "critical of every kind; idle_holder, stale_vram, squatter from warning",
            example: "",
        },
        "Which warning kinds alert from which severity: KIND or KIND=warning|critical|off, \
         comma-separated; in the file, [alerts.kinds.KIND] tables",
    ),
    Setting::new(
        "config",
        "",
        Unset {
            shown: "$XDG_CONFIG_HOME/gpuwatch/config.toml",
            example: "",
        },
        "The settings file to read instead of the usual one; it must exist",
    ),
    Setting::new(
        "demo",
        "",
        Switch(false),
        "Show the simulated demo fleet (short for --source demo)",
    ),
    Setting::new(
        "demo-gpus",
        "",
        Default(|| super::DEFAULT_DEMO_GPUS.to_string()),
        "Number of simulated GPUs (1..64)",
    ),
    Setting::new(
        "seed",
        "",
        Default(|| super::DEFAULT_SEED.to_string()),
        "Seed of the simulated fleet; the same seed gives the same readings",
    ),
    Setting::new(
        "sysfs-root",
        "",
        Default(|| quoted("/sys")),
        "Where the AMD and Intel sources read class/drm/card* (a captured tree replays anywhere)",
    ),
    Setting::new(
        "proc-root",
        "",
        Default(|| quoted("/proc")),
        "Where the AMD and Intel sources look for processes' DRM files (fdinfo)",
    ),
    Setting::new(
        "once",
        "",
        Switch(false),
        "Print one snapshot and exit (implied when stdout is not a terminal)",
    ),
    Setting::new(
        "json",
        "",
        Switch(false),
        "With --once: print JSON instead of text",
    ),
    Setting::new(
        "no-color",
        "",
        Switch(false),
        "Monochrome output (also when NO_COLOR is set and non-empty); beats --theme",
    ),
    Setting::new(
        "web.telemetry-path",
        "",
        Default(|| quoted("/metrics")),
        "Where the metrics are served",
    )
    .serve()
    .flag_only(),
];

/// Every row: the order of the `config init` file, then the flags it lacks.
pub(super) const GROUPS: &[&[Setting]] = &[LOCAL, super::rows_serve::SERVE_ALERTS, FLAG_ONLY];
