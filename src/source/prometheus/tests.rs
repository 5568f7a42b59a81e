//! The Prometheus source on a scripted API: both exporters' series become readings in
//! gpuwatch's units, absent series stay `None`, history comes from one range query per chart,
//! and a host (or the server) that fails is shown lost while the rest updates.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::api::Api;
use super::*;
use crate::reading::{GpuId, Vendor};
use crate::units::{Bytes, Celsius, Percent, Watts};

/// Answers instant queries with `instant` and range queries with `range` (a function of the
/// query); records every path asked.
struct FakeApi {
    instant: Arc<Mutex<Result<String, String>>>,
    range: fn(&str) -> String,
    calls: Arc<Mutex<Vec<String>>>,
}

impl Api for FakeApi {
    fn get(&self, path: &str) -> Result<String, String> {
        self.calls.lock().unwrap().push(path.to_string());
        if path.starts_with("/api/v1/query_range") {
            Ok((self.range)(path))
        } else {
            self.instant.lock().unwrap().clone()
        }
    }
}

fn vector(series: &[(serde_json::Value, f64)]) -> String {
    let result: Vec<_> = series
        .iter()
        .map(|(m, v)| json!({"metric": m, "value": [1767603600.0, v.to_string()]}))
        .collect();
    json!({"status": "success", "data": {"resultType": "vector", "result": result}}).to_string()
}

fn empty_matrix(_: &str) -> String {
    json!({"status": "success", "data": {"resultType": "matrix", "result": []}}).to_string()
}

/// gpuwatch's native series for one GPU on the scrape target `instance`.
fn native(instance: &str, uuid: &str, gpu: u32) -> Vec<(serde_json::Value, f64)> {
    let l = |name: &str| {
        json!({"__name__": name, "instance": instance, "job": "gpuwatch",
               "gpu": gpu.to_string(), "uuid": uuid, "name": "NVIDIA H100 80GB HBM3"})
    };
    vec![
        (l("gpuwatch_gpu_info"), 1.0),
        (l("gpuwatch_gpu_utilization_ratio"), 0.42),
        (l("gpuwatch_gpu_memory_used_bytes"), 2.0 * 1073741824.0),
        (l("gpuwatch_gpu_memory_total_bytes"), 80.0 * 1073741824.0),
        (l("gpuwatch_gpu_temperature_celsius"), 61.0),
        (l("gpuwatch_gpu_power_watts"), 312.5),
        (l("gpuwatch_gpu_sm_clock_hertz"), 1.98e9),
        (l("gpuwatch_gpu_lost"), 0.0),
    ]
}

