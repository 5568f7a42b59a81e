//! The GPU detail view (Enter or `d` on a focused GPU): full-size charts of everything the
//! GPU's history holds, every detail its source gives (uncut: wrapped, never `…`), and its
//! processes with their share of its VRAM. Reads the state only.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::Theme;
use super::chart::{self, ChartSpec};
use crate::present::format::{NA, bytes_short, gib, gpu_name, or_na, pack, rate, truncate};
use crate::reading::HistoryPoint;
use crate::reading::fields::Key;
use crate::reading::{GpuId, GpuReading, GpuStatus};
use crate::state::State;
use crate::units::Bytes;

pub fn draw(frame: &mut Frame, area: Rect, state: &State, theme: &Theme, id: &GpuId) {
    frame.render_widget(Clear, area);
    let Some(gpu) = state.model.gpu(id) else {
        let text = " This GPU is no longer listed by the source. Esc: back";
        frame.render_widget(Paragraph::new(Line::styled(text, theme.warning)), area);
        return;
    };
    let title = format!(
        " GPU {} · {} · {} · Tab: next GPU · Esc: back",
        gpu.label(),
        gpu_name(gpu),
        gpu.pci_bus_id.as_deref().unwrap_or("bus N/A")
    );
    let width = area.width as usize;
    // Wide screens put the facts and the processes side by side under the charts.
    let wide = area.width >= 140;
    let procs_width = if wide { width / 2 } else { width };
    let facts_width = width - if wide { procs_width } else { 0 };
    let facts = pack(&facts(gpu, state), " · ", facts_width.saturating_sub(2));
    let columns = if area.width >= 160 { 3 } else { 2 };
    // Charts keep at least 3 rows each (a title and 8 rows of braille dots) and half the
    // screen; the text takes what it needs of the rest.
    let min_charts = (CHARTS.div_ceil(columns) * 3) as u16;
    let charts_floor = min_charts.max(area.height.saturating_sub(1) / 2);
    let room = area.height.saturating_sub(1 + charts_floor) as usize;
    let procs_room = room.saturating_sub(if wide { 0 } else { facts.len() });
    let procs = process_lines(gpu, state, procs_width, procs_room);
    let info_height = if wide {
        facts.len().max(procs.len())
    } else {
        facts.len() + procs.len()
    }
    .min(room) as u16;
    let title_area = Rect::new(area.x, area.y, area.width, 1);
    frame.render_widget(Paragraph::new(Line::styled(title, theme.title)), title_area);
    let charts_area = Rect::new(
        area.x,
        area.y + 1,
        area.width,
        area.height.saturating_sub(1 + info_height),
    );
    let info = Rect::new(area.x, charts_area.bottom(), area.width, info_height);
    draw_charts(frame, charts_area, state, theme, gpu, columns);
    let fact_lines: Vec<Line> = facts
        .into_iter()
        .map(|l| Line::raw(format!(" {l}")))
        .collect();
    if wide {
        let left = Rect::new(info.x, info.y, facts_width as u16, info.height);
        let right = Rect::new(left.right(), info.y, procs_width as u16, info.height);
        frame.render_widget(Paragraph::new(fact_lines), left);
        frame.render_widget(Paragraph::new(procs), right);
    } else {
        let mut lines = fact_lines;
        lines.extend(procs);
        frame.render_widget(Paragraph::new(lines), info);
    }
}

const CHARTS: usize = 6;

/// Every detail the source gives, one item each; `N/A` where it could not tell.
fn facts(g: &GpuReading, state: &State) -> Vec<String> {
    // Current utilisation, temperature and power head their charts; the rest is here.
    let mut items = Vec::new();
    if g.status == GpuStatus::Lost {
        items.push("LOST: the GPU stopped answering".to_string());
    }
    items.extend(memory_and_heat(g));
    items.extend(clocks_and_links(g));
    items.extend(g.allocations.iter().map(|a| {
        format!(
            "allocated to pod {}/{} ({})",
            a.namespace, a.pod, a.container
        )
    }));
    items.extend(
        state
            .model
            .warnings()
            .iter()
            .filter(|w| w.gpu() == Some(&g.id))
            .map(crate::present::warnings::warning_line),
    );
    items
}

/// VRAM, temperatures, power, energy, P-state and fan.
fn memory_and_heat(g: &GpuReading) -> [String; 6] {
    let c = |v: Option<crate::units::Celsius>| or_na(v, |t| format!("{} °C", t.0));
    [
        format!(
            "VRAM {} of {} GiB (reserved {}, free {})",
            or_na(g.memory_used, gib),
            or_na(g.memory_total, gib),
            or_na(g.memory_reserved, bytes_short),
            or_na(g.memory_free, bytes_short)
        ),
        format!(
            "temperature {} (slowdown {}, shutdown {})",
            c(g.temperature),
            c(g.temperature_slowdown),
            c(g.temperature_shutdown)
        ),
        format!(
            "power {} (limit {})",
            or_na(g.power, |w| format!("{:.0} W", w.0)),
            or_na(g.power_limit, |w| format!("{:.0} W", w.0))
        ),
        format!("energy {}", or_na(g.energy_joules, energy)),
        format!("P-state {}", or_na(g.pstate, |p| format!("P{p}"))),
        format!("fan {}", pct(g.fan)),
    ]
}

