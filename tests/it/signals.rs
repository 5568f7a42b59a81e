//! Sending signals for real: the target is re-validated by (PID, start time, owner) right
//! before kill(2), so a confirmed request for a process that has since changed is refused.

use std::process::Command;
use std::time::{Duration, SystemTime};

use gpuwatch::procinfo::ProcInfo;
use gpuwatch::signals::{DemoSignaller, Signaller, SystemSignaller};
use gpuwatch::state::signal::{Sig, SignalRequest};

fn request_for(pid: u32, sig: Sig) -> SignalRequest {
    let id = ProcInfo::system()
        .identity(pid)
        .expect("the child is in /proc");
    assert_eq!(id.pid_here, pid, "on the host a PID is its own");
    let (started, uid) = (id.started, id.uid);
    SignalRequest {
        signal: sig,
        pid,
        started,
        uid,
        user: "me".into(),
        gpu_index: 0,
        vram: None,
        command: "sleep 30".into(),
    }
}

/// A `sleep 30` of our own; run as nobody when we are root, since root's processes are
/// never signalled (and CI runs as root).
fn sleeper() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    cmd.spawn().unwrap()
}

#[test]
fn a_confirmed_signal_reaches_the_process() {
    let mut child = sleeper();
    let req = request_for(child.id(), Sig::Term);
    let outcome = SystemSignaller::default().send(&req);
    assert_eq!(
        outcome,
        format!("sent SIGTERM to PID {} (sleep 30)", child.id())
    );
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn a_changed_process_is_not_signalled() {
    let mut child = sleeper();
    let mut req = request_for(child.id(), Sig::Kill);
    // As if the PID now belonged to a process started at another time.
    req.started += Duration::from_secs(1);
    let outcome = SystemSignaller::default().send(&req);
    assert_eq!(
        outcome,
        format!(
            "PID {} is now a different process (PID reused): no SIGKILL sent",
            child.id()
        )
    );
    assert!(child.try_wait().unwrap().is_none(), "still running");
    child.kill().unwrap();
    child.wait().unwrap();
    // ...and a process that has exited is reported, not signalled.
    let outcome = SystemSignaller::default().send(&req);
    assert!(outcome.contains("has exited"), "{outcome}");
}

#[test]
fn the_demo_sends_nothing() {
    let req = SignalRequest {
        signal: Sig::Int,
        pid: 1,
        started: SystemTime::UNIX_EPOCH,
        uid: 0,
        user: "root".into(),
        gpu_index: 0,
        vram: None,
        command: "init".into(),
    };
    assert_eq!(
        DemoSignaller.send(&req),
        "demo: SIGINT not sent to PID 1 (a simulated process)"
    );
}
