//! Which PID namespace gpuwatch runs in, as far as GPU PIDs are concerned. NVML reports
//! host PIDs; only in the host's (initial) PID namespace do they name the processes our
//! /proc shows. In a child namespace (a container without `--pid=host`, `unshare --pid`)
//! host PID 2 is some unrelated local process, so nothing may be looked up or signalled
//! by that number, unless the /proc we read is the host's: then host PID N is /proc/N, and
//! a process that lives in our own namespace is mapped to its PID here through the last
//! entry of its `NSpid:` line (checked by its namespace link), which is what a signal must
//! be sent to. Detection reads three links and one line, once, from the injected root.

use std::path::Path;

/// The inode the kernel gives the initial PID namespace (`PROC_PID_INIT_INO`, fixed since
/// Linux 3.8): `/proc/self/ns/pid` reads `pid:[4026531836]` on the host, anything else in a
/// child namespace.
const INIT_PID_NS: &str = "pid:[4026531836]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidNamespace {
    /// The host's namespace: NVML's PIDs are our PIDs.
    Host,
    /// A child namespace with its own /proc (`--mount-proc`, a container's procfs) or an
    /// intermediate one's: NVML's PIDs mean nothing here and are never resolved locally.
    Child,
    /// A child namespace reading the host's /proc (`unshare --pid --fork` without
    /// `--mount-proc`, a container with the host's /proc mounted in): NVML's PIDs are read
    /// there; only processes whose namespace is `own` (the inode of ours) can be reached
    /// from here, by the PID they have here.
    ChildWithHostProc { own: u64 },
}

impl PidNamespace {
    /// The namespace of the process reading `root` (a /proc tree). Either sign is enough:
    /// the namespace link differs from the initial one, or `NSpid:` lists more than one
    /// PID (the procfs belongs to an ancestor namespace). With neither readable (a
    /// fixture tree without them, a kernel without namespaces) it is the host: there is
    /// no other namespace to confuse PIDs with.
    pub fn detect(root: &Path) -> PidNamespace {
        let link = std::fs::read_link(root.join("self/ns/pid")).ok();
        let link_says_child = link.as_ref().is_some_and(|l| l.as_os_str() != INIT_PID_NS);
        let nspid_says_child = std::fs::read_to_string(root.join("self/status"))
            .ok()
            .and_then(|s| nspid(&s))
            .is_some_and(|ids| ids.len() > 1);
        if !(link_says_child || nspid_says_child) {
            return PidNamespace::Host;
        }
        // The procfs is the host's when it shows a process of the initial namespace (a
        // procfs shows only its own namespace and those below it): its init (PID 1) or
        // the kernel's kthreadd (PID 2, which exists only there). Reading those links
        // needs ptrace access (root; some inits refuse even that, hence both); unreadable
        // means we cannot tell, and then nothing is mapped.
        let procfs_is_hosts = ["1", "2"].iter().any(|pid| {
            std::fs::read_link(root.join(pid).join("ns/pid"))
                .is_ok_and(|l| l.as_os_str() == INIT_PID_NS)
        });
        match link.as_deref().and_then(ns_inode) {
            Some(own) if procfs_is_hosts => PidNamespace::ChildWithHostProc { own },
            _ => PidNamespace::Child,
        }
    }

    /// The PID by which host process `pid` (read from `root`, the host's /proc) is known
    /// in our namespace, from one read of its status: `None` in a `Child` namespace, when
    /// the process lives in another namespace (a sibling container, the host itself), or
    /// when its files cannot be read. On the host it is `pid` itself.
    pub fn pid_here(self, root: &Path, pid: u32) -> Option<u32> {
        match self {
            PidNamespace::Host => Some(pid),
            PidNamespace::Child => None,
            PidNamespace::ChildWithHostProc { own } => {
                let dir = root.join(pid.to_string());
                let theirs = std::fs::read_link(dir.join("ns/pid")).ok()?;
                if ns_inode(&theirs)? != own {
                    return None;
                }
                // In our namespace, the last NSpid entry is the PID in it (the line runs
                // from the procfs's namespace down to the process's own).
                let ids = nspid(&std::fs::read_to_string(dir.join("status")).ok()?)?;
                ids.last().copied().filter(|_| ids.len() > 1)
            }
        }
    }
}

/// The inode in a namespace link's text, `pid:[4026532451]`.
fn ns_inode(link: &Path) -> Option<u64> {
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
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

    /// A process directory `pid` in `root`, in the namespace `link` with `NSpid:` `ids`.
    fn process(root: &Path, pid: u32, link: &str, ids: &str) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(dir.join("ns")).unwrap();
        std::os::unix::fs::symlink(link, dir.join("ns/pid")).unwrap();
        std::fs::write(dir.join("status"), format!("Name:\tx\nNSpid:\t{ids}\n")).unwrap();
    }

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
    fn the_hosts_procfs_seen_from_a_child_maps_only_our_namespace() {
        const OURS: &str = "pid:[4026532451]";
        // unshare --pid --fork without --mount-proc: /proc is the host's, PID 1 is init.
        let d = tree(Some(OURS), Some("NSpid:\t81234\t7\n"));
        process(d.path(), 1, INIT_PID_NS, "1");
        let ns = PidNamespace::detect(d.path());
        assert_eq!(ns, PidNamespace::ChildWithHostProc { own: 4026532451 });
        // Host PID 81300 is PID 9 here; 500 is a host process; 90000 a sibling container's.
        process(d.path(), 81300, OURS, "81300\t9");
        process(d.path(), 500, INIT_PID_NS, "500");
        process(d.path(), 90000, "pid:[4026532999]", "90000\t9");
        assert_eq!(ns.pid_here(d.path(), 81300), Some(9));
        assert_eq!(ns.pid_here(d.path(), 500), None);
        assert_eq!(ns.pid_here(d.path(), 90000), None);
        assert_eq!(ns.pid_here(d.path(), 4242), None, "no such process");
        // The same layout with PIDs 1 and 2 unreadable (not root): nothing is mapped.
        let unknown = tree(Some(OURS), Some("NSpid:\t81234\t7\n"));
        process(unknown.path(), 81300, OURS, "81300\t9");
        let ns = PidNamespace::detect(unknown.path());
        assert_eq!(ns, PidNamespace::Child);
        assert_eq!(ns.pid_here(unknown.path(), 81300), None);
        // An intermediate namespace's procfs: its PID 1 is not the host's init.
        let middle = tree(Some(OURS), Some("NSpid:\t34\t7\n"));
        process(middle.path(), 1, "pid:[4026532000]", "1");
        assert_eq!(PidNamespace::detect(middle.path()), PidNamespace::Child);
    }

    #[test]
    fn on_the_host_a_pid_is_its_own() {
        let d = tree(Some(INIT_PID_NS), None);
        assert_eq!(PidNamespace::Host.pid_here(d.path(), 4242), Some(4242));
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
