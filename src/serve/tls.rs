//! The exporter's TLS from the web config's `tls_server_config`: the certificate chain and
//! key, client certificates (`client_ca_file`, `client_auth_type`, as the exporter toolkit
//! names them) and `min_version`. The files are re-read when they change (cert-manager and
//! Kubernetes secrets rotate them in place) — looked at, at most once a second, when a client
//! connects — and on SIGHUP; a file that cannot be used then keeps the previous certificate
//! and is said once on stderr. Reads files with the web config's bounds; knows nothing of HTTP.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;

use crate::http_client::tls::read_certs;
use crate::safe_file;

/// A certificate chain, key or CA bundle in PEM: a long chain is a few tens of KiB.
const MAX_PEM: u64 = 1 << 20;

/// How often a connecting client makes us look whether the files changed.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// `tls_server_config` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFile {
    cert_file: String,
    key_file: String,
    client_ca_file: Option<String>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
}

/// Which client certificates are asked for (the exporter toolkit's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuth {
    NoClientCert,
    VerifyClientCertIfGiven,
    RequireAndVerifyClientCert,
}

impl ClientAuth {
    /// `client_auth_type`; with a `client_ca_file` and no type, a verified certificate is
    /// required, as the toolkit does.
    fn parse(text: Option<&str>, has_ca: bool) -> Result<Self, String> {
        match text {
            None | Some("") if has_ca => Ok(ClientAuth::RequireAndVerifyClientCert),
            None | Some("" | "NoClientCert") => Ok(ClientAuth::NoClientCert),
            Some("VerifyClientCertIfGiven") => Ok(ClientAuth::VerifyClientCertIfGiven),
            Some("RequireAndVerifyClientCert") => Ok(ClientAuth::RequireAndVerifyClientCert),
            Some(t @ ("RequestClientCert" | "RequireAnyClientCert")) => Err(format!(
                "{t} is not supported: a certificate nobody verifies proves nothing; use \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert with client_ca_file"
            )),
            Some(other) => Err(format!(
                "unknown value {other:?}: use NoClientCert, VerifyClientCertIfGiven or \
                 RequireAndVerifyClientCert"
            )),
        }
    }
}

/// `min_version`: rustls speaks TLS 1.2 and 1.3 only.
fn protocol_versions(
    text: Option<&str>,
) -> Result<&'static [&'static rustls::SupportedProtocolVersion], String> {
    static BOTH: [&rustls::SupportedProtocolVersion; 2] =
        [&rustls::version::TLS13, &rustls::version::TLS12];
    static ONLY_13: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
    match text {
        None | Some("" | "TLS12") => Ok(&BOTH),
        Some("TLS13") => Ok(&ONLY_13),
        Some(t @ ("TLS10" | "TLS11")) => Err(format!(
            "{t} is not supported (gpuwatch speaks TLS 1.2 and 1.3): use TLS12 or TLS13"
        )),
        Some(other) => Err(format!("unknown value {other:?}: use TLS12 or TLS13")),
    }
}

/// Everything needed to build the server config again, resolved at start.
#[derive(Debug)]
struct Spec {
    web: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<PathBuf>,
    auth: ClientAuth,
    versions: &'static [&'static rustls::SupportedProtocolVersion],
}

/// What identifies a file's content without reading it.
type Stamp = Option<(SystemTime, u64, u64)>;

struct Current {
    acceptor: TlsAcceptor,
    stamps: Vec<Stamp>,
    checked: Instant,
}

/// The TLS side of the listener: the acceptor in use, re-read when its files change.
pub struct Tls {
    spec: Spec,
    current: Mutex<Current>,
}

impl Tls {
    /// Checks `tls_server_config` (from the web config at `web`, whose directory relative
    /// paths start from) and reads its files; every error is one line naming the key.
    pub fn load(file: &TlsFile, web: &Path) -> Result<Self, String> {
        let base = web.parent().unwrap_or(Path::new("."));
        let at =
            |key: &str, why: String| format!("{}: tls_server_config.{key}: {why}", web.display());
        let client_ca = file.client_ca_file.as_ref().map(|f| base.join(f));
        let auth = ClientAuth::parse(file.client_auth_type.as_deref(), client_ca.is_some())
            .map_err(|why| at("client_auth_type", why))?;
        if auth != ClientAuth::NoClientCert && client_ca.is_none() {
            return Err(at(
                "client_auth_type",
                "verifying client certificates needs client_ca_file".into(),
            ));
        }
        let spec = Spec {
            web: web.to_path_buf(),
            cert: base.join(&file.cert_file),
            key: base.join(&file.key_file),
            client_ca,
            versions: protocol_versions(file.min_version.as_deref())
                .map_err(|why| at("min_version", why))?,
            auth,
        };
        let stamps = spec.stamps();
        let acceptor = TlsAcceptor::from(Arc::new(spec.server_config()?));
        Ok(Tls {
            spec,
            current: Mutex::new(Current {
                acceptor,
                stamps,
                checked: Instant::now(),
            }),
        })
    }

