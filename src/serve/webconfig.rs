//! `--web.config.file`: the Prometheus exporter toolkit's web config (YAML), the subset
//! gpuwatch serves: `tls_server_config` (`cert_file`, `key_file`, relative to the file, as the
//! toolkit resolves them) and `basic_auth_users` (user → bcrypt hash). Any other key is
//! refused by name rather than ignored: a client-certificate setting silently dropped would
//! leave the exporter more open than its admin thinks. Reads the files once, at start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::auth::Users;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebConfigFile {
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: String,
    key_file: String,
}

/// What the web config asks for, ready to serve.
pub struct WebConfig {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `None`: no basic auth.
    pub users: Option<Users>,
}

impl WebConfig {
    /// Plain HTTP, nobody asked for a password.
    pub fn open() -> Self {
        WebConfig {
            tls: None,
            users: None,
        }
    }

    /// Reads `path` and the files it names; every error is one line naming the file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--web.config.file: cannot read {shown}: {e}"))?;
        // An empty file is an empty document: nothing configured, as for the toolkit.
        let file: WebConfigFile = if text.trim().is_empty() {
            WebConfigFile::default()
        } else {
            serde_yaml_ng::from_str(&text).map_err(|e| format!("{shown}: {e}"))?
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let tls = match &file.tls_server_config {
            Some(t) => Some(Arc::new(server_config(
                &base.join(&t.cert_file),
                &base.join(&t.key_file),
                path,
            )?)),
            None => None,
        };
        let users = match file.basic_auth_users.is_empty() {
            true => None,
            false => Some(Users::new(file.basic_auth_users).map_err(|e| format!("{shown}: {e}"))?),
        };
        Ok(WebConfig { tls, users })
    }
}

/// A rustls server config for the PEM certificate chain and key (TLS 1.2 and 1.3, HTTP/1.1).
fn server_config(
    cert: &PathBuf,
    key: &PathBuf,
    web: &Path,
) -> Result<rustls::ServerConfig, String> {
    let at = |what: &str, file: &PathBuf, why: &dyn std::fmt::Display| {
        format!(
            "{}: tls_server_config.{what} {}: {why}",
            web.display(),
            file.display()
        )
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| at("cert_file", cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| at("cert_file", cert, &e))?;
    if certs.is_empty() {
        return Err(at("cert_file", cert, &"no PEM certificate in it"));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| at("key_file", key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{}: {e}", web.display()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("{}: tls_server_config: {e}", web.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<WebConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("web.yml");
        std::fs::write(&path, text).unwrap();
        WebConfig::load(&path)
    }

    #[test]
    fn an_unsupported_key_is_refused_by_name() {
        let err = load("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n")
            .err()
            .unwrap();
        assert!(err.contains("client_ca_file"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let err = load("http_server_config:\n  http2: false\n").err().unwrap();
        assert!(err.contains("http_server_config"), "{err}");
    }

    #[test]
    fn a_missing_certificate_names_the_key_and_the_file() {
        let err = load("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n")
            .err()
            .unwrap();
        assert!(err.contains("tls_server_config.cert_file"), "{err}");
        assert!(err.contains("nope.crt"), "{err}");
    }

    #[test]
    fn an_empty_file_asks_for_nothing_and_a_bad_hash_is_refused() {
        let open = load("").unwrap();
        assert!(open.tls.is_none() && open.users.is_none());
        let err = load("basic_auth_users:\n  alice: not-a-hash\n")
            .err()
            .unwrap();
        assert!(err.contains("alice"), "{err}");
    }
}
