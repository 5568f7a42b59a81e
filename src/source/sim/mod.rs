//! The simulated fleet: a seeded, deterministic multi-GPU server shared by a few users, for
//! `--demo`, tests and screenshots. Owns the scenario and its evolution over virtual time;
//! it never touches the real clock except to stamp samples in live demo mode.
//!
//! Each GPU plays a role chosen by its index (so 8 GPUs show every situation the monitor
//! must make visible): steady training, filling toward OOM, overheating, held but idle,
//! stale VRAM with no process, and free. Beyond 8 GPUs the pattern repeats with other users.
//! The roles are a table (`scenario::ROLES`); this file turns a role into readings. The
//! `mixed` scenario adds a MIG-mode H100, an AMD and an Intel GPU after them (`mixed`).

mod backfill;
mod context;
mod health;
mod mixed;
mod mixed_jobs;
mod scenario;

use std::time::{Duration, SystemTime};

use crate::reading::throttle::ThrottleReason;
use crate::reading::{
    GpuId, GpuReading, HostInfo, HostLoad, HostProc, ProcDetails, ProcKind, ProcReading, Sample,
};
use crate::source::{GpuSource, SourceError};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};
use crate::wire::WarningCode;
use scenario::{
    DRIVER_RESERVED_GIB, GPU_NAME, Job, Owner, POWER_CAP_W, Role, RoleSpec, SLOWDOWN_C,
    VRAM_TOTAL_GIB, Vram, oom_cycle, oom_generation_start, role_of, user_of,
};

/// Largest fleet the simulation builds (`--demo-gpus`).
pub const MAX_GPUS: usize = 64;

/// Which story the demo fleet tells (`--demo-scenario`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scenario {
    /// The NVIDIA server of `scenario::ROLES`.
    #[default]
    Default,
    /// The same server with three more GPUs after it: an H100 in MIG mode, an AMD MI300X
    /// and an Intel Arc (`mixed`), so MIG and the other vendors show without the hardware.
    Mixed,
}

impl Scenario {
    pub const ALL: [Scenario; 2] = [Scenario::Default, Scenario::Mixed];

    /// The public name (`--demo-scenario`, the config file).
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Default => "default",
            Scenario::Mixed => "mixed",
        }
    }

    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// How the simulation stamps its samples.
#[derive(Debug, Clone, Copy)]
pub enum SimClock {
    /// Wall-clock time (live `--demo`); the scenario still advances by ticks, so it is
    /// deterministic in the number of samples taken. Back-filled samples (`backfill`) are
    /// stamped in the past instead.
    Real,
    /// A fixed start advanced by one interval per sample (tests, screenshots).
    Virtual { start: SystemTime },
}

pub struct SimSource {
    /// GPUs of the default story (`--demo-gpus`); the mixed scenario's come after them.
    gpu_count: usize,
    scenario: Scenario,
    /// What the mixed scenario's GPUs carry from sample to sample (unused by the default).
    mixed: mixed::Walks,
    interval: Duration,
    clock: SimClock,
    /// Wall time of the first sample (of the back-fill, when there is one); process start
    /// times are placed before it.
    origin: SystemTime,
    /// Scenario time of the next sample.
    elapsed: Duration,
    /// Scenario time between this sample and the previous one (the back-fill's older part
    /// takes longer steps), for the energy counter.
    step: Duration,
    /// Scenario seconds per second of samples (1: real time; `--demo-speed`, a testing aid).
    speed: f64,
    seed: u64,
    rng: fastrand::Rng,
    /// Per-GPU smoothed temperature (a random walk needs memory).
    temps: Vec<f64>,
    /// Per-GPU energy counter, as NVML's total-energy reading grows.
    energy_joules: Vec<f64>,
}

