//! Physical units as types, so a byte count can never be added to a temperature.
//! Owns only the value types and their unit conversions; formatting for humans lives in `present::format`.

use serde::{Deserialize, Serialize};

/// A number of bytes (VRAM, host memory).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub const GIB: u64 = 1024 * 1024 * 1024;

    pub fn from_gib(gib: f64) -> Self {
        Bytes((gib * Self::GIB as f64).round().max(0.0) as u64)
    }
    pub fn from_mib(mib: u64) -> Self {
        Bytes(mib * Self::MIB)
    }
    pub fn as_gib(self) -> f64 {
        self.0 as f64 / Self::GIB as f64
    }
    pub fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }
}

impl std::ops::Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0 + rhs.0)
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        Bytes(iter.map(|b| b.0).sum())
    }
}

/// Sizes as users write them: `20GiB`, `20G`, `512MiB`, `1.5 GiB`, `4096B`. Units are binary
/// (`G` is GiB, as in `free -h` and nvidia-smi's MiB columns). `GB`, `MB`, `KB` and `TB` are
/// refused rather than guessed: half the world reads them as 10^9, the other half as 2^30.
/// A bare number is refused too (is `1073741824` bytes or GiB?), except `0`. Used by every
/// size setting, `pick --min-free` and the `vram>` filter, so they all accept the same forms.
impl std::str::FromStr for Bytes {
    type Err = String;

    fn from_str(text: &str) -> Result<Bytes, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a size like 20GiB or 512MiB"))?;
        let scale = match unit.trim().to_ascii_lowercase().as_str() {
            "" if value == 0.0 => 1,
            "" => {
                return Err(format!(
                    "{text:?} has no unit: write {number}B for bytes, or e.g. {number}GiB, {number}MiB"
                ));
            }
            "b" => 1,
            "k" | "kib" => Bytes::KIB,
            "m" | "mib" => Bytes::MIB,
            "g" | "gib" => Bytes::GIB,
            "t" | "tib" => Bytes::GIB * 1024,
            decimal @ ("kb" | "mb" | "gb" | "tb") => {
                let binary = format!("{}iB", decimal[..1].to_ascii_uppercase());
                return Err(format!(
                    "{text:?}: {} is ambiguous (10^n or 2^n bytes?); write {number}{binary} \
                     (binary units, as nvidia-smi uses)",
                    decimal.to_ascii_uppercase()
                ));
            }
            other => {
                return Err(format!(
                    "unknown size unit {other:?} in {text:?} (use B, KiB, MiB, GiB or TiB)"
                ));
            }
        };
        Ok(Bytes((value * scale as f64).round() as u64))
    }
}

/// Degrees Celsius, whole degrees as NVML reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Celsius(pub u32);

/// Watts (NVML reports milliwatts; converted at the source).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Watts(pub f64);

impl Watts {
    pub fn from_milliwatts(mw: u32) -> Self {
        Watts(f64::from(mw) / 1000.0)
    }
}

/// Megahertz, as clocks are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MegaHertz(pub u32);

/// A percentage 0..=100 (utilization, fan). Per-process CPU% can exceed 100 (several cores),
/// so it is an `f32` on the process instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Percent(pub u32);

impl Percent {
    pub fn ratio(self) -> f64 {
        f64::from(self.0.min(100)) / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gib_round_trip() {
        assert_eq!(Bytes::from_gib(80.0).0, 80 * Bytes::GIB);
        assert!((Bytes(41 * Bytes::GIB + Bytes::GIB / 2).as_gib() - 41.5).abs() < 1e-9);
    }

    #[test]
    fn sizes() {
        let parse = |t: &str| t.parse::<Bytes>();
        assert_eq!(parse("20GiB").unwrap(), Bytes(20 * Bytes::GIB));
        assert_eq!(parse("1.5 G").unwrap(), Bytes(3 * Bytes::GIB / 2));
        assert_eq!(parse("512MiB").unwrap(), Bytes(512 * Bytes::MIB));
        assert_eq!(parse("4096B").unwrap(), Bytes(4096));
        assert_eq!(parse("0").unwrap(), Bytes(0));
        // Issue 23: a bare number was GiB, so a byte count became exbibytes.
        assert_eq!(
            parse("1073741824").unwrap_err(),
            "\"1073741824\" has no unit: write 1073741824B for bytes, or e.g. 1073741824GiB, \
             1073741824MiB"
        );
        assert_eq!(
            parse("20GB").unwrap_err(),
            "\"20GB\": GB is ambiguous (10^n or 2^n bytes?); write 20GiB (binary units, as \
             nvidia-smi uses)"
        );
        assert!(parse("1 mb").unwrap_err().contains("write 1MiB"));
        assert_eq!(
            parse("lots").unwrap_err(),
            "\"lots\" is not a size like 20GiB or 512MiB"
        );
        assert!(
            parse("3 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
    }

    #[test]
    fn milliwatts() {
        assert_eq!(Watts::from_milliwatts(650_500), Watts(650.5));
    }

    #[test]
    fn percent_ratio_is_clamped() {
        assert_eq!(Percent(150).ratio(), 1.0);
        assert_eq!(Percent(25).ratio(), 0.25);
    }
}
