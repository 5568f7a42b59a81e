//! The model: what the GPUs said and what follows from it — readings, per-GPU history,
//! the process rows, who holds each GPU, and warnings. Changed only through
//! [`Model::apply_sample`] (and the two other messages a source can send), so the derived
//! parts always agree with the readings they came from. Knows nothing of the terminal, of
//! selection or scrolling (that is `state::View`), nor of how anything is drawn.

pub mod activity;
pub mod columns;
pub mod etiquette;
pub mod filter;
pub mod health;
pub mod holders;
pub mod jobs;
pub mod mig;
pub mod owners;
pub mod pileup;
pub mod procs;
mod snapshot_of;
mod split;
mod squatter;
pub mod users;
pub mod visible;
pub mod warning_doc;
mod warning_index;
pub mod warnings;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};

use crate::history::GpuHistory;
use crate::history::procs::{ProcHistories, ProcHistory, ProcId};
use crate::reading::{GpuId, GpuReading, HostInfo, ProcReading, Sample};
use procs::{ProcRow, ProcTable, SortKey};
use warning_index::WarningIndex;
use warnings::{Alarm, Severity, Thresholds, Warning};

pub use split::Applied;

/// Series kept across samples that the charts draw from: shared by the model that applies
/// the samples and the one the TUI draws from (`split`), so a large fleet's sample is
/// applied off the UI thread without a second copy of every GPU's history. Read with
/// `read_recursive`: a frame may hold one GPU's history while it asks for another's, and a
/// plain read would wait behind a writer queued in between.
type Shared<T> = Arc<RwLock<T>>;

/// Settings the model and the view need (a subset of the resolved `Settings`).
#[derive(Debug, Clone)]
pub struct ViewConfig {
    pub interval: Duration,
    /// Samples kept per GPU for sparklines and trends.
    pub history_len: usize,
    pub thresholds: Thresholds,
    /// Whose processes to highlight.
    pub current_user: Option<String>,
    /// The current user's UID: only their processes may be signalled (root: with care).
    pub current_uid: Option<u32>,
    /// The Slurm job, container or pod gpuwatch itself runs in: `pick` counts memory of
    /// the same user's *other* jobs as someone else's.
    pub current_job: Option<jobs::JobKey>,
    /// Offset of local time from UTC, resolved once at start-up (tests pin it).
    pub utc_offset: chrono::FixedOffset,
    /// No signals can be sent (`--readonly`).
    pub readonly: bool,
    /// Process-table columns shown, in order.
    pub columns: Vec<procs::Column>,
    /// The table's sort when the program starts.
    pub sort: SortKey,
    pub sort_dir: procs::SortDir,
    /// Only these GPUs are shown (`--only`); `None` shows all.
    pub only: Option<Vec<crate::reading::device_list::GpuSelector>>,
    /// Whether the source lists processes at all. `false` (`--prometheus`): no rows is
    /// "unknown", so VRAM no process accounts for is not a stale allocation.
    pub processes_known: bool,
}

impl Default for ViewConfig {
    fn default() -> Self {
        ViewConfig {
            interval: Duration::from_secs(1),
            history_len: 300,
            thresholds: Thresholds::default(),
            current_user: None,
            current_uid: None,
            current_job: None,
            utc_offset: chrono::FixedOffset::east_opt(0).expect("zero offset is valid"),
            readonly: false,
            columns: procs::Column::ALL.to_vec(),
            sort: SortKey::Vram,
            sort_dir: procs::SortDir::Descending,
            only: None,
            processes_known: true,
        }
    }
}

