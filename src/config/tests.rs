//! Flag resolution without a file or an environment: values, defaults and messages.

use super::*;
use clap::Parser;

fn no_env(_: &str) -> Option<String> {
    None
}

fn resolve(args: &[&str]) -> Result<Settings, SettingsError> {
    let mut argv = vec!["gpuwatch"];
    argv.extend_from_slice(args);
    Settings::resolve(&Cli::parse_from(argv), &no_env, true)
}

#[test]
fn defaults() {
    let s = resolve(&[]).unwrap();
    assert_eq!(s.interval, Duration::from_secs(1));
    assert_eq!(s.history_len(), 300);
    assert_eq!(s.source, SourceKind::Nvml);
    assert_eq!(s.theme, ThemeName::Dark);
    assert!(!s.once && !s.readonly && !s.mouse && !s.compact);
    assert_eq!(s.thresholds, Thresholds::default());
    assert_eq!(s.columns, Column::ALL.to_vec());
    assert_eq!((s.sort, s.sort_dir), (SortKey::Vram, SortDir::Descending));
    assert_eq!(s.only, None);
    assert_eq!(s.config_path, None, "no HOME, no file");
    assert_eq!(s.pick, None);
}

#[test]
fn intervals() {
    assert_eq!(
        resolve(&["--interval", "500ms"]).unwrap().interval,
        Duration::from_millis(500)
    );
    assert_eq!(
        resolve(&["--interval", "2s"]).unwrap().interval,
        Duration::from_secs(2)
    );
    assert_eq!(
        resolve(&["--interval", "2"]).unwrap().interval,
        Duration::from_secs(2)
    );
    let err = resolve(&["--interval", "50ms"]).unwrap_err().to_string();
    assert_eq!(err, "--interval: must be at least 100ms (got \"50ms\")");
    let err = resolve(&["--interval", "soon"]).unwrap_err().to_string();
    assert!(err.starts_with("--interval: not a duration"), "{err}");
}

#[test]
fn history_len_follows_interval() {
    let s = resolve(&["--interval", "500ms", "--history", "1m"]).unwrap();
    assert_eq!(s.history_len(), 120);
}

#[test]
fn bad_values_name_their_flag() {
    for (args, flag) in [
        (&["--demo-gpus", "0"][..], "--demo-gpus"),
        (&["--demo-gpus", "65"][..], "--demo-gpus"),
        (&["--oom-warn", "120"][..], "--oom-warn"),
        (&["--oom-warn", "much"][..], "--oom-warn"),
        (
            &["--oom-warn", "95", "--oom-critical", "90"][..],
            "--oom-critical",
        ),
        // The critical level was left at its default, so the warning level is what to change.
        (&["--temp-warn", "95"][..], "--temp-warn"),
        (&["--temp-warn=-3"][..], "--temp-warn"),
        (&["--history", "10ms"][..], "--history"),
        (&["--idle-after", "later"][..], "--idle-after"),
        (&["--stale-min-vram", "lots"][..], "--stale-min-vram"),
        (&["--only", "0,,1"][..], "--only"),
        (&["pick", "-n", "0"][..], "--count"),
        (&["pick", "--max-util", "101"][..], "--max-util"),
        (&["pick", "--min-free", "some"][..], "--min-free"),
        (&["pick", "--timeout", "1s"][..], "--timeout"),
        (&["pick", "--wait", "--timeout", "0s"][..], "--timeout"),
    ] {
        let err = resolve(args).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{flag}: ")), "{args:?}: {err}");
    }
}

#[test]
fn conflicts_say_what_the_other_value_is() {
    assert_eq!(
        resolve(&["--temp-warn", "95"]).unwrap_err().to_string(),
        "--temp-warn: must not be above --temp-critical, which is 90 (got \"95\")"
    );
    assert_eq!(
        resolve(&["--oom-warn", "95", "--oom-critical", "90"])
            .unwrap_err()
            .to_string(),
        "--oom-critical: must not be below --oom-warn, which is 95 (got \"90\")"
    );
}

