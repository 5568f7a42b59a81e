//! Settings for where readings go besides the screen: `--record` (and when to start a new
//! file) and `gpuwatch serve`'s listener and metric families. Resolution only: opening the
//! file and binding the port belong to `launch` and `serve`.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use super::parse::parse_listen;
use super::values::Resolver;
use super::{RecordSettings, ServeSettings, SettingsError};
use crate::cli::{Cli, Command};
use crate::units::Bytes;

/// Loopback by default: exposing metrics to the network should be a decision.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 9400));

/// `--record` / `[record] path`, and `--record-max-size` / `[record] max_size`, which means
/// nothing without a recording and is refused alone.
pub(super) fn record(cli: &Cli, r: &Resolver) -> Result<Option<RecordSettings>, SettingsError> {
    let t = &r.file_config().record;
    let path = |s: &str| Ok(Some(PathBuf::from(s)));
    let file = r.layer(
        ("record", &cli.record),
        ("record.path", &t.path),
        path,
        |s| path(s),
        None,
    )?;
    let size = |s: &str| match s.parse::<Bytes>()? {
        Bytes(0) => Err("must be more than 0".to_string()),
        b => Ok(Some(b)),
    };
    let max = r.layer(
        ("record-max-size", &cli.record_max_size),
        ("record.max_size", &t.max_size),
        size,
        |t| size(&t.0),
        None,
    )?;
    match file.value {
        Some(path) => Ok(Some(RecordSettings {
            path,
            max_size: max.value,
        })),
        None if max.given() => Err(SettingsError::new(
            max.at(),
            "only with --record (or GPUWATCH_RECORD, or [record] path)".into(),
            None,
        )),
        None => Ok(None),
    }
}

/// `gpuwatch serve`'s settings; the flags exist only on `serve`, the env and `[serve]` keys
/// are checked on every start so `config check` and a typo in them fail early.
pub(super) fn serve(cli: &Cli, r: &Resolver) -> Result<ServeSettings, SettingsError> {
    let t = &r.file_config().serve;
    let args = match &cli.command {
        Some(Command::Serve(args)) => Some(args),
        _ => None,
    };
    let listen = args.and_then(|a| a.listen.clone());
    let listen = r.layer(
        ("listen", &listen),
        ("serve.listen", &t.listen),
        parse_listen,
        |s| parse_listen(s),
        DEFAULT_LISTEN,
    )?;
    Ok(ServeSettings {
        listen: listen.value,
        listen_origin: listen.at(),
        dcgm_compat: r.switch(
            ("dcgm-compat", args.is_some_and(|a| a.dcgm_compat)),
            ("serve.dcgm_compat", &t.dcgm_compat),
        )?,
        process_metrics: r.switch(
            ("process-metrics", args.is_some_and(|a| a.process_metrics)),
            ("serve.process_metrics", &t.process_metrics),
        )?,
    })
}
