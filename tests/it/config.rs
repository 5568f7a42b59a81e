//! Settings from flags, environment, the config file and defaults (flag > env > file >
//! default), every kind of config error naming file, line and key, and the `config` and
//! `completions` subcommands run through the binary (`pick`: tests/it/pick.rs). No test reads
//! the real HOME.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use clap::Parser;
use gpuwatch::cli::Cli;
use gpuwatch::config::{ServeSettings, Settings, check_file, default_file_text};
use gpuwatch::model::procs::{Column, SortDir, SortKey};
use gpuwatch::model::warnings::Thresholds;
use gpuwatch::present::ThemeName;
use gpuwatch::units::Bytes;
use gpuwatch::wire::WarningCode;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

/// Resolves `args` against exactly the variables in `vars`.
fn resolve(args: &[&str], vars: &[(&str, &str)]) -> Result<Settings, String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cli = Cli::try_parse_from(std::iter::once("gpuwatch").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    Settings::resolve(&cli, &|name| vars.get(name).cloned(), true).map_err(|e| e.to_string())
}

fn resolve_file(path: &Path) -> Result<Settings, String> {
    resolve(&["--config", path.to_str().unwrap()], &[])
}

/// A config home holding `gpuwatch/config.toml` with `text`, found as XDG_CONFIG_HOME.
fn config_home(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("gpuwatch")).unwrap();
    std::fs::write(dir.path().join("gpuwatch/config.toml"), text).unwrap();
    dir
}

#[test]
fn interval_flag_beats_env_beats_file_beats_default() {
    let home = config_home("interval = \"3s\"\n");
    let xdg = home.path().to_str().unwrap();
    let interval = |args: &[&str], vars: &[(&str, &str)]| resolve(args, vars).unwrap().interval;
    assert_eq!(interval(&[], &[]), Duration::from_secs(1), "default");
    assert_eq!(
        interval(&[], &[("XDG_CONFIG_HOME", xdg)]),
        Duration::from_secs(3),
        "file"
    );
    let env = [("XDG_CONFIG_HOME", xdg), ("GPUWATCH_INTERVAL", "4s")];
    assert_eq!(interval(&[], &env), Duration::from_secs(4), "env");
    assert_eq!(
        interval(&["-i", "5s"], &env),
        Duration::from_secs(5),
        "flag"
    );
    // An empty variable counts as unset, so the file shows through again.
    let empty = [("XDG_CONFIG_HOME", xdg), ("GPUWATCH_INTERVAL", "")];
    assert_eq!(interval(&[], &empty), Duration::from_secs(3));
}

#[test]
fn threshold_flag_beats_env_beats_file_beats_default() {
    let home = config_home("[thresholds]\ntemp_warn = 70\nidle_after = \"10m\"\n");
    let xdg = home.path().to_str().unwrap();
    let temp_warn =
        |args: &[&str], vars: &[(&str, &str)]| resolve(args, vars).unwrap().thresholds.temp_warn;
    assert_eq!(temp_warn(&[], &[]), 85, "default");
    assert_eq!(temp_warn(&[], &[("XDG_CONFIG_HOME", xdg)]), 70, "file");
    let env = [("XDG_CONFIG_HOME", xdg), ("GPUWATCH_TEMP_WARN", "75")];
    assert_eq!(temp_warn(&[], &env), 75, "env");
    assert_eq!(temp_warn(&["--temp-warn", "80"], &env), 80, "flag");
    let s = resolve(&["--idle-min-vram", "2GiB"], &env).unwrap();
    assert_eq!(s.thresholds.idle_after, Duration::from_secs(600), "file");
    assert_eq!(s.thresholds.idle_min_vram, Bytes(2 * Bytes::GIB), "flag");
}

#[test]
fn switches_from_env_can_turn_the_file_off() {
    let home = config_home("compact = true\nmouse = true\n");
    let xdg = home.path().to_str().unwrap();
    let s = resolve(&[], &[("XDG_CONFIG_HOME", xdg), ("GPUWATCH_COMPACT", "0")]).unwrap();
    assert!(!s.compact && s.mouse);
    let err = resolve(&[], &[("GPUWATCH_READONLY", "maybe")]).unwrap_err();
    assert_eq!(
        err,
        "GPUWATCH_READONLY: not a switch: use 1, true, yes, on or 0, false, no, off (got \"maybe\")"
    );
    assert!(
        resolve(&["--readonly"], &[("GPUWATCH_READONLY", "no")])
            .unwrap()
            .readonly
    );
}

