//! Settings for where readings come from: the source kind (`--source`, `--demo`), the demo
//! fleet, the NVML library, a replayed recording and remote hosts. Resolution only: opening
//! libraries, reading the hosts file and connecting belong to `launch`.

use std::path::PathBuf;

use super::parse::{parse_addresses, parse_whole, scenario_by_name, source_by_name};
use super::values::{Got, Resolver};
use super::{PrometheusSettings, RemoteSettings, SettingsError};
use crate::cli::{Cli, Command, SourceKind};
use crate::reading::device_list::{GpuSelector, parse_gpu_list};
use crate::source::drm::Roots;
use crate::source::remote::parse_address;
use crate::source::sim::{MAX_GPUS, Scenario};

pub const DEFAULT_DEMO_GPUS: usize = 8;
pub const DEFAULT_SEED: u64 = 42;

/// `--source`, with `--demo` (or `GPUWATCH_DEMO`) as a shorthand for `demo`. When both are
/// given the one from the stronger place wins, so `GPUWATCH_DEMO=1 gpuwatch --source nvml`
/// reads NVML; at the same place `--demo` wins, as it always has.
pub(super) fn source_kind(cli: &Cli, r: &Resolver) -> Result<SourceKind, SettingsError> {
    let kind = r.layer(
        ("source", &cli.source),
        ("source", &r.file_config().source),
        source_by_name,
        |s| source_by_name(s),
        SourceKind::Nvml,
    )?;
    let demo = r.switch_got(("demo", cli.demo), ("demo", &None))?;
    Ok(if demo.value && demo.at_least_as_strong_as(&kind) {
        SourceKind::Demo
    } else {
        kind.value
    })
}

/// `--demo-gpus` and `--seed`: the simulated fleet's size and seed.
pub(super) fn demo_fleet(cli: &Cli, r: &Resolver) -> Result<(usize, u64), SettingsError> {
    let gpus = r.flag_or_env(
        ("demo-gpus", &cli.demo_gpus),
        parse_whole,
        DEFAULT_DEMO_GPUS,
    )?;
    if !(1..=MAX_GPUS).contains(&gpus.value) {
        return Err(gpus.invalid("must be between 1 and 64"));
    }
    let seed = r.flag_or_env(("seed", &cli.seed), parse_whole, DEFAULT_SEED)?;
    Ok((gpus.value, seed.value))
}

/// `--demo-scenario` / `demo_scenario`: which story the simulated fleet tells. Read whatever
/// the source (like the fleet's size), so a file that sets it for `--demo` never gets in the
/// way of real GPUs.
pub(super) fn demo_scenario(cli: &Cli, r: &Resolver) -> Result<Scenario, SettingsError> {
    Ok(r.layer(
        ("demo-scenario", &cli.demo_scenario),
        ("demo_scenario", &r.file_config().demo_scenario),
        scenario_by_name,
        |s| scenario_by_name(s),
        Scenario::Default,
    )?
    .value)
}

/// `--kubelet-socket`: the default may be missing (not a Kubernetes node), but a socket
/// someone named must be one, or every pod lookup would fail without a word.
pub(super) fn kubelet_socket(cli: &Cli, r: &Resolver) -> Result<PathBuf, SettingsError> {
    let text = |s: &str| Ok(Some(s.to_string()));
    let got = r.layer(
        ("kubelet-socket", &cli.kubelet_socket),
        ("kubelet_socket", &r.file_config().kubelet_socket),
        text,
        |s| text(s),
        None,
    )?;
    let Some(value) = got.value.clone() else {
        return Ok(crate::procinfo::kubelet::DEFAULT_SOCKET.into());
    };
    let path = PathBuf::from(&value);
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(&path) {
        Ok(m) if m.file_type().is_socket() => Ok(path),
        Ok(_) => Err(got.invalid_because(format!(
            "{} is not a socket: give the kubelet's pod-resources socket \
             (usually {})",
            path.display(),
            crate::procinfo::kubelet::DEFAULT_SOCKET
        ))),
        Err(e) => Err(got.invalid_because(format!(
            "cannot use {}: {e}; give the kubelet's pod-resources socket (usually {})",
            path.display(),
            crate::procinfo::kubelet::DEFAULT_SOCKET
        ))),
    }
}

/// `--sysfs-root` and `--proc-root`: where the DRM (AMD, Intel) sources read.
pub(super) fn drm_roots(cli: &Cli, r: &Resolver) -> Result<Roots, SettingsError> {
    let path = |flag: &'static str, given: &Option<String>, default: &str| {
        Ok::<PathBuf, SettingsError>(
            r.text(flag, given)?
                .map_or_else(|| default.into(), |got| got.value.into()),
        )
    };
    Ok(Roots {
        sys: path("sysfs-root", &cli.sysfs_root, "/sys")?,
        proc: path("proc-root", &cli.proc_root, "/proc")?,
    })
}

pub(super) fn nvml_lib(cli: &Cli, r: &Resolver) -> Result<Option<PathBuf>, SettingsError> {
    let path = |s: &str| Ok(Some(PathBuf::from(s)));
    Ok(r.layer(
        ("nvml-lib", &cli.nvml_lib),
        ("nvml_lib", &r.file_config().nvml_lib),
        path,
        |s| path(s),
        None,
    )?
    .value)
}

/// `--only` / `only`: the GPUs to show, and where the list came from (for "matches no GPU").
pub(super) fn only(
    cli: &Cli,
    r: &Resolver,
) -> Result<(Option<Vec<GpuSelector>>, String), SettingsError> {
    let list = |s: &str| parse_gpu_list(s).map(Some);
    let got = r.layer(
        ("only", &cli.only),
        ("only", &r.file_config().only),
        list,
        |s| list(s),
        None,
    )?;
    Ok((got.value.clone(), got.at()))
}

