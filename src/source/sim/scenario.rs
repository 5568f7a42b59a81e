//! The demo fleet's scenario as data: what each GPU in a block of eight does (`ROLES`), who
//! runs what on it, and the few pure functions of scenario time that the table cannot hold
//! (the OOM cycle, the climbing temperature). Owns no state and no randomness: `super`
//! draws the noise and turns a role into readings.

pub(super) use super::context::{Pin, Runs};
use crate::wire::WarningCode;

/// The name every simulated GPU reports.
pub(super) const GPU_NAME: &str = "NVIDIA H100 80GB HBM3";
pub(super) const VRAM_TOTAL_GIB: f64 = 79.6;
pub(super) const POWER_CAP_W: f64 = 700.0;
pub(super) const SLOWDOWN_C: u32 = 94;
/// VRAM the driver keeps on every GPU with no process (what nvidia-smi shows as used when idle).
pub(super) const DRIVER_RESERVED_GIB: f64 = 0.5;

/// The situations the monitor must make visible, one per GPU slot: a busy GPU, one that
/// raises a warning (by the warning's code; a test checks the demo raises it there), a free one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Training,
    Warns(WarningCode),
    Free,
}

/// A reading drawn as `base + noise * n` for the tick's noise `n` in `0..1`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    pub base: f64,
    pub noise: f64,
}

impl Spread {
    pub fn at(self, n: f64) -> f64 {
        self.base + self.noise * n
    }
}

/// Where a GPU's temperature is heading at scenario time `t`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    Steady(f64),
    /// A job that runs in bursts: while it runs (`runs_for` seconds) the temperature climbs
    /// `per_s` degrees a second from `from` until it sits at `ceiling`; then the job pauses
    /// for `pause_for` seconds (the GPU idles and cools toward `idle`), and it starts again.
    Bursts {
        from: f64,
        per_s: f64,
        ceiling: f64,
        runs_for: f64,
        pause_for: f64,
        idle: f64,
    },
}

impl Target {
    pub fn at(self, t: f64) -> f64 {
        match self {
            Target::Steady(c) => c,
            Target::Bursts {
                from,
                per_s,
                ceiling,
                runs_for,
                pause_for,
                idle,
            } => {
                let within = t % (runs_for + pause_for);
                if within < runs_for {
                    (from + per_s * within).min(ceiling)
                } else {
                    idle
                }
            }
        }
    }

    /// Whether the GPU's job is pausing between bursts at `t` (it then does no work).
    pub fn paused(self, t: f64) -> bool {
        match self {
            Target::Steady(_) => false,
            Target::Bursts {
                runs_for,
                pause_for,
                ..
            } => t % (runs_for + pause_for) >= runs_for,
        }
    }
}

/// Who owns a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// The user this GPU slot belongs to (`user_of`).
    GpuUser,
    Root,
    /// A user who shares the GPU without owning the slot (the pile-up's).
    Named(&'static str, u32),
}

/// How a job's PID is numbered.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pid {
    /// `base + 10 * gpu index`: one process per GPU.
    PerGpu(u32),
    /// `base + 10 * block`: one process shared by GPUs of the same block of eight.
    PerBlock(u32),
    /// The same PID everywhere (a daemon).
    Fixed(u32),
}

/// How much VRAM a job holds, and for how long it lives.
#[derive(Debug, Clone, Copy)]
pub(super) enum Vram {
    /// A steady amount (GiB).
    Steady(f64),
    /// Steady, `per_gpu` GiB more per GPU index mod 7, plus up to `jitter` GiB of allocator
    /// noise drawn each tick.
    Jittered { gib: f64, per_gpu: f64, jitter: f64 },
    /// Grows until it would not fit, dies, and is restarted under a new PID (`oom_cycle`).
    GrowsToOom,
}

/// One process the scenario puts on a GPU.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    pub pid: Pid,
    pub owner: Owner,
    pub command: &'static str,
    pub vram: Vram,
    /// Whether its SM use follows the GPU's utilization (else 0: it holds, not computes).
    pub computes: bool,
    /// Host CPU %; above 1 % it jitters by up to ±5 points a tick.
    pub cpu: f64,
    pub host_gib: f64,
    /// Seconds before the first sample that it started (`GrowsToOom` jobs start with each
    /// generation instead).
    pub started_ago: u64,
    pub runs: Runs,
    pub pin: Pin,
}

