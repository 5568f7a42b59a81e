//! The one grammar for GPU lists, in the dialects people write them: gpuwatch's own
//! `--only` (and `wait --free`), `CUDA_VISIBLE_DEVICES` as `pick` checks an inherited one,
//! and the `CUDA_VISIBLE_DEVICES` / `NVIDIA_VISIBLE_DEVICES` of a running process (which
//! GPU its "device 0" is). Entries are indices and UUIDs (`GPU-` prefix in any case, or a
//! unique prefix of one), and MIG instances by their `MIG-` UUID (or a prefix),
//! comma-separated. Parsing and matching only, including the check that every entry
//! matched a GPU in the first sample (only a sample can tell; the caller takes it).

use crate::reading::GpuReading;
use crate::reading::mig::MigReading;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelector {
    Index(u32),
    /// A UUID or a prefix of one, stored without the `GPU-` prefix, lower-case.
    Uuid(String),
}

/// Who reads the list, where their rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// gpuwatch's own lists: every GPU gpuwatch shows, so also the DRM sources' `AMD-`
    /// and `INTEL-` ids, and UUIDs without their `GPU-` prefix.
    Gpuwatch,
    /// CUDA's `CUDA_VISIBLE_DEVICES` (and the NVIDIA container runtime's list, which has
    /// the same entries): `GPU-` UUIDs only with their prefix, no other vendor's ids, and
    /// not the `MIG-GPU-…/GI/CI` form CUDA dropped in R470.
    Cuda,
}

/// Parses `0,2` or `GPU-5e0c...,1` (gpuwatch's dialect); every entry must be non-empty.
pub fn parse_gpu_list(text: &str) -> Result<Vec<GpuSelector>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.split(',').enumerate() {
        let entry = raw.trim();
        if entry.is_empty() {
            return Err(format!("entry {} is empty in {text:?}", i + 1));
        }
        out.push(parse_entry(entry, Dialect::Gpuwatch)?);
    }
    Ok(out)
}

/// One entry of a list in `dialect`; the error names the entry and what is wrong with it.
pub fn parse_entry(entry: &str, dialect: Dialect) -> Result<GpuSelector, String> {
    if let Ok(index) = entry.parse::<u32>() {
        return Ok(GpuSelector::Index(index));
    }
    let upper = entry.to_ascii_uppercase();
    if upper.starts_with("MIG-GPU-") {
        return Err(format!(
            "{entry:?} is the old MIG-GPU-…/GI/CI form; use the MIG- UUID `nvidia-smi -L` lists"
        ));
    }
    if let Some(rest) = strip_prefix_ignore_case(entry, "MIG-") {
        return match is_uuid_part(rest) {
            true => Ok(GpuSelector::Uuid(entry.to_ascii_lowercase())),
            false => Err(format!(
                "{entry:?} is not a MIG instance UUID like MIG-4b6f1c2d (see nvidia-smi -L)"
            )),
        };
    }
    if let Some(rest) = strip_prefix_ignore_case(entry, "GPU-")
        && is_uuid_part(rest)
    {
        return Ok(GpuSelector::Uuid(rest.to_ascii_lowercase()));
    }
    match dialect {
        Dialect::Gpuwatch => {
            // The DRM sources' ids (`AMD-<bus id>`) are kept whole; a bare UUID (4 hex
            // digits or more) is taken as if it had its `GPU-` prefix.
            let vendor_id = VENDOR_ID_PREFIXES.iter().any(|p| upper.starts_with(p));
            if vendor_id || (entry.len() >= 4 && is_uuid_part(entry)) {
                return Ok(GpuSelector::Uuid(entry.to_ascii_lowercase()));
            }
        }
        Dialect::Cuda => {
            if VENDOR_ID_PREFIXES.iter().any(|p| upper.starts_with(p)) {
                return Err(format!(
                    "{entry:?} is not an NVIDIA GPU: CUDA cannot be pointed at it"
                ));
            }
            if entry.starts_with('-') {
                // CUDA stops at an invalid index and hides every GPU after it: almost
                // surely a mistake.
                return Err(format!(
                    "{entry:?} is not a GPU index (CUDA would hide it and every GPU after it)"
                ));
            }
        }
    }
    Err(format!(
        "{entry:?} is neither a GPU index nor a GPU UUID like GPU-8932f937"
    ))
}

/// The DRM sources' GPU ids (`source::drm`): not NVIDIA UUIDs, and kept with their prefix.
const VENDOR_ID_PREFIXES: [&str; 2] = ["AMD-", "INTEL-"];

