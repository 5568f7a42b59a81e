//! `--web.config.file`: the Prometheus exporter toolkit's web config (YAML), the subset
//! gpuwatch serves: `tls_server_config` (`cert_file`, `key_file`, `client_ca_file`,
//! `client_auth_type`, `min_version`; paths relative to the file, as the toolkit resolves
//! them; built in `tls`) and `basic_auth_users` (user → bcrypt hash). Any other key is
//! refused by name rather than ignored: a setting silently dropped would leave the exporter
//! more open than its admin thinks. Reads the file at start with the config file's bounds
//! (`safe_file`: regular files only, size-capped) and a nesting cap on the YAML, since a
//! hostile or mistaken path must not hang or exhaust start-up.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::auth::Users;
use super::tls::{Tls, TlsFile};
use crate::safe_file;

/// The web config is a few hundred bytes; this leaves room for thousands of users.
const MAX_CONFIG: u64 = 256 << 10;
/// The deepest nesting a web config needs is 2 (`tls_server_config.cert_file`); parsing a
/// 100,000-deep document cost 40 s of CPU before this cap.
const MAX_NESTING: usize = 16;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebConfigFile {
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
}

/// What the web config asks for, ready to serve.
pub struct WebConfig {
    pub tls: Option<Arc<Tls>>,
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
        let text = safe_file::read_text(path, MAX_CONFIG)
            .map_err(|e| format!("--web.config.file: cannot read {shown}: {e}"))?;
        if nesting(&text) > MAX_NESTING {
            return Err(format!(
                "{shown}: nested deeper than {MAX_NESTING} levels; a web config needs 2"
            ));
        }
        // An empty file is an empty document: nothing configured, as for the toolkit.
        let file: WebConfigFile = if text.trim().is_empty() {
            WebConfigFile::default()
        } else {
            serde_yaml_ng::from_str(&text).map_err(|e| format!("{shown}: {e}"))?
        };
        let tls = match &file.tls_server_config {
            Some(t) => Some(Arc::new(Tls::load(t, path)?)),
            None => None,
        };
        let users = match file.basic_auth_users.is_empty() {
            true => None,
            false => Some(Users::new(file.basic_auth_users).map_err(|e| format!("{shown}: {e}"))?),
        };
        Ok(WebConfig { tls, users })
    }
}

/// How deep the YAML nests, over-estimated cheaply before parsing: flow brackets (`[`, `{`)
/// outside quotes, plus per line the indentation and block-sequence dashes (`- - -`).
fn nesting(text: &str) -> usize {
    let mut deepest = 0;
    let mut flow = 0usize;
    for line in text.lines() {
        let body = line.trim_start_matches([' ', '\t', '-']);
        let block = line.len() - body.len();
        let mut quote = None;
        for c in body.chars() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, '#') => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            deepest = deepest.max(flow + block / 2);
        }
        deepest = deepest.max(flow + block / 2);
    }
    deepest
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
        let err = load("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [c]\n")
            .err()
            .unwrap();
        assert!(err.contains("cipher_suites"), "{err}");
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

    /// Issue 26 item 8: the config, the certificate and the key are read only if they are
    /// regular files of bounded size, and a deeply nested document is refused before parsing.
    #[test]
    fn devices_fifos_huge_and_deep_files_are_refused_at_once() {
        let err = WebConfig::load(Path::new("/dev/zero")).err().unwrap();
        assert!(
            err.contains("not a regular file (a character device)"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = WebConfig::load(&fifo).err().unwrap();
        assert!(err.contains("a FIFO"), "{err}");
        let err = load(&format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
            fifo.display(),
            fifo.display()
        ))
        .err()
        .unwrap();
        assert!(err.contains("cert_file") && err.contains("a FIFO"), "{err}");
        let err = load(&"#".repeat(300 << 10)).err().unwrap();
        assert!(err.contains("larger than 256 KiB"), "{err}");
        let started = std::time::Instant::now();
        for deep in [
            "[".repeat(100_000),
            "- ".repeat(50_000),
            "{a: ".repeat(50_000),
        ] {
            let err = load(&deep).err().unwrap();
            assert!(err.contains("nested deeper than 16"), "{err}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // What people write stays well inside the cap.
        let ok = "tls_server_config:\n  cert_file: \"a[1].crt\"\n  key_file: b\n";
        assert_eq!(nesting(ok), 1);
        assert_eq!(nesting("users: [[[x]]] # [[[[[[["), 3);
    }
}
