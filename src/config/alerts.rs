//! The alert settings (`--alert-webhook` … `--no-bell`, the file's `[alerts]` and
//! `[alerts.kinds.KIND]` tables): sinks, the payload format, the `for`/`repeat`/resolve times and
//! which kinds and severities go out, each flag > env > key > default. Resolution only:
//! nothing is sent from here (`alerts` does that).

use super::SettingsError;
use super::file::{AlertsTable, KindTable};
use super::parse::parse_duration;
use super::values::Resolver;
use crate::alert_settings::rules::{self, KindRule, Rules};
use crate::alert_settings::{AlertSettings, Format, Sink};
use crate::cli::Cli;

pub(super) fn alerts(cli: &Cli, r: &Resolver) -> Result<AlertSettings, SettingsError> {
    let t = &r.file_config().alerts;
    let format = r.layer(
        ("alert-format", &cli.alert_format),
        ("alerts.format", &t.format),
        Format::from_name,
        |s| Format::from_name(s),
        Format::Json,
    )?;
    let mut sinks: Vec<Sink> = webhooks(cli, r, t)?
        .into_iter()
        .map(|url| Sink::Webhook {
            url,
            format: format.value,
        })
        .collect();
    let command = |s: &str| Ok(Some(s.to_string()).filter(|c| !c.trim().is_empty()));
    let command = r.layer(
        ("alert-command", &cli.alert_command),
        ("alerts.command", &t.command),
        command,
        |s| command(s),
        None,
    )?;
    sinks.extend(command.value.map(|command| Sink::Command { command }));
    let no_bell = r.switch(("no-bell", cli.no_bell), ("", &None))?;
    let bell = t.bell.as_ref().is_none_or(|b| *b.get_ref());
    Ok(AlertSettings {
        sinks,
        rules: alert_rules(cli, r, t)?,
        bell: bell && !no_bell,
    })
}

/// `--alert-webhook` (repeatable; the env takes a comma-separated list), `[alerts] webhooks`.
fn webhooks(cli: &Cli, r: &Resolver, t: &AlertsTable) -> Result<Vec<String>, SettingsError> {
    let joined = (!cli.alert_webhook.is_empty()).then(|| cli.alert_webhook.join(","));
    let parse = |text: &str| {
        text.split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(check_url)
            .collect::<Result<Vec<String>, String>>()
    };
    let got = r
        .layer(
            ("alert-webhook", &joined),
            ("alerts.webhooks", &t.webhooks),
            parse,
            |list: &Vec<String>| list.iter().map(|u| check_url(u.trim())).collect(),
            Vec::new(),
        )
        .map_err(|mut e| {
            // `(got …)` would quote the URL in full; the reason already shows it redacted.
            e.got = None;
            e
        })?;
    Ok(got.value)
}

/// `http://` or `https://`. Errors never quote the URL (its path is often the secret):
/// they show it redacted.
fn check_url(url: &str) -> Result<String, String> {
    let shown = crate::alert_settings::redact(url);
    if url.starts_with("http://") || url.starts_with("https://") {
        return Ok(url.to_string());
    }
    Err(format!("{shown}: not an http:// or https:// URL"))
}

/// The `for` and `repeat` times, `--alert-on`, and the per-kind tables.
fn alert_rules(cli: &Cli, r: &Resolver, t: &AlertsTable) -> Result<Rules, SettingsError> {
    let d = Rules::default();
    let for_warning = r.duration(
        ("alert-for", &cli.alert_for),
        ("alerts.for_warning", &t.for_warning),
        d.for_warning,
    )?;
    // File only: critical warnings alert at once unless a file says otherwise.
    let for_critical = match &t.for_critical {
        Some(v) => parse_duration(&v.get_ref().0)
            .map_err(|why| r.file_error("alerts.for_critical", &v.span(), why))?,
        None => d.for_critical,
    };
    let repeat = r.duration(
        ("alert-repeat", &cli.alert_repeat),
        ("alerts.repeat", &t.repeat),
        d.repeat,
    )?;
    let resolve_after = r.duration(
        ("alert-resolve-after", &cli.alert_resolve_after),
        ("alerts.resolve_after", &t.resolve_after),
        d.resolve_after,
    )?;
    let mut kinds = d.kinds.clone();
    for (name, table) in &t.kinds {
        let at = |why: String| r.file_error("alerts.kinds", &name.span(), why);
        let kind = rules::parse_kind(name.get_ref()).map_err(at)?;
        kinds.insert(kind, kind_rule(r, name.get_ref(), table)?);
    }
    let mut others = d.others;
    let on = |s: &str| rules::parse_alert_on(s).map(Some);
    if let Some(listed) = r.flag_or_env(("alert-on", &cli.alert_on), on, None)?.value {
        // The list says which kinds go out and from which severity; the file's per-kind
        // `for` and `repeat` still apply to them.
        others = None;
        for rule in kinds.values_mut() {
            rule.min = Some(None);
        }
        for (kind, rule) in listed {
            kinds.entry(kind).or_default().min = rule.min;
        }
    }
    Ok(Rules {
        for_warning: for_warning.value,
        for_critical,
        repeat: repeat.value,
        resolve_after: resolve_after.value,
        others,
        kinds,
    })
}

/// `[alerts.kinds.KIND]`: `severity` (warning, critical, off), `for`, `repeat`.
fn kind_rule(r: &Resolver, kind: &str, t: &KindTable) -> Result<KindRule, SettingsError> {
    let key = |k: &str| format!("alerts.kinds.{kind}.{k}");
    let mut rule = KindRule::default();
    if let Some(s) = &t.severity {
        let min = rules::parse_min_severity(s.get_ref())
            .map_err(|why| r.file_error(&key("severity"), &s.span(), why))?;
        rule.min = Some(min);
    }
    let duration = |entry: &Option<toml::Spanned<super::file::DurationText>>, name: &str| {
        entry
            .as_ref()
            .map(|d| {
                parse_duration(&d.get_ref().0)
                    .map_err(|why| r.file_error(&key(name), &d.span(), why))
            })
            .transpose()
    };
    rule.hold = duration(&t.hold, "for")?;
    rule.repeat = duration(&t.repeat, "repeat")?;
    Ok(rule)
}
