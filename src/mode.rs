//! What this run does, decided once from the command line and the resolved settings: a
//! subcommand that needs no settings (completions, man, config), or a mode with its request
//! parsed and checked. `main` resolves the mode and dispatches on it once; the modes take
//! resolved settings and requests, never raw flags. Errors are one line, exit 2.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::cli::{Cli, Command, ConfigCommand, PickArgs, PickFormat, WaitArgs};
use crate::config::{self, Env, Settings, SettingsError, parse_duration};
use crate::pick::{self, Criteria};
use crate::reading::device_list::parse_gpu_list;
use crate::units::Bytes;

/// Every way gpuwatch can run.
#[derive(Debug)]
pub enum Mode {
    /// `gpuwatch completions SHELL`.
    Completions(clap_complete::Shell),
    /// `gpuwatch man [--dir DIR]`.
    Man(Option<PathBuf>),
    /// `gpuwatch config init|check`: before the file is read, so `init --force` can replace
    /// a broken one.
    Config(ConfigCommand),
    /// `gpuwatch alert test`.
    AlertTest(Settings),
    /// `gpuwatch serve`: the exporter, on its own runtime.
    Serve(Settings),
    /// The modes that sample GPUs here and end on their own terms.
    Watch(Settings, Watch),
}

/// The sampling modes `launch::run` runs.
#[derive(Debug)]
pub enum Watch {
    /// The TUI (live, or a recording with `gpuwatch replay`).
    Monitor,
    /// `--once`: one snapshot as text or JSON.
    Once {
        json: bool,
    },
    Pick(pick::Request),
    Wait(crate::wait::Request),
    Query(crate::query::Request),
}

impl Mode {
    /// Decides the mode. `vars` is the process environment (names and raw values), checked
    /// for unknown `GPUWATCH_*` names and values that are not UTF-8 before anything reads
    /// it; `env` looks variables up; `stdout_is_tty` implies `--once` when false.
    pub fn resolve(
        cli: &Cli,
        env: Env,
        vars: Vec<(OsString, OsString)>,
        stdout_is_tty: bool,
    ) -> Result<Mode, SettingsError> {
        match &cli.command {
            Some(Command::Completions { shell }) => return Ok(Mode::Completions(*shell)),
            Some(Command::Man { dir }) => return Ok(Mode::Man(dir.clone())),
            _ => {}
        }
        // Names first (a value that is not UTF-8 must not stop us here); checked before the
        // config subcommands too, since a misspelt GPUWATCH_CONFIG would send them elsewhere.
        let names = vars.iter().map(|(n, _)| n.to_string_lossy().into_owned());
        config::check_env_names(names)?;
        // Values next: one that is not UTF-8 would read as unset and be ignored without a word.
        config::check_env_values(vars)?;
        if let Some(Command::Config { action }) = &cli.command {
            return Ok(Mode::Config(action.clone()));
        }
        let settings = Settings::resolve(cli, env, stdout_is_tty)?;
        let watch = match &cli.command {
            Some(Command::Alert { .. }) => return Ok(Mode::AlertTest(settings)),
            Some(Command::Serve(_)) => return Ok(Mode::Serve(settings)),
            Some(Command::Pick(args)) => Watch::Pick(pick_request(args, env)?),
            Some(Command::Wait(args)) => Watch::Wait(wait_request(args)?),
            Some(Command::Query(args)) => Watch::Query(
                crate::query::request(args)
                    .map_err(|(flag, why)| SettingsError::new(flag.into(), why, None))?,
            ),
            _ if settings.once => Watch::Once {
                json: settings.json,
            },
            _ => Watch::Monitor,
        };
        Ok(Mode::Watch(settings, watch))
    }
}

impl Watch {
    /// Whether the demo fleet opens mid-story (the monitor and one-shot output: full charts
    /// at once) or from its first second (`pick` answers about now, and its tests count from
    /// the start; `serve` too, which is not a `Watch`).
    pub fn opens_mid_story(&self) -> bool {
        !matches!(self, Watch::Pick(_))
    }
}

