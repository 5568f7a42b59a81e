//! Issue 26 §7: slow clients must not lock out scrapes. The real binary, its descriptors cut
//! to 256 (setrlimit before exec, soft and hard, so it cannot raise them), real sockets on
//! 127.0.0.1: 400 half-open clients kept connected (reconnecting when hung up on), 64
//! keep-alive clients each sending one valid request every 8 s, 100 clients stalled in the
//! TLS handshake. Each time a real scrape must answer within 1 s.

use crate::serve_support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serve_support::tls::{https_with, tls_client, web_config};
use serve_support::{Exporter, gpuwatch, request_with};

/// What a scrape may take with the slow clients there.
const PROMPT: Duration = Duration::from_secs(1);

/// `gpuwatch --demo serve ARGS` whose open files are limited to 256 (soft and hard).
fn exporter_at_256(args: &[&str]) -> Exporter {
    raise_own_limit();
    let mut cmd = gpuwatch();
    cmd.arg("--demo");
    // SAFETY: setrlimit is async-signal-safe and the closure touches no other state.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    Exporter::start(cmd, args)
}

/// The test itself holds over 500 sockets.
fn raise_own_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Scrapes `/metrics` `times` times, a second apart, each within `PROMPT`.
fn scrapes_answer_promptly(times: usize, scrape: impl Fn() -> std::io::Result<String>) {
    let mut took = Vec::new();
    for _ in 0..times {
        let start = Instant::now();
        let body = scrape().unwrap_or_else(|e| panic!("a scrape failed: {e}; so far {took:?}"));
        took.push(start.elapsed());
        assert!(body.contains("gpuwatch_gpu_info{"), "{body:.200}");
        std::thread::sleep(Duration::from_secs(1));
    }
    eprintln!("scrapes took {took:?}");
    assert!(took.iter().all(|t| *t < PROMPT), "scrapes took {took:?}");
}

fn plain_scrape(addr: SocketAddr) -> std::io::Result<String> {
    request_with(addr, "GET", "/metrics", &[]).map(|r| r.body)
}

/// Whether the exporter has hung up on `s` (EOF or an error; nothing waiting is not).
fn hung_up(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    s.set_nonblocking(true).unwrap();
    let gone = match s.read(&mut buf) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    s.set_nonblocking(false).unwrap();
    gone
}

/// A client that connects and then sends `opening` (perhaps nothing) and never more.
fn half_open(addr: SocketAddr, opening: &[u8]) -> Option<TcpStream> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.write_all(opening).ok()?;
    Some(s)
}

/// Keeps `n` half-open clients connected until `stop`: the even ones send nothing, the odd
/// ones half a request head; whoever is hung up on connects again.
fn keep_half_open(addr: SocketAddr, n: usize, stop: Arc<AtomicBool>) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        let opening = |i: usize| -> &'static [u8] {
            if i.is_multiple_of(2) {
                b""
            } else {
                b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
            }
        };
        let mut clients: Vec<Option<TcpStream>> =
            (0..n).map(|i| half_open(addr, opening(i))).collect();
        let mut reconnects = 0;
        while !stop.load(Ordering::Relaxed) {
            for (i, c) in clients.iter_mut().enumerate() {
                if c.as_mut().is_none_or(hung_up) {
                    *c = half_open(addr, opening(i));
                    reconnects += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        reconnects
    })
}

#[test]
fn four_hundred_half_open_clients_at_256_descriptors_do_not_stop_a_scrape() {
    // No connection cap of our own: the descriptors are the limit.
    let e = exporter_at_256(&["--max-connections", "100000"]);
    e.wait_ready();
    let stop = Arc::new(AtomicBool::new(false));
    let attack = keep_half_open(e.addr, 400, Arc::clone(&stop));
    std::thread::sleep(Duration::from_secs(2));
    scrapes_answer_promptly(5, || plain_scrape(e.addr));
    stop.store(true, Ordering::Relaxed);
    let reconnects = attack.join().unwrap();
    eprintln!("half-open clients reconnected {reconnects} times");
    // It kept its headroom: never out of descriptors, so it still serves and says nothing.
    assert!(
        !e.stderr().contains("Too many open files"),
        "{}",
        e.stderr()
    );
}

/// `GET /-/ready` with keep-alive on `s`, reading exactly the answer.
fn keep_alive_request(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(b"GET /-/ready HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            if body.len() >= length {
                return if head.starts_with("HTTP/1.1 200") {
                    Ok(())
                } else {
                    Err(std::io::Error::other(head.to_string()))
                };
            }
        }
    }
}

/// One keep-alive client: a request every 8 s on the same connection until `stop`,
/// connecting again when the exporter closed it. Returns how often it had to.
fn keep_alive_client(addr: SocketAddr, stop: Arc<AtomicBool>) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        let connect = || {
            let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            Some(s)
        };
        let mut conn = connect();
        let mut reconnects = 0;
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if Instant::now() >= next {
                let ok = conn.as_mut().is_some_and(|s| keep_alive_request(s).is_ok());
                if !ok {
                    reconnects += 1;
                    conn = connect();
                    if let Some(s) = conn.as_mut() {
                        let _ = keep_alive_request(s);
                    }
                }
                next = Instant::now() + Duration::from_secs(8);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        reconnects
    })
}

#[test]
fn sixty_four_idle_keep_alive_clients_do_not_stop_a_scrape() {
    // The default cap (64 connections): the keep-alive clients alone fill it.
    let e = exporter_at_256(&[]);
    e.wait_ready();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..64)
        .map(|_| keep_alive_client(e.addr, Arc::clone(&stop)))
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    scrapes_answer_promptly(4, || plain_scrape(e.addr));
    stop.store(true, Ordering::Relaxed);
    let reconnects: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    eprintln!("keep-alive clients reconnected {reconnects} times");
}

#[test]
fn a_hundred_stalled_tls_handshakes_do_not_stop_a_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let config = web_config(dir.path(), "");
    let e = exporter_at_256(&["--web.config.file", config.to_str().unwrap()]);
    let client = tls_client();
    serve_support::wait_until("the exporter to be ready", Duration::from_secs(20), || {
        https_with(Arc::clone(&client), e.addr, "/-/ready", None)
            .ok()
            .filter(|r| r.status == 200)
    });
    // Half of them send nothing, half the first bytes of a ClientHello (a TLS record header
    // promising 512 bytes that never come).
    let stalled: Vec<_> = (0..100)
        .filter_map(|i| {
            let opening: &[u8] = if i % 2 == 0 {
                b""
            } else {
                &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]
            };
            half_open(e.addr, opening)
        })
        .collect();
    assert_eq!(stalled.len(), 100);
    std::thread::sleep(Duration::from_millis(500));
    scrapes_answer_promptly(3, || {
        https_with(Arc::clone(&client), e.addr, "/metrics", None).map(|r| r.body)
    });
    drop(stalled);
}
