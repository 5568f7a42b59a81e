//! Criterion benchmarks for the per-tick cost of the monitor (issue 6): one sample → update
//! → render cycle at 8 GPUs / 200 processes and 64 GPUs / 5,000 processes, the process
//! table's filter + sort at 5,000 rows, and the JSON snapshot and the Prometheus scrape body
//! at 64 GPUs. Reported numbers, never assertions: targets are ≤ 1 ms and ≤ 10 ms per
//! cycle. Owns only these benchmarks.
//!
//! Run with `cargo bench --bench cycle`. Settings are kept short (20 samples, 1 s warm-up,
//! 3 s measurement) so the whole run fits in about a minute on a 2-core machine.

use std::hint::black_box;
use std::time::{Duration, SystemTime};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gpuwatch::model::filter::Filter;
use gpuwatch::model::procs::{ProcRow, ProcTable, RowView, SortDir, SortKey};
use gpuwatch::reading::{GpuReading, HostProc, ProcDetails, ProcKind, ProcReading, Sample};
use gpuwatch::source::GpuSource;
use gpuwatch::source::sim::{SimClock, SimSource};
use gpuwatch::state::{Msg, State, ViewConfig, update};
use gpuwatch::terminal::{self, Compact};
use gpuwatch::ui::{self, Theme};
use gpuwatch::units::{Bytes, Percent};
use ratatui::Terminal;
use ratatui::layout::Size;

const WIDTH: u16 = 200;
const HEIGHT: u16 = 60;
/// Distinct samples cycled through, so readings (and therefore the drawn frame) change
/// between iterations the way they do at 1 Hz, instead of redrawing one identical frame.
const DISTINCT_SAMPLES: usize = 16;

fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600)
}

/// `count` synthetic process rows spread round-robin over `gpus`, owned by 24 users, with
/// values that vary with `tick` so sorting has real work to do every sample.
fn synthetic_procs(gpus: &[GpuReading], count: usize, tick: u64) -> Vec<ProcReading> {
    const COMMANDS: [&str; 5] = [
        "python train.py --config llama-7b.yaml",
        "python -m torch.distributed.run --nproc 8 finetune.py",
        "jupyter-kernel --ip=127.0.0.1",
        "/usr/bin/dcgm-healthcheck --daemon",
        "./bench --iters 100000",
    ];
    (0..count)
        .map(|i| {
            let gpu = &gpus[i % gpus.len()];
            let user = i % 24;
            let wobble = (i as u64 * 7919 + tick * 104_729) % 1000;
            ProcReading {
                peak_gpu_memory: None,
                pid: 10_000 + i as u32,
                gpu: gpu.id.clone(),
                kind: if i % 17 == 0 {
                    ProcKind::Graphics
                } else {
                    ProcKind::Compute
                },
                gpu_memory: Some(Bytes::from_mib(256 + wobble * 16)),
                sm_util: Some(Percent((wobble % 101) as u32)),
                host: HostProc::Visible(ProcDetails {
                    user: format!("user{user:02}").into(),
                    uid: 2000 + user as u32,
                    command: format!("{} --rank {i}", COMMANDS[i % COMMANDS.len()]).into(),
                    cpu_percent: Some(wobble as f32 / 10.0),
                    host_memory: Some(Bytes::from_mib(512 + wobble)),
                    started: epoch() - Duration::from_secs(60 + i as u64 * 13),
                    context: Default::default(),
                }),
            }
        })
        .collect()
}

/// `DISTINCT_SAMPLES` consecutive samples of the simulated fleet with `procs` processes each.
fn samples(gpus: usize, procs: usize) -> Vec<Sample> {
    let mut sim = SimSource::new(
        gpus,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: epoch() },
    );
    (0..DISTINCT_SAMPLES as u64)
        .map(|tick| {
            let mut s = sim.sample().expect("the simulation never fails");
            s.processes = synthetic_procs(&s.gpus, procs, tick);
            s
        })
        .collect()
}

fn config() -> ViewConfig {
    ViewConfig {
        current_user: Some("user00".into()),
        ..ViewConfig::default()
    }
}

/// A state that has already seen a full history window, as after five minutes of running.
fn warmed_state(samples: &[Sample]) -> State {
    let mut state = State::new(config());
    update(
        &mut state,
        Msg::Resize {
            width: WIDTH,
            height: HEIGHT,
        },
    );
    let history = state.config.history_len;
    for k in 0..history {
        let mut s = samples[k % samples.len()].clone();
        s.time = epoch() + Duration::from_secs(k as u64);
        update(&mut state, Msg::Sample(Box::new(s)));
    }
    state
}

/// The TUI's screen (its byte encoder included), written into nothing.
fn screen() -> Terminal<Compact<std::io::Sink>> {
    let size = Size::new(WIDTH, HEIGHT);
    Terminal::new(Compact::with_size(std::io::sink(), size)).expect("a screen")
}

