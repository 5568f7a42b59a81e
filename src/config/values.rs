//! One setting at a time: takes the flag, else `GPUWATCH_<FLAG>`, else the file's key, else
//! the default; parses and checks it, and remembers where it came from so an error (or a
//! conflict with another setting) names the place the user must change.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use super::env::env_var;
use super::file::{ColumnsTable, DurationText, Entry, FileConfig, LoadedFile, SizeText, SortTable};
use super::parse::{check_percent, parse_duration, parse_switch, sort_by_name, theme_by_name};
use super::{DEFAULT_SORT, Env, SettingsError};
use crate::model::procs::{Column, SortDir, SortKey};
use crate::present::ThemeName;
use crate::units::Bytes;

/// Where a value came from, weakest first.
#[derive(Debug, Clone, PartialEq)]
enum Origin {
    Default,
    /// `PATH:LINE: key`.
    File(String),
    /// The variable's name.
    Env(String),
    Flag,
}

impl Origin {
    fn rank(&self) -> u8 {
        match self {
            Origin::Default => 0,
            Origin::File(_) => 1,
            Origin::Env(_) => 2,
            Origin::Flag => 3,
        }
    }
}

/// A resolved value, its origin, and the names it goes by as a flag and as a file key.
#[derive(Debug, Clone)]
pub(super) struct Got<T> {
    pub value: T,
    origin: Origin,
    flag: &'static str,
    key: &'static str,
    /// The value as the user wrote it (quoted), for `(got …)`.
    shown: Option<String>,
}

impl<T> Got<T> {
    /// Where the value came from, as an error names it: `--flag`, `GPUWATCH_X` or
    /// `FILE:LINE: key` (`--flag` for a default, the place to change it).
    pub fn at(&self) -> String {
        match &self.origin {
            Origin::Flag | Origin::Default => format!("--{}", self.flag),
            Origin::Env(var) | Origin::File(var) => var.clone(),
        }
    }

    /// Whether this value was given at least as strongly as `other` (flag > env > file >
    /// default), for two settings that decide one thing (`--demo` and `--source`).
    pub fn at_least_as_strong_as<U>(&self, other: &Got<U>) -> bool {
        self.origin.rank() >= other.origin.rank()
    }

    /// Whether anyone gave this value (it is not the default).
    pub fn given(&self) -> bool {
        self.origin != Origin::Default
    }

    /// Whether the command line or the environment gave it (not the file, not the default):
    /// given for this run rather than kept in a file shared by every mode.
    pub fn given_for_this_run(&self) -> bool {
        matches!(self.origin, Origin::Flag | Origin::Env(_))
    }

    /// How to refer to this setting in a message about another one from `vocabulary`'s place.
    fn name(&self, vocabulary: &Origin) -> String {
        match (&self.origin, vocabulary) {
            (Origin::Flag, _) => format!("--{}", self.flag),
            (Origin::Env(var), _) => var.clone(),
            (Origin::File(_), _) | (Origin::Default, Origin::File(_)) => self.key.to_string(),
            (Origin::Default, _) => format!("--{}", self.flag),
        }
    }

    pub fn invalid(&self, why: &str) -> SettingsError {
        SettingsError::new(self.at(), why.to_string(), self.shown.clone())
    }

    /// Like `invalid`, leaving out `(got …)` when `why` already quotes the value.
    pub fn invalid_because(&self, why: String) -> SettingsError {
        let got = self
            .shown
            .clone()
            .filter(|shown| !why.contains(shown.as_str()));
        SettingsError::new(self.at(), why, got)
    }
}

/// A warning level must not be above its critical level. The setting given at the stronger
/// place is blamed (on a tie, the critical one), since that is the one to change.
pub(super) fn ordered<T: PartialOrd + fmt::Display>(
    warn: &Got<T>,
    critical: &Got<T>,
) -> Result<(), SettingsError> {
    if critical.value >= warn.value {
        return Ok(());
    }
    Err(if warn.origin.rank() > critical.origin.rank() {
        warn.invalid(&format!(
            "must not be above {}, which is {}",
            critical.name(&warn.origin),
            critical.value
        ))
    } else {
        critical.invalid(&format!(
            "must not be below {}, which is {}",
            warn.name(&critical.origin),
            warn.value
        ))
    })
}

