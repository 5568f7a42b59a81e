//! Unit tests of the process table (`procs`): every sort key both ways (unknown last, PID
//! breaking ties), the `s` cycle, and the selection that follows a process identity.

use super::*;

fn row(pid: u32, gpu: u32) -> ProcRow {
    ProcRow {
        key: ProcKey {
            pid,
            started: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(pid as u64)),
            gpu: GpuId(format!("GPU-{gpu}")),
        },
        gpu_index: gpu,
        host: None,
        kind: ProcKind::Compute,
        vram: None,
        gpu_util: None,
        cpu: None,
        host_memory: None,
        elapsed: None,
        user: None,
        uid: None,
        command: "".into(),
        visibility: Visibility::Visible,
        job: None,
        context: Default::default(),
        instance: None,
    }
}

/// Three rows with distinct values for `key`, one tie with the first, and one unknown.
fn rows_for(key: SortKey) -> Vec<ProcRow> {
    let vals: [Option<u64>; 5] = [Some(20), Some(10), Some(30), Some(20), None];
    vals.iter()
        .enumerate()
        .map(|(i, v)| {
            // PIDs descend so a PID tie-break is visible against insertion order.
            let mut r = row(100 - i as u32, 0);
            match key {
                SortKey::Gpu => r.gpu_index = v.unwrap_or(0) as u32,
                SortKey::Host => r.host = v.map(|v| format!("gpu{v}")),
                SortKey::Pid => r.key.pid = v.map(|v| v as u32).unwrap_or(1),
                SortKey::User => r.user = v.map(|v| format!("user{v}").into()),
                SortKey::Job => r.job = v.map(|v| format!("slurm {v}")),
                SortKey::Type => {
                    r.kind = match v {
                        Some(10) => crate::reading::ProcKind::Both,
                        Some(20) => crate::reading::ProcKind::Compute,
                        _ => crate::reading::ProcKind::Graphics,
                    }
                }
                SortKey::Vram => r.vram = v.map(Bytes),
                SortKey::GpuUtil => r.gpu_util = v.map(|v| v as u32),
                SortKey::Cpu => r.cpu = v.map(|v| v as f32),
                SortKey::HostMemory => r.host_memory = v.map(Bytes),
                SortKey::Time => r.elapsed = v.map(Duration::from_secs),
                SortKey::Command => {
                    r.command = v.map(|v| format!("cmd{v}")).unwrap_or_default().into()
                }
            }
            r
        })
        .collect()
}

fn sorted_pids(key: SortKey, dir: SortDir) -> Vec<u32> {
    let mut t = ProcTable::default();
    t.set_rows(rows_for(key));
    t.set_sort(key, dir);
    t.rows().map(|r| r.key.pid).collect()
}

#[test]
fn every_optional_key_sorts_both_ways_with_unknown_last_and_pid_ties() {
    // Rows: pid 100 = 20, 99 = 10, 98 = 30, 97 = 20 (tie with 100), 96 = unknown.
    for key in [
        SortKey::User,
        SortKey::Job,
        SortKey::Vram,
        SortKey::GpuUtil,
        SortKey::Cpu,
        SortKey::HostMemory,
        SortKey::Time,
    ] {
        assert_eq!(
            sorted_pids(key, SortDir::Ascending),
            vec![99, 97, 100, 98, 96],
            "{key:?} asc"
        );
        assert_eq!(
            sorted_pids(key, SortDir::Descending),
            vec![98, 97, 100, 99, 96],
            "{key:?} desc"
        );
    }
}

#[test]
fn gpu_and_command_sort_both_ways() {
    // GPU unknown is impossible, so the "unknown" row is GPU 0; command "" sorts first.
    assert_eq!(
        sorted_pids(SortKey::Gpu, SortDir::Ascending),
        vec![96, 99, 97, 100, 98]
    );
    assert_eq!(
        sorted_pids(SortKey::Gpu, SortDir::Descending),
        vec![98, 97, 100, 99, 96]
    );
    assert_eq!(
        sorted_pids(SortKey::Command, SortDir::Ascending),
        vec![96, 99, 97, 100, 98]
    );
    assert_eq!(
        sorted_pids(SortKey::Command, SortDir::Descending),
        vec![98, 97, 100, 99, 96]
    );
}

