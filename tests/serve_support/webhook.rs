//! A webhook receiver on 127.0.0.1 for the alert tests (tests/it/alerts.rs, tests/it/health.rs,
//! tests/it/https_clients.rs): every request's path and JSON body go to a channel; it answers
//! 200 or holds the connection open, over plain HTTP or TLS. Only loopback; every wait is
//! bounded by the caller's timeout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::Value;
use tokio_rustls::rustls;

/// What the receiver does with a request.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    Ok,
    /// Reads the request and never answers (the connection stays open).
    Hang,
}

/// A webhook receiver on 127.0.0.1: every request's path and JSON body go to `bodies`.
pub struct Receiver {
    pub addr: SocketAddr,
    bodies: mpsc::Receiver<(String, Value)>,
}

impl Receiver {
    pub fn start(answer: Answer) -> Receiver {
        Self::start_with(answer, None)
    }

    /// The same over TLS with `tls`'s certificate (an https webhook, as Slack's and Discord's
    /// are). A client whose handshake fails sends nothing to the channel.
    pub fn start_tls(answer: Answer, tls: Arc<rustls::ServerConfig>) -> Receiver {
        Self::start_with(answer, Some(tls))
    }

    fn start_with(answer: Answer, tls: Option<Arc<rustls::ServerConfig>>) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, bodies) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let tx = tx.clone();
                let tls = tls.clone();
                std::thread::spawn(move || match tls {
                    None => serve_one(stream, answer, &tx),
                    Some(config) => {
                        let conn = rustls::ServerConnection::new(config).unwrap();
                        serve_one(rustls::StreamOwned::new(conn, stream), answer, &tx);
                    }
                });
            }
        });
        Receiver { addr, bodies }
    }

    /// The next message, within `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<(String, Value)> {
        self.bodies.recv_timeout(timeout).ok()
    }
}

fn serve_one<S: Read + Write>(stream: S, answer: Answer, tx: &mpsc::Sender<(String, Value)>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    // A failed TLS handshake surfaces here, as an error reading the request line.
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let _ = tx.send((path, serde_json::from_slice(&body).unwrap()));
    match answer {
        Answer::Ok => {
            let stream = reader.get_mut();
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            let _ = stream.flush();
        }
        // Hold the connection well past the sink's timeout.
        Answer::Hang => std::thread::sleep(Duration::from_secs(120)),
    }
}
