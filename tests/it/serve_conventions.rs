//! Issue 23's exporter conventions, through the real binary and real sockets on loopback:
//! `--web.listen-address` (`:PORT`, host names, repeated), `/-/healthy`,
//! `--web.telemetry-path`, client certificates (`client_ca_file`, `client_auth_type`),
//! `min_version`, and certificates re-read when their files change or on SIGHUP. The
//! certificates beyond tests/fixtures/tls are made per test by `openssl` (a throwaway CA, a
//! client and a server certificate it signs), which CI has.

use crate::serve_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serve_support::tls::{fixture_roots, https_with, issue, tls_client, web_config};
use serve_support::{Exporter, free_port, gpuwatch, request, skip_without, wait_until};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

#[test]
fn web_listen_address_takes_every_interface_a_host_name_and_repeats() {
    let (every, named) = (free_port(), free_port());
    let mut cmd = gpuwatch();
    cmd.args(["--demo", "serve"]);
    let e = Exporter::start_serving(
        cmd,
        &[
            "--web.listen-address",
            &format!(":{every}"),
            "--web.listen-address",
            &format!("localhost:{named}"),
        ],
    );
    e.wait_ready();
    for port in [every, named] {
        let r = request(
            format!("127.0.0.1:{port}").parse().unwrap(),
            "GET",
            "/metrics",
        )
        .unwrap();
        assert_eq!(r.status, 200, "port {port}");
        assert!(r.body.contains("gpuwatch_gpu_info{"));
    }
    let said = e.stderr();
    // `:PORT` is the unspecified address (dual-stack [::] where the host has IPv6).
    assert!(
        said.contains(&format!("://[::]:{every}/metrics"))
            || said.contains(&format!("://0.0.0.0:{every}/metrics")),
        "{said}"
    );
    // Where the host has IPv6 loopback, `:PORT` answers there too.
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let r = request(format!("[::1]:{every}").parse().unwrap(), "GET", "/-/ready").unwrap();
        assert_eq!(r.status, 200);
    }
}

#[test]
fn web_listen_address_with_listen_or_a_bad_port_is_one_line_and_exit_2() {
    for (args, says) in [
        (
            vec!["--listen", "127.0.0.1:0", "--web.listen-address", ":0"],
            "--web.listen-address: given with --listen",
        ),
        (
            vec!["--web.listen-address", "localhost:http"],
            "--web.listen-address: \"http\" is not a port",
        ),
    ] {
        refused_in_one_line(&[], &args, says);
    }
}

/// `[serve] web_listen_address` in the config file: several addresses, as the flag takes
/// them; `GPUWATCH_LISTEN` (the systemd unit's one place for the address) is a layer above
/// the file and wins; beside `[serve] listen` in the same file, or with a bad entry, it is one
/// line naming the file, line and key; a port already taken is blamed on that key.
#[test]
fn web_listen_address_in_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    let (one, two, env) = (free_port(), free_port(), free_port());
    let write = |text: String| std::fs::write(&file, text).unwrap();
    let config = file.to_str().unwrap();
    write(format!(
        "[serve]\nweb_listen_address = [\"127.0.0.1:{one}\", \"localhost:{two}\"]\n"
    ));
    let mut cmd = gpuwatch();
    cmd.args(["--config", config, "--demo", "serve"]);
    let e = Exporter::start_serving(cmd, &[]);
    e.wait_ready();
    for port in [one, two] {
        let r = request(
            format!("127.0.0.1:{port}").parse().unwrap(),
            "GET",
            "/metrics",
        );
        assert_eq!(r.map(|r| r.status).ok(), Some(200), "port {port}");
    }
    drop(e);
    let mut cmd = gpuwatch();
    cmd.env("GPUWATCH_LISTEN", format!("127.0.0.1:{env}"))
        .args(["--config", config, "--demo", "serve"]);
    let e = Exporter::start_serving(cmd, &[]);
    assert_eq!(e.addr.port(), env, "{}", e.stderr());
    assert!(!e.stderr().contains(&format!(":{one}/")), "{}", e.stderr());
    drop(e);
    for (text, says) in [
        (
            format!("[serve]\nlisten = \"127.0.0.1:0\"\nweb_listen_address = [\":{one}\"]\n"),
            "config.toml:3: serve.web_listen_address: given with serve.listen",
        ),
        (
            "[serve]\nweb_listen_address = []\n".into(),
            "config.toml:2: serve.web_listen_address: names no address",
        ),
        (
            "[serve]\nweb_listen_address = [\"x:http\"]\n".into(),
            "config.toml:2: serve.web_listen_address: \"x:http\": \"http\" is not a port",
        ),
    ] {
        write(text);
        refused_in_one_line(&["--config", config], &[] as &[&str], says);
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    write(format!(
        "[serve]\nweb_listen_address = [\"127.0.0.1:{port}\"]\n"
    ));
    refused_in_one_line(
        &["--config", config],
        &[] as &[&str],
        "config.toml:2: serve.web_listen_address 127.0.0.1:",
    );
}