fn bench_cycle(c: &mut Criterion, name: &str, gpus: usize, procs: usize) {
    let samples = samples(gpus, procs);
    let mut state = warmed_state(&samples);
    // As the TUI applies a sample: a twin of the model (sharing its histories) on the
    // sampler's thread, what it set installed in the UI's (app::tracker; both counted here).
    let mut twin = state.model.twin(&state.config);
    let theme = Theme::new(true);
    let mut tui = screen();
    terminal::draw(&mut tui, |f| ui::draw(f, &state, &theme)).expect("draw");
    let mut tick = state.config.history_len as u64;
    c.bench_function(name, |b| {
        b.iter_batched(
            // The sampler hands over an owned Sample; building it is the source's cost,
            // measured separately (sim_sample), so the clone stays out of this number.
            || {
                let mut s = samples[tick as usize % samples.len()].clone();
                s.time = epoch() + Duration::from_secs(tick);
                tick += 1;
                s
            },
            |s| {
                twin.apply_sample(s, &state.config);
                let applied = Box::new(twin.take_applied());
                update(&mut state, Msg::Applied(Some(applied)));
                terminal::draw(&mut tui, |f| ui::draw(f, &state, &theme)).expect("draw");
            },
            BatchSize::SmallInput,
        )
    });
}

fn cycles(c: &mut Criterion) {
    bench_cycle(c, "cycle_8gpus_200procs_200x60", 8, 200);
    bench_cycle(c, "cycle_64gpus_5000procs_200x60", 64, 5000);
}

/// The parts of one cycle on their own at 64/5,000, to tell where the time goes.
fn cycle_parts(c: &mut Criterion) {
    let samples = samples(64, 5000);
    let mut state = warmed_state(&samples);
    let mut tick = state.config.history_len as u64;
    c.bench_function("update_only_64gpus_5000procs", |b| {
        b.iter_batched(
            || {
                let mut s = samples[tick as usize % samples.len()].clone();
                s.time = epoch() + Duration::from_secs(tick);
                tick += 1;
                s
            },
            |s| update(&mut state, Msg::Sample(Box::new(s))),
            BatchSize::SmallInput,
        )
    });
    let theme = Theme::new(true);
    let mut tui = screen();
    c.bench_function("draw_only_64gpus_5000procs_200x60", |b| {
        b.iter(|| terminal::draw(&mut tui, |f| ui::draw(f, &state, &theme)).is_ok())
    });
    let mut sim = SimSource::new(
        64,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: epoch() },
    );
    c.bench_function("sim_sample_64gpus", |b| b.iter(|| sim.sample().is_ok()));
}

fn rows(procs: usize) -> Vec<ProcRow> {
    let s = &samples(8, procs)[0];
    s.processes
        .iter()
        .map(|p| {
            let index = s.gpus.iter().position(|g| g.id == p.gpu).unwrap_or(0) as u32;
            ProcRow::from_reading(p, index, s.time)
        })
        .collect()
}

fn table(c: &mut Criterion) {
    let all = rows(5000);
    let mut table = ProcTable::default();
    table.set_sort(SortKey::Vram, SortDir::Descending);
    c.bench_function("table_set_rows_sort_vram_5000", |b| {
        b.iter_batched(|| all.clone(), |r| table.set_rows(r), BatchSize::SmallInput)
    });
    table.set_sort(SortKey::Command, SortDir::Ascending);
    table.set_view(RowView {
        filter: Filter::parse("cmd:train vram>1G").expect("valid filter"),
        ..RowView::default()
    });
    c.bench_function("table_set_rows_filter_sort_command_5000", |b| {
        b.iter_batched(|| all.clone(), |r| table.set_rows(r), BatchSize::SmallInput)
    });
    let mut keys = SortKey::ALL.iter().cycle();
    c.bench_function("table_resort_next_key_5000", |b| {
        b.iter(|| {
            let key = *keys.next().expect("cycle never ends");
            table.set_sort(key, key.default_direction());
        })
    });
}

fn json(c: &mut Criterion) {
    for (name, procs) in [
        ("json_64gpus_sim_procs", None),
        ("json_64gpus_5000procs", Some(5000)),
    ] {
        let mut samples = samples(64, procs.unwrap_or(0));
        if procs.is_none() {
            // The simulated fleet's own processes (about one per GPU).
            let mut sim = SimSource::new(
                64,
                42,
                Duration::from_secs(1),
                SimClock::Virtual { start: epoch() },
            );
            samples = vec![sim.sample().expect("the simulation never fails")];
        }
        let state = warmed_state(&samples);
        c.bench_function(name, |b| {
            b.iter(|| black_box(gpuwatch::headless::render_json(&state)).len())
        });
        // The exporter's scrape body from the same state, every series switched on.
        let options = gpuwatch::serve::MetricOptions {
            dcgm_compat: true,
            process_metrics: true,
            ..Default::default()
        };
        c.bench_function(&name.replace("json", "prometheus"), |b| {
            b.iter(|| black_box(gpuwatch::serve::metrics::render(&state, options)).len())
        });
    }
}

fn short() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = short();
    targets = cycles, cycle_parts, table, json
}
criterion_main!(benches);
