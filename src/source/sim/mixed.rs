//! The `mixed` demo scenario's three GPUs, after the default story's: an H100 in MIG mode
//! split 3g.40gb + 2g.20gb + 1g.10gb (the 2g.20gb instance nearly full), an AMD Instinct
//! MI300X and an Intel Arc. Each is filled as its real source fills it — what NVML answers
//! in MIG mode, what amdgpu's sysfs and fdinfo give, what i915's give — and every other
//! field stays `None`, so the screens show `N/A` exactly where a real box would. Readings
//! only (the jobs are data in `mixed_jobs`): `super` owns the clock; the three GPUs draw
//! from their own random numbers.

use std::sync::Arc;
use std::time::Duration;

use super::context::{self, Pin};
use super::mixed_jobs::{AMD_PROCS, Engine, INTEL_PROCS, Proc, SLICES};
use super::scenario::{DRIVER_RESERVED_GIB, Role};
use super::{SimSource, fill_details, fixed_reading, gpu_uuid, health};
use crate::reading::health::XidTally;
use crate::reading::mig::MigReading;
use crate::reading::workload::ProcEnv;
use crate::reading::{GpuId, GpuReading, HostProc, ProcDetails, ProcKind, ProcReading, Vendor};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// How many GPUs the mixed scenario adds.
pub(super) const EXTRA_GPUS: usize = 3;

/// What the three GPUs remember between samples: their own random numbers (so the default
/// story's draws, and so its readings, are the same with or without them), smoothed
/// temperatures (a random walk needs memory) and energy counters.
pub(super) struct Walks {
    rng: fastrand::Rng,
    temps: [f64; EXTRA_GPUS],
    energy_joules: [f64; EXTRA_GPUS],
}

impl Walks {
    pub(super) fn new(seed: u64) -> Self {
        Walks {
            // "mixed" in ASCII: any constant keeps this generator apart from the story's.
            rng: fastrand::Rng::with_seed(seed ^ 0x006d_6978_6564),
            temps: [58.0, 62.0, 52.0],
            // The AMD GPU's stays unused: amdgpu gives no energy counter.
            energy_joules: [300.0 * 86_400.0, 0.0, 40.0 * 86_400.0],
        }
    }
}

impl SimSource {
    /// The mixed scenario's GPUs at this tick, numbered after the default story's; their
    /// processes go to `procs`. Draws, per GPU: the load's noise, the temperature's, then
    /// each process's VRAM jitter.
    pub(super) fn mixed_gpus(&mut self, procs: &mut Vec<ProcReading>) -> Vec<GpuReading> {
        let first = self.gpu_count;
        vec![
            self.mig_gpu(first, procs),
            self.amd_gpu(first + 1, procs),
            self.intel_gpu(first + 2, procs),
        ]
    }

    /// A noise draw in 0..1, and the `k`th extra GPU's temperature moved toward `target`.
    fn walk(&mut self, k: usize, target: f64) -> (f64, Celsius) {
        let noise = self.mixed.rng.f64();
        let step = (self.mixed.rng.f64() - 0.5) * 1.2;
        let temp = &mut self.mixed.temps[k];
        *temp += (target - *temp) * 0.3 + step;
        (noise, Celsius(temp.round().max(0.0) as u32))
    }

    fn add_energy(&mut self, k: usize, power: f64) -> f64 {
        self.mixed.energy_joules[k] += power * self.step.as_secs_f64();
        self.mixed.energy_joules[k]
    }

