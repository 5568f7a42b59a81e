//! The process table's columns: one enum and one table that says everything about a column
//! but its cell's words (title, config-file name, what it shows, width, alignment, sort
//! direction and comparison). The `--sort` values, the names `[columns]` and `[sort]`
//! accept, the doc list (`markdown_table`) and clap's help all come from it, as the help
//! screen and README's keys come from `keymap`. The cell words are `present::cells`'s (a
//! match the compiler checks is exhaustive): words sit above the model, not in it.

use std::cmp::Ordering;

use super::procs::ProcRow;

/// Columns of the process table, in display order (the order of `TABLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// Shown (first) only when watching several hosts; not a config-file column.
    Host,
    Gpu,
    Pid,
    User,
    /// The container, pod, Slurm job or service (empty for a login shell); shown only
    /// when some process has one.
    Job,
    Type,
    Vram,
    GpuUtil,
    Cpu,
    HostMemory,
    Time,
    Command,
}

/// The column the table is sorted by: any of `Column::ALL` (HOST is not one; it sorts as
/// GPU). A name for the role, not a second list of columns.
pub type SortKey = Column;

/// How wide a column is, in terminal cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Cells(u16),
    /// As wide as its longest value (titles included), within bounds: a column of
    /// `127.0.0.1:` prefixes told nobody which host a row is on.
    Longest {
        min: u16,
        max: u16,
    },
    /// Whatever the others leave (the command).
    Rest,
}

impl Width {
    /// The cells a column takes given its longest value; `None` for the rest of the line.
    pub fn cells(self, longest: u16) -> Option<u16> {
        match self {
            Width::Cells(n) => Some(n),
            Width::Longest { min, max } => Some(longest.clamp(min, max)),
            Width::Rest => None,
        }
    }
}

/// Numbers read best right-aligned (header and values alike); names and the command left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    Ascending,
    Descending,
}

impl SortDir {
    pub fn flipped(self) -> SortDir {
        match self {
            SortDir::Ascending => SortDir::Descending,
            SortDir::Descending => SortDir::Ascending,
        }
    }
}

/// Orders two rows by one column in a direction; unknown values sort last in both
/// (`known`). `procs::compare` breaks ties.
pub type Compare = fn(&ProcRow, &ProcRow, SortDir) -> Ordering;

/// How a column sorts.
#[derive(Clone, Copy)]
pub enum Sort {
    /// By its own values, first in this direction when chosen (quantities largest first,
    /// names and ids smallest first).
    By(SortDir, Compare),
    /// As another column does (HOST sorts as GPU, whose order puts the host first).
    As(Column),
}

/// Everything about one column but its cell's words.
pub struct Spec {
    pub column: Column,
    /// The table header, `--once` text and the sort indicator.
    pub title: &'static str,
    /// `[columns] visible`, `[sort] column` and `--sort`; `None` for a column the file
    /// cannot name (HOST appears by itself).
    pub config_name: Option<&'static str>,
    /// One line for the docs and `--help`.
    pub doc: &'static str,
    pub width: Width,
    pub align: Align,
    pub sort: Sort,
}

/// The widest the HOST column grows; longer names are cut with `…`.
pub const MAX_HOST_WIDTH: u16 = 24;

use Align::{Left, Right};
use SortDir::{Ascending, Descending};

