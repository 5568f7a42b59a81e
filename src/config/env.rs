//! The `GPUWATCH_*` environment variables: the names gpuwatch reads (the settings table's
//! rows that take one, and a few others), and the check that refuses any other, since a misspelt variable (`GPUWATCH_LISTNE`) would
//! otherwise be ignored without a word. Reads no environment itself: names are injected.

use super::SettingsError;

/// `GPUWATCH_*` variables read by something other than the settings: the fake NVML library
/// the tests load through `--nvml-lib` takes its scenario from this one.
const OTHER_VARS: &[&str] = &["GPUWATCH_FAKE_NVML_SCENARIO"];

/// `GPUWATCH_TEMP_WARN` for `temp-warn` (and `GPUWATCH_WEB_CONFIG_FILE` for the exporter
/// toolkit's dotted `web.config.file`).
pub fn env_var(flag: &str) -> String {
    format!("GPUWATCH_{}", flag.to_uppercase().replace(['-', '.'], "_"))
}

/// Every `GPUWATCH_*` name gpuwatch knows, in table order.
pub fn known_env_vars() -> Vec<String> {
    super::table::env_flags()
        .map(env_var)
        .chain(OTHER_VARS.iter().map(|v| v.to_string()))
        // The alert command's facts: a gpuwatch that command starts must not refuse them.
        .chain(
            crate::alert_settings::ENV_NAMES
                .iter()
                .map(|v| v.to_string()),
        )
        .collect()
}

/// Refuses the first `GPUWATCH_*` name in `names` that gpuwatch does not read, suggesting
/// the nearest known one when it is a likely typo. Other variables are none of our business.
pub fn check_env_names(names: impl IntoIterator<Item = String>) -> Result<(), SettingsError> {
    let known = known_env_vars();
    let mut unknown: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("GPUWATCH_") && !known.contains(n))
        .collect();
    // The environment's order is arbitrary; the same environment gives the same message.
    unknown.sort();
    let Some(name) = unknown.into_iter().next() else {
        return Ok(());
    };
    let nearest = known
        .iter()
        .map(|k| (distance(&name, k), k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= 2);
    let why = match nearest {
        Some((_, k)) => format!("unknown setting; did you mean {k}?"),
        // One line: the list of every name (~70) once filled a screen with one error.
        None => "unknown setting; a flag --some-flag is GPUWATCH_SOME_FLAG here \
                 (gpuwatch --help lists the flags)"
            .to_string(),
    };
    Err(SettingsError::new(name, why, None))
}

/// Refuses the first `GPUWATCH_*` variable (by name order) whose value is not UTF-8: the
/// settings read values as text, and a value that is not would otherwise count as unset and
/// the setting be ignored without a word. The value is shown escaped, as `ps` would.
pub fn check_env_values(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<(), SettingsError> {
    let mut bad: Vec<(String, std::ffi::OsString)> = vars
        .into_iter()
        .map(|(name, value)| (name.to_string_lossy().into_owned(), value))
        .filter(|(name, value)| name.starts_with("GPUWATCH_") && value.to_str().is_none())
        .collect();
    bad.sort();
    let Some((name, value)) = bad.into_iter().next() else {
        return Ok(());
    };
    let shown = crate::text_safe::escape_bytes(value.as_encoded_bytes());
    Err(SettingsError::new(
        name,
        "the value is not valid UTF-8".into(),
        Some(format!("\"{shown}\"")),
    ))
}

/// Edit distance counting an adjacent swap as one edit (`LISTNE` → `LISTEN` is 1).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(names: &[&str]) -> Result<(), String> {
        check_env_names(names.iter().map(|n| n.to_string())).map_err(|e| e.to_string())
    }

    #[test]
    fn known_and_foreign_names_pass() {
        check(&[
            "GPUWATCH_LISTEN",
            "GPUWATCH_CONFIG",
            "GPUWATCH_NVML_LIB",
            "HOME",
        ])
        .unwrap();
        check(&["GPUWATCH_FAKE_NVML_SCENARIO", "GPUWATCHER", "PATH"]).unwrap();
    }

    #[test]
    fn a_typo_gets_a_suggestion() {
        assert_eq!(
            check(&["GPUWATCH_LISTNE"]).unwrap_err(),
            "GPUWATCH_LISTNE: unknown setting; did you mean GPUWATCH_LISTEN?"
        );
        assert_eq!(
            check(&["GPUWATCH_INTERVALL"]).unwrap_err(),
            "GPUWATCH_INTERVALL: unknown setting; did you mean GPUWATCH_INTERVAL?"
        );
    }

    #[test]
    fn a_stranger_gets_one_line_saying_how_names_are_made() {
        let err = check(&["GPUWATCH_COLOUR_SCHEME"]).unwrap_err();
        assert_eq!(
            err,
            "GPUWATCH_COLOUR_SCHEME: unknown setting; a flag --some-flag is \
             GPUWATCH_SOME_FLAG here (gpuwatch --help lists the flags)"
        );
    }

    #[test]
    fn a_value_that_is_not_utf8_is_refused_by_name() {
        use std::os::unix::ffi::OsStringExt;
        let os = |s: &[u8]| std::ffi::OsString::from_vec(s.to_vec());
        let vars = vec![
            (os(b"HOME"), os(b"/home/\xff")),
            (os(b"GPUWATCH_INTERVAL"), os(b"\xff1s")),
        ];
        assert_eq!(
            check_env_values(vars).unwrap_err().to_string(),
            "GPUWATCH_INTERVAL: the value is not valid UTF-8 (got \"\\xff1s\")"
        );
        check_env_values(vec![(os(b"GPUWATCH_INTERVAL"), os(b"2s"))]).unwrap();
    }

    #[test]
    fn env_names_follow_the_flags() {
        assert_eq!(env_var("temp-warn"), "GPUWATCH_TEMP_WARN");
        assert_eq!(env_var("record-max-size"), "GPUWATCH_RECORD_MAX_SIZE");
    }
}
