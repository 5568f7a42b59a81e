//! Where a request goes and how its bytes get there: TCP, TLS over TCP (rustls on ring), or
//! a unix socket. Parses the `http://` and `https://` URLs users give (a path prefix and a
//! `user:password@` part kept), builds the request line and headers, and opens the stream.
//! Knows nothing of what is asked.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::{Uri, header};
use http_body_util::Full;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::ServerName;

use super::{Error, Request};

/// The bytes of one connection, whichever way it goes.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// How an endpoint is reached.
#[derive(Clone)]
pub enum Target {
    Tcp,
    Tls(TlsConnector, ServerName<'static>),
    Unix(PathBuf),
}

/// A server to send requests to, checked once when it is made.
#[derive(Clone)]
pub struct Endpoint {
    target: Target,
    /// The host (no brackets around an IPv6 address) and port TCP connects to.
    host: String,
    port: u16,
    /// The `Host` header: the URL's authority without its user part.
    authority: String,
    /// The URL's path and query: a prefix requests' paths follow (a Prometheus behind a
    /// proxy), or the whole path a webhook posts to.
    base: String,
    /// From a `user:password@` in the URL.
    authorization: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    // Never the user part or the path: either may be a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match &self.target {
            Target::Tcp => "http",
            Target::Tls(..) => "https",
            Target::Unix(_) => "unix",
        };
        write!(f, "Endpoint({how}://{})", self.authority)
    }
}

impl Endpoint {
    /// A daemon's API on a unix socket (the `Host` header says `localhost`).
    pub fn unix(socket: impl Into<PathBuf>) -> Self {
        Endpoint {
            target: Target::Unix(socket.into()),
            host: "localhost".into(),
            port: 0,
            authority: "localhost".into(),
            base: String::new(),
            authorization: None,
        }
    }

    /// `http://HOST:PORT` (the remote poller's hosts).
    pub fn plain(address: &str) -> Result<Self, String> {
        Self::url(&format!("http://{address}"), || {
            Err("no TLS for a plain address".into())
        })
    }

    /// An `http://` or `https://` URL; `tls` gives the client config when it is https (so
    /// roots are read only when needed). Errors do not quote the URL (its path or user part
    /// may be a secret): the caller says which setting was wrong.
    pub fn url(
        url: &str,
        tls: impl FnOnce() -> Result<Arc<rustls::ClientConfig>, String>,
    ) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|_| "not a URL".to_string())?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err("not an http:// or https:// URL".into()),
        };
        let full = uri.authority().ok_or("no HOST[:PORT] in the URL")?.as_str();
        let (user, authority) = match full.rsplit_once('@') {
            Some((user, authority)) => (Some(user), authority),
            None => (None, full),
        };
        let host = uri.host().unwrap_or_default();
        if host.is_empty() {
            return Err("no HOST[:PORT] in the URL".into());
        }
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
        let target = if secure {
            let name = ServerName::try_from(host.clone())
                .map_err(|_| format!("{host:?} is not a host name TLS can check"))?;
            Target::Tls(TlsConnector::from(tls()?), name)
        } else {
            Target::Tcp
        };
        let base = uri.path_and_query().map_or("", |p| p.as_str());
        Ok(Endpoint {
            target,
            host,
            port,
            authority: authority.to_string(),
            base: if base == "/" {
                String::new()
            } else {
                base.into()
            },
            authorization: user.map(|u| {
                let (name, password) = u.split_once(':').unwrap_or((u, ""));
                super::basic_auth(name, password)
            }),
        })
    }

    /// Whether requests go over TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.target, Target::Tls(..))
    }

    /// The hyper request: the base path joined with the request's, `Host`, our
    /// `User-Agent`, basic auth from the URL, then the caller's headers.
    pub(super) fn request(&self, r: Request) -> Result<http::Request<Full<Bytes>>, Error> {
        let path = match (self.base.as_str(), r.path.as_str()) {
            ("", "") => "/".to_string(),
            (base, "") => base.to_string(),
            (base, path) => format!("{}{path}", base.trim_end_matches('/')),
        };
        let mut builder = http::Request::builder()
            .method(r.method)
            .uri(path)
            .header(header::HOST, &self.authority)
            .header(
                header::USER_AGENT,
                concat!("gpuwatch/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(a) = &self.authorization {
            builder = builder.header(header::AUTHORIZATION, a);
        }
        for (name, value) in r.headers {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(r.body))
            .map_err(|e| Error::Protocol(format!("cannot build the request: {e}")))
    }

    pub(super) async fn connect(&self) -> Result<Box<dyn Stream>, Error> {
        match &self.target {
            Target::Unix(path) => Ok(Box::new(
                UnixStream::connect(path).await.map_err(Error::Connect)?,
            )),
            Target::Tcp => Ok(Box::new(self.tcp().await?)),
            Target::Tls(connector, name) => {
                let tcp = self.tcp().await?;
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| Error::Tls(super::tls::describe(&e)))?;
                Ok(Box::new(tls))
            }
        }
    }

    async fn tcp(&self) -> Result<TcpStream, Error> {
        // An IP address needs no lookup (tokio resolves names on its blocking pool).
        match self.host.parse::<IpAddr>() {
            Ok(ip) => TcpStream::connect((ip, self.port)).await,
            Err(_) => TcpStream::connect((self.host.as_str(), self.port)).await,
        }
        .map_err(Error::Connect)
    }
}
