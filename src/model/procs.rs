//! The process table: rows built from a sample, sorting by a typed column, and a
//! selection that follows a process (PID + start time + GPU), never a row index.
//! Pure: no I/O, no clock.

use std::cmp::Ordering;
use std::time::{Duration, SystemTime};

pub use crate::source::Visibility;
use crate::source::workload::ProcContext;
use crate::source::{GpuId, ProcKind, ProcReading};
use crate::units::Bytes;

/// Columns the table can be sorted by, in the order `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    Gpu,
    Pid,
    User,
    Job,
    Vram,
    GpuUtil,
    Cpu,
    HostMemory,
    Time,
    Command,
}

impl SortKey {
    pub const ALL: [SortKey; 10] = [
        SortKey::Gpu,
        SortKey::Pid,
        SortKey::User,
        SortKey::Job,
        SortKey::Vram,
        SortKey::GpuUtil,
        SortKey::Cpu,
        SortKey::HostMemory,
        SortKey::Time,
        SortKey::Command,
    ];

    pub fn next(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn prev(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// Quantities sort largest first when chosen; names and ids smallest first.
    pub fn default_direction(self) -> SortDir {
        match self {
            SortKey::Gpu | SortKey::Pid | SortKey::User | SortKey::Job | SortKey::Command => {
                SortDir::Ascending
            }
            _ => SortDir::Descending,
        }
    }

    /// The title of the column it sorts (the header arrow sits there).
    pub fn name(self) -> &'static str {
        Column::ALL
            .into_iter()
            .find(|c| c.sort_key() == Some(self))
            .map(Column::title)
            .expect("every sort key has a column")
    }
}

/// Columns of the process table, in display order. Which are visible is a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// Shown (first) only when watching several hosts; not a config-file column.
    Host,
    Gpu,
    Pid,
    User,
    /// The container, pod, Slurm job or service (empty for a login shell); shown only
    /// when some process has one.
    Job,
    Type,
    Vram,
    GpuUtil,
    Cpu,
    HostMemory,
    Time,
    Command,
}

impl Column {
    pub const ALL: [Column; 11] = [
        Column::Gpu,
        Column::Pid,
        Column::User,
        Column::Job,
        Column::Type,
        Column::Vram,
        Column::GpuUtil,
        Column::Cpu,
        Column::HostMemory,
        Column::Time,
        Column::Command,
    ];

    /// The column's title: the table header, `--once` text and the sort indicator.
    pub fn title(self) -> &'static str {
        match self {
            Column::Host => "HOST",
            Column::Gpu => "GPU",
            Column::Pid => "PID",
            Column::User => "USER",
            Column::Job => "JOB",
            Column::Type => "TYPE",
            Column::Vram => "VRAM",
            Column::GpuUtil => "GPU%",
            Column::Cpu => "CPU%",
            Column::HostMemory => "HOST MEM",
            Column::Time => "TIME",
            Column::Command => "COMMAND",
        }
    }

    /// The name used in the config file (`columns.visible`).
    pub fn config_name(self) -> &'static str {
        match self {
            Column::Host => "host",
            Column::Gpu => "gpu",
            Column::Pid => "pid",
            Column::User => "user",
            Column::Job => "job",
            Column::Type => "type",
            Column::Vram => "vram",
            Column::GpuUtil => "gpu_util",
            Column::Cpu => "cpu",
            Column::HostMemory => "host_memory",
            Column::Time => "time",
            Column::Command => "command",
        }
    }

    pub fn from_config_name(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.config_name() == name)
    }

    /// The sort key this column shows, if it can be sorted by.
    pub fn sort_key(self) -> Option<SortKey> {
        match self {
            Column::Host => Some(SortKey::Gpu),
            Column::Gpu => Some(SortKey::Gpu),
            Column::Pid => Some(SortKey::Pid),
            Column::User => Some(SortKey::User),
            Column::Job => Some(SortKey::Job),
            Column::Type => None,
            Column::Vram => Some(SortKey::Vram),
            Column::GpuUtil => Some(SortKey::GpuUtil),
            Column::Cpu => Some(SortKey::Cpu),
            Column::HostMemory => Some(SortKey::HostMemory),
            Column::Time => Some(SortKey::Time),
            Column::Command => Some(SortKey::Command),
        }
    }
}

