//! The alert command's process group: `--alert-command` runs in a group of its own, and a
//! command that outlives its time is ended with everything it started (a `sleep 300 &`
//! inside it too), not only the `sh` at its top. Owns those two steps; running the command
//! and judging its result stay in `sinks`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Makes the command the leader of a new process group (its group id is its PID), so the
/// group can be signalled as one.
pub fn own_group(command: &mut Command) -> &mut Command {
    command.process_group(0)
}

/// Kills the whole group `child` leads, then reaps `child`. Until `child` is reaped its
/// PID (the group's id) cannot be reused, so the signal cannot reach anyone else's group.
pub fn kill(child: &mut Child) {
    if let Ok(group) = libc::pid_t::try_from(child.id()) {
        // SAFETY: killpg has no memory-safety preconditions; the group is ours (above).
        unsafe { libc::killpg(group, libc::SIGKILL) };
    }
    // In case the group could not be signalled (the command left it): the leader at least.
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backgrounded_grandchild_dies_with_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let mut child = own_group(Command::new("sh").arg("-c").arg(format!(
            "sleep 300 & echo $! > {}; wait",
            pid_file.display()
        )))
        .spawn()
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let grandchild: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "no PID written");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        kill(&mut child);
        assert!(gone(grandchild), "sleep {grandchild} outlived its group");
    }

    /// Whether `pid` has ended (or is a zombie awaiting its new parent) within 2 s.
    fn gone(pid: i32) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next());
            if matches!(state, None | Some("Z")) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }
}