/// dcgm-exporter's series for one GPU (its units: %, MiB, MHz, mJ).
fn dcgm(hostname: &str, uuid: &str, gpu: u32) -> Vec<(serde_json::Value, f64)> {
    let l = |name: &str| {
        json!({"__name__": name, "instance": "10.0.0.9:9400", "job": "dcgm",
               "gpu": gpu.to_string(), "UUID": uuid, "modelName": "NVIDIA A100-SXM4-40GB",
               "Hostname": hostname, "DCGM_FI_DRIVER_VERSION": "550.54.15",
               "pod": "trainer-0", "namespace": "ml", "container": "main"})
    };
    vec![
        (l("DCGM_FI_DEV_GPU_UTIL"), 87.0),
        (l("DCGM_FI_DEV_FB_USED"), 1024.0),
        (l("DCGM_FI_DEV_FB_FREE"), 39_936.0),
        (l("DCGM_FI_DEV_GPU_TEMP"), 55.0),
        (l("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), 123_456.0),
    ]
}

fn source(instant: String, range: fn(&str) -> String) -> (PrometheusSource, FakeApi) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let instant = Arc::new(Mutex::new(Ok(instant)));
    let api = FakeApi {
        instant: instant.clone(),
        range,
        calls: calls.clone(),
    };
    let handle = FakeApi {
        instant,
        range,
        calls,
    };
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
    let tick = Arc::new(Mutex::new(start));
    let clock = move || {
        let mut t = tick.lock().unwrap();
        *t += Duration::from_secs(1);
        *t
    };
    let s = PrometheusSource::new(
        Box::new(api),
        "prom:9090",
        r#"cluster="a""#,
        Duration::from_secs(1),
        Duration::from_secs(300),
        Box::new(clock),
    );
    (s, handle)
}

#[test]
fn both_exporters_become_readings_in_gpuwatch_units() {
    let mut all = native("node1:9401", "GPU-n0", 0);
    all.extend(native("node1:9401", "GPU-n1", 1));
    all.extend(dcgm("node2", "GPU-d0", 0));
    let (mut src, _) = source(vector(&all), empty_matrix);
    let s = src.sample().unwrap();
    let ids: Vec<(&str, Option<&str>)> = s
        .gpus
        .iter()
        .map(|g| (g.id.0.as_str(), g.host.as_deref()))
        .collect();
    assert_eq!(
        ids,
        [
            ("GPU-n0", Some("node1")),
            ("GPU-n1", Some("node1")),
            ("GPU-d0", Some("node2"))
        ]
    );
    let n = &s.gpus[0];
    assert_eq!(n.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(n.util, Some(Percent(42)));
    assert_eq!(n.memory_used, Some(Bytes(2 << 30)));
    assert_eq!(n.memory_total, Some(Bytes(80 << 30)));
    assert_eq!(
        (n.temperature, n.power),
        (Some(Celsius(61)), Some(Watts(312.5)))
    );
    assert_eq!(n.sm_clock.map(|c| c.0), Some(1980));
    assert_eq!(n.status, GpuStatus::Ok);
    // What no series said stays unknown.
    assert_eq!(
        (n.fan, n.memory_free, n.pstate, n.throttle_reasons.as_ref()),
        (None, None, None, None)
    );
    let d = &s.gpus[2];
    assert_eq!(d.name, "NVIDIA A100-SXM4-40GB");
    assert_eq!(d.util, Some(Percent(87)));
    assert_eq!(d.memory_used, Some(Bytes::from_mib(1024)));
    assert_eq!(d.memory_total, Some(Bytes::from_mib(40_960)), "used + free");
    assert_eq!(d.energy_joules, Some(123.456));
    assert_eq!(d.power, None, "no power series");
    assert_eq!(d.allocations[0].pod, "trainer-0");
    assert!(s.processes.is_empty(), "no process series: none invented");
    let hosts: Vec<(&str, Option<&str>)> = s
        .hosts
        .iter()
        .map(|h| (h.name.as_str(), h.error.as_deref()))
        .collect();
    assert_eq!(hosts, [("node1", None), ("node2", None)]);
    assert_eq!(s.host.driver_version.as_deref(), Some("550.54.15"));
}

#[test]
fn one_instant_query_and_one_range_query_per_charted_field_carry_the_selector() {
    let mut all = Vec::new();
    for i in 0..50 {
        all.extend(native(&format!("node{i}:9401"), &format!("GPU-{i}"), 0));
    }
    let (mut src, api) = source(vector(&all), empty_matrix);
    src.sample().unwrap();
    let calls = api.calls.lock().unwrap().clone();
    // One range query per charted field (`fields::CHARTED`), not per GPU.
    assert_eq!(calls.len(), 10, "{calls:#?}");
    let decoded: Vec<String> = calls.iter().map(|c| decode(c)).collect();
    assert!(
        decoded[0].starts_with("/api/v1/query?query={__name__=~\"gpuwatch_gpu_info|"),
        "{}",
        decoded[0]
    );
    assert!(
        decoded[0].contains(r#"|up",cluster="a"}"#),
        "{}",
        decoded[0]
    );
    let charted = [
        "gpuwatch_gpu_utilization_ratio",
        "memory_utilization",
        "memory_used",
        "temperature",
        "power",
        "sm_clock",
        "memory_clock",
        "transmit",
        "receive",
    ];
    for (c, chart) in decoded[1..].iter().zip(charted) {
        assert!(c.starts_with("/api/v1/query_range?query=("), "{c}");
        assert!(c.contains(chart) && c.contains(r#"{cluster="a"}"#), "{c}");
    }
    // The first refresh asks for the whole window (300 one-second steps).
    let range = &decoded[1];
    let (start, end) = (param(range, "start"), param(range, "end"));
    assert_eq!(end - start, 299.0);
}

fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn param(path: &str, name: &str) -> f64 {
    let at = path.find(&format!("&{name}=")).unwrap() + name.len() + 2;
    path[at..].split('&').next().unwrap().parse().unwrap()
}

/// Two points for GPU-n0 (native) and one for GPU-d0 (dcgm) in every chart.
fn two_points(path: &str) -> String {
    let q = decode(path);
    let (start, end) = (param(&q, "start"), param(&q, "end"));
    let v = if q.contains("temperature") {
        60.0
    } else {
        50.0
    };
    json!({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"uuid": "GPU-n0"}, "values": [[start, v.to_string()], [end, (v + 1.0).to_string()]]},
        {"metric": {"UUID": "GPU-d0"}, "values": [[end, v.to_string()]]},
    ]}})
    .to_string()
}

#[test]
fn history_comes_from_the_range_queries_into_the_charts() {
    let mut all = native("node1:9401", "GPU-n0", 0);
    all.extend(dcgm("node2", "GPU-d0", 0));
    let (mut src, api) = source(vector(&all), two_points);
    let mut state = crate::state::State::new(crate::state::ViewConfig::default());
    let s = src.sample().unwrap();
    let kept = s.history.as_ref().unwrap();
    assert_eq!(kept[&GpuId("GPU-n0".into())].len(), 2);
    let p = &kept[&GpuId("GPU-n0".into())][1];
    use crate::reading::fields::{CHARTED, Key};
    assert_eq!(p.get(Key::Temperature), Some(61.0));
    // Every charted field is back-filled, the detail view's clocks and PCIe included.
    for key in CHARTED.into_iter().filter(|k| *k != Key::Temperature) {
        assert_eq!(p.get(key), Some(51.0), "{key:?}");
    }
    crate::state::update(&mut state, crate::state::Msg::Sample(Box::new(s)));
    let h = state.model.history(&GpuId("GPU-n0".into())).unwrap();
    let temps = |h: &crate::history::GpuHistory| -> Vec<Option<f64>> {
        h.points().iter().map(|p| p.get(Key::Temperature)).collect()
    };
    assert_eq!(temps(&h), [Some(60.0), Some(61.0)]);
    // The guard holds the shared histories; the next sample writes them.
    drop(h);
    // The next refresh asks only for the step since: start = last end + 1 s.
    let ends: Vec<f64> = api
        .calls
        .lock()
        .unwrap()
        .iter()
        .skip(1)
        .take(1)
        .map(|c| param(&decode(c), "end"))
        .collect();
    let s = src.sample().unwrap();
    let last = api.calls.lock().unwrap().last().cloned().unwrap();
    assert_eq!(param(&decode(&last), "start"), ends[0] + 1.0);
    crate::state::update(&mut state, crate::state::Msg::Sample(Box::new(s)));
    let h = state.model.history(&GpuId("GPU-n0".into())).unwrap();
    assert_eq!(
        h.points().len(),
        3,
        "the repeated start point is not charted twice"
    );
}

#[test]
fn a_vanished_host_is_lost_with_the_reason_and_the_rest_update() {
    let mut all = native("node1:9401", "GPU-n0", 0);
    all.extend(native("node2:9401", "GPU-m0", 0));
    let (mut src, api) = source(vector(&all), empty_matrix);
    src.sample().unwrap();
    let mut now = native("node1:9401", "GPU-n0", 0);
    now.push((
        json!({"__name__": "up", "instance": "node2:9401", "job": "gpuwatch"}),
        0.0,
    ));
    *api.instant.lock().unwrap() = Ok(vector(&now));
    let s = src.sample().unwrap();
    let status: Vec<(&str, GpuStatus)> =
        s.gpus.iter().map(|g| (g.id.0.as_str(), g.status)).collect();
    assert_eq!(
        status,
        [("GPU-n0", GpuStatus::Ok), ("GPU-m0", GpuStatus::Lost)]
    );
    assert_eq!(s.gpus[1].util, None);
    let down = s.hosts.iter().find(|h| h.name == "node2").unwrap();
    assert_eq!(
        down.error.as_deref(),
        Some("Prometheus cannot scrape node2:9401 (up = 0)")
    );

    // Prometheus itself stops answering: every GPU known is lost, the server says why.
    *api.instant.lock().unwrap() = Err("connection refused".into());
    let s = src.sample().unwrap();
    assert!(s.gpus.iter().all(|g| g.status == GpuStatus::Lost));
    assert_eq!(
        s.hosts[0].error.as_deref(),
        Some("Prometheus prom:9090: connection refused")
    );
}

#[test]
fn a_server_that_never_answered_is_a_source_error() {
    let (mut src, api) = source(String::new(), empty_matrix);
    *api.instant.lock().unwrap() = Err("connection refused".into());
    let err = src.sample().unwrap_err().to_string();
    assert_eq!(err, "Prometheus prom:9090: connection refused");
}

#[test]
fn selectors_are_checked() {
    assert_eq!(
        parse_selector(r#"{cluster="a", env=~"prod.*"}"#).unwrap(),
        r#"cluster="a", env=~"prod.*""#
    );
    assert_eq!(parse_selector("{}").unwrap(), "");
    assert!(
        parse_selector(r#"cluster="a""#)
            .unwrap_err()
            .contains("not a series selector")
    );
    assert!(parse_selector(r#"{a="}"}"#).is_err());
}

#[test]
fn the_vendor_label_is_read_back_and_dcgm_series_are_nvidias() {
    let with_vendor = |vendor: &str| {
        native("node1:9401", "AMD-1", 0)
            .into_iter()
            .map(|(mut labels, v)| {
                labels["vendor"] = json!(vendor);
                (labels, v)
            })
            .collect::<Vec<_>>()
    };
    let mut all = with_vendor("amd");
    all.extend(native("node1:9401", "GPU-old", 1));
    all.extend(with_vendor("riscv-future").into_iter().map(|(mut l, v)| {
        l["uuid"] = json!("X-2");
        l["gpu"] = json!("2");
        (l, v)
    }));
    all.extend(dcgm("node2", "GPU-d0", 0));
    let (mut src, _) = source(vector(&all), empty_matrix);
    let s = src.sample().unwrap();
    let vendor = |uuid: &str| s.gpus.iter().find(|g| g.id.0 == uuid).unwrap().vendor;
    assert_eq!(vendor("AMD-1"), Some(Vendor::Amd));
    assert_eq!(vendor("GPU-old"), None, "no label: unknown, not assumed");
    assert_eq!(vendor("X-2"), None, "a vendor this build does not know");
    assert_eq!(vendor("GPU-d0"), Some(Vendor::Nvidia), "dcgm-exporter's");
}

#[test]
fn series_with_gpu_i_id_become_the_gpus_mig_instances_not_its_readings() {
    // dcgm-exporter on a MIG GPU: the GPU's own framebuffer series, and per instance the
    // same names with GPU_I_ID/GPU_I_PROFILE (MiB); gpuwatch's own with mig_uuid (bytes).
    let mut all = dcgm("node2", "GPU-d0", 0);
    let inst = |name: &str, gi: &str, profile: &str| {
        json!({"__name__": name, "instance": "10.0.0.9:9400", "job": "dcgm", "gpu": "0",
               "UUID": "GPU-d0", "modelName": "NVIDIA A100-SXM4-40GB", "Hostname": "node2",
               "GPU_I_ID": gi, "GPU_I_PROFILE": profile})
    };
    all.extend([
        (inst("DCGM_FI_DEV_FB_USED", "1", "3g.20gb"), 19_456.0),
        (inst("DCGM_FI_DEV_FB_FREE", "1", "3g.20gb"), 1_024.0),
        (inst("DCGM_FI_DEV_FB_USED", "2", "1g.5gb"), 0.0),
        (inst("DCGM_FI_DEV_FB_FREE", "2", "1g.5gb"), 4_864.0),
    ]);
    let mut native = native("node1:9401", "GPU-n0", 0);
    let ours = |name: &str| {
        json!({"__name__": name, "instance": "node1:9401", "job": "gpuwatch", "gpu": "0",
               "uuid": "GPU-n0", "name": "NVIDIA H100 80GB HBM3", "GPU_I_ID": "5",
               "GPU_I_PROFILE": "2g.20gb", "mig_uuid": "MIG-9a8b7c6d-5e4f"})
    };
    native.extend([
        (ours("gpuwatch_mig_memory_used_bytes"), 8.0 * 1073741824.0),
        (ours("gpuwatch_mig_memory_total_bytes"), 20.0 * 1073741824.0),
    ]);
    all.extend(native);
    let (mut src, _) = source(vector(&all), empty_matrix);
    let s = src.sample().unwrap();
    let d = s.gpus.iter().find(|g| g.id.0 == "GPU-d0").unwrap();
    // The GPU's readings are its own series', untouched by the instances'.
    assert_eq!(d.memory_used, Some(Bytes::from_mib(1024)));
    assert_eq!(d.memory_total, Some(Bytes::from_mib(40_960)));
    assert_eq!(d.mig_enabled, Some(true));
    let migs: Vec<_> = d
        .mig_devices
        .iter()
        .map(|m| {
            (
                m.id.0.as_str(),
                m.gpu_instance_id,
                m.profile.as_deref(),
                m.memory_used,
                m.memory_total,
                m.util,
            )
        })
        .collect();
    assert_eq!(
        migs,
        [
            (
                "MIG-GPU-d0/1",
                Some(1),
                Some("3g.20gb"),
                Some(Bytes::from_mib(19_456)),
                Some(Bytes::from_mib(20_480)),
                None
            ),
            (
                "MIG-GPU-d0/2",
                Some(2),
                Some("1g.5gb"),
                Some(Bytes(0)),
                Some(Bytes::from_mib(4_864)),
                None
            ),
        ]
    );
    let n = s.gpus.iter().find(|g| g.id.0 == "GPU-n0").unwrap();
    assert_eq!(n.memory_used, Some(Bytes(2 << 30)), "the GPU's own");
    assert_eq!(n.mig_devices.len(), 1);
    assert_eq!(n.mig_devices[0].id.0, "MIG-9a8b7c6d-5e4f");
    assert_eq!(n.mig_devices[0].memory_total, Some(Bytes(20 << 30)));
}

/// Every row of the field table, written as the exporter writes it (native: the getter's
/// base-unit value; `--dcgm-compat`: in DCGM's unit) and read back through this source's
/// parser, gives the same reading: the health series included, which the source used to
/// leave unread (issue 21).
#[test]
fn every_field_round_trips_through_both_spellings() {
    use crate::reading::fields::{self, TABLE};
    let full = fields::tests::every_field_known();
    let native: Vec<(serde_json::Value, f64)> = TABLE
        .iter()
        .filter_map(|f| {
            let n = f.native?;
            let labels = json!({"__name__": n.name, "instance": "node1:9401", "job": "gpuwatch",
                                "gpu": "3", "uuid": full.id.0, "name": full.name});
            Some((labels, (f.get)(&full)?))
        })
        .collect();
    let dcgm: Vec<(serde_json::Value, f64)> = TABLE
        .iter()
        .filter_map(|f| {
            let d = f.dcgm?;
            let labels = json!({"__name__": d.name, "instance": "10.0.0.9:9400", "job": "dcgm",
                                "gpu": "3", "UUID": full.id.0, "modelName": full.name});
            Some((labels, d.scale.to_dcgm((f.get)(&full)?)))
        })
        .collect();
    for (spelling, series) in [("native", native), ("dcgm", dcgm)] {
        let (mut src, _) = source(vector(&series), empty_matrix);
        let s = src.sample().unwrap();
        assert_eq!(s.gpus.len(), 1, "{spelling}");
        let back = &s.gpus[0];
        let mut checked = 0;
        for f in TABLE.iter().filter(|f| f.set.is_some()) {
            let written = match spelling {
                "native" => f.native.is_some(),
                _ => f.dcgm.is_some(),
            };
            if written {
                assert_eq!((f.get)(back), (f.get)(&full), "{spelling} {:?}", f.key);
                checked += 1;
            }
        }
        assert!(checked >= 17, "{spelling}: only {checked} fields checked");
    }
}

/// A source on `api` whose clock moves `step` per refresh and whose history window is
/// `window`.
fn source_with(api: FakeApi, step: Duration, window: Duration) -> PrometheusSource {
    let tick = Arc::new(Mutex::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600),
    ));
    let clock = move || {
        let mut t = tick.lock().unwrap();
        *t += step;
        *t
    };
    let interval = Duration::from_secs(1);
    PrometheusSource::new(
        Box::new(api),
        "prom:9090",
        "",
        interval,
        window,
        Box::new(clock),
    )
}

fn fake(instant: String) -> (FakeApi, Arc<Mutex<Result<String, String>>>) {
    let instant = Arc::new(Mutex::new(Ok(instant)));
    let api = FakeApi {
        instant: instant.clone(),
        range: empty_matrix,
        calls: Arc::new(Mutex::new(Vec::new())),
    };
    (api, instant)
}

/// One `gpuwatch_gpu_info` series per GPU, `per_host` GPUs on each of `hosts`.
fn info_fleet(hosts: std::ops::Range<usize>, per_host: usize) -> String {
    let mut all = Vec::new();
    for h in hosts {
        for g in 0..per_host {
            let labels = json!({"__name__": "gpuwatch_gpu_info", "instance": format!("h{h}:9401"),
                "gpu": g.to_string(), "uuid": format!("GPU-{h}-{g}")});
            all.push((labels, 1.0));
        }
    }
    vector(&all)
}

/// Issue 26 §10: 100,000 GPUs in one answer took 80 s and 634 MB. The first `MAX_GPUS` are
/// shown, the rest left out and said once (not every refresh).
#[test]
fn gpus_beyond_the_bound_are_left_out_and_said_once() {
    let (api, _) = fake(info_fleet(0..(MAX_GPUS + 5), 1));
    let mut src = source_with(api, Duration::from_secs(1), Duration::from_secs(300));
    let s = src.sample().unwrap();
    assert_eq!(s.gpus.len(), MAX_GPUS);
    let said = src.notices();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0]
            .starts_with("Prometheus prom:9090: left out 5 series of GPUs beyond the first 10000"),
        "{}",
        said[0]
    );
    src.sample().unwrap();
    assert!(src.notices().is_empty(), "said once");
}

/// Issue 26 §10: hosts that came and went were remembered forever (81 → 294 MB in a minute
/// of churn). A vanished host is shown lost, then forgotten after `FORGET_AFTER`; and however
/// fast they churn, no more than `MAX_GPUS` GPUs are remembered.
#[test]
fn hosts_that_come_and_go_are_forgotten() {
    let (api, instant) = fake(info_fleet(0..1, 2));
    let mut src = source_with(api, FORGET_AFTER / 2, Duration::from_secs(300));
    src.sample().unwrap();
    *instant.lock().unwrap() = Ok(info_fleet(1..2, 2));
    let s = src.sample().unwrap();
    assert_eq!(s.gpus.len(), 4, "h0's GPUs shown lost for a while");
    let s = src.sample().unwrap();
    let hosts: Vec<&str> = s.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["h1"], "h0 forgotten after FORGET_AFTER");

    let (api, instant) = fake(String::new());
    let mut src = source_with(api, Duration::from_secs(1), Duration::from_secs(300));
    for round in 0..6 {
        let hosts = round * 1000..(round + 1) * 1000;
        *instant.lock().unwrap() = Ok(info_fleet(hosts, 4));
        let s = src.sample().unwrap();
        assert!(s.gpus.len() <= MAX_GPUS, "round {round}: {}", s.gpus.len());
    }
    let remembered: usize = src.known.values().map(|k| k.gpus.len()).sum();
    assert!(remembered <= MAX_GPUS, "{remembered}");
    assert!(src.known.contains_key("h5999"), "the newest are kept");
}

