//! One unary gRPC call, `v1.PodResourcesLister/List`, over the kubelet's unix socket: connect,
//! HTTP/2 handshake, the request, then the response's headers, one length-prefixed message
//! and the `grpc-status` trailer. Returns the message's protobuf bytes; decoding them is
//! `proto`'s job, and the overall time bound is the caller's (`super::list_gpu_pods_async`).
//!
//! Transport: the `h2` crate, used directly. gRPC is HTTP/2 plus a 5-byte prefix per
//! message and a status trailer; HTTP/2 itself (HPACK, flow control, SETTINGS) is what no one
//! should write by hand, and h2 is the implementation hyper and tonic are built on, on the
//! tokio we already run. Not tonic: it would bring tower, prost, hyper's HTTP/2 client and
//! a code generator for one call with an empty request. Not hyper's client either: it adds
//! nothing over h2 for a single stream but pools and executors.

use std::path::Path;

use bytes::Bytes;
use h2::RecvStream;
use http::{HeaderMap, Request, Response, StatusCode};
use tokio::net::UnixStream;

use super::KubeletError;

/// The method's path; the authority is ignored on a unix socket but HTTP/2 requires one.
const URI: &str = "http://localhost/v1.PodResourcesLister/List";

/// `ListPodResourcesRequest{}` as one uncompressed gRPC message: flag 0, length 0.
const EMPTY_REQUEST: &[u8] = &[0, 0, 0, 0, 0];

/// The gRPC message prefix: a compressed flag and a big-endian u32 length.
const PREFIX: usize = 5;

/// A kubelet's headers are a handful of short lines; more than this is not a kubelet.
const MAX_HEADER_LIST: u32 = 16 * 1024;

/// Calls `List` on the socket and returns the response message (without its gRPC prefix),
/// refusing one longer than `limit` bytes. Unbounded in time: the caller wraps it.
pub async fn list(socket: &Path, limit: usize) -> Result<Vec<u8>, KubeletError> {
    let io = UnixStream::connect(socket)
        .await
        .map_err(|e| KubeletError::connect(socket, e))?;
    let protocol = |source| KubeletError::Protocol {
        socket: socket.to_path_buf(),
        source,
    };
    let (client, connection) = h2::client::Builder::new()
        .enable_push(false)
        .max_header_list_size(MAX_HEADER_LIST)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(protocol)?;
    let call = call(client, socket, limit);
    tokio::pin!(call);
    // The connection must be polled for the call to progress. Driving both here, rather
    // than spawning the connection, means nothing outlives this future: dropped at the
    // timeout, the socket closes with it.
    tokio::select! {
        result = &mut call => result,
        ended = connection => match ended {
            Err(source) => Err(protocol(source)),
            // A clean close (GOAWAY) before the answer: the call reports what it saw.
            Ok(()) => call.await,
        },
    }
}

async fn call(
    client: h2::client::SendRequest<Bytes>,
    socket: &Path,
    limit: usize,
) -> Result<Vec<u8>, KubeletError> {
    let protocol = |source| KubeletError::Protocol {
        socket: socket.to_path_buf(),
        source,
    };
    let request = Request::post(URI)
        .header("content-type", "application/grpc")
        // gRPC requires it: it tells proxies we accept trailers, where the status comes.
        .header("te", "trailers")
        .body(())
        .expect("a constant URI and header values are valid");
    let mut client = client.ready().await.map_err(protocol)?;
    let (response, mut body) = client.send_request(request, false).map_err(protocol)?;
    body.send_data(Bytes::from_static(EMPTY_REQUEST), true)
        .map_err(protocol)?;
    let response = response.await.map_err(protocol)?;
    let not_grpc = |detail: String| KubeletError::NotGrpc {
        socket: socket.to_path_buf(),
        detail,
    };
    check_headers(&response).map_err(not_grpc)?;
    // A "trailers-only" answer (how gRPC reports most errors) puts the status in the headers
    // and ends there.
    let trailers_only = match grpc_status(response.headers(), socket) {
        Some(status) => status.map(|()| true)?,
        None => false,
    };
    let mut stream = response.into_body();
    let message = read_body(&mut stream, socket, limit).await?;
    if !trailers_only {
        let trailers = stream.trailers().await.map_err(protocol)?;
        match trailers.as_ref().and_then(|t| grpc_status(t, socket)) {
            Some(status) => status?,
            None => return Err(not_grpc("the answer has no grpc-status trailer".into())),
        }
    }
    unframe(message, limit).map_err(not_grpc)
}