    /// An H100 in MIG mode. NVML gives no utilisation for a GPU in MIG mode, nor per
    /// instance, nor per process: those are `None`. Power, temperature, clocks and memory
    /// move as the instances work.
    fn mig_gpu(&mut self, i: usize, procs: &mut Vec<ProcReading>) -> GpuReading {
        let (noise, temp) = self.walk(0, 63.0);
        // How busy the instances keep the GPU (what its power and PCIe traffic follow).
        let busy = 55.0 + 20.0 * noise;
        let power = 230.0 + 2.6 * busy;
        let energy = self.add_energy(0, power);
        let mut g = fixed_reading(gpu_uuid(self.seed, i), i);
        g.temperature = Some(temp);
        g.power = Some(Watts((power * 10.0).round() / 10.0));
        g.fan = Some(Percent(45));
        g.sm_clock = Some(MegaHertz(1755 + busy as u32 * 2));
        fill_details(&mut g, i, Role::Training, busy, energy);
        g.graphics_clock = g.sm_clock;
        g.mig_enabled = Some(true);
        let mut health = health::health(i, g.temperature, self.origin, self.elapsed_secs());
        // The default story's XID belongs to its own GPU 1, not to whichever GPU is 1 here.
        health.xid = Some(XidTally::NONE);
        g.health = health;
        let mut held = Bytes::from_gib(DRIVER_RESERVED_GIB);
        for slice in &SLICES {
            let uuid = mig_uuid(self.seed, i, slice.gpu_instance);
            let p = self.proc(&slice.proc, &g.id, 0.0);
            let used = p.gpu_memory.unwrap_or(Bytes(0)) + Bytes::from_gib(0.05);
            held = held + used;
            procs.push(with_visible_devices(p, &uuid.0));
            g.mig_devices.push(MigReading {
                id: uuid,
                gpu_instance_id: Some(slice.gpu_instance),
                compute_instance_id: Some(0),
                profile: Some(slice.profile.to_string()),
                memory_total: Some(Bytes(slice.total_mib << 20)),
                memory_used: Some(used),
                util: None,
                pids: vec![slice.proc.pid],
            });
        }
        g.util = None;
        g.memory_util = None;
        g.memory_used = Some(held);
        super::set_free(&mut g);
        g
    }

    /// An MI300X as the amdgpu source reads it: busy %, VRAM, clocks, link, hwmon. It has no
    /// fan (a passively cooled module) and amdgpu's files say nothing of encoder/decoder,
    /// P-state, throttle reasons, ECC, MIG, PCIe traffic or energy.
    fn amd_gpu(&mut self, i: usize, procs: &mut Vec<ProcReading>) -> GpuReading {
        let (noise, temp) = self.walk(1, 66.0);
        let util = 80.0 + 18.0 * noise;
        let mut g = GpuReading::absent(
            GpuId(format!(
                "AMD-{:016x}",
                self.seed.wrapping_mul(0x9e37_79b9) ^ 0x1cb6
            )),
            i as u32,
            "AMD Instinct MI300X",
        );
        g.vendor = Some(Vendor::Amd);
        g.pci_bus_id = Some("0000:c1:00.0".into());
        g.util = Some(Percent(util.round() as u32));
        g.memory_util = Some(Percent((util * 0.45).round() as u32));
        g.memory_total = Some(Bytes::from_gib(192.0));
        g.temperature = Some(temp);
        g.temperature_slowdown = Some(Celsius(100));
        g.temperature_shutdown = Some(Celsius(105));
        g.power = Some(Watts((480.0 + 2.2 * util).round()));
        g.power_limit = Some(Watts(750.0));
        g.sm_clock = Some(MegaHertz(2100));
        g.sm_clock_max = Some(MegaHertz(2100));
        // SCLK is the shader clock: nvidia-smi's graphics clock (as the DRM source reads it).
        g.graphics_clock = g.sm_clock;
        g.graphics_clock_max = g.sm_clock_max;
        g.memory_clock = Some(MegaHertz(1300));
        g.memory_clock_max = Some(MegaHertz(1300));
        g.pcie_link_gen = Some(5);
        g.pcie_link_width = Some(16);
        // amdgpu counts its own page tables and firmware in `mem_info_vram_used`.
        let mut held = Bytes::from_gib(0.7);
        for p in &AMD_PROCS {
            let r = self.proc(p, &g.id, util);
            held = held + r.gpu_memory.unwrap_or(Bytes(0));
            procs.push(r);
        }
        g.memory_used = Some(held);
        g
    }

