//! Several vendors' sources on one host as one source (`--source auto` on a box with NVIDIA
//! and AMD GPUs): their GPUs side by side, each keeping its vendor, indices running on from
//! one source to the next (the first source keeps its own, so NVIDIA's stay CUDA's). A part
//! that fails a poll keeps its last GPUs' slots, shown lost, while the others go on.

use crate::reading::{GpuReading, GpuStatus, Sample};
use crate::source::{GpuSource, SourceError};

struct Part {
    source: Box<dyn GpuSource>,
    /// The GPUs it gave last time, to keep their slots when it fails.
    last: Vec<GpuReading>,
}

pub struct Vendors {
    parts: Vec<Part>,
}

impl Vendors {
    /// `sources` in the order their GPUs are numbered.
    pub fn new(sources: Vec<Box<dyn GpuSource>>) -> Self {
        Vendors {
            parts: sources
                .into_iter()
                .map(|source| Part {
                    source,
                    last: Vec::new(),
                })
                .collect(),
        }
    }
}

impl GpuSource for Vendors {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let mut out: Option<Sample> = None;
        let mut errors = Vec::new();
        let mut offset = 0u32;
        for part in &mut self.parts {
            let (mut gpus, processes, first) = match part.source.sample() {
                Ok(s) => {
                    part.last = s.gpus.clone();
                    let Sample {
                        gpus, processes, ..
                    } = s.clone();
                    (gpus, processes, Some(s))
                }
                Err(e) => {
                    errors.push(e.to_string());
                    let lost = part.last.iter().cloned().map(lost).collect();
                    (lost, Vec::new(), None)
                }
            };
            for g in &mut gpus {
                g.index += offset;
            }
            offset += gpus.len() as u32;
            let merged = out.get_or_insert_with(|| {
                let mut s = first.clone().unwrap_or_else(empty);
                s.gpus.clear();
                s.processes.clear();
                s
            });
            if let Some(s) = first {
                // The host facts come from the first part that has them (NVML's versions).
                if merged.host.driver_version.is_none() {
                    merged.host.driver_version = s.host.driver_version;
                    merged.host.cuda_version = s.host.cuda_version;
                }
            }
            merged.gpus.extend(gpus);
            merged.processes.extend(processes);
        }
        if errors.len() == self.parts.len() {
            return Err(SourceError::Unavailable(errors.join("; ")));
        }
        Ok(out.unwrap_or_else(empty))
    }

    /// Every part's notices (NVML's kubelet lookup among them), in the parts' order.
    fn notices(&mut self) -> Vec<String> {
        self.parts
            .iter_mut()
            .flat_map(|p| p.source.notices())
            .collect()
    }
}

fn lost(g: GpuReading) -> GpuReading {
    let mut l = GpuReading::absent(g.id, g.index, g.name);
    l.vendor = g.vendor;
    l.pci_bus_id = g.pci_bus_id;
    l.status = GpuStatus::Lost;
    l
}

fn empty() -> Sample {
    Sample {
        time: std::time::SystemTime::now(),
        host: crate::reading::HostInfo {
            hostname: super::hostname(),
            ..Default::default()
        },
        gpus: Vec::new(),
        processes: Vec::new(),
        hosts: Vec::new(),
        history: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::{GpuId, Vendor};

    struct Scripted(Vec<Result<Vec<GpuReading>, String>>);

    impl GpuSource for Scripted {
        fn sample(&mut self) -> Result<Sample, SourceError> {
            match self.0.remove(0) {
                Ok(gpus) => Ok(Sample { gpus, ..empty() }),
                Err(e) => Err(SourceError::Unavailable(e)),
            }
        }
    }

    fn gpu(id: &str, index: u32, vendor: Vendor) -> GpuReading {
        let mut g = GpuReading::absent(GpuId(id.into()), index, id);
        g.vendor = Some(vendor);
        g
    }

    #[test]
    fn indices_run_on_and_a_failing_part_keeps_its_slots_lost() {
        let nvidia = Scripted(vec![
            Ok(vec![
                gpu("GPU-a", 0, Vendor::Nvidia),
                gpu("GPU-b", 1, Vendor::Nvidia),
            ]),
            Ok(vec![
                gpu("GPU-a", 0, Vendor::Nvidia),
                gpu("GPU-b", 1, Vendor::Nvidia),
            ]),
            Err("boom".into()),
        ]);
        let amd = Scripted(vec![
            Ok(vec![gpu("AMD-x", 0, Vendor::Amd)]),
            Err("sysfs gone".into()),
            Err("sysfs gone".into()),
        ]);
        let mut v = Vendors::new(vec![Box::new(nvidia), Box::new(amd)]);
        let s = v.sample().unwrap();
        let got: Vec<_> = s
            .gpus
            .iter()
            .map(|g| (g.id.0.as_str(), g.index, g.vendor))
            .collect();
        assert_eq!(
            got,
            [
                ("GPU-a", 0, Some(Vendor::Nvidia)),
                ("GPU-b", 1, Some(Vendor::Nvidia)),
                ("AMD-x", 2, Some(Vendor::Amd)),
            ]
        );
        let s = v.sample().unwrap();
        assert_eq!(s.gpus[2].status, GpuStatus::Lost);
        assert_eq!(s.gpus[2].index, 2);
        assert_eq!(s.gpus[0].status, GpuStatus::Ok);
        let err = v.sample().unwrap_err().to_string();
        assert!(err.contains("boom") && err.contains("sysfs gone"), "{err}");
    }
}