#[test]
fn values_that_quote_themselves_are_not_repeated() {
    assert_eq!(
        resolve(&["--only", "first"]).unwrap_err().to_string(),
        "--only: \"first\" is neither a GPU index nor a GPU UUID like GPU-8932f937"
    );
}

#[test]
fn theme_and_once_resolution() {
    let cli = Cli::parse_from(["gpuwatch", "--theme", "light"]);
    let env = |value: &'static str| move |name: &str| (name == "NO_COLOR").then(|| value.into());
    assert_eq!(
        Settings::resolve(&cli, &env("1"), true).unwrap().theme,
        ThemeName::Mono,
        "NO_COLOR beats --theme"
    );
    assert_eq!(
        Settings::resolve(&cli, &env(""), true).unwrap().theme,
        ThemeName::Light,
        "empty NO_COLOR is unset"
    );
    assert!(
        Settings::resolve(&cli, &no_env, false).unwrap().once,
        "not a TTY implies --once"
    );
    assert_eq!(
        resolve(&["--no-color", "--theme", "light"]).unwrap().theme,
        ThemeName::Mono
    );
    assert_eq!(resolve(&["--demo"]).unwrap().source, SourceKind::Demo);
    assert!(resolve(&["--json"]).unwrap().once);
}

#[test]
fn sort_flag_takes_its_columns_direction() {
    let s = resolve(&["--sort", "user"]).unwrap();
    assert_eq!((s.sort, s.sort_dir), (SortKey::User, SortDir::Ascending));
    let s = resolve(&["--sort", "cpu"]).unwrap();
    assert_eq!((s.sort, s.sort_dir), (SortKey::Cpu, SortDir::Descending));
}

#[test]
fn clap_sort_names_are_the_sort_keys() {
    let names: Vec<_> = SortKey::ALL.iter().map(|k| k.config_name()).collect();
    assert_eq!(names, crate::cli::SORT_NAMES);
    for name in crate::cli::THEME_NAMES {
        assert!(theme_by_name(name).is_ok(), "{name}");
    }
}

#[test]
fn env_names_follow_the_flags() {
    assert_eq!(env_var("temp-warn"), "GPUWATCH_TEMP_WARN");
    assert_eq!(env_var("interval"), "GPUWATCH_INTERVAL");
}

/// The table of known variables is exactly what `resolve` reads (the other direction, a
/// variable read but missing from the table, fails `Resolver::text`'s debug assertion).
#[test]
fn every_known_variable_is_read() {
    let asked = std::cell::RefCell::new(Vec::<String>::new());
    let env = |name: &str| {
        asked.borrow_mut().push(name.to_string());
        None
    };
    for args in [&["gpuwatch"][..], &["gpuwatch", "serve"]] {
        Settings::resolve(&Cli::parse_from(args), &env, true).unwrap();
    }
    let asked = asked.into_inner();
    for flag in ENV_FLAGS {
        assert!(
            asked.contains(&env_var(flag)),
            "{flag} is listed but never read"
        );
    }
    for name in asked.iter().filter(|n| n.starts_with("GPUWATCH_")) {
        assert!(
            known_env_vars().contains(name),
            "{name} is read but not listed"
        );
    }
}

#[test]
fn demo_and_source_from_the_stronger_place() {
    let with = |vars: &'static [(&'static str, &'static str)], args: &[&str]| {
        let env = move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        let mut argv = vec!["gpuwatch"];
        argv.extend_from_slice(args);
        Settings::resolve(&Cli::parse_from(argv), &env, true)
            .unwrap()
            .source
    };
    assert_eq!(with(&[("GPUWATCH_DEMO", "1")], &[]), SourceKind::Demo);
    assert_eq!(with(&[("GPUWATCH_SOURCE", "auto")], &[]), SourceKind::Auto);
    assert_eq!(
        with(&[("GPUWATCH_DEMO", "1")], &["--source", "nvml"]),
        SourceKind::Nvml,
        "a flag beats the environment"
    );
    assert_eq!(
        with(&[("GPUWATCH_SOURCE", "nvml")], &["--demo"]),
        SourceKind::Demo
    );
    assert_eq!(
        with(
            &[("GPUWATCH_SOURCE", "auto"), ("GPUWATCH_DEMO", "yes")],
            &[]
        ),
        SourceKind::Demo,
        "at the same place --demo wins"
    );
}