/// `gpuwatch replay FILE`: the recording to play instead of a live source.
pub(super) fn replay(cli: &Cli) -> Option<PathBuf> {
    match &cli.command {
        Some(Command::Replay { file }) => Some(file.clone()),
        _ => None,
    }
}

/// `--remote`, `--hosts-file` and `--with-local`, each flag > env > `[remote]` key.
pub(super) fn remote(cli: &Cli, r: &Resolver) -> Result<RemoteSettings, SettingsError> {
    let t = &r.file_config().remote;
    let addresses = r.layer(
        ("remote", &cli.remote),
        ("remote.hosts", &t.hosts),
        parse_addresses,
        |list| list.iter().map(|h| parse_address(h)).collect(),
        Vec::new(),
    )?;
    let path = |s: &str| Ok(Some(PathBuf::from(s)));
    let hosts_file = r.layer(
        ("hosts-file", &cli.hosts_file),
        ("remote.hosts_file", &t.hosts_file),
        path,
        |s| path(s),
        None,
    )?;
    let with_local = r.switch_got(
        ("with-local", cli.with_local),
        ("remote.with_local", &t.with_local),
    )?;
    if with_local.value && addresses.value.is_empty() && hosts_file.value.is_none() {
        let why = "only with --remote or --hosts-file".to_string();
        return Err(SettingsError::new(with_local.at(), why, None));
    }
    Ok(RemoteSettings {
        addresses: addresses.value,
        hosts_file: hosts_file.value,
        with_local: with_local.value,
    })
}

/// `--prometheus URL` with `--selector` and credentials, each flag > env > `[prometheus]` key.
/// The URL is checked here (plain `http://`); the credentials' files are read by `launch`.
pub(super) fn prometheus(
    cli: &Cli,
    r: &Resolver,
) -> Result<Option<PrometheusSettings>, SettingsError> {
    let t = &r.file_config().prometheus;
    let url = r.layer(
        ("prometheus", &cli.prometheus),
        ("prometheus.url", &t.url),
        parse_url,
        |s| parse_url(s),
        None,
    )?;
    let selector = r.layer(
        ("selector", &cli.selector),
        ("prometheus.selector", &t.selector),
        |s| crate::source::prometheus::parse_selector(s).map(Some),
        |s| crate::source::prometheus::parse_selector(s).map(Some),
        None,
    )?;
    let (user, password_file, bearer_token_file) = credentials(cli, r)?;
    let Some(url_value) = url.value.clone() else {
        for (given, at) in [
            (selector.value.is_some(), selector.at()),
            (user.value.is_some(), user.at()),
            (password_file.value.is_some(), password_file.at()),
            (bearer_token_file.value.is_some(), bearer_token_file.at()),
        ] {
            if given {
                return Err(SettingsError::new(
                    at,
                    "only with --prometheus".into(),
                    None,
                ));
            }
        }
        return Ok(None);
    };
    Ok(Some(PrometheusSettings {
        url: url_value,
        matchers: selector.value.unwrap_or_default(),
        user: user.value,
        password_file: password_file.value,
        bearer_token_file: bearer_token_file.value,
    }))
}

type Credentials = (
    Got<Option<String>>,
    Got<Option<PathBuf>>,
    Got<Option<PathBuf>>,
);

/// `--prometheus-user` with `--password-file`, or `--bearer-token-file`.
fn credentials(cli: &Cli, r: &Resolver) -> Result<Credentials, SettingsError> {
    let t = &r.file_config().prometheus;
    let text = |s: &str| Ok(Some(s.to_string()));
    let user = r.layer(
        ("prometheus-user", &cli.prometheus_user),
        ("prometheus.user", &t.user),
        text,
        |s| text(s),
        None,
    )?;
    let path = |s: &str| Ok(Some(PathBuf::from(s)));
    let password_file = r.layer(
        ("password-file", &cli.password_file),
        ("prometheus.password_file", &t.password_file),
        path,
        |s| path(s),
        None,
    )?;
    let bearer_token_file = r.layer(
        ("bearer-token-file", &cli.bearer_token_file),
        ("prometheus.bearer_token_file", &t.bearer_token_file),
        path,
        |s| path(s),
        None,
    )?;
    let needs = |at: String, why: &str| Err(SettingsError::new(at, why.to_string(), None));
    match (&user.value, &password_file.value, &bearer_token_file.value) {
        (Some(_), None, _) => needs(user.at(), "needs --password-file"),
        (None, Some(_), _) => needs(password_file.at(), "needs --prometheus-user"),
        (Some(_), Some(_), Some(_)) => needs(
            bearer_token_file.at(),
            "either basic auth or a bearer token, not both",
        ),
        _ => Ok((user, password_file, bearer_token_file)),
    }
}

/// `http://HOST:PORT[/prefix]`: plain HTTP only (no TLS stack in gpuwatch yet).
fn parse_url(text: &str) -> Result<Option<String>, String> {
    let t = text.trim().trim_end_matches('/');
    let Some(rest) = t.strip_prefix("http://") else {
        return Err(if t.starts_with("https://") {
            "https is not supported yet: reach Prometheus over plain http:// (e.g. through a local proxy)".into()
        } else {
            format!("{t:?} is not an http:// URL, e.g. http://prometheus:9090")
        });
    };
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains(['?', '#', '@']) {
        return Err(format!("{t:?} has no HOST[:PORT] after http://"));
    }
    Ok(Some(t.to_string()))
}
