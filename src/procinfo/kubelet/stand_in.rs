//! The whole call against a stand-in kubelet: an h2 server on a unix socket in a temp dir,
//! on its own thread, answering one connection the way it is told — a node's pods, a
//! refusal, silence, garbage, too much. No kubelet, no sleeping: every wait is bounded by
//! the call's own timeout, and the server gives up by itself after a few seconds.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use super::tests::{Msg, node_pods, node_response};
use super::{KubeletError, MAX_RESPONSE, grpc, list_gpu_pods, list_gpu_pods_async};

/// How the stand-in answers its one connection.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// An HTTP/2 response: its content type, DATA (sent as given: the gRPC prefix is the
    /// test's to get right or wrong) and `grpc-status` trailer (none when `None`).
    Http2 {
        content_type: &'static str,
        data: Vec<u8>,
        status: Option<&'static str>,
    },
    /// A "trailers-only" refusal: the status in the headers, no body.
    Refuse(&'static str),
    /// Response headers, then nothing more.
    HeadersOnly,
    /// Accepts the socket and says nothing, not even the HTTP/2 preface.
    Silence,
    /// Bytes that are not HTTP/2.
    Raw(&'static [u8]),
}

/// What the client sent, for asserting the request's shape.
#[derive(Debug)]
struct Seen {
    method: String,
    path: String,
    content_type: Option<String>,
    te: Option<String>,
    body: Vec<u8>,
}

/// The server gives up on a client after this: no test can hang on it.
const SERVER_LIFE: Duration = Duration::from_secs(5);

/// A running stand-in; its socket lives as long as this does.
pub(crate) struct StandIn {
    _dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    seen: mpsc::Receiver<Seen>,
}

pub(crate) fn serve(answer: Answer) -> StandIn {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("kubelet.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let (tx, seen) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = UnixListener::from_std(listener).expect("listener");
            let one = async {
                let (io, _) = listener.accept().await.ok()?;
                answer_one(io, answer, tx).await
            };
            let _ = tokio::time::timeout(SERVER_LIFE, one).await;
        });
    });
    StandIn {
        _dir: dir,
        socket,
        seen,
    }
}