impl SimSource {
    /// `gpu_count` is clamped to 1..=`MAX_GPUS`.
    pub fn new(gpu_count: usize, seed: u64, interval: Duration, clock: SimClock) -> Self {
        let gpu_count = gpu_count.clamp(1, MAX_GPUS);
        let origin = match clock {
            SimClock::Real => SystemTime::now(),
            SimClock::Virtual { start } => start,
        };
        let temps = (0..gpu_count).map(|i| role_of(i).start_temp).collect();
        SimSource {
            gpu_count,
            scenario: Scenario::Default,
            mixed: mixed::Walks::new(seed),
            interval,
            clock,
            origin,
            elapsed: Duration::ZERO,
            step: interval,
            speed: 1.0,
            seed,
            rng: fastrand::Rng::with_seed(seed),
            temps,
            // As if the driver had been loaded for about a day at 300 W.
            energy_joules: vec![300.0 * 86_400.0; gpu_count],
        }
    }

    /// Runs the scenario `speed` times faster than its samples' clock (tests that need the
    /// hot GPU's whole burst within seconds).
    pub fn with_speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    /// Tells `scenario`'s story instead of the default one.
    pub fn with_scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = scenario;
        self
    }

    /// Seconds of scenario time elapsed at the current tick.
    fn elapsed_secs(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }

    /// A start time `secs` before the first sample.
    fn ago(&self, secs: u64) -> SystemTime {
        self.origin - Duration::from_secs(secs)
    }

    fn now(&self) -> SystemTime {
        match self.clock {
            SimClock::Real => SystemTime::now(),
            SimClock::Virtual { .. } => self.origin + self.elapsed,
        }
    }

    /// One GPU's reading at the current tick; its processes go to `procs`. The order of
    /// random draws (load noise, temperature, then each job's) is part of the recorded
    /// scenario: changing it changes every demo sample after it.
    fn gpu(&mut self, i: usize, procs: &mut Vec<ProcReading>) -> GpuReading {
        let spec = role_of(i);
        let mut g = fixed_reading(gpu_uuid(self.seed, i), i);
        let util = self.load(i, spec, &mut g);
        fill_details(&mut g, i, spec.role, util, self.energy_joules[i]);
        g.health = health::health(i, g.temperature, self.origin, self.elapsed_secs());
        let mut held = Bytes::from_gib(DRIVER_RESERVED_GIB) + Bytes::from_gib(spec.orphan_gib);
        for job in spec.jobs {
            if let Some(p) = self.job(job, i, &g.id, util) {
                held = held + p.gpu_memory.unwrap_or(Bytes(0));
                procs.push(p);
            }
        }
        g.memory_used = Some(held);
        set_free(&mut g);
        g
    }

    /// Utilization, power, fan, temperature and clocks for this tick (two random draws:
    /// the load's noise, then the temperature's); returns the utilization it drew.
    fn load(&mut self, i: usize, spec: &RoleSpec, g: &mut GpuReading) -> f64 {
        let noise = self.rng.f64();
        let t = self.elapsed_secs();
        let (util, power) = if spec.temp.paused(t) {
            (0.0, spec.power.base * 0.1)
        } else {
            (spec.util.at(noise), spec.power.at(noise))
        };
        let target_temp = spec.temp.at(t);
        // Move toward the target with a little noise, so sparklines look alive but bounded.
        let temp = &mut self.temps[i];
        *temp += (target_temp - *temp) * 0.3 + (self.rng.f64() - 0.5) * 1.2;
        g.temperature = Some(Celsius(temp.round().max(0.0) as u32));
        g.util = Some(Percent(util.round() as u32));
        g.memory_util = Some(Percent((util * 0.6).round() as u32));
        g.power = Some(Watts((power * 10.0_f64).round() / 10.0));
        g.fan = Some(Percent(spec.fan as u32));
        g.sm_clock = Some(MegaHertz(if util > 1.0 {
            1755 + (util as u32) * 2
        } else {
            345
        }));
        // On a data-centre GPU the graphics (shader) clock is the SM clock: nvidia-smi's
        // `clocks.gr` and `clocks.sm` read the same there.
        g.graphics_clock = g.sm_clock;
        self.energy_joules[i] += power * self.step.as_secs_f64();
        util
    }

    /// The job's process on GPU `i` at this tick, or `None` while it is dead (an OOM job
    /// between generations). Draws the VRAM jitter, then the CPU jitter, when they apply.
    fn job(&mut self, job: &Job, i: usize, gpu: &GpuId, util: f64) -> Option<ProcReading> {
        // Unpinned processes land on the host's GPU 0 (CUDA's device 0), not on the first
        // GPU of every block of eight.
        if matches!(job.owner, Owner::Named(..)) && i >= 8 {
            return None;
        }
        let (pid, gib, started) = match job.vram {
            Vram::Steady(gib) => (job.pid.of(i), gib, self.ago(job.started_ago)),
            Vram::Jittered {
                gib,
                per_gpu,
                jitter,
            } => {
                let gib = gib + per_gpu * (i % 7) as f64 + jitter * self.rng.f64();
                (job.pid.of(i), gib, self.ago(job.started_ago))
            }
            Vram::GrowsToOom => {
                let (gib, alive, generation) = oom_cycle(self.elapsed_secs());
                if !alive {
                    return None;
                }
                let since = Duration::from_secs_f64(oom_generation_start(generation));
                (job.pid.of(i) + generation, gib, self.origin + since)
            }
        };
        let (user, uid) = match job.owner {
            Owner::GpuUser => user_of(i),
            Owner::Root => ("root", 0),
            Owner::Named(user, uid) => (user, uid),
        };
        let sm_util = if job.computes { util } else { 0.0 };
        let jitter = if job.cpu > 1.0 {
            (self.rng.f64() - 0.5) * 10.0
        } else {
            0.0
        };
        Some(ProcReading {
            peak_gpu_memory: None,
            pid,
            gpu: gpu.clone(),
            kind: ProcKind::Compute,
            gpu_memory: Some(Bytes::from_gib(gib)),
            sm_util: Some(Percent(sm_util.round() as u32)),
            host: HostProc::Visible(ProcDetails {
                user: user.into(),
                uid,
                command: job.command.into(),
                cpu_percent: Some(((job.cpu + jitter).max(0.0) * 10.0).round() as f32 / 10.0),
                host_memory: Some(Bytes::from_gib(job.host_gib)),
                started,
                context: context::context(job.runs, job.pin, i, (user, uid)),
            }),
        })
    }
}

