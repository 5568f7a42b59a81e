//! [`send`](super::send) for callers on a plain thread: the Prometheus source (on the
//! sampler's blocking pool), the names worker and the webhook threads.
//!
//! Each call runs on a current-thread runtime of its own, as `procinfo::kubelet` does: a few
//! allocations and two file descriptors, cheap next to a network round trip, no thread, and
//! nothing left between calls. Not `Handle::block_on` on the app's runtime: the names worker
//! and the webhook threads are not on one, `gpuwatch alert test` has none with I/O, and a
//! handle would tie the client to how each mode builds its runtime. Must not be called from
//! async code (tokio refuses a runtime started inside a task): await `send` there.

use super::{Endpoint, Error, Limits, Request, Response};

/// Sends and reads the answer within `limits`, blocking the thread.
pub fn send(endpoint: &Endpoint, request: Request, limits: Limits) -> Result<Response, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(Error::Runtime)?;
    let result = runtime.block_on(super::send(endpoint, request, limits));
    // A name lookup still running on the runtime's blocking pool (getaddrinfo cannot be
    // cancelled) is not waited for: the deadline is the caller's bound, not the resolver's.
    runtime.shutdown_background();
    result
}
