//! HTTPS for the exporter tests: a web config naming copies of the TLS fixtures
//! (tests/fixtures/tls: a throwaway CA's certificate and a localhost/127.0.0.1 server
//! certificate it signed, the CA key discarded), a rustls client that trusts that CA, and one
//! request over it; and throwaway CAs and certificates made by `openssl` at test time (CI has
//! it). Only 127.0.0.1 is contacted; every read is bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls;

use super::{Response, parse_bytes, request_text};

pub const TLS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

/// A web config in `dir` naming copies of the fixtures by relative path, as people write it;
/// `more` is appended (users, client CA, …).
pub fn web_config(dir: &Path, more: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("tls")).unwrap();
    for f in ["server.crt", "server.key"] {
        std::fs::copy(format!("{TLS_DIR}/{f}"), dir.join("tls").join(f)).unwrap();
    }
    let path = dir.join("web.yml");
    let text = format!(
        "tls_server_config:\n  cert_file: tls/server.crt\n  key_file: tls/server.key\n{more}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A client trusting the fixture CA, without a client certificate.
pub fn tls_client() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(fixture_roots())
        .with_no_client_auth();
    Arc::new(config)
}

/// The fixture CA as a root store.
pub fn fixture_roots() -> rustls::RootCertStore {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(format!("{TLS_DIR}/ca.crt")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    roots
}

/// One HTTPS request with `client`, checking the server's certificate; `auth` is
/// `user:password` for basic auth. An error when the handshake or the exchange fails.
pub fn https_with(
    client: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    path: &str,
    auth: Option<&str>,
) -> std::io::Result<Response> {
    use base64::Engine;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(client, name).map_err(std::io::Error::other)?;
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let header = auth.map(|a| {
        let b64 = base64::engine::general_purpose::STANDARD.encode(a);
        format!("Basic {b64}")
    });
    let headers: Vec<(&str, &str)> = header
        .iter()
        .map(|h| ("Authorization", h.as_str()))
        .collect();
    tls.write_all(request_text(addr, "GET", path, &headers).as_bytes())?;
    let mut raw = Vec::new();
    // A peer closing without close_notify is an error to rustls; the bytes are in by then.
    let read = tls.read_to_end(&mut raw);
    match parse_bytes(&raw) {
        Some(r) => Ok(r),
        None => Err(read
            .err()
            .unwrap_or_else(|| std::io::Error::other(format!("no HTTP answer over TLS: {raw:?}")))),
    }
}

/// One HTTPS request trusting the fixture CA; panics when there is no answer.
pub fn https(addr: SocketAddr, path: &str, auth: Option<&str>) -> Response {
    https_with(tls_client(), addr, path, auth)
        .unwrap_or_else(|e| panic!("GET {path} over TLS: {e}"))
}

/// `openssl ARGS` in `dir`, which must succeed.
pub fn openssl(dir: &Path, args: &str) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A throwaway CA in `dir` (`NAME-ca.crt`), and a certificate it signed (`NAME.crt`,
/// `NAME.key`) for `usage` (`clientAuth`, or `serverAuth` for 127.0.0.1).
pub fn issue(dir: &Path, name: &str, usage: &str) {
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    openssl(
        dir,
        &format!(
            "req -x509 {ec} -keyout {name}-ca.key -out {name}-ca.crt -subj /CN={name}-ca -days 2"
        ),
    );
    openssl(
        dir,
        &format!("req {ec} -keyout {name}.key -out {name}.csr -subj /CN={name}"),
    );
    let san = if usage == "serverAuth" {
        "subjectAltName=IP:127.0.0.1\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join(format!("{name}.ext")),
        format!("basicConstraints=CA:FALSE\nextendedKeyUsage={usage}\n{san}"),
    )
    .unwrap();
    openssl(
        dir,
        &format!(
            "x509 -req -in {name}.csr -CA {name}-ca.crt -CAkey {name}-ca.key -CAcreateserial \
             -out {name}.crt -days 2 -extfile {name}.ext"
        ),
    );
}
