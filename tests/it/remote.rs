//! Watching several hosts: snapshots polled over HTTP from stand-in exporters on loopback
//! (each serves what `gpuwatch --once --json` prints), merged with every GPU tagged by host;
//! a host that refuses connections or answers garbage is shown with the reason and never
//! holds up the others; a host that comes back resumes. These run the real HTTP transport on
//! real time (every wait bounded); the polling schedule itself — backoff, timeouts, slow
//! hosts — is tested on a fake network and clock in `src/source/multi_tests.rs`.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpuwatch::model::warnings::WarningKind;
use gpuwatch::reading::{GpuStatus, Sample};
use gpuwatch::source::GpuSource;
use gpuwatch::source::multi::MultiSource;
use gpuwatch::state::{Msg, State, update};
use gpuwatch::ui::text::warning_line;

/// A one-route HTTP server on 127.0.0.1 that answers every request with `body()`.
struct Exporter {
    address: String,
    body: Arc<Mutex<String>>,
}

impl Exporter {
    fn start(body: String) -> Exporter {
        Exporter::answering("200 OK", "", body)
    }

    /// Answers with this status line and extra header lines (each ending in CRLF).
    fn answering(status: &'static str, headers: &'static str, body: String) -> Exporter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let body = Arc::new(Mutex::new(body));
        let shared = body.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                // Read the request head; the body of a GET is empty.
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let body = shared.lock().unwrap().clone();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Exporter { address, body }
    }
}

