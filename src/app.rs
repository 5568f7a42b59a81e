//! The interactive terminal: sets up and always restores the terminal, runs the one event
//! loop (samples, keys, resizes, signals), passes every message through `state::update`,
//! carries out the returned effects and redraws after each handled message — never on a timer.
//! The loop reads the outside world only through an injected [`Io`], so tests drive it with
//! scripted events on a `TestBackend`; only [`run`] (in `terminal_setup`) touches the real
//! terminal and OS signals.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use color_eyre::eyre::{Result, WrapErr};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::crossterm::event::Event;
use tokio::sync::mpsc;

use crate::alert_settings::AlertSettings;
use crate::alerts::Alerting;
use crate::alerts::queue::{self, Backlog, Delivery, DeliveryLog, STOP_DRAIN};
use crate::sampler::{self, SamplerEvent};
use crate::signals::Signaller;
use crate::source::GpuSource;
use crate::source::replay::{ReplayHandle, SPEEDS};
use crate::state::{
    Effect, LayoutPref, Msg, ReplayCommand, ReplayStatus, State, ViewConfig, update,
};
use crate::terminal::Screen;
use crate::ui::{self, Theme};

// `run` and what only it needs (the real terminal, its panic hooks, the OS signal
// listeners) live in their own file; the loop below sees none of them.
mod terminal_setup;
pub use terminal_setup::run;
// The signals and terminal modes the loop acts on, as values and a trait tests can fake.
mod os_signal;
pub use os_signal::{KeepModes, OsSignal, TerminalModes};
// Terminal events to messages (keys through the keymap, Ctrl-Z, mouse, paste).
mod input;
use input::terminal_input;
// The real terminal's input on threads of their own, ending when the terminal hangs up.
mod tty_input;
// The status line's own deadline (the one clock the loop keeps).
mod status_expiry;
use status_expiry::StatusExpiry;
// Samples applied, and alerts stepped, on the sampler's thread.
mod tracker;
use tracker::{Tracked, Tracker};

/// The most waiting terminal events handled between two frames.
const MAX_DRAINED: usize = 4096;
/// How long a resize waits for the next one before its frame is drawn (see
/// `settle_resizes`): short enough that a key typed meanwhile is still drawn at once.
const RESIZE_SETTLE: std::time::Duration = std::time::Duration::from_millis(20);
/// The longest a stream of resizes holds back a frame.
const RESIZE_SETTLE_MAX: std::time::Duration = std::time::Duration::from_millis(200);

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user quit (q, Ctrl-C).
    Quit,
    /// A signal asked us to stop; the value is the signal number (for exit code 128+n).
    Signal(i32),
}

/// Start-up choices of the interactive mode.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Start with compact GPU lines.
    pub compact: bool,
    /// Testing aid: panic after this many samples (proves the panic hook restores the terminal).
    pub panic_after_samples: Option<u64>,
    /// Report mouse clicks and the wheel (off by default so selecting text in tmux works).
    pub mouse: bool,
    /// The processes are simulated: confirmed signals are not sent anywhere.
    pub demo: bool,
    /// Replaying a recording: the handle that pauses, seeks and changes speed.
    pub replay: Option<ReplayHandle>,
    /// How many samples one seek step jumps (30 s of recorded time).
    pub seek_samples: i64,
    /// A line for the status bar at start.
    pub notice: Option<String>,
    pub theme: crate::present::ThemeName,
    /// Samples applied before the first frame (the demo's back-filled history).
    pub prelude: Vec<crate::reading::Sample>,
    /// Where alerts go, and whether the bell rings on a new critical one.
    pub alerts: AlertSettings,
}

/// Terminal input as crossterm reads it; the stream ends when the terminal goes away.
pub type Events = Pin<Box<dyn Stream<Item = io::Result<Event>> + Send>>;
/// The OS signals that end the TUI, in arrival order.
pub type OsSignals = Pin<Box<dyn Stream<Item = OsSignal> + Send>>;

