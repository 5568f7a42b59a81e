//! Command-line flags and subcommands, exactly as typed: parsing only. Settings flags are
//! `Option`s with no clap defaults, so `config::Settings::resolve` can tell "not given" from
//! "given" and apply flag > env > file > default; it also checks every value.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

use crate::model::columns::Column;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourceKind {
    /// Real GPUs through NVML; fail with a hint when NVML cannot be loaded.
    Nvml,
    /// Every vendor present (NVIDIA through NVML, AMD and Intel through the kernel's DRM
    /// interfaces), together; the simulated demo fleet when there is none.
    Auto,
    /// AMD GPUs through amdgpu's sysfs files and DRM fdinfo (no ROCm needed).
    Amd,
    /// Intel GPUs through i915/xe's DRM fdinfo and hwmon.
    Intel,
    /// The simulated demo fleet.
    Demo,
}

/// Names `--source` accepts (the same as `source` in the config file and GPUWATCH_SOURCE).
pub const SOURCE_NAMES: [&str; 5] = ["nvml", "auto", "amd", "intel", "demo"];

/// Names `--theme` accepts (the same as `theme` in the config file).
pub const THEME_NAMES: [&str; 3] = ["dark", "light", "mono"];

const ENV_HELP: &str = "\
Every setting flag can also come from the environment as GPUWATCH_<FLAG>, e.g.
GPUWATCH_INTERVAL=2s, GPUWATCH_DEMO=1 or GPUWATCH_LISTEN=0.0.0.0:19445 (switches take
1/true/yes or 0/false/no); a GPUWATCH_* variable gpuwatch does not know is an error. Most
also come from the config file (gpuwatch config init writes one with every key explained).
A flag beats the environment, which beats the file, which beats the default.
NO_COLOR (non-empty) or --no-color forces the mono theme.";

/// Ends each subcommand's help, where the global options are not repeated.
/// One line: clap wraps it to the terminal.
const GLOBALS_HINT: &str = "The global options (--config, --interval, --demo, --only, \
--remote, ...) apply here too; `gpuwatch --help` lists them.";

/// Parses `args` (the first is the program's name; `main` passes the command line with
/// nvidia-smi's query flags rewritten, `query::argv`) as `Cli::parse_from` would, with each
/// subcommand's help showing only its own options (see [`command`]); a bad command line
/// exits 2 with clap's message.
pub fn parse_from<I, T>(args: I) -> Cli
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    if let Some(cli) = parse_monitor(&args) {
        return cli;
    }
    let mut matches = command().get_matches_from(args);
    Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.format(&mut command()).exit())
}

/// The command line when it runs the monitor itself (no subcommand) and parses cleanly,
/// read with clap's plain command. Building [`command`]'s hidden-global twins of every
/// subcommand costs ~7 M instructions (a sixth of the monitor's start-up, measured with
/// callgrind) and only a subcommand's help, usage line or error shows them; so anything
/// else (a subcommand, `--help`, an error) is `None` and goes through [`command`], and
/// every message stays the same.
fn parse_monitor(args: &[std::ffi::OsString]) -> Option<Cli> {
    let mut matches = Cli::command().try_get_matches_from(args).ok()?;
    if matches.subcommand().is_some() {
        return None;
    }
    Cli::from_arg_matches_mut(&mut matches).ok()
}

/// The command line parsers and help use. Global options still parse after a subcommand
/// (`gpuwatch pick --demo`), but each subcommand carries them hidden: clap would otherwise
/// copy all ~50 into every subcommand's help (`pick --help` was 191 lines). Hidden copies
/// put in before clap's own propagation take their place (clap skips an id already there).
/// The man page and completions keep using `Cli::command()`, which lists everything.
pub fn command() -> clap::Command {
    // Built (globals copied in, names joined) only to read each subcommand's usage line.
    let mut full = Cli::command();
    full.build();
    let cmd = Cli::command();
    let globals: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    cmd.mut_subcommands(|sc| {
        let shown = full.find_subcommand(sc.get_name());
        hide_globals(sc, &globals, shown)
    })
}

