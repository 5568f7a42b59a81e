//! Keeping what gpuwatch holds in memory small from its first instruction: it runs all
//! day on every GPU node, so its private memory is measured against nvtop's (issue 25).
//! One choice only a process can make about itself, made at the start of `main` while it
//! is the only thread: one malloc arena. glibc gives each thread that allocates an arena
//! of its own (a 64 MiB reservation whose first pages stay resident and whose free space
//! no other thread reuses); gpuwatch's threads (the sampler's poll, terminal input, the
//! exporter's connections, alert sinks) allocate little and seldom at once, so sharing
//! the main arena costs no waiting worth measuring and saves ~0.12 MiB per thread that
//! allocated (`scripts/overhead.sh`: private memory 3.26 -> 3.12 MiB).
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
