//! The fake's event sets: `nvmlEventSetCreate`, `nvmlDeviceRegisterEvents`,
//! `nvmlEventSetWait_v2`, `nvmlEventSetFree` and `nvmlDeviceGetSupportedEventTypes`.
//! A scenario GPU's `xid_events` become due at their tick; a wait hands out each due event
//! of a registered GPU once, in order, and otherwise sleeps out its timeout (outside the
//! lock) and answers TIMEOUT. Owns the per-set state and the `nvmlEventData_t` layout.

use std::ffi::{c_uint, c_ulonglong, c_void};
use std::time::Duration;

use crate::device::with_gpu;
use crate::scenario::Step;
use crate::{Device, ERROR_INVALID_ARGUMENT, SUCCESS, put, with_state};

/// nvmlEventTypeXidCriticalError.
const XID_CRITICAL: c_ulonglong = 8;
const ERROR_TIMEOUT: u32 = 10;
/// A wait sleeps at most this long, so a test with a long timeout cannot hang on the fake.
const MAX_WAIT: Duration = Duration::from_secs(1);

/// An opaque event set handle; the fake encodes its slot + 1.
pub type EventSet = *mut c_void;

/// `nvmlEventData_t`.
#[repr(C)]
pub struct EventData {
    device: Device,
    event_type: c_ulonglong,
    event_data: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// One created set: the GPUs registered on it and how many of each GPU's events it handed out.
#[derive(Debug, Default)]
pub(crate) struct SetState {
    /// (GPU index, event types registered).
    registered: Vec<(usize, c_ulonglong)>,
    /// Per GPU index, how many of its scenario events this set delivered.
    delivered: std::collections::BTreeMap<usize, usize>,
}

fn set_slot(set: EventSet) -> usize {
    (set as usize).wrapping_sub(1)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut EventSet) -> u32 {
    with_state("nvmlEventSetCreate", |s| {
        s.event_sets.push(Some(SetState::default()));
        let handle = std::ptr::without_provenance_mut(s.event_sets.len());
        // SAFETY: NVML's contract: `set` points to a handle slot.
        unsafe { put(set, handle) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetFree(set: EventSet) -> u32 {
    with_state("nvmlEventSetFree", |s| {
        match s.event_sets.get_mut(set_slot(set)).and_then(Option::take) {
            Some(_) => SUCCESS,
            None => ERROR_INVALID_ARGUMENT,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: Device,
    types: *mut c_ulonglong,
) -> u32 {
    with_gpu("nvmlDeviceGetSupportedEventTypes", device, |g, tick| {
        match g.field("supported_event_types", tick) {
            // SAFETY: NVML's contract: `types` points to an unsigned long long.
            Step::Value(v) => unsafe { put(types, v) },
            Step::Error(e) => e.code(),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: Device,
    types: c_ulonglong,
    set: EventSet,
) -> u32 {
    let index = (device as usize).wrapping_sub(1);
    // Registration needs an answering GPU that supports every type asked for.
    let supported = with_gpu("nvmlDeviceRegisterEvents", device, |g, tick| {
        match g.field("supported_event_types", tick) {
            Step::Value(v) if v & types == types => SUCCESS,
            Step::Value(_) => crate::ERROR_NOT_SUPPORTED,
            Step::Error(e) => e.code(),
        }
    });
    if supported != SUCCESS {
        return supported;
    }
    with_state("nvmlDeviceRegisterEvents", |s| {
        match s.event_sets.get_mut(set_slot(set)).and_then(Option::as_mut) {
            Some(state) => {
                state.registered.push((index, types));
                SUCCESS
            }
            None => ERROR_INVALID_ARGUMENT,
        }
    })
}

/// The next due, undelivered XID of a GPU registered on `set`, marked delivered:
/// (GPU index, XID). `Err` is a return code for a bad set.
fn take_due(set: EventSet) -> Result<Option<(usize, u64)>, u32> {
    let mut out = Ok(None);
    with_state("nvmlEventSetWait_v2", |s| {
        let tick = s.tick;
        let gpus = &s.scenario.gpus;
        let Some(state) = s.event_sets.get_mut(set_slot(set)).and_then(Option::as_mut) else {
            out = Err(ERROR_INVALID_ARGUMENT);
            return SUCCESS;
        };
        for &(index, types) in &state.registered {
            if types & XID_CRITICAL == 0 {
                continue;
            }
            let Some(gpu) = gpus.get(index) else { continue };
            let done = state.delivered.entry(index).or_default();
            if let Some(ev) = gpu.xid_events.get(*done).filter(|e| e.tick <= tick) {
                *done += 1;
                out = Ok(Some((index, ev.xid)));
                return SUCCESS;
            }
        }
        SUCCESS
    });
    out
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: EventSet,
    data: *mut EventData,
    timeout_ms: c_uint,
) -> u32 {
    if data.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    let mut due = take_due(set);
    if matches!(due, Ok(None)) && timeout_ms > 0 {
        std::thread::sleep(Duration::from_millis(timeout_ms.into()).min(MAX_WAIT));
        due = take_due(set);
    }
    match due {
        Ok(Some((index, xid))) => {
            let event = EventData {
                device: std::ptr::without_provenance_mut(index + 1),
                event_type: XID_CRITICAL,
                event_data: xid,
                gpu_instance_id: 0,
                compute_instance_id: 0,
            };
            // SAFETY: checked non-null; NVML's contract: it points to an nvmlEventData_t.
            unsafe { put(data, event) }
        }
        Ok(None) => ERROR_TIMEOUT,
        Err(code) => code,
    }
}
