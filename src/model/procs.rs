//! The process table: rows built from a sample, sorting by a typed column (the column and
//! sort vocabulary is `model::columns`), and a selection that follows a process (PID +
//! start time + GPU), never a row index. Pure: no I/O, no clock.

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use crate::reading::Visibility;
use crate::reading::workload::ProcContext;
use crate::reading::{GpuId, ProcKind, ProcReading};
use crate::units::Bytes;

// The column and sort vocabulary lives in `columns`; re-exported so `procs::Column` etc.
// keep working everywhere.
pub use super::columns::{Column, SortDir, SortKey};

/// A process's identity on one GPU: a reused PID has another start time, so it is a
/// different process; the GPU is part of the key because one process can hold several.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProcKey {
    pub pid: u32,
    pub started: Option<SystemTime>,
    pub gpu: GpuId,
}

/// One row of the table, with everything the columns show already derived.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcRow {
    pub key: ProcKey,
    pub gpu_index: u32,
    /// The GPU's host when watching several; `None` for one host.
    pub host: Option<String>,
    pub kind: ProcKind,
    pub vram: Option<Bytes>,
    pub gpu_util: Option<u32>,
    pub cpu: Option<f32>,
    pub host_memory: Option<Bytes>,
    pub elapsed: Option<Duration>,
    /// User name; `None` when the process is not visible from this host's /proc. Shared
    /// with the reading, as the command is: a row is built for every process every sample.
    pub user: Option<Arc<str>>,
    /// The owner's UID, for deciding who may signal the process.
    pub uid: Option<u32>,
    pub command: Arc<str>,
    pub visibility: Visibility,
    /// The JOB column's label (`model::jobs::label`); `None` for a login-shell process.
    pub job: Option<String>,
    /// Its workload and GPU-related environment, as the host could read them.
    pub context: ProcContext,
    /// The MIG instance it runs on, on a GPU in MIG mode (`model::mig`).
    pub instance: Option<super::mig::InstanceTag>,
}

impl ProcRow {
    pub fn from_reading(p: &ProcReading, gpu_index: u32, now: SystemTime) -> ProcRow {
        let visibility = p.host.visibility();
        let details = p.details();
        let started = details.map(|d| d.started);
        ProcRow {
            key: ProcKey {
                pid: p.pid,
                started,
                gpu: p.gpu.clone(),
            },
            gpu_index,
            host: None,
            kind: p.kind,
            vram: p.gpu_memory,
            gpu_util: p.sm_util.map(|u| u.0),
            cpu: details.and_then(|d| d.cpu_percent),
            host_memory: details.and_then(|d| d.host_memory),
            elapsed: started.and_then(|s| now.duration_since(s).ok()),
            user: details.map(|d| d.user.clone()),
            uid: details.map(|d| d.uid),
            command: details.map_or_else(
                || visibility.placeholder(p.pid).into(),
                |d| d.command.clone(),
            ),
            visibility,
            job: details
                .and_then(|d| d.context.workload.as_deref())
                .and_then(super::jobs::label),
            context: details.map(|d| d.context.clone()).unwrap_or_default(),
            instance: None,
        }
    }
}

/// Orders two rows by `key` in `dir` (the comparison is the column table's). Unknown values
/// sort last in either direction; ties fall back to PID then GPU so the order never jitters
/// between samples.
pub fn compare(a: &ProcRow, b: &ProcRow, key: SortKey, dir: SortDir) -> Ordering {
    let (_, by) = key.order();
    by(a, b, dir)
        .then(a.key.pid.cmp(&b.key.pid))
        .then(a.gpu_index.cmp(&b.gpu_index))
}

/// Which rows the table shows: the typed filter, a focused GPU, a chosen user (all must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowView {
    pub filter: super::filter::Filter,
    pub gpu: Option<GpuId>,
    pub user: Option<String>,
    /// A job chosen in the per-user view: its exact JOB label.
    pub job: Option<String>,
}

impl RowView {
    pub fn matches(&self, row: &ProcRow) -> bool {
        if self.filter.is_empty() {
            return self.matches_lowered(row, &super::filter::Lowered::default());
        }
        self.matches_lowered(row, &super::filter::Lowered::of(row))
    }

    fn matches_lowered(&self, row: &ProcRow, lowered: &super::filter::Lowered) -> bool {
        self.gpu.as_ref().is_none_or(|g| *g == row.key.gpu)
            && self
                .user
                .as_ref()
                .is_none_or(|u| row.user.as_deref() == Some(u.as_str()))
            && self
                .job
                .as_ref()
                .is_none_or(|j| row.job.as_ref() == Some(j))
            && self.filter.matches_lowered(row, lowered)
    }

    pub fn is_everything(&self) -> bool {
        self.gpu.is_none() && self.user.is_none() && self.job.is_none() && self.filter.is_empty()
    }
}

/// The sorted table with its selection.
#[derive(Debug, Clone)]
pub struct ProcTable {
    /// Every process of the latest sample (owners, totals and JSON use these).
    pub all: Vec<ProcRow>,
    /// `all`'s text lower-cased for the filter, once per sample (not once per keystroke).
    lowered: Vec<super::filter::Lowered>,
    /// The rows shown, as indices into `all`: narrowed by `view`, sorted. Indices rather
    /// than copies, so a new sample costs a sort of integers, not thousands of clones.
    order: Vec<usize>,
    pub view: RowView,
    pub sort: SortKey,
    pub dir: SortDir,
    /// The selected process; `None` only while there are no rows.
    pub selected: Option<ProcKey>,
    /// Where the selection was, so it stays near there when its process exits.
    selected_index: usize,
    /// The user has moved the selection (a key, a click). Until then the first row is the
    /// selection whatever the rows' order, as the README promises: following the process
    /// first listed in the opening samples showed the second row selected at start.
    chosen: bool,
}

