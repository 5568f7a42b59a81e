//! The HTTP transport of the remote poller: `GET http://HOST:PORT/api/v1/snapshot` with the
//! one HTTP client (`crate::http_client`) on the tokio runtime, one connection per poll.
//! Follows no redirects (a hostile exporter must not make every watcher fetch URLs of its
//! choosing: a 3xx is a failure that names where it pointed) and reads at most
//! [`MAX_BODY`]. Plain HTTP only.

use http::header;

use super::{Fetch, TIMEOUT, Transport};
use crate::http_client::{self, Endpoint, Limits, Request};

/// The exporter's snapshot route.
pub const PATH: &str = "/api/v1/snapshot";
/// Largest snapshot read: a host with thousands of processes is a few MB; more is hostile.
pub const MAX_BODY: usize = 32 << 20;

/// Plain HTTP; the poller also times each fetch out.
#[derive(Debug, Default, Clone, Copy)]
pub struct HttpTransport;

impl Transport for HttpTransport {
    fn fetch(&self, address: &str) -> Fetch {
        let address = address.to_string();
        Box::pin(async move { get(&address).await })
    }
}

async fn get(address: &str) -> Result<String, String> {
    let endpoint = Endpoint::plain(address)?;
    let request = Request::get(PATH).header(header::ACCEPT, "application/json");
    let limits = Limits {
        timeout: TIMEOUT,
        max_body: MAX_BODY,
    };
    let response = http_client::send(&endpoint, request, limits)
        .await
        .map_err(|e| match e {
            http_client::Error::TooLarge(_) => {
                format!("snapshot larger than {} MiB", MAX_BODY >> 20)
            }
            http_client::Error::Closed => "connection closed before an answer".into(),
            // Said as the poller's own cut-off says it: one wording whichever fires first.
            http_client::Error::TimedOut(_) => format!("no answer within {TIMEOUT:?}"),
            other => other.to_string(),
        })?;
    let status = response.status;
    if status.is_redirection() {
        return Err(response.redirect_not_followed());
    }
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    String::from_utf8(response.body.to_vec()).map_err(|_| "snapshot is not UTF-8".to_string())
}