/// Everything derived from the samples so far.
#[derive(Debug)]
pub struct Model {
    /// Time of the latest sample applied.
    now: Option<SystemTime>,
    host: HostInfo,
    gpus: Vec<GpuReading>,
    /// Where each GPU is in `gpus` (the first, should two share an id), set with them: the
    /// alerts, the exporter's process labels and the views find a GPU by id without a scan
    /// of the fleet (10,000 GPUs in a Prometheus fleet, issue 26 §10).
    gpu_at: HashMap<GpuId, usize>,
    histories: Shared<HashMap<GpuId, GpuHistory>>,
    alarms: HashMap<GpuId, Alarm>,
    warnings: Vec<Warning>,
    /// `warnings` by GPU, rebuilt with them.
    warning_index: WarningIndex,
    /// The process rows with the table's sort and selection; the table keeps its own
    /// order consistent with its rows (see `ProcTable`).
    procs: ProcTable,
    /// Who holds each GPU, derived from the latest sample's processes.
    holders: HashMap<GpuId, holders::Holders>,
    /// The last whole-source failure, cleared by the next good sample.
    source_error: Option<String>,
    /// How long the poll under way has been overdue; cleared by the next good sample.
    stalled: Option<std::time::Duration>,
    /// Whether any process of the latest sample runs in a container, pod, job or service.
    any_job: bool,
    /// The process detail view's series, per GPU process (a GPU's are in `histories`).
    proc_histories: Shared<ProcHistories>,
    /// Whether the source lists processes (see `ViewConfig::processes_known`).
    processes_known: bool,
    /// Whether `apply_sample` orders the table's rows (filter, sort, selection): not in the
    /// TUI's twin (`split`), whose rows move to the UI's model, which orders them by its
    /// own sort and filter. Both did: 1,000 rows sorted twice a sample (issue 25).
    orders_rows: bool,
}

impl Model {
    pub fn new(config: &ViewConfig) -> Self {
        let mut procs = ProcTable::default();
        procs.set_sort(config.sort, config.sort_dir);
        Model {
            now: None,
            host: HostInfo::default(),
            gpus: Vec::new(),
            gpu_at: HashMap::new(),
            histories: Shared::default(),
            alarms: HashMap::new(),
            warnings: Vec::new(),
            warning_index: WarningIndex::default(),
            procs,
            holders: HashMap::new(),
            source_error: None,
            stalled: None,
            any_job: false,
            proc_histories: Shared::default(),
            processes_known: config.processes_known,
            orders_rows: true,
        }
    }

    pub fn now(&self) -> Option<SystemTime> {
        self.now
    }

    pub fn host(&self) -> &HostInfo {
        &self.host
    }

    pub fn gpus(&self) -> &[GpuReading] {
        &self.gpus
    }

    /// The GPU with id `id` in the latest sample.
    pub fn gpu(&self, id: &GpuId) -> Option<&GpuReading> {
        self.gpu_at.get(id).and_then(|&i| self.gpus.get(i))
    }