/// Everything the loop reads from or does to the world outside the process, besides the
/// GPU source (which the sampler owns). `run` builds the real one; tests script it.
///
/// There is no wall clock: redraws follow messages, the sampler ticks on tokio's timer
/// (paused in tests), `state.model.now()` comes from each sample's own stamp, and the
/// status line's expiry (`status_expiry`) waits on tokio's timer too.
pub struct Io<B: Screen> {
    pub terminal: Terminal<B>,
    /// Keys, resizes and mouse events.
    pub events: Events,
    pub os_signals: OsSignals,
    /// Carries out confirmed signals (the real `kill(2)`, the demo's stand-in, a test's fake).
    pub signaller: Box<dyn Signaller>,
    /// Gives the terminal back on SIGTSTP and takes it again on SIGCONT.
    pub modes: Box<dyn TerminalModes>,
    /// Rings the terminal bell (writes BEL; a test counts).
    pub bell: Box<dyn FnMut() + Send>,
    /// Called once, after the first sample's frame: by then start-up's allocations (clap's
    /// command, the settings, the first sample and frame) are freed, and the real one gives
    /// their pages back to the system (`resident::give_back_freed`; a test counts).
    pub settled: Box<dyn FnMut() + Send>,
    /// Lines for stderr once the terminal is restored (the loop cannot print them itself).
    pub farewell: Vec<String>,
}

/// Runs the TUI against `io` until the user quits, a signal arrives or input ends.
/// Samples come from `source` through the sampler task, which this spawns and stops.
pub async fn event_loop<B>(
    io: &mut Io<B>,
    source: Box<dyn GpuSource>,
    config: ViewConfig,
    options: Options,
) -> Result<Exit>
where
    B: Screen,
    B::Error: Send + Sync + 'static,
{
    let mut session = Session::start(io, source, config, options)?;
    let exit = session.run(io).await?;
    session.deliver_queued_alerts(io).await;
    Ok(exit)
}

/// The loop's own state between messages.
struct Session {
    state: State,
    theme: Theme,
    options: Options,
    /// Each sample as the tracker applied it; `None` once the sampler has gone (the last
    /// frame and the keys stay alive).
    samples: Option<mpsc::Receiver<SamplerEvent<Tracked>>>,
    /// Stops the sampler (a poll in the driver is abandoned) when taken or the session ends.
    sampler: Option<sampler::Task>,
    /// Tells the tracker the view is paused.
    paused: Arc<AtomicBool>,
    samples_seen: u64,
    /// The alert sinks' delivery results (the alerts themselves are stepped by the tracker).
    delivery_log: DeliveryLog,
    deliveries: mpsc::UnboundedReceiver<Delivery>,
    /// What the sinks still have to deliver (waited for at exit, for a bounded time).
    alert_backlog: Backlog,
    /// What the tracker said about the alerts with the sample just handled.
    alert_news: AlertNews,
    /// A resize was handled since the last frame (see `settle_resizes`).
    resized: bool,
    status: StatusExpiry,
}

/// The alert step's news for the UI, from the sample being handled.
#[derive(Default)]
struct AlertNews {
    bell: bool,
    notice: Option<String>,
}

/// What one wait of the loop produced.
enum Next {
    Msg(Msg),
    /// Stop (SIGTSTP) or continued (SIGCONT): the terminal is handed back or taken again,
    /// then the whole screen redrawn.
    Suspend,
    Resume,
    /// Ctrl-Z (a key in raw mode, not SIGTSTP): stop as the signal would.
    Stop,
    /// An event with no meaning here (a key release, focus change, unmapped key): no redraw.
    Ignore,
    Exit(Exit),
}

