//! The one definition of every setting: its flag (the clap id in `cli`), its config-file key,
//! whether `GPUWATCH_<FLAG>` sets it, its default and one line saying what it does. The list
//! of known variables, the `config init` file and the reference table in docs/settings.md are
//! generated from these rows, and tests check the rows against clap and the checked-in doc.
//! Resolving (flag > env > file > default, with the checks) stays in the resolvers, which
//! read a flag's variable only when its row says it has one.

/// Which command line a flag belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main command's flags, which also work after any subcommand.
    Global,
    /// `gpuwatch serve`'s own flags.
    Serve,
}

/// A setting's value when nobody gives one.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    /// A switch, off or on.
    Switch(bool),
    /// The default as a TOML value (`"1s"`, `90`, `[]`), from the constant the resolver uses.
    Default(fn() -> String),
    /// No value: `shown` says what happens instead; `example` (unquoted text) is what the
    /// `config init` file offers, commented out.
    Unset {
        shown: &'static str,
        example: &'static str,
    },
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The long flag without `--` (clap's id), `None` for a key only the file has.
    pub flag: Option<&'static str>,
    pub scope: Scope,
    /// `key` or `table.key` in the config file, `None` for a flag the file does not take.
    pub key: Option<&'static str>,
    /// `GPUWATCH_<FLAG>` sets it too.
    pub env: bool,
    pub value: Value,
    /// What it does, one sentence without the final stop.
    pub doc: &'static str,
}

impl Setting {
    /// A global setting with a flag, a variable and maybe a file key (`""` for none).
    pub(super) const fn new(
        flag: &'static str,
        key: &'static str,
        value: Value,
        doc: &'static str,
    ) -> Self {
        Setting {
            flag: Some(flag),
            scope: Scope::Global,
            key: if key.is_empty() { None } else { Some(key) },
            env: true,
            value,
            doc,
        }
    }

    /// A key only the config file has.
    pub(super) const fn file_only(key: &'static str, value: Value, doc: &'static str) -> Self {
        Setting {
            flag: None,
            scope: Scope::Global,
            key: Some(key),
            env: false,
            value,
            doc,
        }
    }

    /// The same, as `gpuwatch serve`'s flag.
    pub(super) const fn serve(self) -> Self {
        Setting {
            scope: Scope::Serve,
            ..self
        }
    }

    /// The same, without a variable.
    pub(super) const fn flag_only(self) -> Self {
        Setting { env: false, ..self }
    }

    /// `--flag`, or `serve --flag` for the exporter's own.
    pub fn flag_text(&self) -> Option<String> {
        let flag = self.flag?;
        Some(match self.scope {
            Scope::Global => format!("--{flag}"),
            Scope::Serve => format!("serve --{flag}"),
        })
    }

    /// `GPUWATCH_TEMP_WARN` for `temp-warn`, when the environment may set it.
    pub fn env_var(&self) -> Option<String> {
        self.flag.filter(|_| self.env).map(super::env::env_var)
    }

    /// The default as the docs show it: `1s`, `off`, `none`.
    pub fn shown_default(&self) -> String {
        match self.value {
            Value::Switch(on) => if on { "on" } else { "off" }.to_string(),
            Value::Default(toml) => match toml().as_str() {
                "[]" => "none".to_string(),
                "false" => "off".to_string(),
                "true" => "on".to_string(),
                text => text.trim_matches('"').to_string(),
            },
            Value::Unset { shown, .. } => shown.to_string(),
        }
    }
}

/// Every setting, in the order of the `config init` file, then the flags the file lacks.
pub fn all() -> impl Iterator<Item = &'static Setting> + Clone {
    super::rows::GROUPS.iter().flat_map(|group| group.iter())
}

/// The flags `GPUWATCH_<FLAG>` may set, in table order.
pub fn env_flags() -> impl Iterator<Item = &'static str> {
    all().filter(|s| s.env).filter_map(|s| s.flag)
}

/// The row of a flag (its long name), if it is a setting.
pub fn by_flag(flag: &str) -> Option<&'static Setting> {
    all().find(|s| s.flag == Some(flag))
}

/// The settings reference in docs/settings.md, between its markers.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| flag | environment | config file | default | meaning |\n| --- | --- | --- | --- | --- |\n",
    );
    let code = |t: Option<String>| t.map_or_else(|| "—".to_string(), |t| format!("`{t}`"));
    for s in all() {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            code(s.flag_text()),
            code(s.env_var()),
            code(s.key.map(str::to_string)),
            code(Some(s.shown_default())),
            s.doc.replace('|', "\\|"),
        ));
    }
    out
}

/// The `config init` lines of one table (`""` for the top-level keys), without its header:
/// each key's line(s) of comment and its default, or a commented-out example.
pub fn template_section(table: &str) -> String {
    let mut out = String::new();
    for s in all() {
        let Some(key) = s.key else { continue };
        let (section, name) = key.rsplit_once('.').unwrap_or(("", key));
        if section != table {
            continue;
        }
        let doc = match s.flag_text() {
            Some(flag) => format!("{} ({}).", s.doc, flag.trim_start_matches("serve ")),
            None => format!("{}.", s.doc),
        };
        out.push_str(&comment(&doc));
        out.push_str(&match s.value {
            Value::Switch(on) => format!("{name} = {on}\n"),
            Value::Default(toml) => format!("{name} = {}\n", toml()),
            Value::Unset { example, .. } => format!("# {name} = {example:?}\n"),
        });
    }
    out
}

