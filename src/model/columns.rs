//! The process table's vocabulary: its columns (display order, titles, config-file names)
//! and the keys and directions it can be sorted by. Re-exported from `procs`.

/// Columns the table can be sorted by, in the order `s` cycles through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    Gpu,
    Pid,
    User,
    Job,
    Type,
    Vram,
    GpuUtil,
    Cpu,
    HostMemory,
    Time,
    Command,
}

impl SortKey {
    pub const ALL: [SortKey; 11] = [
        SortKey::Gpu,
        SortKey::Pid,
        SortKey::User,
        SortKey::Job,
        SortKey::Type,
        SortKey::Vram,
        SortKey::GpuUtil,
        SortKey::Cpu,
        SortKey::HostMemory,
        SortKey::Time,
        SortKey::Command,
    ];

    pub fn next(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    pub fn prev(self) -> SortKey {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// Quantities sort largest first when chosen; names and ids smallest first.
    pub fn default_direction(self) -> SortDir {
        match self {
            SortKey::Gpu
            | SortKey::Pid
            | SortKey::User
            | SortKey::Job
            | SortKey::Type
            | SortKey::Command => SortDir::Ascending,
            _ => SortDir::Descending,
        }
    }

    /// The title of the column it sorts (the header arrow sits there).
    pub fn name(self) -> &'static str {
        Column::ALL
            .into_iter()
            .find(|c| c.sort_key() == Some(self))
            .map(Column::title)
            .expect("every sort key has a column")
    }
}

/// Columns of the process table, in display order. Which are visible is a setting.
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

impl Column {
    pub const ALL: [Column; 11] = [
        Column::Gpu,
        Column::Pid,
        Column::User,
        Column::Job,
        Column::Type,
        Column::Vram,
        Column::GpuUtil,
        Column::Cpu,
        Column::HostMemory,
        Column::Time,
        Column::Command,
    ];

    /// The column's title: the table header, `--once` text and the sort indicator.
    pub fn title(self) -> &'static str {
        match self {
            Column::Host => "HOST",
            Column::Gpu => "GPU",
            Column::Pid => "PID",
            Column::User => "USER",
            Column::Job => "JOB",
            Column::Type => "TYPE",
            Column::Vram => "VRAM",
            Column::GpuUtil => "GPU%",
            Column::Cpu => "CPU%",
            Column::HostMemory => "HOST MEM",
            Column::Time => "TIME",
            Column::Command => "COMMAND",
        }
    }

    /// The name used in the config file (`columns.visible`).
    pub fn config_name(self) -> &'static str {
        match self {
            Column::Host => "host",
            Column::Gpu => "gpu",
            Column::Pid => "pid",
            Column::User => "user",
            Column::Job => "job",
            Column::Type => "type",
            Column::Vram => "vram",
            Column::GpuUtil => "gpu_util",
            Column::Cpu => "cpu",
            Column::HostMemory => "host_memory",
            Column::Time => "time",
            Column::Command => "command",
        }
    }

    pub fn from_config_name(name: &str) -> Option<Column> {
        Column::ALL.into_iter().find(|c| c.config_name() == name)
    }

    /// The sort key this column shows, if it can be sorted by.
    pub fn sort_key(self) -> Option<SortKey> {
        match self {
            Column::Host => Some(SortKey::Gpu),
            Column::Gpu => Some(SortKey::Gpu),
            Column::Pid => Some(SortKey::Pid),
            Column::User => Some(SortKey::User),
            Column::Job => Some(SortKey::Job),
            Column::Type => Some(SortKey::Type),
            Column::Vram => Some(SortKey::Vram),
            Column::GpuUtil => Some(SortKey::GpuUtil),
            Column::Cpu => Some(SortKey::Cpu),
            Column::HostMemory => Some(SortKey::HostMemory),
            Column::Time => Some(SortKey::Time),
            Column::Command => Some(SortKey::Command),
        }
    }
}

impl SortKey {
    /// The name used in the config file (`sort.column`): the same as its column's.
    pub fn config_name(self) -> &'static str {
        Column::ALL
            .into_iter()
            .find(|c| c.sort_key() == Some(self))
            .map(Column::config_name)
            .expect("every sort key has a column")
    }

    pub fn from_config_name(name: &str) -> Option<SortKey> {
        Column::from_config_name(name).and_then(Column::sort_key)
    }
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
