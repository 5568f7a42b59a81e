//! Per-process history for the process detail view and the peak-VRAM field of the JSON
//! document: one fixed-capacity ring per process identity (PID + start time), kept only
//! for processes on a GPU now, dropped `LINGER` after they leave, and never more than
//! `MAX_PROCESSES` of them, so memory is bounded whatever runs on the box. Owns storage
//! only: no I/O, no clock (time comes with each sample).

use std::time::{Duration, SystemTime};

use super::Ring;
use crate::reading::{GpuId, ProcReading};
use crate::units::Bytes;

/// At most this many processes have a history; beyond it the longest-unseen go first.
/// At 300 points of 64 bytes each that is under 100 MB in the absurd worst case, and a
/// few hundred kB on a real box (tens of GPU processes).
pub const MAX_PROCESSES: usize = 5_000;

/// How long a process's history is kept after it left every GPU: long enough to read
/// the detail view of a job that just died (was it a leak?), short enough that a box
/// running thousands of short jobs does not keep them all.
pub const LINGER: Duration = Duration::from_secs(60);

/// A process's identity: a reused PID has another start time. `started` is `None` for a
/// process this host cannot see (another PID namespace, hidden).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProcId {
    pub pid: u32,
    pub started: Option<SystemTime>,
}

impl ProcId {
    pub fn of(p: &ProcReading) -> ProcId {
        ProcId {
            pid: p.pid,
            started: p.details().map(|d| d.started),
        }
    }
}

/// One sample of one process, summed over the GPUs it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcPoint {
    pub at: SystemTime,
    pub vram: Option<Bytes>,
    /// SM share summed over its GPUs (can exceed 100 on several GPUs).
    pub sm: Option<u32>,
    pub cpu: Option<f32>,
    pub host_memory: Option<Bytes>,
}

#[derive(Debug, Clone)]
pub struct ProcHistory {
    pub points: Ring<ProcPoint>,
    /// The largest VRAM seen on each GPU since the process was first seen (summed: `peak`).
    peaks: Vec<(GpuId, Bytes)>,
    /// The largest total VRAM of one sample.
    peak: Option<Bytes>,
    last_seen: SystemTime,
}

impl ProcHistory {
    fn new(capacity: usize, now: SystemTime) -> Self {
        ProcHistory {
            points: Ring::new(capacity),
            peaks: Vec::new(),
            peak: None,
            last_seen: now,
        }
    }

    /// The largest VRAM the process held at once, over all its GPUs.
    pub fn peak(&self) -> Option<Bytes> {
        self.peak
    }

    /// The largest VRAM it held on one GPU.
    pub fn peak_on(&self, gpu: &GpuId) -> Option<Bytes> {
        self.peaks.iter().find(|(g, _)| g == gpu).map(|(_, b)| *b)
    }

    pub fn last_seen(&self) -> SystemTime {
        self.last_seen
    }

    /// VRAM growth in bytes per second over the whole ring (a least-squares slope);
    /// `None` with fewer than three known points. Unlike the GPU's OOM forecast this is
    /// not filtered for fit: the detail view shows the number, the user judges it.
    pub fn vram_growth_per_sec(&self) -> Option<f64> {
        let points: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter_map(|p| {
                let secs = p.at.duration_since(SystemTime::UNIX_EPOCH).ok()?;
                Some((secs.as_secs_f64(), p.vram?.0 as f64))
            })
            .collect();
        super::least_squares(&points).map(|fit| fit.slope)
    }

    fn push(&mut self, now: SystemTime, readings: &[&ProcReading]) {
        // Sums over the known readings; none known is unknown, not zero.
        let vram = readings
            .iter()
            .filter_map(|p| p.gpu_memory)
            .fold(None, |sum: Option<Bytes>, b| {
                Some(Bytes(sum.map_or(0, |s| s.0) + b.0))
            });
        let sm = readings
            .iter()
            .filter_map(|p| p.sm_util.map(|u| u.0))
            .fold(None, |sum: Option<u32>, u| Some(sum.unwrap_or(0) + u));
        let details = readings.iter().find_map(|p| p.details());
        for p in readings {
            let Some(used) = p.gpu_memory.max(p.peak_gpu_memory) else {
                continue;
            };
            match self.peaks.iter_mut().find(|(g, _)| *g == p.gpu) {
                Some((_, peak)) => *peak = (*peak).max(used),
                None => self.peaks.push((p.gpu.clone(), used)),
            }
        }
        self.peak = self.peak.max(vram);
        self.last_seen = now;
        self.points.push(ProcPoint {
            at: now,
            vram,
            sm,
            cpu: details.and_then(|d| d.cpu_percent),
            host_memory: details.and_then(|d| d.host_memory),
        });
    }
}

/// Every GPU process's history, by identity.
#[derive(Debug, Clone, Default)]
pub struct ProcHistories {
    /// Keyed by PID and start time, looked up for every process every sample.
    map: crate::fast_hash::FastMap<ProcId, ProcHistory>,
}

