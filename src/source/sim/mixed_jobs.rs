//! The `mixed` demo scenario's processes as data: the job on each MIG instance of the H100
//! (with the instance's profile and size), and the jobs on the AMD and Intel GPUs. No
//! readings and no randomness here; `mixed` turns them into process readings.

use super::context::Runs;

/// One process of the scenario: who runs what, holding how much, how busy.
pub(super) struct Proc {
    pub pid: u32,
    pub owner: (&'static str, u32),
    pub command: &'static str,
    /// VRAM held (GiB), plus up to `jitter` GiB drawn each tick.
    pub gib: f64,
    pub jitter: f64,
    pub engine: Engine,
    pub cpu: f32,
    pub host_gib: f64,
    pub started_ago: u64,
    pub runs: Runs,
}

/// A process's engine use (`sm_util`) as its source would report it.
#[derive(Clone, Copy)]
pub(super) enum Engine {
    /// The source cannot tell (NVML in MIG mode).
    Unknown,
    /// This share of the GPU's busy % (amdgpu's fdinfo engine time, in step with the GPU).
    ShareOfGpu(f64),
    /// This %, whatever the GPU says (i915 gives no GPU-wide busy % to follow).
    Percent(f64),
}

/// One MIG instance and the process on it.
pub(super) struct Slice {
    pub gpu_instance: u32,
    pub profile: &'static str,
    /// The instance's memory as NVML reports it for an H100 80GB.
    pub total_mib: u64,
    pub proc: Proc,
}

pub(super) const SLICES: [Slice; 3] = [
    Slice {
        gpu_instance: 2,
        profile: "3g.40gb",
        total_mib: 40_320,
        proc: Proc {
            pid: 7010,
            owner: ("grace", 1007),
            command: "python train.py --config vit-l.yaml",
            gib: 31.5,
            jitter: 0.05,
            engine: Engine::Unknown,
            cpu: 88.0,
            host_gib: 14.0,
            started_ago: 2 * 3600 + 300,
            runs: Runs::Pod {
                namespace: "ml",
                name: "vit-train-0",
                container: "trainer",
            },
        },
    },
    // The inference server preallocates nearly all of its instance: the next long prompt
    // runs it out of memory, though the GPU as a whole is far from full.
    Slice {
        gpu_instance: 3,
        profile: "2g.20gb",
        total_mib: 20_096,
        proc: Proc {
            pid: 7020,
            owner: ("heidi", 1008),
            command: "vllm serve meta-llama/Llama-3.1-8B-Instruct",
            gib: 19.2,
            jitter: 0.1,
            engine: Engine::Unknown,
            cpu: 24.0,
            host_gib: 9.5,
            started_ago: 6 * 3600,
            runs: Runs::Docker {
                name: "vllm",
                image: "vllm/vllm-openai:v0.6.3",
            },
        },
    },
    Slice {
        gpu_instance: 9,
        profile: "1g.10gb",
        total_mib: 9_856,
        proc: Proc {
            pid: 7030,
            owner: ("grace", 1007),
            command: "python -m ipykernel_launcher -f kernel-2c71.json",
            gib: 2.1,
            jitter: 0.0,
            engine: Engine::Unknown,
            cpu: 0.3,
            host_gib: 3.0,
            started_ago: 50 * 60,
            runs: Runs::Service {
                name: "jupyter",
                user: true,
            },
        },
    },
];

pub(super) const AMD_PROCS: [Proc; 2] = [
    Proc {
        pid: 7110,
        owner: ("heidi", 1008),
        command: "python train.py --model llama-70b --fsdp",
        gib: 148.0,
        jitter: 0.2,
        engine: Engine::ShareOfGpu(0.9),
        cpu: 104.0,
        host_gib: 38.0,
        started_ago: 9 * 3600,
        runs: Runs::Slurm {
            job: 48200,
            name: "llama-70b",
        },
    },
    Proc {
        pid: 7120,
        owner: ("grace", 1007),
        command: "python3 embed.py --batch 512",
        gib: 22.5,
        jitter: 0.0,
        engine: Engine::ShareOfGpu(0.08),
        cpu: 41.0,
        host_gib: 6.0,
        started_ago: 35 * 60,
        runs: Runs::Login,
    },
];

pub(super) const INTEL_PROCS: [Proc; 2] = [
    Proc {
        pid: 7210,
        owner: ("ivan", 1009),
        command: "python -m ipex_llm.serve --model qwen2-7b",
        gib: 6.2,
        jitter: 0.02,
        engine: Engine::Percent(55.0),
        cpu: 62.0,
        host_gib: 8.0,
        started_ago: 4 * 3600,
        runs: Runs::Login,
    },
    Proc {
        pid: 7220,
        owner: ("root", 0),
        command: "ffmpeg -hwaccel qsv -i rtsp://cam3/stream -c:v h264_qsv out.mp4",
        gib: 0.3,
        jitter: 0.0,
        engine: Engine::Percent(15.0),
        cpu: 12.0,
        host_gib: 0.4,
        started_ago: 3 * 86400,
        runs: Runs::Service {
            name: "transcode",
            user: false,
        },
    },
];
