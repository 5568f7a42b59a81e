//! Each GPU's warnings, indexed once per sample. The panels and compact lines colour every
//! GPU drawn by its worst warning, and the free-GPU test asks the same of every GPU it
//! checks: a scan of the whole warning list for each was quadratic in a fleet (10,000 GPUs
//! with a warning each: 10^8 comparisons per sample and per frame, which the keys waited
//! behind, issue 26 §10). Positions into the model's warning list, so nothing is copied.

use std::collections::HashMap;

use super::warnings::{Severity, Warning};
use crate::reading::GpuId;

#[derive(Debug, Clone, Default)]
pub struct WarningIndex {
    /// Positions in the warning list, in its order (most urgent first), per GPU.
    by_gpu: HashMap<GpuId, Vec<usize>>,
}

impl WarningIndex {
    /// The index of `warnings`; rebuilt whenever the list changes.
    pub fn of(warnings: &[Warning]) -> Self {
        let mut by_gpu: HashMap<GpuId, Vec<usize>> = HashMap::new();
        for (i, w) in warnings.iter().enumerate() {
            if let Some(id) = w.gpu() {
                by_gpu.entry(id.clone()).or_default().push(i);
            }
        }
        WarningIndex { by_gpu }
    }

    /// The warnings of `list` (the one this index was built from) about GPU `id`.
    pub fn of_gpu<'a>(
        &'a self,
        list: &'a [Warning],
        id: &GpuId,
    ) -> impl Iterator<Item = &'a Warning> {
        let at = self.by_gpu.get(id).map_or(&[][..], Vec::as_slice);
        at.iter().filter_map(|&i| list.get(i))
    }

    /// The worst of GPU `id`'s warnings in `list`.
    pub fn severity(&self, list: &[Warning], id: &GpuId) -> Option<Severity> {
        self.of_gpu(list, id).map(|w| w.severity).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::warnings::{Subject, WarningKind};

    fn on(gpu: &str, severity: Severity) -> Warning {
        Warning {
            severity,
            subject: Subject::Gpu {
                id: GpuId(gpu.into()),
                index: 0,
                host: None,
            },
            kind: WarningKind::Lost,
        }
    }

    /// The index answers what a scan of the list answered: each GPU's own warnings in the
    /// list's order, the worst of them, nothing for a GPU without, host warnings for none.
    #[test]
    fn each_gpu_gets_its_own_warnings_and_the_worst_of_them() {
        let host = Warning {
            severity: Severity::Critical,
            subject: Subject::Host { name: "h".into() },
            kind: WarningKind::Lost,
        };
        let list = vec![
            on("GPU-a", Severity::Warning),
            on("GPU-b", Severity::Warning),
            host,
            on("GPU-a", Severity::Critical),
        ];
        let index = WarningIndex::of(&list);
        let a = GpuId("GPU-a".into());
        let found: Vec<_> = index.of_gpu(&list, &a).map(|w| w.severity).collect();
        assert_eq!(found, [Severity::Warning, Severity::Critical]);
        assert_eq!(index.severity(&list, &a), Some(Severity::Critical));
        let b = GpuId("GPU-b".into());
        assert_eq!(index.severity(&list, &b), Some(Severity::Warning));
        let c = GpuId("GPU-c".into());
        assert_eq!(index.severity(&list, &c), None);
        assert_eq!(index.of_gpu(&list, &c).count(), 0);
    }
}
