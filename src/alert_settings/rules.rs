//! Which warnings become alerts, and when: per warning kind (by its code; a kind
//! added later is covered by the defaults without a change here) the lowest severity that
//! goes out (or none), how long it must hold first (`for`) and how often it repeats; for all
//! kinds, how long a fired one must stay clear before it is resolved. Plain
//! data resolved by `config`; the state machine that applies it is `alerts::engine`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::warnings::Severity;
use crate::wire::WarningCode;

/// A warning-severity warning must hold this long before it alerts (by default).
pub const DEFAULT_FOR_WARNING: Duration = Duration::from_secs(60);
/// A critical one alerts at once (by default).
pub const DEFAULT_FOR_CRITICAL: Duration = Duration::ZERO;
/// A firing alert is sent again this often while it holds.
pub const DEFAULT_REPEAT: Duration = Duration::from_secs(4 * 3600);
/// A fired alert resolves only after its warning has stayed clear this long: one that
/// comes back sooner (a job that OOMs and restarts) is the same alert, still firing.
pub const DEFAULT_RESOLVE_AFTER: Duration = Duration::from_secs(5 * 60);
/// Kinds that go out at warning severity by default: the etiquette warnings and the pod
/// squatting on another pod's GPU, which are never critical but are the ones a shared server
/// or cluster needs people told about.
pub const WARNING_KINDS: [WarningCode; 3] = [
    WarningCode::IdleHolder,
    WarningCode::StaleVram,
    WarningCode::Squatter,
];

/// One kind's rule; `None` fields fall back to the defaults in `Rules`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KindRule {
    /// `Some(None)`: this kind never alerts; `Some(Some(s))`: from severity `s` up.
    pub min: Option<Option<Severity>>,
    pub hold: Option<Duration>,
    pub repeat: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub for_warning: Duration,
    pub for_critical: Duration,
    /// Zero: never repeat.
    pub repeat: Duration,
    /// How long a fired warning must stay clear before it is resolved; zero: at once.
    pub resolve_after: Duration,
    /// The lowest severity that goes out for kinds with no rule of their own (`None`: they
    /// do not go out, as when `--alert-on` lists the kinds).
    pub others: Option<Severity>,
    /// Rules by kind.
    pub kinds: BTreeMap<WarningCode, KindRule>,
}

impl Default for Rules {
    fn default() -> Self {
        let kinds = WARNING_KINDS
            .iter()
            .map(|&k| {
                let rule = KindRule {
                    min: Some(Some(Severity::Warning)),
                    ..KindRule::default()
                };
                (k, rule)
            })
            .collect();
        Rules {
            for_warning: DEFAULT_FOR_WARNING,
            for_critical: DEFAULT_FOR_CRITICAL,
            repeat: DEFAULT_REPEAT,
            resolve_after: DEFAULT_RESOLVE_AFTER,
            others: Some(Severity::Critical),
            kinds,
        }
    }
}

impl Rules {
    /// Whether a warning of `kind` at `severity` goes out at all.
    pub fn wanted(&self, kind: WarningCode, severity: Severity) -> bool {
        let min = match self.kinds.get(&kind).and_then(|r| r.min) {
            Some(min) => min,
            None => self.others,
        };
        min.is_some_and(|min| severity >= min)
    }

    /// How long a warning of `kind` at `severity` must hold before it fires.
    pub fn hold(&self, kind: WarningCode, severity: Severity) -> Duration {
        self.kinds
            .get(&kind)
            .and_then(|r| r.hold)
            .unwrap_or(match severity {
                Severity::Warning => self.for_warning,
                Severity::Critical => self.for_critical,
            })
    }

    /// How often a firing alert of `kind` is sent again; zero: never.
    pub fn repeat(&self, kind: WarningCode) -> Duration {
        self.kinds
            .get(&kind)
            .and_then(|r| r.repeat)
            .unwrap_or(self.repeat)
    }
}

