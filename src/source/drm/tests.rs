//! The DRM source over copies of the fixture trees in tests/fixtures/drm: what each card
//! reads as, engine % and power as deltas between samples, and a card that disappears.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;
use crate::reading::ProcKind;
use crate::units::{Celsius, MegaHertz, Percent, Watts};

/// A fixture tree copied to a temporary directory (links kept), so a test can change it.
pub(crate) fn copy_fixture(name: &str) -> tempfile::TempDir {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/drm")
        .join(name);
    let to = tempfile::tempdir().unwrap();
    copy_tree(&from, to.path());
    to
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if kind.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn source(root: &Path, vendors: &[Vendor]) -> DrmSource {
    let roots = Roots {
        sys: root.join("sys"),
        proc: root.join("proc"),
    };
    let procinfo = ProcInfo::new(&roots.proc, 100, 4096).with_local_pids();
    DrmSource::with_procinfo(vendors, &roots, procinfo)
}

fn card_file(root: &Path, rel: &str) -> PathBuf {
    root.join("sys/class/drm/card0/device").join(rel)
}

#[test]
fn an_mi300x_reads_as_its_files_say_and_what_it_lacks_is_absent() {
    let t = copy_fixture("amd-mi300x");
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    let [g] = s.gpus.as_slice() else {
        panic!("{:?}", s.gpus)
    };
    assert_eq!(g.id.0, "AMD-1cb6d8a2b3e4f501");
    assert_eq!(g.name, "AMD Instinct MI300X");
    assert_eq!(g.vendor, Some(Vendor::Amd));
    assert_eq!(g.util, Some(Percent(87)));
    assert_eq!(g.memory_util, Some(Percent(41)));
    assert_eq!(g.memory_used.map(|b| b.0), Some(154_618_822_656));
    // No edge sensor on an MI300X: the junction one, with its limits.
    assert_eq!(g.temperature, Some(Celsius(71)));
    assert_eq!(g.temperature_slowdown, Some(Celsius(110)));
    assert_eq!(g.power, Some(Watts(612.0)));
    assert_eq!(g.power_limit, Some(Watts(750.0)));
    assert_eq!(
        (g.sm_clock, g.sm_clock_max),
        (Some(MegaHertz(1300)), Some(MegaHertz(2100)))
    );
    // SCLK is the graphics clock nvidia-smi's `clocks.gr` names.
    assert_eq!(
        (g.graphics_clock, g.graphics_clock_max),
        (g.sm_clock, g.sm_clock_max)
    );
    assert_eq!((g.pcie_link_gen, g.pcie_link_width), (Some(5), Some(16)));
    // Passively cooled, no MIG, no NVML-only counters: unknown, never 0.
    assert_eq!(g.fan, None);
    assert_eq!(g.mig_enabled, None);
    assert_eq!(g.encoder_util, None);
    assert_eq!(g.ecc_errors_uncorrected, None);
}

#[test]
fn processes_get_their_vram_once_per_client_and_their_owners() {
    let t = copy_fixture("amd-mi300x");
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    let procs: Vec<_> = s
        .processes
        .iter()
        .map(|p| (p.pid, p.gpu_memory.map(|b| b.0)))
        .collect();
    // 4242 holds one client through two fds: 96 GiB, not 192. 4400 has no GPU file.
    assert_eq!(procs, [(4242, Some(96 << 30)), (4300, Some(40 << 30))]);
    let p = &s.processes[0];
    assert_eq!(p.gpu.0, "AMD-1cb6d8a2b3e4f501");
    assert_eq!(p.kind, ProcKind::Compute);
    assert_eq!(p.sm_util, None, "one sample: no delta yet");
    let d = p.details().expect("visible");
    assert_eq!((d.uid, &*d.user), (0, "root"));
    assert_eq!(&*d.command, "python train.py --model llama-70b");
    assert!(
        d.context.workload.is_some(),
        "the Slurm job from its cgroup"
    );
}

#[test]
fn engine_percent_is_the_delta_between_two_samples() {
    let t = copy_fixture("amd-mi300x");
    let mut src = source(t.path(), &[Vendor::Amd]);
    let t0 = Instant::now();
    src.sample_at(t0);
    // 500 ms of compute in one second on 4242's client: 50 %.
    for fd in ["5", "6"] {
        let path = t.path().join("proc/4242/fdinfo").join(fd);
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace(
            "drm-engine-compute:\t883000000 ns",
            "drm-engine-compute:\t1383000000 ns",
        );
        std::fs::write(&path, text).unwrap();
    }
    let s = src.sample_at(t0 + Duration::from_secs(1));
    let util: Vec<_> = s.processes.iter().map(|p| (p.pid, p.sm_util)).collect();
    assert_eq!(util, [(4242, Some(Percent(50))), (4300, Some(Percent(0)))]);
}

#[test]
fn a_radeon_desktop_card_with_a_fan_and_a_display_server() {
    let t = copy_fixture("amd-radeon");
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    let [g] = s.gpus.as_slice() else {
        panic!("{:?}", s.gpus)
    };
    // No FRU name on a desktop board: the PCI ID database's name for its subsystem (issue 20).
    assert_eq!(g.name, "Radeon RX 7900 XTX");
    assert_eq!(g.id.0, "AMD-0000:03:00.0", "no unique_id: the PCI address");
    assert_eq!(g.temperature, Some(Celsius(45)), "edge first");
    assert_eq!(g.power, Some(Watts(31.0)));
    assert_eq!(g.fan, Some(Percent(25)));
    assert_eq!(g.memory_clock, Some(MegaHertz(96)));
    let procs: Vec<_> = s
        .processes
        .iter()
        .map(|p| (p.pid, p.kind, p.gpu_memory.map(|b| b.0)))
        .collect();
    assert_eq!(
        procs,
        [
            (1500, ProcKind::Graphics, Some(256 << 20)),
            (2600, ProcKind::Graphics, Some(512 << 20))
        ]
    );
}

#[test]
fn without_the_pci_id_database_a_card_is_named_by_its_pci_id() {
    let t = copy_fixture("amd-radeon");
    std::fs::remove_dir_all(t.path().join("usr")).unwrap();
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    assert_eq!(s.gpus[0].name, "AMD GPU 0x744c");
}

#[test]
fn an_arc_card_on_xe_reads_power_from_energy_and_leaves_vram_to_processes() {
    let t = copy_fixture("intel-arc");
    // An AMD source sees no Intel card.
    assert!(!source(t.path(), &[Vendor::Amd]).present());
    let mut src = source(t.path(), &[Vendor::Intel]);
    let t0 = Instant::now();
    let s = src.sample_at(t0);
    let g = &s.gpus[0];
    assert_eq!(
        (g.vendor, g.name.as_str()),
        (Some(Vendor::Intel), "Arc A770")
    );
    assert_eq!(g.temperature, Some(Celsius(58)));
    assert_eq!(g.power_limit, Some(Watts(225.0)));
    assert_eq!(g.power, None, "power needs two energy readings");
    assert_eq!((g.util, g.memory_used, g.memory_total), (None, None, None));
    assert_eq!(
        (g.sm_clock, g.sm_clock_max),
        (Some(MegaHertz(2100)), Some(MegaHertz(2400)))
    );
    assert_eq!(
        (g.graphics_clock, g.graphics_clock_max),
        (g.sm_clock, g.sm_clock_max)
    );
    let p = &s.processes[0];
    assert_eq!(
        (p.pid, p.kind, p.gpu_memory.map(|b| b.0)),
        (7001, ProcKind::Compute, Some(2 << 30))
    );
    // 90 J in two seconds: 45 W. Half of the compute engine's cycles: 50 %.
    std::fs::write(
        card_file(t.path(), "hwmon/hwmon2/energy1_input"),
        "123546789000\n",
    )
    .unwrap();
    let info = t.path().join("proc/7001/fdinfo/4");
    let text = std::fs::read_to_string(&info).unwrap();
    let text = text
        .replace("drm-cycles-ccs:\t28257900", "drm-cycles-ccs:\t528257900")
        .replace(
            "drm-total-cycles-ccs:\t7655183225",
            "drm-total-cycles-ccs:\t8655183225",
        );
    std::fs::write(&info, text).unwrap();
    let s = src.sample_at(t0 + Duration::from_secs(2));
    assert_eq!(s.gpus[0].power, Some(Watts(45.0)));
    assert_eq!(s.processes[0].sm_util, Some(Percent(50)));
    // No busy % in sysfs: the sum of its clients' engine time (issue 20), here one client's.
    assert_eq!(s.gpus[0].util, Some(Percent(50)));
}

#[test]
fn a_devices_busy_percent_sums_its_clients_and_is_unknown_while_one_is() {
    let usage = |pdev: &str, util: Option<u32>| clients::ProcUsage {
        pid: 1,
        pdev: pdev.into(),
        kind: ProcKind::Compute,
        memory: None,
        util: util.map(Percent),
    };
    let busy = engines_busy(&[
        usage("a", Some(30)),
        usage("a", Some(45)),
        usage("b", Some(80)),
        usage("b", Some(70)),
        usage("c", Some(10)),
        usage("c", None),
    ]);
    assert_eq!(busy["a"], Some(Percent(75)));
    assert_eq!(busy["b"], Some(Percent(100)), "capped");
    assert_eq!(busy["c"], None, "a client seen for the first time");
    assert!(!busy.contains_key("d"), "no client: not known");
}

#[test]
fn missing_files_are_absent_fields_and_the_rest_still_reads() {
    let t = copy_fixture("amd-mi300x");
    for f in [
        "gpu_busy_percent",
        "mem_info_vram_used",
        "pp_dpm_sclk",
        "hwmon",
    ] {
        let p = card_file(t.path(), f);
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    std::fs::write(card_file(t.path(), "mem_busy_percent"), "garbage\n").unwrap();
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    let g = &s.gpus[0];
    assert_eq!((g.util, g.memory_used, g.memory_util), (None, None, None));
    assert_eq!((g.sm_clock, g.temperature, g.power), (None, None, None));
    assert_eq!(g.memory_total.map(|b| b.0), Some(206_158_430_208));
    assert_eq!(g.memory_clock, Some(MegaHertz(1300)));
    assert_eq!(s.processes.len(), 2);
}

#[test]
fn unreadable_fds_hide_a_process_and_unreadable_fdinfo_leaves_it_without_numbers() {
    let t = copy_fixture("amd-mi300x");
    // 4300's fd directory cannot be listed (another user's process, without root): it
    // cannot be seen. Root reads every mode, so the test makes it a file, not a mode.
    let fd = t.path().join("proc/4300/fd");
    std::fs::remove_dir_all(&fd).unwrap();
    std::fs::write(&fd, "").unwrap();
    // 4242's fdinfo files cannot be read: it is on the card, its numbers unknown.
    for n in ["5", "6"] {
        let p = t.path().join("proc/4242/fdinfo").join(n);
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink("/nonexistent", &p).unwrap();
    }
    let s = source(t.path(), &[Vendor::Amd]).sample_at(Instant::now());
    let procs: Vec<_> = s
        .processes
        .iter()
        .map(|p| (p.pid, p.gpu.0.as_str(), p.gpu_memory, p.sm_util))
        .collect();
    assert_eq!(procs, [(4242, "AMD-1cb6d8a2b3e4f501", None, None)]);
    // The card's own VRAM figure still counts everyone.
    assert_eq!(s.gpus[0].memory_used.map(|b| b.0), Some(154_618_822_656));
}

#[test]
fn a_card_that_disappears_keeps_its_slot_shown_lost_and_comes_back() {
    let t = copy_fixture("amd-mi300x");
    let mut src = source(t.path(), &[Vendor::Amd]);
    let t0 = Instant::now();
    assert_eq!(src.sample_at(t0).gpus[0].status, GpuStatus::Ok);
    let card = t.path().join("sys/class/drm/card0");
    let parked = t.path().join("card0-away");
    std::fs::rename(&card, &parked).unwrap();
    let s = src.sample_at(t0 + Duration::from_secs(1));
    let [g] = s.gpus.as_slice() else {
        panic!("{:?}", s.gpus)
    };
    assert_eq!(g.status, GpuStatus::Lost);
    assert_eq!(
        (g.id.0.as_str(), g.name.as_str()),
        ("AMD-1cb6d8a2b3e4f501", "AMD Instinct MI300X")
    );
    assert_eq!((g.util, g.memory_used), (None, None));
    assert!(
        s.processes.is_empty(),
        "no processes on a card that is gone"
    );
    std::fs::rename(&parked, &card).unwrap();
    let s = src.sample_at(t0 + Duration::from_secs(2));
    assert_eq!((s.gpus.len(), s.gpus[0].status), (1, GpuStatus::Ok));
}

#[test]
fn opening_without_cards_names_the_driver_and_the_place() {
    let t = tempfile::tempdir().unwrap();
    let roots = Roots {
        sys: t.path().into(),
        proc: t.path().into(),
    };
    let err = DrmSource::open(&[Vendor::Amd], &roots).err().unwrap();
    assert!(
        err.contains("no amdgpu GPU under") && err.contains("class/drm"),
        "{err}"
    );
}
