//! The TUI's tracker: applies each sample to a twin of the UI's model (histories, alarms,
//! warnings, rows, holders) and steps the alerts on it, on the sampler's thread right after
//! the poll (`sampler::spawn_then`), then hands the UI what the sample set
//! (`model::Applied`). Before, all of it ran on the UI thread: a
//! key typed while a 10,000-GPU Prometheus fleet's sample was applied waited for the state
//! update (~60 ms) and the alert step (~40 ms) before its frame (issue 26 §10: within
//! 50 ms). Now the UI thread's share of a sample is a few moves whatever the fleet's size.
//!
//! The two models share the histories (`model::split`), so nothing is kept twice. The
//! tracker reads two things the UI decides: whether the view is paused (a paused view's
//! charts stand still, so the sample is not applied at all) and whether a replay jumped
//! back (its "future" history and alarms are dropped before the next sample).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::alerts::{Alerting, rings_bell, start_notice};
use crate::model::{Applied, Model, ViewConfig};
use crate::reading::Sample;
use crate::source::replay::ReplayHandle;

/// What the tracker makes of one sample for the UI.
#[derive(Debug)]
pub struct Tracked {
    /// What it set (`None`: not applied, the view was paused).
    pub applied: Option<Box<Applied>>,
    /// A new critical alert rings the bell.
    pub bell: bool,
    /// The line that names the criticals already there when the TUI started.
    pub notice: Option<String>,
}

/// The twin model and what it needs to apply samples and step the alerts.
pub struct Tracker {
    model: Model,
    config: ViewConfig,
    alerting: Alerting,
    /// The bell is on: alerts new while the TUI watches ring it, those there at start
    /// are named on the status line.
    bell: bool,
    replay: Option<ReplayHandle>,
    /// The UI's view is paused (set by the UI after every message it handles).
    paused: Arc<AtomicBool>,
}

impl Tracker {
    /// A tracker whose model shares `ui`'s histories.
    pub fn new(
        ui: &Model,
        config: &ViewConfig,
        alerting: Alerting,
        bell: bool,
        replay: Option<ReplayHandle>,
        paused: Arc<AtomicBool>,
    ) -> Tracker {
        Tracker {
            model: ui.twin(config),
            config: config.clone(),
            alerting,
            bell,
            replay,
            paused,
        }
    }

    /// Applies a sample without stepping the alerts (the demo's back-filled history, which
    /// is not news); `None` when the view is paused.
    pub fn apply(&mut self, sample: Sample) -> Option<Box<Applied>> {
        self.apply_here(sample)
            .then(|| Box::new(self.model.take_applied()))
    }

    /// Applies a sample and steps the alerts on it (queued for their sinks, never waited
    /// for).
    pub fn track(&mut self, sample: Sample) -> Tracked {
        if !self.apply_here(sample) {
            return Tracked {
                applied: None,
                bell: false,
                notice: None,
            };
        }
        // On the model before its parts move to the UI: the alerts read its warnings, GPUs
        // and holders.
        let events = self.alerting.on_sample(&self.model);
        let (bell, notice) = if self.bell {
            (events.iter().any(rings_bell), start_notice(&events))
        } else {
            (false, None)
        };
        Tracked {
            applied: Some(Box::new(self.model.take_applied())),
            bell,
            notice,
        }
    }

    /// Applies `sample` to the twin unless the view is paused; whether it did.
    fn apply_here(&mut self, sample: Sample) -> bool {
        if self.paused.load(Ordering::Relaxed) {
            return false;
        }
        let rewound = self.replay.as_ref().is_some_and(|handle| {
            handle
                .lock()
                .is_ok_and(|mut c| std::mem::take(&mut c.rewound))
        });
        if rewound {
            self.model.rewind();
        }
        self.model.apply_sample(sample, &self.config);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::alert_settings::AlertSettings;
    use crate::source::GpuSource;
    use crate::source::replay::ReplayControl;
    use crate::source::sim::{SimClock, SimSource};

    /// A replay that jumps back drops the history from its "future" before the next
    /// sample is applied (the replay source says so in the shared control; the tracker,
    /// not the UI, applies samples now). Kept, the charts would draw the future's points
    /// after the past's.
    #[test]
    fn a_replay_jumping_back_drops_the_future_history_before_the_next_sample() {
        let start = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        let mut sim = SimSource::new(2, 1, Duration::from_secs(1), SimClock::Virtual { start });
        let samples: Vec<Sample> = (0..10).map(|_| sim.sample().unwrap()).collect();
        let config = ViewConfig::default();
        let ui = Model::new(&config);
        let control = ReplayControl {
            speed_index: 2,
            paused: false,
            pending_seek: 0,
            position: 0,
            total: samples.len(),
            rewound: false,
        };
        let handle: ReplayHandle = std::sync::Arc::new(Mutex::new(control));
        let (alerting, _deliveries) = Alerting::start(&AlertSettings::default(), false);
        let paused = Arc::new(AtomicBool::new(false));
        let mut tracker = Tracker::new(&ui, &config, alerting, false, Some(handle.clone()), paused);
        for s in &samples {
            tracker.track(s.clone());
        }
        let gpu = samples[0].gpus[0].id.clone();
        assert_eq!(ui.history(&gpu).unwrap().points().len(), 10);
        handle.lock().unwrap().rewound = true;
        tracker.track(samples[2].clone());
        let points: Vec<_> = ui
            .history(&gpu)
            .unwrap()
            .points()
            .iter()
            .map(|p| p.time())
            .collect();
        assert_eq!(points, [samples[2].time], "only the sample jumped back to");
        assert!(
            !handle.lock().unwrap().rewound,
            "taken, so the next sample keeps history"
        );
        tracker.track(samples[3].clone());
        assert_eq!(ui.history(&gpu).unwrap().points().len(), 2);
    }
}