impl Session {
    /// The state at start, sized to the terminal and drawn once before the first sample.
    fn start<B>(
        io: &mut Io<B>,
        source: Box<dyn GpuSource>,
        config: ViewConfig,
        mut options: Options,
    ) -> Result<Session>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        let theme = Theme::named(options.theme);
        let mut state = State::new(config);
        let (mut alerting, deliveries) = Alerting::start(&options.alerts, options.alerts.bell);
        let delivery_log = std::mem::take(&mut alerting.log);
        let alert_backlog = alerting.backlog();
        let paused = Arc::new(AtomicBool::new(false));
        let mut tracker = Tracker::new(
            &state.model,
            &state.config,
            alerting,
            options.alerts.bell,
            options.replay.clone(),
            paused.clone(),
        );
        for sample in std::mem::take(&mut options.prelude) {
            let applied = tracker.apply(sample);
            update(&mut state, Msg::Applied(applied));
        }
        let interval = state.config.interval;
        let sampler::Sampler { events, task } =
            sampler::spawn_then(source, interval, move |sample| tracker.track(sample));
        state.view.status = options.notice.clone();
        if options.compact {
            state.view.layout = LayoutPref::Compact;
        }
        let size = io.terminal.size().wrap_err("reading the terminal size")?;
        update(
            &mut state,
            Msg::Resize {
                width: size.width,
                height: size.height,
            },
        );
        let session = Session {
            state,
            theme,
            options,
            samples: Some(events),
            sampler: Some(task),
            paused,
            samples_seen: 0,
            delivery_log,
            deliveries,
            alert_backlog,
            alert_news: AlertNews::default(),
            resized: false,
            status: StatusExpiry::default(),
        };
        session.draw(io)?;
        Ok(session)
    }

    async fn run<B>(&mut self, io: &mut Io<B>) -> Result<Exit>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        loop {
            self.status.track(&self.state.view.status);
            // Before each wait, so keys drained with the last frame count too.
            self.paused.store(self.state.view.paused, Ordering::Relaxed);
            let msg = match self.next(io).await? {
                Next::Msg(msg) => msg,
                Next::Ignore => continue,
                Next::Suspend | Next::Resume => {
                    self.redraw_all(io)?;
                    continue;
                }
                Next::Stop => {
                    self.stop_and_resume(io)?;
                    continue;
                }
                Next::Exit(exit) => return Ok(exit),
            };
            let sampled = matches!(msg, Msg::Applied(_));
            self.resized = matches!(msg, Msg::Resize { .. });
            let effects = update(&mut self.state, msg);
            self.alerted(io);
            if let Some(exit) = self.carry_out(effects, io.signaller.as_mut()) {
                return Ok(exit);
            }
            if let Some(exit) = self.drain_input(io).await? {
                return Ok(exit);
            }
            if self.resized
                && let Some(exit) = self.settle_resizes(io).await?
            {
                return Ok(exit);
            }
            self.sync_size(io)?;
            self.draw(io)?;
            if sampled && self.samples_seen == 1 {
                (io.settled)();
            }
        }
    }

    /// At exit, alert messages still queued (a "resolved" among them keeps a receiver's
    /// alert from firing forever) are delivered first, for up to `STOP_DRAIN`, with the
    /// screen saying so; what the drain says is printed once the terminal is restored.
    /// Nothing is sampled or alerted meanwhile. No wait when nothing is queued.
    async fn deliver_queued_alerts<B>(&mut self, io: &mut Io<B>)
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        let waiting: usize = self.alert_backlog.waiting().iter().map(|w| w.1).sum();
        if waiting == 0 {
            return;
        }
        self.sampler = None;
        let s = if waiting == 1 { "" } else { "s" };
        self.state.view.status = Some(format!(
            "delivering {waiting} queued alert message{s} before exiting (up to {STOP_DRAIN:?})"
        ));
        // Best effort: the terminal may be gone (the exit may be its hang-up).
        let _ = self.draw(io);
        let mut said = Vec::new();
        let (backlog, log) = (&self.alert_backlog, &mut self.delivery_log);
        queue::drain(backlog, &mut self.deliveries, log, STOP_DRAIN, |line| {
            said.push(line)
        })
        .await;
        io.farewell.extend(said);
    }

    /// After a resize, waits a moment for the next one before drawing: a window being
    /// dragged (or SIGWINCH sent in a loop) sends sizes faster than a terminal can take
    /// full frames, and each new size repaints the whole screen. Only the last size is
    /// drawn; keys that come meanwhile are handled and drawn with it. Bounded, so a resize
    /// that never stops still lets a frame out.
    async fn settle_resizes<B>(&mut self, io: &mut Io<B>) -> Result<Option<Exit>>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        let deadline = tokio::time::Instant::now() + RESIZE_SETTLE_MAX;
        loop {
            self.resized = false;
            tokio::time::sleep(RESIZE_SETTLE).await;
            if let Some(exit) = self.drain_input(io).await? {
                return Ok(Some(exit));
            }
            if !self.resized || tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// Handles every terminal event already waiting (a paste without bracketed paste, a
    /// burst of keys) before the next draw: one frame for the burst, and no byte left
    /// unread while the loop goes idle. Bounded, so a flood still lets a frame out.
    async fn drain_input<B>(&mut self, io: &mut Io<B>) -> Result<Option<Exit>>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        for _ in 0..MAX_DRAINED {
            let Some(event) = waiting_event(&mut io.events).await else {
                return Ok(None);
            };
            let msg = match terminal_input(event, &self.state)? {
                Next::Msg(msg) => msg,
                Next::Exit(exit) => return Ok(Some(exit)),
                Next::Stop => {
                    self.stop_and_resume(io)?;
                    continue;
                }
                _ => continue,
            };
            self.resized |= matches!(msg, Msg::Resize { .. });
            let effects = update(&mut self.state, msg);
            if let Some(exit) = self.carry_out(effects, io.signaller.as_mut()) {
                return Ok(Some(exit));
            }
        }
        Ok(None)
    }

    /// Rings the bell for a new critical alert of the sample just handled; those there at
    /// start are said on the status line instead (the tracker stepped the alerts).
    fn alerted<B: Screen>(&mut self, io: &mut Io<B>) {
        let news = std::mem::take(&mut self.alert_news);
        if news.bell {
            (io.bell)();
        }
        if let Some(line) = news.notice {
            // After, not instead of, what start-up said (the demo shown for want of a GPU).
            let line = match &self.state.view.status {
                Some(said) => format!("{said}; {line}"),
                None => line,
            };
            let _ = update(&mut self.state, Msg::Notice(line));
        }
    }

    /// Waits for whichever comes first: a sample, terminal input, an alert delivery to
    /// report, or a stopping signal. When several are ready, terminal input goes first and
    /// a sample last: a key waiting while the last frame was drawn is answered before a
    /// sample is applied (a large fleet's takes a while), never after it, as an unbiased
    /// pick did half the time (issue 26 §10).
    async fn next<B: Screen>(&mut self, io: &mut Io<B>) -> Result<Next> {
        Ok(tokio::select! {
            biased;
            event = io.events.next() => terminal_input(event, &self.state)?,
            () = self.status.due() => Next::Msg(self.status.expire()),
            Some(d) = self.deliveries.recv() => match self.delivery_log.record(&d) {
                Some(line) => Next::Msg(Msg::Notice(line)),
                None => Next::Ignore,
            },
            Some(sig) = io.os_signals.next() => match sig {
                OsSignal::Suspend => {
                    io.modes.suspend().wrap_err("handing the terminal back")?;
                    io.modes.resume().wrap_err("taking the terminal again")?;
                    Next::Suspend
                }
                OsSignal::Continue => {
                    io.modes.resume().wrap_err("taking the terminal again")?;
                    Next::Resume
                }
                sig => Next::Exit(Exit::Signal(sig.number())),
            },
            event = next_sample(&mut self.samples) => Next::Msg(self.on_sample(event)),
        })
    }

    fn on_sample(&mut self, event: Option<SamplerEvent<Tracked>>) -> Msg {
        match event {
            Some(SamplerEvent::Sample(Tracked {
                applied,
                bell,
                notice,
            })) => {
                if let Some(handle) = &self.options.replay {
                    let status = replay_status(handle);
                    update(&mut self.state, Msg::Replay(status));
                }
                self.samples_seen += 1;
                if let Some(n) = self.options.panic_after_samples
                    && self.samples_seen > n
                {
                    panic!("--debug-panic-after: deliberate panic after {n} samples");
                }
                self.alert_news = AlertNews { bell, notice };
                Msg::Applied(applied)
            }
            Some(SamplerEvent::Failed(why)) => Msg::SourceFailed(why),
            Some(SamplerEvent::Stalled(waited)) => Msg::SourceStalled(waited),
            Some(SamplerEvent::Notice(text)) => Msg::Notice(text),
            None => {
                self.samples = None;
                Msg::SourceFailed("the sampler stopped".into())
            }
        }
    }

    /// Runs `update`'s effects (and those their results cause); `Some` when one ends the loop.
    fn carry_out(
        &mut self,
        mut effects: Vec<Effect>,
        signaller: &mut dyn Signaller,
    ) -> Option<Exit> {
        while let Some(effect) = effects.pop() {
            match effect {
                Effect::Quit => return Some(Exit::Quit),
                Effect::SendSignal(request) => {
                    let outcome = signaller.send(&request);
                    effects.extend(update(&mut self.state, Msg::SignalResult(outcome)));
                }
                Effect::Replay(command) => {
                    if let Some(handle) = &self.options.replay {
                        steer_replay(handle, command, self.options.seek_samples);
                        let status = replay_status(handle);
                        effects.extend(update(&mut self.state, Msg::Replay(status)));
                    }
                }
            }
        }
        None
    }

    /// Ctrl-Z: hand the terminal back, stop, and on `fg` take it again and redraw.
    fn stop_and_resume<B>(&mut self, io: &mut Io<B>) -> Result<()>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        io.modes.suspend().wrap_err("handing the terminal back")?;
        io.modes.resume().wrap_err("taking the terminal again")?;
        self.redraw_all(io)
    }

    /// After a stop the screen may hold anything and the window may have changed size:
    /// clear it and draw everything. (`resize`, not `clear`: `clear` asks the terminal for
    /// the cursor position, and the input reader would swallow the answer.)
    fn redraw_all<B>(&mut self, io: &mut Io<B>) -> Result<()>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        let size = io.terminal.size().wrap_err("reading the terminal size")?;
        let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        io.terminal.resize(area).wrap_err("clearing the screen")?;
        let resize = Msg::Resize {
            width: size.width,
            height: size.height,
        };
        update(&mut self.state, resize);
        self.draw(io)
    }

    /// Resize events can trail the terminal during a burst: the frame is drawn at the size
    /// the terminal has now (ratatui resizes to it), so the state's layout must be too, or
    /// it would place cells outside the buffer.
    fn sync_size<B: Screen>(&mut self, io: &mut Io<B>) -> Result<()>
    where
        B::Error: Send + Sync + 'static,
    {
        let size = io.terminal.size().wrap_err("reading the terminal size")?;
        if self.state.view.viewport != (size.width, size.height) {
            let resize = Msg::Resize {
                width: size.width,
                height: size.height,
            };
            update(&mut self.state, resize);
        }
        Ok(())
    }

    fn draw<B>(&self, io: &mut Io<B>) -> Result<()>
    where
        B: Screen,
        B::Error: Send + Sync + 'static,
    {
        // Not `Terminal::draw`: its diff would compare every cell a second time (see
        // `terminal::draw`).
        crate::terminal::draw(&mut io.terminal, |f| ui::draw(f, &self.state, &self.theme))
            .wrap_err("drawing the screen")?;
        Ok(())
    }
}

