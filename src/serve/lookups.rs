//! The outside lookups' series: whether the kubelet, the engines and Slurm answered the
//! latest call, and how many calls failed, by `kind`. Absent where no lookup is made (not a
//! Kubernetes node), so an alert on `gpuwatch_lookup_up == 0` fires only where one failed.
//! Pure: reads the model's host facts.

use crate::reading::lookup::LookupState;
use crate::state::State;

use super::text::{Exposition, Family, Kind};

const LOOKUP_UP: Family = Family {
    name: "gpuwatch_lookup_up",
    kind: Kind::Gauge,
    help: "1 when the latest call of this outside lookup (kind: kubelet, docker, podman, slurm) answered, 0 when it failed (the JSON's lookups[].error and stderr say why).",
};
const LOOKUP_ERRORS: Family = Family {
    name: "gpuwatch_lookup_errors_total",
    kind: Kind::Counter,
    help: "Calls of this outside lookup (kind: kubelet, docker, podman, slurm) that failed since gpuwatch started.",
};

pub(super) fn render(e: &mut Exposition, state: &State) {
    let lookups = &state.model.host().lookups;
    let kind = |l: &crate::reading::lookup::LookupStatus| vec![("kind", l.kind.name().to_string())];
    e.family(
        LOOKUP_UP,
        lookups
            .iter()
            .map(|l| (kind(l), f64::from(u8::from(l.state == LookupState::Ok)))),
    );
    e.family(
        LOOKUP_ERRORS,
        lookups.iter().map(|l| (kind(l), l.errors as f64)),
    );
}