impl Default for ProcTable {
    fn default() -> Self {
        ProcTable {
            all: Vec::new(),
            lowered: Vec::new(),
            order: Vec::new(),
            view: RowView::default(),
            sort: SortKey::Vram,
            dir: SortDir::Descending,
            selected: None,
            selected_index: 0,
            chosen: false,
        }
    }
}

impl ProcTable {
    /// Replaces the rows, keeping them sorted and the selection on the same process.
    pub fn set_rows(&mut self, rows: Vec<ProcRow>) {
        self.lowered.clear();
        self.all = rows;
        self.refilter();
    }

    /// Keeps the rows without filtering, sorting or selecting: the table shows none of
    /// them, while `all` holds every one (for the holders, the pile-ups, the alerts). For a
    /// model whose rows move on to one that orders them (the TUI's twin, `split`).
    pub fn keep_rows(&mut self, rows: Vec<ProcRow>) {
        self.lowered.clear();
        self.order.clear();
        self.selected = None;
        self.selected_index = 0;
        self.all = rows;
    }

    pub fn set_view(&mut self, view: RowView) {
        self.view = view;
        self.refilter();
    }

    fn refilter(&mut self) {
        // Lower-cased once per sample, and only while a filter is typed: no cost otherwise.
        if self.view.filter.is_empty() {
            self.order = (0..self.all.len())
                .filter(|&i| self.view.matches(&self.all[i]))
                .collect();
            return self.resort();
        }
        if self.lowered.len() != self.all.len() {
            self.lowered = self.all.iter().map(super::filter::Lowered::of).collect();
        }
        let view = &self.view;
        self.order = (0..self.all.len())
            .filter(|&i| view.matches_lowered(&self.all[i], &self.lowered[i]))
            .collect();
        self.resort();
    }

    pub fn set_sort(&mut self, key: SortKey, dir: SortDir) {
        self.sort = key;
        self.dir = dir;
        self.resort();
    }

    fn resort(&mut self) {
        let (key, dir, all) = (self.sort, self.dir, &self.all);
        // The comparison ends in a total tie-break (PID, GPU), so an unstable sort is exact.
        self.order
            .sort_unstable_by(|&a, &b| compare(&all[a], &all[b], key, dir));
        self.reselect();
    }

    /// The rows shown, in order.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = &ProcRow> + DoubleEndedIterator + Clone {
        self.order.iter().map(|&i| &self.all[i])
    }

    /// The `i`th row shown.
    pub fn row(&self, i: usize) -> Option<&ProcRow> {
        self.order.get(i).map(|&j| &self.all[j])
    }

    /// How many rows are shown.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Finds the selected process again after the rows changed; if it is gone, selects
    /// whatever now sits where it was. Until the user has chosen a row, the first row is
    /// selected: the selection shows from the first frame, so the footer says which process
    /// `T` or Enter would act on before any key is pressed.
    fn reselect(&mut self) {
        let Some(key) = self.selected.as_ref().filter(|_| self.chosen) else {
            self.place_selection(0);
            if self.is_empty() {
                self.selected = None;
            }
            return;
        };
        let found = self.rows().position(|r| &r.key == key);
        if let Some(i) = found {
            self.selected_index = i;
        } else if self.is_empty() {
            self.selected = None;
            self.selected_index = 0;
        } else {
            self.selected_index = self.selected_index.min(self.len() - 1);
            self.selected = self.row(self.selected_index).map(|r| r.key.clone());
        }
    }

    pub fn selected_index(&self) -> Option<usize> {
        self.selected.as_ref().map(|_| self.selected_index)
    }

    pub fn selected_row(&self) -> Option<&ProcRow> {
        self.selected_index().and_then(|i| self.row(i))
    }

    /// Moves the selection by `delta` rows, clamped to the table; the first move selects.
    pub fn move_selection(&mut self, delta: isize) {
        if self.is_empty() {
            return;
        }
        let target = match self.selected_index() {
            None => 0,
            Some(i) => (i as isize + delta).clamp(0, self.len() as isize - 1) as usize,
        };
        self.select_index(target);
    }

    /// Selects the `i`th row shown, as the user chose it: from now on the selection
    /// follows that process (PID + start time) wherever sorting moves it.
    pub fn select_index(&mut self, i: usize) {
        if self.place_selection(i) {
            self.chosen = true;
        }
    }

    /// Puts the selection on the `i`th row shown; false when there is no such row.
    fn place_selection(&mut self, i: usize) -> bool {
        let Some(key) = self.row(i).map(|r| r.key.clone()) else {
            return false;
        };
        self.selected_index = i;
        self.selected = Some(key);
        true
    }

    pub fn select_last(&mut self) {
        if !self.is_empty() {
            self.select_index(self.len() - 1);
        }
    }
}

#[cfg(test)]
#[path = "procs_tests.rs"]
mod tests;
