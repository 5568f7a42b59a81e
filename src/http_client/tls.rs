//! The client side of TLS: which certificate authorities a server's certificate must chain
//! to — a PEM file the user gives (`--prometheus-ca-file`), or the system's store — and
//! how a failed handshake is said. rustls on ring, as the exporter's server side.
//!
//! The system store is read with `rustls-native-certs`: it finds the bundle where each
//! distribution keeps it (Debian's /etc/ssl/certs, RHEL's /etc/pki/tls, SUSE, Alpine) and
//! honours `SSL_CERT_FILE`/`SSL_CERT_DIR` as OpenSSL does, so an admin's own CA added the
//! distribution's way is trusted. Not webpki-roots: a compiled-in Mozilla list ignores those
//! local CAs and ages with the binary; the image installs ca-certificates.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

use crate::safe_file;

/// A CA bundle in PEM: a long one (a distribution's) is a few hundred KiB.
const MAX_PEM: u64 = 4 << 20;

/// The PEM certificates in `path`, at least one.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = safe_file::read_text(path, MAX_PEM).map_err(|e| e.to_string())?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no PEM certificate in it".into());
    }
    Ok(certs)
}

/// A client config trusting the CAs in `ca_file`, or the system's when `None`. An error
/// names the file and says what is wrong with it, in one line.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    match ca_file {
        Some(file) => {
            let at = |why: &dyn std::fmt::Display| format!("{}: {why}", file.display());
            let mut roots = RootCertStore::empty();
            for cert in read_certs(file).map_err(|e| at(&e))? {
                roots.add(cert).map_err(|e| at(&e))?;
            }
            build(roots)
        }
        None => {
            // Read once per process: every webhook post and Prometheus query shares it.
            static SYSTEM: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
            SYSTEM.get_or_init(|| build(system_roots()?)).clone()
        }
    }
}

fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (_added, _unusable) = roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "no CA certificates found on this system{why}: install ca-certificates, set \
             SSL_CERT_FILE, or give the CA's PEM file"
        ));
    }
    Ok(roots)
}

fn build(roots: RootCertStore) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // We speak HTTP/1.1 only; saying so keeps a server from choosing h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A failed handshake in words: a certificate that does not verify says so and why.
pub fn describe(e: &std::io::Error) -> String {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(why)) => {
            format!(
                "the server's certificate does not verify: {}",
                certificate(why)
            )
        }
        Some(other) => other.to_string(),
        None => e.to_string(),
    }
}

fn certificate(why: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    match why {
        C::UnknownIssuer => "signed by an authority not trusted here".into(),
        C::Expired | C::ExpiredContext { .. } => "expired".into(),
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "not issued for this host name".into()
        }
        other => format!("{other:?}"),
    }
}
