//! Who may signal what: turns "send SIGTERM to the selected process" into either a refusal
//! (with the reason) or a confirmation dialog, and the confirmed dialog into a request for
//! the outside world. Pure; sending and the last-moment re-validation live in `crate::signals`.

use std::time::SystemTime;

use crate::model::procs::{ProcRow, Visibility};
use crate::units::Bytes;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    Term,
    Kill,
    Int,
}

impl Sig {
    pub fn name(self) -> &'static str {
        match self {
            Sig::Term => "SIGTERM",
            Sig::Kill => "SIGKILL",
            Sig::Int => "SIGINT",
        }
    }
}

/// Everything needed to send a signal to exactly the process the user confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalRequest {
    pub signal: Sig,
    pub pid: u32,
    /// With the PID, the process identity: re-checked right before sending.
    pub started: SystemTime,
    pub uid: u32,
    pub user: String,
    pub gpu_index: u32,
    pub vram: Option<Bytes>,
    pub command: String,
}

/// The confirmation dialog on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    pub request: SignalRequest,
    /// Root signalling another user's process must confirm twice, the second time with
    /// the owner named.
    pub needs_second_confirmation: bool,
    pub confirmed_once: bool,
}

/// Decides whether the selected row may be signalled at all. `current_uid` is who runs
/// gpuwatch. Root's processes are never signalled; other users' only by root, twice confirmed.
pub fn request(
    row: Option<&ProcRow>,
    signal: Sig,
    readonly: bool,
    current_uid: Option<u32>,
) -> Result<Dialog, String> {
    if readonly {
        return Err("read-only mode (--readonly): signals are disabled".into());
    }
    let row = row.ok_or("select a process first (↑/↓)")?;
    let pid = row.key.pid;
    if let Some(host) = &row.host {
        return Err(format!("PID {pid} runs on {host}: signal it from there"));
    }
    match row.visibility {
        Visibility::Visible => {}
        Visibility::OtherNamespace => {
            return Err(format!(
                "PID {pid} is not visible from this PID namespace: refusing to signal it"
            ));
        }
        Visibility::Exited => return Err(format!("PID {pid} has exited: nothing to signal")),
        Visibility::Hidden => {
            return Err(format!(
                "PID {pid} is hidden from us: refusing to signal it"
            ));
        }
    }
    let (Some(uid), Some(started), Some(user)) = (
        row.uid,
        row.key.started,
        row.user.as_deref().map(str::to_owned),
    ) else {
        return Err(format!(
            "PID {pid}: owner or start time unknown, refusing to signal it"
        ));
    };
    let me = current_uid.ok_or("cannot tell who you are: refusing to send signals")?;
    if uid == 0 {
        return Err(format!(
            "PID {pid} belongs to root: gpuwatch never signals root's processes"
        ));
    }
    if uid != me && me != 0 {
        return Err(format!(
            "PID {pid} belongs to {user}, not you: refusing to signal it"
        ));
    }
    Ok(Dialog {
        request: SignalRequest {
            signal,
            pid,
            started,
            uid,
            user,
            gpu_index: row.gpu_index,
            vram: row.vram,
            command: String::from(&*row.command),
        },
        needs_second_confirmation: uid != me,
        confirmed_once: false,
    })
}

/// The user pressed `y`: either the dialog asks again (root and someone else's process) or
/// the request goes out.
pub fn confirm(mut dialog: Dialog) -> Result<SignalRequest, Dialog> {
    if dialog.needs_second_confirmation && !dialog.confirmed_once {
        dialog.confirmed_once = true;
        return Err(dialog);
    }
    Ok(dialog.request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::procs::ProcKey;
    use crate::reading::{GpuId, ProcKind};
    use std::time::Duration;

    fn row(uid: u32, user: &str) -> ProcRow {
        ProcRow {
            key: ProcKey {
                pid: 4242,
                started: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(100)),
                gpu: GpuId("GPU-0".into()),
            },
            gpu_index: 0,
            host: None,
            kind: ProcKind::Compute,
            vram: Some(Bytes::from_gib(4.0)),
            gpu_util: None,
            cpu: None,
            host_memory: None,
            elapsed: None,
            user: Some(user.into()),
            uid: Some(uid),
            command: "python train.py".into(),
            visibility: Visibility::Visible,
            job: None,
            context: Default::default(),
            instance: None,
        }
    }

    #[test]
    fn own_process_needs_one_confirmation() {
        let d = request(Some(&row(1000, "alice")), Sig::Term, false, Some(1000)).unwrap();
        assert!(!d.needs_second_confirmation);
        let req = confirm(d).unwrap();
        assert_eq!((req.pid, req.signal, req.uid), (4242, Sig::Term, 1000));
    }

    #[test]
    fn refusals_say_why() {
        let r = |row: Option<&ProcRow>, readonly, me| {
            request(row, Sig::Kill, readonly, me).unwrap_err()
        };
        assert!(r(Some(&row(1000, "alice")), true, Some(1000)).contains("--readonly"));
        assert!(r(None, false, Some(1000)).contains("select a process"));
        assert!(r(Some(&row(0, "root")), false, Some(1000)).contains("belongs to root"));
        assert!(
            r(Some(&row(0, "root")), false, Some(0)).contains("never signals root"),
            "not even as root"
        );
        assert!(r(Some(&row(1001, "bob")), false, Some(1000)).contains("belongs to bob, not you"));
        let mut remote = row(1000, "alice");
        remote.host = Some("gpu2".into());
        assert!(r(Some(&remote), false, Some(1000)).contains("runs on gpu2"));
        let mut hidden = row(1000, "alice");
        hidden.visibility = Visibility::OtherNamespace;
        assert!(
            r(Some(&hidden), false, Some(1000)).contains("not visible from this PID namespace")
        );
        hidden.visibility = Visibility::Hidden;
        assert!(r(Some(&hidden), false, Some(1000)).contains("hidden"));
        hidden.visibility = Visibility::Exited;
        assert!(r(Some(&hidden), false, Some(1000)).contains("has exited"));
        assert!(r(Some(&row(1000, "alice")), false, None).contains("who you are"));
    }

    #[test]
    fn root_signalling_another_user_confirms_twice() {
        let d = request(Some(&row(1001, "bob")), Sig::Int, false, Some(0)).unwrap();
        assert!(d.needs_second_confirmation);
        let again = confirm(d).unwrap_err();
        assert!(again.confirmed_once);
        assert_eq!(confirm(again).unwrap().user, "bob");
    }
}
