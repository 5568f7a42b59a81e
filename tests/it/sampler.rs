//! The sampler task on paused tokio time: one sample per tick, failures reported and
//! survived, and the task ends when the receiver is dropped.

use crate::common;

use std::time::Duration;

use gpuwatch::reading::Sample;
use gpuwatch::sampler::{self, SamplerEvent};
use gpuwatch::source::{GpuSource, SourceError};

/// Counts polls and fails every third one.
struct Flaky {
    inner: gpuwatch::source::sim::SimSource,
    polls: u32,
}

impl GpuSource for Flaky {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        self.polls += 1;
        if self.polls.is_multiple_of(3) {
            return Err(SourceError::Unavailable(format!(
                "poll {} failed",
                self.polls
            )));
        }
        self.inner.sample()
    }
}

#[tokio::test(start_paused = true)]
async fn one_sample_per_tick() {
    let (tx, mut rx) = sampler::channel();
    let task = tokio::spawn(sampler::run(
        Box::new(common::sim(2)),
        Duration::from_secs(1),
        tx,
    ));
    let start = tokio::time::Instant::now();
    let mut times = Vec::new();
    for _ in 0..5 {
        match rx.recv().await.unwrap() {
            SamplerEvent::Sample(s) => times.push((tokio::time::Instant::now() - start, s.time)),
            other => panic!("{other:?}"),
        }
    }
    // The first tick fires at once, then one per second of (virtual) time.
    let elapsed: Vec<_> = times.iter().map(|(d, _)| d.as_secs()).collect();
    assert_eq!(elapsed, vec![0, 1, 2, 3, 4]);
    // Each sample is a new one from the source (its virtual clock advanced).
    assert!(times.windows(2).all(|w| w[1].1 > w[0].1));
    drop(rx);
    tokio::time::advance(Duration::from_secs(2)).await;
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("sampler ends")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn failures_are_reported_and_sampling_goes_on() {
    let (tx, mut rx) = sampler::channel();
    let flaky = Flaky {
        inner: common::sim(1),
        polls: 0,
    };
    tokio::spawn(sampler::run(
        Box::new(flaky),
        Duration::from_millis(500),
        tx,
    ));
    let mut kinds = Vec::new();
    for _ in 0..6 {
        kinds.push(match rx.recv().await.unwrap() {
            SamplerEvent::Sample(_) => "ok".to_string(),
            SamplerEvent::Failed(e) => e,
            other => panic!("{other:?}"),
        });
    }
    assert_eq!(
        kinds,
        vec!["ok", "ok", "poll 3 failed", "ok", "ok", "poll 6 failed"]
    );
}

#[tokio::test(start_paused = true)]
async fn ends_when_the_receiver_is_dropped_even_while_waiting_to_tick() {
    let (tx, rx) = sampler::channel();
    let task = tokio::spawn(sampler::run(
        Box::new(common::sim(1)),
        Duration::from_secs(3600),
        tx,
    ));
    drop(rx);
    // Well before the next hourly tick, the task has noticed and ended.
    tokio::time::timeout(Duration::from_secs(1), task)
        .await
        .expect("sampler ends")
        .unwrap();
}

/// A source whose every poll blocks until the test lets it go (a wedged driver call).
struct Wedged(std::sync::mpsc::Receiver<()>);

impl gpuwatch::source::GpuSource for Wedged {
    fn sample(&mut self) -> Result<gpuwatch::reading::Sample, gpuwatch::source::SourceError> {
        let _ = self.0.recv();
        Err(gpuwatch::source::SourceError::Unavailable(
            "released".into(),
        ))
    }
}

/// Issue 15 item 9: a poll that does not come back is reported as overdue (once past
/// `overdue_after`), and dropping the receiver ends the sampler although the poll is stuck.
#[tokio::test]
async fn a_wedged_poll_is_reported_and_does_not_hold_the_sampler() {
    let (release, wedge) = std::sync::mpsc::channel();
    let (tx, mut rx) = sampler::channel();
    let interval = Duration::from_millis(100);
    let task = tokio::spawn(sampler::run(Box::new(Wedged(wedge)), interval, tx));
    let first = tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("a stall report within a minute");
    match first {
        Some(SamplerEvent::Stalled(waited)) => {
            assert!(waited >= sampler::overdue_after(interval), "{waited:?}")
        }
        other => panic!("{other:?}"),
    }
    drop(rx);
    tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("the sampler ends while its poll is still stuck")
        .unwrap();
    let _ = release.send(());
}
