//! Sending a confirmed signal: the only place gpuwatch touches other processes. The target
//! is re-validated by (PID, start time, owner), pinned with a pidfd on the PID it has in
//! our namespace (not NVML's host PID, when gpuwatch runs in a child one), re-validated
//! again, refused if any of its uids is root's, then signalled through the pidfd: a PID
//! reused by a new process is never hit. The demo fleet gets a stand-in that sends nothing.

use crate::procinfo::{Identity, ProcInfo};
use crate::state::signal::{Sig, SignalRequest};

/// Carries out a confirmed signal request and says what happened, in one line.
pub trait Signaller: Send {
    fn send(&mut self, request: &SignalRequest) -> String;
}

/// Real processes on this host.
pub struct SystemSignaller {
    procinfo: ProcInfo,
}

impl SystemSignaller {
    pub fn new(procinfo: ProcInfo) -> Self {
        SystemSignaller { procinfo }
    }
}

impl Default for SystemSignaller {
    fn default() -> Self {
        Self::new(ProcInfo::system())
    }
}

fn libc_signal(sig: Sig) -> libc::c_int {
    match sig {
        Sig::Term => libc::SIGTERM,
        Sig::Kill => libc::SIGKILL,
        Sig::Int => libc::SIGINT,
    }
}

impl Signaller for SystemSignaller {
    fn send(&mut self, r: &SignalRequest) -> String {
        let (name, pid) = (r.signal.name(), r.pid);
        let is_target = |id: &Identity| id.started == r.started && id.uid == r.uid;
        // NVML's PID names the process in the host's /proc; the pidfd and the signal take
        // its PID in our namespace, which differs when gpuwatch runs in a child one.
        let here = match self.procinfo.identity(pid) {
            None => return format!("PID {pid} has exited: no {name} sent"),
            Some(id) if !is_target(&id) => return reused(pid, name),
            Some(id) => id.pid_here,
        };
        let Ok(raw_pid) = libc::pid_t::try_from(here) else {
            return format!("PID {pid} is out of range: no {name} sent");
        };
        // The pidfd pins whatever process has that PID now; checking the identity again
        // after opening it proves that process is the target (alive throughout, so its
        // PID was never free to be reused), and the signal then cannot reach another.
        let pidfd = match Pidfd::open(raw_pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return format!("PID {pid} has exited: no {name} sent");
            }
            Err(e) => return format!("{name} to PID {pid} failed: {e}"),
        };
        match self.procinfo.identity(pid) {
            None => return format!("PID {pid} has exited: no {name} sent"),
            Some(id) if !is_target(&id) || id.pid_here != here => return reused(pid, name),
            Some(_) => {}
        }
        // Root's if any of its uids is 0 (a setuid-root program run by nobody), whatever
        // the row said when the dialog opened.
        if self.procinfo.uids(pid).is_none_or(|u| u.any_root()) {
            return format!(
                "PID {pid} runs with root's rights: gpuwatch never signals root's processes"
            );
        }
        let local = if here == pid {
            String::new()
        } else {
            format!(", PID {here} in this namespace")
        };
        match pidfd.send(libc_signal(r.signal)) {
            Ok(()) => format!("sent {name} to PID {pid}{local} ({})", r.command),
            Err(e) => match e.raw_os_error() {
                Some(libc::EPERM) => format!("permission denied sending {name} to PID {pid}"),
                Some(libc::ESRCH) => format!("PID {pid} has exited: no {name} sent"),
                _ => format!("{name} to PID {pid} failed: {e}"),
            },
        }
    }
}

fn reused(pid: u32, name: &str) -> String {
    format!("PID {pid} is now a different process (PID reused): no {name} sent")
}

/// A process handle that cannot be confused with a later process of the same PID
/// (`pidfd_open(2)`, Linux 5.3); on older kernels the PID itself, with `kill(2)`'s race.
/// Raw syscalls: libc has the numbers, and rustix would be a new dependency for two calls.
enum Pidfd {
    Fd(std::os::fd::OwnedFd),
    Pid(libc::pid_t),
}

impl Pidfd {
    fn open(pid: libc::pid_t) -> std::io::Result<Pidfd> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
            return Ok(Pidfd::Fd(unsafe {
                std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int)
            }));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOSYS) => Ok(Pidfd::Pid(pid)),
            _ => Err(e),
        }
    }

    fn send(&self, signal: libc::c_int) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let rc = match self {
            // SAFETY: a descriptor we own, a signal number, no siginfo, no flags.
            Pidfd::Fd(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            },
            // SAFETY: kill(2) has no memory-safety preconditions.
            Pidfd::Pid(pid) => libc::c_long::from(unsafe { libc::kill(*pid, signal) }),
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// The demo fleet's processes are simulated: nothing is sent, and the user is told so.
pub struct DemoSignaller;

impl Signaller for DemoSignaller {
    fn send(&mut self, r: &SignalRequest) -> String {
        format!(
            "demo: {} not sent to PID {} (a simulated process)",
            r.signal.name(),
            r.pid
        )
    }
}
