//! Unit tests of the `/metrics` renderers on hand-built states: names, units, labels, and
//! unknown readings left out.

use std::time::{Duration, SystemTime};

use super::*;
use crate::reading::{
    GpuId, GpuReading, GpuStatus, HostInfo, HostProc, ProcDetails, ProcKind, ProcReading,
};
use crate::source::GpuSource;
use crate::source::sim::{SimClock, SimSource};
use crate::state::{Msg, ViewConfig, update};
use crate::units::{Bytes, Celsius, MegaHertz, Percent, Watts};

const FULL: &str = "GPU-full";
const BARE: &str = "GPU-bare";

fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600)
}

/// A GPU with every reading known.
fn full() -> GpuReading {
    let mut g = GpuReading::absent(GpuId(FULL.into()), 0, "NVIDIA H100 80GB HBM3");
    g.util = Some(Percent(37));
    g.memory_util = Some(Percent(12));
    g.memory_total = Some(Bytes(80 * Bytes::GIB));
    g.memory_used = Some(Bytes(10 * Bytes::GIB));
    g.memory_free = Some(Bytes(70 * Bytes::GIB - Bytes::MIB * 512));
    g.memory_reserved = Some(Bytes(Bytes::MIB * 512));
    g.temperature = Some(Celsius(61));
    g.temperature_slowdown = Some(Celsius(87));
    g.temperature_shutdown = Some(Celsius(92));
    g.power = Some(Watts(312.5));
    g.power_limit = Some(Watts(700.0));
    g.energy_joules = Some(123_456.789);
    g.fan = Some(Percent(0));
    g.sm_clock = Some(MegaHertz(1755));
    g.memory_clock = Some(MegaHertz(2619));
    g.sm_clock_max = Some(MegaHertz(1980));
    g.memory_clock_max = Some(MegaHertz(2619));
    g.pstate = Some(0);
    g.encoder_util = Some(Percent(0));
    g.decoder_util = Some(Percent(5));
    g.pcie_link_gen = Some(5);
    g.pcie_link_width = Some(16);
    g.pcie_tx_per_second = Some(Bytes(1_024_000));
    g.pcie_rx_per_second = Some(Bytes(2_048_000));
    g.throttle_reasons = Some(vec!["sw_power_cap".into(), "made_up_reason".into()]);
    g.ecc_errors_uncorrected = Some(0);
    g.mig_enabled = Some(false);
    g.pci_bus_id = Some("00000000:17:00.0".into());
    let mut xid = crate::reading::health::XidTally::NONE;
    xid.record(79, at());
    g.health = crate::reading::health::Health {
        memory_temperature: Some(Celsius(71)),
        pcie_replays: Some(4),
        ecc_corrected: Some(3),
        retired_pages: Some(crate::reading::health::RetiredPages {
            single_bit: 0,
            double_bit: 1,
            pending: true,
        }),
        remapped_rows: Some(crate::reading::health::RemappedRows {
            correctable: 1,
            uncorrectable: 2,
            pending: false,
            failed: true,
        }),
        xid: Some(xid),
    };
    g
}

fn proc_on(gpu: &str, pid: u32, host: HostProc) -> ProcReading {
    ProcReading {
        peak_gpu_memory: None,
        pid,
        gpu: GpuId(gpu.into()),
        kind: ProcKind::Compute,
        gpu_memory: Some(Bytes(4 * Bytes::GIB)),
        sm_util: Some(Percent(30)),
        host,
    }
}

fn visible(command: &str) -> HostProc {
    HostProc::Visible(ProcDetails {
        user: "alice".into(),
        uid: 1000,
        command: command.into(),
        cpu_percent: Some(12.0),
        host_memory: Some(Bytes(Bytes::GIB)),
        started: at() - Duration::from_secs(600),
        context: Default::default(),
    })
}

fn state_with(gpus: Vec<GpuReading>, processes: Vec<ProcReading>) -> State {
    let mut state = State::new(ViewConfig::default());
    // A simulated sample with our GPUs, processes and host in it, so fields the sample may
    // gain later need no change here.
    let mut sample = SimSource::new(
        1,
        42,
        Duration::from_secs(1),
        SimClock::Virtual { start: at() },
    )
    .sample()
    .expect("the simulation never fails");
    sample.time = at();
    sample.host = HostInfo {
        hostname: "node1".into(),
        driver_version: Some("550.54.15".into()),
        cuda_version: None,
        load: Default::default(),
        lookups: Vec::new(),
    };
    sample.gpus = gpus;
    sample.processes = processes;
    update(&mut state, Msg::Sample(Box::new(sample)));
    state
}

