//! `gpuwatch query`: nvidia-smi's query interface (`--query-gpu`, `--query-compute-apps`,
//! `--format=csv…`, `-L`, `-i`, `-l`/`-lms`, `-f`) over every source gpuwatch has. Parses the
//! request (`request`), renders one sample of the model as nvidia-smi would (`render`), and
//! runs once or in a loop (`run`) on the sampler; the field catalogues, the CSV shape, `-L`
//! and the nvidia-smi-style argv rewrite are its submodules. Never draws, never reads flags
//! other than its own.

pub mod app_fields;
pub mod argv;
pub mod csv;
pub mod gpu_fields;
mod ids;
mod list;
mod render;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use color_eyre::eyre::{Result, WrapErr, eyre};

use crate::cli::QueryArgs;
use crate::reading::Sample;
use crate::sampler::{self, SamplerEvent};
use crate::source::GpuSource;
use crate::state::{Msg, State, ViewConfig, update};
use app_fields::{AppField, app_field};
use csv::Format;
use gpu_fields::{GpuField, gpu_field};

/// The shortest loop: the sampler's floor (`--interval`'s minimum).
const MIN_LOOP: Duration = Duration::from_millis(100);

/// What to print.
#[derive(Clone)]
pub enum What {
    Gpus(Vec<&'static GpuField>),
    Apps(Vec<&'static AppField>),
    /// `-L`.
    List,
}

pub use ids::Id;
pub use render::{markdown_tables, render};

/// A query, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub what: What,
    pub format: Format,
    pub ids: Option<Vec<Id>>,
    /// `-l`/`-lms`: print a block per sample this often until stopped.
    pub every: Option<Duration>,
    pub file: Option<PathBuf>,
}

impl What {
    /// The fields' names (what tells two requests apart).
    fn names(&self) -> Vec<&'static str> {
        match self {
            What::Gpus(f) => f.iter().map(|x| x.name).collect(),
            What::Apps(f) => f.iter().map(|x| x.name).collect(),
            What::List => vec!["-L"],
        }
    }
}

impl std::fmt::Debug for What {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for What {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.names() == other.names()
    }
}

/// Checks `gpuwatch query`'s flags: `Err((flag, why))` for the one that is wrong.
pub fn request(args: &QueryArgs) -> Result<Request, (&'static str, String)> {
    let what = match (&args.query_gpu, &args.query_compute_apps, args.list_gpus) {
        (Some(list), None, false) => What::Gpus(fields(list, gpu_field, "--query-gpu")?),
        (None, Some(list), false) => What::Apps(fields(list, app_field, "--query-compute-apps")?),
        (None, None, true) => What::List,
        (None, None, false) => {
            return Err((
                "query",
                "say what to print: --query-gpu=FIELDS, --query-compute-apps=FIELDS or -L".into(),
            ));
        }
        _ => {
            return Err((
                "query",
                "only one of --query-gpu, --query-compute-apps and -L at a time".into(),
            ));
        }
    };
    let format = match &args.format {
        Some(text) => Format::parse(text).map_err(|why| ("--format", why))?,
        None => Format::CSV,
    };
    let ids = args
        .id
        .as_deref()
        .map(ids::parse_ids)
        .transpose()
        .map_err(|why| ("--id", why))?;
    Ok(Request {
        what,
        format,
        ids,
        every: every(args)?,
        file: args.filename.clone(),
    })
}

/// `-l SEC` or `-lms MS`.
fn every(args: &QueryArgs) -> Result<Option<Duration>, (&'static str, String)> {
    let parse = |flag: &'static str, text: &str, unit: Duration| {
        let n: u32 = text
            .trim()
            .parse()
            .map_err(|_| (flag, format!("{text:?} is not a whole number")))?;
        let d = unit * n;
        if d < MIN_LOOP {
            return Err((flag, format!("must be at least 100ms (got {text:?})")));
        }
        Ok(d)
    };
    match (&args.loop_sec, &args.loop_ms) {
        (Some(_), Some(_)) => Err(("--loop", "not with --loop-ms (pick one)".into())),
        (Some(s), None) => parse("--loop", s, Duration::from_secs(1)).map(Some),
        (None, Some(ms)) => parse("--loop-ms", ms, Duration::from_millis(1)).map(Some),
        (None, None) => Ok(None),
    }
}