/// `pick`'s flags, and the inherited `CUDA_VISIBLE_DEVICES` from `env` (it is not a
/// gpuwatch setting, so only the environment gives it: the caller's allocation).
fn pick_request(args: &PickArgs, env: Env) -> Result<pick::Request, SettingsError> {
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
            text.parse::<Bytes>()
                .map_err(|why| SettingsError::new("--min-free".into(), why, None))?,
        ),
        None => None,
    };
    let timeout = match &args.timeout {
        Some(text) if !args.wait => {
            return Err(flag_error(
                "timeout",
                text,
                "only means something with --wait",
            ));
        }
        Some(text) => match parse_duration(text) {
            Ok(d) if d.is_zero() => return Err(flag_error("timeout", text, "must be more than 0")),
            Ok(d) => Some(d),
            Err(why) => return Err(flag_error("timeout", text, &why)),
        },
        None => None,
    };
    let inherited = match env(pick::visible::VAR) {
        Some(raw) => Some(
            pick::visible::Inherited::parse(&raw, env(pick::visible::ORDER_VAR).as_deref())
                .map_err(|why| {
                    SettingsError::new(pick::visible::VAR.into(), why, Some(format!("{raw:?}")))
                })?,
        ),
        None => None,
    };
    Ok(pick::Request {
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
        inherited,
        wait: args.wait,
        timeout,
        verbose: args.verbose,
        ignore_kubelet: args.ignore_kubelet,
    })
}