fn render_all(state: &State) -> String {
    render(
        state,
        MetricOptions {
            dcgm_compat: true,
            process_metrics: true,
            ..Default::default()
        },
    )
}

/// The sample lines of one metric name (not the HELP/TYPE lines).
fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .collect()
}

#[test]
fn every_reading_is_exported_in_base_units() {
    let text = render(&state_with(vec![full()], vec![]), MetricOptions::default());
    let l = r#"{gpu="0",uuid="GPU-full",name="NVIDIA H100 80GB HBM3"}"#;
    for (name, value) in [
        ("gpuwatch_gpu_utilization_ratio", "0.37"),
        ("gpuwatch_gpu_memory_utilization_ratio", "0.12"),
        ("gpuwatch_gpu_memory_total_bytes", "85899345920"),
        ("gpuwatch_gpu_memory_used_bytes", "10737418240"),
        ("gpuwatch_gpu_memory_free_bytes", "74625056768"),
        ("gpuwatch_gpu_memory_reserved_bytes", "536870912"),
        ("gpuwatch_gpu_temperature_celsius", "61"),
        ("gpuwatch_gpu_slowdown_temperature_celsius", "87"),
        ("gpuwatch_gpu_shutdown_temperature_celsius", "92"),
        ("gpuwatch_gpu_power_watts", "312.5"),
        ("gpuwatch_gpu_power_limit_watts", "700"),
        ("gpuwatch_gpu_energy_joules_total", "123456.789"),
        ("gpuwatch_gpu_fan_speed_ratio", "0"),
        ("gpuwatch_gpu_sm_clock_hertz", "1755000000"),
        ("gpuwatch_gpu_memory_clock_hertz", "2619000000"),
        ("gpuwatch_gpu_sm_clock_max_hertz", "1980000000"),
        ("gpuwatch_gpu_memory_clock_max_hertz", "2619000000"),
        ("gpuwatch_gpu_performance_state", "0"),
        ("gpuwatch_gpu_encoder_utilization_ratio", "0"),
        ("gpuwatch_gpu_decoder_utilization_ratio", "0.05"),
        ("gpuwatch_gpu_pcie_link_generation", "5"),
        ("gpuwatch_gpu_pcie_link_width", "16"),
        ("gpuwatch_gpu_pcie_transmit_bytes_per_second", "1024000"),
        ("gpuwatch_gpu_pcie_receive_bytes_per_second", "2048000"),
        ("gpuwatch_gpu_ecc_uncorrected_errors_total", "0"),
        ("gpuwatch_gpu_mig_enabled", "0"),
        ("gpuwatch_gpu_lost", "0"),
        ("gpuwatch_gpu_processes", "0"),
        ("gpuwatch_gpu_memory_temperature_celsius", "71"),
        ("gpuwatch_gpu_pcie_replays_total", "4"),
        ("gpuwatch_gpu_ecc_corrected_errors_total", "3"),
        ("gpuwatch_gpu_retired_pages_single_bit", "0"),
        ("gpuwatch_gpu_retired_pages_double_bit", "1"),
        ("gpuwatch_gpu_retired_pages_pending", "1"),
        ("gpuwatch_gpu_remapped_rows_correctable", "1"),
        ("gpuwatch_gpu_remapped_rows_uncorrectable", "2"),
        ("gpuwatch_gpu_remapped_rows_pending", "0"),
        ("gpuwatch_gpu_remapped_rows_failed", "1"),
        ("gpuwatch_gpu_xid_errors_total", "1"),
        ("gpuwatch_gpu_last_xid", "79"),
        ("gpuwatch_gpu_last_xid_timestamp_seconds", "1767603600"),
    ] {
        assert_eq!(
            samples(&text, name),
            [format!("{name}{l} {value}")],
            "{name} in\n{text}"
        );
    }
    assert!(text.contains("# TYPE gpuwatch_gpu_energy_joules_total counter\n"));
    assert!(text.contains("# TYPE gpuwatch_gpu_temperature_celsius gauge\n"));
}

