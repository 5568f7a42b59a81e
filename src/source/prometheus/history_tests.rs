//! The window built from the range answers: one point per step, sorted, whichever order the
//! charts' points come in; gpuwatch's own series over dcgm-exporter's; no MIG instance.

use serde_json::json;

use super::*;

/// Answers each chart's range query with `answer(chart's query)`.
struct Charts(fn(&str) -> serde_json::Value);

impl Api for Charts {
    fn get(&self, path: &str) -> Result<String, String> {
        let result = (self.0)(path);
        Ok(
            json!({"status": "success", "data": {"resultType": "matrix", "result": result}})
                .to_string(),
        )
    }
}

fn values(points: &[(u64, f64)]) -> serde_json::Value {
    points
        .iter()
        .map(|(t, v)| json!([*t as f64, v.to_string()]))
        .collect()
}

fn fetch(answer: fn(&str) -> serde_json::Value) -> HashMap<GpuId, Vec<HistoryPoint>> {
    let mut window = Window::new(Duration::from_secs(1), Duration::from_secs(300));
    window.fetch(&Charts(answer), "", 1000.0).unwrap()
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn column(points: &[HistoryPoint], key: Key) -> Vec<(SystemTime, Option<f64>)> {
    points.iter().map(|p| (p.time(), p.get(key))).collect()
}

#[test]
fn the_charts_points_meet_in_one_sorted_point_per_step() {
    let points = fetch(|path| {
        let uuid = json!({"uuid": "GPU-a"});
        if path.contains("temperature") {
            json!([{"metric": uuid, "values": values(&[(901, 61.0), (902, 62.0), (903, 63.0)])}])
        } else if path.contains("power") {
            // Out of order, into the steps the temperature's chart made: still one point
            // per step, oldest first.
            json!([{"metric": uuid, "values": values(&[(904, 304.0), (902, 300.0)])}])
        } else {
            json!([])
        }
    });
    let a = &points[&GpuId("GPU-a".into())];
    assert_eq!(
        column(a, Key::Temperature),
        [
            (at(901), Some(61.0)),
            (at(902), Some(62.0)),
            (at(903), Some(63.0)),
            (at(904), None)
        ]
    );
    assert_eq!(
        column(a, Key::Power),
        [
            (at(901), None),
            (at(902), Some(300.0)),
            (at(903), None),
            (at(904), Some(304.0))
        ]
    );
    assert_eq!(a[0].get(Key::Util), None, "a chart with no series is a gap");
}

#[test]
fn gpuwatch_series_win_over_dcgm_exporter_ones_for_the_same_gpu() {
    let points = fetch(|path| {
        if !path.contains("temperature") {
            return json!([]);
        }
        // dcgm-exporter's series of GPU-a come first and have a step gpuwatch's lacks: none
        // of them is taken. GPU-b has only dcgm-exporter's; a MIG instance's is not a GPU's.
        json!([
            {"metric": {"UUID": "GPU-a"}, "values": values(&[(900, 1.0), (901, 2.0)])},
            {"metric": {"UUID": "GPU-b"}, "values": values(&[(901, 50.0)])},
            {"metric": {"UUID": "GPU-b", "GPU_I_ID": "1"}, "values": values(&[(902, 9.0)])},
            {"metric": {"uuid": "GPU-a"}, "values": values(&[(901, 70.0)])},
        ])
    });
    assert_eq!(
        column(&points[&GpuId("GPU-a".into())], Key::Temperature),
        [(at(901), Some(70.0))]
    );
    assert_eq!(
        column(&points[&GpuId("GPU-b".into())], Key::Temperature),
        [(at(901), Some(50.0))]
    );
    assert_eq!(points.len(), 2);
}

/// 8,000 GPUs × 300 steps: the window's points were grown by doubling, room for 512 a GPU.
#[test]
fn a_gpus_points_take_the_room_of_its_steps_only() {
    let points = fetch(|path| {
        let steps: Vec<(u64, f64)> = (701..=1000).map(|t| (t, 1.0)).collect();
        if path.contains("temperature") || path.contains("power") {
            json!([{"metric": {"uuid": "GPU-a"}, "values": values(&steps)}])
        } else {
            json!([])
        }
    });
    let a = &points[&GpuId("GPU-a".into())];
    assert_eq!((a.len(), a.capacity()), (300, 300));
}