/// One row per column, in `Column`'s declaration order (`Column::spec` indexes it). Each
/// fixed width holds its title and the sort arrow beside it (`GPU%▼`, `HOST MEM▼`), so
/// sorting never clips a title (a unit test checks).
pub const TABLE: [Spec; 12] = [
    Spec {
        column: Column::Host,
        title: "HOST",
        config_name: None,
        doc: "the GPU's host, when watching several (`(here)` for this one)",
        width: Width::Longest {
            min: 5,
            max: MAX_HOST_WIDTH,
        },
        align: Left,
        sort: Sort::As(Column::Gpu),
    },
    Spec {
        column: Column::Gpu,
        title: "GPU",
        config_name: Some("gpu"),
        doc: "the GPU's index; `0/1` for GPU instance 1 of MIG GPU 0",
        width: Width::Cells(4),
        align: Left,
        sort: Sort::By(Ascending, |a, b, d| {
            known(
                Some((&a.host, a.gpu_index)),
                Some((&b.host, b.gpu_index)),
                d,
            )
        }),
    },
    Spec {
        column: Column::Pid,
        title: "PID",
        config_name: Some("pid"),
        doc: "the process id, as the host sees it",
        width: Width::Cells(7),
        align: Right,
        sort: Sort::By(Ascending, |a, b, d| {
            known(Some(a.key.pid), Some(b.key.pid), d)
        }),
    },
    Spec {
        column: Column::User,
        title: "USER",
        config_name: Some("user"),
        doc: "the process's owner (`?` when not visible from here)",
        width: Width::Cells(9),
        align: Left,
        sort: Sort::By(Ascending, |a, b, d| {
            known(a.user.as_ref(), b.user.as_ref(), d)
        }),
    },
    Spec {
        column: Column::Job,
        title: "JOB",
        config_name: Some("job"),
        doc: "its container, pod, Slurm job or service; shown when some process has one",
        width: Width::Cells(24),
        align: Left,
        sort: Sort::By(Ascending, |a, b, d| {
            known(a.job.as_ref(), b.job.as_ref(), d)
        }),
    },
    Spec {
        column: Column::Type,
        title: "TYPE",
        config_name: Some("type"),
        doc: "`C` compute, `G` graphics, `C+G` both",
        width: Width::Cells(5),
        align: Left,
        sort: Sort::By(Ascending, |a, b, d| {
            known(Some(a.kind.label()), Some(b.kind.label()), d)
        }),
    },
    Spec {
        column: Column::Vram,
        title: "VRAM",
        config_name: Some("vram"),
        doc: "GPU memory it holds",
        width: Width::Cells(6),
        align: Right,
        sort: Sort::By(Descending, |a, b, d| known(a.vram, b.vram, d)),
    },
    Spec {
        column: Column::GpuUtil,
        title: "GPU%",
        config_name: Some("gpu_util"),
        doc: "its share of the GPU's SM time",
        width: Width::Cells(5),
        align: Right,
        sort: Sort::By(Descending, |a, b, d| known(a.gpu_util, b.gpu_util, d)),
    },
    Spec {
        column: Column::Cpu,
        title: "CPU%",
        config_name: Some("cpu"),
        doc: "host CPU it uses (100 per busy core)",
        width: Width::Cells(6),
        align: Right,
        sort: Sort::By(Descending, |a, b, d| {
            known(a.cpu.map(OrdF32), b.cpu.map(OrdF32), d)
        }),
    },
    Spec {
        column: Column::HostMemory,
        title: "HOST MEM",
        config_name: Some("host_memory"),
        doc: "host memory it holds (resident)",
        width: Width::Cells(9),
        align: Right,
        sort: Sort::By(Descending, |a, b, d| known(a.host_memory, b.host_memory, d)),
    },
    Spec {
        column: Column::Time,
        title: "TIME",
        config_name: Some("time"),
        doc: "how long it has run",
        width: Width::Cells(8),
        align: Right,
        sort: Sort::By(Descending, |a, b, d| known(a.elapsed, b.elapsed, d)),
    },
    Spec {
        column: Column::Command,
        title: "COMMAND",
        config_name: Some("command"),
        doc: "its command line (Enter shows all of it)",
        width: Width::Rest,
        align: Left,
        sort: Sort::By(Ascending, |a, b, d| {
            known(Some(&a.command), Some(&b.command), d)
        }),
    },
];

