//! The process table's cells as words: each column's text for a row and the plain-text
//! layout `--once` uses (widths and alignment from the column table in `model::columns`; no
//! ratatui). Which columns show is the state's (`State::visible_columns`); the TUI draws the
//! same words in `ui::table`.

use super::fixed::Fixed;
use super::format::{bytes_short, elapsed, or_na, truncate};
use crate::model::columns::{Align, MAX_HOST_WIDTH};
use crate::model::procs::{Column, ProcRow};

/// A cell's words, for the TUI's table and the `--once` text alike.
pub fn cell_text(c: Column, r: &ProcRow) -> String {
    match c {
        Column::Host => r
            .host
            .as_deref()
            .map_or_else(|| "(here)".into(), |h| truncate(h, MAX_HOST_WIDTH as usize)),
        // On a MIG instance `0/1`: GPU 0, GPU instance 1 (nvidia-smi's GPU and GI columns).
        Column::Gpu => match &r.instance {
            Some(i) => i.gpu_label(&r.gpu_index.to_string()),
            None => r.gpu_index.to_string(),
        },
        Column::Pid => r.key.pid.to_string(),
        Column::User => r.user.as_deref().unwrap_or("?").to_owned(),
        Column::Job => r
            .job
            .as_deref()
            .map_or_else(String::new, |j| truncate(j, 24)),
        Column::Type => r.kind.label().to_string(),
        Column::Vram => or_na(r.vram, bytes_short),
        Column::GpuUtil => or_na(r.gpu_util, |u| format!("{u}%")),
        Column::Cpu => or_na(r.cpu, |c| Fixed(f64::from(c), 1).to_string()),
        Column::HostMemory => or_na(r.host_memory, bytes_short),
        Column::Time => or_na(r.elapsed, elapsed),
        Column::Command => String::from(&*r.command),
    }
}

/// `text` padded to its column's width on the aligned side, as the TUI places it; the last
/// column (the rest of the line) as it is.
pub fn padded(c: Column, text: &str, host_width: u16) -> String {
    let spec = c.spec();
    match (spec.width.cells(host_width), spec.align) {
        (Some(w), Align::Right) => format!("{text:>w$}", w = w as usize),
        (Some(w), Align::Left) => format!("{text:<w$}", w = w as usize),
        (None, _) => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_cells_take_the_tables_widths_and_sides() {
        assert_eq!(padded(Column::Pid, "42", 0), "     42");
        assert_eq!(padded(Column::User, "bob", 0), "bob      ");
        assert_eq!(padded(Column::Command, "python x.py", 0), "python x.py");
        assert_eq!(padded(Column::Host, "gpu1", 3), "gpu1 ", "HOST at least 5");
        assert_eq!(padded(Column::Host, "g", 40).len(), 24, "HOST at most 24");
    }
}