pub(super) struct Resolver<'a> {
    env: Env<'a>,
    file: Option<&'a LoadedFile>,
    blank: FileConfig,
}

type Flag<'c, C> = (&'static str, C);
type Key<'c, F> = (&'static str, &'c Entry<F>);

impl<'a> Resolver<'a> {
    pub fn new(env: Env<'a>, file: Option<&'a LoadedFile>) -> Self {
        Resolver {
            env,
            file,
            blank: FileConfig::default(),
        }
    }

    pub fn file_config(&self) -> &FileConfig {
        self.file.map_or(&self.blank, |f| &f.config)
    }

    /// `FILE:LINE: key`, where a file's value was written.
    pub fn file_place(&self, key: &str, span: &Range<usize>) -> String {
        self.file
            .map_or_else(|| key.to_string(), |f| f.origin(key, span))
    }

    pub fn file_error(&self, key: &str, span: &Range<usize>, why: String) -> SettingsError {
        let (origin, shown) = match self.file {
            Some(f) => (f.origin(key, span), f.snippet(span)),
            None => (key.to_string(), String::new()),
        };
        let got = (!why.contains(&shown)).then_some(shown);
        SettingsError::new(origin, why, got)
    }

    /// The flag's or the environment's text, if either is given (an empty variable is unset).
    pub fn text(
        &self,
        flag: &'static str,
        cli: &Option<String>,
    ) -> Result<Option<Got<String>>, SettingsError> {
        // The settings table must give every variable read here a row (see `table`).
        debug_assert!(
            super::table::env_flags().any(|f| f == flag),
            "{flag} has no row with a variable in the settings table"
        );
        let var = env_var(flag);
        let (text, origin) = match cli {
            Some(text) => (text.clone(), Origin::Flag),
            None => match (self.env)(&var).filter(|v| !v.is_empty()) {
                Some(text) => (text, Origin::Env(var)),
                None => return Ok(None),
            },
        };
        Ok(Some(Got {
            shown: Some(format!("{text:?}")),
            value: text,
            origin,
            flag,
            key: "",
        }))
    }

    /// The layering every setting goes through: flag, env, file, default.
    pub fn layer<T, F>(
        &self,
        (flag, cli): Flag<&Option<String>>,
        (key, entry): Key<F>,
        parse: impl Fn(&str) -> Result<T, String>,
        from_file: impl Fn(&F) -> Result<T, String>,
        default: T,
    ) -> Result<Got<T>, SettingsError> {
        if let Some(text) = self.text(flag, cli)? {
            let value = parse(&text.value).map_err(|why| text.invalid_because(why))?;
            return Ok(Got {
                value,
                origin: text.origin,
                flag,
                key,
                shown: text.shown,
            });
        }
        if let Some(entry) = entry {
            let span = entry.span();
            let value =
                from_file(entry.get_ref()).map_err(|why| self.file_error(key, &span, why))?;
            return Ok(Got {
                value,
                origin: Origin::File(self.file.map_or_else(String::new, |f| f.origin(key, &span))),
                flag,
                key,
                shown: self.file.map(|f| f.snippet(&span)),
            });
        }
        Ok(Got {
            value: default,
            origin: Origin::Default,
            flag,
            key,
            shown: None,
        })
    }

    /// A setting with no file key (the demo fleet's size, `--seed`): flag, env, default.
    pub fn flag_or_env<T>(
        &self,
        flag: Flag<&Option<String>>,
        parse: impl Fn(&str) -> Result<T, String>,
        default: T,
    ) -> Result<Got<T>, SettingsError> {
        self.layer(
            flag,
            ("", &None::<toml::Spanned<()>>),
            parse,
            |()| unreachable!("no key"),
            default,
        )
    }

    pub fn duration(
        &self,
        flag: Flag<&Option<String>>,
        key: Key<DurationText>,
        default: Duration,
    ) -> Result<Got<Duration>, SettingsError> {
        self.layer(flag, key, parse_duration, |t| parse_duration(&t.0), default)
    }