/// What one GPU slot does: its load, its owner and the processes on it.
#[derive(Debug)]
pub(super) struct RoleSpec {
    pub role: Role,
    /// Which of the block's four user slots owns this GPU (`user_of`).
    pub user_slot: usize,
    pub util: Spread,
    pub power: Spread,
    pub fan: f64,
    pub start_temp: f64,
    pub temp: Target,
    /// VRAM held with no process listed: freed by nobody after its process died.
    pub orphan_gib: f64,
    pub jobs: &'static [Job],
}

const TRAIN: Job = Job {
    pid: Pid::PerGpu(1000),
    owner: Owner::GpuUser,
    command: "python train.py --config llama-7b.yaml --nproc 2",
    // Training jobs hold a steady amount, a little different per GPU, with a few MiB of
    // allocator jitter.
    vram: Vram::Jittered {
        gib: 64.0,
        per_gpu: 0.3,
        jitter: 0.01,
    },
    computes: true,
    cpu: 118.0,
    host_gib: 24.0,
    started_ago: 5 * 3600 + 1200,
    runs: Runs::Slurm {
        job: 48121,
        name: "train-llama",
    },
    pin: Pin::Cuda(&[0, 1]),
};
/// A small root-owned health check that shares the first GPU of each block.
const HEALTHCHECK: Job = Job {
    pid: Pid::Fixed(612),
    owner: Owner::Root,
    command: "/usr/bin/dcgm-healthcheck --daemon",
    vram: Vram::Steady(0.6),
    computes: false,
    cpu: 0.5,
    host_gib: 0.1,
    started_ago: 9 * 86400,
    runs: Runs::Service {
        name: "nvidia-dcgm",
        user: false,
    },
    pin: Pin::Cuda(&[0]),
};
/// Two processes started from login shells without `CUDA_VISIBLE_DEVICES`: both land on
/// GPU 0, beside the training job, while GPU 6 is free — the pile-up.
const EVAL: Job = Job {
    pid: Pid::PerGpu(5000),
    owner: Owner::Named("erin", 1005),
    command: "python eval.py --ckpt runs/latest",
    vram: Vram::Steady(2.5),
    computes: false,
    cpu: 35.0,
    host_gib: 4.0,
    started_ago: 25 * 60,
    runs: Runs::Login,
    pin: Pin::Unset,
};
const REPL: Job = Job {
    pid: Pid::PerGpu(5100),
    owner: Owner::Named("frank", 1006),
    command: "python3",
    vram: Vram::Steady(1.0),
    computes: false,
    cpu: 0.2,
    host_gib: 1.2,
    started_ago: 2 * 3600,
    runs: Runs::Login,
    pin: Pin::Unset,
};
const FINETUNE: Job = Job {
    pid: Pid::PerGpu(2000),
    owner: Owner::GpuUser,
    command: "python finetune.py --batch-size 64",
    vram: Vram::GrowsToOom,
    computes: true,
    cpu: 97.0,
    host_gib: 18.0,
    started_ago: 0,
    runs: Runs::Docker {
        name: "finetune",
        image: "pytorch/pytorch:2.4.0-cuda12.4",
    },
    pin: Pin::Container(&[2]),
};
const BENCH: Job = Job {
    pid: Pid::PerGpu(3000),
    owner: Owner::GpuUser,
    command: "./bench_matmul --size 16384 --iters 100000",
    vram: Vram::Steady(52.3),
    computes: true,
    cpu: 101.0,
    host_gib: 3.2,
    started_ago: 40 * 60,
    runs: Runs::Pod {
        namespace: "ml",
        name: "bench-7f9c",
        container: "bench",
    },
    pin: Pin::Container(&[3]),
};
/// The same notebook kernel holds memory on the idle holder and keeps a small context on
/// the block's last GPU: one PID on two GPUs.
const fn notebook(gib: f64) -> Job {
    Job {
        pid: Pid::PerBlock(4000),
        owner: Owner::GpuUser,
        command: "python -m ipykernel_launcher -f kernel-8f3a.json",
        vram: Vram::Steady(gib),
        computes: false,
        cpu: 0.3,
        host_gib: 6.1,
        started_ago: 3 * 3600 + 700,
        runs: Runs::Service {
            name: "jupyter",
            user: true,
        },
        pin: Pin::Cuda(&[4, 7]),
    }
}