#[test]
fn config_file_location() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    // Nothing at the usual place is fine.
    assert_eq!(resolve(&[], &[("HOME", h)]).unwrap().config_path, None);
    let file = home.path().join(".config/gpuwatch/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "theme = \"mono\"\n").unwrap();
    let s = resolve(&[], &[("HOME", h)]).unwrap();
    assert_eq!(
        (s.config_path, s.theme),
        (Some(file.clone()), ThemeName::Mono)
    );
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    let s = resolve(&[], &[("HOME", h), ("XDG_CONFIG_HOME", "rel")]).unwrap();
    assert_eq!(s.config_path, Some(file.clone()));
    // GPUWATCH_CONFIG and --config name a file that must exist.
    let missing = home.path().join("missing.toml");
    let m = missing.to_str().unwrap();
    let err = resolve(&[], &[("HOME", h), ("GPUWATCH_CONFIG", m)]).unwrap_err();
    assert!(
        err.starts_with(&format!("GPUWATCH_CONFIG: cannot read {m}: ")),
        "{err}"
    );
    let err = resolve(&["--config", m], &[]).unwrap_err();
    assert!(
        err.starts_with(&format!("--config: cannot read {m}: ")),
        "{err}"
    );
}

#[test]
fn a_valid_file_sets_what_it_says() {
    let s = resolve_file(&fixture("valid.toml")).unwrap();
    assert_eq!(s.interval, Duration::from_secs(2));
    assert_eq!(s.theme, ThemeName::Light);
    assert!(s.readonly && s.mouse && !s.compact);
    assert_eq!((s.sort, s.sort_dir), (SortKey::User, SortDir::Ascending));
    assert_eq!(
        s.columns,
        [
            Column::Gpu,
            Column::Pid,
            Column::User,
            Column::Vram,
            Column::Command
        ]
    );
    assert_eq!(
        s.thresholds,
        Thresholds {
            temp_warn: 80,
            idle_min_vram: Bytes(512 * Bytes::MIB),
            stale_after: Duration::from_secs(90),
            ..Thresholds::default()
        }
    );
    assert_eq!(s.config_path, Some(fixture("valid.toml")));
}

#[test]
fn sort_direction_belongs_to_the_files_column() {
    let home = config_home("[sort]\ncolumn = \"pid\"\ndescending = true\n");
    let xdg = [("XDG_CONFIG_HOME", home.path().to_str().unwrap())];
    let s = resolve(&[], &xdg).unwrap();
    assert_eq!((s.sort, s.sort_dir), (SortKey::Pid, SortDir::Descending));
    // A flag picks another column, which sorts its own way (CPU%: busiest first).
    let s = resolve(&["--sort", "cpu"], &xdg).unwrap();
    assert_eq!((s.sort, s.sort_dir), (SortKey::Cpu, SortDir::Descending));
    let s = resolve(&["--sort", "user"], &xdg).unwrap();
    assert_eq!((s.sort, s.sort_dir), (SortKey::User, SortDir::Ascending));
}

#[test]
fn every_file_error_names_file_line_and_key() {
    for (name, message) in [
        (
            "unknown_key.toml",
            "4: thresholds.temp_wran: unknown key (known keys here: oom_warn_percent, \
             oom_critical_percent, oom_time_to_full, temp_warn, temp_critical, temp_hold, \
             idle_min_vram, idle_after, stale_min_vram, stale_after)",
        ),
        (
            "wrong_type.toml",
            "2: compact: expected a boolean, not string \"yes\"",
        ),
        (
            "bad_duration.toml",
            "3: thresholds.temp_hold: not a duration: use a number with ms, s, m or h, \
             e.g. 500ms, 2s, 1m (got \"half a minute\")",
        ),
        (
            "bad_size.toml",
            "3: thresholds.idle_min_vram: unknown size unit \"gb-ish\" in \"1 GB-ish\" (use B, KiB, MiB, GiB or \
             TiB)",
        ),
        (
            "bad_column.toml",
            "4: columns.visible: unknown column; use one of gpu, pid, user, job, type, vram, gpu_util, \
             cpu, host_memory, time, command (got \"gpu_memory\")",
        ),
        (
            "warn_above_critical.toml",
            "7: thresholds.temp_warn: must not be above thresholds.temp_critical, which is 90 \
             (got 95)",
        ),
        (
            "not_toml.toml",
            "2: not valid TOML: string values must be quoted, expected literal string",
        ),
    ] {
        let path = fixture(name);
        let err = resolve_file(&path).unwrap_err();
        assert_eq!(err, format!("{}:{message}", path.display()), "{name}");
    }
}

