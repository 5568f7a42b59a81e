//! The exporter's accept loop, written out (not `axum::serve`) because a server on the network
//! must bound what a client can hold: at most `max_connections` connections are served (the
//! rest wait in the kernel's accept queue, costing no descriptor of ours); each must finish its
//! TLS handshake and every request's headers within `header_timeout` (hyper's timer, which also
//! runs while a keep-alive connection waits for its next request); and a connection on which
//! no byte moves for `idle_timeout` (a client that stops reading) is closed. Then TLS when the
//! web config asks, basic auth before any route, and the axum router. Knows nothing of GPUs.

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
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_io_timeout::TimeoutStream;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::config::ConnectionLimits;

use super::auth::Users;
use super::stats::Stats;
use super::webconfig::WebConfig;

/// After a failed accept (out of descriptors, say), before trying again, so the loop does not
/// spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Everything one connection needs, shared by all of them.
struct Conn {
    router: Router,
    tls: Option<TlsAcceptor>,
    users: Option<Users>,
    limits: ConnectionLimits,
    stats: Arc<Stats>,
    stop: watch::Receiver<bool>,
}

/// While shutting down, how often to look whether the last connection has finished.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// Serves until `stop` turns true; then each open connection finishes the request it is
/// serving and closes, and this returns once none is left (the caller bounds the wait).
pub async fn run(
    listener: TcpListener,
    router: Router,
    web: WebConfig,
    limits: ConnectionLimits,
    stats: Arc<Stats>,
    stop: watch::Receiver<bool>,
) {
    let conn = Arc::new(Conn {
        router,
        tls: web.tls.map(TlsAcceptor::from),
        users: web.users,
        limits,
        stats,
        stop: stop.clone(),
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    accept(&listener, &conn, &slots, &stop).await;
    drop(listener);
    while conn.stats.open_connections.load(Ordering::Relaxed) > 0 {
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

/// Accepts (a slot first) until `stop` turns true.
async fn accept(
    listener: &TcpListener,
    conn: &Arc<Conn>,
    slots: &Arc<Semaphore>,
    stop: &watch::Receiver<bool>,
) {
    loop {
        // A slot first: while all are taken, new clients wait in the accept queue.
        let permit = tokio::select! {
            p = Arc::clone(slots).acquire_owned() => p,
            () = super::wait_for(stop.clone()) => return,
        };
        let Ok(permit) = permit else { return };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = super::wait_for(stop.clone()) => return,
        };
        match accepted {
            Ok((stream, _)) => {
                // Counted before the task runs, so a shutdown right now still waits for it.
                let open = Open::new(&conn.stats);
                tokio::spawn(serve_connection(Arc::clone(conn), stream, (permit, open)));
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

/// One connection, holding its slot and its place in the open count until it ends.
async fn serve_connection(conn: Arc<Conn>, stream: TcpStream, _held: (OwnedSemaphorePermit, Open)) {
    let _ = stream.set_nodelay(true);
    let mut timed = TimeoutStream::new(stream);
    timed.set_read_timeout(Some(conn.limits.idle_timeout));
    timed.set_write_timeout(Some(conn.limits.idle_timeout));
    let timed = Box::pin(timed);
    match &conn.tls {
        None => serve_http(&conn, timed).await,
        Some(acceptor) => {
            let handshake = acceptor.accept(timed);
            if let Ok(Ok(tls)) = tokio::time::timeout(conn.limits.header_timeout, handshake).await {
                serve_http(&conn, tls).await;
            }
        }
    }
}

/// HTTP/1.1 on one connection, with keep-alive, until the client leaves, a timeout ends it,
/// or shutdown (then the request in progress is finished first).
async fn serve_http<I>(conn: &Arc<Conn>, io: I)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::clone(conn);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, std::convert::Infallible>(answer(&shared, req).await) }
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

/// Basic auth when the web config has users, then the router.
async fn answer(conn: &Conn, req: Request<Incoming>) -> Response<Body> {
    if let Some(users) = conn.users.clone() {
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

/// Raises the soft limit on open files to the hard one (often 1,024 → 524,288), so the
/// connection cap, not the descriptor limit, is what a flood of clients runs into.
pub fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            // Failing leaves the old limit, which still works: nothing to report.
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
