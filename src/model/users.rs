//! The per-user view: one row per user with what they hold across GPUs, and under a user
//! whose processes run in containers, pods, Slurm jobs or services, one row per such job
//! (the second grouping). Derived from the process rows and GPU readings. Pure.

use std::collections::BTreeMap;
use std::time::Duration;

use super::procs::ProcRow;
use crate::reading::GpuReading;
use crate::units::Bytes;

use super::activity::IDLE_MAX_UTIL;

/// A sum over processes some of whose values may be unknown: absent is not zero, so the
/// unknown ones are counted, not added as 0. The one home of "a sum of `Option`s": the
/// per-user view and each GPU's owners (`holders`) sum this way.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Total<T> {
    /// The sum of the values that are known.
    pub known: T,
    /// How many values were unknown.
    pub unknown: usize,
    /// How many values were known (and summed into `known`).
    pub counted: usize,
}

impl<T: std::ops::Add<Output = T> + Copy> Total<T> {
    pub fn add(&mut self, value: Option<T>) {
        match value {
            Some(v) => {
                self.known = self.known + v;
                self.counted += 1;
            }
            None => self.unknown += 1,
        }
    }

    /// The sum when any value is known; `None` when every value was unknown (N/A, not 0).
    pub fn value(&self) -> Option<T> {
        (self.counted > 0 || self.unknown == 0).then_some(self.known)
    }

    /// Some values known and some not: `known` is at least what was summed.
    pub fn partial(&self) -> bool {
        self.counted > 0 && self.unknown > 0
    }
}

impl<T> From<T> for Total<T> {
    /// One known value.
    fn from(value: T) -> Self {
        Total {
            known: value,
            unknown: 0,
            counted: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct UserRow {
    /// The user name, or `pid N` style placeholder for processes we cannot attribute.
    pub user: String,
    /// `None` for the user's own total; a job's label for the rows grouped under it.
    pub job: Option<String>,
    /// GPU indices this user has processes on, ascending.
    pub gpus: Vec<u32>,
    /// (GPU index, GPU instance id) of the MIG instances this user's processes run on,
    /// ascending: the view writes `0/1` for those, as the process table does.
    pub instances: Vec<(u32, u32)>,
    /// The processes' VRAM: what is known, and how many processes' is not.
    pub vram: Total<Bytes>,
    pub processes: usize,
    /// The processes' GPU%, summed: unknown values (MIG, AMD, Intel) are counted apart,
    /// never as zero.
    pub gpu_util: Total<u32>,
    /// The longest-running of the user's processes.
    pub longest: Option<Duration>,
    /// VRAM this user holds on GPUs that are idle right now.
    pub idle_vram: Bytes,
}

/// Summarizes every row by user, largest VRAM first (ties by name); each user is followed
/// by their jobs, largest first.
pub fn summarize(rows: &[ProcRow], gpus: &[GpuReading]) -> Vec<UserRow> {
    let idle = |row: &ProcRow| {
        gpus.iter()
            .find(|g| g.id == row.key.gpu)
            .and_then(|g| g.util)
            .is_some_and(|u| u.0 <= IDLE_MAX_UTIL)
    };
    let mut by_user: BTreeMap<String, UserRow> = BTreeMap::new();
    let mut by_job: BTreeMap<(String, String), UserRow> = BTreeMap::new();
    for row in rows {
        let name = row.user.as_deref().unwrap_or("(unknown)").to_owned();
        let is_idle = idle(row);
        add(
            by_user
                .entry(name.clone())
                .or_insert_with(|| empty(&name, None)),
            row,
            is_idle,
        );
        if let Some(job) = &row.job {
            let key = (name.clone(), job.clone());
            let entry = by_job
                .entry(key)
                .or_insert_with(|| empty(&name, Some(job.clone())));
            add(entry, row, is_idle);
        }
    }
    let largest = |a: &UserRow, b: &UserRow| {
        b.vram
            .known
            .cmp(&a.vram.known)
            .then_with(|| a.user.cmp(&b.user))
            .then_with(|| a.job.cmp(&b.job))
    };
    let mut users: Vec<UserRow> = by_user.into_values().collect();
    users.sort_by(largest);
    let mut jobs: Vec<UserRow> = by_job.into_values().collect();
    jobs.sort_by(largest);
    let mut out = Vec::with_capacity(users.len() + jobs.len());
    for u in users {
        let name = u.user.clone();
        out.push(u);
        out.extend(jobs.iter().filter(|j| j.user == name).cloned());
    }
    for u in &mut out {
        u.gpus.sort_unstable();
        u.instances.sort_unstable();
    }
    out
}

fn empty(user: &str, job: Option<String>) -> UserRow {
    UserRow {
        user: user.to_string(),
        job,
        gpus: Vec::new(),
        instances: Vec::new(),
        vram: Total::default(),
        processes: 0,
        gpu_util: Total::default(),
        longest: None,
        idle_vram: Bytes(0),
    }
}

fn add(entry: &mut UserRow, row: &ProcRow, idle: bool) {
    if !entry.gpus.contains(&row.gpu_index) {
        entry.gpus.push(row.gpu_index);
    }
    if let Some(gi) = row.instance.as_ref().and_then(|i| i.gpu_instance)
        && !entry.instances.contains(&(row.gpu_index, gi))
    {
        entry.instances.push((row.gpu_index, gi));
    }
    entry.vram.add(row.vram);
    entry.processes += 1;
    entry.gpu_util.add(row.gpu_util);
    entry.longest = entry.longest.max(row.elapsed);
    if idle && let Some(vram) = row.vram {
        entry.idle_vram = entry.idle_vram + vram;
    }
}

impl UserRow {
    /// `0/1,0/5,2`: each GPU, or on a MIG GPU each instance (GPU/GI), the user holds.
    pub fn places(&self) -> Vec<String> {
        let mut out = Vec::new();
        for g in &self.gpus {
            let on: Vec<String> = self
                .instances
                .iter()
                .filter(|(i, _)| i == g)
                .map(|(i, gi)| format!("{i}/{gi}"))
                .collect();
            if on.is_empty() {
                out.push(g.to_string());
            } else {
                out.extend(on);
            }
        }
        out
    }
}
