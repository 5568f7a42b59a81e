//! The field table is whole and consistent: one row per key, every name once, every JSON
//! name documented in the published schema; and a reading with every field set, which the
//! exporter and Prometheus round-trip tests share.

use std::collections::HashSet;
use std::time::{Duration, UNIX_EPOCH};

use super::*;
use crate::reading::health::{Health, RemappedRows, RetiredPages, Xid, XidTally};
use crate::reading::{GpuId, GpuReading};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// A GPU with every field of the table known, each to a value no other field has and that
/// survives DCGM's units (whole MiB, MHz, mJ): a round trip that mixes two fields up, or
/// loses one, shows.
pub(crate) fn every_field_known() -> GpuReading {
    let mut g = GpuReading::absent(GpuId("GPU-every-field".into()), 3, "NVIDIA H100");
    g.util = Some(Percent(29));
    g.memory_util = Some(Percent(17));
    g.memory_total = Some(Bytes(81_559 * Bytes::MIB));
    g.memory_used = Some(Bytes(40_000 * Bytes::MIB));
    g.memory_free = Some(Bytes(41_000 * Bytes::MIB));
    g.memory_reserved = Some(Bytes(559 * Bytes::MIB));
    g.temperature = Some(Celsius(61));
    g.temperature_slowdown = Some(Celsius(87));
    g.temperature_shutdown = Some(Celsius(92));
    g.power = Some(Watts(312.5));
    g.power_limit = Some(Watts(700.0));
    g.energy_joules = Some(1_234_567.125);
    g.fan = Some(Percent(43));
    g.sm_clock = Some(MegaHertz(1980));
    g.memory_clock = Some(MegaHertz(2619));
    g.sm_clock_max = Some(MegaHertz(1981));
    g.memory_clock_max = Some(MegaHertz(2620));
    g.graphics_clock = Some(MegaHertz(1740));
    g.graphics_clock_max = Some(MegaHertz(1985));
    g.video_clock = Some(MegaHertz(1635));
    g.pstate = Some(2);
    g.encoder_util = Some(Percent(5));
    g.decoder_util = Some(Percent(7));
    g.pcie_link_gen = Some(4);
    g.pcie_link_width = Some(8);
    g.pcie_link_gen_max = Some(5);
    g.pcie_link_width_max = Some(16);
    g.pcie_tx_per_second = Some(Bytes(123_456_789));
    g.pcie_rx_per_second = Some(Bytes(987_654_321));
    g.ecc_errors_uncorrected = Some(3);
    g.mig_enabled = Some(false);
    g.persistence_mode = Some(true);
    g.health = Health {
        memory_temperature: Some(Celsius(71)),
        pcie_replays: Some(11),
        ecc_corrected: Some(13),
        retired_pages: Some(RetiredPages {
            single_bit: 2,
            double_bit: 1,
            pending: true,
        }),
        remapped_rows: Some(RemappedRows {
            correctable: 19,
            uncorrectable: 23,
            pending: false,
            failed: true,
        }),
        xid: Some(XidTally {
            count: 4,
            last: Some(Xid {
                code: 79,
                at: UNIX_EPOCH + Duration::from_secs(1_767_603_590),
            }),
        }),
    };
    g
}

#[test]
fn every_key_has_one_row_and_every_name_is_used_once() {
    let keys: HashSet<Key> = TABLE.iter().map(|f| f.key).collect();
    assert_eq!(keys.len(), TABLE.len(), "a key with two rows");
    for f in TABLE {
        assert_eq!(field(f.key).key, f.key);
    }
    let names: Vec<&str> = metric_names().collect();
    let unique: HashSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a metric name used twice");
    for f in TABLE {
        assert!(
            f.native.is_some() || f.dcgm.is_some(),
            "{:?} has no series",
            f.key
        );
        if let Some(n) = f.native {
            assert!(n.name.starts_with("gpuwatch_gpu_"), "{}", n.name);
            // Prometheus' naming rule: a counter ends in `_total`, nothing else does.
            assert_eq!(n.kind == MetricKind::Counter, n.name.ends_with("_total"));
        }
        if let Some(d) = f.dcgm {
            assert!(d.name.starts_with("DCGM_FI_DEV_"), "{}", d.name);
        }
    }
}

#[test]
fn only_dcgms_xid_cannot_be_read_back() {
    let write_only: Vec<Key> = TABLE
        .iter()
        .filter(|f| f.set.is_none())
        .map(|f| f.key)
        .collect();
    assert_eq!(write_only, [Key::DcgmXid]);
}

#[test]
fn the_fixture_knows_every_field_and_the_setters_give_the_getters_back() {
    let full = every_field_known();
    for f in TABLE {
        let v = (f.get)(&full).unwrap_or_else(|| panic!("{:?} unknown", f.key));
        let Some(set) = f.set else { continue };
        // From nothing known: a nested reading's member alone comes back as it was.
        let mut g = GpuReading::absent(full.id.clone(), 0, "");
        set(&mut g, v);
        assert_eq!((f.get)(&g), Some(v), "{:?}", f.key);
    }
}

#[test]
fn dcgm_scales_are_whole_units_and_invert() {
    assert_eq!(Scale::Times(100.0).to_dcgm(0.29), 29.0);
    assert_eq!(Scale::Per(1_048_576.0).to_dcgm(1_572_864.0), 1.0);
    assert_eq!(Scale::Per(1e6).from_dcgm(1980.0), 1.98e9);
    assert_eq!(Scale::Times(1000.0).from_dcgm(1500.0), 1.5);
    assert_eq!(Scale::Same.to_dcgm(7.5), 7.5);
}

/// Every JSON name names a property of the GPU object in the published schema (a dotted
/// name: a property of that property's object).
#[test]
fn every_json_name_is_in_the_schema() {
    let text = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/gpuwatch-snapshot.schema.json"
    ));
    let schema: serde_json::Value = serde_json::from_str(text).expect("the schema is JSON");
    let gpu = &schema["$defs"]["gpu"];
    for f in TABLE {
        let Some(json) = f.json else { continue };
        let mut at = gpu;
        for part in json.name.split('.') {
            at = &at["properties"][part];
            assert!(
                at.is_object(),
                "{:?}: {} is not in the schema",
                f.key,
                json.name
            );
        }
    }
}

/// A member of the document is read back: every row with a JSON name has a setter, and no
/// two rows claim one member.
#[test]
fn every_json_member_is_one_rows_and_can_be_read_back() {
    let mut seen = HashSet::new();
    for f in TABLE {
        let Some(json) = f.json else { continue };
        assert!(f.set.is_some(), "{:?} is written and never read", f.key);
        assert!(seen.insert(json.name), "{} twice", json.name);
    }
}

/// The nvidia-smi names are unique, and each row's `Shown` fits its JSON unit's kind of
/// value (a 0-1 ratio shown as %, hertz as MHz).
#[test]
fn every_smi_name_is_one_rows() {
    let mut seen = HashSet::new();
    for f in TABLE {
        for smi in f.smi {
            for name in std::iter::once(&smi.name).chain(smi.aliases) {
                assert!(seen.insert(*name), "{name} twice");
            }
            let Some(json) = f.json else { continue };
            let fits = match smi.shown {
                Shown::Percent => json.scale == Scale::Times(100.0),
                Shown::MHz => json.scale == Scale::Per(1e6),
                _ => json.scale == Scale::Same,
            };
            assert!(fits, "{}: shown {:?}, JSON {:?}", smi.name, smi.shown, json);
        }
    }
}