/// NVML's free memory, which dcgm-exporter's `DCGM_FI_DEV_FB_FREE` and dashboards' host and
/// GPU pickers read: total less used (the demo counts the driver's own share in used, so it
/// reports no separate reservation).
pub(super) fn set_free(g: &mut GpuReading) {
    if let (Some(total), Some(used)) = (g.memory_total, g.memory_used) {
        g.memory_free = Some(total.saturating_sub(used));
    }
}

/// What every simulated H100 reports the same way, whatever its role.
fn fixed_reading(id: GpuId, i: usize) -> GpuReading {
    let mut g = GpuReading::absent(id, i as u32, GPU_NAME);
    g.vendor = Some(crate::reading::Vendor::Nvidia);
    g.memory_total = Some(Bytes::from_gib(VRAM_TOTAL_GIB));
    g.temperature_slowdown = Some(Celsius(SLOWDOWN_C));
    g.power_limit = Some(Watts(POWER_CAP_W));
    g.memory_clock = Some(MegaHertz(2619));
    g.pstate = Some(0);
    g
}

/// The NVML details a real H100 reports: PCIe link and traffic, enc/dec, ECC, MIG, and why
/// clocks are held (derived from the role and readings, so no extra randomness).
fn fill_details(g: &mut GpuReading, i: usize, role: Role, util: f64, energy: f64) {
    g.pci_bus_id = Some(format!("00000000:{:02X}:00.0", 0x18 + i * 0x10));
    g.temperature_shutdown = Some(Celsius(SLOWDOWN_C + 8));
    g.energy_joules = Some(energy.round());
    g.sm_clock_max = Some(MegaHertz(1980));
    g.graphics_clock_max = g.sm_clock_max;
    g.memory_clock_max = Some(MegaHertz(2619));
    g.pcie_link_gen = Some(5);
    g.pcie_link_width = Some(16);
    g.pcie_link_gen_max = Some(5);
    g.pcie_link_width_max = Some(16);
    // Busy GPUs move data; idle ones barely do.
    let traffic = util / 100.0;
    g.pcie_tx_per_second = Some(Bytes::from_gib(0.01 + 1.2 * traffic));
    g.pcie_rx_per_second = Some(Bytes::from_gib(0.02 + 3.4 * traffic));
    g.encoder_util = Some(Percent(0));
    g.decoder_util = Some(Percent(0));
    g.ecc_errors_uncorrected = Some(0);
    g.mig_enabled = Some(false);
    g.compute_mode = Some(crate::reading::ComputeMode::Default);
    g.persistence_mode = Some(true);
    let hot = g.temperature.is_some_and(|t| t.0 >= 90);
    let capped = g.power.is_some_and(|p| p.0 >= POWER_CAP_W - 15.0);
    let mut reasons = Vec::new();
    if util < 1.0 {
        reasons.push(ThrottleReason::GpuIdle);
    }
    if capped {
        reasons.push(ThrottleReason::SwPowerCap);
    }
    if hot && role == Role::Warns(WarningCode::Overheating) {
        reasons.push(ThrottleReason::SwThermalSlowdown);
    }
    g.throttle_reasons = Some(reasons);
}

