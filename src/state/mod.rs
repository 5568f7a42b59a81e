//! The application state and the one function that changes it: `update(&mut State, Msg)`.
//! Pure: no I/O, no clock (time comes in with each sample), no terminal. Everything the
//! UI and the headless modes show is derived here.

mod etiquette;
pub mod filter;
pub mod holders;
mod interact;
pub mod mouse;
pub mod procs;
pub mod signal;
pub mod users;
pub mod warnings;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use crate::history::GpuHistory;
use crate::source::{GpuId, GpuReading, HostInfo, ProcReading, Sample};
use procs::{ProcRow, ProcTable, SortKey};
use warnings::{Alarm, Thresholds, Warning};

/// What the user asked for, independent of which key they pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    ToggleHelp,
    SelectUp,
    SelectDown,
    PageUp,
    PageDown,
    SelectFirst,
    SelectLast,
    SortNext,
    SortPrev,
    SortReverse,
    SortBy(SortKey),
    TogglePause,
    ToggleCompact,
    ScrollGpusUp,
    ScrollGpusDown,
    /// Show only this GPU's processes (by GPU index) and highlight its panel.
    FocusGpu(u32),
    FocusNext,
    FocusPrev,
    /// Switch between the process table and the per-user table.
    ToggleUsers,
    /// Enter: in the per-user table, show that user's processes.
    Choose,
    OpenFilter,
    FilterInput(char),
    FilterBackspace,
    /// Enter while typing: keep the filter, stop typing.
    FilterDone,
    /// Esc while typing: drop the filter.
    FilterCancel,
    /// Ask to send a signal to the selected process (opens a confirmation).
    Signal(signal::Sig),
    /// `y` in a confirmation dialog.
    Confirm,
    /// Anything else in a confirmation dialog.
    Cancel,
    /// Replay only: jump back / forward, slower / faster.
    SeekBack,
    SeekForward,
    SpeedDown,
    SpeedUp,
    /// Esc: close help, leave the per-user table, or clear focus and filters.
    Back,
}

/// Which table fills the lower half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Processes,
    Users,
}

/// What keys mean right now (the keymap asks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    Normal,
    /// Typing a filter after `/`.
    Filter,
    /// A confirmation dialog is open.
    Dialog,
    /// Replaying a recording: arrows seek, +/- change speed.
    Replay,
}

/// Where a replay is, as the TUI shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayStatus {
    pub position: usize,
    pub total: usize,
    pub speed: f64,
    pub paused: bool,
}

/// What the TUI asks of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayCommand {
    /// Jump by this many seek steps (negative: back).
    Seek(i64),
    Faster,
    Slower,
    TogglePause,
}

/// Everything that can happen to the state.
#[derive(Debug, Clone)]
pub enum Msg {
    Sample(Box<Sample>),
    /// The source failed as a whole this tick (the message says why).
    SourceFailed(String),
    Action(Action),
    Resize {
        width: u16,
        height: u16,
    },
    /// What happened when a confirmed signal was sent (or why it was not).
    SignalResult(String),
    Mouse(mouse::MouseInput),
    /// Replay progress, after each replayed sample.
    Replay(ReplayStatus),
    /// The replay jumped back in time: history and alarms from the "future" are dropped.
    Rewound,
}

/// What `update` asks the outside world to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
    /// Re-validate the process identity, then send the signal.
    SendSignal(signal::SignalRequest),
    Replay(ReplayCommand),
}

/// How GPUs are laid out: chosen by size, or forced by the user with `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutPref {
    Auto,
    Compact,
    Full,
}

/// Settings the state needs (a subset of the resolved `Settings`).
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
    /// Offset of local time from UTC, resolved once at start-up (tests pin it).
    pub utc_offset: chrono::FixedOffset,
    pub theme: crate::ui::theme::ThemeName,
    /// No signals can be sent (`--readonly`).
    pub readonly: bool,
    /// Process-table columns shown, in order.
    pub columns: Vec<procs::Column>,
    /// The table's sort when the program starts.
    pub sort: SortKey,
    pub sort_dir: procs::SortDir,
    /// Only these GPUs are shown (`--only`); `None` shows all.
    pub only: Option<Vec<crate::select::GpuSelector>>,
}