    pub fn history(&self, id: &GpuId) -> Option<MappedRwLockReadGuard<'_, GpuHistory>> {
        RwLockReadGuard::try_map(self.histories.read_recursive(), |h| h.get(id)).ok()
    }

    /// How many GPUs have a history (bounded by the current fleet).
    pub fn history_count(&self) -> usize {
        self.histories.read_recursive().len()
    }

    /// Every GPU's history, in no particular order (held while the guard lives).
    pub fn histories(&self) -> RwLockReadGuard<'_, HashMap<GpuId, GpuHistory>> {
        self.histories.read_recursive()
    }

    /// One process's history (kept a while after it left its GPUs).
    pub fn proc_history(&self, id: &ProcId) -> Option<MappedRwLockReadGuard<'_, ProcHistory>> {
        RwLockReadGuard::try_map(self.proc_histories.read_recursive(), |h| h.get(id)).ok()
    }

    /// How many processes have a history (bounded: `history::procs::MAX_PROCESSES`).
    pub fn proc_history_count(&self) -> usize {
        self.proc_histories.read_recursive().len()
    }

    /// Most urgent first.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    pub fn procs(&self) -> &ProcTable {
        &self.procs
    }

    /// The table for sorting, narrowing and selection; its rows only change with a sample.
    pub fn procs_mut(&mut self) -> &mut ProcTable {
        &mut self.procs
    }

    pub fn holders(&self, id: &GpuId) -> Option<&holders::Holders> {
        self.holders.get(id)
    }

    /// Whether the JOB column has anything to show.
    pub fn any_job(&self) -> bool {
        self.any_job
    }

    /// Whether the source lists processes; when not, an empty table means unknown.
    pub fn processes_known(&self) -> bool {
        self.processes_known
    }

    pub fn source_error(&self) -> Option<&str> {
        self.source_error.as_deref()
    }

    /// The per-user table for the latest sample.
    pub fn user_rows(&self) -> Vec<users::UserRow> {
        users::summarize(&self.procs.all, &self.gpus)
    }

    /// The worst warning on a GPU, for colouring its panel.
    pub fn gpu_severity(&self, id: &GpuId) -> Option<Severity> {
        self.warning_index.severity(&self.warnings, id)
    }

    /// The warnings about one GPU, most urgent first.
    pub fn gpu_warnings(&self, id: &GpuId) -> impl Iterator<Item = &Warning> {
        self.warning_index.of_gpu(&self.warnings, id)
    }

    /// Replaces the warnings and their index together, so they always agree.
    fn set_warnings(&mut self, warnings: Vec<Warning>) {
        self.warning_index = WarningIndex::of(&warnings);
        self.warnings = warnings;
    }

    /// The source failed as a whole this tick; the readings stay as they were.
    pub fn source_failed(&mut self, why: String) {
        self.source_error = Some(why);
    }

    /// The poll under way has not come back for `waited`: said like a failure (the header,
    /// the exporter's up gauge) until the next sample.
    pub fn source_stalled(&mut self, waited: std::time::Duration) {
        self.stalled = Some(waited);
        self.source_error = Some(format!(
            "GPU source not answering for {} s",
            waited.as_secs()
        ));
    }

    /// How long the poll under way has been overdue, while it is.
    pub fn stalled(&self) -> Option<std::time::Duration> {
        self.stalled
    }

    /// A replay jumped back in time: history and alarms from the "future" are dropped.
    pub fn rewind(&mut self) {
        self.histories.write().clear();
        self.proc_histories.write().clear();
        self.alarms.clear();
        self.set_warnings(Vec::new());
    }

    pub fn apply_sample(&mut self, mut sample: Sample, config: &ViewConfig) {
        if let Some(only) = &config.only {
            // GPUs named whole, and the GPUs of named MIG instances with only those.
            mig::apply_only(&mut sample, only);
        }
        let now = sample.time;
        self.now = Some(now);
        self.proc_histories
            .write()
            .record(now, &sample.processes, config.history_len);
        self.source_error = None;
        self.stalled = None;
        let warnings = self.evaluate(&sample, config, now);
        self.set_warnings(warnings);
        self.host = sample.host;
        let gpu_of: HashMap<&GpuId, &GpuReading> = sample.gpus.iter().map(|g| (&g.id, g)).collect();
        // Sources list each GPU's processes together: the GPU is looked up once per run of
        // them, not for each of 1,000 processes (issue 25).
        let rows: Vec<ProcRow> = sample
            .processes
            .chunk_by(|a, b| a.gpu == b.gpu)
            // A process on a GPU the sample does not list cannot be placed; sources
            // never report one, and a row with a made-up index would mislead.
            .filter_map(|run| Some((*gpu_of.get(&run[0].gpu)?, run)))
            .flat_map(|(gpu, run)| {
                run.iter().map(move |p| {
                    let mut row = ProcRow::from_reading(p, gpu.index, now);
                    row.host = gpu.host.clone();
                    row.instance = mig::instance_of(gpu, p.pid).map(mig::InstanceTag::of);
                    row
                })
            })
            .collect();
        self.holders = holders::by_gpu(&rows);
        holders::add_pods(&mut self.holders, &sample.gpus, &rows);
        self.any_job = rows.iter().any(|r| r.job.is_some());
        if self.orders_rows {
            self.procs.set_rows(rows);
        } else {
            self.procs.keep_rows(rows);
        }
        self.gpus = sample.gpus;
        self.gpu_at = HashMap::with_capacity(self.gpus.len());
        for (i, g) in self.gpus.iter().enumerate() {
            self.gpu_at.entry(g.id.clone()).or_insert(i);
        }
        // Needs the rows, the holders and the other warnings (a free GPU has none).
        let mut pileups = pileup::evaluate(self);
        if !pileups.is_empty() {
            let mut all = std::mem::take(&mut self.warnings);
            all.append(&mut pileups);
            warnings::sort(&mut all);
            self.set_warnings(all);
        }
    }

    /// Pushes the readings into the histories and re-evaluates every warning.
    fn evaluate(&mut self, sample: &Sample, config: &ViewConfig, now: SystemTime) -> Vec<Warning> {
        // History and alarms are keyed by UUID; GPUs that disappeared are forgotten so
        // memory stays bounded by the current fleet.
        let present: HashSet<&GpuId> = sample.gpus.iter().map(|g| &g.id).collect();
        self.alarms.retain(|id, _| present.contains(id));
        self.record_histories(sample, &present, config, now);
        // Processes grouped by GPU once, not filtered again for every GPU.
        let mut by_gpu: HashMap<&GpuId, Vec<&ProcReading>> = HashMap::new();
        for run in sample.processes.chunk_by(|a, b| a.gpu == b.gpu) {
            by_gpu.entry(&run[0].gpu).or_default().extend(run);
        }
        // Read, not written, while every GPU is evaluated: a frame drawn meanwhile (the
        // TUI's model shares the histories) does not wait for the whole fleet's warnings.
        let histories = self.histories.read_recursive();
        let mut out = Vec::new();
        for gpu in &sample.gpus {
            // Every GPU of the sample has one: recorded just above.
            let history = &histories[&gpu.id];
            let on_gpu = by_gpu.get(&gpu.id).map_or(&[][..], Vec::as_slice);
            let alarm = slot_for(&mut self.alarms, &gpu.id, Alarm::default);
            let (next, mut raised) =
                warnings::evaluate(alarm, gpu, on_gpu, history, &config.thresholds, now);
            *alarm = next;
            out.append(&mut raised);
        }
        drop(histories);
        if !config.processes_known {
            // VRAM "held by no process" is only known where processes are listed.
            out.retain(|w| !matches!(w.kind, warnings::WarningKind::StaleVram { .. }));
        }
        for h in sample.hosts.iter().filter(|h| h.error.is_some()) {
            out.push(warnings::host_down(
                &h.name,
                h.error.as_deref().unwrap_or(""),
            ));
        }
        warnings::sort(&mut out);
        out
    }
}