#[test]
fn identity_and_host_facts_are_an_info_metric_without_unknown_labels() {
    let text = render(&state_with(vec![full()], vec![]), MetricOptions::default());
    assert_eq!(
        samples(&text, "gpuwatch_gpu_info"),
        [concat!(
            r#"gpuwatch_gpu_info{gpu="0",uuid="GPU-full",name="NVIDIA H100 80GB HBM3","#,
            r#"hostname="node1",pci_bus_id="00000000:17:00.0",driver_version="550.54.15"} 1"#
        )]
    );
    assert_eq!(
        samples(&text, "gpuwatch_source_up"),
        ["gpuwatch_source_up 1"]
    );
    assert_eq!(
        samples(&text, "gpuwatch_last_sample_timestamp_seconds"),
        ["gpuwatch_last_sample_timestamp_seconds 1767603600"]
    );
    assert!(!text.contains("instance="));
}

#[test]
fn throttle_reasons_are_zero_one_series_including_unexpected_ones() {
    let text = render(&state_with(vec![full()], vec![]), MetricOptions::default());
    let throttle = samples(&text, "gpuwatch_gpu_throttle_active");
    assert_eq!(
        throttle.len(),
        ThrottleReason::known().count() + 1,
        "{throttle:#?}"
    );
    let value_of = |reason: &str| {
        let needle = format!("reason=\"{reason}\"}}");
        throttle
            .iter()
            .find(|l| l.contains(&needle))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or_else(|| panic!("no {reason} in {throttle:#?}"))
    };
    assert_eq!(value_of("sw_power_cap"), "1");
    assert_eq!(value_of("made_up_reason"), "1");
    assert_eq!(value_of("gpu_idle"), "0");
    assert_eq!(value_of("hw_thermal_slowdown"), "0");
}

/// Issue 20 §5: "why won't my job start on GPU 3?" is often an exclusive-process GPU; the
/// mode is one series with the mode as a label, absent when unknown.
#[test]
fn the_compute_mode_is_one_series_labelled_with_the_mode() {
    let mut exclusive = full();
    exclusive.compute_mode = Some(crate::reading::ComputeMode::ExclusiveProcess);
    let text = render(
        &state_with(vec![exclusive], vec![]),
        MetricOptions::default(),
    );
    let modes = samples(&text, "gpuwatch_gpu_compute_mode");
    assert_eq!(modes.len(), 1, "{modes:#?}");
    assert!(
        modes[0].contains("mode=\"exclusive_process\"") && modes[0].ends_with(" 1"),
        "{modes:#?}"
    );
}

#[test]
fn unknown_readings_are_left_out_not_zero() {
    let bare = GpuReading::absent(GpuId(BARE.into()), 1, "Tesla T4");
    let text = render_all(&state_with(vec![bare], vec![]));
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "gpuwatch_build_info",
            "gpuwatch_source_up",
            "gpuwatch_source_stalled_seconds",
            "gpuwatch_last_sample_timestamp_seconds",
            "gpuwatch_gpu_info",
            "gpuwatch_gpu_lost",
            "gpuwatch_gpu_processes",
            "gpuwatch_gpu_owners_info",
            // Real 0s: the (empty) process list is known.
            "gpuwatch_user_series_left_out",
            "gpuwatch_process_series_left_out",
        ],
        "{text}"
    );
}

