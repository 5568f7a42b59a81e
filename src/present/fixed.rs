//! Numbers with a fixed count of decimals (`41.2`, `350`), written exactly as
//! `format!("{x:.1}")` writes them but by integer arithmetic. The standard library's exact
//! float formatting (Grisu with a Dragon fallback) took about 1,300 instructions a number;
//! a frame at 8 GPUs writes about 90 of them (sizes, rates, watts, CPU %), 3 % of its
//! instructions (callgrind, issue 25). A float is `m × 2^e` exactly, so `x × 10^d` rounded
//! half to even is one multiplication and one shift: the same digits, every time
//! (`writes_what_the_standard_formatter_writes` compares them over ties and random values).

use std::fmt;

/// `value` with `decimals` places (at most 3): `Fixed(41.25, 1)` shows as `41.2`, the tie
/// going to the even digit as the standard formatter's does. Width and alignment flags are
/// honoured (`{:>6}`). Infinities, NaN and numbers of 10^15 and more go to the standard
/// formatter.
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub f64, pub u8);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fixed(value, decimals) = *self;
        let decimals = decimals.min(3);
        let Some(scaled) = scaled_to_nearest(value.abs(), decimals) else {
            return f.pad(&format!("{value:.*}", usize::from(decimals)));
        };
        // At most a sign, 16 digits, a point and 3 decimals.
        let mut text = Text::default();
        if value.is_sign_negative() {
            text.push(b'-');
        }
        let unit = 10_u64.pow(u32::from(decimals));
        text.push_number(scaled / unit, 1);
        if decimals > 0 {
            text.push(b'.');
            text.push_number(scaled % unit, usize::from(decimals));
        }
        f.pad(text.as_str())
    }
}

/// `x × 10^decimals` (x ≥ 0) rounded to the nearest integer, a tie to the even one; `None`
/// when it is not finite or not below 10^15 × 10^decimals.
fn scaled_to_nearest(x: f64, decimals: u8) -> Option<u64> {
    if !x.is_finite() || x >= 1e15 {
        return None;
    }
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // x = mantissa × 2^power exactly (subnormals have no hidden bit).
    let (mantissa, power) = match exponent {
        0 => (fraction, -1074),
        _ => (fraction | (1 << 52), exponent - 1075),
    };
    // Below 2^53 × 10^3 < 2^63: no overflow.
    let product = u128::from(mantissa) * u128::from(10_u64.pow(u32::from(decimals)));
    if power >= 0 {
        // x < 10^15 < 2^50, so a whole number here has power ≤ 0; kept for clarity.
        return u64::try_from(product << power).ok();
    }
    let shift = power.unsigned_abs();
    if shift >= 127 {
        // Less than half: product < 2^63 ≤ 2^(shift - 1).
        return Some(0);
    }
    let whole = product >> shift;
    let rest = product & ((1_u128 << shift) - 1);
    let half = 1_u128 << (shift - 1);
    let up = rest > half || (rest == half && whole & 1 == 1);
    u64::try_from(whole + u128::from(up)).ok()
}

/// A number's text on the stack.
#[derive(Default)]
struct Text {
    bytes: [u8; 24],
    len: usize,
}

impl Text {
    fn push(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// `n` in decimal, with zeros in front up to `digits` digits.
    fn push_number(&mut self, mut n: u64, digits: usize) {
        let mut reversed = [0_u8; 20];
        let mut count = 0;
        while n > 0 || count < digits {
            reversed[count] = b'0' + (n % 10) as u8;
            n /= 10;
            count += 1;
        }
        for &d in reversed[..count].iter().rev() {
            self.push(d);
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits, '-' and '.' are ever pushed.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(x: f64) {
        for d in 0..=3_u8 {
            let want = format!("{x:.*}", usize::from(d));
            assert_eq!(Fixed(x, d).to_string(), want, "{x:e} with {d} decimals");
        }
    }

    #[test]
    fn writes_what_the_standard_formatter_writes() {
        // Every multiple of 1/4096 to 300: all the exact ties at 0 to 3 decimals.
        for i in 0..300 * 4096 {
            check(f64::from(i) / 4096.0);
        }
        // Sizes in GiB and rates as the TUI computes them.
        for b in (0..50_000_u64).map(|i| i * 7_919_u64 * 1_048_573) {
            check(b as f64 / (1_u64 << 30) as f64);
            check(b as f64 / (1_u64 << 20) as f64);
        }
        // Random doubles over many magnitudes, positive and negative.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = f64::from_bits(state >> 2);
            if x.is_finite() {
                check(x);
                check(-x);
            }
            let y =
                (state >> 11) as f64 / (1_u64 << 53) as f64 * 10f64.powi((state % 20) as i32 - 5);
            check(y);
            check(-y);
        }
        for x in [
            0.0, -0.0, 0.05, 0.15, 0.25, 2.5, 3.5, -0.04, 1e-300, 5e-324, 999_999.95, 1e15, 1.5e300,
        ] {
            check(x);
        }
    }

    /// An `f32` widened is the same number, so its digits are the `f32`'s own (the CPU
    /// column is one).
    #[test]
    fn an_f32_widened_writes_as_the_f32_does() {
        for i in 0..200_000_u32 {
            let x = f32::from_bits(i.wrapping_mul(2_654_435_761) >> 2);
            if x.is_finite() && x < 1e15 {
                assert_eq!(Fixed(f64::from(x), 1).to_string(), format!("{x:.1}"));
            }
            let cpu = i as f32 / 997.0;
            assert_eq!(Fixed(f64::from(cpu), 1).to_string(), format!("{cpu:.1}"));
        }
    }

    #[test]
    fn falls_back_to_the_standard_formatter_where_it_does_not_apply() {
        for x in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e20] {
            assert_eq!(Fixed(x, 1).to_string(), format!("{x:.1}"));
        }
    }

    #[test]
    fn width_and_alignment_are_honoured() {
        assert_eq!(format!("{:>6}", Fixed(41.25, 1)), "  41.2");
        assert_eq!(format!("{:<5}|", Fixed(3.0, 0)), "3    |");
    }
}
