//! Prometheus's HTTP query API as the source needs it: `GET /api/v1/query` (instant) and
//! `/api/v1/query_range`, through an injected [`Api`] so tests need no server, and the JSON
//! answers read into plain series. The real [`HttpApi`] sets basic-auth or bearer headers,
//! times every request out, follows no redirects, and reads plain HTTP only.

use std::time::Duration;

pub use super::answer::Series;
use super::answer::error_text;

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

/// The real server, over plain HTTP with ureq (the source runs on the blocking pool).
pub struct HttpApi {
    agent: ureq::Agent,
    base: String,
    authorization: Option<String>,
}

impl HttpApi {
    /// `base`: `http://HOST:PORT` with an optional path prefix (a Prometheus behind a proxy).
    pub fn new(base: &str, auth: &Auth, timeout: Duration) -> Result<HttpApi, String> {
        let base = base.trim_end_matches('/');
        if !base.starts_with("http://") {
            return Err(format!(
                "{base:?} is not an http:// URL (https is not supported yet: put a local \
                 proxy in front, or reach Prometheus over plain HTTP)"
            ));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect could send the credentials elsewhere: follow none, say so.
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .build()
            .into();
        Ok(HttpApi {
            agent,
            base: base.to_string(),
            authorization: authorization(auth),
        })
    }
}

fn authorization(auth: &Auth) -> Option<String> {
    use base64_like::encode;
    match auth {
        Auth::None => None,
        Auth::Basic { user, password } => {
            Some(format!("Basic {}", encode(&format!("{user}:{password}"))))
        }
        Auth::Bearer(token) => Some(format!("Bearer {token}")),
    }
}

impl Api for HttpApi {
    fn get(&self, path_and_query: &str) -> Result<String, String> {
        let url = format!("{}{path_and_query}", self.base);
        let mut request = self.agent.get(&url);
        if let Some(a) = &self.authorization {
            request = request.header("Authorization", a);
        }
        let mut response = request.call().map_err(describe)?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            let to = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
                .map(|l| {
                    format!(
                        " to {}",
                        l.chars()
                            .filter(|c| !c.is_control())
                            .take(120)
                            .collect::<String>()
                    )
                })
                .unwrap_or_default();
            return Err(format!("HTTP {status} redirect{to} not followed"));
        }
        // A length announced over the bound is refused before a byte of it is read.
        let length = response
            .headers()
            .get("content-length")
            .and_then(|l| l.to_str().ok())
            .and_then(|l| l.trim().parse::<u64>().ok());
        if length.is_some_and(|l| l > MAX_ANSWER) {
            return Err(too_large());
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_string()
            .map_err(describe)?;
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

fn describe(e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer in time".into(),
        ureq::Error::BodyExceedsLimit(_) => too_large(),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

/// Hand-written (a dozen lines) rather than a crate: basic auth is the only base64 here.
mod base64_like {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn encode(text: &str) -> String {
        let mut out = String::new();
        for chunk in text.as_bytes().chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(TABLE[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
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
        assert_eq!(
            base64_like::encode("Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(base64_like::encode("ab"), "YWI=");
        assert_eq!(base64_like::encode("abc"), "YWJj");
    }

    #[test]
    fn params_are_percent_encoded() {
        assert_eq!(encode_param(r#"up{a="b c"}"#), "up%7Ba%3D%22b%20c%22%7D");
    }

    #[test]
    fn only_plain_http_urls() {
        let err = HttpApi::new("https://prom:9090", &Auth::None, Duration::from_secs(1))
            .err()
            .unwrap();
        assert!(err.contains("not an http:// URL"), "{err}");
        assert!(HttpApi::new("http://prom:9090/", &Auth::None, Duration::from_secs(1)).is_ok());
        let secret = format!("{:?}", Auth::Bearer("s3cret".into()));
        assert!(!secret.contains("s3cret"));
    }
}