/// Ids kept with their prefix when shown back: MIG devices and the DRM sources' GPUs.
const OTHER_ID_PREFIXES: [&str; 3] = ["MIG-", "AMD-", "INTEL-"];

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// Hex digits and dashes, at least one: what follows `GPU-` or `MIG-`.
fn is_uuid_part(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn strip_prefix(s: &str) -> &str {
    strip_prefix_ignore_case(s, "GPU-").unwrap_or(s)
}

impl GpuSelector {
    /// Whether this names the MIG instance `m` (by its `MIG-` UUID or a prefix of it).
    pub fn matches_instance(&self, m: &MigReading) -> bool {
        match self {
            GpuSelector::Uuid(prefix) => {
                prefix.starts_with("mig-") && m.id.0.to_ascii_lowercase().starts_with(prefix)
            }
            GpuSelector::Index(_) => false,
        }
    }

    /// This GPU, or one of its MIG instances.
    pub fn matches_gpu_or_instance(&self, gpu: &GpuReading) -> bool {
        self.matches(gpu) || gpu.mig_devices.iter().any(|m| self.matches_instance(m))
    }

    pub fn matches(&self, gpu: &GpuReading) -> bool {
        match self {
            GpuSelector::Index(i) => gpu.index == *i,
            GpuSelector::Uuid(prefix) => strip_prefix(&gpu.id.0)
                .to_ascii_lowercase()
                .starts_with(prefix),
        }
    }
}

impl std::fmt::Display for GpuSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSelector::Index(i) => write!(f, "{i}"),
            GpuSelector::Uuid(prefix) => match OTHER_ID_PREFIXES
                .iter()
                .find(|p| prefix.starts_with(&p.to_ascii_lowercase()))
            {
                // `MIG-ffff`, as the user wrote the kind of id (the rest stays lower-case).
                Some(kind) => write!(f, "{kind}{}", &prefix[kind.len()..]),
                None => write!(f, "GPU-{prefix}"),
            },
        }
    }
}

/// The first entry of `list` that matches none of `gpus`, as `99 matches no GPU (this host
/// has 0-7)`: a selector that selects nothing is a typo, and "0 GPUs" on screen hides it.
pub fn unmatched(list: &[GpuSelector], gpus: &[GpuReading]) -> Option<String> {
    let missing = list
        .iter()
        .find(|s| !gpus.iter().any(|g| s.matches_gpu_or_instance(g)))?;
    let mut indices: Vec<u32> = gpus.iter().map(|g| g.index).collect();
    indices.sort_unstable();
    indices.dedup();
    let has = if indices.is_empty() {
        "no GPUs".to_string()
    } else {
        ranges(&indices)
    };
    Some(format!("{missing} matches no GPU (this host has {has})"))
}

/// `0-3,5,7-8` for sorted, distinct indices.
fn ranges(sorted: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        parts.push(match sorted[i] {
            end if end == start => start.to_string(),
            end => format!("{start}-{end}"),
        });
        i += 1;
    }
    parts.join(",")
}

/// Whether a MIG instance is named by the list.
pub fn selects_instance(list: &[GpuSelector], m: &MigReading) -> bool {
    list.iter().any(|s| s.matches_instance(m))
}

/// Whether a GPU is in the list (an empty list selects nothing; `None` at the call site
/// means "no --only given").
pub fn selected(list: &[GpuSelector], gpu: &GpuReading) -> bool {
    list.iter().any(|s| s.matches(gpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::GpuId;

    fn gpu(index: u32, uuid: &str) -> GpuReading {
        GpuReading::absent(GpuId(uuid.into()), index, "g")
    }

    #[test]
    fn indices_and_uuids() {
        let list = parse_gpu_list("0, 2,GPU-5E0C0003").unwrap();
        assert_eq!(
            list,
            vec![
                GpuSelector::Index(0),
                GpuSelector::Index(2),
                GpuSelector::Uuid("5e0c0003".into())
            ]
        );
        assert!(selected(&list, &gpu(0, "GPU-aaaa")));
        assert!(!selected(&list, &gpu(1, "GPU-aaaa")));
        assert!(selected(&list, &gpu(7, "GPU-5e0c0003-1a2b")));
        // Without the GPU- prefix too, as CUDA_VISIBLE_DEVICES accepts.
        let bare = parse_gpu_list("5e0c0003-1a2b").unwrap();
        assert!(selected(&bare, &gpu(7, "GPU-5e0c0003-1a2b")));
    }

    #[test]
    fn an_entry_that_matches_nothing_is_named() {
        let gpus: Vec<_> = (0..8).map(|i| gpu(i, &format!("GPU-5e0c000{i}"))).collect();
        assert_eq!(unmatched(&parse_gpu_list("0,7").unwrap(), &gpus), None);
        assert_eq!(
            unmatched(&parse_gpu_list("1,99").unwrap(), &gpus).unwrap(),
            "99 matches no GPU (this host has 0-7)"
        );
        assert_eq!(
            unmatched(&parse_gpu_list("GPU-DEAD").unwrap(), &gpus[..3]).unwrap(),
            "GPU-dead matches no GPU (this host has 0-2)"
        );
        let gaps = [
            gpu(0, "GPU-a"),
            gpu(2, "GPU-b"),
            gpu(3, "GPU-c"),
            gpu(5, "GPU-d"),
        ];
        assert_eq!(
            unmatched(&parse_gpu_list("4").unwrap(), &gaps).unwrap(),
            "4 matches no GPU (this host has 0,2-3,5)"
        );
        assert_eq!(
            unmatched(&parse_gpu_list("0").unwrap(), &[]).unwrap(),
            "0 matches no GPU (this host has no GPUs)"
        );
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        assert_eq!(
            parse_gpu_list("0,,1").unwrap_err(),
            "entry 2 is empty in \"0,,1\""
        );
        assert_eq!(
            parse_gpu_list("first").unwrap_err(),
            "\"first\" is neither a GPU index nor a GPU UUID like GPU-8932f937"
        );
        assert!(parse_gpu_list("").is_err());
    }
}
