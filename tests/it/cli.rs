//! The binary as a user runs it: headless output, errors and exit codes.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::common;
use crate::serve_support;

fn gpuwatch() -> Command {
    common::clean_command()
}

fn json(args: &[&str]) -> Value {
    let out = gpuwatch()
        .args(args)
        .arg("--json")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("valid JSON")
}

#[test]
fn once_prints_a_text_snapshot() {
    gpuwatch()
        .args(["--demo", "--once"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "demo-gpu-server  driver 550.54.15  CUDA 12.4  8 GPUs  free: 6",
        ))
        .stdout(predicate::str::contains("NVIDIA H100 80GB HBM3"))
        .stdout(predicate::str::contains("alice"))
        .stdout(predicate::str::contains("python train.py"))
        .stdout(predicate::str::contains("no process 12.9G"));
}

#[test]
fn not_a_terminal_implies_once() {
    // assert_cmd captures stdout through a pipe, so no --once is needed.
    gpuwatch()
        .args(["--demo", "--demo-gpus", "2"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stdout(predicate::str::contains("2 GPUs"));
}

#[test]
fn json_has_real_numbers_and_nulls() {
    let doc = json(&["--demo", "--demo-gpus", "3"]);
    assert_eq!(doc["schema_version"], 2);
    assert!(doc["schema_minor"].is_u64());
    let gpus = doc["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 3);
    let g0 = &gpus[0];
    assert_eq!(g0["index"], 0);
    assert!(g0["uuid"].as_str().unwrap().starts_with("GPU-"));
    assert!(
        g0["memory_total"].as_u64().unwrap() > 80_000_000_000,
        "bytes, not GiB"
    );
    assert!(
        g0["temperature_gpu"].is_u64(),
        "°C as a number: {}",
        g0["temperature_gpu"]
    );
    assert!(g0["power_draw"].is_f64() && g0["enforced_power_limit"] == 700.0);
    assert!(g0["utilization_gpu"].as_u64().unwrap() <= 100);
    assert_eq!(g0["status"], "ok");
    let procs = doc["processes"].as_array().unwrap();
    let p = procs.iter().find(|p| p["user"] == "alice").unwrap();
    assert!(p["used_gpu_memory"].as_u64().unwrap() > 1 << 30);
    assert_eq!(p["type"], "C");
    assert!(p["elapsed"].as_f64().unwrap() >= 5.0 * 3600.0);
    assert!(doc["warnings"].is_array());
    assert_eq!(doc["free_gpus"], serde_json::json!([]));
}

#[test]
fn same_seed_same_readings_other_seed_other_readings() {
    let readings = |seed: &str| {
        let doc = json(&["--demo", "--seed", seed]);
        doc["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["utilization_gpu"].clone(), g["power_draw"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(readings("7"), readings("7"));
    assert_ne!(readings("7"), readings("8"));
}

#[test]
fn demo_gpu_count_is_checked() {
    assert_eq!(
        json(&["--demo", "--demo-gpus", "64"])["gpus"]
            .as_array()
            .unwrap()
            .len(),
        64
    );
    gpuwatch()
        .args(["--demo", "--demo-gpus", "65"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --demo-gpus: must be between 1 and 64 (got \"65\")\n");
}

#[test]
fn bad_interval_is_one_clear_line() {
    gpuwatch()
        .args(["--demo", "--interval", "50ms"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --interval: must be at least 100ms (got \"50ms\")\n");
}

#[test]
fn without_nvml_it_says_so_and_points_at_demo() {
    let out = gpuwatch()
        .args(["--once", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .assert()
        .code(2)
        .stdout("")
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("gpuwatch: cannot load the NVML library"),
        "{err}"
    );
    assert!(
        err.contains("is the NVIDIA driver installed?") && err.contains("try: gpuwatch --demo"),
        "{err}"
    );
}

#[test]
fn source_auto_falls_back_to_the_demo() {
    gpuwatch()
        .args([
            "--source",
            "auto",
            "--once",
            "--nvml-lib",
            "/nonexistent/libnvidia-ml.so.1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("showing the simulated demo fleet"))
        .stdout(predicate::str::contains("demo-gpu-server"));
}

#[test]
fn only_restricts_what_is_shown() {
    let doc = json(&["--demo", "--only", "0,GPU-5e0c0002"]);
    let indices: Vec<u64> = doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, vec![0, 2]);
    assert!(
        doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["gpu_index"] == 0 || p["gpu_index"] == 2)
    );
    gpuwatch()
        .args(["--demo", "--once", "--only", "0,,2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--only").and(predicate::str::contains("empty")));
}

// Regression tests for the issue "One model, one view, one wire format" (settings part).

#[test]
fn only_that_matches_no_gpu_names_the_selector() {
    for (args, why) in [
        (
            &["--only", "99"][..],
            "99 matches no GPU (this host has 0-7)",
        ),
        (
            &["--only", "0,GPU-dead"][..],
            "GPU-dead matches no GPU (this host has 0-7)",
        ),
    ] {
        gpuwatch()
            .args(["--demo", "--once"])
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!("gpuwatch: --only: {why}\n"));
    }
    // From the environment it names the variable; pick and serve check it too.
    gpuwatch()
        .env("GPUWATCH_ONLY", "12")
        .args(["--demo", "--demo-gpus", "2", "pick"])
        .assert()
        .code(2)
        .stderr("gpuwatch: GPUWATCH_ONLY: 12 matches no GPU (this host has 0-1)\n");
    gpuwatch()
        .args(["--demo", "serve", "--listen", "127.0.0.1:0", "--only", "9"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr("gpuwatch: --only: 9 matches no GPU (this host has 0-7)\n");
}

#[test]
fn once_with_a_remote_host_down_prints_the_rest_then_exits_1() {
    let live = serve_support::Exporter::demo(&[]);
    live.wait_ready();
    let dead = format!("127.0.0.1:{}", serve_support::free_port());
    let remotes = format!("{},{dead}", live.addr);
    let out = gpuwatch()
        .args(["--remote", &remotes, "--once", "--json"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the whole document");
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 8, "{doc}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("gpuwatch: host {dead} not answering: ")),
        "{err}"
    );
    // The text snapshot too, in full.
    gpuwatch()
        .args(["--remote", &remotes, "--once"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("WARNINGS").and(predicate::str::contains("COMMAND")));
}

#[test]
fn all_mode_flags_work_after_a_subcommand() {
    let recording = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/demo-recording.ndjson"
    );
    let out = gpuwatch()
        .args(["replay", recording, "--once", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(doc["host"]["hostname"], "demo-gpu-server");
    gpuwatch()
        .args([
            "replay", recording, "--once", "--theme", "mono", "--sort", "pid",
        ])
        .args(["--history", "1m", "--compact", "--readonly", "--no-color"])
        .assert()
        .success()
        .stdout(predicate::str::contains("demo-gpu-server"));
    // No setting is shown as required in usage lines.
    gpuwatch()
        .args(["replay", "--zzzq"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "Usage: gpuwatch replay [OPTIONS] <FILE>\n",
        ));
    // Its usage keeps `[OPTIONS]` (issue 20: the global ones are hidden from its help).
    gpuwatch()
        .arg("replay")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "Usage: gpuwatch replay [OPTIONS] <FILE>\n",
        ));
}

/// Issue 20: `--help` is wrapped to the terminal's width (clap's `wrap_help`; COLUMNS when
/// stdout is not a terminal), and a subcommand's help lists its own options and points to
/// `gpuwatch --help` for the ~50 global ones (`pick --help` was 191 lines of mostly those).
/// The globals still parse after a subcommand, its usage line is as before, and the man
/// page still lists every option.
#[test]
fn help_fits_the_terminal_and_subcommands_show_their_own_options() {
    let help = |args: &[&str], columns: &str| {
        let out = gpuwatch()
            .args(args)
            .env("COLUMNS", columns)
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    for args in [&["--help"][..], &["pick", "--help"], &["serve", "--help"]] {
        let text = help(args, "80");
        let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(long.is_empty(), "{args:?} at 80 columns: {long:#?}");
    }
    let wide = help(&["--help"], "200");
    assert!(
        wide.lines().any(|l| l.chars().count() > 120),
        "uses a wide terminal"
    );
    let pick = help(&["pick", "--help"], "100");
    assert!(pick.lines().count() < 60, "{pick}");
    assert!(
        pick.contains("--count <N>") && pick.contains("--min-free"),
        "{pick}"
    );
    assert!(
        !pick.contains("--interval <") && !pick.contains("--alert-webhook"),
        "{pick}"
    );
    let words = pick.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("apply here too; `gpuwatch --help` lists them"),
        "{pick}"
    );
    assert!(pick.contains("Usage: gpuwatch pick [OPTIONS]"), "{pick}");
    let replay = help(&["replay", "--help"], "100");
    assert!(
        replay.contains("Usage: gpuwatch replay [OPTIONS] <FILE>"),
        "{replay}"
    );
    let main = help(&["--help"], "100");
    assert!(
        main.contains("--interval") && main.contains("--alert-webhook"),
        "{main}"
    );
    // A global flag after the subcommand still parses, short and long.
    gpuwatch()
        .args([
            "pick", "--demo", "-i", "1s", "--only", "6", "--format", "indices",
        ])
        .assert()
        .success()
        .stdout("6\n");
    let man = gpuwatch().arg("man").assert().success();
    let roff = String::from_utf8(man.get_output().stdout.clone()).unwrap();
    assert!(
        roff.contains("interval") && roff.contains("alert\\-webhook"),
        "{roff}"
    );
}

#[test]
fn help_offers_only_accepted_themes() {
    // Wide enough that the help does not wrap the line.
    let out = gpuwatch()
        .arg("--help")
        .env("COLUMNS", "500")
        .assert()
        .success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let theme = help.lines().find(|l| l.contains("--theme <")).unwrap();
    assert!(
        theme.contains("[possible values: dark, light, mono]"),
        "{theme}"
    );
    assert!(!theme.contains("none"), "{theme}");
    gpuwatch()
        .args(["--demo", "--once", "--theme", "mono"])
        .assert()
        .success();
}

#[test]
fn durations_say_which_forms_are_accepted() {
    gpuwatch()
        .args(["--demo", "--interval", "2x"])
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: --interval: not a duration: use a number with ms, s, m or h, \
             e.g. 500ms, 2s, 1m (got \"2x\")\n",
        );
    gpuwatch()
        .env("GPUWATCH_TEMP_HOLD", "soon")
        .args(["--demo"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "gpuwatch: GPUWATCH_TEMP_HOLD: not a duration: use a number with ms, s, m or h",
        ));
}

#[test]
fn an_unknown_gpuwatch_variable_is_refused() {
    gpuwatch()
        .env("GPUWATCH_LISTNE", "0.0.0.0:9400")
        .args(["--demo", "--once"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("gpuwatch: GPUWATCH_LISTNE: unknown setting; did you mean GPUWATCH_LISTEN?\n");
    let out = gpuwatch()
        .env("GPUWATCH_WHATEVER", "1")
        .args(["config", "check"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("gpuwatch: GPUWATCH_WHATEVER: unknown setting; a flag --some-flag is")
            && err.len() < 140,
        "{err}"
    );
}

#[test]
fn source_and_demo_come_from_the_environment() {
    for (name, value) in [("GPUWATCH_DEMO", "1"), ("GPUWATCH_SOURCE", "demo")] {
        gpuwatch()
            .env(name, value)
            .env("GPUWATCH_DEMO_GPUS", "3")
            .arg("--once")
            .assert()
            .success()
            .stdout(
                predicate::str::contains("demo-gpu-server").and(predicate::str::contains("3 GPUs")),
            );
    }
    gpuwatch()
        .env("GPUWATCH_SOURCE", "cuda")
        .arg("--once")
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: GPUWATCH_SOURCE: unknown source; use nvml, auto, amd, intel or demo (got \"cuda\")\n",
        );
}

#[test]
fn recording_comes_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ndjson");
    gpuwatch()
        .env("GPUWATCH_RECORD", &path)
        .env("GPUWATCH_RECORD_MAX_SIZE", "1MiB")
        .args(["--demo", "--once"])
        .assert()
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    let header = format!(
        "{{\"gpuwatch_recording\":{}",
        gpuwatch::record::RECORDING_VERSION
    );
    assert!(text.starts_with(&header), "{text}");
    gpuwatch()
        .env("GPUWATCH_RECORD_MAX_SIZE", "1MiB")
        .args(["--demo", "--once"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "gpuwatch: GPUWATCH_RECORD_MAX_SIZE: only with --record",
        ));
}

#[test]
fn serve_settings_come_from_the_environment() {
    gpuwatch()
        .env("GPUWATCH_LISTEN", "nowhere")
        .args(["--demo", "serve"])
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: GPUWATCH_LISTEN: not an IP:PORT address such as 127.0.0.1:19445 or \
             0.0.0.0:19445 (got \"nowhere\")\n",
        );
    // GPUWATCH_DCGM_COMPAT turns on the DCGM names.
    let mut cmd = serve_support::gpuwatch();
    cmd.env("GPUWATCH_DCGM_COMPAT", "1").arg("--demo");
    let exporter = serve_support::Exporter::start(cmd, &[]);
    exporter.wait_ready();
    assert!(
        exporter
            .get("/metrics")
            .body
            .contains("DCGM_FI_DEV_GPU_TEMP")
    );
}

#[test]
fn the_demo_opens_mid_story_with_every_warning_kind_and_the_host_load() {
    let doc = json(&["--demo"]);
    let kinds: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    for kind in ["oom_risk", "overheating", "idle_holder", "stale_vram"] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    let host = &doc["host"];
    assert!(host["cpu_percent"].as_f64().unwrap() > 0.0, "{host}");
    assert!(host["memory_used"].as_u64().unwrap() < host["memory_total"].as_u64().unwrap());
    assert_eq!(host["load_average"].as_array().unwrap().len(), 3);
    assert_eq!(doc["schema_minor"], gpuwatch::wire::SCHEMA_MINOR);
}

/// Hardening round 3 §19 (and "Instant and truthful" §5): a closed standard output
/// (`| head -c 100`, `| head -1`) ends every output quietly with exit 0, as `yes | head`
/// users expect. Before: a panic, a backtrace and exit 101. The pipe's reading end is
/// closed before the program writes, so its first write fails for sure.
#[test]
fn a_closed_stdout_ends_every_output_quietly() {
    for args in [
        &["--demo", "--once", "--json"][..],
        &["--demo", "--once"],
        &["--demo", "pick", "-n", "1"],
        &["completions", "zsh"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", common::EMPTY_HOME)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).as_ref()
            ),
            (Some(0), ""),
            "{args:?}"
        );
    }
}

/// `gpuwatch man`: roff from the clap definitions, so the page names the options `--help` has.
#[test]
fn man_prints_a_roff_page_naming_the_main_options() {
    let out = gpuwatch()
        .arg("man")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let page = String::from_utf8(out).expect("UTF-8 roff");
    assert!(page.contains(".TH gpuwatch 1"), "no title line:\n{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    // roff escapes '-' as '\-'.
    for option in [
        "demo", "source", "interval", "once", "json", "only", "readonly", "remote",
    ] {
        let spelt = format!("\\fB\\-\\-{option}\\fR");
        assert!(
            page.contains(&spelt),
            "the page does not describe --{option}"
        );
    }
    // Every line is text or a request/macro; a stray '.' or '\'' at a line's start would be
    // swallowed by troff as an unknown request.
    for line in page
        .lines()
        .filter(|l| l.starts_with('.') || l.starts_with('\''))
    {
        let name = line[1..].split_whitespace().next().unwrap_or("");
        let known = [
            "TH", "SH", "SS", "TP", "IP", "PP", "RS", "RE", "br", "B", "I", "ie", "el",
        ];
        assert!(known.contains(&name), "unexpected roff request: {line}");
    }
    assert!(
        !page.contains("gpuwatch\\-man("),
        "the hidden man subcommand is listed"
    );
    render_with_groff(&page);
}

/// `gpuwatch man --dir`: a page per subcommand, so every page the main one names exists.
#[test]
fn man_dir_writes_every_page_the_main_page_names() {
    let dir = tempfile::tempdir().unwrap();
    gpuwatch()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    let main = std::fs::read_to_string(dir.path().join("gpuwatch.1")).unwrap();
    let named: Vec<String> = main
        .lines()
        .filter_map(|l| l.strip_suffix("(1)"))
        .map(|name| name.replace("\\-", "-"))
        .collect();
    assert!(named.contains(&"gpuwatch-serve".to_string()), "{named:?}");
    for name in &named {
        assert!(
            dir.path().join(format!("{name}.1")).is_file(),
            "gpuwatch.1 names {name}(1), which was not written"
        );
    }
    let serve = std::fs::read_to_string(dir.path().join("gpuwatch-serve.1")).unwrap();
    assert!(
        serve.contains("\\-\\-listen"),
        "gpuwatch-serve.1 lacks --listen"
    );
}

/// Renders the page as `man` would (groff with preconv for UTF-8, every warning on) and
/// fails on any warning. Without groff the test says so; in CI (`CI=true`) that is a failure.
fn render_with_groff(page: &str) {
    let rendered = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww"])
        .write_stdin(page.to_owned())
        .output();
    let out = match rendered {
        Ok(out) => out,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("groff is needed in CI to render the man page: {e}")
        }
        Err(e) => {
            eprintln!("groff not runnable ({e}): skipping the man page rendering check");
            return;
        }
    };
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && warnings.is_empty(),
        "groff: {warnings}"
    );
    // grotty writes bold and italics as overstrikes ("N\bN", "_\bx"): keep the last of each.
    let mut bytes = Vec::new();
    for &b in &out.stdout {
        if b == 8 {
            bytes.pop();
        } else {
            bytes.push(b);
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    for word in ["OPTIONS", "interval", "SUBCOMMANDS"] {
        assert!(
            text.contains(word),
            "the rendered page lacks {word}:\n{text}"
        );
    }
}

/// What the release script and the image install: `scripts/man-pages.sh` leaves gzipped pages
/// under PREFIX/share/man/man1, and both of them call it.
#[test]
fn man_pages_script_installs_gzipped_pages_for_release_and_image() {
    let root = env!("CARGO_MANIFEST_DIR");
    let prefix = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(format!("{root}/scripts/man-pages.sh"))
        .arg(assert_cmd::cargo::cargo_bin("gpuwatch"))
        .arg(prefix.path())
        .status()
        .unwrap();
    assert!(status.success());
    let page = prefix.path().join("share/man/man1/gpuwatch.1.gz");
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{} is not gzip", page.display());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(".ie"));
    assert!(
        prefix
            .path()
            .join("share/man/man1/gpuwatch-pick.1.gz")
            .is_file()
    );
    for file in ["scripts/release.sh", "deploy/Dockerfile"] {
        let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
        assert!(
            text.lines()
                .any(|l| !l.trim_start().starts_with('#') && l.contains("scripts/man-pages.sh")),
            "{file} does not install the man pages"
        );
    }
}

/// Issue 23: a flag this run would not use is refused naming it (exit 2), never dropped.
#[test]
fn flags_this_run_would_ignore_are_refused_by_name() {
    let refused = |args: &[&str], line: &str| {
        gpuwatch()
            .args(args)
            .assert()
            .code(2)
            .stdout("")
            .stderr(format!("gpuwatch: {line}\n"));
    };
    let real = "only with the demo fleet (--demo or --source demo); this run reads real GPUs \
                (--source nvml)";
    refused(
        &["--demo-gpus", "2", "--once"],
        &format!("--demo-gpus: {real}"),
    );
    refused(&["--seed", "7", "--once"], &format!("--seed: {real}"));
    refused(
        &["--source", "amd", "--demo-scenario", "mixed", "--once"],
        "--demo-scenario: only with the demo fleet (--demo or --source demo); this run reads \
         real GPUs (--source amd)",
    );
    let recording = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/demo-recording.ndjson"
    );
    refused(
        &["replay", recording, "--seed", "3", "--once"],
        "--seed: only with the demo fleet (--demo or --source demo); this run reads a recording",
    );
    gpuwatch()
        .env("GPUWATCH_SEED", "3")
        .args(["--once"])
        .assert()
        .code(2)
        .stderr(predicate::str::starts_with(
            "gpuwatch: GPUWATCH_SEED: only with the demo fleet",
        ));
    for (flag, why) in [
        ("--once", "not with serve, which serves until stopped"),
        ("--json", "not with serve: its JSON is at /api/v1/snapshot"),
        ("--mouse", "only in the monitor; serve draws no screen"),
        ("--compact", "only in the monitor; serve draws no screen"),
        ("--no-bell", "only in the monitor; serve draws no screen"),
        ("--no-color", "only in the monitor; serve draws no screen"),
    ] {
        gpuwatch()
            .args(["serve", "--demo", flag])
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with(format!(
                "gpuwatch: {flag}: {why}"
            )));
    }
    refused(
        &["serve", "--demo", "--theme", "light"],
        "--theme: only in the monitor; serve draws no screen",
    );
    refused(
        &["--sort", "pid", "serve", "--demo"],
        "--sort: only in the monitor; serve draws no screen",
    );
    refused(
        &["serve", "--demo", "--process-metrics-limit", "5"],
        "--process-metrics-limit: only with --process-metrics (per-PID series are off)",
    );
    gpuwatch()
        .env("GPUWATCH_PROCESS_METRICS_LIMIT", "5")
        .args(["serve", "--demo"])
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: GPUWATCH_PROCESS_METRICS_LIMIT: only with --process-metrics (per-PID \
             series are off)\n",
        );
    // What stays accepted: the demo's flags with the demo or auto, the monitor's settings
    // from the environment under serve (a shell may export them for the monitor).
    gpuwatch()
        .args([
            "--source",
            "auto",
            "--demo-gpus",
            "2",
            "--seed",
            "5",
            "--once",
        ])
        .env("GPUWATCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .assert()
        .success()
        .stdout(predicate::str::contains("2 GPUs"));
}

/// Issue 23: sizes need a unit (a bare 1073741824 was read as that many GiB) and GB is refused
/// rather than guessed, from a flag as from `pick`.
#[test]
fn sizes_need_a_unit_and_gb_is_refused() {
    gpuwatch()
        .args(["--demo", "--once", "--idle-min-vram", "1073741824"])
        .assert()
        .code(2)
        .stderr(
            "gpuwatch: --idle-min-vram: \"1073741824\" has no unit: write 1073741824B for bytes, \
             or e.g. 1073741824GiB, 1073741824MiB\n",
        );
    gpuwatch()
        .args(["--demo", "pick", "--min-free", "20GB"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "GB is ambiguous (10^n or 2^n bytes?); write 20GiB",
        ));
    gpuwatch()
        .args(["--demo", "--once", "--stale-min-vram", "1073741824B"])
        .assert()
        .success();
}