/// Errors that need a file of their own shape, checked the same way.
#[test]
fn more_file_errors() {
    for (text, message) in [
        (
            "\n[columns]\nvisible = []\n",
            "3: columns.visible: must list at least one column (got [])",
        ),
        (
            "[columns]\nvisible = [\"pid\", \"pid\"]\n",
            "2: columns.visible: listed twice (got \"pid\")",
        ),
        (
            "theme = \"solarized\"\n",
            "1: theme: unknown theme; use dark, light or mono (got \"solarized\")",
        ),
        (
            "sort = { colum = \"pid\" }\n",
            "1: sort.colum: unknown key (known keys here: column, descending)",
        ),
        (
            "thresholds = 5\n",
            "1: thresholds: expected a table, not integer `5`",
        ),
        (
            "interval = \"10ms\"\n",
            "1: interval: must be at least 100ms (got \"10ms\")",
        ),
        (
            "[thresholds]\noom_warn_percent = 101\n",
            "2: thresholds.oom_warn_percent: must be a percentage between 0 and 100 (got 101)",
        ),
        (
            "[thresholds]\ntemp_critical = -1\n",
            "2: thresholds.temp_critical: expected a whole number ≥ 0, not integer `-1`",
        ),
        (
            "[sort]\ncolumn = \"colour\"\n",
            "2: sort.column: unknown column; use one of gpu, pid, user, job, type, vram, gpu_util, cpu, host_memory, time, command (got \"colour\")",
        ),
    ] {
        let home = config_home(text);
        let path = home.path().join("gpuwatch/config.toml");
        let err = resolve_file(&path).unwrap_err();
        assert_eq!(err, format!("{}:{message}", path.display()), "{text}");
    }
}

#[test]
fn conflicts_across_places_blame_the_stronger_one() {
    let home = config_home("[thresholds]\ntemp_critical = 80\n");
    let xdg = [("XDG_CONFIG_HOME", home.path().to_str().unwrap())];
    assert_eq!(
        resolve(&["--temp-warn", "85"], &xdg).unwrap_err(),
        "--temp-warn: must not be above thresholds.temp_critical, which is 80 (got \"85\")"
    );
    let env = [xdg[0], ("GPUWATCH_OOM_CRITICAL", "50")];
    assert_eq!(
        resolve(&[], &env).unwrap_err(),
        "GPUWATCH_OOM_CRITICAL: must not be below --oom-warn, which is 90 (got \"50\")"
    );
}

#[test]
fn the_default_file_is_exactly_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, default_file_text()).unwrap();
    let from_file = check_file(&path).unwrap();
    let defaults = resolve(&[], &[]).unwrap();
    assert_eq!(from_file.config_path.as_deref(), Some(path.as_path()));
    // Where the listen address came from is not part of what it is.
    let serve = ServeSettings {
        listen_origin: defaults.serve.listen_origin.clone(),
        ..from_file.serve.clone()
    };
    assert_eq!(
        Settings {
            config_path: None,
            serve,
            ..from_file
        },
        defaults
    );
    // Every key is written out, not just mentioned.
    for key in [
        "source",
        "interval",
        "history",
        "compact",
        "readonly",
        "mouse",
        "theme",
        "column",
        "descending",
        "visible",
        "oom_warn_percent",
        "oom_critical_percent",
        "oom_time_to_full",
        "temp_warn",
        "temp_critical",
        "temp_hold",
        "idle_min_vram",
        "idle_after",
        "stale_min_vram",
        "stale_after",
        "hosts",
        "with_local",
        "listen",
        "dcgm_compat",
        "process_metrics",
        "process_metrics_limit",
        "redact",
        "max_connections",
        "header_timeout",
        "idle_timeout",
    ] {
        assert!(
            default_file_text().contains(&format!("\n{key} = ")),
            "{key}"
        );
    }
}

/// The keys with no default are in the file as commented-out examples; uncommented they
/// must be valid too, or `config init` would teach a setting that stops gpuwatch.
#[test]
fn the_default_files_examples_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let examples = ["path", "max_size", "hosts_file", "only", "nvml_lib"];
    let mut uncommented = 0;
    let text: String = default_file_text()
        .lines()
        .map(|line| {
            let key = line.strip_prefix("# ").and_then(|l| l.split(" = ").next());
            if key.is_some_and(|k| examples.contains(&k)) {
                uncommented += 1;
                line[2..].to_string() + "\n"
            } else {
                line.to_string() + "\n"
            }
        })
        .collect();
    assert_eq!(uncommented, examples.len(), "{text}");
    std::fs::write(&path, text).unwrap();
    let s = check_file(&path).unwrap();
    let record = s.record.expect("[record] path set");
    assert_eq!(record.path, Path::new("gpuwatch.ndjson"));
    assert_eq!(record.max_size, Some(Bytes(100 * Bytes::MIB)));
    assert_eq!(
        s.remote.hosts_file.as_deref(),
        Some(Path::new("/etc/gpuwatch/hosts"))
    );
    assert_eq!(
        s.nvml_lib.as_deref(),
        Some(Path::new("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"))
    );
    assert_eq!(s.only.map(|l| l.len()), Some(2), "only = \"0,2\"");
}

