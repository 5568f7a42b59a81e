//! The limit on open files: raised to the hard one once at start (often 1,024 → 524,288),
//! and read by what sizes itself to it — the exporter's connection table and the /proc
//! reader's kept-open `stat` files. One home, so both see the same limit.

/// Raises the soft limit on open files to the hard one, so the exporter's connection cap
/// and the /proc reader's own bound, not the descriptor limit, are what a flood of clients
/// or thousands of GPU processes run into. Failing leaves the old limit, which still works:
/// each user sizes itself to what it is.
pub fn raise_to_hard() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The soft limit on open files now (1,024 when it cannot be read: what sizes itself to it
/// needs a number).
pub fn soft() -> usize {
    read_soft().unwrap_or(1024)
}

/// The soft limit on open files now, `None` when it cannot be read (the exporter's
/// `process_max_fds` is then absent, not made up).
pub fn read_soft() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    Some(usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX))
}
