//! Bad input never panics (issue 6): property tests over everything gpuwatch reads from a
//! person or another program — the config file (through `Settings::resolve` and
//! `config check`), the process filter typed after `/`, a remote host's snapshot JSON and a
//! recording's NDJSON. Each property only asks "an error or a value, never a panic", with
//! inputs both random and mutated from valid documents (random text alone rarely gets past
//! the first brace). 256 cases per property keeps the whole file to a few seconds.

use crate::common;

use std::io::Cursor;
use std::time::{Duration, SystemTime};

use clap::Parser;
use gpuwatch::cli::Cli;
use gpuwatch::config::{Settings, check_file, default_file_text};
use gpuwatch::model::filter::Filter;
use proptest::prelude::*;

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        // A failure is shrunk, but not for minutes on a 2-core CI machine.
        max_shrink_iters: 512,
        // No regressions file written into tests/: a failure prints its minimal input.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Values that break naive parsers: empty, signs, huge and tiny numbers, units, other
/// types, unbalanced quotes and brackets, control characters, non-ASCII.
fn nasty_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("1e308".to_string()),
        Just("-1e308".to_string()),
        Just("1e30".to_string()),
        Just("18446744073709551616".to_string()),
        Just("9223372036854775807".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("\"\"".to_string()),
        Just("\"0ms\"".to_string()),
        Just("\"99999999999999999999h\"".to_string()),
        Just("\"-5s\"".to_string()),
        Just("\"1.5.3GiB\"".to_string()),
        Just("[]".to_string()),
        Just("[\"vram\", \"vram\"]".to_string()),
        Just("{}".to_string()),
        Just("true".to_string()),
        Just("\"\u{0}\"".to_string()),
        Just("\"ünïcödé\"".to_string()),
        Just("\"".to_string()),
        Just("[".to_string()),
        "[-+]?[0-9]{1,25}(\\.[0-9]{0,5})?".prop_map(|s| s),
        "\"[0-9]{0,20}(ms|s|m|h|d|GiB|G|%|x)?\"".prop_map(|s| s),
        any::<String>().prop_map(|s| format!("{s:?}")),
    ]
}

// ---------------------------------------------------------------------------------------
// The config file
// ---------------------------------------------------------------------------------------

/// The commented default file with one `key = value` line's value replaced, or a line
/// dropped, duplicated or appended with junk: close enough to valid to reach every check.
fn mutated_config() -> impl Strategy<Value = String> {
    let base: Vec<String> = default_file_text().lines().map(str::to_string).collect();
    let n = base.len();
    (0..n, 0..4u8, nasty_value(), "[a-z_.\\[\\]]{0,20}").prop_map(move |(at, how, value, junk)| {
        let mut lines = base.clone();
        // Uncomment every setting so the mutation lands on a live line.
        for l in &mut lines {
            if let Some(rest) = l.strip_prefix("# ").filter(|r| r.contains(" = ")) {
                *l = rest.to_string();
            }
        }
        match how {
            0 => {
                if let Some((key, _)) = lines[at].split_once(" = ") {
                    lines[at] = format!("{key} = {value}");
                }
            }
            1 => {
                lines.remove(at);
            }
            2 => {
                let dup = lines[at].clone();
                lines.insert(at, dup);
            }
            _ => lines.insert(at, format!("{junk} = {value}")),
        }
        lines.join("\n")
    })
}

fn resolve_file(text: &str) -> Result<Settings, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let cli = Cli::try_parse_from(["gpuwatch", "--config", path.to_str().unwrap()]).unwrap();
    let env = |name: &str| (name == "HOME").then(|| common::EMPTY_HOME.to_string());
    let resolved = Settings::resolve(&cli, &env, true).map_err(|e| e.to_string());
    // `config check` reads the same file by another path; it must agree it is (in)valid.
    let checked = check_file(&path).map_err(|e| e.to_string());
    assert_eq!(
        resolved.is_ok(),
        checked.is_ok(),
        "resolve: {resolved:?}\ncheck: {checked:?}"
    );
    if let Err(e) = &resolved {
        assert!(
            e.contains("config.toml"),
            "a config error names the file: {e}"
        );
    }
    resolved
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn config_text_mutated_from_the_template_never_panics(text in mutated_config()) {
        let _ = resolve_file(&text);
    }

    #[test]
    fn config_text_at_random_never_panics(text in any::<String>()) {
        let _ = resolve_file(&text);
    }
}

// ---------------------------------------------------------------------------------------
// The filter line
// ---------------------------------------------------------------------------------------