/// `sc` with `globals` hidden and its help ending in [`GLOBALS_HINT`]; where it has no
/// options of its own, its usage line is that of `full` (its twin with the globals shown),
/// so `[OPTIONS]` stays (`gpuwatch replay [OPTIONS] <FILE>`). The same for its subcommands.
fn hide_globals(
    sc: clap::Command,
    globals: &[clap::Arg],
    full: Option<&clap::Command>,
) -> clap::Command {
    let mut sc = sc;
    for a in globals {
        if !sc.get_arguments().any(|own| own.get_id() == a.get_id()) {
            sc = sc.arg(a.clone().hide(true));
        }
    }
    // clap drops `[OPTIONS]` when only hidden ones are left; say it still takes them.
    let own_options = sc
        .get_arguments()
        .any(|a| !a.is_positional() && !a.is_hide_set());
    if let Some(full) = full.filter(|_| !own_options) {
        let usage = full.clone().render_usage().to_string();
        let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_string();
        sc = sc.override_usage(usage);
    }
    let hint = match sc.get_after_help() {
        Some(own) => format!("{own}\n\n{GLOBALS_HINT}"),
        None => GLOBALS_HINT.to_string(),
    };
    sc.after_help(hint).mut_subcommands(|nested| {
        let shown = full.and_then(|f| f.find_subcommand(nested.get_name()));
        hide_globals(nested, globals, shown)
    })
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "gpuwatch",
    version,
    about = "A terminal GPU monitor for shared multi-GPU servers",
    after_help = ENV_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Settings file to read instead of $XDG_CONFIG_HOME/gpuwatch/config.toml (or
    /// ~/.config/gpuwatch/config.toml); also GPUWATCH_CONFIG. It must exist.
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,

    /// Show the simulated demo fleet instead of real GPUs (same as --source demo).
    #[arg(long, global = true)]
    pub demo: bool,

    /// Where readings come from: nvml, amd, intel, auto (every vendor present, else the demo
    /// fleet) or demo [default: nvml].
    // A string, not a clap value enum with a default: a clap default would hide whether the
    // flag was given (so GPUWATCH_SOURCE and the file could never apply) and shows the flag
    // as required in usage lines.
    #[arg(long, value_name = "SOURCE", global = true,
          value_parser = PossibleValuesParser::new(SOURCE_NAMES))]
    pub source: Option<String>,

    /// Number of simulated GPUs (1..64) [default: 8].
    #[arg(long, value_name = "N", global = true)]
    pub demo_gpus: Option<String>,

    /// The simulated fleet's story: default (an NVIDIA server), or mixed (the same with an
    /// H100 in MIG mode, an AMD and an Intel GPU after it) [default: default].
    #[arg(long, value_name = "NAME", global = true)]
    pub demo_scenario: Option<String>,

    /// Seed of the simulated fleet; the same seed gives the same readings [default: 42].
    #[arg(long, value_name = "N", global = true)]
    pub seed: Option<String>,

    /// Path to libnvidia-ml.so.1 (default: the system's).
    #[arg(long, value_name = "PATH", global = true)]
    pub nvml_lib: Option<String>,

    /// The sysfs root the AMD and Intel sources read (`class/drm/card*`), e.g. a captured
    /// tree [default: /sys].
    #[arg(long, value_name = "PATH", global = true)]
    pub sysfs_root: Option<String>,

    /// The /proc root the sources read processes and the host line from (the AMD and Intel
    /// sources also scan it for DRM clients) [default: /proc].
    #[arg(long, value_name = "PATH", global = true)]
    pub proc_root: Option<String>,

    /// The kubelet's pod-resources socket, asked which pod each GPU is allocated to
    /// [default: /var/lib/kubelet/pod-resources/kubelet.sock; nothing is asked without it].
    #[arg(long, value_name = "PATH", global = true)]
    pub kubelet_socket: Option<String>,

    /// Show (or pick from) only these GPUs: indices and/or UUIDs, comma-separated, e.g. 0,2
    /// or GPU-5e0c.
    #[arg(long, value_name = "LIST", global = true)]
    pub only: Option<String>,

    /// Time between samples, e.g. 1s, 500ms, 2s (minimum 100ms) [default: 1s].
    #[arg(long, short = 'i', value_name = "DURATION", global = true)]
    pub interval: Option<String>,

    /// How much history the sparklines and trends keep, e.g. 5m, 1h [default: 5m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub history: Option<String>,

    /// Print one snapshot and exit (implied when stdout is not a terminal).
    #[arg(long, global = true)]
    pub once: bool,

    /// With --once: print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Colours for a dark or light terminal background, or mono (no colour) [default: dark].
    #[arg(long, value_name = "THEME", global = true,
          value_parser = PossibleValuesParser::new(THEME_NAMES))]
    pub theme: Option<String>,

    /// Monochrome output (also when NO_COLOR is set and non-empty); beats --theme.
    #[arg(long, global = true)]
    pub no_color: bool,

    /// Start with compact one-line-per-GPU panels.
    #[arg(long, global = true)]
    pub compact: bool,

    /// Never send signals to processes.
    #[arg(long, global = true)]
    pub readonly: bool,

    /// Let the mouse select rows and scroll.
    #[arg(long, global = true)]
    pub mouse: bool,

    /// Column the process table is sorted by at start, in that column's natural direction
    /// [default: vram].
    #[arg(long, value_name = "COLUMN", global = true,
          value_parser = PossibleValuesParser::new(Column::config_names()))]
    pub sort: Option<String>,

    /// Write every sample to FILE as NDJSON, in any mode (play it back with `gpuwatch replay`).
    #[arg(long, value_name = "FILE", global = true)]
    pub record: Option<String>,

    /// With --record: past this size start a new file, keeping the old one as FILE.1 (e.g.
    /// 100MiB; sizes take binary units B, KiB, MiB, GiB, TiB; GB and bare numbers are refused).
    // No clap `requires`: the recording may be named by GPUWATCH_RECORD or the file instead.
    #[arg(long, value_name = "SIZE", global = true)]
    pub record_max_size: Option<String>,

    /// Watch other hosts' `gpuwatch serve`: HOST:PORT, comma-separated.
    #[arg(long, value_name = "HOST:PORT,...", global = true)]
    pub remote: Option<String>,

    /// Hosts to watch, one HOST:PORT a line (blank lines and # comments ignored).
    #[arg(long, value_name = "FILE", global = true)]
    pub hosts_file: Option<String>,

    /// Draw the fleet a Prometheus server scrapes (gpuwatch or dcgm-exporter series): http(s)://HOST:PORT.
    #[arg(long, value_name = "URL", global = true)]
    pub prometheus: Option<String>,

    /// With --prometheus: only series matching this selector, e.g. '{cluster="a"}'.
    #[arg(long, value_name = "SELECTOR", global = true)]
    pub selector: Option<String>,

    /// With --prometheus: the basic-auth user (the password from --password-file).
    #[arg(long, value_name = "USER", global = true)]
    pub prometheus_user: Option<String>,

    /// With --prometheus-user: a file holding the basic-auth password.
    #[arg(long, value_name = "FILE", global = true)]
    pub password_file: Option<String>,

    /// With --prometheus: a file holding a bearer token to send.
    #[arg(long, value_name = "FILE", global = true)]
    pub bearer_token_file: Option<String>,

    /// With --prometheus https://: the CA certificates (PEM) its certificate must chain to, instead of the system's.
    #[arg(long, value_name = "FILE", global = true)]
    pub prometheus_ca_file: Option<String>,

    /// With --remote or --hosts-file: show this machine's GPUs too.
    #[arg(long, global = true)]
    pub with_local: bool,

    /// Testing aid: panic after this many samples, to prove the terminal is restored.
    #[arg(long, hide = true, value_name = "N", global = true)]
    pub debug_panic_after: Option<u64>,

    /// VRAM use (%) at which a GPU gets an OOM warning [default: 90].
    #[arg(long, value_name = "PERCENT", global = true)]
    pub oom_warn: Option<String>,

    /// VRAM use (%) at which the OOM warning turns critical [default: 97].
    #[arg(long, value_name = "PERCENT", global = true)]
    pub oom_critical: Option<String>,

    /// Warn when VRAM would be full within this long at its recent growth rate [default: 2m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub oom_time_to_full: Option<String>,

    /// Temperature (°C) at which a GPU is reported running hot [default: 85].
    #[arg(long, value_name = "CELSIUS", global = true)]
    pub temp_warn: Option<String>,

    /// Temperature (°C) that, held for --temp-hold, is critical (the device's own slowdown
    /// threshold is used instead when it is lower) [default: 90].
    #[arg(long, value_name = "CELSIUS", global = true)]
    pub temp_critical: Option<String>,

    /// How long the critical temperature must hold before the alert turns critical
    /// [default: 30s].
    #[arg(long, value_name = "DURATION", global = true)]
    pub temp_hold: Option<String>,

    /// A process on a GPU idle this long is an idle holder [default: 30m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub idle_after: Option<String>,

    /// VRAM a process must hold to count as an idle holder, e.g. 1GiB, 512MiB (binary units: G
    /// is GiB; GB and a bare number are refused) [default: 1GiB].
    #[arg(long, value_name = "SIZE", global = true)]
    pub idle_min_vram: Option<String>,

    /// VRAM in use with no process this long is a stale allocation [default: 1m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub stale_after: Option<String>,

    /// VRAM held by no process that counts as a stale allocation, e.g. 2GiB (binary units: G is
    /// GiB; GB and a bare number are refused) [default: 1GiB].
    #[arg(long, value_name = "SIZE", global = true)]
    pub stale_min_vram: Option<String>,

    /// POST each alert as JSON to this URL (repeatable; http:// or https://). Shown redacted,
    /// never in full.
    #[arg(long, value_name = "URL", global = true)]
    pub alert_webhook: Vec<String>,

    /// Webhook payload: json (gpuwatch's own document), slack or discord [default: json].
    #[arg(long, value_name = "FORMAT", global = true,
          value_parser = PossibleValuesParser::new(crate::alert_settings::FORMAT_NAMES))]
    pub alert_format: Option<String>,

    /// Run this shell command for each alert, with the facts in GPUWATCH_ALERT_* variables
    /// and the JSON document on stdin (killed after 5 s).
    #[arg(long, value_name = "CMD", global = true)]
    pub alert_command: Option<String>,

    /// In the monitor, do not ring the terminal bell on a new critical alert.
    #[arg(long, global = true)]
    pub no_bell: bool,

    /// Send a firing alert again this often while it holds; 0 never [default: 4h].
    #[arg(long, value_name = "DURATION", global = true)]
    pub alert_repeat: Option<String>,

    /// A fired alert is resolved only once its warning has stayed clear this long; one that
    /// comes back sooner is the same alert, still firing; 0 resolves at once [default: 5m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub alert_resolve_after: Option<String>,

    /// How long a warning (not critical) must hold before it alerts [default: 1m].
    #[arg(long, value_name = "DURATION", global = true)]
    pub alert_for: Option<String>,

    /// Only these warning kinds alert: KIND or KIND=warning|critical|off, comma-separated,
    /// e.g. overheating,idle_holder=warning [default: critical of every kind; idle_holder
    /// and stale_vram as warnings].
    #[arg(long, value_name = "LIST", global = true)]
    pub alert_on: Option<String>,

    /// Testing aid: run the demo scenario this many times faster than real time.
    #[arg(long, hide = true, value_name = "FACTOR", global = true)]
    pub demo_speed: Option<f64>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Write or check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigCommand,
    },
    /// Print a shell completion script, e.g. `gpuwatch completions bash >
    /// ~/.local/share/bash-completion/completions/gpuwatch`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff, from these definitions), e.g. `gpuwatch man | gzip >
    /// /usr/local/share/man/man1/gpuwatch.1.gz`. Hidden: packagers run it, users read the page.
    #[command(hide = true)]
    Man {
        /// Write every page instead (gpuwatch.1 and one per subcommand, e.g.
        /// gpuwatch-serve.1, which the main page's SUBCOMMANDS section names) into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the best GPUs nobody else is using for a new job (only among those an inherited
    /// CUDA_VISIBLE_DEVICES allows), e.g. `export $(gpuwatch pick -n 2 --format env)`; exits 1
    /// when not enough GPUs qualify, saying why for each one skipped.
    Pick(PickArgs),
    /// Serve Prometheus metrics (and a JSON snapshot) over HTTP, e.g. `gpuwatch serve --listen
    /// 0.0.0.0:19445`; the global flags (--interval, --only, --demo, ...) apply.
    Serve(ServeArgs),
    /// Alerts: `gpuwatch alert test` sends one synthetic alert through the configured sinks.
    Alert {
        #[command(subcommand)]
        action: AlertCommand,
    },
    /// Block until a process's VRAM is gone from every GPU (--released PID) or a GPU is
    /// free (--gpu N --free), then exit 0; with --timeout, exit 1 naming what still holds it.
    Wait(WaitArgs),
    /// nvidia-smi's query interface on every source: `gpuwatch query --query-gpu=index,memory.used
    /// --format=csv`, `--query-compute-apps=pid,used_memory`, `-L`; nvidia-smi's own flags
    /// (`--query-gpu`, `--query-compute-apps`, `-L`) work without the word `query`, and within
    /// a query `-i` is the GPU id and `-lms` the loop in ms, as in nvidia-smi (docs/query.md).
    Query(QueryArgs),
    /// Play a recording (from --record) in the monitor: p pauses, ←/→ jump 30 s, +/- change speed.
    Replay {
        /// The NDJSON recording.
        file: PathBuf,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct QueryArgs {
    /// GPU fields to print, comma-separated, as nvidia-smi names them, e.g.
    /// index,uuid,memory.used,utilization.gpu (docs/query.md lists them).
    #[arg(long, value_name = "FIELDS")]
    pub query_gpu: Option<String>,

    /// Compute-process fields to print, e.g. pid,process_name,used_memory,gpu_uuid.
    #[arg(long, value_name = "FIELDS")]
    pub query_compute_apps: Option<String>,

    /// csv, then any of noheader, nounits and quoted (RFC 4180), comma-separated [default: csv].
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// List the GPUs and their MIG devices, as nvidia-smi -L does.
    #[arg(short = 'L', long)]
    pub list_gpus: bool,

    /// Only these GPUs: indices, UUIDs or PCI bus ids, comma-separated (-i in a query).
    #[arg(long, value_name = "ID,...")]
    pub id: Option<String>,

    /// Print a block every SEC seconds until stopped.
    #[arg(short = 'l', long = "loop", value_name = "SEC")]
    pub loop_sec: Option<String>,

    /// Print a block every MS milliseconds until stopped (-lms in a query).
    #[arg(long, value_name = "MS")]
    pub loop_ms: Option<String>,

    /// Write to this file instead of stdout.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub filename: Option<PathBuf>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Write a config file with every key, its meaning and its default; prints its path.
    Init {
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
        /// Where to write it [default: --config, GPUWATCH_CONFIG, or the usual place].
        path: Option<PathBuf>,
    },
    /// Check a config file: prints `ok: PATH`, or what is wrong and where (exit 2).
    Check {
        /// The file to check [default: --config, GPUWATCH_CONFIG, or the usual place].
        path: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum AlertCommand {
    /// Send one synthetic alert through every configured sink and say what each answered
    /// (exit 1 when one failed, 2 when none is configured).
    Test,
}

#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Wait until this process (a host PID) holds no VRAM on any GPU.
    #[arg(long, value_name = "PID", conflicts_with_all = ["gpu", "free"])]
    pub released: Option<u32>,

    /// With --free: the GPU to wait for, by index or UUID.
    #[arg(long, value_name = "GPU")]
    pub gpu: Option<String>,

    /// With --gpu: wait until nobody uses that GPU.
    #[arg(long)]
    pub free: bool,

    /// Give up after this long (exit 1), e.g. 10m.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

#[derive(Debug, Clone, clap::Args)]
pub struct PickArgs {
    /// How many GPUs to pick.
    #[arg(short = 'n', long = "count", value_name = "N", default_value_t = 1)]
    pub count: usize,

    /// Each picked GPU must have at least this much VRAM free, e.g. 20GiB or 20G (binary
    /// units; GB and a bare number are refused).
    #[arg(long, value_name = "SIZE")]
    pub min_free: Option<String>,

    /// Each picked GPU must be at most this busy (%).
    #[arg(long, value_name = "PERCENT", default_value_t = crate::model::activity::PICK_MAX_UTIL_DEFAULT)]
    pub max_util: u32,

    /// How to print the picked GPUs. Indices are this host's (PCI bus order, as nvidia-smi
    /// numbers them), also when CUDA_VISIBLE_DEVICES was inherited: a value to set
    /// CUDA_VISIBLE_DEVICES to, not a device number inside a process that has it set.
    #[arg(long, value_enum, default_value_t = PickFormat::Indices)]
    pub format: PickFormat,

    /// Wait until enough GPUs qualify, checking every --interval; says on stderr what it
    /// waits for whenever that changes. Ctrl-C ends it (exit 130).
    #[arg(long)]
    pub wait: bool,

    /// With --wait: give up after this long (exit 1), e.g. 10m.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,

    /// Also say on stderr why each other GPU was skipped when the pick succeeds (a failed
    /// pick always says).
    #[arg(short, long)]
    pub verbose: bool,

    /// Pick even when this is a Kubernetes node (the kubelet's pod-resources socket exists)
    /// whose kubelet could not be asked which pods hold GPUs; by default pick refuses (exit
    /// 1), since a GPU allocated to a pod whose processes are not visible would look free.
    #[arg(long)]
    pub ignore_kubelet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PickFormat {
    /// `2,3`
    Indices,
    /// `GPU-…,GPU-…`: the same GPUs in any process, whatever CUDA_VISIBLE_DEVICES it has.
    Uuids,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`, for `export $(…)`.
    Env,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, as IP:PORT (port 0 picks a free one; 0.0.0.0:19445 listens on
    /// every interface) [default: 127.0.0.1:19445; dcgm-exporter's is 9400].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Address to listen on, as node_exporter and dcgm-exporter spell it: HOST:PORT,
    /// [IPv6]:PORT, or :PORT for every interface; a host name listens on each of its
    /// addresses. Repeat it to listen on several. Instead of --listen.
    #[arg(long = "web.listen-address", value_name = "ADDR")]
    pub web_listen_address: Vec<String>,

    /// The path the metrics are served at [default: /metrics].
    #[arg(long = "web.telemetry-path", value_name = "PATH")]
    pub web_telemetry_path: Option<String>,

    /// Also export the dcgm-exporter metric names (DCGM_FI_DEV_*) that existing Grafana
    /// dashboards query.
    #[arg(long)]
    pub dcgm_compat: bool,

    /// Also export per-PID series labelled by PID, user and command (more series that come
    /// and go with the processes; per-user and per-workload totals are always exported).
    #[arg(long)]
    pub process_metrics: bool,

    /// With --process-metrics: at most N processes get series, the largest VRAM holders
    /// [default: 100].
    #[arg(long, value_name = "N")]
    pub process_metrics_limit: Option<String>,

    /// Leave user names and command lines out of /api/v1/snapshot and the metrics.
    #[arg(long)]
    pub redact: bool,

    /// The host name the metrics and the snapshot carry [default: $NODE_NAME when set (a
    /// Kubernetes DaemonSet), else this host's name].
    #[arg(long, value_name = "NAME")]
    pub hostname: Option<String>,

    /// TLS and basic auth from a web config file in the Prometheus exporter toolkit's format
    /// (tls_server_config: cert_file, key_file, client_ca_file, client_auth_type,
    /// min_version; basic_auth_users: bcrypt hashes). Certificates are re-read when their
    /// files change and on SIGHUP.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<String>,

    /// Connections held at once (never more than the open-file limit allows); when full, the
    /// one idle or half-sent longest is closed for a new client [default: 64].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<String>,

    /// Time a client has for the TLS handshake and each request's headers, from connecting
    /// or the previous response; also ends idle keep-alive connections [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub http_header_timeout: Option<String>,

    /// A connection on which nothing moves either way for this long is closed [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub http_idle_timeout: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<std::ffi::OsString> {
        line.split(' ').map(Into::into).collect()
    }

    /// The monitor's quick parse reads a command line exactly as the full command does, and
    /// leaves everything whose messages differ (subcommands, help, errors) to the full one.
    #[test]
    fn the_monitors_quick_parse_reads_what_the_full_command_reads() {
        let monitor = [
            "gpuwatch",
            "gpuwatch --demo -i 2s --history 10m",
            "gpuwatch --source demo --demo-gpus 16 --seed 7 --theme light --compact",
            "gpuwatch --only 0,2 --sort vram --no-color --mouse --readonly",
            "gpuwatch --remote a:19445,b:19445 --interval 500ms",
            "gpuwatch --once --json",
        ];
        for line in monitor {
            let quick = parse_monitor(&args(line)).unwrap_or_else(|| panic!("{line}: not quick"));
            let mut matches = command().try_get_matches_from(args(line)).unwrap();
            let full = Cli::from_arg_matches_mut(&mut matches).unwrap();
            assert_eq!(format!("{quick:?}"), format!("{full:?}"), "{line}");
        }
        let others = [
            "gpuwatch pick --demo",
            "gpuwatch --demo serve --listen 127.0.0.1:0",
            "gpuwatch --help",
            "gpuwatch --version",
            "gpuwatch --no-such-flag",
            "gpuwatch --theme plaid",
        ];
        for line in others {
            assert!(parse_monitor(&args(line)).is_none(), "{line}");
        }
    }
}