    /// An Arc card under i915: temperature, power from the energy counter, GT clock and
    /// link only. The kernel has no file for its busy % or VRAM, so those are `None` while
    /// its processes' fdinfo still give their memory and engine time.
    fn intel_gpu(&mut self, i: usize, procs: &mut Vec<ProcReading>) -> GpuReading {
        let (noise, temp) = self.walk(2, 55.0);
        let power = 95.0 + 40.0 * noise;
        let energy = self.add_energy(2, power);
        let mut g = GpuReading::absent(
            GpuId("INTEL-0000:83:00.0".into()),
            i as u32,
            "Intel GPU 0x56a0",
        );
        g.vendor = Some(Vendor::Intel);
        g.pci_bus_id = Some("0000:83:00.0".into());
        g.temperature = Some(temp);
        g.power = Some(Watts(power.round()));
        g.power_limit = Some(Watts(225.0));
        g.energy_joules = Some(energy.round());
        g.sm_clock = Some(MegaHertz(2000 + (noise * 4.0) as u32 * 50));
        g.sm_clock_max = Some(MegaHertz(2400));
        g.graphics_clock = g.sm_clock;
        g.graphics_clock_max = g.sm_clock_max;
        g.pcie_link_gen = Some(4);
        g.pcie_link_width = Some(16);
        for p in &INTEL_PROCS {
            let r = self.proc(p, &g.id, 0.0);
            procs.push(r);
        }
        g
    }

    /// `p`'s reading on `gpu`, whose busy % is `util`. Draws the VRAM jitter when it has one.
    fn proc(&mut self, p: &Proc, gpu: &GpuId, util: f64) -> ProcReading {
        let gib = p.gib
            + if p.jitter > 0.0 {
                p.jitter * self.mixed.rng.f64()
            } else {
                0.0
            };
        let sm = match p.engine {
            Engine::Unknown => None,
            Engine::ShareOfGpu(share) => Some(Percent((util * share).round() as u32)),
            Engine::Percent(pct) => Some(Percent(pct.round() as u32)),
        };
        let (user, uid) = p.owner;
        ProcReading {
            peak_gpu_memory: None,
            pid: p.pid,
            gpu: gpu.clone(),
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(gib)),
            sm_util: sm,
            host: HostProc::Visible(ProcDetails {
                user: user.into(),
                uid,
                command: p.command.into(),
                cpu_percent: Some(p.cpu),
                host_memory: Some(Bytes::from_gib(p.host_gib)),
                started: self.origin - Duration::from_secs(p.started_ago),
                // The block of eight is 0 for these: names carry no `-N` suffix.
                context: context::context(p.runs, Pin::Unset, 0, p.owner),
            }),
        }
    }
}

/// A MIG process is pinned to its instance the way CUDA selects one:
/// `CUDA_VISIBLE_DEVICES=MIG-…`.
fn with_visible_devices(mut p: ProcReading, mig: &str) -> ProcReading {
    if let HostProc::Visible(d) = &mut p.host {
        let vars = [("CUDA_VISIBLE_DEVICES".to_string(), mig.to_string())];
        d.context.env = Some(Arc::new(ProcEnv::from_vars(vars)));
    }
    p
}

/// A MIG device UUID per seed, GPU and GPU instance, as R470+ drivers format them; the
/// instance comes first, so the short forms on screen (`MIG-0201…`) differ as real ones do.
fn mig_uuid(seed: u64, i: usize, gpu_instance: u32) -> GpuId {
    GpuId(format!(
        "MIG-{:02x}{:02x}7c3e-{:04x}-4a1b-9c2d-{:08x}{:04x}",
        gpu_instance, i, gpu_instance, seed as u32, gpu_instance
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instances_fit_the_h100_and_one_is_nearly_full() {
        let total: u64 = SLICES.iter().map(|s| s.total_mib).sum();
        assert!(total < 81_559, "{total} MiB");
        let nearly_full = SLICES.iter().filter(|s| {
            let most = s.proc.gib + s.proc.jitter + 0.05;
            let ratio = most * 1024.0 / s.total_mib as f64;
            (0.95..1.0).contains(&ratio)
        });
        assert_eq!(nearly_full.count(), 1);
    }

    #[test]
    fn pids_and_mig_uuids_are_unique() {
        let mut pids: Vec<u32> = SLICES
            .iter()
            .map(|s| s.proc.pid)
            .chain(AMD_PROCS.iter().chain(&INTEL_PROCS).map(|p| p.pid))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        assert_eq!(pids.len(), 7);
        let uuids: Vec<GpuId> = SLICES
            .iter()
            .map(|s| mig_uuid(42, 8, s.gpu_instance))
            .collect();
        assert!(uuids.iter().all(|u| u.0.len() == "MIG-".len() + 36));
        assert_ne!(uuids[0], uuids[1]);
    }
}
