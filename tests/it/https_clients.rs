//! gpuwatch's https clients through the user's path (issue 21 §8, issue 23 "TLS on by
//! default"): `--prometheus https://` against a real Prometheus behind its own
//! `--web.config.file` (TLS and basic auth; certificates made by `openssl` at test time),
//! `--prometheus-ca-file` right, wrong and unreadable, and `gpuwatch alert test` posting to
//! an https webhook stand-in on 127.0.0.1. A certificate that does not verify is said.

use crate::serve_support;

use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use serve_support::prometheus::{Prometheus, SCRAPED};
use serve_support::tls::{TLS_DIR, issue};
use serve_support::webhook::{Answer, Receiver};
use serve_support::{Exporter, gpuwatch, skip_without, wait_until};
use tokio_rustls::rustls;

/// A real Prometheus that only speaks TLS and asks for basic auth, with a certificate from a
/// throwaway CA: read with that CA's file, refused (and said) with another CA, the system's
/// store or a wrong password.
#[test]
fn a_real_prometheus_over_https_with_basic_auth_is_read_with_its_ca_file() {
    if skip_without("prometheus", "--prometheus https://")
        || skip_without("openssl", "--prometheus https://")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    issue(d, "prom", "serverAuth");
    issue(d, "other", "serverAuth");
    let hash = bcrypt::hash_with_salt("s3cret", 4, [7; 16])
        .unwrap()
        .to_string();
    let web = d.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: prom.crt\n  key_file: prom.key\n\
             basic_auth_users:\n  gw: {hash}\n"
        ),
    )
    .unwrap();
    std::fs::write(d.join("password"), "s3cret\n").unwrap();
    std::fs::write(d.join("wrong"), "guess\n").unwrap();
    let exporter = Exporter::demo(&["--demo-gpus", "3", "--seed", "5"]);
    let target = exporter.addr.to_string();
    let prometheus = Prometheus::start_many_web(d, &[&target], &web);
    let url = format!("https://127.0.0.1:{}", prometheus.port);
    let log = || std::fs::read_to_string(d.join("prometheus.log")).unwrap_or_default();
    let run = |ca: Option<&str>, password: &str| {
        let mut cmd = gpuwatch();
        cmd.args([
            "--prometheus",
            &url,
            "--prometheus-user",
            "gw",
            "--password-file",
        ])
        .arg(d.join(password))
        .args(["--once", "--json"]);
        if let Some(ca) = ca {
            cmd.arg("--prometheus-ca-file").arg(d.join(ca));
        }
        cmd.output().unwrap()
    };

    let mut last = String::new();
    let doc = wait_until("3 GPUs read over https", SCRAPED, || {
        let out = run(Some("prom-ca.crt"), "password");
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        let doc: Value = serde_json::from_slice(&out.stdout).ok()?;
        (out.status.success() && doc["gpus"].as_array()?.len() == 3).then_some(doc)
    });
    let gpus = doc["gpus"].as_array().unwrap();
    // One scraped host: named by its address alone (a port only tells two apart).
    assert!(
        gpus.iter()
            .all(|g| g["host"] == "127.0.0.1" && g["memory_total"].is_u64()),
        "{doc:#}\n{last}\n{}",
        log()
    );

    // The password travels (over TLS) and is checked: a wrong one is Prometheus's 401.
    let wrong = failure(&run(Some("prom-ca.crt"), "wrong"));
    assert!(wrong.contains("HTTP 401"), "{wrong}");
    // Another CA, or the system's store: the certificate does not verify, and it is said.
    let other = failure(&run(Some("other-ca.crt"), "password"));
    assert!(
        other.contains("certificate does not verify: signed by an authority not trusted here")
            && other.contains("--prometheus-ca-file"),
        "{other}"
    );
    let system = failure(&run(None, "password"));
    assert!(system.contains("certificate does not verify"), "{system}");
}

/// `--once` that failed reading: exit 1 and one line on stderr, which is returned.
fn failure(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("gpuwatch: reading GPUs failed: Prometheus 127.0.0.1:"),
        "{err}"
    );
    err
}

/// A CA file that cannot be used stops gpuwatch before anything is sent: one line naming
/// the file, exit 2; so does one given for a plain http:// server.
#[test]
fn an_unusable_ca_file_is_one_line_naming_it_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let missing = dir.path().join("missing.pem");
    let refused = |url: &str, ca: &Path| {
        let out = gpuwatch()
            .args(["--prometheus", url, "--once", "--prometheus-ca-file"])
            .arg(ca)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{err}");
        err
    };
    let err = refused("https://127.0.0.1:1", &garbage);
    assert_eq!(
        err,
        format!(
            "gpuwatch: --prometheus-ca-file {}: no PEM certificate in it\n",
            garbage.display()
        )
    );
    let err = refused("https://127.0.0.1:1", &missing);
    assert!(
        err.starts_with(&format!(
            "gpuwatch: --prometheus-ca-file {}: ",
            missing.display()
        )),
        "{err}"
    );
    let err = refused("http://127.0.0.1:1", &garbage);
    assert_eq!(
        err,
        "gpuwatch: --prometheus-ca-file: only with an https:// --prometheus URL\n"
    );
}

/// The fixture server certificate (127.0.0.1, signed by tests/fixtures/tls/ca.crt).
fn fixture_server() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(format!("{TLS_DIR}/server.crt"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(format!("{TLS_DIR}/server.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    Arc::new(config)
}

/// Slack and Discord webhooks are https-only: `alert test` posts over TLS to a stand-in
/// whose CA the system store holds (here through SSL_CERT_FILE, as an admin with a private
/// CA would), and says a certificate the store does not trust without quoting the URL.
#[test]
fn https_webhooks_are_delivered_and_an_untrusted_certificate_is_said() {
    let receiver = Receiver::start_tls(Answer::Ok, fixture_server());
    let url = format!("https://{}/services/T0/B0/SECRET", receiver.addr);
    let alert_test = |trusted: &str| {
        gpuwatch()
            .env("SSL_CERT_FILE", format!("{TLS_DIR}/{trusted}"))
            .args([
                "alert",
                "test",
                "--alert-format",
                "slack",
                "--alert-webhook",
                &url,
            ])
            .output()
            .unwrap()
    };
    let out = alert_test("ca.crt");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        said,
        format!("webhook https://{}/…: HTTP 200\n", receiver.addr),
        "{out:?}"
    );
    let (path, body) = receiver.next(Duration::from_secs(5)).unwrap();
    assert_eq!(path, "/services/T0/B0/SECRET");
    assert!(
        body["text"].as_str().unwrap().starts_with("[TEST] "),
        "{body}"
    );

    // A store that does not hold the CA (only the leaf itself): refused and said.
    let out = alert_test("server.crt");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        said.starts_with(&format!(
            "webhook https://{}/…: failed: TLS: ",
            receiver.addr
        )) && said.contains("certificate does not verify")
            && !said.contains("SECRET"),
        "{said}"
    );
    assert!(receiver.next(Duration::ZERO).is_none());
}