#[test]
fn type_sorts_both_ways_by_its_label() {
    // Labels: 100 "C", 99 "C+G", 98 "G", 97 "C", 96 "G"; ties by PID.
    assert_eq!(
        sorted_pids(SortKey::Type, SortDir::Ascending),
        vec![97, 100, 99, 96, 98]
    );
    assert_eq!(
        sorted_pids(SortKey::Type, SortDir::Descending),
        vec![96, 98, 99, 97, 100]
    );
}

#[test]
fn pid_sorts_both_ways() {
    assert_eq!(
        sorted_pids(SortKey::Pid, SortDir::Ascending),
        vec![1, 10, 20, 20, 30]
    );
    assert_eq!(
        sorted_pids(SortKey::Pid, SortDir::Descending),
        vec![30, 20, 20, 10, 1]
    );
}

#[test]
fn sort_keys_cycle_both_ways() {
    let mut k = SortKey::Vram;
    for _ in 0..SortKey::ALL.len() {
        k = k.next();
    }
    assert_eq!(k, SortKey::Vram);
    assert_eq!(SortKey::Gpu.prev(), SortKey::Command);
    assert_eq!(SortKey::Vram.next().prev(), SortKey::Vram);
}

#[test]
fn selection_follows_the_process_across_resorts() {
    let mut t = ProcTable::default();
    let mut rows = rows_for(SortKey::Vram);
    t.set_rows(rows.clone());
    assert_eq!(
        t.selected_index(),
        Some(0),
        "the first row is selected from the start"
    );
    t.move_selection(1); // second row: pid 97 (VRAM 20, tie broken by pid)
    assert_eq!(t.selected_row().unwrap().key.pid, 97);
    t.set_sort(SortKey::Pid, SortDir::Ascending);
    assert_eq!(t.selected_row().unwrap().key.pid, 97);
    // New sample: pid 97's VRAM grows to the top; the selection goes with it.
    rows[3].vram = Some(Bytes(99));
    t.set_sort(SortKey::Vram, SortDir::Descending);
    t.set_rows(rows);
    assert_eq!(t.selected_index(), Some(0));
    assert_eq!(t.selected_row().unwrap().key.pid, 97);
}

#[test]
fn reused_pid_is_a_different_process() {
    let mut t = ProcTable::default();
    t.set_rows(vec![row(5, 0), row(6, 0)]);
    t.select_index(0);
    let mut reborn = row(5, 0);
    reborn.key.started = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(999));
    t.set_rows(vec![reborn, row(6, 0)]);
    // The selection does not silently jump to the new process with the old PID:
    // the old one is gone, so the selection re-targets the row now at its place.
    assert_eq!(
        t.selected.as_ref().unwrap().started,
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(999))
    );
}

#[test]
fn selection_clamps_when_rows_vanish() {
    let mut t = ProcTable::default();
    t.set_sort(SortKey::Pid, SortDir::Ascending);
    t.set_rows(vec![row(1, 0), row(2, 0), row(3, 0)]);
    t.select_last();
    t.set_rows(vec![row(1, 0)]);
    assert_eq!(t.selected_row().unwrap().key.pid, 1);
    t.set_rows(vec![]);
    assert_eq!(t.selected_index(), None);
    t.move_selection(5);
    assert_eq!(t.selected_index(), None);
}

/// "Instant and truthful" §5: until the user moves the selection, the first row is the
/// selection whatever the samples do to the order. Following the process first listed
/// showed the demo's second row selected at start.
#[test]
fn the_first_row_stays_selected_until_the_user_chooses() {
    let mut t = ProcTable::default();
    let mut rows = vec![row(1, 0), row(2, 0)];
    rows[0].vram = Some(Bytes(50));
    rows[1].vram = Some(Bytes(10));
    t.set_rows(rows.clone());
    assert_eq!(t.selected_row().unwrap().key.pid, 1);
    // The next sample puts pid 2 on top: the selection stays on the first row.
    rows[1].vram = Some(Bytes(90));
    t.set_rows(rows.clone());
    assert_eq!(t.selected_index(), Some(0));
    assert_eq!(t.selected_row().unwrap().key.pid, 2);
    // Once chosen, it follows its process.
    t.move_selection(1);
    assert_eq!(t.selected_row().unwrap().key.pid, 1);
    rows[0].vram = Some(Bytes(99));
    t.set_rows(rows);
    assert_eq!(t.selected_index(), Some(0));
    assert_eq!(t.selected_row().unwrap().key.pid, 1);
}
