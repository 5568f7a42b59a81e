//! The binary: CLI → Settings → source → TUI, a headless mode or a subcommand. Nothing
//! else lives here.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use color_eyre::eyre::Result;

use gpuwatch::app::{self, Exit};
use gpuwatch::cli::{Cli, Command, SourceKind};
use gpuwatch::config::{self, PickRequest, Settings};
use gpuwatch::headless;
use gpuwatch::pick;
use gpuwatch::record::{self, RecordingSource};
use gpuwatch::source::GpuSource;
use gpuwatch::source::multi::MultiSource;
use gpuwatch::source::nvml::NvmlSource;
use gpuwatch::source::remote;
use gpuwatch::source::replay::{ReplayHandle, ReplaySource};
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::ViewConfig;

/// Exit code for bad input or an unusable GPU source (as opposed to 1 for runtime errors).
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Subcommands that work on the config file or print scripts run before the file is
    // read, so `config init --force` can replace a broken file.
    match &cli.command {
        Some(Command::Config { action }) => {
            return match config::run_config_command(action, &cli, &config::process_env) {
                Ok(line) => {
                    println!("{line}");
                    ExitCode::SUCCESS
                }
                Err((why, code)) => fail(&why, code),
            };
        }
        Some(Command::Completions { shell }) => {
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "gpuwatch",
                &mut std::io::stdout(),
            );
            return ExitCode::SUCCESS;
        }
        Some(Command::Pick(_) | Command::Replay { .. } | Command::Serve(_)) | None => {}
    }
    let settings =
        match Settings::resolve(&cli, &config::process_env, std::io::stdout().is_terminal()) {
            Ok(s) => s,
            Err(e) => return fail(&e, EXIT_USAGE),
        };
    let built = match build_source(&cli, &settings) {
        Ok(s) => s,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
    if let Some(Command::Serve(args)) = &cli.command {
        return gpuwatch::serve::main(args, built.source, view_config(&settings));
    }
    if let Err(e) = color_eyre::install() {
        return fail(&e, 1);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&e, 1),
    };
    match runtime.block_on(run(built, &settings)) {
        Ok(code) => code,
        Err(e) => fail(&format!("{e:#}"), 1),
    }
}

fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuwatch: {e}");
    ExitCode::from(code)
}

/// The source and what the TUI needs to know about it.
struct Built {
    source: Box<dyn GpuSource>,
    /// The simulated fleet: its processes cannot be signalled.
    demo: bool,
    /// Time between samples (a replay goes at its recording's pace).
    interval: std::time::Duration,
    replay: Option<(ReplayHandle, i64)>,
    /// Something to say on the status line at start (e.g. skipped recording lines).
    notice: Option<String>,
}

fn build_source(cli: &Cli, settings: &Settings) -> Result<Built, String> {
    let remotes = remote_addresses(cli)?;
    let mut built = match &cli.command {
        Some(Command::Replay { file }) => replay_source(file)?,
        _ if !remotes.is_empty() => {
            let local = if cli.with_local {
                let (source, _) = live_source(settings)?;
                Some((gpuwatch::source::hostname(), source))
            } else {
                None
            };
            let multi = MultiSource::new(local, &remotes, settings.interval);
            // Remote processes are never signalled (the rule lives in state::signal); local
            // ones are, so the local source decides.
            let demo = cli.with_local && settings.source == SourceKind::Demo;
            Built {
                source: Box::new(multi),
                demo,
                interval: settings.interval,
                replay: None,
                notice: None,
            }
        }
        _ => {
            let (source, demo) = live_source(settings)?;
            // With --source auto the fallback must be obvious on screen, not just on stderr.
            let notice = (demo && settings.source == SourceKind::Auto)
                .then(|| "no usable NVIDIA GPU here: showing the simulated demo fleet".to_string());
            Built {
                source,
                demo,
                interval: settings.interval,
                replay: None,
                notice,
            }
        }
    };
    if let Some(path) = &cli.record {
        let max = cli
            .record_max_size
            .as_deref()
            .map(|s| {
                pick::parse_size(s)
                    .map(|b| b.0)
                    .map_err(|e| format!("--record-max-size: {e}"))
            })
            .transpose()?;
        let inner = std::mem::replace(&mut built.source, Box::new(NoSource));
        built.source = Box::new(RecordingSource::new(inner, path, built.interval, max)?);
    }
    Ok(built)
}