/// `gpuwatch GLOBAL --demo serve ARGS` exits 2 with one line on stderr that says `says`.
fn refused_in_one_line<S: AsRef<std::ffi::OsStr>>(global: &[S], args: &[S], says: &str) {
    let out = gpuwatch()
        .args(global)
        .args(["--demo", "serve"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn healthy_beside_ready_and_the_metrics_at_the_telemetry_path() {
    let e = Exporter::demo(&["--web.telemetry-path", "/gpu/metrics"]);
    assert!(e.stderr().contains("/gpu/metrics"), "{}", e.stderr());
    assert_eq!(e.get("/-/healthy").status, 200);
    e.wait_ready();
    let metrics = e.get("/gpu/metrics");
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("gpuwatch_gpu_info{"));
    assert_eq!(e.get("/metrics").status, 404);
    assert!(e.get("/").body.contains("href=\"gpu/metrics\""));
}

fn certs(path: PathBuf) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A client trusting `roots`, presenting `dir/NAME.crt` when `name` is given, speaking only
/// `versions`.
fn client(
    roots: rustls::RootCertStore,
    cert: Option<(&Path, &str)>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match cert {
        Some((dir, name)) => {
            let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
            builder
                .with_client_auth_cert(certs(dir.join(format!("{name}.crt"))), key)
                .unwrap()
        }
        None => builder.with_no_client_auth(),
    })
}

fn tls_exporter(config: &Path) -> Exporter {
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    let e = Exporter::start(cmd, &["--web.config.file", config.to_str().unwrap()]);
    wait_until("a scrape over TLS", Duration::from_secs(20), || {
        https_with(tls_client(), e.addr, "/-/healthy", None).ok()
    });
    e
}

const BOTH: [&rustls::SupportedProtocolVersion; 2] =
    [&rustls::version::TLS13, &rustls::version::TLS12];

#[test]
fn client_certificates_are_required_and_verified_against_client_ca_file() {
    if skip_without("openssl", "client certificates (mTLS)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    issue(dir.path(), "scraper", "clientAuth");
    issue(dir.path(), "stranger", "clientAuth");
    let config = web_config(
        dir.path(),
        "  client_ca_file: scraper-ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n",
    );
    let e = tls_exporter_with_cert(&config, dir.path());
    let ask = |cert: Option<(&Path, &str)>| {
        https_with(
            client(fixture_roots(), cert, &BOTH),
            e.addr,
            "/metrics",
            None,
        )
        .map(|r| r.status)
    };
    assert_eq!(ask(Some((dir.path(), "scraper"))).unwrap(), 200);
    assert!(ask(None).is_err(), "served a client without a certificate");
    assert!(
        ask(Some((dir.path(), "stranger"))).is_err(),
        "served another CA's client"
    );
}

/// Waits until the exporter at `config` (which wants client certificates) answers the
/// `scraper` client.
fn tls_exporter_with_cert(config: &Path, dir: &Path) -> Exporter {
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    let e = Exporter::start(cmd, &["--web.config.file", config.to_str().unwrap()]);
    let scraper = client(fixture_roots(), Some((dir, "scraper")), &BOTH);
    wait_until(
        "a scrape with a client certificate",
        Duration::from_secs(20),
        || https_with(Arc::clone(&scraper), e.addr, "/-/healthy", None).ok(),
    );
    e
}

#[test]
fn min_version_tls13_refuses_a_tls12_client() {
    let dir = tempfile::tempdir().unwrap();
    let config = web_config(dir.path(), "  min_version: TLS13\n");
    let e = tls_exporter(&config);
    let only_12 = client(fixture_roots(), None, &[&rustls::version::TLS12]);
    assert!(https_with(only_12, e.addr, "/-/healthy", None).is_err());
    let only_13 = client(fixture_roots(), None, &[&rustls::version::TLS13]);
    assert_eq!(
        https_with(only_13, e.addr, "/-/healthy", None)
            .unwrap()
            .status,
        200
    );
}

#[test]
fn bad_client_auth_settings_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (more, says) in [
        (
            "  client_auth_type: RequireAndVerifyClientCert\n",
            "needs client_ca_file",
        ),
        (
            "  min_version: TLS10\n",
            "tls_server_config.min_version: TLS10 is not supported",
        ),
        (
            "  client_ca_file: nowhere.crt\n",
            "tls_server_config.client_ca_file",
        ),
    ] {
        let sub = dir.path().join(format!("{}", more.len()));
        let config = web_config(&sub, more);
        let config = config.to_str().unwrap();
        refused_in_one_line(
            &[],
            &["--listen", "127.0.0.1:0", "--web.config.file", config],
            says,
        );
    }
}

#[test]
fn a_rotated_certificate_is_served_without_a_restart_and_sighup_rereads_it() {
    if skip_without("openssl", "certificate rotation") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = web_config(dir.path(), "");
    let mut e = tls_exporter(&config);
    // cert-manager's way: new files in place of the old (here a new CA's certificate).
    issue(dir.path(), "rotated", "serverAuth");
    let mut new_roots = rustls::RootCertStore::empty();
    for c in certs(dir.path().join("rotated-ca.crt")) {
        new_roots.add(c).unwrap();
    }
    let trusting_new = client(new_roots, None, &BOTH);
    std::fs::copy(
        dir.path().join("rotated.key"),
        dir.path().join("tls/server.key"),
    )
    .unwrap();
    std::fs::copy(
        dir.path().join("rotated.crt"),
        dir.path().join("tls/server.crt"),
    )
    .unwrap();
    wait_until("the rotated certificate", Duration::from_secs(10), || {
        https_with(Arc::clone(&trusting_new), e.addr, "/-/healthy", None).ok()
    });
    assert!(https_with(tls_client(), e.addr, "/-/healthy", None).is_err());
    assert!(
        e.stderr().contains("TLS certificate re-read"),
        "{}",
        e.stderr()
    );
    // SIGHUP re-reads them even when nothing changed (the check above would not), and does
    // not end the exporter.
    let rereads = || e.stderr().matches("TLS certificate re-read").count();
    let before = rereads();
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(i32::try_from(e.pid()).unwrap(), libc::SIGHUP) };
    wait_until("SIGHUP's re-read", Duration::from_secs(10), || {
        (rereads() > before).then_some(())
    });
    assert_eq!(
        https_with(trusting_new, e.addr, "/-/healthy", None)
            .unwrap()
            .status,
        200
    );
    assert!(e.signal(libc::SIGTERM).success());
}