/// HTTP 200 with a gRPC content type, or a sentence saying what came instead.
fn check_headers(response: &Response<RecvStream>) -> Result<(), String> {
    if response.status() != StatusCode::OK {
        return Err(format!("HTTP status {}", response.status()));
    }
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if kind == "application/grpc" || kind.starts_with("application/grpc+") {
        Ok(())
    } else {
        Err(format!("content type {kind:?}"))
    }
}

/// The `grpc-status` of a header block: `Ok` for 0, the refusal otherwise; `None` if absent.
fn grpc_status(headers: &HeaderMap, socket: &Path) -> Option<Result<(), KubeletError>> {
    let code = headers.get("grpc-status")?;
    let code = code.to_str().ok().and_then(|c| c.parse::<u32>().ok());
    Some(match code {
        Some(0) => Ok(()),
        other => Err(KubeletError::Status {
            socket: socket.to_path_buf(),
            // An unreadable status is no success: report it as UNKNOWN, as gRPC does.
            code: other.unwrap_or(2),
            message: headers
                .get("grpc-message")
                .map(|m| percent_decode(m.as_bytes()))
                .unwrap_or_default(),
        }),
    })
}

/// The DATA frames, released to the server as they are read so a large answer is not
/// stalled by flow control, and stopped as soon as the prefix or the bytes read say the
/// message is over `limit`: memory is bounded by `limit`, never by what the server sends.
async fn read_body(
    stream: &mut RecvStream,
    socket: &Path,
    limit: usize,
) -> Result<Vec<u8>, KubeletError> {
    let too_large = || KubeletError::TooLarge {
        socket: socket.to_path_buf(),
        limit,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut reserved = false;
    while let Some(chunk) = stream.data().await {
        let chunk = chunk.map_err(|source| KubeletError::Protocol {
            socket: socket.to_path_buf(),
            source,
        })?;
        // Releasing can only fail once the stream is gone, which the next read reports.
        let _ = stream.flow_control().release_capacity(chunk.len());
        if buf.len() + chunk.len() > limit + PREFIX {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
        match declared_len(&buf) {
            Some(len) if len > limit => return Err(too_large()),
            // Once, at the exact size: doubling as chunks come would peak at twice it.
            Some(len) if !reserved => {
                buf.reserve_exact((len + PREFIX).saturating_sub(buf.len()));
                reserved = true;
            }
            _ => {}
        }
    }
    Ok(buf)
}

/// The length a gRPC prefix announces, once the 5 bytes are in.
fn declared_len(buf: &[u8]) -> Option<usize> {
    let len: [u8; 4] = buf.get(1..PREFIX)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(len)).ok()
}

/// The one message of a unary answer, without its prefix.
fn unframe(mut body: Vec<u8>, limit: usize) -> Result<Vec<u8>, String> {
    let Some(len) = declared_len(&body) else {
        return Err(format!("{} body bytes, not a gRPC message", body.len()));
    };
    if body[0] != 0 {
        // We send no grpc-accept-encoding, so a server must not compress.
        return Err("the message is compressed, though none was accepted".into());
    }
    if len > limit || body.len() - PREFIX != len {
        return Err(format!(
            "the message says {len} bytes but {} followed",
            body.len() - PREFIX
        ));
    }
    body.drain(..PREFIX);
    Ok(body)
}

/// `grpc-message` is percent-encoded UTF-8; decoded leniently (a bad escape stays as it is)
/// and cut to a line, since it ends up in one.
fn percent_decode(raw: &[u8]) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let escape = (raw[i] == b'%')
            .then(|| Some(hex(*raw.get(i + 1)?)? << 4 | hex(*raw.get(i + 2)?)?))
            .flatten();
        match escape {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(raw[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_messages_are_percent_decoded_leniently() {
        assert_eq!(percent_decode(b"no%20such%20pod"), "no such pod");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(percent_decode(b"%zz%4"), "%zz%4");
        assert_eq!(percent_decode(b"caf%C3%A9"), "café");
        assert_eq!(percent_decode(&[b'x'; 500]).len(), 200);
    }

    #[test]
    fn unframe_takes_exactly_one_uncompressed_message() {
        assert_eq!(unframe(vec![0, 0, 0, 0, 2, 7, 8], 10), Ok(vec![7, 8]));
        assert_eq!(unframe(vec![0, 0, 0, 0, 0], 10), Ok(vec![]));
        assert!(unframe(vec![], 10).is_err(), "an empty body is no message");
        assert!(unframe(vec![0, 0, 0], 10).is_err(), "a cut prefix");
        assert!(unframe(vec![1, 0, 0, 0, 1, 7], 10).is_err(), "compressed");
        assert!(unframe(vec![0, 0, 0, 0, 2, 7], 10).is_err(), "short");
        assert!(unframe(vec![0, 0, 0, 0, 1, 7, 0, 0], 10).is_err(), "two");
    }
}
