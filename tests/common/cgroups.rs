//! Real cgroups for the attribution tests: a hierarchy this (root) process may create
//! groups in, and `sleep`s placed in cgroups shaped like a runtime's, removed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand};
use std::time::Duration;

/// A cgroup hierarchy this process may create groups in: cgroup v2 (at the usual mount
/// point or the hybrid `unified` one) or, on a v1 host, the `pids` controller.
pub fn writable_hierarchy() -> Result<PathBuf, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: creating cgroups needs root".into());
    }
    for root in [
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/pids",
    ] {
        let probe = Path::new(root).join(format!("gpuwatch-probe-{}", std::process::id()));
        if std::fs::create_dir(&probe).is_ok() && probe.join("cgroup.procs").exists() {
            let _ = std::fs::remove_dir(&probe);
            return Ok(root.into());
        }
        let _ = std::fs::remove_dir(&probe);
    }
    Err("no writable cgroup hierarchy under /sys/fs/cgroup".into())
}

/// A `sleep` in a cgroup at `root/rel`; on drop it is killed and the cgroups it made removed.
pub struct Placed {
    child: Child,
    dirs: Vec<PathBuf>,
}

impl Placed {
    pub fn new(root: &Path, rel: &str) -> Placed {
        let mut sleep = StdCommand::new("sleep");
        // Long enough to outlive a first build of the fake NVML; killed on drop.
        sleep.arg("600");
        Placed::spawn(sleep, root, rel)
    }

    /// `command`, started and moved into the cgroup `root/rel` (made as needed).
    pub fn spawn(mut command: StdCommand, root: &Path, rel: &str) -> Placed {
        let child = command.spawn().expect("spawn");
        let mut dirs = Vec::new();
        let mut at = root.to_path_buf();
        for part in rel.split('/') {
            at.push(part);
            if std::fs::create_dir(&at).is_ok() {
                dirs.push(at.clone());
            }
        }
        std::fs::write(at.join("cgroup.procs"), child.id().to_string()).expect("move into cgroup");
        Placed { child, dirs }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A cgroup can be removed once empty; innermost first.
        for dir in self.dirs.iter().rev() {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// `gpuwatch --nvml-lib <fake NVML> ARGS` run as `sh -c "{enter}exec {wrap}gpuwatch …"` (so
/// `enter` can move the shell into a cgroup first, `wrap` can be `unshare --cgroup `), with
/// only `PATH`, an absent `HOME`, the scenario and `env` in its environment.
pub fn gpuwatch_in(
    enter: &str,
    wrap: &str,
    args: &str,
    scenario: &Path,
    env: &[(&str, &str)],
) -> std::process::Output {
    let script = format!(
        "{enter}exec {wrap}{} --nvml-lib {} {args}",
        env!("CARGO_BIN_EXE_gpuwatch"),
        super::fake_lib().display()
    );
    StdCommand::new("sh")
        .args(["-c", &script])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .envs(env.iter().copied())
        .output()
        .expect("run gpuwatch")
}
