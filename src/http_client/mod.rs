//! gpuwatch's one HTTP/1.1 client, on hyper: `--prometheus` (http or https), `--remote`
//! hosts, alert webhooks and the container engines' unix sockets all send through
//! [`send`]. Owns the limits every outside call has — one deadline for the connect, the TLS
//! handshake and the whole answer, a cap on the body (a length announced over it is refused
//! before a byte is read) — and follows no redirect (each caller says where a 3xx pointed,
//! if it may). Knows nothing of what is asked: paths, headers and the meaning of a status
//! are the callers'. Blocking callers (the Prometheus source on the blocking pool, the names
//! worker, webhook threads) use [`blocking`]. HTTP/2 (the kubelet's gRPC) is not here: it
//! uses h2 directly (`procinfo::kubelet`).

pub mod blocking;
mod endpoint;
pub mod tls;

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper_util::rt::TokioIo;

pub use endpoint::{Endpoint, Target};

/// What one call may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// For everything: connecting, the TLS handshake, sending, and reading the whole answer.
    pub timeout: Duration,
    /// Most bytes of body read; past it the answer is [`Error::TooLarge`].
    pub max_body: usize,
}

/// One request: the method, the path (with its query) on the endpoint, extra headers, a body.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub headers: Vec<(header::HeaderName, String)>,
    pub body: Bytes,
}

impl Request {
    pub fn get(path: impl Into<String>) -> Self {
        Request {
            method: Method::GET,
            path: path.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    pub fn post(path: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Request {
            method: Method::POST,
            path: path.into(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn header(mut self, name: header::HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// An answer read in full (within the cap): any status, redirects included.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    /// `HTTP 302 redirect to http://elsewhere/ not followed`: the target is the server's
    /// word, so it is cut short and kept to printable characters before it reaches a screen.
    pub fn redirect_not_followed(&self) -> String {
        let to = self
            .headers
            .get(header::LOCATION)
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
            .map(|l| {
                let clean: String = l.chars().filter(|c| !c.is_control()).take(120).collect();
                format!(" to {clean}")
            })
            .unwrap_or_default();
        format!("HTTP {} redirect{to} not followed", self.status.as_u16())
    }
}

/// Why a call got no answer. Each message is one line fit to follow `what: `.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Connecting failed (refused, no such socket, no route, name not found): the kind says which.
    #[error("{0}")]
    Connect(std::io::Error),
    /// The TLS handshake failed; a certificate that does not verify is said as such.
    #[error("TLS: {0}")]
    Tls(String),
    #[error("no complete answer within {0:?}")]
    TimedOut(Duration),
    #[error("answer larger than {0} bytes left unread")]
    TooLarge(usize),
    #[error("connection closed before a complete answer")]
    Closed,
    #[error("{0}")]
    Protocol(String),
    /// The blocking wrapper could not start its runtime (out of file descriptors).
    #[error("cannot start an I/O runtime: {0}")]
    Runtime(std::io::Error),
}

/// Sends `request` to `endpoint` and reads the answer, all within `limits`. One connection
/// per call: callers ask a few times per refresh at most, and nothing outlives the call.
pub async fn send(
    endpoint: &Endpoint,
    request: Request,
    limits: Limits,
) -> Result<Response, Error> {
    tokio::time::timeout(limits.timeout, exchange(endpoint, request, limits.max_body))
        .await
        .map_err(|_| Error::TimedOut(limits.timeout))?
}

async fn exchange(endpoint: &Endpoint, request: Request, cap: usize) -> Result<Response, Error> {
    let request = endpoint.request(request)?;
    let io = endpoint.connect().await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(hyper_error)?;
    // The connection future drives the socket while the exchange runs; the exchange owns
    // the sender and drops it when done, which lets the connection end.
    let exchange = async move {
        let response = sender.send_request(request).await.map_err(hyper_error)?;
        let (parts, body) = response.into_parts();
        let announced = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| l.trim().parse::<u64>().ok());
        if announced.is_some_and(|l| l > cap as u64) {
            return Err(Error::TooLarge(cap));
        }
        let body = Limited::new(body, cap)
            .collect()
            .await
            .map_err(|e| match e.downcast::<hyper::Error>() {
                Ok(e) => hyper_error(*e),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => Error::TooLarge(cap),
                Err(e) => Error::Protocol(e.to_string()),
            })?
            .to_bytes();
        Ok(Response {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    let (result, _) = tokio::join!(exchange, conn);
    result
}

fn hyper_error(e: hyper::Error) -> Error {
    if e.is_incomplete_message() || e.is_canceled() {
        Error::Closed
    } else {
        Error::Protocol(e.to_string())
    }
}

/// The `Authorization` value of HTTP basic auth.
pub fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

#[cfg(test)]
mod tests;
