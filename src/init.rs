//! gpuwatch as PID 1 (a container's ENTRYPOINT run without `--init`, a pod without a shared
//! process namespace): orphans are re-parented to PID 1, and an alert command that puts a
//! child in the background leaves one zombie per run that nobody reaps (issue 26 §14). So
//! PID 1 forks first thing, while gpuwatch is still one thread: the child runs gpuwatch as
//! always, the parent stays PID 1 as a minimal init (what tini does) — it forwards the
//! signals a container gets to the child, reaps every orphan, and exits with the child's
//! status. gpuwatch itself then never has a child it did not start, so no reaper can take the
//! exit status of an alert command it waits on. Owns that fork and that loop; nothing else.

/// Signals the init passes on to gpuwatch (`docker stop`'s SIGTERM, a resize, …). The rest
/// keep their defaults; PID 1 ignores those it has no handler for anyway.
const FORWARDED: [libc::c_int; 9] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGALRM,
    libc::SIGCONT,
];

/// When this process is PID 1, forks: returns in the child (gpuwatch proper), and never
/// returns in the parent, which reaps and forwards until the child exits. Anywhere else it
/// does nothing. Call it before anything starts a thread.
pub fn reap_orphans_if_pid1() {
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        return;
    }
    // SAFETY: a zeroed sigset_t is valid storage for sigemptyset/sigaddset/sigprocmask, and
    // fork in a single-threaded process (this runs first in main) has no preconditions.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED.into_iter().chain([libc::SIGCHLD]) {
            libc::sigaddset(&mut set, sig);
        }
        // Blocked before the fork, so nothing that arrives in between is lost: PID 1 drops
        // a signal it neither handles nor blocks.
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut before);
        match libc::fork() {
            0 => {
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            }
            -1 => {
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                eprintln!(
                    "gpuwatch: running as PID 1 and cannot fork a reaper ({}): orphaned \
                     children will stay zombies; run the container with --init",
                    std::io::Error::last_os_error()
                );
            }
            child => supervise(child, &set),
        }
    }
}

/// The init's loop: waits for the blocked signals, forwards all but SIGCHLD to `child`, and
/// on SIGCHLD reaps every exited process; exits as `child` did once it has.
fn supervise(child: libc::pid_t, set: &libc::sigset_t) -> ! {
    loop {
        // SAFETY: sigwaitinfo writes into the siginfo we pass; `set` is initialised.
        let sig = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::sigwaitinfo(set, &mut info)
        };
        if sig == libc::SIGCHLD {
            if let Some(code) = reap(child) {
                std::process::exit(code);
            }
        } else if sig > 0 {
            // SAFETY: kill(2) to our own child, which has not been reaped (we would be gone).
            unsafe { libc::kill(child, sig) };
        }
    }
}

/// Reaps every process that has exited (one SIGCHLD may stand for several); `child`'s exit
/// code when it is among them (128 + the signal when a signal ended it, as shells say).
fn reap(child: libc::pid_t) -> Option<i32> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into the int we pass.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return None;
        }
        if pid == child {
            return Some(if libc::WIFSIGNALED(status) {
                128 + libc::WTERMSIG(status)
            } else {
                libc::WEXITSTATUS(status)
            });
        }
    }
}
