//! Turning readings into short human text: bytes, durations, temperatures, `N/A`.
//! Pure string formatting (no ratatui); shared by the TUI and the headless modes.

use std::borrow::Cow;
use std::time::Duration;

use super::fixed::Fixed;
use crate::reading::throttle::ThrottleReason;
use crate::reading::{GpuReading, Vendor};
use crate::units::Bytes;

/// What an unknown reading shows as. A real zero shows as 0.
pub const NA: &str = "N/A";

/// The GPU's name with its vendor in front when the name does not say it (a board whose
/// `product_name` is `Radeon RX 7900 XTX`, a name from another exporter), so a box with
/// several vendors' GPUs tells them apart. NVIDIA stays implicit: NVML's names begin with it,
/// and a GPU of unknown vendor (an old recording) keeps its name as it is.
pub fn gpu_name(g: &GpuReading) -> Cow<'_, str> {
    let word = match g.vendor {
        Some(Vendor::Amd) => "AMD",
        Some(Vendor::Intel) => "Intel",
        Some(Vendor::Nvidia) | None => return Cow::Borrowed(&g.name),
    };
    let said = g
        .name
        .get(..word.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(word));
    if said {
        Cow::Borrowed(&g.name)
    } else {
        Cow::Owned(format!("{word} {}", g.name))
    }
}

/// The vendor's tag on a line too narrow for the GPU's name: `AMD`, `Intel`; `None` for
/// NVIDIA (implicit) and unknown vendors.
pub fn vendor_tag(g: &GpuReading) -> Option<&'static str> {
    match g.vendor? {
        Vendor::Amd => Some("AMD"),
        Vendor::Intel => Some("Intel"),
        Vendor::Nvidia => None,
    }
}

/// GiB with one decimal, no unit: `41.2`.
pub fn gib(b: Bytes) -> String {
    Fixed(b.as_gib(), 1).to_string()
}

/// A compact size for columns: `41.2G`, `612M`, `0`.
pub fn bytes_short(b: Bytes) -> String {
    if b.0 == 0 {
        "0".into()
    } else if b.0 >= Bytes::GIB {
        format!("{}G", Fixed(b.as_gib(), 1))
    } else if b.0 >= Bytes::MIB {
        format!("{}M", b.0 / Bytes::MIB)
    } else {
        format!("{}K", b.0.div_ceil(Bytes::KIB))
    }
}

/// A VRAM sum some of whose values may be unknown (an owner's processes): `N/A` when none
/// is known, `12.0G+` when only some are (at least that much), the plain sum otherwise.
pub fn total_short(t: crate::model::users::Total<Bytes>) -> String {
    match t.value() {
        None => NA.to_string(),
        Some(b) if t.partial() => format!("{}+", bytes_short(b)),
        Some(b) => bytes_short(b),
    }
}

/// A duration as the warnings say it: `40s`, `1m11s`, `2m`, `5h20m`, `3d4h`.
pub fn duration_short(d: Duration) -> String {
    let s = d.as_secs();
    let pair = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    match s {
        0..60 => format!("{s}s"),
        60..3600 => pair(s / 60, "m", s % 60, "s"),
        3600..86400 => pair(s / 3600, "h", (s % 3600) / 60, "m"),
        _ => pair(s / 86400, "d", (s % 86400) / 3600, "h"),
    }
}

/// A process's elapsed time for the TIME column: `12:05`, `5:20:03`, `9d05h`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..3600 => format!("{}:{:02}", s / 60, s % 60),
        3600..86400 => format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}

/// Formats a known value or `N/A`.
pub fn or_na<T>(value: Option<T>, f: impl FnOnce(T) -> String) -> String {
    value.map(f).unwrap_or_else(|| NA.to_string())
}

/// The words for a GPU nobody is named on (`model::owners::unheld`), for the TUI and
/// `--once` alike; `None` where there is nothing to add (each output has its own dash).
pub fn unheld_words(u: crate::model::owners::Unheld) -> Option<&'static str> {
    use crate::model::owners::Unheld;
    match u {
        Unheld::Free => Some("free"),
        Unheld::Busy => Some("busy, no process listed"),
        Unheld::HoldsMemory => Some("VRAM in use, no process listed"),
        Unheld::NotFree => None,
    }
}