/// Parses `--alert-on`: `KIND[=warning|critical|off],…`. Listed kinds go out from the
/// severity given (a bare kind at its default: warning for the etiquette kinds, else
/// critical); every other kind stays quiet.
pub fn parse_alert_on(text: &str) -> Result<BTreeMap<WarningCode, KindRule>, String> {
    let mut kinds = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, level) = match item.split_once('=') {
            Some((k, l)) => (k.trim(), Some(l.trim())),
            None => (item, None),
        };
        let kind = parse_kind(name)?;
        let min = match level {
            Some(level) => parse_min_severity(level)?,
            None if WARNING_KINDS.contains(&kind) => Some(Severity::Warning),
            None => Some(Severity::Critical),
        };
        let rule = KindRule {
            min: Some(min),
            ..KindRule::default()
        };
        if kinds.insert(kind, rule).is_some() {
            return Err(format!("{kind} is listed twice"));
        }
    }
    if kinds.is_empty() {
        return Err("lists no warning kind".into());
    }
    Ok(kinds)
}

/// `warning`, `critical` or `off` (never alert).
pub fn parse_min_severity(text: &str) -> Result<Option<Severity>, String> {
    match text.trim() {
        "warning" => Ok(Some(Severity::Warning)),
        "critical" => Ok(Some(Severity::Critical)),
        "off" => Ok(None),
        _ => Err("not a severity: use warning, critical or off".into()),
    }
}

/// A kind name must be one gpuwatch raises (a typo would silently alert on nothing).
pub fn parse_kind(name: &str) -> Result<WarningCode, String> {
    WarningCode::from_name(name).ok_or_else(|| {
        format!(
            "unknown warning kind {name:?}; use one of {}",
            WarningCode::names(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use WarningCode::{IdleHolder, Lost, OomRisk, Overheating, Xid};

    #[test]
    fn by_default_critical_of_every_kind_and_the_etiquette_kinds_as_warnings() {
        let r = Rules::default();
        assert!(r.wanted(Overheating, Severity::Critical));
        assert!(!r.wanted(Overheating, Severity::Warning));
        // Every kind with no rule of its own is covered too.
        for &kind in WarningCode::ALL {
            assert!(r.wanted(kind, Severity::Critical), "{kind}");
        }
        assert!(r.wanted(IdleHolder, Severity::Warning));
        assert!(r.wanted(WarningCode::Squatter, Severity::Warning));
        assert_eq!(r.hold(OomRisk, Severity::Critical), Duration::ZERO);
        assert_eq!(
            r.hold(IdleHolder, Severity::Warning),
            Duration::from_secs(60)
        );
        assert_eq!(r.repeat(Lost), Duration::from_secs(4 * 3600));
    }

    #[test]
    fn alert_on_lists_the_kinds_that_go_out() {
        let kinds = parse_alert_on("overheating, idle_holder, oom_risk=warning, xid=off").unwrap();
        let r = Rules {
            kinds,
            others: None,
            ..Rules::default()
        };
        assert!(r.wanted(Overheating, Severity::Critical));
        assert!(!r.wanted(Overheating, Severity::Warning));
        assert!(r.wanted(IdleHolder, Severity::Warning));
        assert!(r.wanted(OomRisk, Severity::Warning));
        assert!(!r.wanted(Xid, Severity::Critical));
        assert!(!r.wanted(Lost, Severity::Critical), "not listed");
        // Every kind, in `WarningCode::ALL`'s order (a new kind joins the list by itself).
        let every = WarningCode::names(", ");
        assert!(every.starts_with("oom_risk, overheating, lost, idle_holder, "));
        assert_eq!(
            parse_alert_on("overheat").unwrap_err(),
            format!("unknown warning kind \"overheat\"; use one of {every}")
        );
        assert!(parse_alert_on("xid=loud").is_err());
        assert_eq!(
            parse_alert_on("xid,xid").unwrap_err(),
            "xid is listed twice"
        );
        assert!(parse_alert_on(" , ").is_err());
    }

    #[test]
    fn a_kind_rule_overrides_hold_and_repeat() {
        let mut r = Rules::default();
        r.kinds.insert(
            Overheating,
            KindRule {
                min: None,
                hold: Some(Duration::from_secs(30)),
                repeat: Some(Duration::ZERO),
            },
        );
        assert!(r.wanted(Overheating, Severity::Critical), "min falls back");
        assert_eq!(
            r.hold(Overheating, Severity::Critical),
            Duration::from_secs(30)
        );
        assert_eq!(r.repeat(Overheating), Duration::ZERO);
    }
}