/// Issue 26 §10/§11: a million-second window asks for no more steps than a chart shows (a
/// real Prometheus refuses over 11,000 points; a hostile one sent a million).
#[test]
fn a_long_window_asks_for_what_a_chart_shows() {
    let (api, _) = fake(info_fleet(0..1, 1));
    let calls = api.calls.clone();
    let mut src = source_with(api, Duration::from_secs(1), Duration::from_secs(1_000_000));
    src.sample().unwrap();
    let range = decode(&calls.lock().unwrap()[1]);
    let steps = param(&range, "end") - param(&range, "start");
    assert_eq!(steps, (crate::reading::SHOWN_POINTS - 1) as f64);
}

/// Issue 21 §9: a GPU whose series carry no `gpu` label became index 0, beside the host's
/// real GPU 0 (`-i 0` and `--only 0` named two GPUs). It is numbered after the labelled
/// GPUs of its host, and that is said once.
#[test]
fn a_gpu_without_a_gpu_label_does_not_take_the_index_of_gpu_0() {
    let mut all = native("node1:9401", "GPU-n0", 0);
    all.extend(native("node1:9401", "GPU-n1", 1));
    let unlabelled: Vec<_> = native("node1:9401", "GPU-zz", 0)
        .into_iter()
        .map(|(mut m, v)| {
            m.as_object_mut().unwrap().remove("gpu");
            (m, v)
        })
        .collect();
    all.extend(unlabelled);
    // Another host's GPU 0 keeps its index: numbering is per host.
    all.extend(native("node2:9401", "GPU-m0", 0));
    let (mut src, _) = source(vector(&all), empty_matrix);
    let s = src.sample().unwrap();
    let index = |uuid: &str| {
        s.gpus
            .iter()
            .find(|g| g.id == GpuId(uuid.into()))
            .map(|g| (g.host.clone().unwrap(), g.index))
            .unwrap()
    };
    assert_eq!(index("GPU-n0"), ("node1".into(), 0));
    assert_eq!(index("GPU-n1"), ("node1".into(), 1));
    assert_eq!(
        index("GPU-zz"),
        ("node1".into(), 2),
        "after the labelled GPUs"
    );
    assert_eq!(index("GPU-m0"), ("node2".into(), 0));
    let z = s
        .gpus
        .iter()
        .find(|g| g.id == GpuId("GPU-zz".into()))
        .unwrap();
    assert_eq!(z.util, Some(Percent(42)), "its readings are its own");
    let said = src.notices();
    assert_eq!(
        said,
        vec![
            "node1: GPU GPU-zz has no `gpu` label (its index is unknown); shown as 2, after the GPUs whose index is known"
                .to_string()
        ]
    );
    src.sample().unwrap();
    assert!(src.notices().is_empty(), "said once");
}