/// Clocks, PCIe, the media engines, ECC, MIG, the modes that decide who may start work
/// here ("why won't my job start on GPU 3?": an exclusive-process GPU) and why clocks are
/// held.
fn clocks_and_links(g: &GpuReading) -> [String; 8] {
    let mhz = |v: Option<crate::units::MegaHertz>| or_na(v, |m| format!("{} MHz", m.0));
    let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
    [
        format!("SM clock {} (max {})", mhz(g.sm_clock), mhz(g.sm_clock_max)),
        format!(
            "memory clock {} (max {})",
            mhz(g.memory_clock),
            mhz(g.memory_clock_max)
        ),
        format!(
            "PCIe gen {} x{} (max gen {} x{}) · TX {} · RX {}",
            or_na(g.pcie_link_gen, |v| v.to_string()),
            or_na(g.pcie_link_width, |v| v.to_string()),
            or_na(g.pcie_link_gen_max, |v| v.to_string()),
            or_na(g.pcie_link_width_max, |v| v.to_string()),
            or_na(g.pcie_tx_per_second, rate),
            or_na(g.pcie_rx_per_second, rate)
        ),
        format!(
            "encoder {} · decoder {}",
            pct(g.encoder_util),
            pct(g.decoder_util)
        ),
        format!(
            "ECC errors since driver load: uncorrected {}, corrected {}",
            or_na(g.ecc_errors_uncorrected, |n| n.to_string()),
            or_na(g.health.ecc_corrected, |n| n.to_string())
        ),
        format!("MIG {}", or_na(g.mig_enabled, on_off)),
        format!(
            "compute mode {} · persistence mode {}",
            or_na(g.compute_mode, |m| m.nvidia_smi_name().to_string()),
            or_na(g.persistence_mode, on_off)
        ),
        throttle(g),
    ]
}

fn energy(joules: f64) -> String {
    if joules >= 3.6e6 {
        format!("{:.1} kWh", joules / 3.6e6)
    } else {
        format!("{:.0} kJ", joules / 1e3)
    }
}

/// Why clocks are held, each reason with its words.
fn throttle(g: &GpuReading) -> String {
    match g.throttle_reasons.as_deref() {
        None => format!("clocks held by: {NA}"),
        Some([]) => "clocks: not held down".into(),
        Some(reasons) => {
            let words: Vec<String> = reasons
                .iter()
                .map(|r| format!("{} ({})", r.label(), r.words()))
                .collect();
            format!("clocks held by: {}", words.join(", "))
        }
    }
}

/// The GPU's processes, largest first, with their share of its VRAM; at most `room`
/// lines, the last saying how many more there are.
fn process_lines(g: &GpuReading, state: &State, width: usize, room: usize) -> Vec<Line<'static>> {
    let mut rows: Vec<_> = state
        .model
        .procs()
        .all
        .iter()
        .filter(|r| r.key.gpu == g.id)
        .collect();
    rows.sort_by(|a, b| b.vram.cmp(&a.vram).then(a.key.pid.cmp(&b.key.pid)));
    let mut lines = vec![Line::raw(format!(" processes ({})", rows.len()))];
    let total = g.memory_total.map(|b| b.0).filter(|&t| t > 0);
    let show = if rows.len() + 1 > room {
        room.saturating_sub(2)
    } else {
        rows.len()
    };
    for r in rows.iter().take(show) {
        let share = match (r.vram, total) {
            (Some(v), Some(t)) => format!("{:>3.0} %", v.0 as f64 * 100.0 / t as f64),
            _ => format!("{NA:>5}"),
        };
        let text = format!(
            "  {:>7} {:<10} {:>6} {share} {}",
            r.key.pid,
            truncate(r.user.as_deref().unwrap_or("?"), 10),
            or_na(r.vram, bytes_short),
            r.command
        );
        lines.push(Line::raw(truncate(&text, width.saturating_sub(1))));
    }
    if show < rows.len() {
        lines.push(Line::raw(format!(
            "  … and {} more (Esc, then the table; Enter opens one)",
            rows.len() - show
        )));
    }
    lines
}

/// This GPU's points, drawn against the latest sample's time.
type Points<'a> = chart::Points<'a, HistoryPoint>;

/// A point's `key` in the unit its chart is drawn in: base units times `times` (ratio to %,
/// hertz to MHz).
fn value(key: Key, times: f64) -> impl Fn(&HistoryPoint) -> Option<f64> {
    move |p| p.get(key).map(|v| v * times)
}