/// A horizontal bar of `width` cells filled to `ratio` (0..=1), in eighths for smoothness.
/// An unknown ratio draws an empty track.
pub fn bar(ratio: Option<f64>, width: usize) -> String {
    const PARTIAL: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let Some(ratio) = ratio else {
        return "·".repeat(width);
    };
    let eighths = (ratio.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let (full, part) = (eighths / 8, eighths % 8);
    let mut s = "█".repeat(full);
    if full < width {
        if part > 0 {
            s.push(PARTIAL[part]);
        }
        let used = full + usize::from(part > 0);
        s.push_str(&"░".repeat(width - used));
    }
    s
}

/// A transfer rate: `1.2G/s`, `12.3M/s`, `512K/s`.
pub fn rate(bytes_per_second: Bytes) -> String {
    let b = bytes_per_second.0 as f64;
    // From 1000 MiB on, GiB keeps the text short.
    if b >= 1000.0 * Bytes::MIB as f64 {
        format!("{}G/s", Fixed(b / Bytes::GIB as f64, 1))
    } else if b >= Bytes::MIB as f64 {
        format!("{}M/s", Fixed(b / Bytes::MIB as f64, 1))
    } else {
        format!("{}K/s", Fixed(b / Bytes::KIB as f64, 0))
    }
}

/// The weight the panel colours a reason by; defined beside the reasons' one table.
pub use crate::reading::throttle::ThrottleKind;

/// A short label and weight for a clock-throttle reason, read from `reading::throttle::TABLE`.
pub fn throttle_label(reason: &ThrottleReason) -> (&str, ThrottleKind) {
    (reason.label(), reason.kind())
}

/// Greedy word wrap into lines of at most `width` characters; a word longer than a line is
/// split. Hand-written: ten lines, where the textwrap crate would be a dependency for
/// the help and warning popups alone.
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..width).collect());
        }
        let (used, extra) = (line.chars().count(), word.len());
        if used > 0 && used + 1 + extra > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Cuts `s` to `width` characters, ending with `…` when something was cut. `…` never
/// follows a digit: the digits (and decimal points) before the cut go too, so a cut
/// number can never pass for a smaller one (`1354/62…` for 1354/6251, `--batch 5…` for
/// 512): `1354/…`, `--batch …`.
pub fn truncate(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    let whole = out
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
        .len();
    out.truncate(whole);
    out.push('…');
    out
}

/// `truncate` of a string already owned: handed back as it is when it fits, not copied.
pub fn truncate_owned(s: String, width: usize) -> String {
    if s.chars().count() <= width {
        return s;
    }
    truncate(&s, width)
}