/// The fields a comma list names, in order, as nvidia-smi refuses an unknown one.
fn fields<F: 'static>(
    list: &str,
    find: fn(&str) -> Option<&'static F>,
    flag: &'static str,
) -> Result<Vec<&'static F>, (&'static str, String)> {
    let names = list.split(',').map(str::trim);
    names
        .map(|name| {
            find(name).ok_or_else(|| {
                let known = if flag == "--query-gpu" {
                    gpu_fields::GPU_FIELDS
                        .iter()
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                } else {
                    app_fields::APP_FIELDS.iter().map(|f| f.name).collect()
                };
                let why = format!(
                    "Field \"{name}\" is not a valid field to query (supported: {})",
                    known.join(",")
                );
                (flag, why)
            })
        })
        .collect()
}

/// Where the output goes: stdout, or `-f FILE` (created or truncated, as nvidia-smi does).
fn output(file: Option<&PathBuf>) -> Result<Box<dyn Write>> {
    Ok(match file {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .wrap_err_with(|| format!("-f: cannot write {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout()),
    })
}

/// Runs the query: one sample, or a block per sample every `-l`/`-lms` until SIGINT or
/// SIGTERM (exit 128+n, as `pick --wait` does). Exit 2 when `-i` names no GPU; 1 when a
/// remote host did not answer (said on stderr, as `--once` does).
pub async fn run(
    req: &Request,
    source: Box<dyn GpuSource>,
    mut config: ViewConfig,
    prelude: Vec<Sample>,
) -> Result<ExitCode> {
    let offset = config.utc_offset;
    let mut out = output(req.file.as_ref())?;
    let Some(every) = req.every else {
        let state = crate::headless::snapshot_after(source, config, prelude, None).await?;
        return print_once(req, &state, offset, &mut out);
    };
    config.interval = every;
    let mut stop = std::pin::pin!(crate::launch::stop_signal()?);
    let (tx, mut rx) = sampler::channel();
    let task = tokio::spawn(sampler::run(source, every, tx));
    let mut state = State::new(config);
    for sample in prelude {
        update(&mut state, Msg::Sample(Box::new(sample)));
    }
    let mut first = true;
    let code = loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            signal = &mut stop => break ExitCode::from(128 + signal),
        };
        match event {
            Some(SamplerEvent::Sample(sample)) => {
                update(&mut state, Msg::Sample(sample));
                let block = match render(req, &state.model, offset, first) {
                    Ok(b) => b,
                    Err(why) => break usage(&why),
                };
                out.write_all(block.as_bytes())?;
                out.flush()?;
                first = false;
            }
            Some(SamplerEvent::Failed(why)) => eprintln!("gpuwatch: reading GPUs failed: {why}"),
            Some(SamplerEvent::Notice(text)) => {
                eprintln!("gpuwatch: {}", crate::text_safe::escape(&text));
            }
            Some(SamplerEvent::Stalled(_)) => {}
            None => break ExitCode::from(1),
        }
    };
    drop(rx);
    task.abort();
    Ok(code)
}

fn print_once(
    req: &Request,
    state: &State,
    offset: chrono::FixedOffset,
    out: &mut dyn Write,
) -> Result<ExitCode> {
    let block = match render(req, &state.model, offset, true) {
        Ok(b) => b,
        Err(why) => return Ok(usage(&why)),
    };
    out.write_all(block.as_bytes())?;
    out.flush().map_err(|e| eyre!(e))?;
    let down = crate::launch::hosts_down(state);
    for why in &down {
        eprintln!("gpuwatch: {}", crate::text_safe::escape(why));
    }
    Ok(if down.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `-i` that selects nothing: bad input, exit 2.
fn usage(why: &str) -> ExitCode {
    eprintln!("gpuwatch: --id: {}", crate::text_safe::escape(why));
    ExitCode::from(2)
}

#[cfg(test)]
mod tests;
