//! The cost of one `--prometheus` refresh at fleet scale: a stand-in Prometheus API on
//! 127.0.0.1 answers canned results for HOSTS × 8 GPUs (half gpuwatch exporters with their
//! full native series, half dcgm-exporter), and the real source (ureq, JSON, mapping) plus
//! the state update run against it. Prints wall and CPU time of the refreshing thread per
//! refresh (the first fetches the whole history window, later ones one step) and memory.
//!
//! cargo run --release --example prometheus_scale [-- HOSTS REFRESHES]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use gpuwatch::source::GpuSource;
use gpuwatch::source::prometheus::PrometheusSource;
use gpuwatch::source::prometheus::api::{Auth, HttpApi};
use gpuwatch::state::{Msg, State, ViewConfig, update};
use serde_json::json;

const GPUS: usize = 8;
/// gpuwatch's exporter writes these per GPU (readings.rs) besides info and lost.
const NATIVE: &[(&str, f64)] = &[
    ("gpuwatch_gpu_info", 1.0),
    ("gpuwatch_gpu_lost", 0.0),
    ("gpuwatch_gpu_utilization_ratio", 0.93),
    ("gpuwatch_gpu_memory_utilization_ratio", 0.41),
    ("gpuwatch_gpu_memory_total_bytes", 85_520_809_984.0),
    ("gpuwatch_gpu_memory_used_bytes", 73_014_444_032.0),
    ("gpuwatch_gpu_memory_free_bytes", 11_916_017_664.0),
    ("gpuwatch_gpu_memory_reserved_bytes", 590_348_288.0),
    ("gpuwatch_gpu_temperature_celsius", 71.0),
    ("gpuwatch_gpu_slowdown_temperature_celsius", 94.0),
    ("gpuwatch_gpu_shutdown_temperature_celsius", 98.0),
    ("gpuwatch_gpu_power_watts", 612.4),
    ("gpuwatch_gpu_power_limit_watts", 700.0),
    ("gpuwatch_gpu_energy_joules_total", 91_234_567.0),
    ("gpuwatch_gpu_fan_speed_ratio", 0.6),
    ("gpuwatch_gpu_sm_clock_hertz", 1.98e9),
    ("gpuwatch_gpu_memory_clock_hertz", 2.619e9),
    ("gpuwatch_gpu_sm_clock_max_hertz", 1.98e9),
    ("gpuwatch_gpu_memory_clock_max_hertz", 2.619e9),
    ("gpuwatch_gpu_performance_state", 0.0),
    ("gpuwatch_gpu_encoder_utilization_ratio", 0.0),
    ("gpuwatch_gpu_decoder_utilization_ratio", 0.0),
    ("gpuwatch_gpu_pcie_link_generation", 5.0),
    ("gpuwatch_gpu_pcie_link_width", 16.0),
    ("gpuwatch_gpu_pcie_transmit_bytes_per_second", 1.2e9),
    ("gpuwatch_gpu_pcie_receive_bytes_per_second", 3.4e9),
    ("gpuwatch_gpu_ecc_uncorrected_errors_total", 0.0),
    ("gpuwatch_gpu_mig_enabled", 0.0),
];
/// dcgm-exporter's default DEV counters that gpuwatch reads.
const DCGM: &[(&str, f64)] = &[
    ("DCGM_FI_DEV_SM_CLOCK", 1410.0),
    ("DCGM_FI_DEV_MEM_CLOCK", 1593.0),
    ("DCGM_FI_DEV_GPU_TEMP", 66.0),
    ("DCGM_FI_DEV_POWER_USAGE", 301.5),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 123_456_789.0),
    ("DCGM_FI_DEV_GPU_UTIL", 87.0),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", 40.0),
    ("DCGM_FI_DEV_ENC_UTIL", 0.0),
    ("DCGM_FI_DEV_DEC_UTIL", 0.0),
    ("DCGM_FI_DEV_FB_FREE", 10_960.0),
    ("DCGM_FI_DEV_FB_USED", 30_000.0),
];

fn native_labels(host: usize, gpu: usize) -> serde_json::Value {
    json!({"instance": format!("10.1.{}.{}:9401", host / 250, host % 250), "job": "gpuwatch",
           "gpu": gpu.to_string(), "uuid": format!("GPU-n{host:04}-{gpu}"),
           "name": "NVIDIA H100 80GB HBM3", "cluster": "a"})
}

