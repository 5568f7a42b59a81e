//! A fake `libnvidia-ml.so.1` for tests: exports the NVML C functions gpuwatch calls
//! (through nvml-wrapper) and answers them from a JSON scenario. Owns the library-wide
//! state (scenario, tick, call counts) and the init/system/enumeration entry points;
//! per-device queries live in `device`. It must never be shipped or loaded outside tests.
//!
//! Where the scenario comes from, checked at every `nvmlInit*` (so one process can load
//! several scenarios one after another):
//! 1. the file named by `GPUWATCH_FAKE_NVML_SCENARIO`, else
//! 2. `scenario.json` in the folder holding this library file. Tests that load the fake
//!    inside their own process copy it into a temporary folder next to their scenario:
//!    each copy is a separate library to the dynamic loader, with its own state, so such
//!    tests can run in parallel without touching the process environment.
//!
//! nvml-wrapper resolves every symbol lazily (a missing one only fails the call that needs
//! it, as `FailedToLoadSymbol`), so the fake exports just what gpuwatch calls.
//! Layouts and return codes follow nvml.h as bound by nvml-wrapper-sys 0.10.

#![allow(non_snake_case)] // the exported names are NVML's.
#![allow(clippy::missing_safety_doc)] // every export has the contract of its nvml.h namesake.

mod device;
mod events;
mod gpm;
mod health;
mod legacy;
mod mig;
mod modes;
mod monitors;
mod processes;
mod scenario;

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use scenario::Scenario;

pub(crate) const SUCCESS: u32 = 0;
pub(crate) const ERROR_UNINITIALIZED: u32 = 1;
pub(crate) const ERROR_INVALID_ARGUMENT: u32 = 2;
pub(crate) const ERROR_NOT_SUPPORTED: u32 = 3;
pub(crate) const ERROR_NOT_FOUND: u32 = 6;
pub(crate) const ERROR_INSUFFICIENT_SIZE: u32 = 7;
pub(crate) const ERROR_FUNCTION_NOT_FOUND: u32 = 13;
pub(crate) const ERROR_GPU_IS_LOST: u32 = 15;
pub(crate) const ERROR_ARGUMENT_VERSION_MISMATCH: u32 = 25;
pub(crate) const ERROR_UNKNOWN: u32 = 999;

/// An opaque device handle, as NVML hands them out. The fake encodes the index + 1.
pub(crate) type Device = *mut c_void;

const SCENARIO_ENV: &str = "GPUWATCH_FAKE_NVML_SCENARIO";

pub(crate) struct State {
    pub scenario: Scenario,
    /// Number of `nvmlDeviceGetCount_v2` calls so far, minus one (the first sample is tick 0).
    pub tick: u64,
    count_calls: u64,
    /// Process-list calls so far this tick, per (GPU index, graphics list?): tells the size
    /// query (first call) from the fill call, for `Process::between_calls`.
    pub list_calls: BTreeMap<(usize, bool), u32>,
    calls: BTreeMap<&'static str, u64>,
    /// Event sets by handle - 1; `None` once freed.
    pub event_sets: Vec<Option<events::SetState>>,
    /// When `nvmlInit*` succeeded: the origin of wall-clock ticks (`Scenario::tick_ms`).
    started: std::time::Instant,
}

/// `None` until `nvmlInit*` succeeds and after `nvmlShutdown`, like the real library.
static STATE: Mutex<Option<State>> = Mutex::new(None);

pub(crate) fn lock() -> MutexGuard<'static, Option<State>> {
    // A panic inside an extern "C" function aborts the process, so poisoning cannot be
    // observed in practice; recover rather than add a second failure mode.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the initialised state, counting the call to `symbol`.
pub(crate) fn with_state(symbol: &'static str, f: impl FnOnce(&mut State) -> u32) -> u32 {
    let mut guard = lock();
    let Some(state) = guard.as_mut() else {
        return ERROR_UNINITIALIZED;
    };
    *state.calls.entry(symbol).or_default() += 1;
    if let Some(ms) = state.scenario.tick_ms.filter(|ms| *ms > 0) {
        state.tick = state.started.elapsed().as_millis() as u64 / ms;
    }
    f(state)
}

/// Writes `value` through an out-pointer, refusing null like NVML does.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> u32 {
    if out.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: the caller passes a pointer to writable storage for a T (NVML's contract).
    unsafe { out.write(value) };
    SUCCESS
}

/// Copies `text` into a caller buffer of `length` bytes, NUL-terminated.
pub(crate) unsafe fn put_str(buf: *mut c_char, length: c_uint, text: &str) -> u32 {
    if buf.is_null() {
        return ERROR_INVALID_ARGUMENT;
    }
    let bytes = text.as_bytes();
    if bytes.len() + 1 > length as usize {
        return ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: `buf` holds `length` bytes and we write `bytes.len() + 1 <= length` of them.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, bytes.len());
        buf.add(bytes.len()).write(0);
    }
    SUCCESS
}