/// The binary with a clean environment and a HOME of its own.
fn gpuwatch(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
    for (name, _) in std::env::vars() {
        if name.starts_with("GPUWATCH_") || name == "XDG_CONFIG_HOME" || name == "NO_COLOR" {
            cmd.env_remove(name);
        }
    }
    cmd.env("HOME", home).timeout(Duration::from_secs(30));
    cmd
}

#[test]
fn config_init_then_check() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(".config/gpuwatch/config.toml");
    gpuwatch(home.path())
        .args(["config", "init"])
        .assert()
        .success()
        .stdout(format!("{}\n", path.display()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), default_file_text());
    gpuwatch(home.path())
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(format!("ok: {}\n", path.display()));
    // A second init keeps the file.
    std::fs::write(&path, "interval = \"2s\"\n").unwrap();
    gpuwatch(home.path())
        .args(["config", "init"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "gpuwatch: {}: already exists; use --force to replace it\n",
            path.display()
        ));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "interval = \"2s\"\n"
    );
    gpuwatch(home.path())
        .args(["config", "init", "--force"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), default_file_text());
}

#[test]
fn config_init_and_check_at_a_path() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("a/b/gpuwatch.toml");
    let p = path.to_str().unwrap();
    gpuwatch(home.path())
        .args(["config", "init", p])
        .assert()
        .success()
        .stdout(format!("{p}\n"));
    gpuwatch(home.path())
        .args(["config", "check", p])
        .assert()
        .success()
        .stdout(format!("ok: {p}\n"));
    let bad = fixture("warn_above_critical.toml");
    gpuwatch(home.path())
        .args(["config", "check", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stdout("")
        .stderr(format!(
            "gpuwatch: {}:7: thresholds.temp_warn: must not be above \
             thresholds.temp_critical, which is 90 (got 95)\n",
            bad.display()
        ));
    gpuwatch(home.path())
        .args(["config", "check"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("config.toml: cannot read: "));
}

#[test]
fn a_bad_file_stops_the_monitor_with_one_line() {
    let home = tempfile::tempdir().unwrap();
    let bad = fixture("unknown_key.toml");
    let out = gpuwatch(home.path())
        .args(["--demo", "--once", "--config", bad.to_str().unwrap()])
        .assert()
        .code(2)
        .stdout("")
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!(
        "gpuwatch: {}:4: thresholds.temp_wran: unknown key",
        bad.display()
    )));
}

#[test]
fn completions_for_three_shells() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = gpuwatch(home.path())
            .args(["completions", shell])
            .assert()
            .success();
        let script = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        // fish spells a flag `-l interval`, bash and zsh `--interval`.
        assert!(
            script.contains("gpuwatch") && script.contains("interval"),
            "{shell}"
        );
    }
}

#[test]
fn serve_settings_flag_beats_env_beats_file() {
    let home = config_home(
        "[serve]\nlisten = \"0.0.0.0:9500\"\ndcgm_compat = true\nprocess_metrics = true\n",
    );
    let xdg = home.path().to_str().unwrap();
    let file = [("XDG_CONFIG_HOME", xdg)];
    let serve = |args: &[&str], vars: &[(&str, &str)]| resolve(args, vars).unwrap().serve;
    let s = serve(&["serve"], &[]);
    assert_eq!(s.listen.to_string(), "127.0.0.1:19445", "default");
    assert!(!s.dcgm_compat && !s.process_metrics);
    let s = serve(&["serve"], &file);
    assert_eq!(s.listen.to_string(), "0.0.0.0:9500", "file");
    assert!(s.dcgm_compat && s.process_metrics);
    assert!(
        s.listen_origin.ends_with("config.toml:2: serve.listen"),
        "{}",
        s.listen_origin
    );
    let env = [
        ("XDG_CONFIG_HOME", xdg),
        ("GPUWATCH_LISTEN", "127.0.0.1:9601"),
        ("GPUWATCH_DCGM_COMPAT", "0"),
    ];
    let s = serve(&["serve"], &env);
    assert_eq!(s.listen.to_string(), "127.0.0.1:9601", "env");
    assert_eq!(s.listen_origin, "GPUWATCH_LISTEN");
    assert!(!s.dcgm_compat, "env turns the file's switch off");
    let s = serve(
        &["serve", "--listen", "127.0.0.1:9702", "--dcgm-compat"],
        &env,
    );
    assert_eq!(s.listen.to_string(), "127.0.0.1:9702", "flag");
    assert!(s.dcgm_compat);
}