/// `message` with its gRPC prefix.
fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend((message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

pub(crate) fn grpc_ok(message: &[u8]) -> Answer {
    Answer::Http2 {
        content_type: "application/grpc",
        data: framed(message),
        status: Some("0"),
    }
}

async fn answer_one(mut io: UnixStream, answer: Answer, seen: mpsc::Sender<Seen>) -> Option<()> {
    let raw = match answer {
        Answer::Silence => Some(&b""[..]),
        Answer::Raw(bytes) => Some(bytes),
        _ => None,
    };
    if let Some(bytes) = raw {
        io.write_all(bytes).await.ok()?;
        // Read (and ignore) until the client hangs up.
        let mut sink = [0u8; 1024];
        while io.read(&mut sink).await.ok()? > 0 {}
        return Some(());
    }
    let mut conn = h2::server::handshake(io).await.ok()?;
    let (request, respond) = conn.accept().await?.ok()?;
    let handler = tokio::spawn(respond_to(request, respond, answer, seen));
    // The connection must be polled for the handler's frames to go out; it ends when the
    // client hangs up.
    while let Some(Ok(_)) = conn.accept().await {}
    handler.await.ok()?
}

async fn respond_to(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    answer: Answer,
    seen: mpsc::Sender<Seen>,
) -> Option<()> {
    let header = |name: &str| {
        let value = request.headers().get(name)?.to_str().ok()?;
        Some(value.to_string())
    };
    let mut record = Seen {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        content_type: header("content-type"),
        te: header("te"),
        body: Vec::new(),
    };
    let mut body = request.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        record.body.extend_from_slice(&chunk);
    }
    let _ = seen.send(record);
    let response = |content_type: &str| {
        Response::builder()
            .header("content-type", content_type)
            .body(())
            .ok()
    };
    match answer {
        Answer::Http2 {
            content_type,
            data,
            status,
        } => {
            let mut stream = respond.send_response(response(content_type)?, false).ok()?;
            stream.send_data(Bytes::from(data), false).ok()?;
            let mut trailers = HeaderMap::new();
            if let Some(status) = status {
                trailers.insert("grpc-status", HeaderValue::from_static(status));
                trailers.insert("grpc-message", HeaderValue::from_static("rate%20limited"));
            }
            stream.send_trailers(trailers).ok()?;
        }
        Answer::Refuse(status) => {
            let mut headers = response("application/grpc")?;
            headers
                .headers_mut()
                .insert("grpc-status", HeaderValue::from_static(status));
            respond.send_response(headers, true).ok()?;
        }
        Answer::HeadersOnly => {
            let mut stream = respond
                .send_response(response("application/grpc")?, false)
                .ok()?;
            // Hold the stream open until the client gives up on it.
            let _ = std::future::poll_fn(|cx| stream.poll_reset(cx)).await;
        }
        Answer::Silence | Answer::Raw(_) => unreachable!("answered without HTTP/2"),
    }
    Some(())
}

const TIMEOUT: Duration = Duration::from_millis(200);

fn list(stand_in: &StandIn) -> Result<Vec<super::PodGpus>, KubeletError> {
    list_gpu_pods(&stand_in.socket, TIMEOUT)
}

#[test]
fn a_nodes_pods_come_back_for_one_well_formed_request() {
    let kubelet = serve(grpc_ok(&node_response()));
    assert_eq!(list(&kubelet).expect("answers"), node_pods());
    let seen = kubelet.seen.recv_timeout(SERVER_LIFE).expect("a request");
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/v1.PodResourcesLister/List");
    assert_eq!(seen.content_type.as_deref(), Some("application/grpc"));
    assert_eq!(seen.te.as_deref(), Some("trailers"));
    assert_eq!(seen.body, [0, 0, 0, 0, 0], "an empty request, uncompressed");
}

/// The two ways a worker on the app's runtime would call it.
#[tokio::test]
async fn it_answers_from_spawn_blocking_and_awaited_on_a_runtime() {
    let kubelet = serve(grpc_ok(&node_response()));
    let socket = kubelet.socket.clone();
    let blocking = tokio::task::spawn_blocking(move || list_gpu_pods(&socket, TIMEOUT));
    assert_eq!(
        blocking.await.expect("joined").expect("answers"),
        node_pods()
    );
    let kubelet = serve(grpc_ok(&node_response()));
    let pods = list_gpu_pods_async(&kubelet.socket, TIMEOUT).await;
    assert_eq!(pods.expect("answers"), node_pods());
}

#[test]
fn a_missing_socket_says_where_it_looked_and_what_to_mount() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("kubelet.sock");
    let err = list_gpu_pods(&socket, TIMEOUT).unwrap_err();
    assert!(matches!(err, KubeletError::NoSocket { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&*socket.to_string_lossy()), "{text}");
    assert!(text.contains("mount"), "{text}");
}

#[test]
fn a_socket_nobody_listens_on_asks_whether_the_kubelet_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("kubelet.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
    let err = list_gpu_pods(&socket, TIMEOUT).unwrap_err();
    assert!(matches!(err, KubeletError::NotListening { .. }), "{err}");
}

/// The call gives up at its timeout, whatever stage the server stalls at.
fn assert_times_out(answer: Answer) {
    let kubelet = serve(answer);
    let start = Instant::now();
    let err = list(&kubelet).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, KubeletError::TimedOut { .. }), "{err}");
    assert!(err.to_string().contains("200 ms"), "{err}");
    assert!(took >= TIMEOUT, "gave up early, after {took:?}");
    // Generous for a loaded 2-core CI machine; an unbounded wait would take SERVER_LIFE.
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[test]
fn a_server_that_never_speaks_times_out_within_the_bound() {
    assert_times_out(Answer::Silence);
}

#[test]
fn a_server_that_stalls_after_the_headers_times_out_within_the_bound() {
    assert_times_out(Answer::HeadersOnly);
}