impl SortKey {
    /// The name used in the config file (`sort.column`): the same as its column's.
    pub fn config_name(self) -> &'static str {
        Column::ALL
            .into_iter()
            .find(|c| c.sort_key() == Some(self))
            .map(Column::config_name)
            .expect("every sort key has a column")
    }

    pub fn from_config_name(name: &str) -> Option<SortKey> {
        Column::from_config_name(name).and_then(Column::sort_key)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    Ascending,
    Descending,
}

impl SortDir {
    pub fn flipped(self) -> SortDir {
        match self {
            SortDir::Ascending => SortDir::Descending,
            SortDir::Descending => SortDir::Ascending,
        }
    }
}

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
    /// User name; `None` when the process is not visible from this host's /proc.
    pub user: Option<String>,
    /// The owner's UID, for deciding who may signal the process.
    pub uid: Option<u32>,
    pub command: String,
    pub visibility: Visibility,
    /// The JOB column's label (`model::jobs::label`); `None` for a login-shell process.
    pub job: Option<String>,
    /// Its workload and GPU-related environment, as the host could read them.
    pub context: ProcContext,
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
            command: details.map_or_else(|| visibility.placeholder(p.pid), |d| d.command.clone()),
            visibility,
            job: details
                .and_then(|d| d.context.workload.as_deref())
                .and_then(super::jobs::label),
            context: details.map(|d| d.context.clone()).unwrap_or_default(),
        }
    }
}

/// Orders two rows by `key` in `dir`. Unknown values sort last in either direction; ties
/// fall back to PID then GPU so the order never jitters between samples.
pub fn compare(a: &ProcRow, b: &ProcRow, key: SortKey, dir: SortDir) -> Ordering {
    let primary = match key {
        SortKey::Gpu => known(
            Some((&a.host, a.gpu_index)),
            Some((&b.host, b.gpu_index)),
            dir,
        ),
        SortKey::Pid => known(Some(a.key.pid), Some(b.key.pid), dir),
        SortKey::User => known(a.user.as_ref(), b.user.as_ref(), dir),
        SortKey::Job => known(a.job.as_ref(), b.job.as_ref(), dir),
        SortKey::Vram => known(a.vram, b.vram, dir),
        SortKey::GpuUtil => known(a.gpu_util, b.gpu_util, dir),
        SortKey::Cpu => known(a.cpu.map(OrdF32), b.cpu.map(OrdF32), dir),
        SortKey::HostMemory => known(a.host_memory, b.host_memory, dir),
        SortKey::Time => known(a.elapsed, b.elapsed, dir),
        SortKey::Command => known(Some(&a.command), Some(&b.command), dir),
    };
    primary
        .then(a.key.pid.cmp(&b.key.pid))
        .then(a.gpu_index.cmp(&b.gpu_index))
}

fn known<T: Ord>(a: Option<T>, b: Option<T>, dir: SortDir) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => match dir {
            SortDir::Ascending => a.cmp(&b),
            SortDir::Descending => b.cmp(&a),
        },
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// CPU% with a total order (`f32::total_cmp`), so it can sort like the other columns.
struct OrdF32(f32);
impl PartialEq for OrdF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
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
        self.gpu.as_ref().is_none_or(|g| *g == row.key.gpu)
            && self
                .user
                .as_ref()
                .is_none_or(|u| row.user.as_ref() == Some(u))
            && self
                .job
                .as_ref()
                .is_none_or(|j| row.job.as_ref() == Some(j))
            && self.filter.matches(row)
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
    /// The rows shown, as indices into `all`: narrowed by `view`, sorted. Indices rather
    /// than copies, so a new sample costs a sort of integers, not thousands of clones.
    order: Vec<usize>,
    pub view: RowView,
    pub sort: SortKey,
    pub dir: SortDir,
    /// The selected process; `None` until the user moves the selection.
    pub selected: Option<ProcKey>,
    /// Where the selection was, so it stays near there when its process exits.
    selected_index: usize,
}

