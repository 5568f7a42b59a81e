//! The real TUI loop (`app::event_loop`) on paused tokio time, with its whole outside world
//! scripted: keys, resizes and mouse events from a channel, OS signals from another, a
//! `TestBackend` screen that reports every frame, and a signaller that records instead of
//! calling kill(2). No terminal, no real signals, no sleeping.

use crate::common;

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream;
use gpuwatch::app::{self, Exit, Io, Options, OsSignal};
use gpuwatch::reading::Sample;
use gpuwatch::signals::Signaller;
use gpuwatch::source::{GpuSource, SourceError};
use gpuwatch::state::signal::{Sig, SignalRequest};
use gpuwatch::state::{Action, Msg, State, ViewConfig, update};
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Size};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

/// A drawn frame: its size and its text, one line per row.
#[derive(Debug, Clone)]
struct Frame {
    size: Size,
    text: String,
}

/// A `TestBackend` the test can resize (as a real terminal resizes before crossterm reports
/// it) and that sends each finished frame to the test.
struct Screen {
    inner: Arc<Mutex<TestBackend>>,
    frames: UnboundedSender<Frame>,
}

/// Given its frames cell by cell, as any backend but the terminal's own.
impl gpuwatch::terminal::Screen for Screen {}

impl Backend for Screen {
    type Error = std::convert::Infallible;

    fn draw<'a, I: Iterator<Item = (u16, u16, &'a Cell)>>(
        &mut self,
        content: I,
    ) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.lock().unwrap().get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().clear()
    }
    fn clear_region(&mut self, t: ClearType) -> Result<(), Self::Error> {
        self.inner.lock().unwrap().clear_region(t)
    }
    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.lock().unwrap().size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.lock().unwrap().window_size()
    }
    /// ratatui flushes once per `Terminal::draw`: one finished frame.
    fn flush(&mut self) -> Result<(), Self::Error> {
        let backend = self.inner.lock().unwrap();
        let buffer = backend.buffer();
        let text = (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n");
        let size = Size::new(buffer.area.width, buffer.area.height);
        let _ = self.frames.send(Frame { size, text });
        Ok(())
    }
}

/// Records confirmed requests instead of sending anything.
struct Recording(Arc<Mutex<Vec<SignalRequest>>>);

impl Signaller for Recording {
    fn send(&mut self, r: &SignalRequest) -> String {
        self.0.lock().unwrap().push(r.clone());
        format!("recorded {} for PID {}", r.signal.name(), r.pid)
    }
}

/// The test's side of the scripted world.
struct Script {
    events: UnboundedSender<io::Result<Event>>,
    signals: UnboundedSender<OsSignal>,
    frames: UnboundedReceiver<Frame>,
    backend: Arc<Mutex<TestBackend>>,
    sent: Arc<Mutex<Vec<SignalRequest>>>,
}

/// A scripted `Io` on a `width`x`height` screen.
fn scripted(width: u16, height: u16) -> (Script, Io<Screen>) {
    let (events, event_rx) = mpsc::unbounded_channel();
    let (signals, signal_rx) = mpsc::unbounded_channel();
    let (frame_tx, frames) = mpsc::unbounded_channel();
    let backend = Arc::new(Mutex::new(TestBackend::new(width, height)));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let screen = Screen {
        inner: backend.clone(),
        frames: frame_tx,
    };
    let io = Io {
        terminal: Terminal::new(screen).unwrap(),
        events: Box::pin(receiver_stream(event_rx)),
        os_signals: Box::pin(receiver_stream(signal_rx)),
        signaller: Box::new(Recording(sent.clone())),
        modes: Box::new(gpuwatch::app::KeepModes),
        bell: Box::new(|| {}),
        settled: Box::new(|| {}),
        farewell: Vec::new(),
    };
    let script = Script {
        events,
        signals,
        frames,
        backend,
        sent,
    };
    (script, io)
}

fn receiver_stream<T>(mut rx: UnboundedReceiver<T>) -> impl futures_util::Stream<Item = T> {
    stream::poll_fn(move |cx| rx.poll_recv(cx))
}

