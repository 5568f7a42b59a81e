//! The simulated fleet: a seeded, deterministic multi-GPU server shared by a few users, for
//! `--demo`, tests and screenshots. Owns the scenario and its evolution over virtual time;
//! it never touches the real clock except to stamp samples in live demo mode.
//!
//! Each GPU plays a role chosen by its index (so 8 GPUs show every situation the monitor
//! must make visible): steady training, filling toward OOM, overheating, held but idle,
//! stale VRAM with no process, and free. Beyond 8 GPUs the pattern repeats with other users.

use std::time::{Duration, SystemTime};

use super::throttle::ThrottleReason;
use super::{
    GpuId, GpuReading, GpuSource, HostInfo, HostProc, ProcDetails, ProcKind, ProcReading, Sample,
    SourceError,
};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

/// Largest fleet the simulation builds (`--demo-gpus`).
pub const MAX_GPUS: usize = 64;
const GPU_NAME: &str = "NVIDIA H100 80GB HBM3";
const VRAM_TOTAL_GIB: f64 = 79.6;
const POWER_CAP_W: f64 = 700.0;
const SLOWDOWN_C: u32 = 94;
/// VRAM the driver keeps on every GPU with no process (what nvidia-smi shows as used when idle).
const DRIVER_RESERVED_GIB: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Training,
    FillingToOom,
    Overheating,
    IdleHolder,
    StaleVram,
    Free,
}

/// Roles by index within each block of eight GPUs.
const PATTERN: [Role; 8] = [
    Role::Training,
    Role::Training,
    Role::FillingToOom,
    Role::Overheating,
    Role::IdleHolder,
    Role::StaleVram,
    Role::Free,
    Role::Free,
];

const USERS: [(&str, u32); 8] = [
    ("alice", 1001),
    ("bob", 1002),
    ("carol", 1003),
    ("dave", 1004),
    ("erin", 1005),
    ("frank", 1006),
    ("grace", 1007),
    ("heidi", 1008),
];

/// How the simulation stamps its samples.
#[derive(Debug, Clone, Copy)]
pub enum SimClock {
    /// Wall-clock time (live `--demo`); the scenario still advances by ticks, so it is
    /// deterministic in the number of samples taken.
    Real,
    /// A fixed start advanced by one interval per sample (tests, screenshots).
    Virtual { start: SystemTime },
}