impl Default for ProcTable {
    fn default() -> Self {
        ProcTable {
            all: Vec::new(),
            order: Vec::new(),
            view: RowView::default(),
            sort: SortKey::Vram,
            dir: SortDir::Descending,
            selected: None,
            selected_index: 0,
        }
    }
}

impl ProcTable {
    /// Replaces the rows, keeping them sorted and the selection on the same process.
    pub fn set_rows(&mut self, rows: Vec<ProcRow>) {
        self.all = rows;
        self.refilter();
    }

    pub fn set_view(&mut self, view: RowView) {
        self.view = view;
        self.refilter();
    }

    fn refilter(&mut self) {
        let view = &self.view;
        self.order = (0..self.all.len())
            .filter(|&i| view.matches(&self.all[i]))
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
    /// whatever now sits where it was.
    fn reselect(&mut self) {
        let Some(key) = &self.selected else { return };
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

    pub fn select_index(&mut self, i: usize) {
        if let Some(key) = self.row(i).map(|r| r.key.clone()) {
            self.selected_index = i;
            self.selected = Some(key);
        }
    }

    pub fn select_last(&mut self) {
        if !self.is_empty() {
            self.select_index(self.len() - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: u32, gpu: u32) -> ProcRow {
        ProcRow {
            key: ProcKey {
                pid,
                started: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(pid as u64)),
                gpu: GpuId(format!("GPU-{gpu}")),
            },
            gpu_index: gpu,
            host: None,
            kind: ProcKind::Compute,
            vram: None,
            gpu_util: None,
            cpu: None,
            host_memory: None,
            elapsed: None,
            user: None,
            uid: None,
            command: String::new(),
            visibility: Visibility::Visible,
            job: None,
            context: Default::default(),
        }
    }

    /// Three rows with distinct values for `key`, one tie with the first, and one unknown.
    fn rows_for(key: SortKey) -> Vec<ProcRow> {
        let vals: [Option<u64>; 5] = [Some(20), Some(10), Some(30), Some(20), None];
        vals.iter()
            .enumerate()
            .map(|(i, v)| {
                // PIDs descend so a PID tie-break is visible against insertion order.
                let mut r = row(100 - i as u32, 0);
                match key {
                    SortKey::Gpu => r.gpu_index = v.unwrap_or(0) as u32,
                    SortKey::Pid => r.key.pid = v.map(|v| v as u32).unwrap_or(1),
                    SortKey::User => r.user = v.map(|v| format!("user{v}")),
                    SortKey::Job => r.job = v.map(|v| format!("slurm {v}")),
                    SortKey::Vram => r.vram = v.map(Bytes),
                    SortKey::GpuUtil => r.gpu_util = v.map(|v| v as u32),
                    SortKey::Cpu => r.cpu = v.map(|v| v as f32),
                    SortKey::HostMemory => r.host_memory = v.map(Bytes),
                    SortKey::Time => r.elapsed = v.map(Duration::from_secs),
                    SortKey::Command => {
                        r.command = v.map(|v| format!("cmd{v}")).unwrap_or_default()
                    }
                }
                r
            })
            .collect()
    }

    fn sorted_pids(key: SortKey, dir: SortDir) -> Vec<u32> {
        let mut t = ProcTable::default();
        t.set_rows(rows_for(key));
        t.set_sort(key, dir);
        t.rows().map(|r| r.key.pid).collect()
    }

    #[test]
    fn every_optional_key_sorts_both_ways_with_unknown_last_and_pid_ties() {
        // Rows: pid 100 = 20, 99 = 10, 98 = 30, 97 = 20 (tie with 100), 96 = unknown.
        for key in [
            SortKey::User,
            SortKey::Job,
            SortKey::Vram,
            SortKey::GpuUtil,
            SortKey::Cpu,
            SortKey::HostMemory,
            SortKey::Time,
        ] {
            assert_eq!(
                sorted_pids(key, SortDir::Ascending),
                vec![99, 97, 100, 98, 96],
                "{key:?} asc"
            );
            assert_eq!(
                sorted_pids(key, SortDir::Descending),
                vec![98, 97, 100, 99, 96],
                "{key:?} desc"
            );
        }
    }

    #[test]
    fn gpu_and_command_sort_both_ways() {
        // GPU unknown is impossible, so the "unknown" row is GPU 0; command "" sorts first.
        assert_eq!(
            sorted_pids(SortKey::Gpu, SortDir::Ascending),
            vec![96, 99, 97, 100, 98]
        );
        assert_eq!(
            sorted_pids(SortKey::Gpu, SortDir::Descending),
            vec![98, 97, 100, 99, 96]
        );
        assert_eq!(
            sorted_pids(SortKey::Command, SortDir::Ascending),
            vec![96, 99, 97, 100, 98]
        );
        assert_eq!(
            sorted_pids(SortKey::Command, SortDir::Descending),
            vec![98, 97, 100, 99, 96]
        );
    }

    #[test]
    fn pid_sorts_both_ways() {
        assert_eq!(
            sorted_pids(SortKey::Pid, SortDir::Ascending),
            vec![1, 10, 20, 20, 30]
        );
        assert_eq!(
            sorted_pids(SortKey::Pid, SortDir::Descending),
            vec![30, 20, 20, 10, 1]
        );
    }

    #[test]
    fn sort_keys_cycle_both_ways() {
        let mut k = SortKey::Vram;
        for _ in 0..SortKey::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, SortKey::Vram);
        assert_eq!(SortKey::Gpu.prev(), SortKey::Command);
        assert_eq!(SortKey::Vram.next().prev(), SortKey::Vram);
    }

    #[test]
    fn selection_follows_the_process_across_resorts() {
        let mut t = ProcTable::default();
        let mut rows = rows_for(SortKey::Vram);
        t.set_rows(rows.clone());
        t.move_selection(1); // select first row
        t.move_selection(1); // second row: pid 97 (VRAM 20, tie broken by pid)
        assert_eq!(t.selected_row().unwrap().key.pid, 97);
        t.set_sort(SortKey::Pid, SortDir::Ascending);
        assert_eq!(t.selected_row().unwrap().key.pid, 97);
        // New sample: pid 97's VRAM grows to the top; the selection goes with it.
        rows[3].vram = Some(Bytes(99));
        t.set_sort(SortKey::Vram, SortDir::Descending);
        t.set_rows(rows);
        assert_eq!(t.selected_index(), Some(0));
        assert_eq!(t.selected_row().unwrap().key.pid, 97);
    }

    #[test]
    fn reused_pid_is_a_different_process() {
        let mut t = ProcTable::default();
        t.set_rows(vec![row(5, 0), row(6, 0)]);
        t.select_index(0);
        let mut reborn = row(5, 0);
        reborn.key.started = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(999));
        t.set_rows(vec![reborn, row(6, 0)]);
        // The selection does not silently jump to the new process with the old PID:
        // the old one is gone, so the selection re-targets the row now at its place.
        assert_eq!(
            t.selected.as_ref().unwrap().started,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(999))
        );
    }

    #[test]
    fn selection_clamps_when_rows_vanish() {
        let mut t = ProcTable::default();
        t.set_sort(SortKey::Pid, SortDir::Ascending);
        t.set_rows(vec![row(1, 0), row(2, 0), row(3, 0)]);
        t.select_last();
        t.set_rows(vec![row(1, 0)]);
        assert_eq!(t.selected_row().unwrap().key.pid, 1);
        t.set_rows(vec![]);
        assert_eq!(t.selected_index(), None);
        t.move_selection(5);
        assert_eq!(t.selected_index(), None);
    }
}
