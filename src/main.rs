//! The binary: CLI → Settings → source → TUI or headless mode. Nothing else lives here.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use color_eyre::eyre::Result;

use gpuwatch::app::{self, Exit};
use gpuwatch::cli::{Cli, SourceKind};
use gpuwatch::config::Settings;
use gpuwatch::headless;
use gpuwatch::source::GpuSource;
use gpuwatch::source::nvml::NvmlSource;
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::ViewConfig;

/// Exit code for bad input or an unusable GPU source (as opposed to 1 for runtime errors).
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let no_color = std::env::var("NO_COLOR").ok();
    let settings =
        match Settings::resolve(&cli, no_color.as_deref(), std::io::stdout().is_terminal()) {
            Ok(s) => s,
            Err(e) => return fail(&e, EXIT_USAGE),
        };
    let source = match build_source(&settings) {
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
    match runtime.block_on(run(source, &settings)) {
        Ok(Exit::Quit) => ExitCode::SUCCESS,
        Ok(Exit::Signal(n)) => ExitCode::from(128 + n as u8),
        Err(e) => fail(&format!("{e:#}"), 1),
    }
}

fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuwatch: {e}");
    ExitCode::from(code)
}

fn build_source(settings: &Settings) -> Result<Box<dyn GpuSource>, String> {
    let demo = || -> Box<dyn GpuSource> {
        Box::new(SimSource::new(
            settings.demo_gpus,
            settings.seed,
            settings.interval,
            SimClock::Real,
        ))
    };
    match settings.source {
        SourceKind::Demo => Ok(demo()),
        SourceKind::Nvml => NvmlSource::open(settings.nvml_lib.as_deref())
            .map(|s| Box::new(s) as Box<dyn GpuSource>)
            .map_err(|e| e.to_string()),
        SourceKind::Auto => Ok(match NvmlSource::open(settings.nvml_lib.as_deref()) {
            Ok(s) => Box::new(s),
            Err(e) => {
                eprintln!("gpuwatch: {e}");
                eprintln!("gpuwatch: no usable NVIDIA GPU here; showing the simulated demo fleet");
                demo()
            }
        }),
    }
}

async fn run(source: Box<dyn GpuSource>, settings: &Settings) -> Result<Exit> {
    let config = ViewConfig {
        interval: settings.interval,
        history_len: settings.history_len(),
        thresholds: settings.thresholds.clone(),
        current_user: uzers::get_current_username().map(|u| u.to_string_lossy().into_owned()),
        utc_offset: *chrono::Local::now().offset(),
        theme: if settings.color {
            gpuwatch::ui::theme::ThemeName::Dark
        } else {
            gpuwatch::ui::theme::ThemeName::Mono
        },
        ..ViewConfig::default()
    };
    if settings.once {
        let state = headless::snapshot(source, config).await?;
        let text = if settings.json {
            headless::render_json(&state)
        } else {
            headless::render_text(&state)
        };
        print!("{text}");
        return Ok(Exit::Quit);
    }
    let options = app::Options {
        compact: settings.compact,
        panic_after_samples: settings.debug_panic_after,
    };
    app::run(source, config, options).await
}