#[test]
fn pick_takes_the_inherited_cuda_visible_devices_from_the_injected_env() {
    use crate::reading::device_list::GpuSelector;
    let pick = |vars: &[(&str, &str)], args: &[&str]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let mut argv = vec!["gpuwatch", "pick"];
        argv.extend_from_slice(args);
        Settings::resolve(&Cli::parse_from(argv), &env, true).map(|s| s.pick.unwrap())
    };
    let p = pick(&[], &[]).unwrap();
    assert_eq!(
        (p.inherited, p.wait, p.timeout, p.verbose),
        (None, false, None, false)
    );
    let p = pick(
        &[
            ("CUDA_VISIBLE_DEVICES", "2,GPU-AB"),
            ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
        ],
        &["--wait", "--timeout", "10m", "-v"],
    )
    .unwrap();
    let inherited = p.inherited.unwrap();
    assert_eq!(
        inherited.devices,
        [GpuSelector::Index(2), GpuSelector::Uuid("ab".into())]
    );
    assert!(inherited.pci_order);
    assert_eq!(p.timeout, Some(Duration::from_secs(600)));
    assert!(p.wait && p.verbose);
    let err = pick(&[("CUDA_VISIBLE_DEVICES", "0,gpu")], &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "CUDA_VISIBLE_DEVICES: \"gpu\" is neither a GPU index nor a GPU UUID like GPU-8932f937 \
         (got \"0,gpu\")"
    );
    // Only `pick` reads it: the monitor shows every GPU whatever the job may use.
    let s = Settings::resolve(
        &Cli::parse_from(["gpuwatch"]),
        &|n: &str| (n == "CUDA_VISIBLE_DEVICES").then(|| "x".to_string()),
        true,
    );
    assert!(s.is_ok());
}

#[test]
fn prometheus_settings_layer_and_check() {
    let s = resolve(&[
        "--prometheus",
        "http://prom:9090/",
        "--selector",
        r#"{cluster="a"}"#,
    ])
    .unwrap()
    .prometheus
    .unwrap();
    assert_eq!(s.url, "http://prom:9090");
    assert_eq!(s.matchers, r#"cluster="a""#);
    assert_eq!(resolve(&[]).unwrap().prometheus, None);
    let env = |k: &str| match k {
        "GPUWATCH_PROMETHEUS" => Some("http://from-env:9090".to_string()),
        "GPUWATCH_BEARER_TOKEN_FILE" => Some("/run/token".to_string()),
        _ => None,
    };
    let cli = Cli::parse_from(["gpuwatch"]);
    let s = Settings::resolve(&cli, &env, true)
        .unwrap()
        .prometheus
        .unwrap();
    assert_eq!(
        (s.url.as_str(), s.bearer_token_file.as_deref()),
        (
            "http://from-env:9090",
            Some(std::path::Path::new("/run/token"))
        )
    );
    let cli = Cli::parse_from(["gpuwatch", "--prometheus", "http://flag:1"]);
    assert_eq!(
        Settings::resolve(&cli, &env, true)
            .unwrap()
            .prometheus
            .unwrap()
            .url,
        "http://flag:1",
        "flag beats env"
    );
    let err = |args: &[&str]| resolve(args).unwrap_err().to_string();
    assert_eq!(
        err(&["--selector", "{a=\"b\"}"]),
        "--selector: only with --prometheus"
    );
    assert!(
        err(&["--prometheus", "https://prom"])
            .starts_with("--prometheus: https is not supported yet")
    );
    assert!(err(&["--prometheus", "prom:9090"]).contains("is not an http:// URL"));
    assert!(
        err(&["--prometheus", "http://p:1", "--selector", "cluster=a"])
            .contains("not a series selector")
    );
    assert_eq!(
        err(&["--prometheus", "http://p:1", "--prometheus-user", "u"]),
        "--prometheus-user: needs --password-file"
    );
}
