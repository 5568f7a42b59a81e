//! The application state and the one function that changes it: `update(&mut State, Msg)`.
//! `State` is the model (what the GPUs said, `crate::model`) plus the view (what the user
//! is looking at). Pure: no I/O, no clock (time comes in with each sample), no terminal,
//! and nothing from `ui`: a mouse click reaches `update` already turned into an `Action`.

mod detail;
mod interact;
pub mod signal;

use crate::model::{Applied, Model};
use crate::reading::{GpuId, Sample};

pub use crate::layout::LayoutPref;
pub use crate::model::ViewConfig;
use crate::model::procs::{Column, SortKey};

/// What the user asked for, independent of which key they pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    ToggleHelp,
    /// Show or hide the list of every warning (`w`): the bar shows only as many as fit.
    ToggleWarnings,
    /// Show or hide the selected process's GPU-related environment (`e`).
    ToggleEnv,
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
    /// Enter: in the per-user table, show that user's processes; in the process table,
    /// open the selected process's detail view (the focused GPU's with no row selected).
    Choose,
    /// `d`: open the focused GPU's detail view.
    GpuDetail,
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
    /// A click on a column title: sort by it, or reverse the sort when it is already the one.
    SortByOrReverse(SortKey),
    /// A click on a GPU: focus the GPU at this position in the GPU list, or clear the
    /// focus when it is the focused one.
    ToggleFocusAt(usize),
    /// A click on a row: select the row at this position of the table showing.
    SelectRow(usize),
}

/// Which table fills the lower half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Processes,
    Users,
}

/// A full-screen detail view drawn over the main one, by what it shows (an identity,
/// never a row or a position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Gpu(GpuId),
    Process(crate::history::procs::ProcId),
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
    /// A sample the TUI's tracker applied to its twin of the model (`app::tracker`), to be
    /// installed here; `None` when it was not applied because the view was paused.
    Applied(Option<Box<Applied>>),
    /// The source failed as a whole this tick (the message says why).
    SourceFailed(String),
    /// The poll under way has not come back for this long (a wedged driver call).
    SourceStalled(std::time::Duration),
    /// A line for the status bar from outside the state: the recorder paused on a full
    /// disk, an alert sink failing.
    Notice(String),
    /// Text pasted into the terminal (bracketed paste), as one message.
    Paste(String),
    Action(Action),
    /// Several actions in order (a wheel notch moves the selection three rows).
    Actions(Vec<Action>),
    Resize {
        width: u16,
        height: u16,
    },
    /// What happened when a confirmed signal was sent (or why it was not).
    SignalResult(String),
    /// Replay progress, after each replayed sample.
    Replay(ReplayStatus),
    /// The status line has shown this text for `STATUS_LASTS`: it goes, unless another
    /// line has taken its place meanwhile.
    StatusExpired(String),
}

/// How long a status line (`sent SIGTERM to PID …`) stays when no action clears it first.
pub const STATUS_LASTS: std::time::Duration = std::time::Duration::from_secs(10);

/// What `update` asks the outside world to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Quit,
    /// Re-validate the process identity, then send the signal.
    SendSignal(signal::SignalRequest),
    Replay(ReplayCommand),
}

/// What the user is looking at and doing: selection lives in the model's process table;
/// everything else about the screen is here. Plain data: `update` keeps it consistent.
#[derive(Debug, Clone)]
pub struct View {
    pub paused: bool,
    pub show_help: bool,
    /// The list of every warning, over the screen.
    pub show_warnings: bool,
    /// Which page of the help or warnings overlay shows (the drawing clamps it).
    pub overlay_page: usize,
    /// Digits typed towards a GPU index (`1` then `2` is GPU 12), with how many samples
    /// arrived since the last one: the number is done after two (one to two intervals,
    /// as no clock is read here), or at any other key.
    pub typed_gpu: Option<(u32, u8)>,
    /// The environment popup for the selected process.
    pub show_env: bool,
    pub layout: LayoutPref,
    /// Terminal size in cells, for paging; (0, 0) in headless modes.
    pub viewport: (u16, u16),
    /// First GPU shown when there are more than fit.
    pub gpu_scroll: usize,
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
    /// The detail view open over the main one, if any.
    pub detail: Option<Detail>,
}

impl Default for View {
    fn default() -> Self {
        View {
            paused: false,
            show_help: false,
            show_warnings: false,
            overlay_page: 0,
            typed_gpu: None,
            show_env: false,
            layout: LayoutPref::Auto,
            viewport: (0, 0),
            gpu_scroll: 0,
            panel: Panel::Processes,
            user_selected: 0,
            filter_text: String::new(),
            filter_editing: false,
            filter_error: None,
            dialog: None,
            status: None,
            replay: None,
            detail: None,
        }
    }
}

/// The model (what the GPUs said) and the view (what the user is doing with it).
#[derive(Debug)]
pub struct State {
    pub config: ViewConfig,
    pub model: Model,
    pub view: View,
}

impl State {
    pub fn new(config: ViewConfig) -> Self {
        State {
            model: Model::new(&config),
            config,
            view: View::default(),
        }
    }

    pub fn input_mode(&self) -> InputMode {
        if self.view.dialog.is_some() {
            InputMode::Dialog
        } else if self.view.filter_editing {
            InputMode::Filter
        } else if self.view.replay.is_some() {
            InputMode::Replay
        } else {
            InputMode::Normal
        }
    }

