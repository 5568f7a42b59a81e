//! The integration tests, one crate: each file here is one area (`cli`, `serve_http`, …) and
//! links once, instead of ~45 binaries that each linked the whole tree (axum, hyper, h2,
//! rustls, ratatui). Run one area with `cargo test --test it cli::` (a name filter).
//! Shared support: `common` (commands, skips, tmux and pty drivers) and `serve_support`
//! (the exporter and HTTP stand-ins).

#[path = "../common/mod.rs"]
mod common;
#[path = "../serve_support/mod.rs"]
mod serve_support;

mod absent_sums;
mod alerts;
mod app_loop;
mod attribution;
mod bounded_sources;
mod cgroup_shapes;
mod charts;
mod check_real_gpu;
mod cli;
mod config;
mod deploy;
mod detail;
mod drm;
mod etiquette;
mod fuzz_inputs;
mod hardening;
mod hardening_tui;
mod health;
mod https_clients;
mod json_schema;
mod keys_fleet;
mod kubelet;
mod layers;
mod mig;
mod mixed;
mod names;
mod nvml_fake;
mod nvml_world;
mod pick;
mod pid_namespace;
mod prometheus;
mod prometheus_rules;
mod query;
mod readme;
mod real_docker;
mod real_kubelet;
mod real_podman;
mod real_slurm;
mod remote;
mod replay;
mod robustness;
mod rough_edges;
mod sampler;
mod screens;
mod serve;
mod serve_conventions;
mod serve_http;
mod serve_slow_clients;
mod signals;
mod symbol_order;
mod terminal_bytes;
mod tmux_detail;
mod tmux_e2e;
mod update_loop;
mod wait;
