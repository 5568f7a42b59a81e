//! The host line's words: host CPU %, RAM and swap used/total and the load average, as the
//! sample carries them, each word tagged with its role so the TUI can style it (the
//! header) and `--once` can print it plain. A number the source could not give is `N/A`.

use super::fixed::Fixed;
use super::format::{NA, gib, or_na};
use crate::reading::HostLoad;
use crate::units::Bytes;

/// What a word is, for whoever styles it: the TUI dims labels, separators and asides and
/// marks a nearly exhausted value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Label,
    Separator,
    Value,
    /// A value at 90 % or more of what there is (a starving data loader, a host about to swap).
    Exhausted,
    /// The CPU count: the first thing to go on a narrow line.
    Aside,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub role: Role,
}

fn word(text: impl Into<String>, role: Role) -> Word {
    Word {
        text: text.into(),
        role,
    }
}

/// `CPU 38% · RAM 412.3/1024.0 GiB · swap 0.3/16.0 GiB · load 12.3 11.9 11.1 (32 CPUs)`.
pub fn words(load: &HostLoad) -> Vec<Word> {
    let busy = |ratio: Option<f64>| match ratio {
        Some(r) if r >= 0.9 => Role::Exhausted,
        _ => Role::Value,
    };
    let mem_ratio = ratio(load.memory_used, load.memory_total);
    let cpu = load.cpu_percent;
    let sep = || word(" · ", Role::Separator);
    let mut words = vec![
        word("CPU ", Role::Label),
        word(
            or_na(cpu, |p| format!("{}%", Fixed(p, 0))),
            busy(cpu.map(|p| p / 100.0)),
        ),
        sep(),
        word("RAM ", Role::Label),
        word(
            used_of(load.memory_used, load.memory_total),
            busy(mem_ratio),
        ),
        sep(),
        word("swap ", Role::Label),
        word(used_of(load.swap_used, load.swap_total), Role::Value),
        sep(),
        word("load ", Role::Label),
        word(
            or_na(load.load_average, |[a, b, c]| {
                format!("{a:.2} {b:.2} {c:.2}")
            }),
            Role::Value,
        ),
    ];
    if let Some(n) = load.cpus {
        words.push(word(format!(" ({n} CPUs)"), Role::Aside));
    }
    words
}

/// The same words without roles, for `--once`'s text.
pub fn plain(load: &HostLoad) -> String {
    words(load).into_iter().map(|w| w.text).collect()
}

fn ratio(used: Option<Bytes>, total: Option<Bytes>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t.0 > 0 => Some(u.0 as f64 / t.0 as f64),
        _ => None,
    }
}

/// `412.3/1024.0 GiB`, with `N/A` for whichever half is unknown.
fn used_of(used: Option<Bytes>, total: Option<Bytes>) -> String {
    match (used, total) {
        (None, None) => NA.to_string(),
        (u, t) => format!("{}/{} GiB", or_na(u, gib), or_na(t, gib)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unknown_number_is_na_on_its_own() {
        assert_eq!(
            plain(&HostLoad::default()),
            "CPU N/A · RAM N/A · swap N/A · load N/A"
        );
        let load = HostLoad {
            cpu_percent: Some(37.6),
            cpus: Some(32),
            memory_total: Some(Bytes::from_gib(512.0)),
            memory_used: None,
            swap_total: Some(Bytes(0)),
            swap_used: Some(Bytes(0)),
            load_average: Some([12.0, 11.5, 9.25]),
        };
        assert_eq!(
            plain(&load),
            "CPU 38% · RAM N/A/512.0 GiB · swap 0.0/0.0 GiB · load 12.00 11.50 9.25 (32 CPUs)"
        );
    }

    #[test]
    fn a_nearly_exhausted_value_says_so_and_the_cpu_count_is_an_aside() {
        let load = HostLoad {
            cpu_percent: Some(95.0),
            cpus: Some(8),
            memory_total: Some(Bytes::from_gib(10.0)),
            memory_used: Some(Bytes::from_gib(5.0)),
            ..HostLoad::default()
        };
        let roles: Vec<Role> = words(&load).iter().map(|w| w.role).collect();
        assert_eq!(roles[1], Role::Exhausted, "CPU at 95 %");
        assert_eq!(roles[4], Role::Value, "RAM at half");
        assert_eq!(roles.last(), Some(&Role::Aside));
    }
}