fn draw_charts(
    frame: &mut Frame,
    area: Rect,
    state: &State,
    theme: &Theme,
    g: &GpuReading,
    columns: usize,
) {
    // Rebuilt whole from the history's columns: one GPU's window, once a frame.
    let kept = state
        .model
        .history(&g.id)
        .map_or_else(Vec::new, |h| h.points());
    let pts = Points {
        now: state.model.now().unwrap_or(std::time::UNIX_EPOCH),
        points: kept.iter().collect(),
    };
    let window = (state.config.history_len as f64 * state.config.interval.as_secs_f64()).max(1.0);
    let mut specs = load_specs(g, theme, &pts);
    specs.extend(thermal_specs(g, theme, &pts));
    specs.extend(link_specs(g, theme, &pts));
    for (spec, cell) in specs.iter().zip(chart::grid(area, CHARTS, columns)) {
        chart::draw(frame, cell, spec, window, theme.dim);
    }
}

fn pct(v: Option<crate::units::Percent>) -> String {
    or_na(v, |p| format!("{} %", p.0))
}

/// Utilisation (SM and memory) and VRAM (with the total).
fn load_specs(g: &GpuReading, theme: &Theme, pts: &Points) -> Vec<ChartSpec> {
    let util = pts.series(
        format!("SM {}", pct(g.util)),
        theme.spark_util,
        value(Key::Util, 100.0),
    );
    let mem = pts.series(
        format!("memory {}", pct(g.memory_util)),
        theme.spark_power,
        value(Key::MemoryUtil, 100.0),
    );
    let vram = pts.series(
        format!("{} GiB", or_na(g.memory_used, gib)),
        theme.spark_util,
        value(Key::MemoryUsed, 1.0),
    );
    vec![
        ChartSpec {
            title: "utilization".into(),
            series: vec![util, mem],
            references: vec![],
            y_floor: 100.0,
            y_label: |v| format!("{v:.0}%"),
        },
        ChartSpec {
            title: "VRAM".into(),
            series: vec![vram],
            references: g
                .memory_total
                .map(|t| (t.0 as f64, format!("total {} GiB", gib(t)), theme.warning))
                .into_iter()
                .collect(),
            y_floor: 1.0,
            y_label: |v| format!("{:.0}G", v / Bytes::GIB as f64),
        },
    ]
}

/// Temperature (with the slowdown point) and power (with the limit).
fn thermal_specs(g: &GpuReading, theme: &Theme, pts: &Points) -> Vec<ChartSpec> {
    let temp = or_na(g.temperature, |c| format!("{} °C", c.0));
    let power = or_na(g.power, |w| format!("{:.0} W", w.0));
    vec![
        ChartSpec {
            title: "temperature".into(),
            series: vec![pts.series(temp, theme.spark_temp, value(Key::Temperature, 1.0))],
            references: g
                .temperature_slowdown
                .map(|c| (c.0 as f64, format!("slowdown {} °C", c.0), theme.critical))
                .into_iter()
                .collect(),
            y_floor: 50.0,
            y_label: |v| format!("{v:.0}°"),
        },
        ChartSpec {
            title: "power".into(),
            series: vec![pts.series(power, theme.spark_power, value(Key::Power, 1.0))],
            references: g
                .power_limit
                .map(|w| (w.0, format!("limit {:.0} W", w.0), theme.warning))
                .into_iter()
                .collect(),
            y_floor: 10.0,
            y_label: |v| format!("{v:.0}W"),
        },
    ]
}

/// Clocks (with their maxima) and PCIe traffic.
fn link_specs(g: &GpuReading, theme: &Theme, pts: &Points) -> Vec<ChartSpec> {
    let sm = or_na(g.sm_clock, |m| format!("SM {} MHz", m.0));
    let mem = or_na(g.memory_clock, |m| format!("mem {} MHz", m.0));
    let tx = or_na(g.pcie_tx_per_second, |b| format!("TX {}", rate(b)));
    let rx = or_na(g.pcie_rx_per_second, |b| format!("RX {}", rate(b)));
    vec![
        ChartSpec {
            title: "clocks".into(),
            series: vec![
                pts.series(sm, theme.spark_util, value(Key::SmClock, 1e-6)),
                pts.series(mem, theme.spark_temp, value(Key::MemoryClock, 1e-6)),
            ],
            references: [g.sm_clock_max, g.memory_clock_max]
                .into_iter()
                .flatten()
                .map(|m| (m.0 as f64, format!("max {}", m.0), theme.dim))
                .collect(),
            y_floor: 100.0,
            y_label: |v| format!("{v:.0}"),
        },
        ChartSpec {
            title: "PCIe".into(),
            series: vec![
                pts.series(tx, theme.spark_util, value(Key::PcieTx, 1.0)),
                pts.series(rx, theme.spark_power, value(Key::PcieRx, 1.0)),
            ],
            references: vec![],
            y_floor: Bytes::MIB as f64,
            y_label: |v| rate(Bytes(v as u64)),
        },
    ]
}