pub struct SimSource {
    gpu_count: usize,
    interval: Duration,
    clock: SimClock,
    /// Wall time of the first sample; process start times are placed before it.
    origin: SystemTime,
    tick: u64,
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
        let temps = (0..gpu_count)
            .map(|i| match role_of(i) {
                Role::Training => 74.0,
                Role::FillingToOom => 66.0,
                Role::Overheating => 84.0,
                Role::IdleHolder => 36.0,
                Role::StaleVram | Role::Free => 31.0,
            })
            .collect();
        SimSource {
            gpu_count,
            interval,
            clock,
            origin,
            tick: 0,
            seed,
            rng: fastrand::Rng::with_seed(seed),
            temps,
            // As if the driver had been loaded for about a day at 300 W.
            energy_joules: vec![300.0 * 86_400.0; gpu_count],
        }
    }

    /// Seconds of scenario time elapsed at the current tick.
    fn elapsed_secs(&self) -> f64 {
        self.tick as f64 * self.interval.as_secs_f64()
    }

    /// A start time `secs` before the first sample.
    fn ago(&self, secs: u64) -> SystemTime {
        self.origin - Duration::from_secs(secs)
    }

    fn now(&self) -> SystemTime {
        match self.clock {
            SimClock::Real => SystemTime::now(),
            SimClock::Virtual { start } => start + self.interval * self.tick as u32,
        }
    }

    fn gpu(&mut self, i: usize, procs: &mut Vec<ProcReading>) -> GpuReading {
        let id = gpu_uuid(self.seed, i);
        let role = role_of(i);
        let (user, uid) = user_of(i);
        let t = self.elapsed_secs();
        let mut g = GpuReading::absent(id.clone(), i as u32, GPU_NAME);
        g.memory_total = Some(Bytes::from_gib(VRAM_TOTAL_GIB));
        g.temperature_slowdown = Some(Celsius(SLOWDOWN_C));
        g.power_limit = Some(Watts(POWER_CAP_W));
        g.memory_clock = Some(MegaHertz(2619));
        g.pstate = Some(0);

        let noise = self.rng.f64();
        let (util, power, target_temp, fan) = match role {
            Role::Training => (92.0 + 8.0 * noise, 610.0 + 80.0 * noise, 76.0, 62.0),
            Role::FillingToOom => (70.0 + 25.0 * noise, 450.0 + 120.0 * noise, 70.0, 50.0),
            // Climbs a quarter degree a second from 84 °C until it sits just above 90 °C.
            Role::Overheating => (
                100.0,
                690.0 + 10.0 * noise,
                (84.0 + 0.25 * t).min(92.0),
                100.0,
            ),
            Role::IdleHolder => (0.0, 72.0 + 4.0 * noise, 36.0, 30.0),
            Role::StaleVram | Role::Free => (0.0, 66.0 + 4.0 * noise, 31.0, 30.0),
        };
        // Move toward the target with a little noise, so sparklines look alive but bounded.
        let temp = &mut self.temps[i];
        *temp += (target_temp - *temp) * 0.3 + (self.rng.f64() - 0.5) * 1.2;
        g.temperature = Some(Celsius(temp.round().max(0.0) as u32));
        g.util = Some(Percent(util.round() as u32));
        g.memory_util = Some(Percent((util * 0.6).round() as u32));
        g.power = Some(Watts((power * 10.0_f64).round() / 10.0));
        g.fan = Some(Percent(fan as u32));
        g.sm_clock = Some(MegaHertz(if util > 1.0 {
            1755 + (util as u32) * 2
        } else {
            345
        }));

        self.energy_joules[i] += power * self.interval.as_secs_f64();
        fill_details(&mut g, i, role, util, self.energy_joules[i]);

        let reserved = Bytes::from_gib(DRIVER_RESERVED_GIB);
        let held: Bytes = match role {
            Role::Training => {
                // Training jobs hold a steady amount, a little different per GPU, with a
                // few MiB of allocator jitter.
                let mem = Bytes::from_gib(68.0 + 0.3 * (i % 7) as f64 + 0.01 * self.rng.f64());
                procs.push(proc(
                    1000 + i as u32 * 10,
                    &id,
                    user,
                    uid,
                    "python train.py --config llama-7b.yaml --nproc 2",
                    mem,
                    util,
                    118.0,
                    24.0,
                    self.ago(5 * 3600 + 1200),
                    self,
                ));
                if i.is_multiple_of(8) {
                    // A small root-owned health check shares the first GPU of each block.
                    procs.push(proc(
                        612,
                        &id,
                        "root",
                        0,
                        "/usr/bin/dcgm-healthcheck --daemon",
                        Bytes::from_gib(0.6),
                        0.0,
                        0.5,
                        0.1,
                        self.ago(9 * 86400),
                        self,
                    ));
                }
                procs
                    .iter()
                    .filter(|p| p.gpu == id)
                    .filter_map(|p| p.gpu_memory)
                    .sum()
            }
            Role::FillingToOom => {
                let (mem, alive, generation) = oom_cycle(t);
                if alive {
                    let pid = 2000 + i as u32 * 10 + generation;
                    let mem = Bytes::from_gib(mem);
                    let started =
                        self.origin + Duration::from_secs_f64(oom_generation_start(generation));
                    procs.push(proc(
                        pid,
                        &id,
                        user,
                        uid,
                        "python finetune.py --batch-size 64",
                        mem,
                        util,
                        97.0,
                        18.0,
                        started,
                        self,
                    ));
                    mem
                } else {
                    Bytes(0)
                }
            }
            Role::Overheating => {
                let mem = Bytes::from_gib(52.3);
                procs.push(proc(
                    3000 + i as u32 * 10,
                    &id,
                    user,
                    uid,
                    "./bench_matmul --size 16384 --iters 100000",
                    mem,
                    util,
                    101.0,
                    3.2,
                    self.ago(40 * 60),
                    self,
                ));
                mem
            }
            Role::IdleHolder => {
                let mem = Bytes::from_gib(30.2);
                // The same notebook kernel holds memory on this GPU and on the stale one's
                // neighbour slot: one PID on two GPUs.
                procs.push(proc(
                    4000 + (i as u32 / 8) * 10,
                    &id,
                    user,
                    uid,
                    "python -m ipykernel_launcher -f kernel-8f3a.json",
                    mem,
                    0.0,
                    0.3,
                    6.1,
                    self.ago(3 * 3600 + 700),
                    self,
                ));
                mem
            }
            Role::StaleVram => {
                // VRAM still held after its process died: nobody is listed.
                Bytes::from_gib(12.4)
            }
            Role::Free => Bytes(0),
        };
        if role == Role::Free && i % 8 == 7 {
            // The notebook from the idle holder also keeps a small context here.
            let (nb_user, nb_uid) = user_of(i - 3);
            let mem = Bytes::from_gib(1.1);
            procs.push(proc(
                4000 + (i as u32 / 8) * 10,
                &id,
                nb_user,
                nb_uid,
                "python -m ipykernel_launcher -f kernel-8f3a.json",
                mem,
                0.0,
                0.3,
                6.1,
                self.ago(3 * 3600 + 700),
                self,
            ));
            g.memory_used = Some(reserved + mem);
        } else {
            g.memory_used = Some(reserved + held);
        }
        g
    }
}

