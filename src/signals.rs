//! Sending a confirmed signal: the only place gpuwatch touches other processes. The target
//! is re-validated by (PID, start time, owner) right before `kill(2)`, so a PID reused by a
//! new process is never hit, and it goes to the PID the process has in our namespace (not
//! NVML's host PID, when gpuwatch runs in a child one). The demo fleet gets a stand-in
//! that sends nothing.

use crate::procinfo::ProcInfo;
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
        let here = match self.procinfo.identity(pid) {
            None => return format!("PID {pid} has exited: no {name} sent"),
            Some(id) if id.started != r.started || id.uid != r.uid => {
                return format!(
                    "PID {pid} is now a different process (PID reused): no {name} sent"
                );
            }
            // NVML's PID names the process in the host's /proc; kill(2) takes its PID in
            // our namespace, which differs when gpuwatch runs in a child one.
            Some(id) => id.pid_here,
        };
        let Ok(raw_pid) = libc::pid_t::try_from(here) else {
            return format!("PID {pid} is out of range: no {name} sent");
        };
        // SAFETY: kill(2) has no memory-safety preconditions; the target was just re-checked.
        let rc = unsafe { libc::kill(raw_pid, libc_signal(r.signal)) };
        if rc == 0 {
            let local = if here == pid {
                String::new()
            } else {
                format!(", PID {here} in this namespace")
            };
            return format!("sent {name} to PID {pid}{local} ({})", r.command);
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EPERM) => format!("permission denied sending {name} to PID {pid}"),
            Some(libc::ESRCH) => format!("PID {pid} has exited: no {name} sent"),
            _ => format!(
                "{name} to PID {pid} failed: {}",
                std::io::Error::last_os_error()
            ),
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
