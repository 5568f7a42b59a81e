//! The client against one-shot stand-ins on 127.0.0.1 and unix sockets: framing (length,
//! chunked, up to the close), the body cap, the deadline, redirects left alone, URLs.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};

use super::*;

const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(5),
    max_body: 1024,
};

/// Reads one request head from `stream`, answers `answer` (if any), and returns the head.
async fn answer_once<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    answer: Option<&'static [u8]>,
) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
        head.push(byte[0]);
    }
    match answer {
        Some(a) => {
            stream.write_all(a).await.unwrap();
            stream.shutdown().await.ok();
        }
        // A server that never answers: hold the socket until the client gives up.
        None => while stream.read(&mut byte).await.unwrap_or(0) == 1 {},
    }
    String::from_utf8_lossy(&head).into_owned()
}

async fn tcp_stand_in(answer: Option<&'static [u8]>) -> (String, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        answer_once(stream, answer).await
    });
    (address, task)
}

#[tokio::test]
async fn chunked_and_close_delimited_bodies_are_read_whole() {
    let chunked: &[u8] =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
    let (address, task) = tcp_stand_in(Some(chunked)).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let response = send(&endpoint, Request::get("/x?q=1"), LIMITS)
        .await
        .unwrap();
    assert_eq!(&response.body[..], b"{\"a\":1}");
    let head = task.await.unwrap();
    assert!(head.starts_with("GET /x?q=1 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("host: {address}")),
        "{head}"
    );

    let unframed: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}";
    let (address, _task) = tcp_stand_in(Some(unframed)).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let response = send(&endpoint, Request::get("/"), LIMITS).await.unwrap();
    assert_eq!(&response.body[..], b"{}");
}

#[tokio::test]
async fn bodies_over_the_cap_are_refused_announced_or_not() {
    let announced: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n{}";
    let (address, _task) = tcp_stand_in(Some(announced)).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let err = send(&endpoint, Request::get("/"), LIMITS)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge(1024)), "{err}");

    static LONG: std::sync::LazyLock<Vec<u8>> = std::sync::LazyLock::new(|| {
        let mut a = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_vec();
        a.extend(std::iter::repeat_n(b'x', 4096));
        a
    });
    let (address, _task) = tcp_stand_in(Some(&LONG)).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let err = send(&endpoint, Request::get("/"), LIMITS)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge(1024)), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_is_cut_off_at_the_deadline() {
    let (address, _task) = tcp_stand_in(None).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let err = send(&endpoint, Request::get("/"), LIMITS)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TimedOut(_)), "{err}");
}

#[tokio::test]
async fn redirects_are_answers_not_followed() {
    let moved: &[u8] =
        b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\tx\r\nContent-Length: 0\r\n\r\n";
    let (address, _task) = tcp_stand_in(Some(moved)).await;
    let endpoint = Endpoint::plain(&address).unwrap();
    let response = send(&endpoint, Request::get("/"), LIMITS).await.unwrap();
    assert_eq!(
        response.redirect_not_followed(),
        "HTTP 302 redirect to http://elsewhere/x not followed"
    );
}

#[tokio::test]
async fn unix_sockets_speak_the_same_http() {
    let dir = std::env::temp_dir().join(format!("gpuwatch-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("api.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).unwrap();
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        answer_once(
            stream,
            Some(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"),
        )
        .await
    });
    let response = send(
        &Endpoint::unix(&socket),
        Request::get("/containers/ab/json"),
        LIMITS,
    )
    .await
    .unwrap();
    assert_eq!(response.status, StatusCode::NOT_FOUND);
    let head = task.await.unwrap().to_ascii_lowercase();
    assert!(head.contains("host: localhost"), "{head}");
    std::fs::remove_file(&socket).unwrap();
    let err = send(&Endpoint::unix(&socket), Request::get("/"), LIMITS)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Connect(e) if e.kind() == std::io::ErrorKind::NotFound),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn urls_give_the_path_the_port_and_basic_auth() {
    let no_tls = || Err::<std::sync::Arc<_>, _>("no TLS here".to_string());
    let e = Endpoint::url("http://bob:pw@10.0.0.1:8080/hooks/x?token=1", no_tls).unwrap();
    let request = e.request(Request::post("", "{}")).unwrap();
    assert_eq!(request.uri(), "/hooks/x?token=1");
    assert_eq!(request.headers()["host"], "10.0.0.1:8080");
    assert_eq!(request.headers()["authorization"], basic_auth("bob", "pw"));
    // A prefix (a Prometheus behind a proxy) comes before each path.
    let e = Endpoint::url("http://prom/prefix/", no_tls).unwrap();
    let request = e.request(Request::get("/api/v1/query")).unwrap();
    assert_eq!(request.uri(), "/prefix/api/v1/query");
    assert_eq!(format!("{e:?}"), "Endpoint(http://prom)");
    // https asks for its TLS config, and only https does.
    assert_eq!(
        Endpoint::url("https://prom:9090", no_tls).unwrap_err(),
        "no TLS here"
    );
    assert!(Endpoint::url("ftp://prom", no_tls).is_err());
    assert!(Endpoint::url("[::1]:80", no_tls).is_err());
    assert_eq!(
        basic_auth("Aladdin", "open sesame"),
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    );
}
