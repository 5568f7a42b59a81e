//! One sample of the model as nvidia-smi prints a query: the GPUs `-i` selects, the columns
//! (with a host column when several hosts show), the rows of `--query-gpu` and
//! `--query-compute-apps`, `-L`; and the field tables docs/query.md shows.

use std::time::SystemTime;

use super::csv::{self, Column, Format};
use super::gpu_fields::{self, Ctx, Get, GpuField};
use super::{AppField, Request, What, app_fields, ids, list};
use crate::model::Model;
use crate::reading::GpuReading;

/// One sample as nvidia-smi prints it; `header` says whether this block carries the header
/// (the first of a loop). `Err` when `-i` names no GPU.
pub fn render(
    req: &Request,
    model: &Model,
    offset: chrono::FixedOffset,
    header: bool,
) -> Result<String, String> {
    let gpus = ids::selected(req.ids.as_deref(), model.gpus())?;
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
    let named = fields.iter().map(|x| column(x.name, x.unit));
    let rows = gpus.iter().map(|g| {
        let values = fields.iter().map(|x| match x.get {
            Get::Table(key, shown) => gpu_fields::shown(key, shown, g),
            Get::Other(get) => get(ctx, g),
        });
        (*g, values.collect())
    });
    table(named, hosts, f, rows)
}

fn app_rows(
    ctx: &Ctx,
    gpus: &[&GpuReading],
    fields: &[&AppField],
    hosts: bool,
    f: Format,
) -> String {
    let named = fields.iter().map(|x| column(x.name, x.unit));
    let procs = &ctx.model.procs().all;
    let rows = gpus.iter().flat_map(|g| {
        let on_it = procs
            .iter()
            .filter(|r| r.key.gpu == g.id && app_fields::listed(r));
        on_it.map(|r| (*g, fields.iter().map(|x| (x.get)(ctx, r, g)).collect()))
    });
    table(named, hosts, f, rows)
}

fn column(name: &'static str, unit: Option<&'static str>) -> Column {
    Column { name, unit }
}

/// The header (unless `noheader`) and one line per row of values, each led by its GPU's
/// host when the host column is there.
fn table<'a>(
    named: impl Iterator<Item = Column>,
    hosts: bool,
    f: Format,
    rows: impl Iterator<Item = (&'a GpuReading, Vec<Option<String>>)>,
) -> String {
    let (cols, host) = columns(named, hosts);
    let mut out = if f.header {
        csv::header(&cols, f)
    } else {
        String::new()
    };
    for (g, values) in rows {
        let mut cells: Vec<Option<String>> = Vec::with_capacity(cols.len());
        if host {
            cells.push(g.host.clone());
        }
        cells.extend(values);
        out += &csv::row(&cols, &cells, f);
    }
    out
}

/// The fields as docs/query.md lists them (a test keeps the two the same): one Markdown
/// table per query, with aliases, unit and meaning.
pub fn markdown_tables() -> String {
    let row = |name: &str, aliases: &[&str], unit: Option<&str>, help: &str| {
        let aliases: Vec<String> = aliases.iter().map(|a| format!("`{a}`")).collect();
        format!(
            "| `{name}` | {} | {} | {help} |\n",
            aliases.join(", "),
            unit.unwrap_or("")
        )
    };
    let head = "| field | aliases | unit | what |\n|---|---|---|---|\n";
    let mut out = format!("### --query-gpu\n\n{head}");
    for f in gpu_fields::GPU_FIELDS {
        out += &row(f.name, f.aliases, f.unit, f.help);
    }
    out += &format!("\n### --query-compute-apps\n\n{head}");
    for f in app_fields::APP_FIELDS {
        out += &row(f.name, f.aliases, f.unit, f.help);
    }
    out
}