impl Model {
    /// Pushes the sample's readings into the GPUs' histories and forgets the GPUs gone, so
    /// memory stays bounded by the current fleet. The one write to the shared histories
    /// per sample, kept short: pushes only, no evaluation.
    fn record_histories(
        &mut self,
        sample: &Sample,
        present: &HashSet<&GpuId>,
        config: &ViewConfig,
        now: SystemTime,
    ) {
        let mut histories = self.histories.write();
        histories.retain(|id, _| present.contains(id));
        for gpu in &sample.gpus {
            let history = slot_for(&mut histories, &gpu.id, || {
                GpuHistory::new(config.history_len)
            });
            match sample.history.as_ref() {
                // A source with its own history: its points, none twice.
                Some(kept) => kept
                    .get(&gpu.id)
                    .into_iter()
                    .flatten()
                    .for_each(|p| history.push_point(p)),
                None => history.push(now, gpu),
            }
        }
    }
}

/// `map`'s value for `id`, made with `new` the first time. Looked up by reference: an
/// `entry` would clone the id of every GPU on every sample (10,000 a refresh in a
/// Prometheus fleet, on the UI thread, for the histories and again for the alarms).
fn slot_for<'m, V>(
    map: &'m mut HashMap<GpuId, V>,
    id: &GpuId,
    new: impl FnOnce() -> V,
) -> &'m mut V {
    if !map.contains_key(id) {
        map.insert(id.clone(), new());
    }
    map.get_mut(id).expect("inserted just above")
}

