//! The README and docs stay true to the code: the README's keys table is the keymap table,
//! CI runs the test command it names, every relative link in the docs resolves, the
//! exporter's series list names every series `serve` exports, and the settings page names
//! every flag in the table generated from the settings' definitions.

use crate::serve_support;

use std::path::{Path, PathBuf};

use clap::CommandFactory;

#[test]
fn readme_keys_table_is_the_keymap() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = gpuwatch::keymap::markdown_table();
    assert!(
        readme.contains(&table),
        "README's keys table is out of date; it should read:\n\n{table}"
    );
}

/// The guide's list of process-table columns is the column table, and the README names
/// every column in display order (issue 21 §5: one table, docs generated from it).
#[test]
fn the_docs_column_lists_are_the_column_table() {
    let root = env!("CARGO_MANIFEST_DIR");
    let guide = std::fs::read_to_string(format!("{root}/docs/guide.md")).unwrap();
    let table = gpuwatch::model::columns::markdown_table();
    assert!(
        guide.contains(&table),
        "docs/guide.md's column table is out of date; it should read:\n\n{table}"
    );
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let prose = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let titles: Vec<&str> = gpuwatch::model::columns::Column::ALL
        .iter()
        .map(|c| c.title())
        .collect();
    let mut rest = prose.as_str();
    for title in &titles {
        let at = rest.find(&format!("{title},")).or_else(|| rest.find(title));
        let at = at.unwrap_or_else(|| {
            panic!("README's Processes line lacks {title}, in order: {titles:?}")
        });
        rest = &rest[at + title.len()..];
    }
}

#[test]
fn ci_runs_the_readme_test_command() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    let second = readme.lines().nth(4).unwrap();
    let command = second.split('#').next().unwrap().trim();
    assert_eq!(command, "cargo test --workspace");
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run must run `{command}`"
    );
}

/// The Markdown files a reader follows links between.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The targets of inline links `[text](target)` outside fenced code blocks, with the line
/// each is on; inline code spans are left out first, so `a](b)` in code is not a link.
fn link_targets(markdown: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                targets.push((n + 1, rest[..end].to_string()));
                rest = &rest[end..];
            }
        }
    }
    targets
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to '-'.
fn anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line));
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    let files = doc_files();
    assert!(files.len() >= 10, "docs/ lost its files: {files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let at = format!("{}:{line}: {target}", file.display());
            if !resolved.exists() {
                broken.push(format!("{at}: no such file"));
            } else if !fragment.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let there = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&there).iter().any(|a| a == fragment) {
                    broken.push(format!("{at}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker itself: a missing file and a missing anchor are both caught, and code is not
/// taken for a link.
#[test]
fn the_link_checker_sees_links_and_only_links() {
    let text = "see [a](a.md#b-c) and `x](y)`\n```\n[z](z.md)\n```\n[w](#w)\n";
    let found: Vec<String> = link_targets(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(found, ["a.md#b-c", "#w"]);
    assert_eq!(
        anchor("## Job done, memory released: `gpuwatch wait`"),
        "job-done-memory-released-gpuwatch-wait"
    );
}

/// docs/exporter.md's table lists every series the exporter writes, with its type. The demo
/// with the mixed scenario, DCGM names and per-process series on exports the most.
#[test]
fn the_exporter_doc_lists_every_series_served() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/exporter.md")).unwrap();
    let exporter = serve_support::Exporter::demo(&[
        "--demo-scenario",
        "mixed",
        "--dcgm-compat",
        "--process-metrics",
    ]);
    exporter.wait_ready();
    let metrics = exporter.get("/metrics");
    assert_eq!(metrics.status, 200);
    let body = metrics.body;
    let series: Vec<(&str, &str)> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    assert!(series.len() > 50, "too few series: {series:?}");
    let missing: Vec<String> = series
        .iter()
        .map(|(name, kind)| format!("| `{name}` | {kind} |"))
        .filter(|row| !doc.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/exporter.md lacks these rows (name and type):\n{}",
        missing.join("\n")
    );
}

/// docs/settings.md's reference table is the one the settings table generates.
#[test]
fn the_settings_doc_is_the_settings_table() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/settings.md")).unwrap();
    let table = gpuwatch::config::table::markdown_table();
    assert!(
        doc.contains(&table),
        "docs/settings.md's settings table is out of date; it should read:\n\n{table}"
    );
}

/// docs/settings.md names every flag of the main command and of `serve` (the subcommand
/// with settings of its own).
#[test]
fn the_settings_doc_names_every_flag() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/settings.md")).unwrap();
    let cli = gpuwatch::cli::Cli::command();
    let serve = cli.find_subcommand("serve").expect("a serve subcommand");
    let mut missing = Vec::new();
    for arg in cli.get_arguments().chain(serve.get_arguments()) {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() || long == "help" || long == "version" {
            continue;
        }
        let flag = format!("--{long}");
        let named = doc.match_indices(&flag).any(|(at, _)| {
            let next = doc[at + flag.len()..].chars().next();
            !next.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '.')
        });
        if !named {
            missing.push(flag);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/settings.md does not name {missing:?}"
    );
}
