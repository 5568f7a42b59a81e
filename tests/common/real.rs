//! What the real-component tests (tests/it/real_*.rs) share: the fake NVML's two GPUs with
//! chosen processes on the first, a container image's tree holding only `sleep`, the binary on it with a clean environment (as another
//! user when asked), and a keeper shell whose stdin closing — the test binary's exit, since
//! statics are never dropped — stops the component it started.

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/nvml/two_gpus.json"
);

/// `dir/scenario.json`: the fake NVML's two GPUs, `procs` on the first, none on the
/// second. `dir` is opened to everyone, so a run as another user can read it.
pub fn scenario(dir: &Path, procs: Value) -> PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    s["gpus"][0]["processes"] = procs;
    s["gpus"][1]["processes"] = json!([]);
    let path = dir.join("scenario.json");
    std::fs::write(&path, serde_json::to_string(&s).unwrap()).unwrap();
    std::fs::set_permissions(dir, PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// The binary on the fake NVML with `scenario`, only PATH and an empty HOME in its
/// environment, as `uid` (and the group of that number) when given.
pub fn gpuwatch(scenario: &Path, uid: Option<u32>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuwatch"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", super::EMPTY_HOME)
        .env("GPUWATCH_FAKE_NVML_SCENARIO", scenario)
        .arg("--nvml-lib")
        .arg(super::fake_lib());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd
}

/// Runs `cmd`, which must succeed: its stdout and stderr.
pub fn output(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().expect("run gpuwatch");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Runs `cmd` (`--once --json`), which must succeed: its document and stderr.
pub fn json_doc(cmd: &mut Command) -> (Value, String) {
    let (out, stderr) = output(cmd);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (doc, stderr)
}

/// A process the test binary holds only by its stdin: `sh -c script`, where the script
/// starts the component, prints one line, waits for EOF (`cat >/dev/null`) and stops it.
pub struct Keeper {
    _child: Child,
    _stdin: ChildStdin,
}

impl Keeper {
    /// The keeper and the first line it printed (`ready`, or nothing if it died first).
    pub fn start(command: &mut Command) -> Result<(Keeper, String), String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let mut line = String::new();
        let _ = std::io::BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line);
        let keeper = Keeper {
            _child: child,
            _stdin: stdin,
        };
        Ok((keeper, line.trim().to_string()))
    }
}

/// A tool's path on `$PATH`.
pub fn which(tool: &str) -> Result<PathBuf, String> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{tool} not on PATH"))
}

/// `dir/tree`: `sleep` and the libraries it links, at their host paths, for an engine's
/// `import` (no registry is reachable). A container runs `sleep` by the host's path.
pub fn sleep_tree(dir: &Path) -> Result<PathBuf, String> {
    let tree = dir.join("tree");
    let sleep = which("sleep")?;
    let ldd = Command::new("ldd")
        .arg(&sleep)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    let mut files = vec![sleep];
    files.extend(
        String::from_utf8_lossy(&ldd.stdout)
            .split_whitespace()
            .filter(|w| w.starts_with('/'))
            .map(PathBuf::from),
    );
    for file in &files {
        let to = tree.join(file.strip_prefix("/").unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::copy(file, &to).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(tree)
}

/// Runs an engine's CLI (`what` names it in errors): its trimmed stdout, or its stderr as
/// the error when it fails.
pub fn cli_stdout(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}