/// Words shaped like filter terms, with nasty values.
fn filter_text() -> impl Strategy<Value = String> {
    let term = prop_oneof![
        "(user|u|gpu|g|cmd|command|c|pid|p|x|):[^ ]{0,12}",
        "vram(>|<|>=|<=|=|=>|<<)[-+]?[0-9.]{0,25}(k|m|g|t|ki|mi|gi|ti|kib|gib|b|x)?",
        "gpu:[0-9,]{0,12}",
        "pid:[-0-9]{0,25}",
        any::<String>(),
    ];
    prop::collection::vec(term, 0..6).prop_map(|t| t.join(" "))
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn filter_parse_and_match_never_panic(text in filter_text()) {
        if let Ok(filter) = Filter::parse(&text) {
            let state = common::demo_state(8, 3, 120, 40);
            for row in &state.model.procs().all {
                let _ = filter.matches(row);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Documents from other programs: a remote host's snapshot, a recording
// ---------------------------------------------------------------------------------------

/// Replaces the `nth` JSON scalar (number, string, true/false/null) in `doc` with
/// `value`, or truncates the document there when `value` is empty.
fn mutate_json(doc: &str, nth: usize, value: &str) -> String {
    let scalar = regex_lite_scalars(doc);
    if scalar.is_empty() {
        return doc.to_string();
    }
    let (start, end) = scalar[nth % scalar.len()];
    if value.is_empty() {
        return doc[..start].to_string();
    }
    format!("{}{}{}", &doc[..start], value, &doc[end..])
}

/// Byte ranges of the scalar values after a `:` or in an array (a tiny scanner, so the
/// test needs no regex crate): enough to aim mutations at values rather than at syntax.
fn regex_lite_scalars(doc: &str) -> Vec<(usize, usize)> {
    let bytes = doc.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if matches!(bytes[i], b':' | b'[' | b',') {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let start = j;
            if j < bytes.len() && bytes[j] == b'"' {
                j += 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                j = (j + 1).min(bytes.len());
            } else {
                while j < bytes.len()
                    && !(matches!(bytes[j], b',' | b'}' | b']' | b'{' | b'[' | b':')
                        || bytes[j].is_ascii_whitespace())
                {
                    j += 1;
                }
            }
            let mut k = j;
            while k < bytes.len() && bytes[k].is_ascii_whitespace() {
                k += 1;
            }
            // A string followed by ':' is a key, not a value.
            let is_key = k < bytes.len() && bytes[k] == b':';
            if j > start && !is_key {
                out.push((start, j));
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

fn snapshot_doc() -> String {
    gpuwatch::headless::render_json(&common::demo_state(2, 3, 0, 0))
}

fn recording_text() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/demo-recording.ndjson"
    ))
    .unwrap()
    .lines()
    .take(4)
    .collect::<Vec<_>>()
    .join("\n")
}

/// A recording in the format written today (the fixture above is format 1).
fn recording_text_now() -> String {
    use gpuwatch::source::GpuSource;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("now.ndjson");
    let interval = Duration::from_secs(2);
    let mut rec =
        gpuwatch::record::RecordingSource::new(Box::new(common::sim(3)), &path, interval, None)
            .unwrap();
    for _ in 0..3 {
        rec.sample().unwrap();
    }
    drop(rec); // the recorder writes on its own thread; dropping waits for it
    std::fs::read_to_string(&path).unwrap()
}

fn fallback() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600)
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn snapshot_documents_mutated_from_a_real_one_never_panic(
        nth in 0usize..10_000,
        value in prop_oneof![nasty_value(), Just(String::new())],
    ) {
        let doc = mutate_json(&snapshot_doc(), nth, &value);
        let _ = gpuwatch::wire::read_snapshot(&doc, fallback());
    }

    #[test]
    fn snapshot_text_at_random_never_panics(text in any::<String>()) {
        let _ = gpuwatch::wire::read_snapshot(&text, fallback());
    }

    #[test]
    fn recordings_mutated_from_a_real_one_never_panic(
        nth in 0usize..10_000,
        value in prop_oneof![nasty_value(), Just(String::new())],
    ) {
        let text = mutate_json(&recording_text(), nth, &value);
        let _ = gpuwatch::record::parse(Cursor::new(text));
    }

    #[test]
    fn recordings_in_todays_format_mutated_never_panic(
        nth in 0usize..10_000,
        value in prop_oneof![nasty_value(), Just(String::new())],
    ) {
        let text = mutate_json(&recording_text_now(), nth, &value);
        let _ = gpuwatch::record::parse(Cursor::new(text));
    }

    #[test]
    fn recording_text_at_random_never_panics(
        lines in prop::collection::vec(any::<String>(), 0..4),
    ) {
        let header = "{\"gpuwatch_recording\":1,\"interval_ms\":1000,\"written_by\":\"x\"}";
        let text = std::iter::once(header.to_string()).chain(lines).collect::<Vec<_>>();
        let _ = gpuwatch::record::parse(Cursor::new(text.join("\n")));
    }
}

#[test]
fn the_json_scanner_finds_values_not_syntax() {
    let doc = r#"{"a": 1, "b": "x,y", "c": [true, null], "d": {"e": -2.5}}"#;
    let found: Vec<&str> = regex_lite_scalars(doc)
        .into_iter()
        .map(|(s, e)| &doc[s..e])
        .collect();
    assert_eq!(found, ["1", "\"x,y\"", "true", "null", "-2.5"]);
    assert_eq!(mutate_json(doc, 1, "7"), doc.replace("\"x,y\"", "7"));
}

/// Found by the properties above: numbers too large for a `Duration` or a `SystemTime`.
#[test]
fn huge_times_and_durations_are_errors() {
    let doc = snapshot_doc();
    let t = regex_lite_scalars(&doc)
        .into_iter()
        .find(|&(s, _)| doc[..s].ends_with("\"time\": "))
        .expect("a time field");
    for huge in ["1e30", "1e19", "1.8e19"] {
        let bad = format!("{}{huge}{}", &doc[..t.0], &doc[t.1..]);
        assert!(
            gpuwatch::wire::read_snapshot(&bad, fallback()).is_err(),
            "{huge}"
        );
        for rec in [recording_text(), recording_text_now()] {
            let line = rec.lines().nth(1).unwrap();
            let bad_line = line.replacen("\"time\":1767603600.0", &format!("\"time\":{huge}"), 1);
            assert_ne!(line, bad_line, "the recording has a time to replace");
            let text = format!("{}\n{bad_line}\n", rec.lines().next().unwrap());
            assert!(
                gpuwatch::record::parse(Cursor::new(text)).is_err(),
                "{huge}"
            );
        }
    }
    for huge in ["1e30", "1e20"] {
        assert!(
            resolve_file(&format!("interval = {huge}\n")).is_err(),
            "{huge}"
        );
    }
}