/// `--remote` and `--hosts-file` together, checked.
fn remote_addresses(cli: &Cli) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if let Some(list) = &cli.remote {
        for entry in list.split(',') {
            out.push(remote::parse_address(entry).map_err(|e| format!("--remote: {e}"))?);
        }
    }
    if let Some(path) = &cli.hosts_file {
        out.extend(remote::read_hosts_file(path)?);
    }
    if cli.with_local && out.is_empty() {
        return Err("--with-local: only with --remote or --hosts-file".into());
    }
    Ok(out)
}

/// A placeholder while a source is moved into a wrapper; never sampled.
struct NoSource;

impl GpuSource for NoSource {
    fn sample(&mut self) -> Result<gpuwatch::source::Sample, gpuwatch::source::SourceError> {
        Err(gpuwatch::source::SourceError::Unavailable(
            "no source".into(),
        ))
    }
}

fn replay_source(file: &std::path::Path) -> Result<Built, String> {
    let recording = record::read(file)?;
    let interval = recording.header.interval();
    let notice = (!recording.skipped.is_empty()).then(|| {
        let (line, why) = &recording.skipped[0];
        format!(
            "{}: skipped {} unreadable line(s), first at line {line}: {why}",
            file.display(),
            recording.skipped.len()
        )
    });
    if let Some(n) = &notice {
        eprintln!("gpuwatch: {n}");
    }
    let (source, handle) = ReplaySource::new(recording);
    let seek = ReplaySource::samples_per(interval, std::time::Duration::from_secs(30));
    Ok(Built {
        source: Box::new(source),
        demo: true,
        interval,
        replay: Some((handle, seek)),
        notice,
    })
}

/// The source for live monitoring, and whether it is the simulated fleet.
fn live_source(settings: &Settings) -> Result<(Box<dyn GpuSource>, bool), String> {
    let demo = || -> (Box<dyn GpuSource>, bool) {
        let sim = SimSource::new(
            settings.demo_gpus,
            settings.seed,
            settings.interval,
            SimClock::Real,
        );
        (Box::new(sim), true)
    };
    let nvml = || NvmlSource::open(settings.nvml_lib.as_deref());
    match settings.source {
        SourceKind::Demo => Ok(demo()),
        SourceKind::Nvml => nvml()
            .map(|s| (Box::new(s) as Box<dyn GpuSource>, false))
            .map_err(|e| e.to_string()),
        SourceKind::Auto => Ok(match nvml() {
            Ok(s) => (Box::new(s), false),
            Err(e) => {
                eprintln!("gpuwatch: {e}");
                eprintln!("gpuwatch: no usable NVIDIA GPU here; showing the simulated demo fleet");
                demo()
            }
        }),
    }
}

fn view_config(settings: &Settings) -> ViewConfig {
    ViewConfig {
        interval: settings.interval,
        history_len: settings.history_len(),
        thresholds: settings.thresholds.clone(),
        current_user: uzers::get_current_username().map(|u| u.to_string_lossy().into_owned()),
        current_uid: Some(uzers::get_current_uid()),
        utc_offset: *chrono::Local::now().offset(),
        readonly: settings.readonly,
        columns: settings.columns.clone(),
        sort: settings.sort,
        sort_dir: settings.sort_dir,
        only: settings.only.clone(),
    }
}

async fn run(built: Built, settings: &Settings) -> Result<ExitCode> {
    let mut config = view_config(settings);
    config.interval = built.interval;
    config.history_len = (settings.history.as_secs_f64() / built.interval.as_secs_f64())
        .ceil()
        .max(1.0) as usize;
    let source = built.source;
    if let Some(request) = &settings.pick {
        return pick(source, config, request).await;
    }
    if settings.once {
        let state = headless::snapshot(source, config).await?;
        let text = if settings.json {
            headless::render_json(&state)
        } else {
            headless::render_text(&state)
        };
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let options = app::Options {
        compact: settings.compact,
        panic_after_samples: settings.debug_panic_after,
        mouse: settings.mouse,
        demo: built.demo,
        seek_samples: built.replay.as_ref().map_or(0, |r| r.1),
        replay: built.replay.map(|r| r.0),
        notice: built.notice,
        theme: settings.theme,
    };
    Ok(match app::run(source, config, options).await? {
        Exit::Quit => ExitCode::SUCCESS,
        Exit::Signal(n) => ExitCode::from(128 + n as u8),
    })
}

/// `gpuwatch pick`: one snapshot, the chosen GPUs on stdout, or why not (exit 1).
async fn pick(
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    request: &PickRequest,
) -> Result<ExitCode> {
    let state = headless::snapshot(source, config).await?;
    Ok(match pick::choose(&state, &request.criteria) {
        Ok(chosen) => {
            println!("{}", pick::format(&chosen, request.format));
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("gpuwatch pick: {why}");
            ExitCode::from(1)
        }
    })
}