const fn idle(
    role: Role,
    power: f64,
    temp: f64,
    orphan_gib: f64,
    jobs: &'static [Job],
) -> RoleSpec {
    RoleSpec {
        role,
        user_slot: 3,
        util: Spread {
            base: 0.0,
            noise: 0.0,
        },
        power: Spread {
            base: power,
            noise: 4.0,
        },
        fan: 30.0,
        start_temp: temp,
        temp: Target::Steady(temp),
        orphan_gib,
        jobs,
    }
}

const fn training(jobs: &'static [Job]) -> RoleSpec {
    RoleSpec {
        role: Role::Training,
        user_slot: 0,
        util: Spread {
            base: 92.0,
            noise: 8.0,
        },
        power: Spread {
            base: 610.0,
            noise: 80.0,
        },
        fan: 62.0,
        start_temp: 74.0,
        temp: Target::Steady(76.0),
        orphan_gib: 0.0,
        jobs,
    }
}

/// Roles by index within each block of eight GPUs; beyond 8 GPUs the pattern repeats with
/// other users (`user_of`).
pub(super) static ROLES: [RoleSpec; 8] = [
    training(&[TRAIN, HEALTHCHECK, EVAL, REPL]),
    training(&[TRAIN]),
    RoleSpec {
        role: Role::Warns(WarningCode::OomRisk),
        user_slot: 1,
        util: Spread {
            base: 70.0,
            noise: 25.0,
        },
        power: Spread {
            base: 450.0,
            noise: 120.0,
        },
        fan: 50.0,
        start_temp: 66.0,
        temp: Target::Steady(70.0),
        orphan_gib: 0.0,
        jobs: &[FINETUNE],
    },
    // Climbs a quarter degree a second from 84 °C until it sits just above 90 °C; after four
    // minutes the benchmark pauses for one and the GPU cools (so its alert also resolves).
    RoleSpec {
        role: Role::Warns(WarningCode::Overheating),
        user_slot: 2,
        util: Spread {
            base: 100.0,
            noise: 0.0,
        },
        power: Spread {
            base: 690.0,
            noise: 10.0,
        },
        fan: 100.0,
        start_temp: 84.0,
        temp: Target::Bursts {
            from: 84.0,
            per_s: 0.25,
            ceiling: 92.0,
            runs_for: 240.0,
            pause_for: 60.0,
            idle: 60.0,
        },
        orphan_gib: 0.0,
        jobs: &[BENCH],
    },
    idle(
        Role::Warns(WarningCode::IdleHolder),
        72.0,
        36.0,
        0.0,
        &[notebook(30.2)],
    ),
    // VRAM still held after its process died: nobody is listed.
    idle(Role::Warns(WarningCode::StaleVram), 66.0, 31.0, 12.4, &[]),
    idle(Role::Free, 66.0, 31.0, 0.0, &[]),
    idle(Role::Free, 66.0, 31.0, 0.0, &[notebook(1.1)]),
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

pub(super) fn role_of(i: usize) -> &'static RoleSpec {
    &ROLES[i % ROLES.len()]
}

/// Owner of the GPU's main job: two users per block of eight, shifting each block.
pub(super) fn user_of(i: usize) -> (&'static str, u32) {
    USERS[(i / 8 * 2 + role_of(i).user_slot) % USERS.len()]
}

impl Pid {
    pub fn of(self, i: usize) -> u32 {
        match self {
            Pid::PerGpu(base) => base + i as u32 * 10,
            Pid::PerBlock(base) => base + (i as u32 / 8) * 10,
            Pid::Fixed(pid) => pid,
        }
    }
}

/// The OOM scenario: a job starts at 40 GiB and grows 1.5 GiB every 3 s until it would pass
/// 99 % of VRAM, then dies; 6 s later it is restarted (a new PID).
/// Returns (GiB held, alive, generation).
pub(super) fn oom_cycle(t: f64) -> (f64, bool, u32) {
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

/// Seconds from one OOM generation's start to the next's (its life plus the time dead).
pub(super) fn oom_period() -> f64 {
    oom_generation_start(1)
}

/// Seconds after the first sample at which OOM generation `generation` started.
pub(super) fn oom_generation_start(generation: u32) -> f64 {
    let limit = VRAM_TOTAL_GIB * 0.99 - DRIVER_RESERVED_GIB;
    let life = (((limit - 40.0) / 1.5).floor() + 1.0) * 3.0;
    f64::from(generation) * (life + 6.0)
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
