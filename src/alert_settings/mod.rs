//! The alert settings' vocabulary, in the settings layer so that `cli` and `config` name
//! them without importing the `alerts` mode above them: where alerts go (`Sink`), in which
//! shape (`Format`), and which warnings go out when (`rules`). Plain data: `config`
//! resolves it, `alerts` acts on it (delivers, renders, runs the state machine).

pub mod rules;

use rules::Rules;

/// What `config` resolves for alerts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertSettings {
    pub sinks: Vec<Sink>,
    pub rules: Rules,
    /// The TUI rings the terminal bell on a new critical alert (`--no-bell` turns it off).
    pub bell: bool,
}

/// One configured sink; `alerts::sinks` delivers to it. A webhook URL is only ever shown
/// redacted (`shown`): its path or user part is often the secret.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    Webhook { url: String, format: Format },
    Command { command: String },
}

impl Sink {
    /// The `sink` label of `gpuwatch_alerts_sent_total`.
    pub fn label(&self) -> &'static str {
        match self {
            Sink::Webhook { .. } => "webhook",
            Sink::Command { .. } => "command",
        }
    }

    /// How messages name this sink: never a webhook's full URL.
    pub fn shown(&self) -> String {
        match self {
            Sink::Webhook { url, .. } => format!("webhook {}", redact(url)),
            Sink::Command { command } => format!("command {command:?}"),
        }
    }
}

/// `scheme://host[:port]/…`: no user, password, path or query, where tokens live.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let elided = rest.len() > authority.len() || authority.contains('@');
    let tail = if elided { "/…" } else { "" };
    if scheme.is_empty() {
        format!("{host}{tail}")
    } else {
        format!("{scheme}://{host}{tail}")
    }
}

/// `--alert-format`: the webhook body's shape (`alerts::payload::body` renders it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Slack,
    Discord,
}

pub const FORMAT_NAMES: [&str; 3] = ["json", "slack", "discord"];

impl Format {
    pub fn from_name(name: &str) -> Result<Format, String> {
        match name.trim() {
            "json" => Ok(Format::Json),
            "slack" => Ok(Format::Slack),
            "discord" => Ok(Format::Discord),
            _ => Err("unknown alert format; use json, slack or discord".into()),
        }
    }
}

/// The names `alerts::payload::env_vars` sets for the command sink, so a gpuwatch started
/// by the command accepts them (`config`'s check of `GPUWATCH_*` names knows them).
pub const ENV_NAMES: [&str; 10] = [
    "GPUWATCH_ALERT_MESSAGE",
    "GPUWATCH_ALERT_STATUS",
    "GPUWATCH_ALERT_KIND",
    "GPUWATCH_ALERT_SEVERITY",
    "GPUWATCH_ALERT_HOST",
    "GPUWATCH_ALERT_GPU",
    "GPUWATCH_ALERT_GPU_UUID",
    "GPUWATCH_ALERT_OWNERS",
    "GPUWATCH_ALERT_STARTED",
    "GPUWATCH_ALERT_TEST",
];
