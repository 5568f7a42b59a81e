//! One HTTP/1.1 GET over a unix socket, bounded by a deadline and a size cap: what the
//! container engines' APIs need. Owns the socket I/O and the body framing
//! (`Content-Length`, chunked, or up to the close); must not know about any engine.
//!
//! Written by hand, with `httparse` (already in the tree through axum's hyper) doing the
//! parsing of the head and of chunk sizes: the HTTP clients with unix-socket support are
//! hyper-based and would bring an async runtime onto the name worker's thread for one GET,
//! and ureq's transport hooks are its `unversioned` API. What is left — write a request,
//! read until a deadline, frame the body — is small and tested here.
//!
//! HTTP/1.1 with `Connection: close` rather than HTTP/1.0: some Docker-compatible servers
//! answer 1.0 requests badly, and Docker sends `Transfer-Encoding: chunked` for some 1.1
//! responses, so chunked bodies are decoded.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

/// Why a GET got no usable response.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No socket there, or a stale one nobody listens on.
    #[error("no server at {0}")]
    Missing(String),
    #[error("permission denied on {0}")]
    Denied(String),
    #[error("no complete answer in time")]
    TimedOut,
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("not an HTTP answer: {0}")]
    Malformed(String),
    #[error("{0}")]
    Io(io::Error),
}

/// A response's status and its decoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// `GET path` on the unix socket at `socket`, finished by `deadline`; at most `cap` bytes
/// of response (head and body) are read.
pub fn get(
    socket: &Path,
    path: &str,
    deadline: Instant,
    cap: usize,
) -> Result<Response, HttpError> {
    // A unix-socket connect does not wait on the server (the kernel queues it) unless
    // the listen backlog is full — a daemon stopped for thousands of connects; std has no
    // connect timeout for unix sockets, so that one case is not bounded here.
    let mut stream = UnixStream::connect(socket).map_err(|e| connect_error(socket, e))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: gpuwatch\r\n\
         Accept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream
        .set_write_timeout(Some(remaining(deadline)?))
        .map_err(HttpError::Io)?;
    stream.write_all(request.as_bytes()).map_err(io_error)?;
    read_response(&mut stream, deadline, cap)
}

/// Reads until the response is complete, the peer closes, the deadline passes or the cap
/// is reached. Each read's timeout is what is left of the deadline, so a server that
/// dribbles a byte at a time cannot stretch the bound.
fn read_response(
    stream: &mut UnixStream,
    deadline: Instant,
    cap: usize,
) -> Result<Response, HttpError> {
    let mut buf = Vec::with_capacity(8 * 1024);
    let mut chunk = [0u8; 8 * 1024];
    loop {
        stream
            .set_read_timeout(Some(remaining(deadline)?))
            .map_err(HttpError::Io)?;
        let n = stream.read(&mut chunk).map_err(io_error)?;
        if n == 0 {
            return complete(&buf, true)?.ok_or_else(|| truncated(&buf));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(done) = complete(&buf, false)? {
            return Ok(done);
        }
        if buf.len() > cap {
            return Err(HttpError::TooLarge(cap));
        }
    }
}

fn truncated(buf: &[u8]) -> HttpError {
    if buf.is_empty() {
        HttpError::Malformed("closed without answering".into())
    } else {
        HttpError::Malformed("closed mid-answer".into())
    }
}

/// The response in `buf` if it is complete; `None` while more is needed. A body with
/// neither a length nor chunks ends at the close: `closed` says the peer has closed.
fn complete(buf: &[u8], closed: bool) -> Result<Option<Response>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; 48];
    let mut head = httparse::Response::new(&mut headers);
    let head_len = match head.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(HttpError::Malformed(e.to_string())),
    };
    let status = head
        .code
        .ok_or_else(|| HttpError::Malformed("no status".into()))?;
    let header = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let rest = &buf[head_len..];
    let body = if header("transfer-encoding").is_some_and(|v| v.ends_with("chunked")) {
        match dechunk(rest)? {
            Some(body) => body,
            None => return Ok(None),
        }
    } else if let Some(length) = header("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| HttpError::Malformed(format!("Content-Length {length:?}")))?;
        match rest.get(..length) {
            Some(body) => body.to_vec(),
            None => return Ok(None),
        }
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        Vec::new()
    } else {
        // Delimited by the close: complete only once the peer has closed.
        if !closed {
            return Ok(None);
        }
        rest.to_vec()
    };
    Ok(Some(Response { status, body }))
}