impl Default for ViewConfig {
    fn default() -> Self {
        ViewConfig {
            interval: Duration::from_secs(1),
            history_len: 300,
            thresholds: Thresholds::default(),
            current_user: None,
            current_uid: None,
            utc_offset: chrono::FixedOffset::east_opt(0).expect("zero offset is valid"),
            theme: crate::ui::theme::ThemeName::Dark,
            readonly: false,
            columns: procs::Column::ALL.to_vec(),
            sort: SortKey::Vram,
            sort_dir: procs::SortDir::Descending,
            only: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct State {
    pub config: ViewConfig,
    /// Time of the latest sample shown.
    pub now: Option<SystemTime>,
    pub host: HostInfo,
    pub gpus: Vec<GpuReading>,
    pub histories: HashMap<GpuId, GpuHistory>,
    alarms: HashMap<GpuId, Alarm>,
    pub warnings: Vec<Warning>,
    pub procs: ProcTable,
    /// Who holds each GPU, derived from the latest sample's processes.
    pub holders: HashMap<GpuId, holders::Holders>,
    pub paused: bool,
    pub show_help: bool,
    pub layout: LayoutPref,
    /// Terminal size in cells, for paging; (0, 0) in headless modes.
    pub viewport: (u16, u16),
    /// First GPU shown when there are more than fit.
    pub gpu_scroll: usize,
    /// The last whole-source failure, cleared by the next good sample.
    pub source_error: Option<String>,
    pub panel: Panel,
    /// Selected row of the per-user table.
    pub user_selected: usize,
    /// The filter line as typed, and whether it is being typed now.
    pub filter_text: String,
    pub filter_editing: bool,
    /// Why the filter line does not parse (the table then ignores it).
    pub filter_error: Option<String>,
    pub dialog: Option<signal::Dialog>,
    /// One line of feedback (signal results, refusals).
    pub status: Option<String>,
    /// Set when replaying a recording.
    pub replay: Option<ReplayStatus>,
}

impl State {
    pub fn new(config: ViewConfig) -> Self {
        let mut procs = ProcTable::default();
        procs.set_sort(config.sort, config.sort_dir);
        State {
            config,
            now: None,
            host: HostInfo::default(),
            gpus: Vec::new(),
            histories: HashMap::new(),
            alarms: HashMap::new(),
            warnings: Vec::new(),
            procs,
            holders: HashMap::new(),
            paused: false,
            show_help: false,
            layout: LayoutPref::Auto,
            viewport: (0, 0),
            gpu_scroll: 0,
            source_error: None,
            panel: Panel::Processes,
            user_selected: 0,
            filter_text: String::new(),
            filter_editing: false,
            filter_error: None,
            dialog: None,
            status: None,
            replay: None,
        }
    }

    pub fn input_mode(&self) -> InputMode {
        if self.dialog.is_some() {
            InputMode::Dialog
        } else if self.filter_editing {
            InputMode::Filter
        } else if self.replay.is_some() {
            InputMode::Replay
        } else {
            InputMode::Normal
        }
    }

    /// The focused GPU, if any.
    pub fn focus(&self) -> Option<&GpuId> {
        self.procs.view.gpu.as_ref()
    }

    /// The per-user table for the latest sample.
    pub fn user_rows(&self) -> Vec<users::UserRow> {
        users::summarize(&self.procs.all, &self.gpus)
    }

    /// The worst warning on a GPU, for colouring its panel.
    pub fn gpu_severity(&self, id: &GpuId) -> Option<warnings::Severity> {
        self.warnings
            .iter()
            .filter(|w| w.gpu() == Some(id))
            .map(|w| w.severity)
            .max()
    }
}

/// Applies one message; returns what the outside world must do.
pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Sample(sample) => {
            if !state.paused {
                apply_sample(state, *sample);
            }
            Vec::new()
        }
        Msg::SourceFailed(why) => {
            state.source_error = Some(why);
            Vec::new()
        }
        Msg::Resize { width, height } => {
            state.viewport = (width, height);
            Vec::new()
        }
        Msg::Action(action) => interact::apply_action(state, action),
        Msg::SignalResult(text) => {
            state.status = Some(text);
            Vec::new()
        }
        Msg::Mouse(input) => {
            mouse::apply(state, input);
            Vec::new()
        }
        Msg::Replay(status) => {
            state.replay = Some(status);
            Vec::new()
        }
        Msg::Rewound => {
            state.histories.clear();
            state.alarms.clear();
            state.warnings.clear();
            Vec::new()
        }
    }
}

fn apply_sample(state: &mut State, mut sample: Sample) {
    if let Some(only) = &state.config.only {
        sample.gpus.retain(|g| crate::select::selected(only, g));
        let kept: Vec<GpuId> = sample.gpus.iter().map(|g| g.id.clone()).collect();
        sample.processes.retain(|p| kept.contains(&p.gpu));
    }
    let now = sample.time;
    state.now = Some(now);
    state.host = sample.host;
    state.source_error = None;

    // History and alarms are keyed by UUID; GPUs that disappeared are forgotten so memory
    // stays bounded by the current fleet.
    let capacity = state.config.history_len;
    let present: std::collections::HashSet<&GpuId> = sample.gpus.iter().map(|g| &g.id).collect();
    state.histories.retain(|id, _| present.contains(id));
    state.alarms.retain(|id, _| present.contains(id));
    // Processes grouped by GPU once, not filtered again for every GPU.
    let mut by_gpu: HashMap<&GpuId, Vec<&ProcReading>> = HashMap::new();
    for p in &sample.processes {
        by_gpu.entry(&p.gpu).or_default().push(p);
    }
    let mut warnings = Vec::new();
    for gpu in &sample.gpus {
        let history = state
            .histories
            .entry(gpu.id.clone())
            .or_insert_with(|| GpuHistory::new(capacity));
        history.push(now, gpu);
        let prev = state.alarms.get(&gpu.id).cloned().unwrap_or_default();
        let on_gpu = by_gpu.get(&gpu.id).map_or(&[][..], Vec::as_slice);
        let (alarm, mut raised) =
            warnings::evaluate(&prev, gpu, on_gpu, history, &state.config.thresholds, now);
        state.alarms.insert(gpu.id.clone(), alarm);
        warnings.append(&mut raised);
    }
    for h in sample.hosts.iter().filter(|h| h.error.is_some()) {
        warnings.push(warnings::host_down(
            &h.name,
            h.error.as_deref().unwrap_or(""),
        ));
    }
    warnings::sort(&mut warnings);
    state.warnings = warnings;

    let gpu_of: HashMap<&GpuId, &GpuReading> = sample.gpus.iter().map(|g| (&g.id, g)).collect();
    let rows: Vec<ProcRow> = sample
        .processes
        .iter()
        .map(|p| {
            let gpu = gpu_of.get(&p.gpu);
            let mut row = ProcRow::from_reading(p, gpu.map_or(u32::MAX, |g| g.index), now);
            row.host = gpu.and_then(|g| g.host.clone());
            row
        })
        .collect();
    state.holders = holders::by_gpu(&rows);
    state.procs.set_rows(rows);
    state.gpus = sample.gpus;
    state.gpu_scroll = state.gpu_scroll.min(state.gpus.len().saturating_sub(1));
}
