//! The binary: parse the CLI, refuse unknown `GPUWATCH_*` variables, resolve `Settings`,
//! build the source (`launch`), and dispatch to the TUI, a headless mode or a subcommand.
//! Nothing else lives here.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::CommandFactory;

use gpuwatch::cli::{Cli, Command};
use gpuwatch::config::{self, Settings};
use gpuwatch::{launch, quiet_pipe};

/// Exit code for bad input or an unusable GPU source (as opposed to 1 for runtime errors).
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    // First, while this is the only thread: as a container's PID 1, become an init too.
    gpuwatch::init::reap_orphans_if_pid1();
    quiet_pipe::install();
    // nvidia-smi's query flags (`--query-gpu`, `-L`, `-i`, `-lms`) as the `query` subcommand's.
    let cli = gpuwatch::cli::parse_from(gpuwatch::query::argv::rewrite(
        std::env::args_os().collect(),
    ));
    if let Some(Command::Completions { shell }) = &cli.command {
        // Into memory first: clap_complete panics when its writer fails (`| head -1`).
        let mut script = Vec::new();
        clap_complete::generate(*shell, &mut Cli::command(), "gpuwatch", &mut script);
        return match quiet_pipe::write_stdout(&script) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("writing the completion script: {e}"), 1),
        };
    }
    if let Some(Command::Man { dir }) = &cli.command {
        return man_pages(dir.as_deref());
    }
    // Names only (a value that is not UTF-8 must not stop us here); checked before the
    // config subcommands too, since a misspelt GPUWATCH_CONFIG would send them elsewhere.
    let names = std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned());
    if let Err(e) = config::check_env_names(names) {
        return fail(&e, EXIT_USAGE);
    }
    // Values next: one that is not UTF-8 would read as unset and be ignored without a word.
    if let Err(e) = config::check_env_values(std::env::vars_os()) {
        return fail(&e, EXIT_USAGE);
    }
    // Subcommands on the config file run before the file is read, so `config init --force`
    // can replace a broken file.
    if let Some(Command::Config { action }) = &cli.command {
        return match config::run_config_command(action, &cli, &config::process_env) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err((why, code)) => fail(&why, code),
        };
    }
    let tty = std::io::stdout().is_terminal();
    let settings = match Settings::resolve(&cli, &config::process_env, tty) {
        Ok(s) => s,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
    if let Some(Command::Alert { .. }) = &cli.command {
        return alert_test(&settings);
    }
    let opening = if let Some(Command::Serve(_)) = &cli.command {
        launch::Opening::Fresh
    } else {
        launch::Opening::MidStory
    };
    let built = match launch::build(&settings, opening) {
        Ok(b) => b,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
    if let Some(Command::Serve(_)) = &cli.command {
        let view = launch::view_config(&settings, built.interval);
        return gpuwatch::serve::main(&settings.serve, &settings.alerts, built.source, view);
    }
    if let Err(e) = color_eyre::install() {
        return fail(&e, 1);
    }
    // color-eyre's hook replaced ours.
    quiet_pipe::install();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&e, 1),
    };
    let result = runtime.block_on(launch::run(built, &settings));
    // Quit must quit: a poll stuck in the driver would keep dropping the runtime waiting.
    runtime.shutdown_timeout(gpuwatch::sampler::ABANDON_AFTER);
    match result {
        Ok(code) => code,
        // The reader of our output had enough (`| head`): not an error.
        Err(e) if e.chain().any(quiet_pipe::is_broken_pipe) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("{e:#}"), 1),
    }
}

/// `gpuwatch man`: the manual page in roff on stdout, or with `--dir` every page (one per
/// subcommand too) as files; generated from the clap definitions so it cannot drift from
/// `--help`. No `help` subcommand: it would name a gpuwatch-help(1) page nobody installs.
fn man_pages(dir: Option<&std::path::Path>) -> ExitCode {
    let cmd = Cli::command().disable_help_subcommand(true);
    let written = match dir {
        Some(dir) => clap_mangen::generate_to(cmd, dir),
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout().lock()),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("man: cannot write the manual page: {e}"), 1),
    }
}

/// `gpuwatch alert test`: one line per sink; exit 1 when one failed, 2 when none is set.
fn alert_test(settings: &Settings) -> ExitCode {
    let host = gpuwatch::source::hostname();
    match gpuwatch::alerts::test::run(&settings.alerts, &host) {
        None => fail(
            &"alert test: no alert sink configured (use --alert-webhook, --alert-command or [alerts])",
            EXIT_USAGE,
        ),
        Some((lines, ok)) => {
            lines.iter().for_each(|l| println!("{l}"));
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn fail(e: &dyn std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("gpuwatch: {}", gpuwatch::text_safe::escape(&e.to_string()));
    ExitCode::from(code)
}
