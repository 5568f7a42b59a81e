//! The query module's pure parts: request checking, `-i` matching, the catalogue's
//! consistency with the field table, and rendering a model as nvidia-smi would.

use super::*;
use crate::reading::fields::TABLE;
use gpu_fields::Get;
use std::time::SystemTime;

fn args(gpu: Option<&str>) -> QueryArgs {
    QueryArgs {
        query_gpu: gpu.map(str::to_string),
        query_compute_apps: None,
        format: None,
        list_gpus: false,
        id: None,
        loop_sec: None,
        loop_ms: None,
        filename: None,
    }
}

#[test]
fn every_name_and_alias_is_one_fields_and_table_keys_have_rows() {
    let mut seen = std::collections::HashSet::new();
    for f in gpu_fields::GPU_FIELDS {
        for name in std::iter::once(&f.name).chain(f.aliases) {
            assert!(seen.insert(*name), "{name} twice");
        }
        if let Get::Table(key, _) = f.get {
            assert!(TABLE.iter().any(|row| row.key == key), "{}", f.name);
        }
    }
    let mut seen = std::collections::HashSet::new();
    for f in app_fields::APP_FIELDS {
        for name in std::iter::once(&f.name).chain(f.aliases) {
            assert!(seen.insert(*name), "{name} twice");
        }
    }
}

#[test]
fn loops_parse_in_seconds_or_milliseconds_with_a_floor() {
    let mut a = args(Some("index"));
    a.loop_sec = Some("2".into());
    assert_eq!(request(&a).unwrap().every, Some(Duration::from_secs(2)));
    a.loop_sec = None;
    a.loop_ms = Some("250".into());
    assert_eq!(request(&a).unwrap().every, Some(Duration::from_millis(250)));
    a.loop_ms = Some("50".into());
    assert_eq!(request(&a).unwrap_err().0, "--loop-ms");
    a.loop_ms = Some("x".into());
    assert!(request(&a).unwrap_err().1.contains("whole number"));
}

#[test]
fn bus_ids_match_whatever_the_domains_width_and_case() {
    assert_eq!(ids::bus_key("00000000:3B:00.0"), "0:3b:00.0");
    assert_eq!(ids::bus_key("0000:3b:00.0"), "0:3b:00.0");
    assert_eq!(ids::bus_key("3B:00.0"), "0:3b:00.0");
    assert_eq!(ids::bus_key("0001:3B:00.0"), "1:3b:00.0");
}

#[test]
fn field_table_readings_are_written_in_nvidia_smis_units() {
    use crate::reading::{GpuId, GpuReading};
    use crate::units::{Bytes, MegaHertz, Percent, Watts};
    let mut g = GpuReading::absent(GpuId("GPU-1".into()), 0, "x");
    g.memory_used = Some(Bytes(58071 * Bytes::MIB + Bytes::MIB - 1));
    g.util = Some(Percent(29));
    g.power = Some(Watts(71.286));
    g.sm_clock = Some(MegaHertz(1410));
    g.pstate = Some(8);
    let shown = |key, how| gpu_fields::shown(key, how, &g);
    use crate::reading::fields::Key;
    use gpu_fields::Shown;
    assert_eq!(shown(Key::MemoryUsed, Shown::MiB).as_deref(), Some("58071"));
    assert_eq!(shown(Key::Util, Shown::Percent).as_deref(), Some("29"));
    assert_eq!(shown(Key::Power, Shown::Watts).as_deref(), Some("71.29"));
    assert_eq!(shown(Key::SmClock, Shown::MHz).as_deref(), Some("1410"));
    assert_eq!(shown(Key::Pstate, Shown::Pstate).as_deref(), Some("P8"));
    assert_eq!(shown(Key::Fan, Shown::Percent), None, "absent is not 0");
}

#[test]
fn timestamps_are_local_time_to_the_millisecond() {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_195_400_123);
    let plus_one = chrono::FixedOffset::east_opt(3600).unwrap();
    assert_eq!(
        gpu_fields::timestamp(t, plus_one),
        "2026/12/02 08:10:00.123"
    );
}
