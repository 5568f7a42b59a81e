//! Command-line flags, exactly as typed: parsing only. Validation and defaults that depend
//! on each other are resolved in `config::Settings`.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SourceKind {
    /// Real GPUs through NVML; fail with a hint when NVML cannot be loaded.
    Nvml,
    /// Real GPUs when NVML loads, otherwise the simulated demo fleet.
    Auto,
    /// The simulated demo fleet.
    Demo,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "gpuwatch",
    version,
    about = "A terminal GPU monitor for shared multi-GPU servers"
)]
pub struct Cli {
    /// Show the simulated demo fleet instead of real GPUs (same as --source demo).
    #[arg(long)]
    pub demo: bool,

    /// Where readings come from.
    #[arg(long, value_enum, default_value_t = SourceKind::Nvml)]
    pub source: SourceKind,

    /// Number of simulated GPUs (1..64).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub demo_gpus: usize,

    /// Seed of the simulated fleet; the same seed gives the same readings.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Time between samples, e.g. 1s, 500ms, 2s (minimum 100ms).
    #[arg(long, short = 'i', value_name = "DURATION", default_value = "1s")]
    pub interval: String,

    /// How much history the sparklines and trends keep, e.g. 5m, 1h.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub history: String,

    /// Print one snapshot and exit (implied when stdout is not a terminal).
    #[arg(long)]
    pub once: bool,

    /// With --once: print JSON instead of text.
    #[arg(long)]
    pub json: bool,

    /// Monochrome output (also when NO_COLOR is set and non-empty).
    #[arg(long)]
    pub no_color: bool,

    /// Start with compact one-line-per-GPU panels.
    #[arg(long)]
    pub compact: bool,

    /// Testing aid: panic after this many samples, to prove the terminal is restored.
    #[arg(long, hide = true, value_name = "N")]
    pub debug_panic_after: Option<u64>,

    /// Path to libnvidia-ml.so.1 (default: the system's).
    #[arg(long, value_name = "PATH", env = "GPUWATCH_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,

    /// VRAM use (%) at which a GPU gets an OOM warning.
    #[arg(long, value_name = "PERCENT", default_value_t = 90.0)]
    pub oom_warn: f64,

    /// VRAM use (%) at which the OOM warning turns critical.
    #[arg(long, value_name = "PERCENT", default_value_t = 97.0)]
    pub oom_critical: f64,

    /// Warn when VRAM would be full within this long at its recent growth rate.
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub oom_time_to_full: String,

    /// Temperature (°C) at which a GPU is reported running hot.
    #[arg(long, value_name = "CELSIUS", default_value_t = 85)]
    pub temp_warn: u32,

    /// Temperature (°C) that, held for --temp-hold, is critical (the device's own slowdown
    /// threshold is used instead when it is lower).
    #[arg(long, value_name = "CELSIUS", default_value_t = 90)]
    pub temp_critical: u32,

    /// How long the critical temperature must hold before the alert turns critical.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub temp_hold: String,
}
