//! The model in two halves for the TUI, so a large fleet's sample is applied off the UI
//! thread (issue 26 §10: keys within 50 ms at 10,000 GPUs). The tracker's model applies
//! each sample in full — histories, alarms, warnings, rows, holders — on a thread of its
//! own, and hands the UI's model what the sample set ([`Applied`]); the two share the
//! histories (`Shared`), so the UI draws from the same series without a copy. The UI's
//! half of a sample is then a few moves, whatever the fleet's size.

use std::collections::HashMap;
use std::time::SystemTime;

use super::holders::Holders;
use super::procs::ProcRow;
use super::warning_index::WarningIndex;
use super::warnings::Warning;
use super::{Model, ViewConfig};
use crate::reading::{GpuId, GpuReading, HostInfo};

/// What one applied sample set in the model, moved from the tracker's model to the UI's.
/// Histories are not in it (shared), nor alarms (only the tracker's model evaluates).
#[derive(Debug, Clone)]
pub struct Applied {
    now: Option<SystemTime>,
    host: HostInfo,
    gpus: Vec<GpuReading>,
    gpu_at: HashMap<GpuId, usize>,
    warnings: Vec<Warning>,
    warning_index: WarningIndex,
    rows: Vec<ProcRow>,
    holders: HashMap<GpuId, Holders>,
    any_job: bool,
}

impl Applied {
    /// How many GPUs the sample had.
    pub fn gpu_count(&self) -> usize {
        self.gpus.len()
    }
}

impl Model {
    /// A model for applying samples elsewhere that shares this one's GPU and process
    /// histories and nothing else: what it applies reaches this one through `install`.
    /// Its table keeps the rows unordered (`ProcTable::keep_rows`): `install` orders them.
    pub fn twin(&self, config: &ViewConfig) -> Model {
        let mut twin = Model::new(config);
        twin.histories = self.histories.clone();
        twin.proc_histories = self.proc_histories.clone();
        twin.orders_rows = false;
        twin
    }

    /// Moves out what the latest `apply_sample` set, for the UI's model. Leaves this one
    /// with its alarms and the shared histories: the next sample sets the rest anew.
    pub fn take_applied(&mut self) -> Applied {
        let rows = std::mem::take(&mut self.procs.all);
        self.procs.set_rows(Vec::new());
        Applied {
            now: self.now,
            host: std::mem::take(&mut self.host),
            gpus: std::mem::take(&mut self.gpus),
            gpu_at: std::mem::take(&mut self.gpu_at),
            warnings: std::mem::take(&mut self.warnings),
            warning_index: std::mem::take(&mut self.warning_index),
            rows,
            holders: std::mem::take(&mut self.holders),
            any_job: self.any_job,
        }
    }

    /// Takes what the twin applied, as `apply_sample` would have set it here; the table
    /// keeps its sort, filter and selection.
    pub fn install(&mut self, applied: Applied) {
        self.now = applied.now;
        self.source_error = None;
        self.stalled = None;
        self.host = applied.host;
        self.gpus = applied.gpus;
        self.gpu_at = applied.gpu_at;
        self.warnings = applied.warnings;
        self.warning_index = applied.warning_index;
        self.procs.set_rows(applied.rows);
        self.holders = applied.holders;
        self.any_job = applied.any_job;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::source::GpuSource;
    use crate::source::sim::{Scenario, SimClock, SimSource};

    /// What a view can read of a model, as text (the parts compared).
    fn seen(model: &Model) -> Vec<String> {
        let mut out = vec![
            format!("{:?} {:?}", model.now(), model.host()),
            format!("{:?}", model.gpus()),
            format!("{:?}", model.warnings()),
            format!("{:?} {}", model.procs().all, model.any_job()),
            // The table as shown: its order and selection.
            format!(
                "{:?} {:?}",
                model.procs().rows().map(|r| &r.key).collect::<Vec<_>>(),
                model.procs().selected
            ),
        ];
        for g in model.gpus() {
            out.push(format!(
                "{:?} {:?} {:?}",
                model.holders(&g.id),
                model.gpu_severity(&g.id),
                model
                    .history(&g.id)
                    .map(|h| format!("{:?}", h.points().iter().collect::<Vec<_>>())),
            ));
        }
        out.push(format!(
            "{} {}",
            model.history_count(),
            model.proc_history_count()
        ));
        out
    }

    /// The TUI's two models (a twin applies, the UI's installs) show, after every sample,
    /// what one model applying the same samples shows: the mixed demo's crash loops, MIG,
    /// pods and warnings over two minutes, with a GPU that goes away for a while and comes
    /// back. Were a part of the sample left out of `Applied` (or installed stale), a view
    /// would draw the UI's model differently from what `--once` and the exporter report.
    #[test]
    fn a_twin_applying_and_the_ui_installing_show_what_one_model_applying_shows() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        let mut sim = SimSource::new(8, 7, Duration::from_secs(1), SimClock::Virtual { start })
            .with_scenario(Scenario::Mixed);
        let config = ViewConfig::default();
        let mut one = Model::new(&config);
        let mut ui = Model::new(&config);
        let mut twin = ui.twin(&config);
        for n in 0..120 {
            let mut sample = sim.sample().unwrap();
            if (40..60).contains(&n) {
                sample.gpus.remove(3);
            }
            one.apply_sample(sample.clone(), &config);
            twin.apply_sample(sample, &config);
            // Ordering the rows is the UI's model's part (its sort and filter).
            assert!(twin.procs().is_empty() && !twin.procs().all.is_empty());
            ui.install(twin.take_applied());
            assert_eq!(seen(&ui), seen(&one), "after sample {n}");
        }
        assert!(!one.warnings().is_empty() && !one.procs().all.is_empty());
    }
}
