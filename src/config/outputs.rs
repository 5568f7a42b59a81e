//! Settings for where readings go besides the screen: `--record` (and when to start a new
//! file). Resolution only: opening the file belongs to `launch`. (`serve`'s are in `serve`.)

use std::path::PathBuf;

use super::values::Resolver;
use super::{RecordSettings, SettingsError};
use crate::cli::Cli;
use crate::units::Bytes;

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
