//! `gpuwatch pick`: choosing the best free GPUs for a new job from one snapshot of state.
//! Pure: ranks and formats; the caller takes the snapshot and prints.

use crate::source::{GpuReading, GpuStatus};
use crate::state::State;
use crate::units::Bytes;

#[derive(Debug, Clone, PartialEq)]
pub struct Criteria {
    pub count: usize,
    /// Each chosen GPU must have at least this much VRAM free.
    pub min_free: Option<Bytes>,
    /// Each chosen GPU must be at most this busy (%).
    pub max_util: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `2,3`
    Indices,
    /// `GPU-…,GPU-…`
    Uuids,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3`, for `export $(…)`. NVML
    /// numbers GPUs in PCI bus order while CUDA defaults to fastest-first, so the order is
    /// pinned to make the indices mean the same GPUs.
    Env,
}

/// Why a GPU does not qualify, for the error message.
fn disqualified(state: &State, g: &GpuReading, c: &Criteria) -> Option<String> {
    if g.status == GpuStatus::Lost {
        return Some("lost".into());
    }
    if state.model.gpu_severity(&g.id).is_some() {
        return Some("has a warning".into());
    }
    let Some(free) = free_memory(g) else {
        return Some("free VRAM unknown".into());
    };
    if let Some(min) = c.min_free
        && free < min
    {
        return Some(format!("{:.1} GiB free", free.as_gib()));
    }
    match g.util {
        Some(u) if u.0 <= c.max_util => None,
        Some(u) => Some(format!("{}% busy", u.0)),
        None => Some("utilization unknown".into()),
    }
}

fn free_memory(g: &GpuReading) -> Option<Bytes> {
    Some(g.memory_total?.saturating_sub(g.memory_used?))
}

/// The best `count` qualifying GPUs: GPUs nobody uses at all first (no process, no VRAM
/// held — the header's "free"), so a new job does not land beside a teammate's idle
/// notebook when a clean GPU exists; then most free VRAM (to the GiB), least busy, lowest
/// index. Errors name what is missing and why each other GPU was passed over.
pub fn choose<'a>(state: &'a State, c: &Criteria) -> Result<Vec<&'a GpuReading>, String> {
    let mut ok: Vec<&GpuReading> = Vec::new();
    let mut passed_over = Vec::new();
    for g in state.model.gpus() {
        match disqualified(state, g, c) {
            None => ok.push(g),
            Some(why) => passed_over.push(format!("{} {why}", g.index)),
        }
    }
    ok.sort_by_key(|g| {
        let clean = crate::model::owners::is_free(&state.model, g);
        let free_gib = free_memory(g).map_or(0, |b| b.0 / Bytes::GIB);
        (
            !clean,
            std::cmp::Reverse(free_gib),
            g.util.map_or(u32::MAX, |u| u.0),
            g.index,
        )
    });
    if ok.len() < c.count {
        let mut need = format!("{} GPU{}", c.count, if c.count == 1 { "" } else { "s" });
        if let Some(min) = c.min_free {
            need += &format!(" with ≥{:.1} GiB free", min.as_gib());
        }
        need += &format!(", ≤{}% util and no warnings", c.max_util);
        return Err(format!(
            "need {need}; {} qualif{} ({}) — passed over: {}",
            ok.len(),
            if ok.len() == 1 { "ies" } else { "y" },
            ok.iter()
                .map(|g| g.index.to_string())
                .collect::<Vec<_>>()
                .join(","),
            if passed_over.is_empty() {
                "none".to_string()
            } else {
                passed_over.join("; ")
            }
        ));
    }
    ok.truncate(c.count);
    Ok(ok)
}

pub fn format(gpus: &[&GpuReading], format: Format) -> String {
    let indices = || {
        gpus.iter()
            .map(|g| g.index.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    match format {
        Format::Indices => indices(),
        Format::Uuids => gpus
            .iter()
            .map(|g| g.id.0.clone())
            .collect::<Vec<_>>()
            .join(","),
        Format::Env => format!(
            "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={}",
            indices()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{GpuId, HostInfo, Sample};
    use crate::state::{Msg, ViewConfig, update};
    use crate::units::Percent;

    fn gpu(index: u32, total_gib: f64, used_gib: f64, util: u32) -> GpuReading {
        let mut g = GpuReading::absent(GpuId(format!("GPU-{index}")), index, "g");
        g.memory_total = Some(Bytes::from_gib(total_gib));
        g.memory_used = Some(Bytes::from_gib(used_gib));
        g.util = Some(Percent(util));
        g
    }

    fn state(gpus: Vec<GpuReading>) -> State {
        let mut s = State::new(ViewConfig::default());
        let sample = Sample {
            time: std::time::SystemTime::UNIX_EPOCH,
            host: HostInfo::default(),
            gpus,
            processes: vec![],
            hosts: Vec::new(),
        };
        update(&mut s, Msg::Sample(Box::new(sample)));
        s
    }

    fn picked(s: &State, c: &Criteria) -> Result<String, String> {
        choose(s, c).map(|g| format(&g, Format::Indices))
    }

    #[test]
    fn clean_gpus_first_then_most_free_then_least_busy() {
        // 0: 80 GiB with 10 GiB held (not clean), 1: clean 40 GiB, 2: clean 40 GiB but 3 % busy,
        // 3: 90 % busy.
        let s = state(vec![
            gpu(0, 80.0, 10.0, 0),
            gpu(1, 40.0, 0.5, 0),
            gpu(2, 40.0, 0.5, 3),
            gpu(3, 80.0, 1.0, 90),
        ]);
        let c = |count, min_free: Option<f64>| Criteria {
            count,
            min_free: min_free.map(Bytes::from_gib),
            max_util: 10,
        };
        assert_eq!(picked(&s, &c(3, None)).unwrap(), "1,2,0");
        assert_eq!(
            picked(&s, &c(1, Some(50.0))).unwrap(),
            "0",
            "only GPU 0 has 50 GiB free"
        );
        let err = picked(&s, &c(4, None)).unwrap_err();
        assert!(
            err.starts_with("need 4 GPUs, ≤10% util and no warnings; 3 qualify (1,2,0)"),
            "{err}"
        );
        assert!(err.contains("3 90% busy"), "{err}");
    }
}
