//! Splitting a rectangle into segments exactly as ratatui's `Layout` does, by arithmetic for
//! the two shapes the screens use every frame, and through ratatui otherwise.
//!
//! Why by hand: ratatui solves every layout with the Cassowary solver (`kasuari`) and caches
//! the answer per thread. The cache makes later frames cheap, but the first frame solves
//! every panel's, chart's and column's layout once: about 15 M instructions, a quarter of
//! the monitor's start-up (callgrind, 8 GPUs at 200x50, 2026-12-03). Equal shares and
//! lengths-plus-the-rest have closed forms, and `tests::the_closed_forms_split_as_ratatuis_solver_does`
//! holds them to the solver's answers over every size the screens can have; anything
//! else, including lengths that overflow the area (where the solver's trade-offs decide),
//! still goes to ratatui.

use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// The solver works in hundredths of a cell and rounds twice (to a hundredth, then to a
/// cell); the closed forms round the same way so that halves land where the solver's do.
const HUNDREDTHS: f64 = 100.0;

/// `area` split along `direction` into one segment per constraint, `spacing` cells apart:
/// what `Layout::new(direction, constraints).spacing(spacing).split(area)` returns.
pub fn split(
    direction: Direction,
    constraints: &[Constraint],
    spacing: u16,
    area: Rect,
) -> Vec<Rect> {
    let (origin, size) = match direction {
        Direction::Horizontal => (area.x, area.width),
        Direction::Vertical => (area.y, area.height),
    };
    let spans = equal_shares(constraints, spacing, origin, size)
        .or_else(|| lengths_then_rest(constraints, spacing, origin, size));
    match spans {
        Some(spans) => spans
            .into_iter()
            .map(|(start, len)| along(direction, area, start, len))
            .collect(),
        None => Layout::new(direction, constraints.iter().copied())
            .spacing(spacing)
            .split(area)
            .to_vec(),
    }
}

/// [`split`] into exactly `N` segments, for destructuring.
pub fn split_n<const N: usize>(
    direction: Direction,
    constraints: [Constraint; N],
    spacing: u16,
    area: Rect,
) -> [Rect; N] {
    let rects = split(direction, &constraints, spacing, area);
    std::array::from_fn(|i| rects[i])
}

/// `n` equal shares (`Ratio(1, n)` each): every segment the same fractional size, the
/// spacing between them, each edge rounded as the solver rounds it.
fn equal_shares(
    constraints: &[Constraint],
    spacing: u16,
    origin: u16,
    size: u16,
) -> Option<Vec<(u16, u16)>> {
    let n = u32::try_from(constraints.len()).ok()?;
    if n == 0 || !constraints.iter().all(|c| *c == Constraint::Ratio(1, n)) {
        return None;
    }
    let gaps = u32::from(spacing) * (n - 1);
    if gaps > u32::from(size) {
        return None;
    }
    let gap = f64::from(spacing) * HUNDREDTHS;
    let share = (f64::from(size) * HUNDREDTHS - f64::from(gaps) * HUNDREDTHS) / f64::from(n);
    let start = f64::from(origin) * HUNDREDTHS;
    Some(
        (0..n)
            .map(|i| {
                let from = start + f64::from(i) * (share + gap);
                edges(from, from + share)
            })
            .collect(),
    )
}

/// Fixed lengths with at most one `Fill` taking what is left, all fitting with their
/// spacing: laid end to end from the start, as the solver lays them when nothing conflicts.
fn lengths_then_rest(
    constraints: &[Constraint],
    spacing: u16,
    origin: u16,
    size: u16,
) -> Option<Vec<(u16, u16)>> {
    let mut fixed = 0u32;
    let mut fills = 0;
    for c in constraints {
        match c {
            Constraint::Length(len) => fixed += u32::from(*len),
            Constraint::Fill(_) => fills += 1,
            _ => return None,
        }
    }
    let gaps = u32::from(spacing) * u32::try_from(constraints.len().saturating_sub(1)).ok()?;
    let used = fixed + gaps;
    if fills > 1 || used > u32::from(size) {
        return None;
    }
    let rest = u16::try_from(u32::from(size) - used).ok()?;
    let mut at = origin;
    Some(
        constraints
            .iter()
            .map(|c| {
                let len = match c {
                    Constraint::Length(len) => *len,
                    _ => rest,
                };
                let span = (at, len);
                at = at.saturating_add(len).saturating_add(spacing);
                span
            })
            .collect(),
    )
}

