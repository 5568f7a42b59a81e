//! `-i`/`--id`: GPUs named by index, UUID (as `--only` takes them) or PCI bus id, and the
//! GPUs of a sample such a list selects. Parsing and matching only.

use crate::reading::GpuReading;
use crate::reading::device_list::GpuSelector;

/// One `-i` entry: an index or UUID (as `--only` takes them) or a PCI bus id.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    Gpu(GpuSelector),
    /// Lower-case, without the leading zeros of the domain (`0:17:00.0`).
    Bus(String),
}

pub(super) fn parse_ids(text: &str) -> Result<Vec<Id>, String> {
    text.split(',')
        .map(|entry| {
            let entry = entry.trim();
            if entry.contains(':') {
                Ok(Id::Bus(bus_key(entry)))
            } else {
                let mut one = crate::reading::device_list::parse_gpu_list(entry)?;
                Ok(Id::Gpu(one.remove(0)))
            }
        })
        .collect()
}

/// A PCI bus id compared as nvidia-smi accepts it: any case, any width of domain
/// (`00000000:17:00.0`, `0000:17:00.0`, `17:00.0` all name the same GPU).
pub(super) fn bus_key(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    let mut parts: Vec<&str> = id.split(':').collect();
    if parts.len() == 2 {
        parts.insert(0, "0");
    }
    let domain = parts[0].trim_start_matches('0');
    let domain = if domain.is_empty() { "0" } else { domain };
    format!("{domain}:{}", parts[1..].join(":"))
}

impl Id {
    fn matches(&self, g: &GpuReading) -> bool {
        match self {
            Id::Gpu(s) => s.matches(g),
            Id::Bus(bus) => g.pci_bus_id.as_deref().map(bus_key).as_deref() == Some(bus),
        }
    }
}

/// The GPUs `-i` selects (all without it); `Err` names an entry that selects none.
pub(super) fn selected<'a>(
    ids: Option<&[Id]>,
    gpus: &'a [GpuReading],
) -> Result<Vec<&'a GpuReading>, String> {
    let Some(ids) = ids else {
        return Ok(gpus.iter().collect());
    };
    if let Some(missing) = ids.iter().find(|id| !gpus.iter().any(|g| id.matches(g))) {
        let name = match missing {
            Id::Gpu(s) => s.to_string(),
            Id::Bus(b) => b.clone(),
        };
        return Err(format!("{name} matches no GPU"));
    }
    Ok(gpus
        .iter()
        .filter(|g| ids.iter().any(|id| id.matches(g)))
        .collect())
}
