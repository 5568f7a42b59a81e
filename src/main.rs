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
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
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
        Some(Command::Pick(_)) | None => {}
    }
    let settings =
        match Settings::resolve(&cli, &config::process_env, std::io::stdout().is_terminal()) {
            Ok(s) => s,
            Err(e) => return fail(&e, EXIT_USAGE),
        };
    let (source, demo) = match build_source(&settings) {
        Ok(s) => s,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
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
    match runtime.block_on(run(source, demo, &settings)) {
        Ok(code) => code,
        Err(e) => fail(&format!("{e:#}"), 1),
    }
}

fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuwatch: {e}");
    ExitCode::from(code)
}

/// The source, and whether it is the simulated fleet (whose processes cannot be signalled).
fn build_source(settings: &Settings) -> Result<(Box<dyn GpuSource>, bool), String> {
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
        theme: settings.theme,
        readonly: settings.readonly,
        columns: settings.columns.clone(),
        sort: settings.sort,
        sort_dir: settings.sort_dir,
        only: settings.only.clone(),
    }
}

async fn run(source: Box<dyn GpuSource>, demo: bool, settings: &Settings) -> Result<ExitCode> {
    let config = view_config(settings);
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
        demo,
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