fn scenario_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(SCENARIO_ENV) {
        return Ok(p.into());
    }
    // SAFETY: dladdr only reads the address and fills `info`; the name it returns points
    // into the loader's own tables, valid while this library is loaded.
    let own_file = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let addr = scenario_path as fn() -> Result<PathBuf, String> as *const c_void;
        if libc::dladdr(addr, &mut info) == 0 || info.dli_fname.is_null() {
            return Err(format!("{SCENARIO_ENV} is not set and dladdr failed"));
        }
        PathBuf::from(
            CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned(),
        )
    };
    Ok(own_file
        .parent()
        .map(|dir| dir.join("scenario.json"))
        .unwrap_or_else(|| "scenario.json".into()))
}

fn load_scenario() -> Result<Scenario, String> {
    let path = scenario_path()?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read scenario {}: {e}", path.display()))?;
    Scenario::parse(&text).map_err(|e| format!("bad scenario {}: {e}", path.display()))
}

fn init() -> u32 {
    let scenario = match load_scenario() {
        Ok(s) => s,
        Err(why) => {
            // The only channel a test double has to say why it refused to start.
            eprintln!("fake-nvml: {why}");
            return ERROR_UNKNOWN;
        }
    };
    if let Some(err) = scenario.init_error {
        return err.code();
    }
    let mut calls = BTreeMap::new();
    calls.insert("nvmlInit", 1);
    *lock() = Some(State {
        scenario,
        tick: 0,
        count_calls: 0,
        list_calls: BTreeMap::new(),
        calls,
        event_sets: Vec::new(),
        started: std::time::Instant::now(),
    });
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> u32 {
    init()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> u32 {
    init()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> u32 {
    let Some(mut state) = lock().take() else {
        return ERROR_UNINITIALIZED;
    };
    *state.calls.entry("nvmlShutdown").or_default() += 1;
    if let Some(path) = &state.scenario.calls_file {
        let json = serde_json::to_string_pretty(&state.calls).unwrap_or_default();
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("fake-nvml: cannot write {}: {e}", path.display());
        }
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: u32) -> *const c_char {
    let text: &'static CStr = match result {
        SUCCESS => c"Success",
        ERROR_UNINITIALIZED => c"Uninitialized",
        ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        ERROR_NOT_SUPPORTED => c"Not Supported",
        4 => c"Insufficient Permissions",
        ERROR_NOT_FOUND => c"Not Found",
        ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
        9 => c"Driver Not Loaded",
        ERROR_GPU_IS_LOST => c"GPU is lost",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> u32 {
    with_state("nvmlSystemGetDriverVersion", |s| {
        match s.scenario.driver_version.as_deref() {
            // SAFETY: NVML's contract: `version` holds `length` bytes.
            Some(v) => unsafe { put_str(version, length, v) },
            None => ERROR_NOT_SUPPORTED,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(version: *mut c_char, length: c_uint) -> u32 {
    with_state("nvmlSystemGetNVMLVersion", |s| {
        match s.scenario.nvml_version.as_deref() {
            // SAFETY: NVML's contract: `version` holds `length` bytes.
            Some(v) => unsafe { put_str(version, length, v) },
            None => ERROR_NOT_SUPPORTED,
        }
    })
}

fn cuda_version(symbol: &'static str, out: *mut c_int) -> u32 {
    with_state(symbol, |s| match s.scenario.cuda_version {
        // SAFETY: NVML's contract: `out` points to a c_int.
        Some(v) => unsafe { put(out, v) },
        None => ERROR_NOT_SUPPORTED,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(out: *mut c_int) -> u32 {
    cuda_version("nvmlSystemGetCudaDriverVersion", out)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(out: *mut c_int) -> u32 {
    cuda_version("nvmlSystemGetCudaDriverVersion_v2", out)
}

/// Each call is one tick: gpuwatch enumerates once per sample.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> u32 {
    let mut hang = false;
    let code = with_state("nvmlDeviceGetCount_v2", |s| {
        hang = s
            .scenario
            .hang_from_tick
            .is_some_and(|t| s.count_calls >= t);
        if s.scenario.tick_ms.is_none() {
            s.tick = s.count_calls;
        }
        s.count_calls += 1;
        s.list_calls.clear();
        // SAFETY: NVML's contract: `count` points to a c_uint.
        unsafe { put(count, s.scenario.gpus.len() as c_uint) }
    });
    // Outside the state lock, so the rest of the library still answers.
    if hang {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    code
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, device: *mut Device) -> u32 {
    with_state("nvmlDeviceGetHandleByIndex_v2", |s| {
        let Some(gpu) = s.scenario.gpus.get(index as usize) else {
            return ERROR_INVALID_ARGUMENT;
        };
        if gpu.lost_handle && gpu.lost_at(s.tick) {
            return ERROR_GPU_IS_LOST;
        }
        let handle = std::ptr::without_provenance_mut(index as usize + 1);
        // SAFETY: NVML's contract: `device` points to a handle slot.
        unsafe { put(device, handle) }
    })
}