/// The tables of the file, in order of first appearance (`""`, the top level, first).
pub fn template_tables() -> Vec<&'static str> {
    let mut tables = vec![""];
    for key in all().filter_map(|s| s.key) {
        let table = key.rsplit_once('.').map_or("", |(t, _)| t);
        if !tables.contains(&table) {
            tables.push(table);
        }
    }
    tables
}

/// `text` as `# ` lines of at most 95 characters.
fn comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 95 && line != "#" {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_wrap_between_words() {
        let text = "word ".repeat(30);
        let lines = comment(&text);
        assert!(lines.lines().all(|l| l.len() <= 95 && l.starts_with("# ")));
        assert_eq!(
            lines.split_whitespace().filter(|w| *w == "word").count(),
            30
        );
    }

    #[test]
    fn each_flag_and_each_key_has_one_row() {
        let mut flags: Vec<_> = all().filter_map(|s| s.flag).collect();
        let mut keys: Vec<_> = all().filter_map(|s| s.key).collect();
        let (nf, nk) = (flags.len(), keys.len());
        flags.sort();
        flags.dedup();
        keys.sort();
        keys.dedup();
        assert_eq!((flags.len(), keys.len()), (nf, nk), "a flag or key twice");
    }

    #[test]
    fn defaults_show_as_users_write_them() {
        let shown = |f: &str| by_flag(f).unwrap().shown_default();
        assert_eq!(shown("interval"), "1s");
        assert_eq!(shown("compact"), "off");
        assert_eq!(shown("remote"), "none");
        assert_eq!(shown("oom-warn"), "90");
    }
}

#[cfg(test)]
mod clap_agrees {
    use super::*;
    use clap::CommandFactory;

    /// `(scope, long)` of every flag clap shows for the main command (global) and `serve`.
    fn clap_flags() -> Vec<(Scope, String)> {
        let cli = crate::cli::Cli::command();
        let serve = cli
            .find_subcommand("serve")
            .expect("a serve subcommand")
            .clone();
        let longs = |cmd: &clap::Command| -> Vec<String> {
            cmd.get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long().map(str::to_string))
                .filter(|l| l != "help" && l != "version")
                .collect()
        };
        let mut flags: Vec<_> = longs(&cli)
            .into_iter()
            .map(|l| (Scope::Global, l))
            .collect();
        flags.extend(longs(&serve).into_iter().map(|l| (Scope::Serve, l)));
        flags
    }

    #[test]
    fn every_setting_flag_has_a_row_and_every_row_a_flag() {
        let clap = clap_flags();
        let rows: Vec<(Scope, String)> = all()
            .filter_map(|s| s.flag.map(|f| (s.scope, f.to_string())))
            .collect();
        let missing: Vec<_> = clap.iter().filter(|f| !rows.contains(f)).collect();
        let extra: Vec<_> = rows.iter().filter(|f| !clap.contains(f)).collect();
        assert!(
            missing.is_empty(),
            "flags with no settings row: {missing:?}"
        );
        assert!(
            extra.is_empty(),
            "rows with no such flag in clap: {extra:?}"
        );
    }
}

#[cfg(test)]
mod file_agrees {
    use super::*;

    /// The keys the file's TOML shape takes in `table` (`""`: the top level), as serde lists
    /// them when refusing an unknown one.
    fn file_keys(table: &str) -> Vec<String> {
        let text = match table {
            "" => "zz_unknown = 1".to_string(),
            t => format!("[{t}]\nzz_unknown = 1"),
        };
        let err = toml::from_str::<super::super::file::FileConfig>(&text)
            .unwrap_err()
            .to_string();
        // serde says `expected one of `a`, `b``, `expected `a` or `b`` or `expected `a``.
        let expected = err
            .split("`zz_unknown`, expected ")
            .nth(1)
            .unwrap_or_else(|| panic!("serde names the keys: {err}"));
        let line = expected.lines().next().unwrap_or("");
        let line = line.strip_prefix("one of ").unwrap_or(line);
        line.split(", ")
            .flat_map(|k| k.split(" or "))
            .map(|k| k.trim().trim_matches('`').to_string())
            .collect()
    }

    /// Every key the file takes has a row (the other way round, `config init`'s file, made
    /// from the rows, must resolve: tests/it/config.rs). Tables are not rows, and
    /// `[alerts.kinds.KIND]` is `--alert-on`'s row.
    #[test]
    fn every_file_key_has_a_row() {
        let tables = template_tables();
        // The error's list was read, not an empty one.
        assert!(file_keys("serve").contains(&"listen".to_string()));
        let mut missing = Vec::new();
        for table in &tables {
            for key in file_keys(table) {
                let full = match *table {
                    "" => key.clone(),
                    t => format!("{t}.{key}"),
                };
                let is_table = tables.contains(&full.as_str()) || full == "alerts.kinds";
                if !is_table && !all().any(|s| s.key == Some(full.as_str())) {
                    missing.push(full);
                }
            }
        }
        assert!(
            missing.is_empty(),
            "file keys with no settings row: {missing:?}"
        );
    }
}
