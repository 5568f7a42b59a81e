//! `gpuwatch config init` and `gpuwatch config check`: the commented default file (generated
//! from the settings table, whose defaults are the resolvers' constants), writing it without clobbering,
//! and checking a file exactly as a normal start would read it.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Env, Settings, SettingsError, table};
use crate::cli::{Cli, ConfigCommand};

/// The file `config init` writes: every key of the settings table, set to its default (or a
/// commented-out example), with what it means; one part per table, separated by a blank line.
pub fn default_file_text() -> String {
    table::template_tables()
        .into_iter()
        .map(|name| match name {
            "" => format!("{HEADER}\n{}", table::template_section("")),
            "alerts" => format!(
                "[alerts]\n{}{}",
                table::template_section(name),
                alert_kinds()
            ),
            _ => format!("[{name}]\n{}", table::template_section(name)),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const HEADER: &str = r#"# gpuwatch settings. Every value below is the default; delete a line to go back to it.
# A flag (see gpuwatch --help) beats the environment (GPUWATCH_<FLAG>), which beats this file.
# Durations: "500ms", "2s", "5m", "1h", or a number of seconds.
# Sizes: "1GiB", "512MiB", "4096B": binary units ("G" is GiB); "GB" and bare numbers are refused.
"#;

/// `[alerts.kinds.KIND]`, the file's side of `--alert-on`: one example, commented out.
fn alert_kinds() -> String {
    use crate::alert_settings::rules;
    format!(
        r#"# Per warning kind ({kinds}): from which severity it goes out ("warning",
# "critical" or "off"), and its own `for` and `repeat`. By default critical of every kind
# goes out, and {warning_kinds} as warnings too (--alert-on).
# [alerts.kinds.overheating]
# severity = "critical"
# for = "30s"
# repeat = "1h"
"#,
        kinds = crate::wire::WarningCode::names(", "),
        warning_kinds = words_list(&rules::WARNING_KINDS.map(|k| k.name())),
    )
}

/// `a`, `a and b`, `a, b and c`: a list as a sentence says it.
fn words_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
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

#[cfg(test)]
mod tests {
    use super::words_list;

    #[test]
    fn lists_read_as_a_sentence() {
        assert_eq!(words_list(&[]), "");
        assert_eq!(words_list(&["a"]), "a");
        assert_eq!(words_list(&["a", "b"]), "a and b");
        assert_eq!(words_list(&["a", "b", "c"]), "a, b and c");
    }
}