/// What `gpuwatch --demo --demo-gpus N --once --json` prints: a real snapshot document.
fn demo_snapshot(gpus: &str, seed: &str) -> String {
    let out = common::clean_command()
        .args([
            "--demo",
            "--demo-gpus",
            gpus,
            "--seed",
            seed,
            "--once",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// A port with nothing listening (bound, then released).
fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Samples until `ok` holds, for at most 10 s (the pollers run in the background).
fn sample_until(source: &mut MultiSource, ok: impl Fn(&Sample) -> bool) -> Sample {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = source.sample().unwrap();
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "never settled: {:?}", s.hosts);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn hosts_merge_and_a_bad_host_is_shown_with_its_reason() {
    let a = Exporter::start(demo_snapshot("2", "1"));
    let b = Exporter::start("<html>not a snapshot</html>".into());
    let dead = closed_port();
    let addresses = vec![a.address.clone(), b.address.clone(), dead.clone()];
    let mut multi = MultiSource::new(None, &addresses, Duration::from_millis(200));
    let s = sample_until(&mut multi, |s| {
        s.gpus.len() == 2
            && s.hosts
                .iter()
                .filter(|h| {
                    h.error
                        .as_deref()
                        .is_some_and(|e| e != "waiting for the first answer")
                })
                .count()
                == 2
    });
    // Three hosts on 127.0.0.1: the names keep their ports to stay apart.
    assert!(
        s.gpus
            .iter()
            .all(|g| g.host.as_deref() == Some(a.address.as_str())),
        "tagged with the host"
    );
    assert_eq!(s.gpus[1].label(), format!("{}:1", a.address));
    assert!(!s.processes.is_empty());
    let errors: Vec<String> = s.hosts.iter().filter_map(|h| h.error.clone()).collect();
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("not a gpuwatch snapshot")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.to_lowercase().contains("refused")),
        "{errors:?}"
    );

    // Through the state: both failing hosts are critical warnings; the GPUs are fine.
    let mut state = State::new(common::config());
    update(&mut state, Msg::Sample(Box::new(s)));
    let down: Vec<_> = state
        .model
        .warnings()
        .iter()
        .filter(|w| matches!(w.kind, WarningKind::HostDown { .. }))
        .collect();
    assert_eq!(down.len(), 2);
    assert!(
        down.iter()
            .all(|w| warning_line(w).contains("not answering") && w.gpu().is_none())
    );
    let text = common::screen(&state, 120, 40);
    assert!(text.contains("HOST") && text.contains(&a.address), "{text}");
    drop(b);
}

#[test]
fn a_host_that_stops_answering_keeps_its_gpus_as_lost_then_resumes() {
    let a = Exporter::start(demo_snapshot("1", "1"));
    let mut multi = MultiSource::new(
        None,
        std::slice::from_ref(&a.address),
        Duration::from_millis(100),
    );
    sample_until(&mut multi, |s| {
        s.gpus.len() == 1 && s.gpus[0].status == GpuStatus::Ok
    });
    *a.body.lock().unwrap() = "garbled".into();
    let s = sample_until(&mut multi, |s| s.hosts[0].error.is_some());
    assert_eq!(s.gpus.len(), 1, "the slot stays");
    assert_eq!(s.gpus[0].status, GpuStatus::Lost);
    assert!(s.processes.is_empty());
    *a.body.lock().unwrap() = demo_snapshot("1", "1");
    // Backoff is at most 2 × 100 ms × 2 here; it recovers on the next poll.
    sample_until(&mut multi, |s| {
        s.hosts[0].error.is_none() && s.gpus[0].status == GpuStatus::Ok
    });
}

#[test]
fn remote_processes_are_never_signalled_from_here() {
    let a = Exporter::start(demo_snapshot("2", "1"));
    let mut multi = MultiSource::new(
        None,
        std::slice::from_ref(&a.address),
        Duration::from_millis(100),
    );
    let s = sample_until(&mut multi, |s| !s.processes.is_empty());
    let mut state = State::new(gpuwatch::state::ViewConfig {
        current_uid: Some(0),
        ..common::config()
    });
    update(&mut state, Msg::Sample(Box::new(s)));
    update(
        &mut state,
        Msg::Action(gpuwatch::state::Action::SelectFirst),
    );
    update(
        &mut state,
        Msg::Action(gpuwatch::state::Action::Signal(
            gpuwatch::state::signal::Sig::Kill,
        )),
    );
    assert!(state.view.dialog.is_none());
    assert!(
        state
            .view
            .status
            .as_deref()
            .unwrap()
            .contains("runs on 127.0.0.1"),
        "{:?}",
        state.view.status
    );
}

#[test]
fn the_http_transport_gives_up_at_its_timeout() {
    // Connections queue in the backlog and the request is written, but nothing answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let started = Instant::now();
    let mut multi = MultiSource::new(
        None,
        std::slice::from_ref(&address),
        Duration::from_millis(100),
    );
    let s = sample_until(&mut multi, |s| {
        s.hosts[0].error.as_deref() != Some("waiting for the first answer")
    });
    assert_eq!(s.hosts[0].error.as_deref(), Some("no answer within 2s"));
    assert!(started.elapsed() < Duration::from_secs(8));
    drop(silent);
}

/// Issue 15, item 4: a hostile exporter's redirect is not followed (every watcher would
/// fetch the URL it names); the host is shown failing, and the reason says so.
#[test]
fn redirects_are_not_followed_and_the_reason_says_so() {
    let elsewhere = Exporter::start(demo_snapshot("1", "1"));
    let location: &'static str = Box::leak(
        format!("Location: http://{}/api/v1/snapshot\r\n", elsewhere.address).into_boxed_str(),
    );
    let hostile = Exporter::answering("302 Found", location, String::new());
    let mut multi = MultiSource::new(
        None,
        std::slice::from_ref(&hostile.address),
        Duration::from_millis(100),
    );
    let s = sample_until(&mut multi, |s| {
        s.hosts[0].error.as_deref() != Some("waiting for the first answer")
    });
    assert_eq!(
        s.hosts[0].error.as_deref(),
        Some(
            format!(
                "HTTP 302 redirect to http://{}/api/v1/snapshot not followed",
                elsewhere.address
            )
            .as_str()
        )
    );
    assert!(s.gpus.is_empty(), "nothing from the redirect's target");
}

/// Issue 15, item 6: a hosts file of 20,000 hosts is refused with one line naming the
/// file, the line and the limit — not a thread per host until spawning fails.
#[test]
fn a_hosts_file_past_the_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    let lines: String = (0..20_000)
        .map(|i| format!("10.0.{}.{}:9400\n", i / 250, i % 250))
        .collect();
    std::fs::write(&path, lines).unwrap();
    let out = common::clean_command()
        .args(["--hosts-file", path.to_str().unwrap(), "--once"])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert_eq!(
        err,
        format!(
            "gpuwatch: {}:1001: more than 1000 hosts: gpuwatch watches at most 1000 with \
             --remote/--hosts-file (for a larger fleet, let Prometheus scrape it and use --prometheus)\n",
            path.display()
        )
    );
}

