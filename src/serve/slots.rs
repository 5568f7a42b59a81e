//! The exporter's table of open connections: how many it may hold (`--max-connections`, and
//! never more than the descriptor limit less headroom), what each is doing (sent nothing, in
//! the middle of a request head or a TLS handshake, being answered, idle between requests),
//! and which gives way when a new client comes and the table is full: the one that has waited
//! longest without being answered. A slot is no longer held for a connection's whole life,
//! so slow or idle clients cannot queue a scrape behind their timeouts. Knows nothing of HTTP.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Descriptors kept for everything but connections: the listener, the runtime, NVML's device
/// nodes, /proc files, an alert command's pipes, the web config's files when they are re-read.
const RESERVED_DESCRIPTORS: usize = 64;

/// What one connection is doing, shared by its task, its I/O and the table.
#[derive(Debug)]
pub struct Track {
    /// Requests being answered now (a response is written before this drops to 0).
    busy: AtomicUsize,
    /// Response bytes written and not yet flushed.
    writing: AtomicBool,
    /// Any byte came from the client (a TLS ClientHello counts).
    heard: AtomicBool,
    /// Waiting since (connected, or its last answer was done): ms after the table's epoch.
    since_ms: AtomicU64,
    evicted: AtomicBool,
    evict: Notify,
}

impl Track {
    fn new(now_ms: u64) -> Self {
        Track {
            busy: AtomicUsize::new(0),
            writing: AtomicBool::new(false),
            heard: AtomicBool::new(false),
            since_ms: AtomicU64::new(now_ms),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
        }
    }

    /// Whether it may give way to a new client: nothing being answered or written.
    fn idle(&self) -> bool {
        !self.evicted.load(Ordering::Relaxed)
            && self.busy.load(Ordering::Relaxed) == 0
            && !self.writing.load(Ordering::Relaxed)
    }

    /// Whether the client has sent anything at all.
    pub fn heard(&self) -> bool {
        self.heard.load(Ordering::Relaxed)
    }

    /// Resolves when the table chose this connection to make room.
    pub async fn evicted(&self) {
        self.evict.notified().await;
    }
}

/// Marks a request as being answered for as long as it lives.
pub struct Busy {
    track: Arc<Track>,
    table: Arc<Table>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.track
            .since_ms
            .store(self.table.now_ms(), Ordering::Relaxed);
        self.track.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The open connections.
#[derive(Debug)]
pub struct Table {
    epoch: Instant,
    /// Beyond this many, an idle connection gives way to each new one.
    cap: usize,
    /// Beyond this many (the descriptors), none is taken until one ends or can give way.
    most: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    conns: HashMap<u64, Arc<Track>>,
}

/// One connection's place in the table, given up when dropped.
pub struct Slot {
    table: Arc<Table>,
    id: u64,
    pub track: Arc<Track>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.lock().conns.remove(&self.id);
    }
}

impl Slot {
    /// Counts a request as being answered until the returned guard drops.
    pub fn busy(track: &Arc<Track>, table: &Arc<Table>) -> Busy {
        track.busy.fetch_add(1, Ordering::Relaxed);
        Busy {
            track: Arc::clone(track),
            table: Arc::clone(table),
        }
    }

    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }
}

impl Table {
    /// A table holding at most `max_connections`, and at most what `descriptors` (the soft
    /// limit on open files) leaves after the reserve.
    pub fn new(max_connections: usize, descriptors: usize) -> Arc<Self> {
        let most = descriptor_room(descriptors);
        Arc::new(Table {
            epoch: Instant::now(),
            cap: max_connections.min(most),
            most,
            open: Mutex::new(Open::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // The table stays consistent whatever panicked while holding it.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether a new connection can be taken now: below the descriptor bound, or one can
    /// give way.
    pub fn has_room(&self) -> bool {
        let open = self.lock();
        live(&open) < self.most || open.conns.values().any(|t| t.idle())
    }

    /// Takes a new connection; when the table is at its cap, the connection that has waited
    /// longest without being answered is told to close (it goes at its next wake-up).
    /// Returns the slot and whether someone was evicted for it.
    pub fn admit(self: &Arc<Self>) -> (Slot, bool) {
        let now = self.now_ms();
        let mut open = self.lock();
        let mut evicted = false;
        if live(&open) >= self.cap {
            // Ties (the same millisecond) go to the earlier connection.
            let oldest = open
                .conns
                .iter()
                .filter(|(_, t)| t.idle())
                .min_by_key(|(id, t)| (t.since_ms.load(Ordering::Relaxed), **id));
            if let Some((_, victim)) = oldest {
                victim.evicted.store(true, Ordering::Relaxed);
                victim.evict.notify_one();
                evicted = true;
            }
        }
        let id = open.next;
        open.next += 1;
        let track = Arc::new(Track::new(now));
        open.conns.insert(id, Arc::clone(&track));
        drop(open);
        let slot = Slot {
            table: Arc::clone(self),
            id,
            track,
        };
        (slot, evicted)
    }
}

/// Connections not yet told to close.
fn live(open: &Open) -> usize {
    open.conns
        .values()
        .filter(|t| !t.evicted.load(Ordering::Relaxed))
        .count()
}

/// Connections the descriptor limit leaves room for: the limit less the reserve, and at
/// least half of a small limit.
pub fn descriptor_room(descriptors: usize) -> usize {
    descriptors
        .saturating_sub(RESERVED_DESCRIPTORS)
        .max(descriptors / 2)
        .max(1)
}

/// A connection's byte stream, telling its `Track` when the client sends something and when
/// a response is being written (so it is not evicted half-written).
pub struct Tracked<S> {
    inner: S,
    track: Arc<Track>,
}

impl<S> Tracked<S> {
    pub fn new(inner: S, track: Arc<Track>) -> Self {
        Tracked { inner, track }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.track.heard.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.track.writing.store(true, Ordering::Relaxed);
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.track.writing.store(true, Ordering::Relaxed);
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) {
            self.track.writing.store(false, Ordering::Relaxed);
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descriptors_bound_the_table_with_headroom() {
        assert_eq!(descriptor_room(256), 192);
        assert_eq!(descriptor_room(100), 50);
        assert_eq!(Table::new(100_000, 256).cap, 192);
        assert_eq!(Table::new(64, 524_288).cap, 64);
    }

    #[test]
    fn a_full_table_evicts_the_longest_waiting_idle_connection_never_a_busy_one() {
        let table = Table::new(2, 1 << 20);
        let (first, _) = table.admit();
        let (second, _) = table.admit();
        // The first is being answered: the second, though newer, gives way.
        let busy = Slot::busy(&first.track, &table);
        let (third, evicted) = table.admit();
        assert!(evicted);
        assert!(second.track.evicted.load(Ordering::Relaxed));
        assert!(!first.track.evicted.load(Ordering::Relaxed));
        // Answered later than the third came, the first has waited less than it since.
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(busy);
        let (_fourth, evicted) = table.admit();
        assert!(evicted && third.track.evicted.load(Ordering::Relaxed));
        assert!(!first.track.evicted.load(Ordering::Relaxed));
    }

    #[test]
    fn at_the_descriptor_bound_with_everyone_busy_there_is_no_room() {
        let table = Table::new(1, 2);
        let (a, _) = table.admit();
        let _busy = Slot::busy(&a.track, &table);
        assert!(!table.has_room());
        drop(a);
        assert!(table.has_room());
    }
}
