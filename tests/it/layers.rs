//! The layer rule (ARCHITECTURE.md, issue 21 §2): every top-level module of `src/` stands in
//! one place of an order, and production code imports only modules placed below its own.
//! An import that runs up fails here, naming the line, unless it is in `KNOWN_DEBT` with
//! the issue point that removes it; a debt entry whose import is gone fails too, so the
//! list only shrinks. Test code (`tests.rs`, `*_tests.rs`, a trailing `#[cfg(test)] mod`)
//! may reach up: a test of the field table may well write JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module by layer, top first, with why it stands there. A module may
/// import any module after it in this order, never one before it (within a layer too: the
/// order is total, so no cycle can hide inside a layer). `main.rs`, the binary, is above all.
/// The helpers stand above `wire`: the public format and the vocabulary touch no files.
// A table, one module a line: rustfmt would stack each pair over three lines.
#[rustfmt::skip]
const LAYERS: &[(&str, &[(&str, &str)])] = &[
    ("main", &[
        ("launch", "builds the source from Settings, starts one mode"),
        ("mode", "what this run does, decided once from the CLI and the settings"),
    ]),
    ("modes", &[
        ("query", "`gpuwatch query`: nvidia-smi's CSV over one sample; runs headless"),
        ("serve", "the exporter and JSON API; fires alerts"),
        ("app", "the TUI loop: samples, keys, signals, alerts, drawing"),
        ("pick", "`gpuwatch pick`: chooses free GPUs from the model"),
        ("wait", "`gpuwatch wait`: waits until GPUs are released"),
        ("headless", "`--once`, text or JSON"),
        ("alerts", "webhook alerts on warnings, run by the TUI and the exporter"),
        ("init", "`gpuwatch config init`: writes the template; imports nothing"),
    ]),
    ("settings", &[
        ("config", "the TOML file and the Settings every mode consumes"),
        ("cli", "clap's definitions, read by config"),
        ("alert_settings", "the alert settings' vocabulary: sinks, formats, rules; read by cli, config, alerts"),
    ]),
    ("app/ui", &[
        ("signals", "sends the signal a confirmed dialog asked for"),
        ("ui", "draws &State: styles and widgets around present's words"),
        ("keymap", "one table key → Action, for the loop and the help screen"),
        ("terminal", "the terminal's setup and byte encoding"),
    ]),
    ("state", &[
        ("state", "State, Msg, update(): imports nothing from ui"),
        ("layout", "pure geometry over the model, for drawing and hit-testing"),
    ]),
    ("present", &[
        ("present", "words, numbers and cells without ratatui, for the TUI and headless modes"),
    ]),
    ("model", &[
        ("model", "derived facts; writes itself into the wire document"),
    ]),
    ("sources", &[
        ("record", "a source wrapper that writes each sample to a recording"),
        ("sampler", "polls a source on the blocking pool, sends Samples"),
        ("source", "the GpuSource trait and the backends"),
        ("procinfo", "/proc facts and workload names, read by the NVML and DRM sources"),
        ("history", "one store of points per GPU and per process"),
    ]),
    ("helpers", &[
        ("http_client", "the one HTTP/1 client (TCP, TLS, unix sockets) for sources, engines, webhooks"),
        ("safe_file", "opens files without following links (config, record, sources)"),
        ("text_safe", "makes outside text safe to print"),
        ("quiet_pipe", "a closed stdout ends quietly"),
        ("fast_hash", "the hasher for maps keyed by PIDs and other numbers no outsider picks"),
        ("fd_limit", "the open-files limit: raised once in main, read by the exporter and /proc readers"),
        ("resident", "one malloc arena for every thread, set first thing in main; freed pages given back"),
    ]),
    ("wire", &[
        ("wire", "the public JSON document and the recording format, both ways"),
    ]),
    ("reading", &[
        ("reading", "the vocabulary: Sample, GpuReading, the field table, device lists"),
    ]),
    ("units", &[
        ("units", "Bytes, Celsius, Watts, …: imports nothing of the crate"),
    ]),
];

/// Imports that run up today, each with what removes it. Empty: issue 21 §6 moved the alert
/// settings' vocabulary into `alert_settings`, the last debt. An entry added here must name
/// the issue point that removes it.
const KNOWN_DEBT: &[(&str, &str, &str)] = &[];

/// Every module in order, top first.
fn order() -> Vec<&'static str> {
    LAYERS
        .iter()
        .flat_map(|(_, ms)| ms.iter().map(|(m, _)| *m))
        .collect()
}

fn rank(module: &str) -> Option<usize> {
    order().iter().position(|m| *m == module)
}

/// One import of another top-level module: (from, to) → where (`file:line`).
type Edges = BTreeMap<(String, String), Vec<String>>;

