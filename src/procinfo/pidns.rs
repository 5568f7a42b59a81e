//! Which PID namespace gpuwatch runs in, as far as GPU PIDs are concerned. NVML reports
//! host PIDs; only in the host's (initial) PID namespace do they name the processes our
//! /proc shows. In a child namespace (a container without `--pid=host`, `unshare --pid`)
//! host PID 2 is some unrelated local process, so nothing may be looked up or signalled
//! by that number. Detection reads two links and one line, once, from the injected root.

use std::path::Path;

/// The inode the kernel gives the initial PID namespace (`PROC_PID_INIT_INO`, fixed since
/// Linux 3.8): `/proc/self/ns/pid` reads `pid:[4026531836]` on the host, anything else in a
/// child namespace.
const INIT_PID_NS: &str = "pid:[4026531836]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidNamespace {
    /// The host's namespace: NVML's PIDs are our PIDs.
    Host,
    /// A child namespace: NVML's PIDs are not ours and are never resolved locally.
    Child,
}

impl PidNamespace {
    /// The namespace of the process reading `root` (a /proc tree). Either sign is enough:
    /// the namespace link differs from the initial one, or `NSpid:` lists more than one
    /// PID (the procfs belongs to an ancestor namespace). With neither readable (a
    /// fixture tree without them, a kernel without namespaces) it is the host: there is
    /// no other namespace to confuse PIDs with.
    pub fn detect(root: &Path) -> PidNamespace {
        let link = std::fs::read_link(root.join("self/ns/pid")).ok();
        let link_says_child = link.is_some_and(|l| l.as_os_str() != INIT_PID_NS);
        let nspid_says_child = std::fs::read_to_string(root.join("self/status"))
            .ok()
            .and_then(|s| nspid(&s))
            .is_some_and(|ids| ids.len() > 1);
        if link_says_child || nspid_says_child {
            PidNamespace::Child
        } else {
            PidNamespace::Host
        }
    }
}

/// The `NSpid:` line of a /proc/PID/status: the PID in each namespace from the procfs's
/// down to the process's own.
pub fn nspid(status: &str) -> Option<Vec<u32>> {
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"))?;
    line.split_whitespace().map(|v| v.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(link: Option<&str>, status: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("self/ns")).unwrap();
        if let Some(l) = link {
            std::os::unix::fs::symlink(l, dir.path().join("self/ns/pid")).unwrap();
        }
        if let Some(s) = status {
            std::fs::write(dir.path().join("self/status"), s).unwrap();
        }
        dir
    }

    #[test]
    fn the_initial_namespace_is_the_host() {
        let d = tree(Some(INIT_PID_NS), Some("Name:\tx\nNSpid:\t4242\n"));
        assert_eq!(PidNamespace::detect(d.path()), PidNamespace::Host);
        let bare = tree(None, None);
        assert_eq!(PidNamespace::detect(bare.path()), PidNamespace::Host);
    }

    #[test]
    fn another_namespace_link_or_a_nested_nspid_is_a_child() {
        // unshare --pid --fork --mount-proc: our own procfs, so NSpid has one entry.
        let own_procfs = tree(Some("pid:[4026532451]"), Some("NSpid:\t7\n"));
        assert_eq!(PidNamespace::detect(own_procfs.path()), PidNamespace::Child);
        // The host's procfs seen from a child namespace: NSpid lists host and local PID.
        let host_procfs = tree(None, Some("NSpid:\t81234\t7\n"));
        assert_eq!(
            PidNamespace::detect(host_procfs.path()),
            PidNamespace::Child
        );
    }

    #[test]
    fn nspid_parses_or_refuses() {
        assert_eq!(nspid("NSpid:\t81234\t7\n"), Some(vec![81234, 7]));
        assert_eq!(nspid("Pid:\t7\n"), None);
        assert_eq!(nspid("NSpid:\t12 x\n"), None);
    }

    #[test]
    fn this_process_is_detected_consistently_with_its_own_status() {
        // Whatever namespace the test runs in, the two signs must not contradict: a
        // single NSpid entry with the initial link is the host.
        let ns = PidNamespace::detect(Path::new("/proc"));
        let link = std::fs::read_link("/proc/self/ns/pid").unwrap();
        assert_eq!(ns == PidNamespace::Host, link.as_os_str() == INIT_PID_NS);
    }
}