impl ProcHistories {
    /// Records one sample's processes (`capacity` points per process), then forgets the
    /// processes gone for longer than `LINGER` and, past `MAX_PROCESSES`, the longest unseen.
    pub fn record(&mut self, now: SystemTime, processes: &[ProcReading], capacity: usize) {
        // One process on several GPUs is one history: its rows, grouped by sorting (no map
        // and no Vec per process built every sample).
        let mut rows: Vec<(ProcId, &ProcReading)> =
            processes.iter().map(|p| (ProcId::of(p), p)).collect();
        rows.sort_unstable_by_key(|(id, _)| (id.pid, id.started));
        let mut group: Vec<&ProcReading> = Vec::new();
        for (i, (id, p)) in rows.iter().enumerate() {
            group.push(p);
            if rows.get(i + 1).is_some_and(|(next, _)| next == id) {
                continue;
            }
            self.map
                .entry(id.clone())
                .or_insert_with(|| ProcHistory::new(capacity, now))
                .push(now, &group);
            group.clear();
        }
        self.map.retain(|_, h| {
            now.duration_since(h.last_seen)
                .is_ok_and(|gone| gone <= LINGER)
        });
        self.bound(MAX_PROCESSES);
    }

    /// Drops the longest-unseen histories until at most `max` remain.
    fn bound(&mut self, max: usize) {
        if self.map.len() <= max {
            return;
        }
        let mut seen: Vec<(SystemTime, ProcId)> = self
            .map
            .iter()
            .map(|(id, h)| (h.last_seen, id.clone()))
            .collect();
        let excess = seen.len() - max;
        seen.select_nth_unstable_by_key(excess - 1, |(t, _)| *t);
        for (_, id) in seen.into_iter().take(excess) {
            self.map.remove(&id);
        }
    }

    pub fn get(&self, id: &ProcId) -> Option<&ProcHistory> {
        self.map.get(id)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::{HostProc, ProcKind};

    fn proc(pid: u32, gpu: &str, mib: Option<u64>) -> ProcReading {
        ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: GpuId(gpu.into()),
            kind: ProcKind::Compute,
            gpu_memory: mib.map(Bytes::from_mib),
            sm_util: None,
            host: HostProc::Hidden,
        }
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    #[test]
    fn a_process_on_two_gpus_is_one_history_with_a_peak_per_gpu() {
        let mut h = ProcHistories::default();
        h.record(
            at(0),
            &[proc(7, "a", Some(100)), proc(7, "b", Some(50))],
            10,
        );
        h.record(at(1), &[proc(7, "a", Some(80)), proc(7, "b", Some(90))], 10);
        let p = h
            .get(&ProcId {
                pid: 7,
                started: None,
            })
            .unwrap();
        assert_eq!(p.points.len(), 2);
        assert_eq!(p.points.latest().unwrap().vram, Some(Bytes::from_mib(170)));
        assert_eq!(p.peak(), Some(Bytes::from_mib(170)));
        assert_eq!(p.peak_on(&GpuId("a".into())), Some(Bytes::from_mib(100)));
        assert_eq!(p.peak_on(&GpuId("b".into())), Some(Bytes::from_mib(90)));
    }

    #[test]
    fn unknown_vram_is_a_gap_not_zero() {
        let mut h = ProcHistories::default();
        h.record(at(0), &[proc(7, "a", None)], 10);
        let p = h
            .get(&ProcId {
                pid: 7,
                started: None,
            })
            .unwrap();
        assert_eq!(p.points.latest().unwrap().vram, None);
        assert_eq!(p.peak(), None);
    }

    #[test]
    fn growth_is_the_slope_of_vram() {
        let mut h = ProcHistories::default();
        for s in 0..5 {
            h.record(at(s), &[proc(7, "a", Some(100 + 10 * s))], 10);
        }
        let p = h
            .get(&ProcId {
                pid: 7,
                started: None,
            })
            .unwrap();
        let slope = p.vram_growth_per_sec().unwrap();
        assert!((slope - 10.0 * Bytes::MIB as f64).abs() < 1.0, "{slope}");
    }

    #[test]
    fn a_process_that_left_is_dropped_after_the_linger() {
        let mut h = ProcHistories::default();
        h.record(at(0), &[proc(7, "a", Some(1))], 10);
        h.record(at(LINGER.as_secs()), &[proc(8, "a", Some(1))], 10);
        assert_eq!(h.len(), 2, "still kept for a while after it left");
        h.record(at(LINGER.as_secs() + 1), &[proc(8, "a", Some(1))], 10);
        assert_eq!(h.len(), 1);
        assert!(
            h.get(&ProcId {
                pid: 7,
                started: None
            })
            .is_none()
        );
    }

    #[test]
    fn histories_are_bounded_and_the_longest_unseen_go_first() {
        let mut h = ProcHistories::default();
        // Each second a new batch of 1,000 short-lived processes: 6,000 within the linger.
        for batch in 0..6u32 {
            let procs: Vec<ProcReading> = (0..1000)
                .map(|i| proc(batch * 1000 + i, "a", Some(1)))
                .collect();
            h.record(at(batch as u64), &procs, 300);
            assert!(h.len() <= MAX_PROCESSES, "{} after batch {batch}", h.len());
        }
        assert_eq!(h.len(), MAX_PROCESSES);
        assert!(
            h.get(&ProcId {
                pid: 0,
                started: None
            })
            .is_none(),
            "oldest went"
        );
        assert!(
            h.get(&ProcId {
                pid: 5999,
                started: None
            })
            .is_some(),
            "newest kept"
        );
        // Each ring is fixed-capacity too.
        for s in 0..400 {
            h.record(at(10 + s), &[proc(1, "a", Some(1))], 300);
        }
        let p = h
            .get(&ProcId {
                pid: 1,
                started: None,
            })
            .unwrap();
        assert_eq!(p.points.len(), 300);
    }
}
