//! `-L`: one line per GPU and one per MIG device under it, as `nvidia-smi -L` writes them
//! (`GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)`, `  MIG 3g.40gb     Device  0: (UUID:
//! MIG-…)`), each led by its host when several hosts show.

use crate::reading::GpuReading;

pub(super) fn render(gpus: &[&GpuReading], with_host: bool) -> String {
    let mut out = String::new();
    for g in gpus {
        let host = match (&g.host, with_host) {
            (Some(h), true) => format!("{h}: "),
            _ => String::new(),
        };
        out += &format!("{host}GPU {}: {} (UUID: {})\n", g.index, g.name, g.id.0);
        for (i, m) in g.mig_devices.iter().enumerate() {
            let profile = m.profile.as_deref().unwrap_or("[N/A]");
            out += &format!(
                "{host}  MIG {profile:<11} Device {i:>2}: (UUID: {})\n",
                m.id.0
            );
        }
    }
    crate::text_safe::escape_lines(&out).into_owned()
}
