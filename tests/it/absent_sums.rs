//! Issue 21 §9, absent is not zero in sums: an owner whose processes' VRAM NVML does not
//! report is `N/A`, not `0`, on the panels and in `--once`; one whose VRAM is known for
//! some processes only shows what is known, marked `+` (at least that much). Through the
//! binary on the fake NVML, and on the TUI's frame.

use std::process::{Child, Command, Stdio};

use gpuwatch::source::GpuSource;
use serde_json::{Value, json};

use crate::common;
use crate::common::real;

/// A process of this test's user for the fake NVML to list; killed and reaped on drop.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Self {
        let child = Command::new("sleep")
            .arg("300")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        Sleeper(child)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_owner_whose_processes_report_no_vram_is_na_in_once_json_text_and_query() {
    let (a, b) = (Sleeper::start(), Sleeper::start());
    let dir = tempfile::tempdir().unwrap();
    // Two processes of one user, neither with a VRAM figure (NVML_VALUE_NOT_AVAILABLE).
    let scenario = real::scenario(dir.path(), json!([{"pid": a.0.id()}, {"pid": b.0.id()}]));
    let (doc, _) = real::json_doc(real::gpuwatch(&scenario, None).args(["--once", "--json"]));
    let procs: Vec<&Value> = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"] == json!(a.0.id()) || p["pid"] == json!(b.0.id()))
        .collect();
    assert_eq!(procs.len(), 2, "{doc}");
    for p in &procs {
        assert_eq!(p["used_gpu_memory"], Value::Null, "{p}");
    }
    let user = procs[0]["user"]
        .as_str()
        .expect("the test's own process")
        .to_string();

    let (text, _) = real::output(real::gpuwatch(&scenario, None).arg("--once"));
    assert!(
        text.contains(&format!("{user} N/A")),
        "owner's VRAM unknown:\n{text}"
    );
    assert!(!text.contains(&format!("{user} 0")), "not zero:\n{text}");

    let (csv, _) = real::output(real::gpuwatch(&scenario, None).args([
        "query",
        "--query-compute-apps=pid,used_memory",
        "--format=csv,noheader",
    ]));
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(", [N/A]")).count(),
        2,
        "{csv}"
    );
}

/// The panels' owners: all unknown → `N/A`; some unknown → the known sum with `+`.
#[test]
fn owners_on_the_panels_say_na_and_partial_sums() {
    let mut sample = common::sim(1).sample().unwrap();
    let gpu = sample.gpus[0].id.clone();
    let on_gpu = |p: &gpuwatch::reading::ProcReading| p.gpu == gpu;
    let user = |p: &gpuwatch::reading::ProcReading| p.details().map(|d| d.user.to_string());
    let mut users: Vec<String> = sample
        .processes
        .iter()
        .filter(|p| on_gpu(p))
        .filter_map(user)
        .collect();
    users.sort();
    users.dedup();
    // Every process of the first user loses its VRAM figure; the last user gets one more
    // process with none, beside the known ones.
    let (none, some) = (users[0].clone(), users.last().unwrap().clone());
    assert_ne!(none, some, "the demo's GPU 0 has two users: {users:?}");
    let mut extra = None;
    for p in sample.processes.iter_mut().filter(|p| on_gpu(p)) {
        if user(p).as_deref() == Some(none.as_str()) {
            p.gpu_memory = None;
        } else if user(p).as_deref() == Some(some.as_str()) && extra.is_none() {
            let mut q = p.clone();
            q.pid += 100_000;
            q.gpu_memory = None;
            extra = Some(q);
        }
    }
    sample.processes.push(extra.unwrap());
    let state = common::state_of_sample(sample, 200, 60);
    let frame = common::screen(&state, 200, 60);
    // Owners are named by job when there is one (`slurm 48121 (alice)`): find each by its sum.
    let g = &state.model.gpus()[0];
    let owners = gpuwatch::model::owners::owners(&state.model, g);
    let unknown: Vec<&String> = owners
        .iter()
        .filter(|(_, t)| t.value().is_none())
        .map(|(n, _)| n)
        .collect();
    let partial: Vec<&String> = owners
        .iter()
        .filter(|(_, t)| t.partial())
        .map(|(n, _)| n)
        .collect();
    assert!(!unknown.is_empty() && !partial.is_empty(), "{owners:?}");
    for name in unknown {
        assert!(frame.contains(&format!("{name} N/A")), "{name}:\n{frame}");
    }
    for name in partial {
        let shown = word_after(&frame, &format!("{name} "));
        assert!(
            shown.ends_with("G+") || shown.ends_with("M+"),
            "{shown:?}\n{frame}"
        );
    }
}

/// The word after `prefix` on the frame.
fn word_after(frame: &str, prefix: &str) -> String {
    let at = frame
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?}:\n{frame}"));
    frame[at + prefix.len()..]
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}