#[cfg(test)]
mod gpu_lookup_tests {
    use super::*;

    fn on_host(id: &str, index: u32, host: &str) -> GpuReading {
        let mut g = GpuReading::absent(GpuId(id.into()), index, "g");
        g.host = Some(host.into());
        g
    }

    /// `Model::gpu` answers what a scan of the sample's GPUs answered: the first GPU with
    /// that id, and nothing for an id the sample does not have; a new sample replaces it.
    #[test]
    fn a_gpu_is_found_by_id_as_a_scan_found_it() {
        let config = ViewConfig::default();
        let mut model = Model::new(&config);
        let sample = |gpus: Vec<GpuReading>| Sample {
            time: SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus,
            processes: Vec::new(),
            hosts: Vec::new(),
            history: None,
        };
        let gpus = vec![
            on_host("GPU-a", 0, "h1"),
            on_host("GPU-b", 1, "h1"),
            on_host("GPU-a", 0, "h2"),
        ];
        model.apply_sample(sample(gpus), &config);
        let id = |s: &str| GpuId(s.into());
        for wanted in ["GPU-a", "GPU-b", "GPU-z"] {
            let scanned = model.gpus().iter().find(|g| g.id == id(wanted));
            assert_eq!(model.gpu(&id(wanted)), scanned, "{wanted}");
        }
        assert_eq!(model.gpu(&id("GPU-a")).unwrap().host.as_deref(), Some("h1"));
        model.apply_sample(sample(vec![on_host("GPU-b", 0, "h3")]), &config);
        assert_eq!(model.gpu(&id("GPU-a")), None);
        assert_eq!(model.gpu(&id("GPU-b")).unwrap().host.as_deref(), Some("h3"));
    }

    /// The rows look their GPU up once per run of processes on it: processes that come
    /// back to a GPU after another's each get their own GPU's index and host, and one on a
    /// GPU the sample does not list gets no row, wherever it stands.
    #[test]
    fn processes_of_gpus_interleaved_each_get_their_own_gpu() {
        use crate::reading::{HostProc, ProcKind};
        let config = ViewConfig::default();
        let mut model = Model::new(&config);
        let on = |pid: u32, gpu: &str| ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: GpuId(gpu.into()),
            kind: ProcKind::Compute,
            gpu_memory: None,
            sm_util: None,
            host: HostProc::Hidden,
        };
        let processes = vec![
            on(1, "GPU-a"),
            on(2, "GPU-b"),
            on(3, "GPU-z"),
            on(4, "GPU-a"),
            on(5, "GPU-b"),
            on(6, "GPU-b"),
        ];
        let sample = Sample {
            time: SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus: vec![on_host("GPU-a", 0, "h1"), on_host("GPU-b", 1, "h2")],
            processes,
            hosts: Vec::new(),
            history: None,
        };
        model.apply_sample(sample, &config);
        let mut placed: Vec<(u32, u32, Option<&str>)> = model
            .procs()
            .all
            .iter()
            .map(|r| (r.key.pid, r.gpu_index, r.host.as_deref()))
            .collect();
        placed.sort();
        assert_eq!(
            placed,
            [
                (1, 0, Some("h1")),
                (2, 1, Some("h2")),
                (4, 0, Some("h1")),
                (5, 1, Some("h2")),
                (6, 1, Some("h2")),
            ]
        );
        let held = |id: &str| model.holders(&GpuId(id.into())).map(|h| h.processes);
        assert_eq!((held("GPU-a"), held("GPU-b")), (Some(2), Some(3)));
    }
}
