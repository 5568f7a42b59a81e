//! GPU lists as users write them for `--only` (and as `CUDA_VISIBLE_DEVICES` takes them):
//! indices and UUIDs (with or without the `GPU-` prefix, or a unique prefix of one),
//! comma-separated. Parsing and matching only.

use crate::source::GpuReading;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelector {
    Index(u32),
    /// A UUID or a prefix of one, stored without the `GPU-` prefix, lower-case.
    Uuid(String),
}

/// Parses `0,2` or `GPU-5e0c...,1`; every entry must be non-empty.
pub fn parse_gpu_list(text: &str) -> Result<Vec<GpuSelector>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.split(',').enumerate() {
        let entry = raw.trim();
        if entry.is_empty() {
            return Err(format!("entry {} is empty in {text:?}", i + 1));
        }
        if let Ok(index) = entry.parse::<u32>() {
            out.push(GpuSelector::Index(index));
        } else if entry.starts_with("GPU-") || entry.starts_with("MIG-") || looks_like_uuid(entry) {
            out.push(GpuSelector::Uuid(strip_prefix(entry).to_ascii_lowercase()));
        } else {
            return Err(format!("{entry:?} is neither a GPU index nor a UUID"));
        }
    }
    Ok(out)
}

fn looks_like_uuid(s: &str) -> bool {
    s.len() >= 4 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn strip_prefix(s: &str) -> &str {
    s.strip_prefix("GPU-").unwrap_or(s)
}

impl GpuSelector {
    pub fn matches(&self, gpu: &GpuReading) -> bool {
        match self {
            GpuSelector::Index(i) => gpu.index == *i,
            GpuSelector::Uuid(prefix) => strip_prefix(&gpu.id.0)
                .to_ascii_lowercase()
                .starts_with(prefix),
        }
    }
}

/// Whether a GPU is in the list (an empty list selects nothing; `None` at the call site
/// means "no --only given").
pub fn selected(list: &[GpuSelector], gpu: &GpuReading) -> bool {
    list.iter().any(|s| s.matches(gpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::GpuId;

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
    fn bad_lists_say_what_is_wrong() {
        assert_eq!(
            parse_gpu_list("0,,1").unwrap_err(),
            "entry 2 is empty in \"0,,1\""
        );
        assert_eq!(
            parse_gpu_list("first").unwrap_err(),
            "\"first\" is neither a GPU index nor a UUID"
        );
        assert!(parse_gpu_list("").is_err());
    }
}