/// The NVML details a real H100 reports: PCIe link and traffic, enc/dec, ECC, MIG, and why
/// clocks are held (derived from the role and readings, so no extra randomness).
fn fill_details(g: &mut GpuReading, i: usize, role: Role, util: f64, energy: f64) {
    g.pci_bus_id = Some(format!("00000000:{:02X}:00.0", 0x18 + i * 0x10));
    g.temperature_shutdown = Some(Celsius(SLOWDOWN_C + 8));
    g.energy_joules = Some(energy.round());
    g.sm_clock_max = Some(MegaHertz(1980));
    g.memory_clock_max = Some(MegaHertz(2619));
    g.pcie_link_gen = Some(5);
    g.pcie_link_width = Some(16);
    // Busy GPUs move data; idle ones barely do.
    let traffic = util / 100.0;
    g.pcie_tx_per_second = Some(Bytes::from_gib(0.01 + 1.2 * traffic));
    g.pcie_rx_per_second = Some(Bytes::from_gib(0.02 + 3.4 * traffic));
    g.encoder_util = Some(Percent(0));
    g.decoder_util = Some(Percent(0));
    g.ecc_errors_uncorrected = Some(0);
    g.mig_enabled = Some(false);
    let hot = g.temperature.is_some_and(|t| t.0 >= 90);
    let capped = g.power.is_some_and(|p| p.0 >= POWER_CAP_W - 15.0);
    let mut reasons = Vec::new();
    if util < 1.0 {
        reasons.push(ThrottleReason::GpuIdle);
    }
    if capped {
        reasons.push(ThrottleReason::SwPowerCap);
    }
    if hot && role == Role::Overheating {
        reasons.push(ThrottleReason::SwThermalSlowdown);
    }
    g.throttle_reasons = Some(reasons);
}

fn role_of(i: usize) -> Role {
    PATTERN[i % PATTERN.len()]
}

/// Owner of the GPU's main job: two users per block of eight, shifting each block.
fn user_of(i: usize) -> (&'static str, u32) {
    let block = i / 8;
    let slot = match role_of(i) {
        Role::Training => 0,
        Role::FillingToOom => 1,
        Role::Overheating => 2,
        Role::IdleHolder | Role::StaleVram | Role::Free => 3,
    };
    USERS[(block * 2 + slot) % USERS.len()]
}

/// A UUID per GPU and seed: two demo fleets with different seeds (say, two `gpuwatch serve
/// --demo` watched together) never share a GPU identity.
fn gpu_uuid(seed: u64, i: usize) -> GpuId {
    GpuId(format!(
        "GPU-5e0c{:04x}-1a2b-4c3d-8e9f-{:08x}{:04x}",
        i, seed as u32, i
    ))
}

/// The OOM scenario: a job starts at 40 GiB and grows 1.5 GiB every 3 s until it would pass
/// 99 % of VRAM, then dies; 6 s later it is restarted (a new PID).
/// Returns (GiB held, alive, generation).
fn oom_cycle(t: f64) -> (f64, bool, u32) {
    const START: f64 = 40.0;
    const STEP: f64 = 1.5;
    const EVERY: f64 = 3.0;
    const DEAD_FOR: f64 = 6.0;
    let limit = VRAM_TOTAL_GIB * 0.99 - DRIVER_RESERVED_GIB;
    let steps = ((limit - START) / STEP).floor();
    let life = (steps + 1.0) * EVERY;
    let period = life + DEAD_FOR;
    let generation = (t / period).floor() as u32;
    let within = t - f64::from(generation) * period;
    if within >= life {
        return (0.0, false, generation);
    }
    let mem = START + STEP * (within / EVERY).floor();
    (mem, true, generation)
}

fn oom_generation_start(generation: u32) -> f64 {
    let limit = VRAM_TOTAL_GIB * 0.99 - DRIVER_RESERVED_GIB;
    let life = (((limit - 40.0) / 1.5).floor() + 1.0) * 3.0;
    f64::from(generation) * (life + 6.0)
}

#[allow(clippy::too_many_arguments)]
fn proc(
    pid: u32,
    gpu: &GpuId,
    user: &str,
    uid: u32,
    command: &str,
    mem: Bytes,
    sm_util: f64,
    cpu: f64,
    host_gib: f64,
    started: SystemTime,
    sim: &mut SimSource,
) -> ProcReading {
    let jitter = if cpu > 1.0 {
        (sim.rng.f64() - 0.5) * 10.0
    } else {
        0.0
    };
    ProcReading {
        pid,
        gpu: gpu.clone(),
        kind: ProcKind::Compute,
        gpu_memory: Some(mem),
        sm_util: Some(Percent(sm_util.round() as u32)),
        host: HostProc::Visible(ProcDetails {
            user: user.to_string(),
            uid,
            command: command.to_string(),
            cpu_percent: Some(((cpu + jitter).max(0.0) * 10.0).round() as f32 / 10.0),
            host_memory: Some(Bytes::from_gib(host_gib)),
            started,
        }),
    }
}

impl GpuSource for SimSource {
    fn sample(&mut self) -> Result<Sample, SourceError> {
        let mut processes = Vec::new();
        let gpus = (0..self.gpu_count)
            .map(|i| self.gpu(i, &mut processes))
            .collect();
        let sample = Sample {
            time: self.now(),
            host: HostInfo {
                hostname: "demo-gpu-server".into(),
                driver_version: Some("550.54.15".into()),
                cuda_version: Some("12.4".into()),
            },
            gpus,
            processes,
            hosts: Vec::new(),
        };
        self.tick += 1;
        Ok(sample)
    }
}
