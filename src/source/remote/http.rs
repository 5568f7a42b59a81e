//! The HTTP transport of the remote poller: `GET http://HOST:PORT/api/v1/snapshot` with
//! hyper's HTTP/1 client on the tokio runtime, one connection per poll. Follows no redirects
//! (a hostile exporter must not make every watcher fetch URLs of its choosing: a 3xx is a
//! failure that names where it pointed) and reads at most [`MAX_BODY`]. Plain HTTP only.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::{Fetch, Transport};

/// The exporter's snapshot route.
pub const PATH: &str = "/api/v1/snapshot";
/// Largest snapshot read: a host with thousands of processes is a few MB; more is hostile.
pub const MAX_BODY: usize = 32 << 20;

/// Plain HTTP with hyper; the poller times each fetch out.
#[derive(Debug, Default, Clone, Copy)]
pub struct HttpTransport;

impl Transport for HttpTransport {
    fn fetch(&self, address: &str) -> Fetch {
        let address = address.to_string();
        Box::pin(async move { get(&address).await })
    }
}

async fn get(address: &str) -> Result<String, String> {
    // An IP address needs no lookup (tokio resolves names on its blocking pool).
    let stream = match address.parse::<std::net::SocketAddr>() {
        Ok(ip) => TcpStream::connect(ip).await,
        Err(_) => TcpStream::connect(address).await,
    }
    .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    let request = http::Request::get(PATH)
        .header(http::header::HOST, address)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    // The connection future drives the socket while the exchange runs; the exchange drops the
    // sender when done, which lets the connection end.
    let exchange = async move {
        let response = sender.send_request(request).await.map_err(describe)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(redirect(status, response.headers()));
        }
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let body = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(
                |e| match e.downcast_ref::<http_body_util::LengthLimitError>() {
                    Some(_) => format!("snapshot larger than {} MiB", MAX_BODY >> 20),
                    None => e.to_string(),
                },
            )?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| "snapshot is not UTF-8".to_string())
    };
    let (result, _) = tokio::join!(exchange, conn);
    result
}

fn describe(e: hyper::Error) -> String {
    if e.is_incomplete_message() {
        "connection closed before an answer".into()
    } else {
        e.to_string()
    }
}

/// `HTTP 302 redirect to http://elsewhere/ not followed`: the target is the host's word, so
/// it is cut short and kept to printable characters before it reaches a screen.
fn redirect(status: http::StatusCode, headers: &http::HeaderMap) -> String {
    let to = headers
        .get(http::header::LOCATION)
        .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned())
        .map(|l| {
            let clean: String = l.chars().filter(|c| !c.is_control()).take(120).collect();
            format!(" to {clean}")
        })
        .unwrap_or_default();
    format!("HTTP {} redirect{to} not followed", status.as_u16())
}
