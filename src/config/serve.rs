//! `gpuwatch serve`'s settings: listener, connection limits, TLS/auth file, host name and
//! which metric families (and how much of them) to export. The flags exist only on `serve`;
//! the env and `[serve]` keys are checked on every start so `config check` and a typo in
//! them fail early. Resolution only: binding and reading the web config belong to `serve`.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use super::parse::{parse_listen, parse_whole};
use super::values::Resolver;
use super::{ConnectionLimits, Env, ServeSettings, SettingsError};
use crate::cli::{Cli, Command, ServeArgs};

/// Outside Prometheus' exporter range (9100-9999, every port of it allocated since 2023; 9445,
/// gpuwatch's old default, is mindprince/nvidia_gpu_prometheus_exporter's, common on Slurm
/// GPU hosts), clear of what GPU hosts run besides (dcgm-exporter 9400, nvidia_gpu_exporter
/// 9835, Slurm 6817-6820, the kubelet 10250-10259) and below the ephemeral ports (32768+).
/// docs/exporter.md says why at length. `--dcgm-compat --listen 0.0.0.0:9400` is the
/// drop-in path for dcgm-exporter. Loopback by default: exposing metrics should be a decision.
pub const DEFAULT_PORT: u16 = 19445;
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, DEFAULT_PORT));

/// Scrapers are a handful of Prometheus servers; 64 leaves room for people with curl and
/// stays far below the usual 1,024 descriptors even before the soft limit is raised.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;
/// Time for the TLS handshake and a request's headers (Prometheus sends them at once).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection on which no byte moves either way for this long is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Per-PID series kept when `--process-metrics` is on (the largest VRAM holders).
pub const DEFAULT_PROCESS_METRICS_LIMIT: usize = 100;

/// The Kubernetes downward API's usual variable for the node a DaemonSet pod runs on.
const NODE_NAME: &str = "NODE_NAME";

pub(super) fn serve(cli: &Cli, r: &Resolver, env: Env) -> Result<ServeSettings, SettingsError> {
    let t = &r.file_config().serve;
    let args = match &cli.command {
        Some(Command::Serve(args)) => Some(args),
        _ => None,
    };
    let opt = |f: fn(&ServeArgs) -> &Option<String>| args.and_then(|a| f(a).clone());
    let flag = |f: fn(&ServeArgs) -> bool| args.is_some_and(f);
    let listen = r.layer(
        ("listen", &opt(|a| &a.listen)),
        ("serve.listen", &t.listen),
        parse_listen,
        |s| parse_listen(s),
        DEFAULT_LISTEN,
    )?;
    let process_metrics = r.switch(
        ("process-metrics", flag(|a| a.process_metrics)),
        ("serve.process_metrics", &t.process_metrics),
    )?;
    let text = |s: &str| Ok(Some(s.to_string()));
    let hostname = r.layer(
        ("hostname", &opt(|a| &a.hostname)),
        ("serve.hostname", &t.hostname),
        host_name,
        |s| host_name(s),
        None,
    )?;
    let web_config = r.layer(
        ("web.config.file", &opt(|a| &a.web_config_file)),
        ("serve.web_config_file", &t.web_config_file),
        text,
        |s| text(s),
        None,
    )?;
    let listen_flag = args.is_some_and(|a| a.listen.is_some());
    let web_listen = args.map_or(&[][..], |a| &a.web_listen_address[..]);
    let (listen_addresses, listen_origin) = match web_listen {
        [] => super::listen::file_listen_addresses(r, &t.web_listen_address, &listen)?
            .unwrap_or_else(|| (Vec::new(), listen.at())),
        given => (
            super::listen::web_listen_addresses(given, listen_flag)?,
            "--web.listen-address".into(),
        ),
    };
    Ok(ServeSettings {
        listen: listen.value,
        listen_origin,
        listen_addresses,
        telemetry_path: super::listen::telemetry_path(
            args.and_then(|a| a.web_telemetry_path.as_deref()),
        )?,
        dcgm_compat: r.switch(
            ("dcgm-compat", flag(|a| a.dcgm_compat)),
            ("serve.dcgm_compat", &t.dcgm_compat),
        )?,
        process_metrics,
        process_metrics_limit: process_metrics_limit(args, r, process_metrics)?,
        redact: r.switch(("redact", flag(|a| a.redact)), ("serve.redact", &t.redact))?,
        // NODE_NAME is not a gpuwatch setting (the cluster sets it), so it is the default.
        hostname: hostname
            .value
            .or_else(|| env(NODE_NAME).filter(|n| !n.trim().is_empty())),
        web_config: web_config.value.map(PathBuf::from),
        limits: limits(args, r)?,
    })
}

/// `--process-metrics-limit`, which a flag or variable may not give without per-PID series
/// (the file may keep it for when they are turned on).
fn process_metrics_limit(
    args: Option<&ServeArgs>,
    r: &Resolver,
    process_metrics: bool,
) -> Result<usize, SettingsError> {
    let limit = r.layer(
        (
            "process-metrics-limit",
            &args.and_then(|a| a.process_metrics_limit.clone()),
        ),
        (
            "serve.process_metrics_limit",
            &r.file_config().serve.process_metrics_limit,
        ),
        at_least_one,
        |n| at_least_one(&n.to_string()),
        DEFAULT_PROCESS_METRICS_LIMIT,
    )?;
    if limit.given_for_this_run() && !process_metrics {
        return Err(SettingsError::new(
            limit.at(),
            "only with --process-metrics (per-PID series are off)".into(),
            None,
        ));
    }
    Ok(limit.value)
}

fn limits(args: Option<&ServeArgs>, r: &Resolver) -> Result<ConnectionLimits, SettingsError> {
    let t = &r.file_config().serve;
    let opt = |f: fn(&ServeArgs) -> &Option<String>| args.and_then(|a| f(a).clone());
    let max_connections = r.layer(
        ("max-connections", &opt(|a| &a.max_connections)),
        ("serve.max_connections", &t.max_connections),
        at_least_one,
        |n| at_least_one(&n.to_string()),
        DEFAULT_MAX_CONNECTIONS,
    )?;
    let positive = |got: super::values::Got<Duration>| {
        if got.value.is_zero() {
            Err(got.invalid("must be more than 0"))
        } else {
            Ok(got.value)
        }
    };
    let header_timeout = positive(r.duration(
        ("http-header-timeout", &opt(|a| &a.http_header_timeout)),
        ("serve.header_timeout", &t.header_timeout),
        DEFAULT_HEADER_TIMEOUT,
    )?)?;
    let idle_timeout = positive(r.duration(
        ("http-idle-timeout", &opt(|a| &a.http_idle_timeout)),
        ("serve.idle_timeout", &t.idle_timeout),
        DEFAULT_IDLE_TIMEOUT,
    )?)?;
    Ok(ConnectionLimits {
        max_connections: max_connections.value,
        header_timeout,
        idle_timeout,
    })
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match parse_whole::<usize>(text)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

/// A label value, so anything printable; an empty one would be no name at all.
fn host_name(text: &str) -> Result<Option<String>, String> {
    let name = text.trim();
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err("must be a non-empty name without control characters".into());
    }
    Ok(Some(name.to_string()))
}