#[test]
fn a_lost_gpu_is_flagged_and_its_process_count_is_unknown() {
    let mut lost = GpuReading::absent(GpuId(BARE.into()), 1, "Tesla T4");
    lost.status = GpuStatus::Lost;
    let text = render(
        &state_with(vec![full(), lost], vec![]),
        MetricOptions::default(),
    );
    let flagged = samples(&text, "gpuwatch_gpu_lost");
    assert!(flagged[1].starts_with(r#"gpuwatch_gpu_lost{gpu="1",uuid="GPU-bare""#));
    assert!(flagged[1].ends_with(" 1"));
    assert_eq!(samples(&text, "gpuwatch_gpu_processes").len(), 1);
    let warnings = samples(&text, "gpuwatch_gpu_warnings");
    assert!(
        warnings
            .iter()
            .any(|l| l.contains(r#"kind="lost",severity="critical"} 1"#)),
        "{text}"
    );
}

#[test]
fn before_the_first_sample_only_the_build_info_is_there() {
    let text = render_all(&State::new(ViewConfig::default()));
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        text,
        format!(
            "# HELP gpuwatch_build_info {}\n# TYPE gpuwatch_build_info gauge\n\
             gpuwatch_build_info{{version=\"{version}\"}} 1\n",
            BUILD_INFO.help
        )
    );
}

#[test]
fn process_series_carry_pid_user_and_short_command_only_when_asked() {
    let procs = vec![
        proc_on(FULL, 4242, visible("/usr/bin/python3 train.py --epochs 3")),
        proc_on(FULL, 777, HostProc::OtherNamespace),
    ];
    let state = state_with(vec![full()], procs);
    let plain = render(&state, MetricOptions::default());
    assert!(!plain.contains("gpuwatch_process_"));
    assert!(plain.contains(
        r#"gpuwatch_gpu_processes{gpu="0",uuid="GPU-full",name="NVIDIA H100 80GB HBM3"} 2"#
    ));

    let text = render_all(&state);
    let memory = samples(&text, "gpuwatch_process_gpu_memory_bytes");
    let gpu = r#"gpu="0",uuid="GPU-full",name="NVIDIA H100 80GB HBM3""#;
    assert!(memory.contains(&format!(
        "gpuwatch_process_gpu_memory_bytes{{{gpu},pid=\"4242\",user=\"alice\",comm=\"python3\"}} 4294967296"
    ).as_str()), "{memory:#?}");
    assert!(
        memory.contains(
            &format!("gpuwatch_process_gpu_memory_bytes{{{gpu},pid=\"777\"}} 4294967296").as_str()
        ),
        "{memory:#?}"
    );
    assert_eq!(
        samples(&text, "gpuwatch_process_gpu_utilization_ratio").len(),
        2
    );
}

#[test]
fn dcgm_names_use_dcgm_units_and_labels() {
    let text = render_all(&state_with(vec![full()], vec![]));
    let l = concat!(
        r#"{gpu="0",UUID="GPU-full",pci_bus_id="00000000:17:00.0",device="nvidia0","#,
        r#"modelName="NVIDIA H100 80GB HBM3",Hostname="node1","#,
        r#"DCGM_FI_DRIVER_VERSION="550.54.15"}"#
    );
    for (name, value) in [
        ("DCGM_FI_DEV_SM_CLOCK", "1755"),
        ("DCGM_FI_DEV_MEM_CLOCK", "2619"),
        ("DCGM_FI_DEV_GPU_TEMP", "61"),
        ("DCGM_FI_DEV_POWER_USAGE", "312.5"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "123456789"),
        ("DCGM_FI_DEV_GPU_UTIL", "37"),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", "12"),
        ("DCGM_FI_DEV_ENC_UTIL", "0"),
        ("DCGM_FI_DEV_DEC_UTIL", "5"),
        ("DCGM_FI_DEV_FB_USED", "10240"),
        ("DCGM_FI_DEV_FB_FREE", "71168"),
        ("DCGM_FI_DEV_MEMORY_TEMP", "71"),
        ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "4"),
        ("DCGM_FI_DEV_XID_ERRORS", "79"),
        ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "2"),
        ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "1"),
        ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "1"),
    ] {
        assert_eq!(
            samples(&text, name),
            [format!("{name}{l} {value}")],
            "{text}"
        );
    }
    assert!(!text.contains("DCGM_FI_PROF"));
    let plain = render(&state_with(vec![full()], vec![]), MetricOptions::default());
    assert!(!plain.contains("DCGM_"));
}

#[test]
fn a_failed_poll_reports_the_source_down() {
    let mut state = state_with(vec![full()], vec![]);
    update(&mut state, Msg::SourceFailed("NVML went away".into()));
    let text = render(&state, MetricOptions::default());
    assert_eq!(
        samples(&text, "gpuwatch_source_up"),
        ["gpuwatch_source_up 0"]
    );
}

