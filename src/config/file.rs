//! The TOML config file: its schema (serde, unknown keys refused) with every value kept
//! next to its place in the file, and errors turned into one line naming file, line and
//! key. It checks types only; values are checked in `config` with the flags and env.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::SettingsError;

/// `Option<Spanned<T>>`: absent keys fall back to the env and defaults; present ones remember
/// where they are so a bad value can be pointed at.
pub type Entry<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub source: Entry<String>,
    pub demo_scenario: Entry<String>,
    /// `--nvml-lib`, `--kubelet-socket`, `--only`: what an admin pins for the host in /etc.
    pub nvml_lib: Entry<String>,
    pub kubelet_socket: Entry<String>,
    pub only: Entry<String>,
    pub interval: Entry<DurationText>,
    pub history: Entry<DurationText>,
    pub compact: Entry<bool>,
    pub readonly: Entry<bool>,
    pub mouse: Entry<bool>,
    pub theme: Entry<String>,
    #[serde(default)]
    pub sort: SortTable,
    #[serde(default)]
    pub columns: ColumnsTable,
    #[serde(default)]
    pub thresholds: ThresholdsTable,
    #[serde(default)]
    pub record: RecordTable,
    #[serde(default)]
    pub remote: RemoteTable,
    #[serde(default)]
    pub serve: ServeTable,
    #[serde(default)]
    pub prometheus: PrometheusTable,
    #[serde(default)]
    pub alerts: AlertsTable,
}

/// `--prometheus`, `--selector`, the credentials' files and the CA file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrometheusTable {
    pub url: Entry<String>,
    pub selector: Entry<String>,
    pub user: Entry<String>,
    pub password_file: Entry<String>,
    pub bearer_token_file: Entry<String>,
    pub ca_file: Entry<String>,
}

/// `--alert-webhook` (a list here), `--alert-format`, `--alert-command`, `--no-bell`
/// (`bell = false`), `--alert-repeat`, `--alert-resolve-after`, `--alert-for`
/// (`for_warning`), `for_critical`, and `[alerts.kinds.KIND]` tables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsTable {
    pub webhooks: Entry<Vec<String>>,
    pub format: Entry<String>,
    pub command: Entry<String>,
    pub bell: Entry<bool>,
    pub repeat: Entry<DurationText>,
    pub resolve_after: Entry<DurationText>,
    pub for_warning: Entry<DurationText>,
    pub for_critical: Entry<DurationText>,
    #[serde(default)]
    pub kinds: std::collections::BTreeMap<Spanned<String>, KindTable>,
}

/// One warning kind's alert rule: from which severity it goes out, `for`, `repeat`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindTable {
    pub severity: Entry<String>,
    #[serde(rename = "for")]
    pub hold: Entry<DurationText>,
    pub repeat: Entry<DurationText>,
}

/// `--record`, `--record-max-size`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordTable {
    pub path: Entry<String>,
    pub max_size: Entry<SizeText>,
}

/// `--remote` (a list here), `--hosts-file`, `--with-local`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteTable {
    pub hosts: Entry<Vec<String>>,
    pub hosts_file: Entry<String>,
    pub with_local: Entry<bool>,
}

/// `gpuwatch serve`'s flags (`--http-header-timeout` is `header_timeout`, and so on).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeTable {
    pub listen: Entry<String>,
    pub web_listen_address: Entry<Vec<String>>,
    pub dcgm_compat: Entry<bool>,
    pub process_metrics: Entry<bool>,
    pub process_metrics_limit: Entry<u64>,
    pub redact: Entry<bool>,
    pub hostname: Entry<String>,
    pub web_config_file: Entry<String>,
    pub max_connections: Entry<u64>,
    pub header_timeout: Entry<DurationText>,
    pub idle_timeout: Entry<DurationText>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SortTable {
    pub column: Entry<String>,
    pub descending: Entry<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnsTable {
    pub visible: Entry<Vec<Spanned<String>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsTable {
    pub oom_warn_percent: Entry<f64>,
    pub oom_critical_percent: Entry<f64>,
    pub oom_time_to_full: Entry<DurationText>,
    pub temp_warn: Entry<u32>,
    pub temp_critical: Entry<u32>,
    pub temp_hold: Entry<DurationText>,
    pub idle_min_vram: Entry<SizeText>,
    pub idle_after: Entry<DurationText>,
    pub stale_min_vram: Entry<SizeText>,
    pub stale_after: Entry<DurationText>,
}

/// A duration as written: `"2s"`, or a bare number of seconds like the flags take. Parsed
/// later by the same code as `--interval`, so the file and the flags agree.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationText(pub String);

/// A size as written: `"1GiB"`; a bare number is kept as text so `Bytes`'s `FromStr` can
/// refuse it (it has no unit) with the file's line.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeText(pub String);

/// Accepts a string or a number and keeps its text; `expecting` is what a type error says.
struct TextVisitor(&'static str);

impl Visitor<'_> for TextVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor("a duration like \"500ms\", \"2s\" or \"5m\""))
            .map(DurationText)
    }
}

impl<'de> Deserialize<'de> for SizeText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor("a size like \"1GiB\" or \"512MiB\""))
            .map(SizeText)
    }
}

