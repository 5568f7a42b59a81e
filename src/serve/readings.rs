//! The native per-GPU series: every row of the field table (`source::fields`) as a metric in
//! base units, and the labels they carry. Pure; `None` readings produce no sample.

use crate::reading::GpuReading;
use crate::reading::fields::{self, Field};

use super::text::{Exposition, Family, Labels};

/// The native series of every row of the field table (`source::fields::TABLE`), in its order.
fn gpu_series() -> impl Iterator<Item = (Family, &'static Field)> {
    fields::TABLE.iter().filter_map(|f| {
        let n = f.native?;
        Some((
            Family {
                name: n.name,
                kind: n.kind,
                help: n.help,
            },
            f,
        ))
    })
}

/// Writes every native per-GPU series for every GPU that has the reading.
pub(super) fn write_gpu_series(
    e: &mut Exposition,
    gpus: &[GpuReading],
    labels: impl Fn(&GpuReading) -> Labels,
) {
    for (family, field) in gpu_series() {
        e.family(
            family,
            gpus.iter()
                .filter_map(|g| (field.get)(g).map(|v| (labels(g), v))),
        );
    }
}

/// The labels every native per-GPU series carries: `vendor` when known (`nvidia`, `amd`,
/// `intel`: one query or dashboard across a box's vendors can still tell them apart), and
/// `host` when the state holds several hosts' GPUs (`--remote`), whose indices would
/// otherwise collide.
pub(super) fn gpu_labels(g: &GpuReading) -> Labels {
    let mut labels = vec![
        ("gpu", g.index.to_string()),
        ("uuid", g.id.0.clone()),
        ("name", g.name.clone()),
    ];
    if let Some(vendor) = g.vendor {
        labels.push(("vendor", vendor.name().to_string()));
    }
    if let Some(host) = &g.host {
        labels.push(("host", host.clone()));
    }
    labels
}