#[test]
fn gpus_of_several_hosts_are_told_apart_by_a_host_label() {
    let mut a = full();
    a.host = Some("node-a".into());
    let mut b = full();
    b.id = GpuId("GPU-other".into());
    b.host = Some("node-b".into());
    let text = render_all(&state_with(vec![a, b], vec![]));
    let temps = samples(&text, "gpuwatch_gpu_temperature_celsius");
    assert_eq!(temps.len(), 2);
    assert!(temps[0].contains(r#",host="node-a"}"#), "{temps:#?}");
    assert!(temps[1].contains(r#",host="node-b"}"#), "{temps:#?}");
    let dcgm = samples(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert!(dcgm[1].contains(r#"Hostname="node-b""#), "{dcgm:#?}");
}

#[test]
fn every_per_gpu_series_names_the_vendor_when_it_is_known() {
    let mut amd = full();
    amd.vendor = Some(crate::reading::Vendor::Amd);
    let mut unknown = full();
    unknown.id = GpuId("GPU-old".into());
    unknown.index = 1;
    let text = render(
        &state_with(vec![amd, unknown], vec![]),
        MetricOptions::default(),
    );
    let per_gpu: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpuwatch_gpu_"))
        .collect();
    let tagged = r#",name="NVIDIA H100 80GB HBM3",vendor="amd""#;
    let on = |gpu: &str| -> Vec<&str> {
        per_gpu
            .iter()
            .copied()
            .filter(|l| l.contains(gpu))
            .collect()
    };
    assert!(on(r#"{gpu="0","#).len() > 30, "{text}");
    assert!(
        on(r#"{gpu="0","#).iter().all(|l| l.contains(tagged)),
        "{text}"
    );
    // A GPU whose vendor is not known (a recording from before gpuwatch said) has no label
    // rather than an empty or made-up one.
    assert!(on(r#"{gpu="1","#).len() > 30);
    assert!(
        on(r#"{gpu="1","#).iter().all(|l| !l.contains("vendor=")),
        "{text}"
    );
}

/// Issue 22: the `user` label is a Unix user. A Slurm job's processes count for the job's
/// user (a root-owned extern step too), two jobs of one person add up under one user, a
/// process of unknown user is left out (and counted), and a bare Docker container is named
/// in `docker_container`, never in dcgm-exporter's Kubernetes `container` label.
#[test]
fn user_series_carry_unix_users_only_and_bare_containers_their_own_label() {
    use crate::reading::workload::{ContainerNames, Engine, ProcContext, SlurmNames, Workload};
    use std::sync::Arc;
    let in_job = |pid, user: &str, uid, job| {
        let mut host = visible("python3 x.py");
        if let HostProc::Visible(d) = &mut host {
            d.user = user.into();
            d.uid = uid;
            d.context = ProcContext {
                workload: Some(Arc::new(Workload::Slurm {
                    job,
                    step: Some("extern".into()),
                    uid: None,
                    names: SlurmNames {
                        user: Some("ralice".into()),
                        ..SlurmNames::default()
                    },
                })),
                ..ProcContext::default()
            };
        }
        proc_on(FULL, pid, host)
    };
    let mut docker = visible("python3 serve.py");
    if let HostProc::Visible(d) = &mut docker {
        d.user = "root".into();
        d.uid = 0;
        d.context.workload = Some(Arc::new(Workload::Container {
            engine: Engine::Docker,
            id: "ab12".repeat(16),
            names: ContainerNames {
                name: Some("trainer-1".into()),
                ..ContainerNames::default()
            },
            delegated_to: None,
        }));
    }
    let procs = vec![
        in_job(10, "root", 0, 2),
        in_job(11, "ralice", 1001, 2),
        in_job(12, "ralice", 1001, 9),
        proc_on(FULL, 13, docker),
        proc_on(FULL, 14, HostProc::OtherNamespace),
    ];
    let text = render(&state_with(vec![full()], procs), MetricOptions::default());
    let gpu = r#"gpu="0",uuid="GPU-full",name="NVIDIA H100 80GB HBM3""#;
    let users = samples(&text, "gpuwatch_user_gpu_memory_bytes");
    assert_eq!(
        users,
        [
            format!("gpuwatch_user_gpu_memory_bytes{{{gpu},user=\"ralice\"}} 12884901888"),
            format!("gpuwatch_user_gpu_memory_bytes{{{gpu},user=\"root\"}} 4294967296"),
        ],
        "{text}"
    );
    assert_eq!(
        samples(&text, "gpuwatch_user_series_left_out"),
        ["gpuwatch_user_series_left_out 1"]
    );
    let workloads = samples(&text, "gpuwatch_workload_gpu_memory_bytes");
    assert!(
        workloads.contains(
            &format!("gpuwatch_workload_gpu_memory_bytes{{{gpu},docker_container=\"trainer-1\"}} 4294967296").as_str()
        ),
        "{workloads:#?}"
    );
    assert!(!text.contains(",container=\"trainer-1\""), "{text}");
    // The owners line: one job is one owner, with the job's user.
    assert!(
        text.contains("slurm 2 (ralice)") && !text.contains("slurm 2 (root)"),
        "{text}"
    );
}