/// Word-wraps `text` to lines of at most `width` characters; a word longer than a line
/// (a long path) is broken inside. Hand-written: ratatui's wrapping cannot tell how many
/// lines it made, and the detail views size their areas by that count.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        let used = line.chars().count();
        if used > 0 && used + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        while line.chars().count() + word.len() > width {
            let room = width - line.chars().count();
            line.extend(word.drain(..room));
            lines.push(std::mem::take(&mut line));
        }
        line.extend(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Packs short items into lines of at most `width` characters, `sep` between items on a
/// line; an item longer than a line is wrapped on its own lines. Nothing is cut.
pub fn pack(items: &[String], sep: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for item in items {
        let (used, len) = (line.chars().count(), item.chars().count());
        if used > 0 && used + sep.chars().count() + len <= width {
            line.push_str(sep);
            line.push_str(item);
            continue;
        }
        if used > 0 {
            lines.push(std::mem::take(&mut line));
        }
        if len <= width {
            line = item.clone();
        } else {
            lines.extend(wrap(item, width));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_cut_never_leaves_part_of_a_number() {
        assert_eq!(truncate("clk 1354/6251 MHz", 12), "clk 1354/…");
        assert_eq!(truncate("--batch 512", 10), "--batch …");
        assert_eq!(truncate("alice 41.2G", 9), "alice …");
        assert_eq!(truncate("Llama-3.1-8B", 11), "Llama-3.1-…");
        assert_eq!(truncate("python train.py", 10), "python tr…");
        assert_eq!(truncate("fits", 4), "fits");
    }

    use super::*;

    #[test]
    fn the_vendor_is_named_once_and_only_where_the_name_lacks_it() {
        let gpu = |name: &str, vendor| {
            let mut g = GpuReading::absent(crate::reading::GpuId("x".into()), 0, name);
            g.vendor = vendor;
            g
        };
        let named = |name, vendor| gpu_name(&gpu(name, vendor)).into_owned();
        assert_eq!(
            named("Radeon RX 7900 XTX", Some(Vendor::Amd)),
            "AMD Radeon RX 7900 XTX"
        );
        assert_eq!(
            named("AMD Instinct MI300X", Some(Vendor::Amd)),
            "AMD Instinct MI300X"
        );
        assert_eq!(named("amd gpu 0x744c", Some(Vendor::Amd)), "amd gpu 0x744c");
        assert_eq!(named("Arc A770", Some(Vendor::Intel)), "Intel Arc A770");
        assert_eq!(
            named("Intel GPU 0x56a0", Some(Vendor::Intel)),
            "Intel GPU 0x56a0"
        );
        assert_eq!(
            named("H100", Some(Vendor::Nvidia)),
            "H100",
            "NVIDIA is implicit"
        );
        assert_eq!(
            named("Radeon", None),
            "Radeon",
            "an unknown vendor is not guessed"
        );
        assert_eq!(named("AM", Some(Vendor::Amd)), "AMD AM");
        assert_eq!(vendor_tag(&gpu("x", Some(Vendor::Intel))), Some("Intel"));
        assert_eq!(vendor_tag(&gpu("x", Some(Vendor::Nvidia))), None);
        assert_eq!(vendor_tag(&gpu("x", None)), None);
    }

    #[test]
    fn words_wrap_at_the_width_and_long_words_split() {
        assert_eq!(
            wrap_words("show only that GPU's processes", 12),
            ["show only", "that GPU's", "processes"]
        );
        assert_eq!(wrap_words("abcdefghij xy", 4), ["abcd", "efgh", "ij", "xy"]);
        assert_eq!(wrap_words("", 5), [""]);
    }

    #[test]
    fn bytes() {
        assert_eq!(gib(Bytes::from_gib(41.24)), "41.2");
        assert_eq!(bytes_short(Bytes::from_gib(70.05)), "70.0G");
        assert_eq!(bytes_short(Bytes::from_mib(612)), "612M");
        assert_eq!(bytes_short(Bytes(1)), "1K");
        assert_eq!(bytes_short(Bytes(0)), "0");
    }

    #[test]
    fn durations() {
        let d = Duration::from_secs;
        assert_eq!(duration_short(d(0)), "0s");
        assert_eq!(duration_short(d(40)), "40s");
        assert_eq!(duration_short(d(71)), "1m11s");
        assert_eq!(duration_short(d(120)), "2m");
        assert_eq!(duration_short(d(5 * 3600 + 20 * 60 + 7)), "5h20m");
        assert_eq!(duration_short(d(3 * 86400 + 4 * 3600)), "3d4h");
        assert_eq!(duration_short(d(86400)), "1d");
        assert_eq!(elapsed(d(725)), "12:05");
        assert_eq!(elapsed(d(5 * 3600 + 20 * 60 + 3)), "5:20:03");
        assert_eq!(elapsed(d(9 * 86400 + 5 * 3600)), "9d05h");
    }

    #[test]
    fn absent_is_na_and_zero_is_zero() {
        assert_eq!(or_na(None::<u32>, |v| format!("{v}%")), "N/A");
        assert_eq!(or_na(Some(0), |v| format!("{v}%")), "0%");
    }

    #[test]
    fn bars() {
        assert_eq!(bar(Some(0.0), 4), "░░░░");
        assert_eq!(bar(Some(1.0), 4), "████");
        assert_eq!(bar(Some(0.5), 4), "██░░");
        assert_eq!(bar(Some(0.5625), 4), "██▎░");
        assert_eq!(bar(Some(7.0), 3), "███");
        assert_eq!(bar(None, 3), "···");
        for i in 0..=32 {
            assert_eq!(bar(Some(i as f64 / 32.0), 4).chars().count(), 4, "{i}");
        }
    }

    #[test]
    fn rates_and_throttle_labels() {
        assert_eq!(rate(Bytes(2000 * 1024)), "2.0M/s");
        assert_eq!(rate(Bytes(512 * 1024)), "512K/s");
        assert_eq!(rate(Bytes(3 * Bytes::GIB / 2)), "1.5G/s");
        let label = |name: &str| {
            let reason = ThrottleReason::from_name(name);
            let (label, kind) = throttle_label(&reason);
            (label.to_string(), kind)
        };
        assert_eq!(label("gpu_idle"), ("idle".into(), ThrottleKind::Benign));
        assert_eq!(label("hw_thermal_slowdown").1, ThrottleKind::Slowdown);
        assert_eq!(
            label("something_new"),
            ("something_new".into(), ThrottleKind::Slowdown)
        );
    }

    #[test]
    fn wrapping_keeps_every_character() {
        assert_eq!(
            wrap("python train.py --lr 3e-4", 10),
            ["python", "train.py", "--lr 3e-4"]
        );
        assert_eq!(wrap("/a/very/long/path", 6), ["/a/ver", "y/long", "/path"]);
        assert_eq!(wrap("", 5), [""]);
        let items: Vec<String> = ["P0", "fan 40 %", "a much longer item"]
            .map(String::from)
            .into();
        assert_eq!(
            pack(&items, " · ", 14),
            ["P0 · fan 40 %", "a much longer", "item"]
        );
    }

    #[test]
    fn truncation() {
        assert_eq!(truncate("python train.py", 8), "python …");
        assert_eq!(truncate("short", 8), "short");
        assert_eq!(truncate("x", 0), "");
    }
}
