//! Giving a large refresh's freed memory back to the system. A 1,000-host refresh parses
//! tens of MB of JSON and builds the whole history window before it becomes readings; glibc
//! keeps the freed pages (they sit between live allocations, above the trim threshold's
//! reach), so without this the process stays ~700 MiB larger than what it holds
//! (measured with examples/prometheus_scale at 1,000 hosts: 1,165 MiB resident, 456 MiB
//! of it live). `malloc_trim` returns every free page, wherever it lies, for ~30–200 ms of
//! CPU on the sampler's thread, so it is done only after a refresh that large.

/// A refresh with at least this many GPUs gives its freed memory back. Below it the
/// answers are a few MB and the allocator's own trimming is enough; a trim per second
/// would only cost page faults when the memory is reused.
pub const TRIM_FROM_GPUS: usize = 1_000;

/// Returns the heap's free pages to the system (`resident::give_back_freed`).
pub fn give_back_freed() {
    crate::resident::give_back_freed();
}