fn dcgm_labels(host: usize, gpu: usize) -> serde_json::Value {
    json!({"instance": format!("10.2.{}.{}:9400", host / 250, host % 250), "job": "dcgm",
           "gpu": gpu.to_string(), "UUID": format!("GPU-d{host:04}-{gpu}"),
           "device": format!("nvidia{gpu}"), "modelName": "NVIDIA A100-SXM4-80GB",
           "Hostname": format!("node{host:04}"), "pci_bus_id": "00000000:17:00.0",
           "DCGM_FI_DRIVER_VERSION": "550.54.15", "cluster": "a"})
}

fn with_name(labels: &serde_json::Value, name: &str) -> serde_json::Value {
    let mut l = labels.clone();
    l["__name__"] = name.into();
    l
}

/// The instant answer: every series of every GPU, at `time`.
fn instant(hosts: usize) -> String {
    let mut result = Vec::new();
    for h in 0..hosts {
        for g in 0..GPUS {
            let (labels, table) = if h % 2 == 0 {
                (native_labels(h, g), NATIVE)
            } else {
                (dcgm_labels(h, g), DCGM)
            };
            for (name, v) in table {
                result.push(
                    json!({"metric": with_name(&labels, name), "value": [0.0, v.to_string()]}),
                );
            }
        }
        result.push(
            json!({"metric": {"__name__": "up", "instance": format!("h{h}")}, "value": [0.0, "1"]}),
        );
    }
    json!({"status": "success", "data": {"resultType": "vector", "result": result}}).to_string()
}

/// A range answer with `points` steps per GPU (expressions drop `__name__`, as PromQL does);
/// without `dcgm`, the gpuwatch exporters' GPUs only (a series dcgm-exporter does not have).
fn range(hosts: usize, points: usize, dcgm: bool) -> String {
    let values: Vec<serde_json::Value> = (0..points).map(|i| json!([i as f64, "42"])).collect();
    let mut result = Vec::new();
    for h in (0..hosts).filter(|h| dcgm || h % 2 == 0) {
        for g in 0..GPUS {
            let labels = if h % 2 == 0 {
                native_labels(h, g)
            } else {
                dcgm_labels(h, g)
            };
            result.push(json!({"metric": labels, "values": values}));
        }
    }
    json!({"status": "success", "data": {"resultType": "matrix", "result": result}}).to_string()
}

/// Each charted field's reading in its whole-window answer (`fields::CHARTED`'s order, base
/// units), with the precision exporters give: how narrow a history's columns can be depends
/// on it (a whole percent, °C and MHz in 2 bytes; milliwatts, bytes in 4).
const WINDOW_VALUES: [&str; 9] = [
    "0.93",
    "0.41",
    "73014444032",
    "71",
    "612.457",
    "1980000000",
    "2619000000",
    "1264196608",
    "3400000000",
];