    pub fn size(
        &self,
        flag: Flag<&Option<String>>,
        key: Key<SizeText>,
        default: Bytes,
    ) -> Result<Got<Bytes>, SettingsError> {
        self.layer(flag, key, |t| t.parse(), |t| t.0.parse(), default)
    }

    pub fn percent(
        &self,
        flag: Flag<&Option<String>>,
        key: Key<f64>,
        default: f64,
    ) -> Result<Got<f64>, SettingsError> {
        let parse = |text: &str| {
            let v = text
                .trim()
                .parse::<f64>()
                .map_err(|_| "not a number".to_string())?;
            check_percent(v)
        };
        self.layer(flag, key, parse, |v| check_percent(*v), default)
    }

    pub fn celsius(
        &self,
        flag: Flag<&Option<String>>,
        key: Key<u32>,
        default: u32,
    ) -> Result<Got<u32>, SettingsError> {
        let parse = |text: &str| {
            text.trim()
                .parse::<u32>()
                .map_err(|_| "not a whole number of °C".to_string())
        };
        self.layer(flag, key, parse, |v| Ok(*v), default)
    }

    /// A switch: the flag can only turn it on; env and file can say either.
    pub fn switch(&self, flag: Flag<bool>, key: Key<bool>) -> Result<bool, SettingsError> {
        Ok(self.switch_got(flag, key)?.value)
    }

    /// The same, remembering where it came from.
    pub fn switch_got(
        &self,
        (flag, on): Flag<bool>,
        key: Key<bool>,
    ) -> Result<Got<bool>, SettingsError> {
        let cli = on.then(|| "true".to_string());
        self.layer((flag, &cli), key, parse_switch, |v| Ok(*v), false)
    }

    pub fn theme(
        &self,
        cli: &Option<String>,
        entry: &Entry<String>,
    ) -> Result<ThemeName, SettingsError> {
        let parse = |s: &str| theme_by_name(s);
        Ok(self
            .layer(
                ("theme", cli),
                ("theme", entry),
                parse,
                |s| parse(s),
                ThemeName::Dark,
            )?
            .value)
    }

    /// The sort column, and its direction: `sort.descending` belongs to the file's `[sort]`,
    /// so when a flag or the env picks the column it gets that column's own direction.
    pub fn sort(
        &self,
        cli: &Option<String>,
        table: &SortTable,
    ) -> Result<(SortKey, SortDir), SettingsError> {
        let parse = |s: &str| sort_by_name(s);
        let key = self.layer(
            ("sort", cli),
            ("sort.column", &table.column),
            parse,
            |s| parse(s),
            DEFAULT_SORT,
        )?;
        let dir = match (&key.origin, &table.descending) {
            (Origin::File(_) | Origin::Default, Some(desc)) if *desc.get_ref() => {
                SortDir::Descending
            }
            (Origin::File(_) | Origin::Default, Some(_)) => SortDir::Ascending,
            _ => key.value.default_direction(),
        };
        Ok((key.value, dir))
    }

    /// `columns.visible` (file only): known names, at least one, none twice.
    pub fn columns(&self, table: &ColumnsTable) -> Result<Vec<Column>, SettingsError> {
        const KEY: &str = "columns.visible";
        let Some(list) = &table.visible else {
            return Ok(Column::ALL.to_vec());
        };
        if list.get_ref().is_empty() {
            return Err(self.file_error(KEY, &list.span(), "must list at least one column".into()));
        }
        let mut columns = Vec::new();
        for name in list.get_ref() {
            let Some(column) = Column::from_config_name(name.get_ref()) else {
                let known: Vec<_> = Column::ALL.iter().map(|c| c.config_name()).collect();
                let why = format!("unknown column; use one of {}", known.join(", "));
                return Err(self.file_error(KEY, &name.span(), why));
            };
            if columns.contains(&column) {
                return Err(self.file_error(KEY, &name.span(), "listed twice".into()));
            }
            columns.push(column);
        }
        Ok(columns)
    }
}