#[test]
fn the_new_serve_settings_flag_beats_env_beats_file_and_node_name_is_the_hostname_default() {
    let home = config_home(
        "[serve]\nhostname = \"from-file\"\nredact = true\nmax_connections = 8\n\
         header_timeout = \"3s\"\nidle_timeout = 20\nprocess_metrics_limit = 5\n\
         web_config_file = \"/etc/gpuwatch/web.yml\"\n",
    );
    let xdg = home.path().to_str().unwrap();
    let serve = |args: &[&str], vars: &[(&str, &str)]| resolve(args, vars).unwrap().serve;
    let s = serve(&["serve"], &[]);
    assert_eq!(s.hostname, None);
    assert!(!s.redact && s.web_config.is_none());
    assert_eq!(s.limits.max_connections, 64);
    assert_eq!(s.limits.header_timeout, Duration::from_secs(10));
    assert_eq!(s.limits.idle_timeout, Duration::from_secs(60));
    assert_eq!(s.process_metrics_limit, 100);
    let s = serve(&["serve"], &[("NODE_NAME", "node-7")]);
    assert_eq!(
        s.hostname.as_deref(),
        Some("node-7"),
        "NODE_NAME is the default"
    );
    let file = [("XDG_CONFIG_HOME", xdg), ("NODE_NAME", "node-7")];
    let s = serve(&["serve"], &file);
    assert_eq!(s.hostname.as_deref(), Some("from-file"));
    assert!(s.redact);
    assert_eq!(s.limits.max_connections, 8);
    assert_eq!(s.limits.header_timeout, Duration::from_secs(3));
    assert_eq!(s.limits.idle_timeout, Duration::from_secs(20));
    assert_eq!(s.process_metrics_limit, 5);
    assert_eq!(
        s.web_config.as_deref(),
        Some(Path::new("/etc/gpuwatch/web.yml"))
    );
    let env = [
        ("XDG_CONFIG_HOME", xdg),
        ("GPUWATCH_HOSTNAME", "from-env"),
        ("GPUWATCH_REDACT", "no"),
        ("GPUWATCH_MAX_CONNECTIONS", "9"),
        ("GPUWATCH_HTTP_HEADER_TIMEOUT", "4s"),
        ("GPUWATCH_WEB_CONFIG_FILE", "/tmp/web.yml"),
    ];
    let s = serve(&["serve"], &env);
    assert_eq!(s.hostname.as_deref(), Some("from-env"));
    assert!(!s.redact);
    assert_eq!(s.limits.max_connections, 9);
    assert_eq!(s.limits.header_timeout, Duration::from_secs(4));
    assert_eq!(s.web_config.as_deref(), Some(Path::new("/tmp/web.yml")));
    let s = serve(
        &[
            "serve",
            "--hostname",
            "from-flag",
            "--max-connections",
            "2",
            "--http-idle-timeout",
            "5s",
            "--web.config.file",
            "w.yml",
        ],
        &env,
    );
    assert_eq!(s.hostname.as_deref(), Some("from-flag"));
    assert_eq!(s.limits.max_connections, 2);
    assert_eq!(s.limits.idle_timeout, Duration::from_secs(5));
    assert_eq!(s.web_config.as_deref(), Some(Path::new("w.yml")));
    assert_eq!(
        resolve(&["serve", "--max-connections", "0"], &[]).unwrap_err(),
        "--max-connections: must be at least 1 (got \"0\")"
    );
    assert_eq!(
        resolve(&["serve"], &[("GPUWATCH_HTTP_HEADER_TIMEOUT", "0s")]).unwrap_err(),
        "GPUWATCH_HTTP_HEADER_TIMEOUT: must be more than 0 (got \"0s\")"
    );
}