    /// The focused GPU, if any.
    pub fn focus(&self) -> Option<&GpuId> {
        self.model.procs().view.gpu.as_ref()
    }

    /// Whether the process table shows its JOB column: only when some process runs in a
    /// container, pod, Slurm job or service, and the terminal is wide enough to leave the
    /// command room (the GPU lines still name the jobs); always without a terminal.
    pub fn job_column_shown(&self) -> bool {
        const JOB_MIN_WIDTH: u16 = 100;
        let width = self.view.viewport.0;
        self.model.any_job() && (width == 0 || width >= JOB_MIN_WIDTH)
    }

    /// The configured columns, with HOST first when the GPUs come from several hosts, and
    /// JOB only when `job_column_shown`: on a box of login shells it would be an empty
    /// column. The table, mouse clicks and the `--once` text all show these.
    pub fn visible_columns(&self) -> Vec<Column> {
        let mut columns = self.config.columns.clone();
        if !self.job_column_shown() {
            columns.retain(|c| *c != Column::Job);
        }
        if self.model.gpus().iter().any(|g| g.host.is_some()) {
            columns.insert(0, Column::Host);
        }
        columns
    }

    /// The HOST column's longest value (titles included), which the table, mouse clicks and
    /// the `--once` text all size it by.
    pub fn host_width(&self) -> u16 {
        (self.model.procs().all.iter())
            .filter_map(|r| r.host.as_deref())
            .map(|h| h.chars().count())
            .chain([Column::Host.title().len() + 1])
            .max()
            .map_or(0, |w| u16::try_from(w).unwrap_or(u16::MAX))
    }

    /// Lines each GPU takes in compact mode: its own and one per MIG instance.
    pub fn gpu_lines(&self) -> Vec<u16> {
        self.model
            .gpus()
            .iter()
            .map(|g| 1 + g.mig_devices.len().min(u16::MAX as usize - 1) as u16)
            .collect()
    }

    /// What the geometry in `layout` needs to know about this state.
    pub fn layout_input(&self) -> crate::layout::LayoutInput {
        crate::layout::LayoutInput {
            viewport: self.view.viewport,
            gpus: self.model.gpus().len(),
            instance_lines: self.model.gpus().iter().map(|g| g.mig_devices.len()).sum(),
            warnings: self.model.warnings().len(),
            pref: self.view.layout,
            // The footer also carries the selected process's detail line.
            footer: self.view.filter_editing
                || !self.view.filter_text.is_empty()
                || self.view.status.is_some()
                || self.model.procs().selected_row().is_some(),
            table_rows: match self.view.panel {
                Panel::Processes => self.model.procs().len(),
                Panel::Users => self.model.user_rows().len(),
            },
        }
    }
}

/// Applies one message; returns what the outside world must do.
/// The status line goes with the next action taken in the normal view (see `update`).
fn clear_status_on_action(state: &mut State) {
    if matches!(state.input_mode(), InputMode::Normal | InputMode::Replay) {
        state.view.status = None;
    }
}

/// A sample came: `apply` puts it into the model unless the view is paused (then the
/// screen stays as it was); a GPU number being typed waits one sample for its next digit.
fn on_sample(state: &mut State, apply: impl FnOnce(&mut Model, &ViewConfig)) {
    state.view.typed_gpu = state
        .view
        .typed_gpu
        .and_then(|(n, samples)| (samples < 1).then_some((n, samples + 1)));
    if !state.view.paused {
        apply(&mut state.model, &state.config);
        let last = state.model.gpus().len().saturating_sub(1);
        state.view.gpu_scroll = state.view.gpu_scroll.min(last);
        detail::select_shown(state);
    }
}

pub fn update(state: &mut State, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Sample(sample) => on_sample(state, |model, config| {
            model.apply_sample(*sample, config);
        }),
        Msg::Applied(applied) => on_sample(state, |model, _| {
            if let Some(applied) = applied {
                model.install(*applied);
            }
        }),
        Msg::SourceFailed(why) => state.model.source_failed(why),
        Msg::SourceStalled(waited) => state.model.source_stalled(waited),
        Msg::Notice(text) => state.view.status = Some(text),
        Msg::Paste(text) => interact::paste(state, &text),
        Msg::Resize { width, height } => state.view.viewport = (width, height),
        // A status line lasts until the next action ("sent SIGTERM to PID …", the criticals
        // already there at start): left up, it hid the footer that names the selected
        // process, so moving the selection changed nothing but a highlight. Not while a
        // prompt or dialog is open: what it says (a pasted filter cut to its limit) is shown
        // once the prompt closes.
        Msg::Action(action) => {
            clear_status_on_action(state);
            return interact::apply_action(state, action);
        }
        Msg::Actions(actions) => {
            clear_status_on_action(state);
            return actions
                .into_iter()
                .flat_map(|a| interact::apply_action(state, a))
                .collect();
        }
        Msg::SignalResult(text) => state.view.status = Some(text),
        Msg::Replay(status) => state.view.replay = Some(status),
        // As with an action, not while a prompt or dialog is open (the line is for after).
        Msg::StatusExpired(text) => {
            if state.view.status.as_deref() == Some(text.as_str()) {
                clear_status_on_action(state);
            }
        }
    }
    Vec::new()
}