/// A UUID per GPU and seed: two demo fleets with different seeds (say, two `gpuwatch serve
/// --demo` watched together) never share a GPU identity.
fn gpu_uuid(seed: u64, i: usize) -> GpuId {
    GpuId(format!(
        "GPU-5e0c{:04x}-1a2b-4c3d-8e9f-{:08x}{:04x}",
        i, seed as u32, i
    ))
}

impl SimSource {
    /// The sample at scenario time `self.elapsed`, stamped `time`; then the scenario
    /// moves on by `step`.
    fn take(&mut self, time: SystemTime, step: Duration) -> Sample {
        self.step = step;
        let mut processes = Vec::new();
        let mut gpus: Vec<GpuReading> = (0..self.gpu_count)
            .map(|i| self.gpu(i, &mut processes))
            .collect();
        // After the default story's GPUs (NVIDIA's first, as `--source auto` numbers them);
        // they draw from their own generator, so the default story reads the same.
        if self.scenario == Scenario::Mixed {
            gpus.extend(self.mixed_gpus(&mut processes));
        }
        let load = host_load(self.gpu_count, &processes);
        self.elapsed += step;
        Sample {
            time,
            host: HostInfo {
                hostname: "demo-gpu-server".into(),
                driver_version: Some("550.54.15".into()),
                cuda_version: Some("12.4".into()),
                load,
                lookups: Vec::new(),
                cuts: Vec::new(),
            },
            gpus,
            processes,
            hosts: Vec::new(),
            history: None,
        }
    }
}

/// The demo host's CPU, memory and load: 32 CPUs and 512 GiB per block of eight GPUs,
/// busy with the jobs' own CPU use plus their data loaders (a fixed share), memory the
/// jobs' resident memory over a base. Derived from the processes, so no random draw.
fn host_load(gpus: usize, procs: &[ProcReading]) -> HostLoad {
    let blocks = gpus.div_ceil(8) as u32;
    let cpus = 32 * blocks;
    let (cpu, rss) =
        procs
            .iter()
            .filter_map(ProcReading::details)
            .fold((0.0, 0u64), |(c, m), d| {
                let cpu = f64::from(d.cpu_percent.unwrap_or(0.0));
                (c + cpu, m + d.host_memory.map_or(0, |b| b.0))
            });
    let percent = (18.0 + cpu / f64::from(cpus)).min(100.0);
    let load = percent / 100.0 * f64::from(cpus);
    HostLoad {
        cpu_percent: Some((percent * 10.0).round() / 10.0),
        cpus: Some(cpus),
        memory_total: Some(Bytes::from_gib(512.0 * f64::from(blocks))),
        memory_used: Some(Bytes::from_gib(41.5 * f64::from(blocks)) + Bytes(rss)),
        swap_total: Some(Bytes::from_gib(16.0)),
        swap_used: Some(Bytes::from_gib(0.3)),
        load_average: Some([
            (load * 100.0).round() / 100.0,
            (load * 0.97 * 100.0).round() / 100.0,
            (load * 0.9 * 100.0).round() / 100.0,
        ]),
    }
}

impl GpuSource for SimSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let time = self.now();
        // `--demo-speed` runs the scenario faster than the samples' clock (a testing aid).
        Ok(self.take(time, self.interval.mul_f64(self.speed)))
    }
}