impl Script {
    fn key(&self, c: char) {
        let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        self.events.send(Ok(Event::Key(key))).unwrap();
    }

    /// The next frame that satisfies `ok`, within a minute of (paused, so instant) time.
    async fn frame_where(&mut self, what: &str, ok: impl Fn(&Frame) -> bool) -> Frame {
        let mut last = None;
        let wait = async {
            while let Some(frame) = self.frames.recv().await {
                if ok(&frame) {
                    return Some(frame);
                }
                last = Some(frame);
            }
            None
        };
        match tokio::time::timeout(Duration::from_secs(60), wait).await {
            Ok(Some(frame)) => frame,
            _ => panic!("no frame with {what}; the last one:\n{last:#?}"),
        }
    }

    async fn frame_with(&mut self, text: &str) -> Frame {
        self.frame_where(text, |f| f.text.contains(text)).await
    }
}

const GPU: &str = "NVIDIA H100";

fn config() -> ViewConfig {
    common::config()
}

/// Always the same sample: the process table cannot change under the test's selection.
struct Fixed(Sample);

impl GpuSource for Fixed {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        Ok(self.0.clone())
    }
}

#[tokio::test(start_paused = true)]
async fn q_quits_after_the_gpus_are_on_screen() {
    let (mut script, mut io) = scripted(120, 40);
    let source = Box::new(common::sim(2));
    let run = app::event_loop(&mut io, source, config(), Options::default());
    let drive = async {
        let first = script.frames.recv().await.unwrap();
        assert!(!first.text.contains(GPU), "drawn once before any sample");
        let frame = script.frame_with(GPU).await;
        assert!(frame.text.contains("alice"), "{}", frame.text);
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
}

/// Issue 25: start-up's freed memory is given back once, after the first sample's frame
/// (not before it: the first sample and frame are part of start-up; not per sample).
#[tokio::test(start_paused = true)]
async fn freed_memory_is_given_back_once_after_the_first_samples_frame() {
    let (mut script, mut io) = scripted(120, 40);
    let calls = Arc::new(Mutex::new(0));
    let counter = calls.clone();
    io.settled = Box::new(move || *counter.lock().unwrap() += 1);
    let run = app::event_loop(
        &mut io,
        Box::new(common::sim(2)),
        config(),
        Options::default(),
    );
    let drive = async {
        let first = script.frames.recv().await.unwrap();
        assert!(!first.text.contains(GPU), "drawn once before any sample");
        assert_eq!(*calls.lock().unwrap(), 0, "before the first sample");
        script.frame_with(GPU).await;
        for _ in 0..3 {
            script.frame_with(GPU).await;
        }
        assert_eq!(
            *calls.lock().unwrap(),
            1,
            "once, after the first sample's frame"
        );
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
    assert_eq!(*calls.lock().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn sigterm_ends_the_loop_with_its_number() {
    let (mut script, mut io) = scripted(100, 30);
    let run = app::event_loop(
        &mut io,
        Box::new(common::sim(1)),
        config(),
        Options::default(),
    );
    let drive = async {
        script.frame_with(GPU).await;
        script.signals.send(OsSignal::Terminate).unwrap();
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Signal(15));
    assert_eq!(OsSignal::Hangup.number(), 1);
    assert_eq!(OsSignal::Interrupt.number(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_resize_redraws_at_the_new_size() {
    let (mut script, mut io) = scripted(80, 24);
    let run = app::event_loop(
        &mut io,
        Box::new(common::sim(2)),
        config(),
        Options::default(),
    );
    let drive = async {
        // 80x24 is small enough for compact lines, which leave out the GPU's name.
        let before = script.frame_with("2 GPUs").await;
        assert_eq!(before.size, Size::new(80, 24));
        assert!(!before.text.contains(GPU), "{}", before.text);
        // The terminal changes size first, then crossterm reports it.
        script.backend.lock().unwrap().resize(150, 45);
        script.events.send(Ok(Event::Resize(150, 45))).unwrap();
        let after = script
            .frame_where("150x45", |f| f.size == Size::new(150, 45))
            .await;
        assert!(after.text.contains(GPU), "{}", after.text);
        let lines: Vec<&str> = after.text.lines().collect();
        assert_eq!(lines.len(), 45);
        assert!(lines.iter().all(|l| l.chars().count() == 150));
        // A wheel turn and a plain move go through the mouse path without harm.
        let wheel = MouseEvent {
            kind: MouseEventKind::ScrollDown,
            column: 10,
            row: 20,
            modifiers: KeyModifiers::NONE,
        };
        script.events.send(Ok(Event::Mouse(wheel))).unwrap();
        let moved = MouseEvent {
            kind: MouseEventKind::Moved,
            ..wheel
        };
        script.events.send(Ok(Event::Mouse(moved))).unwrap();
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
    let shown = script.backend.lock().unwrap().buffer().area;
    assert_eq!((shown.width, shown.height), (150, 45));
}

/// What the first row's signal dialog asks for, worked out on a state of our own.
fn expected_request(sample: &Sample, cfg: ViewConfig) -> SignalRequest {
    let mut state = State::new(cfg);
    update(&mut state, Msg::Sample(Box::new(sample.clone())));
    update(&mut state, Msg::Action(Action::SelectFirst));
    update(&mut state, Msg::Action(Action::Signal(Sig::Term)));
    state
        .view
        .dialog
        .expect("the first process may be signalled")
        .request
}

#[tokio::test(start_paused = true)]
async fn a_confirmed_signal_reaches_the_signaller_with_that_pid() {
    let sample = common::sim(2).sample().unwrap();
    // Root sees the dialog for anyone's process; then run as that process's owner so one
    // `y` confirms.
    let probe = expected_request(
        &sample,
        ViewConfig {
            current_uid: Some(0),
            ..config()
        },
    );
    let cfg = ViewConfig {
        current_uid: Some(probe.uid),
        current_user: Some(probe.user.clone()),
        ..config()
    };
    let expected = expected_request(&sample, cfg.clone());
    let (mut script, mut io) = scripted(120, 40);
    let run = app::event_loop(&mut io, Box::new(Fixed(sample)), cfg, Options::default());
    let drive = async {
        script.frame_with(GPU).await;
        script.key('g');
        script.key('T');
        let pid = expected.pid.to_string();
        let dialog = script
            .frame_where("the dialog", |f| {
                f.text.contains("SIGTERM") && f.text.contains(&pid)
            })
            .await;
        assert!(script.sent.lock().unwrap().is_empty(), "{}", dialog.text);
        script.key('y');
        script
            .frame_with(&format!("recorded SIGTERM for PID {pid}"))
            .await;
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
    assert_eq!(*script.sent.lock().unwrap(), vec![expected]);
}

#[tokio::test(start_paused = true)]
async fn broken_terminal_input_is_an_error_and_ended_input_hangs_up() {
    let (mut script, mut io) = scripted(80, 24);
    let run = app::event_loop(
        &mut io,
        Box::new(common::sim(1)),
        config(),
        Options::default(),
    );
    let drive = async {
        script.frame_with(GPU).await;
        let broken = io::Error::other("tty gone");
        script.events.send(Err(broken)).unwrap();
    };
    let (exit, ()) = tokio::join!(run, drive);
    let err = exit.unwrap_err();
    assert_eq!(format!("{err:#}"), "reading terminal input: tty gone");

    let (script, mut io) = scripted(80, 24);
    drop(script.events);
    let exit = app::event_loop(
        &mut io,
        Box::new(common::sim(1)),
        config(),
        Options::default(),
    );
    // Ended input is a hung-up terminal: exit as SIGHUP would (129).
    assert_eq!(exit.await.unwrap(), Exit::Signal(libc::SIGHUP));
}

/// Options whose alerts go out for critical OOM warnings, which `hot_config` raises on
/// every GPU at the first sample.
fn alerting(sinks: Vec<gpuwatch::alert_settings::Sink>, bell: bool) -> Options {
    Options {
        alerts: gpuwatch::alert_settings::AlertSettings {
            sinks,
            bell,
            ..Default::default()
        },
        ..Options::default()
    }
}

fn hot_config() -> ViewConfig {
    let mut cfg = config();
    cfg.thresholds.oom_warn_percent = 1.0;
    cfg.thresholds.oom_critical_percent = 2.0;
    cfg
}

/// The demo fleet, except that GPU 1's VRAM reads empty at the samples `empty` names (from
/// 0): GPU 0 is critical (under `flap_config`) from the start, GPU 1 turns critical while
/// watched, and crashes and refills like the demo's OOM job.
struct Flapping {
    inner: gpuwatch::source::sim::SimSource,
    taken: usize,
    empty: fn(usize) -> bool,
}

impl GpuSource for Flapping {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let mut sample = self.inner.sample()?;
        if (self.empty)(self.taken) {
            sample.gpus[1].memory_used = Some(gpuwatch::units::Bytes(0));
        }
        self.taken += 1;
        Ok(sample)
    }
}

/// Issue 20: the bell does not ring for what was already critical when gpuwatch started
/// (the status line says it once instead); it rings once for a critical that is new while
/// watching, not again when it clears and comes back (a crash loop), and never with
/// `--no-bell`.
/// VRAM over 60 % is critical, and clears below 58 % (`hot_config`'s 2 % never clears).
fn flap_config() -> ViewConfig {
    let mut cfg = config();
    cfg.thresholds.oom_warn_percent = 50.0;
    cfg.thresholds.oom_critical_percent = 60.0;
    cfg
}

#[tokio::test(start_paused = true)]
async fn the_bell_rings_for_a_critical_new_while_watching_not_for_one_there_at_start() {
    const AT_START: &str = "critical since before start: oom_risk on GPU 0";
    for bell in [true, false] {
        let (mut script, mut io) = scripted(120, 40);
        let rings = Arc::new(Mutex::new(0));
        let counter = rings.clone();
        io.bell = Box::new(move || *counter.lock().unwrap() += 1);
        // Empty, full from the 4th sample, empty (crashed) twice, full again, and so on.
        let source = Flapping {
            inner: common::sim(2),
            taken: 0,
            empty: |n| n < 3 || (n >= 5 && n % 4 < 2),
        };
        let run = app::event_loop(
            &mut io,
            Box::new(source),
            flap_config(),
            alerting(vec![], bell),
        );
        let drive = async {
            let first = script.frame_with("OOM risk").await;
            // The alert step runs after the sample's frame (keys typed during a large
            // sample are not kept waiting for it): what it says is the very next frame,
            // drawn before the loop waits again.
            let next = script.frames.try_recv().ok();
            let said = [Some(&first), next.as_ref()].into_iter().flatten();
            let said: Vec<_> = said.filter(|f| f.text.contains(AT_START)).collect();
            assert_eq!(!said.is_empty(), bell, "{}\n{next:#?}", first.text);
            assert_eq!(*rings.lock().unwrap(), 0, "GPU 0 was critical at start");
            for _ in 0..16 {
                script.frame_with("OOM risk").await;
            }
            script.key('q');
        };
        let (exit, ()) = tokio::join!(run, drive);
        assert_eq!(exit.unwrap(), Exit::Quit);
        assert_eq!(*rings.lock().unwrap(), usize::from(bell), "bell {bell}");
    }
}

// Real time: the command runs on its own thread, outside tokio's paused clock.
#[tokio::test]
async fn a_failing_alert_sink_is_said_on_the_status_line() {
    let (mut script, mut io) = scripted(160, 40);
    let sink = gpuwatch::alert_settings::Sink::Command {
        command: "exit 3".into(),
    };
    let run = app::event_loop(
        &mut io,
        Box::new(common::sim(2)),
        hot_config(),
        alerting(vec![sink], true),
    );
    let drive = async {
        script
            .frame_with("alert command \"exit 3\" failed: exit 3")
            .await;
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
}

/// Nothing drawn for `wait` of (paused) time.
async fn stays_quiet(script: &mut Script, wait: Duration, what: &str) {
    if let Ok(frame) = tokio::time::timeout(wait, script.frames.recv()).await {
        panic!("{what} redrew with no sample and no key:\n{frame:#?}");
    }
}

/// Issue 11: the detail views redraw on a sample or a key like the rest of the screen,
/// never on a timer of their own. With the next sample an hour away, each view left open
/// for half an hour draws no frame; a key draws one at once.
#[tokio::test(start_paused = true)]
async fn the_detail_views_redraw_only_on_a_sample_or_a_key() {
    let sample = common::sim(2).sample().unwrap();
    let cfg = ViewConfig {
        interval: Duration::from_secs(3600),
        ..config()
    };
    let (mut script, mut io) = scripted(120, 40);
    let run = app::event_loop(&mut io, Box::new(Fixed(sample)), cfg, Options::default());
    let key = |code| Ok(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    let drive = async {
        script.frame_with(GPU).await;
        script.key('g');
        script.events.send(key(KeyCode::Enter)).unwrap();
        script.frame_with("parents:").await;
        stays_quiet(&mut script, Duration::from_secs(1800), "the process view").await;
        script.events.send(key(KeyCode::Esc)).unwrap();
        script.frame_with("Processes (").await;
        script.key('0');
        script.key('d');
        script.frame_with("P-state").await;
        stays_quiet(&mut script, Duration::from_secs(1800), "the GPU view").await;
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
}

/// "Instant and truthful" §5: a status line goes by itself after `STATUS_LASTS` (10 s of
/// tokio's paused clock), with the next sample an hour away, and not before.
#[tokio::test(start_paused = true)]
async fn a_status_line_goes_by_itself_after_ten_seconds() {
    let sample = common::sim(2).sample().unwrap();
    let cfg = ViewConfig {
        interval: Duration::from_secs(3600),
        ..config()
    };
    let options = Options {
        notice: Some("said at start".into()),
        ..Options::default()
    };
    let (mut script, mut io) = scripted(120, 40);
    let run = app::event_loop(&mut io, Box::new(Fixed(sample)), cfg, options);
    let drive = async {
        script.frame_with("said at start").await;
        let shown = tokio::time::Instant::now();
        script
            .frame_where("the line gone", |f| !f.text.contains("said at start"))
            .await;
        let lasted = shown.elapsed();
        assert!(
            lasted >= gpuwatch::state::STATUS_LASTS - Duration::from_secs(1)
                && lasted <= gpuwatch::state::STATUS_LASTS + Duration::from_secs(1),
            "the status line lasted {lasted:?}"
        );
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
}

/// Counts the samples taken from the source it wraps.
struct Counted<S>(S, Arc<AtomicUsize>);

impl<S: GpuSource> GpuSource for Counted<S> {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        self.1.fetch_add(1, SeqCst);
        self.0.sample()
    }
}

/// Issue 26 §10 moved each sample's apply off the UI thread, to a tracker whose model
/// shares the charts' histories with the UI's: a paused view must still stand still while
/// samples come — its charts too, which the tracker would scroll did it apply them — and
/// move again once resumed.
#[tokio::test(start_paused = true)]
async fn a_paused_view_stands_still_while_samples_come_and_moves_again_after() {
    let polls = Arc::new(AtomicUsize::new(0));
    let source = Box::new(Counted(common::sim(2), polls.clone()));
    let (mut script, mut io) = scripted(120, 40);
    let run = app::event_loop(&mut io, source, config(), Options::default());
    let drive = async {
        // A few samples first, so the charts have points to scroll.
        while polls.load(SeqCst) < 5 {
            script.frame_with(GPU).await;
        }
        script.key('p');
        let paused = script.frame_with("PAUSED").await;
        let at = polls.load(SeqCst);
        while polls.load(SeqCst) < at + 10 {
            script.frames.recv().await.expect("a frame");
        }
        let still = script.frame_with("PAUSED").await;
        assert_eq!(
            still.text,
            paused.text,
            "the screen moved while paused ({} samples)",
            polls.load(SeqCst) - at
        );
        script.key('p');
        script
            .frame_where("the view moving again", |f| {
                !f.text.contains("PAUSED") && f.text != paused.text
            })
            .await;
        script.key('q');
    };
    let (exit, ()) = tokio::join!(run, drive);
    assert_eq!(exit.unwrap(), Exit::Quit);
}