/// `gpuwatch wait`'s flags: `--released PID` or `--gpu N --free`, and `--timeout`.
fn wait_request(args: &WaitArgs) -> Result<crate::wait::Request, SettingsError> {
    use crate::wait::Target;
    let target = match (args.released, &args.gpu, args.free) {
        (Some(pid), None, false) => Target::Released(pid),
        (None, Some(gpu), true) => Target::Free(
            parse_gpu_list(gpu)
                .ok()
                .filter(|l| l.len() == 1)
                .and_then(|mut l| l.pop())
                .ok_or_else(|| flag_error("gpu", gpu, "must name one GPU, by index or UUID"))?,
        ),
        (None, Some(gpu), false) => {
            return Err(flag_error(
                "gpu",
                gpu,
                "needs --free (wait until nothing holds it)",
            ));
        }
        _ => {
            return Err(SettingsError::new(
                "gpuwatch wait".into(),
                "needs either --released PID or --gpu N --free".into(),
                None,
            ));
        }
    };
    let timeout = match &args.timeout {
        Some(text) => match parse_duration(text) {
            Ok(d) if d.is_zero() => return Err(flag_error("timeout", text, "must be more than 0")),
            Ok(d) => Some(d),
            Err(why) => return Err(flag_error("timeout", text, &why)),
        },
        None => None,
    };
    Ok(crate::wait::Request { target, timeout })
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
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    #[test]
    fn pick_takes_the_inherited_cuda_visible_devices_from_the_injected_env() {
        use crate::reading::device_list::GpuSelector;
        let pick = |vars: &[(&str, &str)], args: &[&str]| -> Result<pick::Request, SettingsError> {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let env =
                move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let mut argv = vec!["gpuwatch", "pick"];
            argv.extend_from_slice(args);
            match Mode::resolve(&Cli::parse_from(argv), &env, Vec::new(), true)? {
                Mode::Watch(_, Watch::Pick(p)) => Ok(p),
                _ => panic!("not a pick"),
            }
        };
        let p = pick(&[], &[]).unwrap();
        assert_eq!(
            (p.inherited, p.wait, p.timeout, p.verbose),
            (None, false, None, false)
        );
        let p = pick(
            &[
                ("CUDA_VISIBLE_DEVICES", "2,GPU-AB"),
                ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
            ],
            &["--wait", "--timeout", "10m", "-v"],
        )
        .unwrap();
        let inherited = p.inherited.unwrap();
        assert_eq!(
            inherited.devices,
            [GpuSelector::Index(2), GpuSelector::Uuid("ab".into())]
        );
        assert!(inherited.pci_order);
        assert_eq!(p.timeout, Some(Duration::from_secs(600)));
        assert!(p.wait && p.verbose);
        let err = pick(&[("CUDA_VISIBLE_DEVICES", "0,gpu")], &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "CUDA_VISIBLE_DEVICES: \"gpu\" is neither a GPU index nor a GPU UUID like GPU-8932f937 \
             (got \"0,gpu\")"
        );
        // Only `pick` reads it: the monitor shows every GPU whatever the job may use.
        let s = Mode::resolve(
            &Cli::parse_from(["gpuwatch"]),
            &|n: &str| (n == "CUDA_VISIBLE_DEVICES").then(|| "x".to_string()),
            Vec::new(),
            true,
        );
        assert!(s.is_ok());
    }

    #[test]
    fn bad_pick_and_wait_flags_name_their_flag() {
        for (args, flag) in [
            (&["pick", "-n", "0"][..], "--count"),
            (&["pick", "--max-util", "101"][..], "--max-util"),
            (&["pick", "--min-free", "some"][..], "--min-free"),
            (&["pick", "--timeout", "1s"][..], "--timeout"),
            (&["pick", "--wait", "--timeout", "0s"][..], "--timeout"),
            (&["wait", "--gpu", "0"][..], "--gpu"),
            (
                &["wait", "--released", "1", "--timeout", "0s"][..],
                "--timeout",
            ),
        ] {
            let mut argv = vec!["gpuwatch"];
            argv.extend_from_slice(args);
            let err = Mode::resolve(&Cli::parse_from(argv), &|_| None, Vec::new(), true)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(&format!("{flag}: ")), "{args:?}: {err}");
        }
    }

    #[test]
    fn each_command_line_gets_its_mode() {
        let mode = |args: &[&str], tty: bool| {
            let mut argv = vec!["gpuwatch"];
            argv.extend_from_slice(args);
            Mode::resolve(&Cli::parse_from(argv), &|_| None, Vec::new(), tty).unwrap()
        };
        assert!(matches!(mode(&[], true), Mode::Watch(_, Watch::Monitor)));
        assert!(matches!(
            mode(&[], false),
            Mode::Watch(_, Watch::Once { json: false })
        ));
        assert!(matches!(
            mode(&["--json"], true),
            Mode::Watch(_, Watch::Once { json: true })
        ));
        assert!(matches!(mode(&["serve"], true), Mode::Serve(_)));
        assert!(matches!(mode(&["alert", "test"], true), Mode::AlertTest(_)));
        assert!(matches!(mode(&["config", "check"], true), Mode::Config(_)));
        assert!(matches!(mode(&["man"], true), Mode::Man(None)));
        assert!(matches!(
            mode(&["wait", "--released", "1"], true),
            Mode::Watch(_, Watch::Wait(_))
        ));
        assert!(matches!(
            mode(&["query", "-L"], true),
            Mode::Watch(_, Watch::Query(_))
        ));
        // A pick is a pick even where stdout is not a terminal (`export $(gpuwatch pick)`).
        assert!(matches!(
            mode(&["pick"], false),
            Mode::Watch(_, Watch::Pick(_))
        ));
    }

    #[test]
    fn unknown_variables_stop_every_mode_but_completions_and_man() {
        let vars = vec![(OsString::from("GPUWATCH_LISTNE"), OsString::from("x"))];
        let mode = |args: &[&str]| {
            let mut argv = vec!["gpuwatch"];
            argv.extend_from_slice(args);
            Mode::resolve(&Cli::parse_from(argv), &|_| None, vars.clone(), true)
        };
        assert!(mode(&["completions", "bash"]).is_ok());
        assert!(mode(&["man"]).is_ok());
        for args in [&["config", "check"][..], &[], &["serve"], &["pick"]] {
            assert_eq!(
                mode(args).unwrap_err().to_string(),
                "GPUWATCH_LISTNE: unknown setting; did you mean GPUWATCH_LISTEN?"
            );
        }
    }
}
