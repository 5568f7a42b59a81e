//! The exporter's accept loop, written out (not `axum::serve`) because a server on the network
//! must bound what a client can hold. It keeps accepting: every new client gets a place in
//! the connection table (`slots`), and when the table is full the connection that has waited
//! longest without being answered (idle keep-alive, a half-sent head, a stalled TLS
//! handshake) is closed for it, so slow clients cannot queue a scrape behind their timeouts.
//! A client that sends nothing at all, or does not finish its TLS handshake, has a short time
//! (`QUIET`); every request's headers must come within `header_timeout` (hyper's timer, which
//! also runs while a keep-alive connection waits for its next request); a connection on which
//! no byte moves for `idle_timeout` is closed. Then TLS when the web config asks, basic auth
//! before any route but the probe pages, and the axum router. Knows nothing of GPUs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_io_timeout::TimeoutStream;
use tower::ServiceExt;

use crate::config::ConnectionLimits;

use super::auth::Users;
use super::http::PROBES;
use super::slots::{Slot, Table, Tracked};
use super::stats::Stats;
use super::tls::Tls;
use super::webconfig::WebConfig;

/// After a failed accept (out of descriptors, say), before trying again, so the loop does not
/// spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// While every connection the descriptors allow is being answered, how often to look again.
const FULL_POLL: Duration = Duration::from_millis(10);

/// What a client that has sent nothing yet, or has not finished its TLS handshake, is given
/// (at most `header_timeout`): Prometheus sends its request, or its ClientHello, at once.
const QUIET: Duration = Duration::from_secs(3);

/// The kernel's queue of connections not yet accepted. std binds with 128, which a burst of
/// clients fills while the loop makes room; 1,024 is what Go's net/http gets on most Linux.
const BACKLOG: libc::c_int = 1024;

/// Everything one connection needs, shared by all of them.
struct Conn {
    router: Router,
    tls: Option<Arc<Tls>>,
    users: Option<Users>,
    limits: ConnectionLimits,
    stats: Arc<Stats>,
    stop: watch::Receiver<bool>,
}

impl Conn {
    /// For a client that has sent nothing, and for the TLS handshake.
    fn quiet(&self) -> Duration {
        QUIET.min(self.limits.header_timeout)
    }
}

