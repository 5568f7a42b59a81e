//! The per-user view: one row per user with what they hold across GPUs, derived from the
//! process rows and GPU readings. Pure.

use std::collections::BTreeMap;
use std::time::Duration;

use super::procs::ProcRow;
use crate::source::GpuReading;
use crate::units::Bytes;

use super::activity::IDLE_MAX_UTIL;

#[derive(Debug, Clone, PartialEq)]
pub struct UserRow {
    /// The user name, or `pid N` style placeholder for processes we cannot attribute.
    pub user: String,
    /// GPU indices this user has processes on, ascending.
    pub gpus: Vec<u32>,
    pub vram: Bytes,
    pub processes: usize,
    /// Sum of the processes' GPU%; unknown values count as zero.
    pub gpu_util: u32,
    /// The longest-running of the user's processes.
    pub longest: Option<Duration>,
    /// VRAM this user holds on GPUs that are idle right now.
    pub idle_vram: Bytes,
}

/// Summarizes every row by user, largest VRAM first (ties by name).
pub fn summarize(rows: &[ProcRow], gpus: &[GpuReading]) -> Vec<UserRow> {
    let idle = |row: &ProcRow| {
        gpus.iter()
            .find(|g| g.id == row.key.gpu)
            .and_then(|g| g.util)
            .is_some_and(|u| u.0 <= IDLE_MAX_UTIL)
    };
    let mut by_user: BTreeMap<String, UserRow> = BTreeMap::new();
    for row in rows {
        let name = row.user.clone().unwrap_or_else(|| "(unknown)".into());
        let entry = by_user.entry(name.clone()).or_insert_with(|| UserRow {
            user: name,
            gpus: Vec::new(),
            vram: Bytes(0),
            processes: 0,
            gpu_util: 0,
            longest: None,
            idle_vram: Bytes(0),
        });
        if !entry.gpus.contains(&row.gpu_index) {
            entry.gpus.push(row.gpu_index);
        }
        let vram = row.vram.unwrap_or_default();
        entry.vram = entry.vram + vram;
        entry.processes += 1;
        entry.gpu_util += row.gpu_util.unwrap_or(0);
        entry.longest = entry.longest.max(row.elapsed);
        if idle(row) {
            entry.idle_vram = entry.idle_vram + vram;
        }
    }
    let mut out: Vec<UserRow> = by_user.into_values().collect();
    for u in &mut out {
        u.gpus.sort_unstable();
    }
    out.sort_by(|a, b| b.vram.cmp(&a.vram).then_with(|| a.user.cmp(&b.user)));
    out
}