#[test]
fn record_and_remote_settings_flag_beats_env_beats_file() {
    let home = config_home(
        "[record]\npath = \"night.ndjson\"\nmax_size = \"200MiB\"\n\n\
         [remote]\nhosts = [\"gpu1:9400\", \"gpu2:9400\"]\nwith_local = true\n",
    );
    let xdg = home.path().to_str().unwrap();
    let file = [("XDG_CONFIG_HOME", xdg)];
    let s = resolve(&[], &file).unwrap();
    let record = s.record.unwrap();
    assert_eq!(record.path, Path::new("night.ndjson"));
    assert_eq!(record.max_size, Some(Bytes(200 * Bytes::MIB)));
    assert_eq!(s.remote.addresses, ["gpu1:9400", "gpu2:9400"]);
    assert!(s.remote.with_local);
    let env = [
        ("XDG_CONFIG_HOME", xdg),
        ("GPUWATCH_RECORD", "day.ndjson"),
        ("GPUWATCH_REMOTE", "gpu3:9400"),
        ("GPUWATCH_HOSTS_FILE", "/etc/hosts.gpu"),
    ];
    let s = resolve(&[], &env).unwrap();
    assert_eq!(s.record.unwrap().path, Path::new("day.ndjson"));
    assert_eq!(s.remote.addresses, ["gpu3:9400"]);
    assert_eq!(
        s.remote.hosts_file.as_deref(),
        Some(Path::new("/etc/hosts.gpu"))
    );
    let s = resolve(&["--record", "x.ndjson", "--remote", "gpu4:1"], &env).unwrap();
    assert_eq!(s.record.unwrap().path, Path::new("x.ndjson"));
    assert_eq!(s.remote.addresses, ["gpu4:1"]);
    // Nothing asked for: no recording, no remote hosts.
    let s = resolve(&[], &[]).unwrap();
    assert_eq!((s.record, s.remote.any()), (None, false));
}

#[test]
fn new_keys_name_file_line_and_key() {
    for (text, message) in [
        (
            "[serve]\nlisten = \"localhost\"\n",
            "2: serve.listen: not an IP:PORT address such as 127.0.0.1:19445 or 0.0.0.0:19445 \
             (got \"localhost\")",
        ),
        (
            "[remote]\nhosts = [\"gpu1\"]\n",
            "2: remote.hosts: \"gpu1\" needs a port, e.g. gpu1:9400 (got [\"gpu1\"])",
        ),
        (
            "[remote]\nwith_local = true\n",
            "2: remote.with_local: only with --remote or --hosts-file",
        ),
        (
            "[record]\nmax_size = \"1 parsec\"\n",
            "2: record.max_size: unknown size unit \"parsec\" in \"1 parsec\" (use B, KiB, MiB, GiB or \
             TiB)",
        ),
        (
            "source = \"gpu\"\n",
            "1: source: unknown source; use nvml, auto, amd, intel or demo (got \"gpu\")",
        ),
        (
            "[serve]\nlisen = \"0.0.0.0:1\"\n",
            "2: serve.lisen: unknown key (known keys here: listen, web_listen_address, dcgm_compat, process_metrics, process_metrics_limit, redact, hostname, web_config_file, max_connections, header_timeout, idle_timeout)",
        ),
    ] {
        let home = config_home(text);
        let path = home.path().join("gpuwatch/config.toml");
        let err = resolve(&[], &[("XDG_CONFIG_HOME", home.path().to_str().unwrap())]);
        assert_eq!(
            err.unwrap_err(),
            format!("{}:{message}", path.display()),
            "{text}"
        );
    }
    // Each new variable is checked and named.
    for (var, value, why) in [
        (
            "GPUWATCH_DEMO_GPUS",
            "lots",
            "not a whole number ≥ 0 (got \"lots\")",
        ),
        ("GPUWATCH_SEED", "-1", "not a whole number ≥ 0 (got \"-1\")"),
        ("GPUWATCH_WITH_LOCAL", "maybe", "not a switch"),
        ("GPUWATCH_RECORD_MAX_SIZE", "0", "must be more than 0"),
        ("GPUWATCH_REMOTE", "gpu1:0", "\"gpu1:0\" has no valid port"),
    ] {
        let err = resolve(&[], &[(var, value)]).unwrap_err();
        assert!(err.starts_with(&format!("{var}: {why}")), "{err}");
    }
}

