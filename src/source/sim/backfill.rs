//! The demo opens mid-story: before the first frame the simulated clock runs the scenario
//! for a while, so the charts are full and every warning the demo is there to show (OOM
//! risk, overheating, an idle holder, a stale allocation) is already raised — an idle
//! holder needs `--idle-after` (30 min) of idleness, which no one waits for in a demo.
//! The samples are stamped in the past, ending one interval before now; the older part,
//! which only warnings' "since when" needs, is taken in longer steps. At the interval it
//! takes no more than a chart can show (`history::SHOWN_POINTS`), so any `--history`
//! (a million seconds is allowed) opens as fast as the default.

use std::time::{Duration, SystemTime};

use super::SimSource;
use super::scenario::oom_period;
use crate::reading::Sample;

/// At most this many samples before the history window (the older, coarser part).
const COARSE_SAMPLES: u32 = 120;
/// Where in its cycle the OOM job is when the demo opens: 72 s into a 78 s life, at 96 %
/// of VRAM and still growing, so the first frame shows it about to run out.
const OOM_PHASE_SECS: f64 = 72.0;

impl SimSource {
    /// Runs the scenario for at least `lead` (and at least `history`) of scenario time and
    /// returns the samples, oldest first: the last `history` (at most `SHOWN_POINTS` of
    /// them) at the source's interval, the rest in up to `COARSE_SAMPLES` longer steps. The live samples that follow continue
    /// the same story. Only meant for a source that has not sampled yet.
    pub fn backfill(&mut self, lead: Duration, history: Duration) -> Vec<Sample> {
        let interval = self.interval;
        let fine = (history.as_secs_f64() / interval.as_secs_f64())
            .ceil()
            .clamp(1.0, crate::history::SHOWN_POINTS as f64) as u32;
        let wanted = lead.max(interval * fine).as_secs_f64();
        // The OOM job's cycle repeats: open at the same point of it whatever the lead.
        let period = oom_period();
        let cycles = ((wanted - OOM_PHASE_SECS) / period).ceil().max(0.0);
        let lead = Duration::from_secs_f64(cycles * period + OOM_PHASE_SECS).max(interval * fine);
        let fine_start = lead - interval * fine;
        let now = match self.clock {
            super::SimClock::Real => SystemTime::now(),
            super::SimClock::Virtual { start } => start,
        };
        // Process start times and OOM generations are placed on the back-filled timeline.
        self.origin = now - lead;
        let mut out = Vec::new();
        if !fine_start.is_zero() {
            let step = (fine_start / COARSE_SAMPLES).max(interval);
            while self.elapsed + step <= fine_start {
                out.push(self.take(self.origin + self.elapsed, step));
            }
            // The coarse part ends where the fine part starts.
            self.elapsed = fine_start;
        }
        for _ in 0..fine {
            out.push(self.take(self.origin + self.elapsed, interval));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::GpuSource;
    use crate::source::sim::SimClock;

    #[test]
    fn backfill_ends_one_interval_before_the_first_live_sample() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let mut sim = SimSource::new(8, 42, Duration::from_secs(1), SimClock::Virtual { start });
        let samples = sim.backfill(Duration::from_secs(1900), Duration::from_secs(300));
        let last = samples.last().unwrap().time;
        assert_eq!(last, start - Duration::from_secs(1));
        // The last 300 are one second apart; older ones further apart; all in order.
        let times: Vec<SystemTime> = samples.iter().map(|s| s.time).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        let tail = &times[times.len() - 300..];
        assert!(
            tail.windows(2)
                .all(|w| w[1].duration_since(w[0]).unwrap().as_secs() == 1)
        );
        assert!(
            samples.len() <= 300 + COARSE_SAMPLES as usize + 1,
            "{}",
            samples.len()
        );
        let first = samples[0].time;
        assert!(start.duration_since(first).unwrap() >= Duration::from_secs(1900));
        // The live story goes on from there.
        assert_eq!(sim.sample().unwrap().time, start);
    }

    /// Issue 26 §11: a million seconds of history back-fills what a chart can show at the
    /// interval and the rest coarsely (it took > 120 s and 5 GB when every second was run).
    #[test]
    fn a_long_history_back_fills_no_more_than_a_chart_shows() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let mut sim = SimSource::new(8, 42, Duration::from_secs(1), SimClock::Virtual { start });
        let samples = sim.backfill(Duration::from_secs(1900), Duration::from_secs(1_000_000));
        let shown = crate::history::SHOWN_POINTS;
        assert!(
            samples.len() <= shown + COARSE_SAMPLES as usize + 1,
            "{}",
            samples.len()
        );
        let times: Vec<SystemTime> = samples.iter().map(|s| s.time).collect();
        let tail = &times[times.len() - shown..];
        assert!(
            tail.windows(2)
                .all(|w| w[1].duration_since(w[0]).unwrap().as_secs() == 1)
        );
        assert_eq!(*times.last().unwrap(), start - Duration::from_secs(1));
    }
}
