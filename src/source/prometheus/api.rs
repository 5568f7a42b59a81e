//! Prometheus's HTTP query API as the source needs it: `GET /api/v1/query` (instant) and
//! `/api/v1/query_range`, through an injected [`Api`] so tests need no server, and the JSON
//! answers read into plain series. The real [`HttpApi`] sets basic-auth or bearer headers,
//! times every request out, follows no redirects, and speaks http or https.

use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls::ClientConfig;

use super::answer::error_text;
pub use super::answer::{Labels, Series};
use crate::http_client::{self, Endpoint, Limits, Request, blocking, tls};

/// One GET against the server.
pub trait Api: Send {
    /// The body of `GET {base}{path_and_query}`, or a short reason it could not be had
    /// (a Prometheus error answer is its `error` text). Returns within the API's timeout.
    fn get(&self, path_and_query: &str) -> Result<String, String>;
}

/// How requests authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Basic { user: String, password: String },
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    // Never prints a secret (settings are debug-printed in tests and errors).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::None => write!(f, "None"),
            Auth::Basic { user, .. } => write!(f, "Basic({user:?}, ***)"),
            Auth::Bearer(_) => write!(f, "Bearer(***)"),
        }
    }
}

/// Most bytes one answer may have: 1,000 hosts × 8 GPUs of gpuwatch's own series is about
/// 45 MB of JSON. The body is held while it is read, so this bounds the memory an answer
/// costs (a hostile server's 100 MB label is refused here, not parsed).
pub const MAX_ANSWER: u64 = 64 << 20;

/// The real server, over http or https with the one client (`crate::http_client`; the
/// source runs on the blocking pool, so the blocking wrapper).
pub struct HttpApi {
    endpoint: Endpoint,
    authorization: Option<String>,
    timeout: Duration,
}

impl HttpApi {
    /// `base`: `http(s)://HOST:PORT` with an optional path prefix (a Prometheus behind a
    /// proxy). An https server's certificate must chain to the CAs of `tls` when given
    /// (`--prometheus-ca-file`), to the system's otherwise.
    pub fn new(
        base: &str,
        auth: &Auth,
        tls: Option<Arc<ClientConfig>>,
        timeout: Duration,
    ) -> Result<HttpApi, String> {
        let base = base.trim_end_matches('/');
        let endpoint = Endpoint::url(base, || tls.map_or_else(|| tls::client_config(None), Ok))
            .map_err(|why| format!("{base:?}: {why}"))?;
        Ok(HttpApi {
            endpoint,
            authorization: authorization(auth),
            timeout,
        })
    }
}

fn authorization(auth: &Auth) -> Option<String> {
    match auth {
        Auth::None => None,
        Auth::Basic { user, password } => Some(http_client::basic_auth(user, password)),
        Auth::Bearer(token) => Some(format!("Bearer {token}")),
    }
}

impl Api for HttpApi {
    fn get(&self, path_and_query: &str) -> Result<String, String> {
        let mut request = Request::get(path_and_query);
        if let Some(a) = &self.authorization {
            request = request.header(http::header::AUTHORIZATION, a.clone());
        }
        let limits = Limits {
            timeout: self.timeout,
            max_body: MAX_ANSWER as usize,
        };
        // A redirect could send the credentials elsewhere: the client follows none, and
        // the answer says where it pointed.
        let response = blocking::send(&self.endpoint, request, limits).map_err(describe)?;
        let status = response.status.as_u16();
        if response.status.is_redirection() {
            return Err(response.redirect_not_followed());
        }
        let body = String::from_utf8_lossy(&response.body).into_owned();
        match status {
            200..=299 => Ok(body),
            401 | 403 => Err(format!(
                "HTTP {status}: check --prometheus-user/--password-file or --bearer-token-file"
            )),
            // Prometheus answers bad queries with 400/422 and its reason in the JSON.
            _ => Err(error_text(&body).unwrap_or_else(|| format!("HTTP {status}"))),
        }
    }
}

fn too_large() -> String {
    format!(
        "answer larger than {} MiB left unread: narrow it with --selector",
        MAX_ANSWER >> 20
    )
}

fn describe(e: http_client::Error) -> String {
    match e {
        http_client::Error::TimedOut(_) => "no answer in time".into(),
        http_client::Error::TooLarge(_) => too_large(),
        http_client::Error::Tls(why) if why.contains("does not verify") => {
            format!("{why}; give the CA with --prometheus-ca-file")
        }
        other => other.to_string(),
    }
}

/// Percent-encodes a query parameter (PromQL is full of `{}"=~|`). Hand-written: eight
/// lines, and the only URL encoding gpuwatch does.
pub fn encode_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `/api/v1/query?query=…&time=…`.
pub fn instant_path(promql: &str, time: f64) -> String {
    format!(
        "/api/v1/query?query={}&time={time:.3}",
        encode_param(promql)
    )
}

/// `/api/v1/query_range?query=…&start=…&end=…&step=…`.
pub fn range_path(promql: &str, start: f64, end: f64, step: Duration) -> String {
    format!(
        "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step={:.3}",
        encode_param(promql),
        step.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_base64() {
        let auth = Auth::Basic {
            user: "Aladdin".into(),
            password: "open sesame".into(),
        };
        assert_eq!(
            authorization(&auth).unwrap(),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
    }

    #[test]
    fn params_are_percent_encoded() {
        assert_eq!(encode_param(r#"up{a="b c"}"#), "up%7Ba%3D%22b%20c%22%7D");
    }

    #[test]
    fn http_and_https_urls() {
        let t = Duration::from_secs(1);
        let err = HttpApi::new("ftp://prom:9090", &Auth::None, None, t)
            .err()
            .unwrap();
        assert!(err.contains("not an http:// or https:// URL"), "{err}");
        assert!(HttpApi::new("http://prom:9090/", &Auth::None, None, t).is_ok());
        let missing = std::path::Path::new("/nonexistent/ca.pem");
        let err = tls::client_config(Some(missing)).err().unwrap();
        assert!(err.starts_with("/nonexistent/ca.pem: "), "{err}");
        let secret = format!("{:?}", Auth::Bearer("s3cret".into()));
        assert!(!secret.contains("s3cret"));
    }
}
