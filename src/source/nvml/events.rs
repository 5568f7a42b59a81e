//! XID errors through NVML events: the loaded library together with one event set on which
//! every GPU that delivers critical XID events is registered, drained without waiting on the
//! sampler's blocking thread once per sample. Owns the library handle (the event set borrows
//! it, hence the self-referential cell) and the per-GPU XID tallies; reads nothing else.
//!
//! Why drain on the sampler's thread rather than wait on a thread of its own: the driver
//! queues events in the set between waits, so none is lost by waiting only once a second,
//! and an event is then attributed to the very sample that reports it (a `--once` run sees
//! an XID that happened before it started reading).

use std::collections::HashMap;
use std::time::SystemTime;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{EventSet, Nvml};

use crate::reading::health::XidTally;

/// At most this many events are taken per sample, so a storm of them cannot hold the
/// sampler; the rest wait in the set for the next sample.
const MAX_EVENTS_PER_SAMPLE: usize = 256;

/// NVML reports an XID it cannot name as 999 (nvml-wrapper's `XidError::Unknown`).
const UNKNOWN_XID: u64 = 999;

/// The event set and the GPUs (by UUID) registered on it, with what each delivered.
pub(super) struct Events<'nvml> {
    /// Whether the GPUs were registered yet (on the first sample, which knows their count).
    registered: bool,
    set: Option<EventSet<'nvml>>,
    tallies: HashMap<String, XidTally>,
}

self_cell::self_cell!(
    /// The NVML library and the XID event set registered on it.
    pub(super) struct Library {
        owner: Nvml,
        #[covariant]
        dependent: Events,
    }
);

impl Library {
    /// Takes the library; the GPUs are registered on the first `drain`.
    pub(super) fn open(nvml: Nvml) -> Library {
        Library::new(nvml, |_| Events {
            registered: false,
            set: None,
            tallies: HashMap::new(),
        })
    }

    pub(super) fn nvml(&self) -> &Nvml {
        self.borrow_owner()
    }

    /// Takes the events waiting in the set (without waiting for more) into the tallies,
    /// stamped `now`. The first call registers every one of the `count` GPUs that says it
    /// delivers critical XID events; one that cannot is not registered (its tally is `None`:
    /// unknown). Registering here rather than at open uses the sample's own device count.
    pub(super) fn drain(&mut self, count: u32, now: SystemTime) {
        self.with_dependent_mut(|nvml, events| {
            if !events.registered {
                *events = register(nvml, count);
            }
            let Some(set) = &events.set else { return };
            for _ in 0..MAX_EVENTS_PER_SAMPLE {
                let data = match set.wait(0) {
                    Ok(data) => data,
                    // Timeout: nothing waiting. Anything else: try again next sample.
                    Err(_) => break,
                };
                if !data.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
                    continue;
                }
                let code = match data.event_data {
                    Some(XidError::Value(v)) => v,
                    Some(XidError::Unknown) | None => UNKNOWN_XID,
                };
                // A GPU that cannot say its UUID any more cannot be told apart; skip it
                // rather than count it on the wrong board.
                if let Ok(uuid) = data.device.uuid()
                    && let Some(tally) = events.tallies.get_mut(&uuid)
                {
                    tally.record(code, now);
                }
            }
        });
    }

    /// The XID tally of the GPU with this UUID; `None` when it is not registered.
    pub(super) fn xid(&self, uuid: &str) -> Option<XidTally> {
        self.borrow_dependent().tallies.get(uuid).copied()
    }
}

/// Registers each XID-capable GPU on one set. nvml-wrapper frees the set when a
/// registration fails, so after a failure the set is rebuilt with the GPUs registered so far.
fn register(nvml: &Nvml, count: u32) -> Events<'_> {
    let mut events = Events {
        registered: true,
        set: None,
        tallies: HashMap::new(),
    };
    let mut registered: Vec<u32> = Vec::new();
    for index in (0..count).filter(|&i| xid_capable(nvml, i)) {
        let set = match events.set.take() {
            Some(set) => set,
            None => match nvml.create_event_set() {
                Ok(set) => set,
                Err(_) => return events,
            },
        };
        let added = nvml
            .device_by_index(index)
            .map_err(|e| e.into())
            .and_then(|d| d.register_events(EventTypes::CRITICAL_XID_ERROR, set));
        match added {
            Ok(set) => {
                registered.push(index);
                events.set = Some(set);
            }
            // The set is gone (or never reached the device): rebuild it without this GPU.
            Err(_) => events.set = register_all(nvml, registered.iter().copied()).ok(),
        }
    }
    if events.set.is_some() {
        for &index in &registered {
            if let Ok(uuid) = nvml.device_by_index(index).and_then(|d| d.uuid()) {
                events.tallies.insert(uuid, XidTally::NONE);
            }
        }
    }
    events
}

fn xid_capable(nvml: &Nvml, index: u32) -> bool {
    nvml.device_by_index(index)
        .and_then(|d| d.supported_event_types())
        .is_ok_and(|t| t.contains(EventTypes::CRITICAL_XID_ERROR))
}

/// A new set with every GPU in `indices` registered for critical XID events.
fn register_all(
    nvml: &Nvml,
    indices: impl Iterator<Item = u32>,
) -> Result<EventSet<'_>, NvmlError> {
    let mut set = nvml.create_event_set()?;
    for index in indices {
        let device = nvml.device_by_index(index)?;
        set = device
            .register_events(EventTypes::CRITICAL_XID_ERROR, set)
            .map_err(|e| e.error)?;
    }
    Ok(set)
}