    /// The acceptor for a new connection, after re-reading the files if they changed
    /// (looked at no more than once a second).
    pub fn acceptor(&self) -> TlsAcceptor {
        let mut current = self.lock();
        if current.checked.elapsed() >= CHECK_EVERY {
            current.checked = Instant::now();
            let stamps = self.spec.stamps();
            if stamps != current.stamps {
                current.stamps = stamps;
                self.replace(&mut current);
            }
        }
        current.acceptor.clone()
    }

    /// Re-reads the files now (SIGHUP).
    pub fn reload(&self) {
        let mut current = self.lock();
        current.stamps = self.spec.stamps();
        current.checked = Instant::now();
        self.replace(&mut current);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Builds from the files; keeps the old acceptor (and says why) when that fails.
    fn replace(&self, current: &mut Current) {
        match self.spec.server_config() {
            Ok(config) => {
                current.acceptor = TlsAcceptor::from(Arc::new(config));
                eprintln!(
                    "gpuwatch: TLS certificate re-read from {}",
                    self.spec.cert.display()
                );
            }
            Err(why) => eprintln!(
                "gpuwatch: {}; keeping the previous certificate",
                crate::text_safe::escape(&why)
            ),
        }
    }
}

impl Spec {
    fn stamps(&self) -> Vec<Stamp> {
        [Some(&self.cert), Some(&self.key), self.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .map(|path| {
                use std::os::unix::fs::MetadataExt;
                // Follows links: a Kubernetes secret swaps the `..data` link it points through.
                let meta = std::fs::metadata(path).ok()?;
                Some((meta.modified().ok()?, meta.len(), meta.ino()))
            })
            .collect()
    }

    fn at(&self, key: &str, file: &Path, why: &dyn std::fmt::Display) -> String {
        format!(
            "{}: tls_server_config.{key} {}: {why}",
            self.web.display(),
            file.display()
        )
    }

    /// A rustls server config from the files (HTTP/1.1 by ALPN).
    fn server_config(&self) -> Result<rustls::ServerConfig, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = match &self.client_ca {
            Some(ca) if self.auth != ClientAuth::NoClientCert => {
                let roots = self.client_roots(ca)?;
                let builder =
                    WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider));
                let builder = match self.auth {
                    ClientAuth::VerifyClientCertIfGiven => builder.allow_unauthenticated(),
                    _ => builder,
                };
                Some(
                    builder
                        .build()
                        .map_err(|e| self.at("client_ca_file", ca, &e))?,
                )
            }
            _ => None,
        };
        let builder = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(self.versions)
            .map_err(|e| format!("{}: {e}", self.web.display()))?;
        let builder = match verifier {
            Some(v) => builder.with_client_cert_verifier(v),
            None => builder.with_no_client_auth(),
        };
        let (certs, key) = self.certified_key()?;
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| format!("{}: tls_server_config: {e}", self.web.display()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    fn certified_key(
        &self,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
        let cert = &self.cert;
        let certs = read_certs(cert).map_err(|e| self.at("cert_file", cert, &e))?;
        let key_pem = safe_file::read_text(&self.key, MAX_PEM)
            .map_err(|e| self.at("key_file", &self.key, &e))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| self.at("key_file", &self.key, &e))?;
        Ok((certs, key))
    }

    fn client_roots(&self, ca: &Path) -> Result<Arc<rustls::RootCertStore>, String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in read_certs(ca).map_err(|e| self.at("client_ca_file", ca, &e))? {
            roots
                .add(cert)
                .map_err(|e| self.at("client_ca_file", ca, &e))?;
        }
        Ok(Arc::new(roots))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_auth_types_follow_the_exporter_toolkit() {
        use ClientAuth::*;
        assert_eq!(ClientAuth::parse(None, false), Ok(NoClientCert));
        assert_eq!(
            ClientAuth::parse(None, true),
            Ok(RequireAndVerifyClientCert)
        );
        assert_eq!(
            ClientAuth::parse(Some("VerifyClientCertIfGiven"), true),
            Ok(VerifyClientCertIfGiven)
        );
        let err = ClientAuth::parse(Some("RequireAnyClientCert"), true).unwrap_err();
        assert!(err.contains("not supported"), "{err}");
        let err = ClientAuth::parse(Some("Required"), true).unwrap_err();
        assert!(err.contains("\"Required\""), "{err}");
    }

    #[test]
    fn min_version_is_12_or_13() {
        assert_eq!(protocol_versions(None).unwrap().len(), 2);
        assert_eq!(protocol_versions(Some("TLS13")).unwrap().len(), 1);
        assert!(
            protocol_versions(Some("TLS10"))
                .unwrap_err()
                .contains("TLS 1.2 and 1.3")
        );
        assert!(protocol_versions(Some("tls13")).is_err());
    }
}