/// While shutting down, how often to look whether the last connection has finished.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// Serves until `stop` turns true; then each open connection finishes the request it is
/// serving and closes, and this returns once none is left (the caller bounds the wait).
pub async fn run(
    listeners: Vec<TcpListener>,
    router: Router,
    web: WebConfig,
    limits: ConnectionLimits,
    stats: Arc<Stats>,
    stop: watch::Receiver<bool>,
) {
    let conn = Arc::new(Conn {
        router,
        tls: web.tls,
        users: web.users,
        limits,
        stats,
        stop: stop.clone(),
    });
    // One table for every address: the descriptors are the process's.
    let table = Table::new(limits.max_connections, crate::fd_limit::soft());
    let loops: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            tokio::spawn(accept(
                l,
                Arc::clone(&conn),
                Arc::clone(&table),
                stop.clone(),
            ))
        })
        .collect();
    for each in loops {
        let _ = each.await;
    }
    while conn.stats.open_connections.load(Ordering::Relaxed) > 0 {
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

/// Accepts until `stop` turns true, making room in the table for each new client.
async fn accept(
    listener: TcpListener,
    conn: Arc<Conn>,
    table: Arc<Table>,
    stop: watch::Receiver<bool>,
) {
    loop {
        // Only when every connection the descriptors allow is being answered: they finish
        // in milliseconds, and meanwhile new clients wait in the accept queue.
        while !table.has_room() {
            tokio::select! {
                () = tokio::time::sleep(FULL_POLL) => {}
                () = super::wait_for(stop.clone()) => return,
            }
        }
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = super::wait_for(stop.clone()) => return,
        };
        match accepted {
            Ok((stream, _)) => {
                let (slot, evicted) = table.admit();
                // Counted before the task runs, so a shutdown right now still waits for it.
                let open = Open::new(&conn.stats);
                tokio::spawn(serve_connection(Arc::clone(&conn), stream, (slot, open)));
                if evicted {
                    // Lets the evicted connection close before the next accept needs its
                    // descriptor.
                    tokio::task::yield_now().await;
                }
            }
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// Counts the connection as open for as long as it lives.
struct Open(Arc<Stats>);

impl Open {
    fn new(stats: &Arc<Stats>) -> Self {
        stats.open_connections.fetch_add(1, Ordering::Relaxed);
        Open(Arc::clone(stats))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection, holding its place in the table and in the open count until it ends: when
/// the client leaves, a timeout ends it, or the table evicts it for a newer client.
async fn serve_connection(conn: Arc<Conn>, stream: TcpStream, held: (Slot, Open)) {
    let track = Arc::clone(&held.0.track);
    let quiet = async {
        tokio::time::sleep(conn.quiet()).await;
        if track.heard() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = exchange(&conn, stream, &held.0) => {}
        () = track.evicted() => {}
        () = quiet => {}
    }
}

/// The connection's bytes (TLS first when configured), served as HTTP.
async fn exchange(conn: &Arc<Conn>, stream: TcpStream, slot: &Slot) {
    let _ = stream.set_nodelay(true);
    let mut timed = TimeoutStream::new(Tracked::new(stream, Arc::clone(&slot.track)));
    timed.set_read_timeout(Some(conn.limits.idle_timeout));
    timed.set_write_timeout(Some(conn.limits.idle_timeout));
    let timed = Box::pin(timed);
    match &conn.tls {
        None => serve_http(conn, slot, timed).await,
        Some(tls) => {
            let handshake = tls.acceptor().accept(timed);
            if let Ok(Ok(tls)) = tokio::time::timeout(conn.quiet(), handshake).await {
                serve_http(conn, slot, tls).await;
            }
        }
    }
}

/// HTTP/1.1 on one connection, with keep-alive, until the client leaves, a timeout ends it,
/// or shutdown (then the request in progress is finished first).
async fn serve_http<I>(conn: &Arc<Conn>, slot: &Slot, io: I)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::clone(conn);
    let (track, table) = (Arc::clone(&slot.track), Arc::clone(slot.table()));
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = Arc::clone(&shared);
        // Not evictable from the moment its head is in until its answer is written.
        let busy = Slot::busy(&track, &table);
        async move {
            let response = answer(&shared, req).await;
            drop(busy);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let http = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(conn.limits.header_timeout)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(http);
    tokio::select! {
        _ = http.as_mut() => {}
        () = super::wait_for(conn.stop.clone()) => {
            http.as_mut().graceful_shutdown();
            let _ = http.await;
        }
    }
}

/// Basic auth when the web config has users (but not for the probe pages), then the router.
async fn answer(conn: &Conn, req: Request<Incoming>) -> Response<Body> {
    let probe = PROBES.contains(&req.uri().path());
    if let Some(users) = conn.users.clone().filter(|_| !probe) {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes().to_vec());
        // bcrypt takes tens of milliseconds: never on the runtime's thread.
        let allowed = tokio::task::spawn_blocking(move || users.allows(given.as_deref()))
            .await
            .unwrap_or(false);
        if !allowed {
            return unauthorized();
        }
    }
    match conn.router.clone().oneshot(req.map(Body::new)).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn unauthorized() -> Response<Body> {
    let mut r = Response::new(Body::from("Unauthorized\n"));
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"gpuwatch\""),
    );
    r
}

/// Lengthens the kernel's accept queue of a bound, listening socket (a second listen(2) on
/// Linux only changes the backlog). Failing keeps std's 128, which still works.
pub fn deepen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    // SAFETY: listen(2) on a descriptor we own that is already a listening socket.
    let _ = unsafe { libc::listen(listener.as_raw_fd(), BACKLOG) };
}
