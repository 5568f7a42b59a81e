//! A closed standard output ends gpuwatch quietly with exit 0 (`gpuwatch --once --json |
//! head -c 100`, `gpuwatch completions zsh | head -1`), as users of `yes | head` expect,
//! instead of a panic, a backtrace and exit 101. Rust ignores SIGPIPE, so a write to a pipe
//! nobody reads fails with EPIPE and `println!` panics on that; this owns recognising that
//! failure, nothing else.

use std::io;

/// Chains a panic hook in front of the current one: a print to standard output that failed
/// on a broken pipe exits 0 at once; any other panic goes on to the previous hook. Call it
/// again after anything that replaces the hook (color-eyre's `install`).
pub fn install() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = (payload.downcast_ref::<String>().map(String::as_str))
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if message.is_some_and(is_failed_print_to_closed_pipe) {
            std::process::exit(0);
        }
        previous(info);
    }));
}

/// `println!`'s panic message when standard output's reader has gone.
fn is_failed_print_to_closed_pipe(message: &str) -> bool {
    message.starts_with("failed printing to stdout") && message.contains("Broken pipe")
}

/// Whether this error (one link of an error chain) is a write to a closed pipe.
pub fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    err.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Writes `bytes` to standard output; a closed pipe is no error (the reader had enough).
pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    use io::Write;
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failed_print_to_a_closed_pipe_is_quiet() {
        assert!(is_failed_print_to_closed_pipe(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(!is_failed_print_to_closed_pipe(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_failed_print_to_closed_pipe(
            "Broken pipe somewhere else"
        ));
        assert!(is_broken_pipe(&io::Error::from(io::ErrorKind::BrokenPipe)));
        assert!(!is_broken_pipe(&io::Error::from(io::ErrorKind::NotFound)));
    }
}
