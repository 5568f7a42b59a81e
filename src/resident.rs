//! Keeping what gpuwatch holds in memory small from its first instruction: it runs all
//! day on every GPU node, so its private memory is measured against nvtop's (issue 25).
//! Two things only a process can do about itself. At the start of `main`, while it is the
//! only thread: one malloc arena. glibc gives each thread that allocates an arena
//! of its own (a 64 MiB reservation whose first pages stay resident and whose free space
//! no other thread reuses); gpuwatch's threads (the sampler's poll, terminal input, the
//! exporter's connections, alert sinks) allocate little and seldom at once, so sharing
//! the main arena costs no waiting worth measuring and saves ~0.12 MiB per thread that
//! allocated (`scripts/overhead.sh`: private memory 3.26 -> 3.12 MiB). Later, whenever
//! much has been freed between live allocations (the TUI's start-up, a fleet's refresh):
//! giving those pages back (`give_back_freed`), which glibc's own trimming, at the top of
//! the heap only, does not.
//!
//! Tried and left out: `madvise(MADV_RANDOM)` over the binary's code, to stop the kernel
//! mapping the cached pages around each code page faulted in (why 5.3 MiB of the binary's
//! 6.9 MB of code is resident): Linux 6.18 maps them around regardless (5,400 -> 5,360 KiB).

/// Makes that choice; nothing on other platforms.
pub fn keep_small() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; `main` calls this before any other
    // thread exists, so no allocation is under way in another arena.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Returns the heap's free pages to the system, wherever they lie (glibc's `malloc_trim`);
/// nothing on other platforms. It walks the free lists: microseconds for the TUI's heap,
/// ~30–200 ms after a 1,000-host refresh, so it is called after such moments, not per
/// sample (a trim per second would only cost page faults when the memory is reused).
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and releases the allocator's own free lists; it takes
    // the allocator's locks like any malloc call and touches no memory we hold.
    unsafe {
        libc::malloc_trim(0);
    }
}
