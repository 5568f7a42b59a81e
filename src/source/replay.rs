//! Replaying a recording as a source: the same pipeline as live, so warnings fire as they
//! did. Owns the position in the recording; pause, speed and seek arrive through a shared
//! `ReplayControl` the TUI holds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::reading::Sample;
use crate::record::Recording;
use crate::source::{GpuSource, SourceError};

/// Speeds the replay can run at, slowest to fastest (`-` and `+` step through them).
pub const SPEEDS: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

/// What the TUI tells the replay, and what the replay tells the TUI.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayControl {
    pub speed_index: usize,
    pub paused: bool,
    /// A jump asked for, in samples (negative: back); applied at the next tick.
    pub pending_seek: i64,
    /// Index of the sample shown last, and how many there are.
    pub position: usize,
    pub total: usize,
    /// Set after a backward jump, so the state can drop history that is now in the future.
    pub rewound: bool,
}

impl ReplayControl {
    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed_index.min(SPEEDS.len() - 1)]
    }
}

pub type ReplayHandle = Arc<Mutex<ReplayControl>>;

pub struct ReplaySource {
    samples: Vec<Sample>,
    /// Where the next sample comes from, in (fractional) samples: speeds below 1× show a
    /// sample for several ticks.
    cursor: f64,
    control: ReplayHandle,
}

impl ReplaySource {
    pub fn new(recording: Recording) -> (Self, ReplayHandle) {
        let total = recording.samples.len();
        let control = Arc::new(Mutex::new(ReplayControl {
            speed_index: 2,
            paused: false,
            pending_seek: 0,
            position: 0,
            total,
            rewound: false,
        }));
        let source = ReplaySource {
            samples: recording.samples,
            cursor: 0.0,
            control: control.clone(),
        };
        (source, control)
    }

    /// Samples per `duration` of recorded time, for turning "seek 30 s" into samples.
    pub fn samples_per(interval: Duration, duration: Duration) -> i64 {
        (duration.as_secs_f64() / interval.as_secs_f64())
            .round()
            .max(1.0) as i64
    }
}

impl GpuSource for ReplaySource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let mut c = self
            .control
            .lock()
            .map_err(|_| SourceError::Unavailable("replay control poisoned".into()))?;
        let last = (self.samples.len() - 1) as f64;
        if c.pending_seek != 0 {
            let target = (self.cursor + c.pending_seek as f64).clamp(0.0, last);
            c.rewound = target < self.cursor;
            self.cursor = target;
            c.pending_seek = 0;
        }
        let index = self.cursor.floor().clamp(0.0, last) as usize;
        c.position = index;
        if !c.paused {
            // At the end the last sample stays on screen.
            self.cursor = (self.cursor + c.speed()).min(last);
        }
        Ok(self.samples[index].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::HostInfo;
    use crate::record::Header;
    use std::time::SystemTime;

    fn recording(n: u64) -> Recording {
        let samples = (0..n)
            .map(|i| Sample {
                time: SystemTime::UNIX_EPOCH + Duration::from_secs(i),
                host: HostInfo::default(),
                gpus: vec![],
                processes: vec![],
                hosts: Vec::new(),
                history: None,
            })
            .collect();
        Recording {
            header: Header::new(Duration::from_secs(1)),
            samples,
            skipped: vec![],
        }
    }

    fn secs(s: &mut ReplaySource) -> u64 {
        s.sample()
            .unwrap()
            .time
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn plays_pauses_speeds_seeks_and_stops_at_the_end() {
        let (mut src, control) = ReplaySource::new(recording(10));
        assert_eq!((secs(&mut src), secs(&mut src)), (0, 1));
        control.lock().unwrap().paused = true;
        assert_eq!((secs(&mut src), secs(&mut src)), (2, 2));
        {
            let mut c = control.lock().unwrap();
            c.paused = false;
            c.speed_index = 3; // 2×
        }
        assert_eq!((secs(&mut src), secs(&mut src)), (2, 4));
        control.lock().unwrap().pending_seek = -5;
        assert_eq!(secs(&mut src), 1);
        assert!(control.lock().unwrap().rewound);
        control.lock().unwrap().speed_index = 0; // ¼×
        let quarter: Vec<u64> = (0..5).map(|_| secs(&mut src)).collect();
        assert_eq!(quarter, vec![3, 3, 3, 3, 4]);
        control.lock().unwrap().pending_seek = 100;
        assert_eq!((secs(&mut src), secs(&mut src)), (9, 9));
        assert_eq!(control.lock().unwrap().position, 9);
        assert_eq!(control.lock().unwrap().total, 10);
    }
}