/// Serves the canned answers: instant queries get `instant`; the first refresh's range
/// queries (one per charted field, in `fields::CHARTED`'s order) `windows`, later ones one
/// step each, `step`, or `native` for the PCIe charts, which only gpuwatch's exporter has
/// series for (dcgm-exporter's GPUs fill 7 of the 9 charted fields).
fn stand_in(instant: String, windows: Vec<String>, step: String, native: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let ranges_served = Arc::new(Mutex::new(0usize));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = if first.contains("query_range") {
                let mut n = ranges_served.lock().unwrap();
                *n += 1;
                if *n <= windows.len() {
                    &windows[*n - 1]
                } else if first.contains("pcie") {
                    &native
                } else {
                    &step
                }
            } else {
                &instant
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    address
}

/// CPU time (user + system) of the calling thread.
fn thread_cpu() -> Duration {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn status_mib(field: &str) -> f64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = text.lines().find(|l| l.starts_with(field)).unwrap();
    let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024.0
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let hosts = args.first().copied().unwrap_or(1000);
    let refreshes = args.get(1).copied().unwrap_or(10);
    let (i, s, native) = (
        instant(hosts),
        range(hosts, 1, true),
        range(hosts, 1, false),
    );
    let templates = [range(hosts, 300, true), range(hosts, 300, false)];
    let windows: Vec<String> = WINDOW_VALUES
        .iter()
        .enumerate()
        .map(|(k, v)| templates[usize::from(k >= 7)].replace("\"42\"", &format!("\"{v}\"")))
        .collect();
    drop(templates);
    let window_bytes: usize = windows.iter().map(String::len).sum();
    println!(
        "{hosts} hosts × {GPUS} GPUs: instant answer {:.1} MB, first range answers {:.1} MB in all, later 9 × {:.1} MB or less",
        i.len() as f64 / 1e6,
        window_bytes as f64 / 1e6,
        s.len() as f64 / 1e6
    );
    let canned = (i.len() + window_bytes + s.len() + native.len()) as f64 / 1_048_576.0;
    let address = stand_in(i, windows, s, native);
    // Building the canned answers left freed memory that glibc keeps; give it back first, as
    // the source does after a large refresh, so the baseline is what the process holds.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases the allocator's own free pages.
    unsafe {
        libc::malloc_trim(0);
    }
    let before = status_mib("VmRSS:");
    // The peak so far is the canned answers being built (their JSON trees); start it again
    // so the peak printed is the source's and the state's (Linux: "5" resets VmHWM).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let api = HttpApi::new(
        &format!("http://{address}"),
        &Auth::None,
        None,
        Duration::from_secs(60),
    )
    .unwrap();
    let tick = Arc::new(Mutex::new(SystemTime::now()));
    let clock = move || {
        let mut t = tick.lock().unwrap();
        *t += Duration::from_secs(1);
        *t
    };
    let mut source = PrometheusSource::new(
        Box::new(api),
        &address,
        r#"cluster="a""#,
        Duration::from_secs(1),
        Duration::from_secs(300),
        Box::new(clock),
    );
    // HISTORY_LEN=1 measures what is not the histories (readings, hosts, the state's maps).
    let history_len = std::env::var("HISTORY_LEN")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(ViewConfig::default().history_len);
    let mut state = State::new(ViewConfig {
        processes_known: false,
        history_len,
        ..ViewConfig::default()
    });
    for n in 0..=refreshes {
        let (wall, cpu) = (Instant::now(), thread_cpu());
        let sample = source.sample().unwrap();
        let (fetched_wall, fetched_cpu) = (wall.elapsed(), thread_cpu() - cpu);
        let gpus = sample.gpus.len();
        update(&mut state, Msg::Sample(Box::new(sample)));
        let (total_wall, total_cpu) = (wall.elapsed(), thread_cpu() - cpu);
        println!(
            "refresh {n:2}{}: {gpus} GPUs; source {:6.1} ms wall / {:6.1} ms CPU; with the state update {:6.1} ms / {:6.1} ms CPU",
            if n == 0 { " (whole window)" } else { "" },
            fetched_wall.as_secs_f64() * 1e3,
            fetched_cpu.as_secs_f64() * 1e3,
            total_wall.as_secs_f64() * 1e3,
            total_cpu.as_secs_f64() * 1e3,
        );
    }
    let histories = state.model.histories();
    let points: usize = histories.values().map(|h| h.len()).sum();
    let bytes: usize = histories.values().map(|h| h.heap_bytes()).sum();
    println!(
        "histories: {} GPUs, {points} points, {:.1} MiB of points ({:.1} bytes a point) + {:.1} MiB of structs",
        histories.len(),
        bytes as f64 / 1_048_576.0,
        bytes as f64 / points.max(1) as f64,
        (histories.len() * size_of::<gpuwatch::history::GpuHistory>()) as f64 / 1_048_576.0,
    );
    drop(histories);
    println!(
        "readings: {} bytes a GPU's, {:.1} MiB for one copy of the fleet's (strings aside)",
        size_of::<gpuwatch::reading::GpuReading>(),
        size_of_val(state.model.gpus()) as f64 / 1_048_576.0
    );
    println!(
        "memory: RSS {:.0} MiB before the source ({:.0} MiB of canned answers in the stand-in), {:.0} MiB after, peak {:.0} MiB since the source started",
        before,
        canned,
        status_mib("VmRSS:"),
        status_mib("VmHWM:")
    );
}