/// A parsed file with its text, so positions can be turned into lines and snippets.
#[derive(Debug)]
pub struct LoadedFile {
    pub path: PathBuf,
    text: String,
    pub config: FileConfig,
}

impl LoadedFile {
    /// Parses `text` (read from `path`); errors name the file, the line and the key.
    pub fn parse(path: &Path, text: String) -> Result<LoadedFile, SettingsError> {
        match toml::from_str::<FileConfig>(&text) {
            Ok(config) => Ok(LoadedFile {
                path: path.to_path_buf(),
                text,
                config,
            }),
            Err(e) => Err(schema_error(path, &text, &e)),
        }
    }

    /// `PATH:LINE: KEY`, how an error points at a value in this file.
    pub fn origin(&self, key: &str, span: &Range<usize>) -> String {
        format!(
            "{}:{}: {key}",
            self.path.display(),
            line_of(&self.text, span.start)
        )
    }

    /// The value as written in the file, for `(got …)`: one line, not too long.
    pub fn snippet(&self, span: &Range<usize>) -> String {
        let raw = self.text.get(span.clone()).unwrap_or("").trim();
        let first = raw.lines().next().unwrap_or("");
        if first.chars().count() > 40 || first.len() < raw.len() {
            format!("{}…", first.chars().take(40).collect::<String>())
        } else {
            first.to_string()
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// One line for a syntax error, an unknown key or a value of the wrong type.
fn schema_error(path: &Path, text: &str, e: &toml::de::Error) -> SettingsError {
    let mut origin = path.display().to_string();
    if let Some(span) = e.span() {
        origin += &format!(":{}", line_of(text, span.start));
    }
    // The document parses as TOML, so serde refused a key or a type: name the key.
    let Ok(root) = DeTable::parse(text) else {
        return SettingsError::new(
            origin,
            format!("not valid TOML: {}", e.message().trim()),
            None,
        );
    };
    let mut key = Vec::new();
    if let Some(span) = e.span() {
        find_key(root.get_ref(), span.start, &mut key);
    }
    if !key.is_empty() {
        origin += &format!(": {}", key.join("."));
    }
    SettingsError::new(origin, readable(e.message()), None)
}

/// Fills `path` with the dotted key whose name or value holds byte `pos`, the deepest one
/// (`thresholds.temp_warn`); false when no key does.
fn find_key(table: &DeTable<'_>, pos: usize, path: &mut Vec<String>) -> bool {
    for (key, value) in table {
        let hit = |r: Range<usize>| r.contains(&pos) || r.start == pos;
        let inside = matches!(value.get_ref(), DeValue::Table(_));
        path.push(key.get_ref().to_string());
        // A table made by a `[header]` spans only the header, so its keys are searched
        // whatever its span says.
        if let DeValue::Table(inner) = value.get_ref()
            && find_key(inner, pos, path)
        {
            return true;
        }
        if hit(key.span()) || (!inside && hit(value.span())) {
            return true;
        }
        path.pop();
    }
    false
}

/// serde's wording made plain: `unknown field` → `unknown key`, Rust type names → words.
fn readable(message: &str) -> String {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let known = rest.split_once(", expected ").map(|(_, known)| {
            known
                .trim_start_matches("one of ")
                .replace('`', "")
                .replace(" or ", ", ")
        });
        return match known {
            Some(known) => format!("unknown key (known keys here: {known})"),
            None => "unknown key (this table takes none)".to_string(),
        };
    }
    let body = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "));
    if let Some((got, expected)) = body.and_then(|b| b.rsplit_once(", expected ")) {
        return format!("expected {}, not {got}", type_words(expected));
    }
    message.to_string()
}

fn type_words(expected: &str) -> Cow<'_, str> {
    match expected {
        "u32" | "u64" => "a whole number ≥ 0".into(),
        "f64" => "a number".into(),
        "a sequence" => "a list".into(),
        e if e.starts_with("struct ") => "a table".into(),
        e => e.into(),
    }
}