// `Column::spec` indexes the table by discriminant, and `Column::order` follows one `As`:
// a row out of place or an `As` naming another `As` fails the build.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].column as usize == i, "TABLE is in Column's order");
        if let Sort::As(other) = TABLE[i].sort {
            let by = matches!(TABLE[other as usize].sort, Sort::By(..));
            assert!(by, "a column sorts as one that sorts by itself");
        }
        i += 1;
    }
};

/// The columns a config file can name: the table's rows with a config name, in order.
const fn configurable() -> [Column; 11] {
    let mut out = [Column::Gpu; 11];
    let (mut i, mut n) = (0, 0);
    while i < TABLE.len() {
        if TABLE[i].config_name.is_some() {
            out[n] = TABLE[i].column;
            n += 1;
        }
        i += 1;
    }
    assert!(
        n == out.len(),
        "configurable() counts the rows with a config name"
    );
    out
}

impl Column {
    /// The columns `[columns] visible` can name, in display order; also the sort keys, in
    /// the order `s` cycles through them.
    pub const ALL: [Column; 11] = configurable();

    pub fn spec(self) -> &'static Spec {
        &TABLE[self as usize]
    }

    pub fn title(self) -> &'static str {
        self.spec().title
    }

    /// The name used in the config file and by `--sort`. HOST has none; it answers
    /// `host` for messages only.
    pub fn config_name(self) -> &'static str {
        self.spec().config_name.unwrap_or("host")
    }

    pub fn from_config_name(name: &str) -> Option<Column> {
        TABLE
            .iter()
            .find(|s| s.config_name == Some(name))
            .map(|s| s.column)
    }

    /// The names `--sort`, `[sort] column` and `[columns] visible` accept, in order.
    pub fn config_names() -> impl Iterator<Item = &'static str> {
        TABLE.iter().filter_map(|s| s.config_name)
    }

    /// The column whose order this one shows (itself, or GPU for HOST): the sort key a
    /// click on its title chooses and the one its header arrow stands for.
    pub fn sorts_as(self) -> Column {
        match self.spec().sort {
            Sort::By(..) => self,
            Sort::As(other) => other,
        }
    }

    /// Quantities sort largest first when chosen; names and ids smallest first.
    pub fn default_direction(self) -> SortDir {
        self.order().0
    }

    /// Its first direction and comparison (GPU's for HOST).
    pub fn order(self) -> (SortDir, Compare) {
        match self.sorts_as().spec().sort {
            Sort::By(dir, compare) => (dir, compare),
            Sort::As(_) => unreachable!("an `As` names a column sorting `By` (checked at build)"),
        }
    }

    pub fn right_aligned(self) -> bool {
        self.spec().align == Right
    }

    pub fn next(self) -> Column {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn prev(self) -> Column {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// The title of the column it sorts (the header arrow sits there).
    pub fn name(self) -> &'static str {
        self.sorts_as().title()
    }
}

/// The columns as a Markdown table, for docs/guide.md (a test keeps the two the same).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| Column | `[columns]` / `--sort` name | What it shows | First sort |\n|---|---|---|---|\n",
    );
    for s in &TABLE {
        let name = s
            .config_name
            .map_or_else(|| "—".into(), |n| format!("`{n}`"));
        let first = match s.sort {
            Sort::By(Ascending, _) => "smallest first".to_string(),
            Sort::By(Descending, _) => "largest first".to_string(),
            Sort::As(other) => format!("as {}", other.title()),
        };
        out += &format!("| {} | {name} | {} | {first} |\n", s.title, s.doc);
    }
    out
}

/// Unknown values sort last in either direction.
fn known<T: Ord>(a: Option<T>, b: Option<T>, dir: SortDir) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => match dir {
            SortDir::Ascending => a.cmp(&b),
            SortDir::Descending => b.cmp(&a),
        },
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// CPU% with a total order (`f32::total_cmp`), so it can sort like the other columns.
struct OrdF32(f32);
impl PartialEq for OrdF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