#[test]
fn alert_settings_go_flag_env_file_default_and_bad_ones_name_their_place() {
    use gpuwatch::alert_settings::{Format, Sink};
    use gpuwatch::model::warnings::Severity;
    let home = config_home(
        "[alerts]\nwebhooks = [\"http://file:9000/a\"]\nformat = \"discord\"\nrepeat = \"1h\"\n\
         bell = false\n[alerts.kinds.overheating]\nseverity = \"warning\"\nfor = \"30s\"\n",
    );
    let xdg = ("XDG_CONFIG_HOME", home.path().to_str().unwrap());
    let s = resolve(&[], &[xdg]).unwrap();
    let a = &s.alerts;
    assert_eq!(
        a.sinks,
        [Sink::Webhook {
            url: "http://file:9000/a".into(),
            format: Format::Discord
        }]
    );
    assert!(!a.bell);
    assert_eq!(a.rules.repeat, Duration::from_secs(3600));
    assert!(a.rules.wanted(WarningCode::Overheating, Severity::Warning));
    assert_eq!(
        a.rules.hold(WarningCode::Overheating, Severity::Warning),
        Duration::from_secs(30)
    );
    // The environment beats the file; the flags beat both.
    let env = [
        xdg,
        ("GPUWATCH_ALERT_WEBHOOK", "http://e:1/x,http://e:2/y"),
        ("GPUWATCH_ALERT_FORMAT", "slack"),
    ];
    let s = resolve(&[], &env).unwrap();
    assert_eq!(s.alerts.sinks.len(), 2);
    assert!(
        matches!(&s.alerts.sinks[1], Sink::Webhook { url, format: Format::Slack } if url == "http://e:2/y")
    );
    let s = resolve(
        &[
            "--alert-webhook",
            "http://f:1/",
            "--alert-webhook",
            "http://f:2/",
            "--alert-format",
            "json",
            "--alert-command",
            "true",
            "--alert-on",
            "lost",
        ],
        &env,
    )
    .unwrap();
    assert_eq!(s.alerts.sinks.len(), 3);
    assert_eq!(
        s.alerts.sinks[2],
        Sink::Command {
            command: "true".into()
        }
    );
    assert!(
        !s.alerts
            .rules
            .wanted(WarningCode::Overheating, Severity::Critical),
        "--alert-on lists the kinds"
    );
    assert!(s.alerts.rules.wanted(WarningCode::Lost, Severity::Critical));
    assert!(
        resolve(&[], &[]).unwrap().alerts.bell,
        "the bell rings by default"
    );
    assert!(!resolve(&["--no-bell"], &[]).unwrap().alerts.bell);

    let home = config_home("[alerts]\nrepeat = \"4h\"\n\n[alerts.kinds.overheat]\nfor = \"1m\"\n");
    let err = resolve(&[], &[("XDG_CONFIG_HOME", home.path().to_str().unwrap())]).unwrap_err();
    let every = WarningCode::names(", ");
    assert!(
        err.ends_with(&format!(
            ":4: alerts.kinds: unknown warning kind \"overheat\"; use one of {every}"
        )),
        "{err}"
    );
    let err = resolve(&["--alert-webhook", "ftp://u:secret@h/x"], &[]).unwrap_err();
    assert_eq!(
        err,
        "--alert-webhook: ftp://h/…: not an http:// or https:// URL"
    );
    let err = resolve(&[], &[("GPUWATCH_ALERT_ON", "overheating=loud")]).unwrap_err();
    assert!(
        err.starts_with("GPUWATCH_ALERT_ON: not a severity"),
        "{err}"
    );
}

/// Issue 20: the resolve hold (`--alert-resolve-after`, `GPUWATCH_ALERT_RESOLVE_AFTER`,
/// `[alerts] resolve_after`) is 5 min by default, each place beats the weaker one, and a bad
/// value names where it came from.
#[test]
fn the_alert_resolve_hold_goes_flag_env_file_default() {
    let hold = |args: &[&str], vars: &[(&str, &str)]| {
        resolve(args, vars).map(|s| s.alerts.rules.resolve_after)
    };
    assert_eq!(hold(&[], &[]).unwrap(), Duration::from_secs(300), "default");
    let home = config_home("[alerts]\nresolve_after = \"10m\"\n");
    let xdg = ("XDG_CONFIG_HOME", home.path().to_str().unwrap());
    assert_eq!(hold(&[], &[xdg]).unwrap(), Duration::from_secs(600));
    let env = [xdg, ("GPUWATCH_ALERT_RESOLVE_AFTER", "1m")];
    assert_eq!(hold(&[], &env).unwrap(), Duration::from_secs(60));
    let flag = ["--alert-resolve-after", "0s"];
    assert_eq!(hold(&flag, &env).unwrap(), Duration::ZERO, "0s: at once");
    let err = hold(&["--alert-resolve-after", "soon"], &[]).unwrap_err();
    assert!(err.starts_with("--alert-resolve-after: "), "{err}");
    let err = hold(&[], &[("GPUWATCH_ALERT_RESOLVE_AFTER", "-1s")]).unwrap_err();
    assert!(err.starts_with("GPUWATCH_ALERT_RESOLVE_AFTER: "), "{err}");
    let home = config_home("[alerts]\nresolve_after = \"later\"\n");
    let err = hold(&[], &[("XDG_CONFIG_HOME", home.path().to_str().unwrap())]).unwrap_err();
    assert!(err.contains(":2: alerts.resolve_after: "), "{err}");
}