#[test]
fn bad_remote_arguments_are_one_line_errors() {
    common::clean_command()
        .args(["--remote", "gpu1", "--once"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --remote: \"gpu1\" needs a port, e.g. gpu1:9400\n");
    common::clean_command()
        .args(["--with-local", "--demo", "--once"])
        .assert()
        .code(2)
        .stderr("gpuwatch: --with-local: only with --remote or --hosts-file\n");
}

#[test]
fn the_tui_watches_several_hosts_in_one_pane() {
    let Some(t) = common::tmux::Tmux::start("remote", 160, 50) else {
        return;
    };
    let a = Exporter::start(demo_snapshot("2", "1"));
    let dead = closed_port();
    let cmd = format!(
        "{} --remote {},{} --with-local --demo --demo-gpus 1",
        env!("CARGO_BIN_EXE_gpuwatch"),
        a.address,
        dead
    );
    t.send(&[&cmd, "Enter"]);
    let screen = t.wait_for(
        &format!("{}:1 · NVIDIA", a.address),
        Duration::from_secs(15),
    );
    assert!(
        screen.contains("0 · NVIDIA"),
        "the local GPU, unprefixed:\n{screen}"
    );
    let screen = t.wait_for("not answering", Duration::from_secs(15));
    assert!(screen.contains("HOST"), "{screen}");
    t.send(&["q"]);
    t.wait_restored();
}

#[test]
fn once_waits_for_the_first_answers() {
    let a = Exporter::start(demo_snapshot("2", "5"));
    let out = common::clean_command()
        .args(["--remote", &a.address, "--once", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["gpus"].as_array().unwrap().len(), 2, "{doc}");
    assert_eq!(doc["gpus"][0]["host"], "127.0.0.1");
}

/// Issue 20: `--once` text over two hosts names the host on every GPU, health and free-GPU
/// line; before, both hosts' GPUs were a bare `0`, `1`, … and the free line `free: 6,7,3`.
#[test]
fn once_text_names_the_host_on_every_gpu_health_and_free_line() {
    let a = Exporter::start(demo_snapshot("8", "1"));
    let b = Exporter::start(demo_snapshot("4", "2"));
    let out = common::clean_command()
        .args([
            "--remote",
            &format!("{},{}", a.address, b.address),
            "--once",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let (ha, hb) = (a.address.as_str(), b.address.as_str());
    let named = |line: &str| {
        let first = line.split_whitespace().next().unwrap_or("");
        first.starts_with(&format!("{ha}:")) || first.starts_with(&format!("{hb}:"))
    };
    let lines: Vec<&str> = text.lines().collect();
    let section = |title: &str| -> Vec<&str> {
        let start = lines.iter().position(|l| l.trim_start().starts_with(title));
        let start = start.unwrap_or_else(|| panic!("no {title} section:\n{text}"));
        lines[start + 1..]
            .iter()
            .take_while(|l| !l.is_empty())
            .copied()
            .collect()
    };
    let gpus = section("GPU  NAME");
    assert!(gpus.len() >= 12, "8 + 4 GPUs:\n{text}");
    for line in &gpus {
        assert!(named(line), "a GPU line without its host: {line:?}\n{text}");
    }
    assert!(
        gpus.iter()
            .any(|l| l.trim_start().starts_with(&format!("{hb}:3 ")))
    );
    let health = section("HEALTH");
    assert!(!health.is_empty(), "{text}");
    for line in &health {
        assert!(
            named(line),
            "a health line without its host: {line:?}\n{text}"
        );
    }
    let free = lines[0].split("free: ").nth(1).expect("a free list");
    assert!(free != "none", "the demo has free GPUs: {text}");
    for label in free.split(',') {
        assert!(
            named(label),
            "a free GPU without its host: {label:?}\n{text}"
        );
    }
}

/// A host still on an older gpuwatch (schema 1) is watched as before; one on a newer major
/// is shown down with a reason that names the version, not a parse error.
#[test]
fn an_old_host_is_read_and_a_newer_major_is_named() {
    let v1 = r#"{"schema_version": 1, "time": 1767603600.0,
        "host": {"hostname": "old", "driver_version": null, "cuda_version": null},
        "gpus": [{"id": "GPU-old", "index": 0, "name": "Tesla V100", "status": "ok",
                  "util": 12, "memory_used": 1024, "memory_total": 4096}],
        "processes": [], "warnings": [], "free_gpus": []}"#;
    let old = Exporter::start(v1.into());
    let mut v3: serde_json::Value = serde_json::from_str(&demo_snapshot("1", "1")).unwrap();
    v3["schema_version"] = 3.into();
    let newer = Exporter::start(v3.to_string());
    let addresses = vec![old.address.clone(), newer.address.clone()];
    let mut multi = MultiSource::new(None, &addresses, Duration::from_millis(200));
    let s = sample_until(&mut multi, |s| {
        s.gpus.iter().any(|g| g.status == GpuStatus::Ok)
            && s.hosts.iter().any(|h| {
                h.error
                    .as_deref()
                    .is_some_and(|e| e.contains("schema version 3"))
            })
    });
    let g = s.gpus.iter().find(|g| g.id.0 == "GPU-old").unwrap();
    assert_eq!(g.util.map(|u| u.0), Some(12));
    let err = s.hosts.iter().find_map(|h| h.error.clone()).unwrap();
    assert!(
        err.contains("is not one this gpuwatch reads (2.x, or 1)"),
        "{err}"
    );
}

/// 200 stand-in hosts on one thread: `live` answer with `body`, `slow` accept the connection
/// (the kernel's backlog) and never answer, `dead` are closed ports. Returns the addresses.
fn stand_in_fleet(body: String, live: usize, slow: usize, dead: usize) -> Vec<String> {
    let mut addresses = Vec::new();
    let mut listeners = Vec::new();
    for _ in 0..live {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        addresses.push(l.local_addr().unwrap().to_string());
        listeners.push(l);
    }
    for _ in 0..slow {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        addresses.push(l.local_addr().unwrap().to_string());
        // Kept open, never accepted, for the rest of the test process.
        std::mem::forget(l);
    }
    addresses.extend((0..dead).map(|_| closed_port()));
    let body: Arc<str> = body.into();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            for l in listeners {
                let l = tokio::net::TcpListener::from_std(l).unwrap();
                tokio::spawn(serve_forever(l, body.clone()));
            }
            std::future::pending::<()>().await
        })
    });
    addresses
}