#[test]
fn every_top_level_module_is_placed_once() {
    let found = top_level_modules();
    let placed: BTreeSet<String> = order().iter().map(|m| m.to_string()).collect();
    assert_eq!(
        placed.len(),
        order().len(),
        "a module is placed twice in LAYERS"
    );
    let unplaced: Vec<_> = found.difference(&placed).collect();
    let gone: Vec<_> = placed.difference(&found).collect();
    assert!(
        unplaced.is_empty() && gone.is_empty(),
        "place every top-level module of src/ in LAYERS (say why there): not placed {unplaced:?}; \
         placed but not in src/ {gone:?}"
    );
}

#[test]
fn no_import_runs_up_but_the_known_debt() {
    let edges = production_edges();
    let mut up = Vec::new();
    for ((from, to), at) in &edges {
        let (Some(a), Some(b)) = (rank(from), rank(to)) else {
            continue; // every_top_level_module_is_placed_once says which
        };
        let debt = KNOWN_DEBT.iter().any(|(f, t, _)| f == from && t == to);
        if b < a && !debt {
            up.push(format!("{from} -> {to} at {}", at.join(", ")));
        }
    }
    assert!(
        up.is_empty(),
        "imports that run up the layers (ARCHITECTURE.md, \"The layer rule\"): move the item down to \
         where both can reach it, or pass it in from above:\n{}",
        up.join("\n")
    );
}

#[test]
fn the_known_debt_holds_only_imports_that_still_run_up() {
    let edges = production_edges();
    let stale: Vec<String> = KNOWN_DEBT
        .iter()
        .filter(|(from, to, _)| {
            let upward = matches!((rank(from), rank(to)), (Some(a), Some(b)) if b < a);
            !upward || !edges.contains_key(&(from.to_string(), to.to_string()))
        })
        .map(|(from, to, why)| format!("{from} -> {to} ({why})"))
        .collect();
    assert!(
        stale.is_empty(),
        "these KNOWN_DEBT entries no longer run up (or no longer exist): remove them\n{}",
        stale.join("\n")
    );
}

/// The scanner itself: nested groups, `super::` to the root, comments and test code.
#[test]
fn the_scanner_finds_grouped_and_relative_imports_and_skips_tests() {
    let text = "use crate::{model::Model, source::{GpuSource, sim}};\n\
                // crate::ui in a comment\n\
                use super::super::wire::Gpu;\n\
                fn f() { crate::units::Bytes(1); }\n\
                #[cfg(test)]\n\
                mod tests {\n    use crate::state::State;\n}\n";
    let found: Vec<(String, usize)> = imports(text, 2);
    let names: Vec<&str> = found.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(names, ["model", "source", "wire", "units"]);
    assert_eq!(found[2].1, 3, "line numbers are 1-based");
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            match name.strip_suffix(".rs") {
                Some("lib" | "main") => None,
                Some(stem) => Some(stem.to_string()),
                None if p.is_dir() => Some(name),
                None => None,
            }
        })
        .collect()
}

/// Every import between two top-level modules in production code under src/.
fn production_edges() -> Edges {
    let modules = top_level_modules();
    let mut edges = Edges::new();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for path in files {
        let rel = path
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let parts: Vec<&str> = rel.split('/').collect();
        let from = parts[0].trim_end_matches(".rs").to_string();
        if from == "lib" || from == "main" {
            continue;
        }
        // How many `super::` reach the crate root from this file's module.
        let depth = parts.len() - usize::from(name == "mod.rs");
        let text = std::fs::read_to_string(&path).unwrap();
        for (to, line) in imports(&text, depth) {
            if to != from && modules.contains(&to) {
                let at = format!("src/{rel}:{line}");
                edges.entry((from.clone(), to)).or_default().push(at);
            }
        }
    }
    edges
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a file's production code names, with the 1-based line of each:
/// `crate::m`, each `m` of `crate::{m::…, …}`, and `super::` × `depth` (the crate root from
/// this file). Stops at a `#[cfg(test)]` module; comments are left out.
fn imports(text: &str, depth: usize) -> Vec<(String, usize)> {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|l| {
                let l = l.trim_start();
                l.starts_with("mod ") || l.starts_with("pub mod ")
            })
        {
            break;
        }
        code.push_str(line.split("//").next().unwrap());
        code.push('\n');
    }
    let root = format!("{}::", vec!["super"; depth].join("::"));
    let mut out = Vec::new();
    for prefix in ["crate::", root.as_str()] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix).map(|i| i + from) {
            from = i + prefix.len();
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let line = code[..i].matches('\n').count() + 1;
            out.extend(heads(&code[from..]).into_iter().map(|m| (m, line)));
        }
    }
    out.sort_by_key(|(_, line)| *line);
    out
}

/// The first segments of the path or `{…}` group at the start of `rest`.
fn heads(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let (mut out, mut level, mut expect) = (Vec::new(), 1, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => level += 1,
            '}' if level == 1 => break,
            '}' => level -= 1,
            ',' if level == 1 => expect = true,
            c if expect && level == 1 && !c.is_whitespace() => {
                expect = false;
                let m = ident(&group[i..]);
                if m != "self" {
                    out.push(m);
                }
            }
            _ => {}
        }
    }
    out
}