#[test]
fn garbage_instead_of_http2_is_a_protocol_error() {
    let kubelet = serve(Answer::Raw(b"HTTP/1.1 400 Bad Request\r\n\r\nnot here\n"));
    let err = list(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::Protocol { .. }), "{err}");
}

#[test]
fn garbage_instead_of_protobuf_is_malformed() {
    let kubelet = serve(grpc_ok(&[0xff; 11]));
    let err = list(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::Malformed { .. }), "{err}");
}

#[test]
fn an_answer_that_is_not_grpc_says_what_it_was() {
    let kubelet = serve(Answer::Http2 {
        content_type: "text/html",
        data: b"<html>".to_vec(),
        status: None,
    });
    let err = list(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::NotGrpc { .. }), "{err}");
    assert!(err.to_string().contains("text/html"), "{err}");
    let kubelet = serve(Answer::Http2 {
        content_type: "application/grpc",
        data: framed(&node_response()),
        status: None,
    });
    let err = list(&kubelet).unwrap_err();
    assert!(err.to_string().contains("no grpc-status"), "{err}");
}

#[test]
fn a_refusal_in_the_trailers_is_reported_with_its_status() {
    let kubelet = serve(Answer::Http2 {
        content_type: "application/grpc",
        data: Vec::new(),
        status: Some("8"),
    });
    let err = list(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::Status { code: 8, .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("RESOURCE_EXHAUSTED"), "{text}");
    assert!(
        text.contains("rate limited"),
        "decoded grpc-message: {text}"
    );
}

#[test]
fn a_trailers_only_refusal_is_reported_with_its_status() {
    let kubelet = serve(Answer::Refuse("12"));
    let err = list(&kubelet).unwrap_err();
    assert!(
        matches!(err, KubeletError::Status { code: 12, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("UNIMPLEMENTED"), "{err}");
    // "OK" with no message is no answer either.
    let kubelet = serve(Answer::Refuse("0"));
    let err = list(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::NotGrpc { .. }), "{err}");
}

/// A message of exactly `len` bytes that decodes to no pods: one unknown field.
fn filler(len: usize) -> Vec<u8> {
    // Key (1 byte) and the length's varint (7 bits a byte), which counts in `len` too.
    let varint = |n: usize| (usize::BITS - n.leading_zeros()).div_ceil(7).max(1) as usize;
    let mut payload = len - 1 - varint(len);
    if 1 + varint(payload) + payload != len {
        payload += 1;
    }
    Msg::default().bytes(9, &vec![0; payload]).0
}

#[test]
fn an_answer_at_the_cap_is_read_and_one_over_it_is_refused() {
    assert_eq!(filler(MAX_RESPONSE).len(), MAX_RESPONSE);
    // 16 MiB through a socket can take longer than a real call's budget on a loaded
    // machine: the cap is under test here, not the clock.
    let slow = |k: &StandIn| list_gpu_pods(&k.socket, Duration::from_secs(30));
    let kubelet = serve(grpc_ok(&filler(MAX_RESPONSE)));
    assert_eq!(slow(&kubelet).expect("at the cap"), vec![]);
    let kubelet = serve(grpc_ok(&filler(MAX_RESPONSE + 1)));
    let err = slow(&kubelet).unwrap_err();
    assert!(matches!(err, KubeletError::TooLarge { .. }), "{err}");
}

/// Bytes beyond the cap are refused even when the prefix understates them.
#[tokio::test]
async fn a_prefix_that_understates_the_data_does_not_lift_the_cap() {
    let mut data = vec![0, 0, 0, 0, 10];
    data.extend([0u8; 4096]);
    let kubelet = serve(Answer::Http2 {
        content_type: "application/grpc",
        data,
        status: Some("0"),
    });
    let call = tokio::time::timeout(SERVER_LIFE, grpc::list(&kubelet.socket, 1024));
    let err = call.await.expect("in time").unwrap_err();
    assert!(
        matches!(err, KubeletError::TooLarge { limit: 1024, .. }),
        "{err}"
    );
}