/// Applies a replay key to the shared control; the replay source acts on it next tick.
fn steer_replay(handle: &ReplayHandle, command: ReplayCommand, seek_samples: i64) {
    let Ok(mut c) = handle.lock() else { return };
    match command {
        ReplayCommand::Seek(steps) => c.pending_seek += steps * seek_samples,
        ReplayCommand::Faster => c.speed_index = (c.speed_index + 1).min(SPEEDS.len() - 1),
        ReplayCommand::Slower => c.speed_index = c.speed_index.saturating_sub(1),
        ReplayCommand::TogglePause => c.paused = !c.paused,
    }
}

/// Reads the replay's position (a backward jump's "future" history is the tracker's to drop).
fn replay_status(handle: &ReplayHandle) -> ReplayStatus {
    let Ok(c) = handle.lock() else {
        return ReplayStatus {
            position: 0,
            total: 0,
            speed: 1.0,
            paused: true,
        };
    };
    ReplayStatus {
        position: c.position,
        total: c.total,
        speed: c.speed(),
        paused: c.paused,
    }
}

/// The terminal event already waiting, if any, without waiting for one.
///
/// Polled with this task's own context, never a no-op waker (`now_or_never`): a pending
/// poll hands the stream the waker it will call for the next key, and crossterm's stream
/// keeps the waker of the poll that found it empty. With a no-op waker there, the next key
/// woke nobody and waited for the next sample (up to 4.7 s at `-i 5s`).
async fn waiting_event(events: &mut Events) -> Option<Option<io::Result<Event>>> {
    std::future::poll_fn(|cx| match events.poll_next_unpin(cx) {
        Poll::Ready(event) => Poll::Ready(Some(event)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// The next sampler event, or never once the sampler has gone.
async fn next_sample(
    samples: &mut Option<mpsc::Receiver<SamplerEvent<Tracked>>>,
) -> Option<SamplerEvent<Tracked>> {
    match samples {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
