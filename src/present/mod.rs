//! Words, numbers and cells with no ratatui in them: how readings, warnings, health, the
//! host line and process cells read, shared by the TUI (`ui` styles and places them) and
//! the headless modes (`--once` text, alerts, pick, wait, serve). Nothing here draws, and
//! nothing here imports ratatui (a test greps for it).

pub mod cells;
pub mod fixed;
pub mod format;
pub mod health;
pub mod host;
pub mod warnings;

/// The themes a user can choose (`theme` in the config file, `--theme`): a word the
/// settings carry; the palettes themselves are `ui::theme`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThemeName {
    /// The 16 ANSI colours on a dark background.
    #[default]
    Dark,
    /// The 16 ANSI colours chosen to read on a light background.
    Light,
    /// No colour: bold, underline and reverse video only (`NO_COLOR`, `--no-color`).
    Mono,
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `dir`, recursively.
    fn sources(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(sources(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        out
    }

    /// The lines of a file that are code (comments may name what the code must not use).
    fn code_lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(str::to_string)
            .collect()
    }

    fn src() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
    }

    #[test]
    fn present_has_no_drawing_library() {
        let files = sources(&src().join("present"));
        assert!(files.len() >= 5, "found {files:?}");
        // Spelled in two halves so this test's own code does not name it.
        let banned = ["rata", "tui"].concat();
        for file in files {
            assert!(
                !code_lines(&file).iter().any(|l| l.contains(&banned)),
                "{} uses {banned}: words here must not depend on the drawing library",
                file.display()
            );
        }
    }

    /// Only the drawing code and the TUI's loop use `ui`: the headless modes take their
    /// words from here, so they never link the terminal code's decisions.
    #[test]
    fn nothing_but_the_tui_imports_ui() {
        let root = src();
        let allowed = |p: &Path| {
            let rel = p.strip_prefix(&root).unwrap();
            rel.starts_with("ui") || rel.starts_with("app") || rel == Path::new("app.rs")
        };
        let offenders: Vec<String> = sources(&root)
            .into_iter()
            .filter(|p| !allowed(p))
            .filter(|p| {
                let (path, module) = (["crate::", "ui::"].concat(), ["crate::", "ui;"].concat());
                (code_lines(p).iter()).any(|l| l.contains(&path) || l.contains(&module))
            })
            .map(|p| p.display().to_string())
            .collect();
        assert!(offenders.is_empty(), "these import `ui`: {offenders:?}");
    }
}