/// The `[alerts]` examples `config init` writes as comments are valid when uncommented.
#[test]
fn the_default_files_alert_examples_are_valid() {
    let text = default_file_text();
    let start = text.find("[alerts]").expect("an [alerts] table");
    let mut uncommented = 0;
    let alerts: String = text[start..]
        .lines()
        .map(|line| {
            let example = [
                "# command = ",
                "# [alerts.kinds.",
                "# severity = ",
                "# for = ",
                "# repeat = ",
            ];
            if example.iter().any(|e| line.starts_with(e)) {
                uncommented += 1;
                line[2..].to_string() + "\n"
            } else {
                line.to_string() + "\n"
            }
        })
        .collect();
    assert_eq!(uncommented, 5, "{alerts}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, format!("{}{alerts}", &text[..start])).unwrap();
    let s = check_file(&path).unwrap();
    assert_eq!(s.alerts.sinks.len(), 1, "the example command");
    assert_eq!(
        s.alerts.rules.repeat(WarningCode::Overheating),
        Duration::from_secs(3600)
    );
}

/// Issue 23: a size in the file needs a unit too (a TOML number was read as GiB), `GB` is
/// refused, and the host settings an admin pins in /etc are keys: `nvml_lib`,
/// `kubelet_socket`, `only`; their errors name file, line and key.
#[test]
fn sizes_need_units_and_host_settings_are_keys() {
    for (text, message) in [
        (
            "[thresholds]\nidle_min_vram = 1073741824\n",
            "2: thresholds.idle_min_vram: \"1073741824\" has no unit: write 1073741824B for \
             bytes, or e.g. 1073741824GiB, 1073741824MiB",
        ),
        (
            "\n[record]\npath = \"r.ndjson\"\nmax_size = \"2GB\"\n",
            "4: record.max_size: \"2GB\": GB is ambiguous (10^n or 2^n bytes?); write 2GiB \
             (binary units, as nvidia-smi uses)",
        ),
        ("only = \"0,,1\"\n", "1: only: "),
        (
            "\nkubelet_socket = \"/nonexistent/kubelet.sock\"\n",
            "2: kubelet_socket: cannot use /nonexistent/kubelet.sock: ",
        ),
    ] {
        let home = config_home(text);
        let path = home.path().join("gpuwatch/config.toml");
        let err = resolve(&[], &[("XDG_CONFIG_HOME", home.path().to_str().unwrap())]);
        let err = err.unwrap_err();
        let want = format!("{}:{message}", path.display());
        assert!(err.starts_with(&want), "{text}: {err}\nwanted: {want}");
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubelet.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let home = config_home(&format!(
        "nvml_lib = \"/opt/nvidia/libnvidia-ml.so.1\"\nkubelet_socket = {:?}\nonly = \"1,GPU-5e0c\"\n\
         [thresholds]\nidle_min_vram = \"4096B\"\nstale_min_vram = 0\n",
        socket.to_str().unwrap()
    ));
    let xdg = ("XDG_CONFIG_HOME", home.path().to_str().unwrap());
    let s = resolve(&[], &[xdg]).unwrap();
    assert_eq!(
        s.nvml_lib.as_deref(),
        Some(Path::new("/opt/nvidia/libnvidia-ml.so.1"))
    );
    assert_eq!(s.kubelet_socket, socket);
    assert_eq!(s.only.as_ref().map(Vec::len), Some(2));
    assert!(
        s.only_origin.ends_with("gpuwatch/config.toml:3: only"),
        "{}",
        s.only_origin
    );
    assert_eq!(s.thresholds.idle_min_vram, Bytes(4096));
    assert_eq!(s.thresholds.stale_min_vram, Bytes(0));
    // The flag still beats the file.
    let s = resolve(&["--only", "3", "--nvml-lib", "/x.so"], &[xdg]).unwrap();
    assert_eq!(s.only.map(|l| l.len()), Some(1));
    assert_eq!(s.nvml_lib.as_deref(), Some(Path::new("/x.so")));
    assert_eq!(s.only_origin, "--only");
}
