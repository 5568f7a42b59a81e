//! The binary: parse the CLI, resolve the mode once (`mode::Mode`: the environment checked,
//! `Settings` resolved, the mode's request parsed), and dispatch on it once. Nothing else
//! lives here.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::CommandFactory;

use gpuwatch::cli::{Cli, ConfigCommand};
use gpuwatch::config::{self, Settings};
use gpuwatch::mode::{Mode, Watch};
use gpuwatch::{launch, quiet_pipe};

/// Exit code for bad input or an unusable GPU source (as opposed to 1 for runtime errors).
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    // First, while this is the only thread: as a container's PID 1, become an init too.
    gpuwatch::init::reap_orphans_if_pid1();
    gpuwatch::resident::keep_small();
    // Every mode: the exporter's connections and the /proc reader's kept files size
    // themselves to it.
    gpuwatch::fd_limit::raise_to_hard();
    quiet_pipe::install();
    // nvidia-smi's query flags (`--query-gpu`, `-L`, `-i`, `-lms`) as the `query` subcommand's.
    let cli = gpuwatch::cli::parse_from(gpuwatch::query::argv::rewrite(
        std::env::args_os().collect(),
    ));
    let tty = std::io::stdout().is_terminal();
    let vars = std::env::vars_os().collect();
    let mode = match Mode::resolve(&cli, &config::process_env, vars, tty) {
        Ok(mode) => mode,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
    match mode {
        Mode::Completions(shell) => completions(shell),
        Mode::Man(dir) => man_pages(dir.as_deref()),
        Mode::Config(action) => config_command(&action, &cli),
        Mode::AlertTest(settings) => alert_test(&settings),
        Mode::Serve(settings) => serve(&settings),
        Mode::Watch(settings, watch) => run_watch(&settings, &watch),
    }
}

/// `gpuwatch completions SHELL`.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    // Into memory first: clap_complete panics when its writer fails (`| head -1`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpuwatch", &mut script);
    match quiet_pipe::write_stdout(&script) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("writing the completion script: {e}"), 1),
    }
}

/// `gpuwatch config init|check`: a line on stdout, or why not on stderr.
fn config_command(action: &ConfigCommand, cli: &Cli) -> ExitCode {
    match config::run_config_command(action, cli, &config::process_env) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err((why, code)) => fail(&why, code),
    }
}

/// `gpuwatch serve`: the source from its first second; the exporter runs its own runtime.
fn serve(settings: &Settings) -> ExitCode {
    let built = match launch::build(settings, launch::Opening::Fresh) {
        Ok(b) => b,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
    let view = launch::view_config(settings, built.interval);
    gpuwatch::serve::main(&settings.serve, &settings.alerts, built.source, view)
}

/// The modes that sample on this thread's runtime: the TUI, `--once`, pick, wait, query.
fn run_watch(settings: &Settings, watch: &Watch) -> ExitCode {
    let opening = if watch.opens_mid_story() {
        launch::Opening::MidStory
    } else {
        launch::Opening::Fresh
    };
    let built = match launch::build(settings, opening) {
        Ok(b) => b,
        Err(e) => return fail(&e, EXIT_USAGE),
    };
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
    let result = runtime.block_on(launch::run(built, settings, watch));
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
