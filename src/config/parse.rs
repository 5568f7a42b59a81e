//! Text → typed value, one function per kind of setting, shared by flags, the environment
//! and the file so all three accept exactly the same forms. Pure: no I/O, no origins (the
//! caller's `Got` adds where a bad value came from).

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::SourceKind;
use crate::model::procs::SortKey;
use crate::present::ThemeName;
use crate::source::sim::Scenario;

/// `500ms`, `2s`, `1m`, or a bare number of seconds like `watch -n` takes. Humantime reads
/// the unit, but its error lists a dozen units nobody uses here, so the message says the
/// four that matter.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if let Ok(secs) = trimmed.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Duration::try_from_secs_f64(secs).map_err(|_| format!("{secs} s is too long"));
    }
    humantime::parse_duration(trimmed)
        .map_err(|_| "not a duration: use a number with ms, s, m or h, e.g. 500ms, 2s, 1m".into())
}

pub fn check_percent(v: f64) -> Result<f64, String> {
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be a percentage between 0 and 100".into())
    }
}

pub fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("not a switch: use 1, true, yes, on or 0, false, no, off".into()),
    }
}

pub fn theme_by_name(name: &str) -> Result<ThemeName, String> {
    match name {
        "dark" => Ok(ThemeName::Dark),
        "light" => Ok(ThemeName::Light),
        "mono" => Ok(ThemeName::Mono),
        _ => Err("unknown theme; use dark, light or mono".into()),
    }
}

pub fn theme_config_name(theme: ThemeName) -> &'static str {
    match theme {
        ThemeName::Dark => "dark",
        ThemeName::Light => "light",
        ThemeName::Mono => "mono",
    }
}

pub fn sort_by_name(name: &str) -> Result<SortKey, String> {
    SortKey::from_config_name(name).ok_or_else(|| {
        let known: Vec<_> = SortKey::ALL.iter().map(|k| k.config_name()).collect();
        format!("unknown column; use one of {}", known.join(", "))
    })
}

/// One of `cli::SOURCE_NAMES`.
pub fn source_by_name(name: &str) -> Result<SourceKind, String> {
    match name.trim() {
        "nvml" => Ok(SourceKind::Nvml),
        "auto" => Ok(SourceKind::Auto),
        "amd" => Ok(SourceKind::Amd),
        "intel" => Ok(SourceKind::Intel),
        "demo" => Ok(SourceKind::Demo),
        _ => Err("unknown source; use nvml, auto, amd, intel or demo".into()),
    }
}

pub fn scenario_by_name(name: &str) -> Result<Scenario, String> {
    Scenario::from_name(name.trim()).ok_or_else(|| {
        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        format!("unknown demo scenario; use {}", names.join(" or "))
    })
}

pub fn source_config_name(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Nvml => "nvml",
        SourceKind::Auto => "auto",
        SourceKind::Amd => "amd",
        SourceKind::Intel => "intel",
        SourceKind::Demo => "demo",
    }
}

/// A whole number ≥ 0 (a count, a seed).
pub fn parse_whole<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| "not a whole number ≥ 0".to_string())
}

/// `IP:PORT` only: a host name would need a resolver, and which interface exposes metrics
/// should be explicit.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.trim()
        .parse()
        .map_err(|_| "not an IP:PORT address such as 127.0.0.1:19445 or 0.0.0.0:19445".into())
}

/// `gpu1:9400,gpu2:9400`: every entry a HOST:PORT.
pub fn parse_addresses(text: &str) -> Result<Vec<String>, String> {
    text.split(',')
        .map(crate::source::remote::parse_address)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_say_which_forms_work() {
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(
            parse_duration("2x").unwrap_err(),
            "not a duration: use a number with ms, s, m or h, e.g. 500ms, 2s, 1m"
        );
    }

    #[test]
    fn listen_takes_ip_and_port_only() {
        assert_eq!(
            parse_listen("127.0.0.1:9400").unwrap(),
            "127.0.0.1:9400".parse::<SocketAddr>().unwrap()
        );
        assert!(parse_listen("[::1]:0").is_ok());
        assert!(parse_listen("localhost:9400").is_err());
        assert!(parse_listen("127.0.0.1").is_err());
    }

    #[test]
    fn source_names_are_clap_s() {
        for name in crate::cli::SOURCE_NAMES {
            assert_eq!(source_config_name(source_by_name(name).unwrap()), name);
        }
    }
}