/// A segment's start and length in cells from its edges in hundredths, rounded as
/// ratatui's `changes_to_rects` rounds them.
fn edges(from: f64, to: f64) -> (u16, u16) {
    let cell = |v: f64| (v.round() / HUNDREDTHS).round() as u16;
    let (start, end) = (cell(from), cell(to));
    (start, end.saturating_sub(start))
}

fn along(direction: Direction, area: Rect, start: u16, len: u16) -> Rect {
    match direction {
        Direction::Horizontal => Rect::new(start, area.y, len, area.height),
        Direction::Vertical => Rect::new(area.x, start, area.width, len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solver(
        direction: Direction,
        constraints: &[Constraint],
        spacing: u16,
        area: Rect,
    ) -> Vec<Rect> {
        Layout::new(direction, constraints.iter().copied())
            .spacing(spacing)
            .split(area)
            .to_vec()
    }

    fn area(direction: Direction, size: u16) -> Rect {
        match direction {
            Direction::Horizontal => Rect::new(3, 2, size, 7),
            Direction::Vertical => Rect::new(3, 2, 7, size),
        }
    }

    /// The shapes the screens split (equal shares of up to 12, with and without spacing;
    /// lengths with a fill anywhere or none, fitting or not), in both directions, over
    /// sizes where every rounding case of the shares occurs: the closed forms agree with
    /// ratatui's solver cell for cell. (The solver is slow in a debug build: ~4,000 solves
    /// here; a sweep of every size to 260 took minutes and found nothing more.)
    #[test]
    fn the_closed_forms_split_as_ratatuis_solver_does() {
        for direction in [Direction::Horizontal, Direction::Vertical] {
            for n in 1..=12u32 {
                let shares = vec![Constraint::Ratio(1, n); n as usize];
                for spacing in 0..=1 {
                    // Every remainder of the size by n, small and screen-sized.
                    for size in (0..=3 * n as u16).chain(197..=197 + n as u16) {
                        let a = area(direction, size);
                        assert_eq!(
                            split(direction, &shares, spacing, a),
                            solver(direction, &shares, spacing, a),
                            "{n} shares, spacing {spacing}, {a:?}"
                        );
                    }
                }
            }
        }
        // Lengths of 0..=30 with a fill at any place or none, from a fixed pseudo-random walk.
        let mut seed = 0x9e37_79b9u32;
        let mut next = |m: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed % m
        };
        for _ in 0..80 {
            let count = 1 + next(10) as usize;
            let mut shape: Vec<Constraint> = (0..count)
                .map(|_| Constraint::Length(next(31) as u16))
                .collect();
            if next(3) > 0 {
                let at = next(count as u32) as usize;
                shape[at] = Constraint::Fill(1);
            }
            let spacing = next(2) as u16;
            let direction = if next(2) == 0 {
                Direction::Horizontal
            } else {
                Direction::Vertical
            };
            for size in (0..=240).step_by(8 + next(8) as usize) {
                let a = area(direction, size);
                assert_eq!(
                    split(direction, &shape, spacing, a),
                    solver(direction, &shape, spacing, a),
                    "{shape:?}, spacing {spacing}, {a:?}"
                );
            }
        }
    }

    /// The closed forms are what answers these shapes (the solver is not asked).
    #[test]
    fn the_screens_shapes_take_the_closed_forms() {
        let thirds = [Constraint::Ratio(1, 3); 3];
        assert!(equal_shares(&thirds, 1, 0, 200).is_some());
        let panel = [
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Length(0),
            Constraint::Length(2),
            Constraint::Fill(1),
        ];
        assert!(lengths_then_rest(&panel, 0, 0, 10).is_some());
        // Overflowing lengths are the solver's to trade off.
        assert!(lengths_then_rest(&panel, 0, 0, 3).is_none());
    }
}