/// Decodes a chunked body: `None` until the last (zero-size) chunk has arrived.
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, HttpError> {
    let mut body = Vec::new();
    loop {
        let (size_len, size) = match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete(found)) => found,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(HttpError::Malformed("bad chunk size".into())),
        };
        rest = &rest[size_len..];
        if size == 0 {
            // Trailers, if any, are not needed: the body is complete.
            return Ok(Some(body));
        }
        let size = usize::try_from(size).map_err(|_| HttpError::Malformed("chunk size".into()))?;
        let Some(data) = rest.get(..size) else {
            return Ok(None);
        };
        body.extend_from_slice(data);
        rest = &rest[size..];
        match rest.get(..2) {
            Some(b"\r\n") => rest = &rest[2..],
            Some(_) => return Err(HttpError::Malformed("chunk not followed by CRLF".into())),
            None => return Ok(None),
        }
    }
}

fn remaining(deadline: Instant) -> Result<std::time::Duration, HttpError> {
    // A zero timeout means "block forever" to the socket calls: never pass one.
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or(HttpError::TimedOut)
}

fn connect_error(socket: &Path, e: io::Error) -> HttpError {
    let at = socket.display().to_string();
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => HttpError::Missing(at),
        io::ErrorKind::PermissionDenied => HttpError::Denied(at),
        _ => HttpError::Io(e),
    }
}

fn io_error(e: io::Error) -> HttpError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HttpError::TimedOut,
        _ => HttpError::Io(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(raw: &[u8]) -> Response {
        complete(raw, false).unwrap().expect("complete")
    }

    #[test]
    fn content_length_bodies_are_complete_once_all_bytes_are_in() {
        let raw =
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(done(raw).body, b"{}");
        assert_eq!(done(raw).status, 200);
        assert!(complete(&raw[..raw.len() - 1], false).unwrap().is_none());
        assert!(
            complete(b"HTTP/1.1 200 OK\r\nContent-", false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        assert_eq!(done(raw).body, b"{\"a\":1}");
        // Not complete before the last chunk.
        let cut = raw.len() - 5;
        assert!(complete(&raw[..cut], false).unwrap().is_none());
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(matches!(complete(bad, false), Err(HttpError::Malformed(_))));
        let no_crlf = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc";
        assert!(matches!(
            complete(no_crlf, false),
            Err(HttpError::Malformed(_))
        ));
    }

    #[test]
    fn connect_failures_say_missing_or_denied() {
        use io::ErrorKind::*;
        let at = Path::new("/var/run/docker.sock");
        // Tests run as root, which no socket refuses: the mapping is checked here.
        assert!(matches!(
            connect_error(at, PermissionDenied.into()),
            HttpError::Denied(_)
        ));
        assert!(matches!(
            connect_error(at, NotFound.into()),
            HttpError::Missing(_)
        ));
        assert!(matches!(
            connect_error(at, ConnectionRefused.into()),
            HttpError::Missing(_)
        ));
        assert!(matches!(io_error(WouldBlock.into()), HttpError::TimedOut));
    }

    #[test]
    fn garbage_is_malformed_and_unframed_bodies_wait_for_the_close() {
        assert!(matches!(
            complete(b"SSH-2.0-OpenSSH_9.6\r\n\r\n", false),
            Err(HttpError::Malformed(_))
        ));
        assert!(matches!(
            complete(b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n", false),
            Err(HttpError::Malformed(_))
        ));
        let unframed = b"HTTP/1.1 200 OK\r\n\r\n{}";
        assert!(complete(unframed, false).unwrap().is_none());
        assert_eq!(complete(unframed, true).unwrap().unwrap().body, b"{}");
        // Framed but cut short by the close: never a complete answer.
        assert!(
            complete(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}", true)
                .unwrap()
                .is_none()
        );
        assert_eq!(done(b"HTTP/1.1 204 No Content\r\n\r\n").body, b"");
    }
}