async fn serve_forever(listener: tokio::net::TcpListener, body: Arc<str>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let body = body.clone();
        tokio::spawn(async move {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        });
    }
}

/// A `/proc/PID/status` field's number (kB for memory, a count for Threads).
fn proc_status(pid: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = text.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// CPU seconds (user + system) the process has used.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// Issue 13: the TUI over 200 stand-in hosts (150 answering, 25 hanging, 25 refusing) stays
/// responsive — a key is answered while dead hosts wait out their timeouts — and polls them
/// from a handful of threads (not one per host) in bounded memory. Prints threads, memory and
/// CPU (`GPUWATCH_BIN=target/release/gpuwatch cargo test --test it remote::two_hundred --
/// --nocapture` for a release build's numbers).
#[test]
fn two_hundred_hosts_keep_the_tui_responsive_on_a_few_threads() {
    let Some(t) = common::tmux::Tmux::start("remote200", 200, 60) else {
        return;
    };
    let addresses = stand_in_fleet(demo_snapshot("1", "3"), 150, 25, 25);
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, addresses.join("\n")).unwrap();
    // GPUWATCH_BIN measures another build (a release one), as scripts/overhead.sh does.
    let bin =
        std::env::var("GPUWATCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_gpuwatch").into());
    let cmd = format!("{bin} --hosts-file {}", hosts.display());
    t.send(&[&cmd, "Enter"]);
    t.wait_for("not answering", Duration::from_secs(30));
    let pid = t.child_pid();
    // While the hanging hosts time out again and again, keys are still answered.
    for _ in 0..3 {
        t.send(&["?"]);
        t.wait_for("Help — keys", Duration::from_secs(10));
        t.send(&["?"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while t.capture().contains("Help — keys") {
            assert!(Instant::now() < deadline, "help did not close");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let (cpu0, at0) = (cpu_seconds(&pid), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let cpu = (cpu_seconds(&pid) - cpu0) / at0.elapsed().as_secs_f64();
    let threads = proc_status(&pid, "Threads:");
    let rss_kib = proc_status(&pid, "VmRSS:");
    let peak_kib = proc_status(&pid, "VmHWM:");
    println!(
        "200 hosts: {threads} threads, RSS {} MiB (peak {} MiB), CPU {:.1} % of a core",
        rss_kib / 1024,
        peak_kib / 1024,
        cpu * 100.0
    );
    // A thread per host was 200+; the poller is one, the rest are the runtime's.
    assert!(threads < 40, "{threads} threads for 200 hosts");
    assert!(rss_kib < 256 * 1024, "RSS {rss_kib} KiB");
    t.send(&["q"]);
    t.wait_restored();
}
