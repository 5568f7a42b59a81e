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
mod list;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use color_eyre::eyre::{Result, WrapErr, eyre};

use crate::cli::QueryArgs;
use crate::model::Model;
use crate::sampler::{self, SamplerEvent};
use crate::select::GpuSelector;
use crate::source::{GpuReading, GpuSource, Sample};
use crate::state::{Msg, State, ViewConfig, update};
use app_fields::{AppField, app_field};
use csv::{Column, Format};
use gpu_fields::{Ctx, Get, GpuField, gpu_field};

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

/// One `-i` entry: an index or UUID (as `--only` takes them) or a PCI bus id.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    Gpu(GpuSelector),
    /// Lower-case, without the leading zeros of the domain (`0:17:00.0`).
    Bus(String),
}

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
        .map(parse_ids)
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

fn parse_ids(text: &str) -> Result<Vec<Id>, String> {
    text.split(',')
        .map(|entry| {
            let entry = entry.trim();
            if entry.contains(':') {
                Ok(Id::Bus(bus_key(entry)))
            } else {
                let mut one = crate::select::parse_gpu_list(entry)?;
                Ok(Id::Gpu(one.remove(0)))
            }
        })
        .collect()
}

/// A PCI bus id compared as nvidia-smi accepts it: any case, any width of domain
/// (`00000000:17:00.0`, `0000:17:00.0`, `17:00.0` all name the same GPU).
fn bus_key(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let mut parts: Vec<&str> = id.split(':').collect();
    if parts.len() == 2 {
        parts.insert(0, "0");
    }
    let domain = parts[0].trim_start_matches('0');
    let domain = if domain.is_empty() { "0" } else { domain };
    format!("{domain}:{}", parts[1..].join(":"))
}

impl Id {
    fn matches(&self, g: &GpuReading) -> bool {
        match self {
            Id::Gpu(s) => s.matches(g),
            Id::Bus(bus) => g.pci_bus_id.as_deref().map(bus_key).as_deref() == Some(bus),
        }
    }
}

/// The GPUs `-i` selects (all without it); `Err` names an entry that selects none.
fn selected<'a>(ids: Option<&[Id]>, gpus: &'a [GpuReading]) -> Result<Vec<&'a GpuReading>, String> {
    let Some(ids) = ids else {
        return Ok(gpus.iter().collect());
    };
    if let Some(missing) = ids.iter().find(|id| !gpus.iter().any(|g| id.matches(g))) {
        let name = match missing {
            Id::Gpu(s) => s.to_string(),
            Id::Bus(b) => b.clone(),
        };
        return Err(format!("{name} matches no GPU"));
    }
    Ok(gpus
        .iter()
        .filter(|g| ids.iter().any(|id| id.matches(g)))
        .collect())
}

/// One sample as nvidia-smi prints it; `header` says whether this block carries the header
/// (the first of a loop). `Err` when `-i` names no GPU.
pub fn render(
    req: &Request,
    model: &Model,
    offset: chrono::FixedOffset,
    header: bool,
) -> Result<String, String> {
    let gpus = selected(req.ids.as_deref(), model.gpus())?;
    let ctx = Ctx {
        model,
        time: model.now().unwrap_or_else(SystemTime::now),
        offset,
        count: gpus.len(),
    };
    // Several hosts' GPUs share indices: a script needs to know whose each row is.
    let hosts = {
        let mut h: Vec<&str> = gpus.iter().filter_map(|g| g.host.as_deref()).collect();
        h.sort_unstable();
        h.dedup();
        h.len()
    };
    let f = Format {
        header: req.format.header && header,
        ..req.format
    };
    Ok(match &req.what {
        What::List => list::render(&gpus, hosts > 1),
        What::Gpus(fields) => gpu_rows(&ctx, &gpus, fields, hosts > 1, f),
        What::Apps(fields) => app_rows(&ctx, &gpus, fields, hosts > 1, f),
    })
}

const HOST: Column = Column {
    name: "gpuwatch.host",
    unit: None,
};

/// The columns, with the host first when several hosts show and it was not asked for.
fn columns(named: impl Iterator<Item = Column>, with_host: bool) -> (Vec<Column>, bool) {
    let mut cols: Vec<Column> = named.collect();
    let add = with_host && !cols.contains(&HOST);
    if add {
        cols.insert(0, HOST);
    }
    (cols, add)
}

fn gpu_rows(
    ctx: &Ctx,
    gpus: &[&GpuReading],
    fields: &[&GpuField],
    hosts: bool,
    f: Format,
) -> String {
    let named = fields.iter().map(|x| Column {
        name: x.name,
        unit: x.unit,
    });
    let (cols, host) = columns(named, hosts);
    let mut out = if f.header {
        csv::header(&cols, f)
    } else {
        String::new()
    };
    for g in gpus {
        let mut values: Vec<Option<String>> = Vec::with_capacity(cols.len());
        if host {
            values.push(g.host.clone());
        }
        values.extend(fields.iter().map(|x| match x.get {
            Get::Table(key, shown) => gpu_fields::shown(key, shown, g),
            Get::Other(get) => get(ctx, g),
        }));
        out += &csv::row(&cols, &values, f);
    }
    out
}

fn app_rows(
    ctx: &Ctx,
    gpus: &[&GpuReading],
    fields: &[&AppField],
    hosts: bool,
    f: Format,
) -> String {
    let named = fields.iter().map(|x| Column {
        name: x.name,
        unit: x.unit,
    });
    let (cols, host) = columns(named, hosts);
    let mut out = if f.header {
        csv::header(&cols, f)
    } else {
        String::new()
    };
    for g in gpus {
        let rows = ctx.model.procs().all.iter();
        for r in rows.filter(|r| r.key.gpu == g.id && app_fields::listed(r)) {
            let mut values: Vec<Option<String>> = Vec::with_capacity(cols.len());
            if host {
                values.push(g.host.clone());
            }
            values.extend(fields.iter().map(|x| (x.get)(ctx, r, g)));
            out += &csv::row(&cols, &values, f);
        }
    }
    out
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
