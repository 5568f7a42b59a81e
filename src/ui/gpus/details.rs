//! The words around a full panel: who holds the GPU (top border), NVML's finer details —
//! PCIe, enc/dec, ECC, MIG (bottom border, left) — and why clocks are held down (bottom
//! border, right). What does not fit in the borders goes to detail lines inside the panel
//! when the panel has rows to spare, so nothing is cut with `…` while space goes unused;
//! only a panel with no spare row cuts.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{fit_spans, owner_entries};
use crate::reading::GpuReading;
use crate::state::State;
use crate::ui::Theme;
use crate::ui::format::{ThrottleKind, gpu_name, or_na, rate, throttle_label};

/// A panel's border titles and inner detail lines, laid out for one width.
pub struct PanelText {
    pub owners: Vec<Span<'static>>,
    pub details: Vec<Span<'static>>,
    pub throttle: Vec<Span<'static>>,
    /// Lines inside the panel for what the borders could not hold.
    pub lines: Vec<Line<'static>>,
}

/// What a panel has to say, before it is fitted to the borders.
pub struct PanelWords {
    owners: Vec<Span<'static>>,
    parts: Vec<String>,
    details_style: Style,
    /// Separators between owners.
    dim: Style,
    throttle: Vec<Span<'static>>,
    /// Room in the top border for the owners, and in the bottom one for the details.
    owner_room: usize,
    details_room: usize,
    /// Width of a line inside the panel.
    inner: usize,
}

fn width(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.content.chars().count()).sum()
}

impl PanelWords {
    pub fn new(state: &State, g: &GpuReading, theme: &Theme, panel_width: u16) -> Self {
        let (parts, details_style) = detail_parts(g, theme);
        let throttle = throttle_spans(g, theme);
        let panel = panel_width as usize;
        // The title ` 3 · NAME ` (and `▶ ` when focused), two corners, a space either side
        // of the owners and one cell between the two titles.
        let title = gpu_name(g).chars().count() + g.label().chars().count() + 5 + 2;
        PanelWords {
            owners: owner_entries(state, g, theme),
            parts,
            details_style,
            dim: theme.dim,
            owner_room: panel.saturating_sub(title + 2 + 2 + 1),
            details_room: panel.saturating_sub(width(&throttle) + 4),
            throttle,
            inner: panel.saturating_sub(2),
        }
    }

    fn owners_fit(&self) -> bool {
        width(&joined(self.owners.clone(), self.dim)) <= self.owner_room
    }

    /// The owners after `held by `, wrapped whole at the inner width.
    fn owner_lines(&self) -> Vec<Line<'static>> {
        let mut entries = self.owners.clone();
        if let Some(first) = entries.first_mut() {
            first.content = format!("held by {}", first.content).into();
        }
        wrap_entries(entries, self.inner, self.dim)
    }

    fn details_fit(&self) -> bool {
        self.parts.is_empty() || self.parts.join(" · ").chars().count() + 2 <= self.details_room
    }

    /// Inner lines it takes to show everything uncut.
    pub fn lines_wanted(&self) -> u16 {
        let details = if self.details_fit() {
            0
        } else {
            wrap_parts(&self.parts, self.inner).len()
        };
        let owners = if self.owners_fit() {
            0
        } else {
            self.owner_lines().len()
        };
        (details + owners) as u16
    }

    /// Inner lines it takes to put the details and the owners inside the panel, whether or
    /// not they fit the borders: what a neighbour that needs lines inside gives this one.
    pub fn lines_inside(&self) -> u16 {
        let owners = if self.owners_fit() {
            0
        } else {
            self.owner_lines().len()
        };
        (wrap_parts(&self.parts, self.inner).len() + owners) as u16
    }

    /// Fits the words into the borders and `lines` inner lines: the details get lines
    /// first (also when they would fit the border, if the owners leave room) (the bottom border then keeps only the clock reasons), then the owners (the
    /// top border then names those that fit whole and how many more there are).
    pub fn fit(self, lines: u16) -> PanelText {
        let mut left = lines as usize;
        let mut out = Vec::new();
        let wrapped = wrap_parts(&self.parts, self.inner);
        // Details that fit the border still move inside when lines are left for them after
        // the owners: a neighbour's panel took those lines (`lines` is the most any panel
        // in the row wants), and the details then sit in the same place in both.
        let owners_need = if self.owners_fit() {
            0
        } else {
            self.owner_lines().len()
        };
        let inside = !wrapped.is_empty()
            && if self.details_fit() {
                wrapped.len() + owners_need <= left
            } else {
                wrapped.len() <= left
            };
        let details = if inside {
            left -= wrapped.len();
            out.extend(
                wrapped
                    .into_iter()
                    .map(|t| Line::styled(t, self.details_style)),
            );
            Vec::new()
        } else if self.details_fit() {
            framed(&self.parts, self.details_style)
        } else {
            fit_spans(framed(&self.parts, self.details_style), self.details_room)
        };
        let owners = if self.owners_fit() {
            joined(self.owners, self.dim)
        } else {
            let lines = self.owner_lines();
            if lines.len() <= left {
                out.extend(lines);
            }
            whole_owners(self.owners, self.owner_room, self.dim)
        };
        PanelText {
            owners,
            details,
            throttle: self.throttle,
            lines: out,
        }
    }
}

/// Owner entries with ` · ` between them.
pub fn joined(entries: Vec<Span<'static>>, sep: Style) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(Span::styled(" · ", sep));
        }
        out.push(e);
    }
    out
}

/// As many whole owners as fit in `room`, then `+N` for the rest (never half a name);
/// a first owner too long for the room on its own is cut.
fn whole_owners(entries: Vec<Span<'static>>, room: usize, dim: Style) -> Vec<Span<'static>> {
    let total = entries.len();
    let first = entries.first().map_or(0, |e| e.content.chars().count());
    let more = if total > 1 {
        format!(" +{}", total - 1).len()
    } else {
        0
    };
    if first + more > room {
        return fit_spans(joined(entries, dim), room);
    }
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (shown, e) in entries.into_iter().enumerate() {
        let rest = total - shown - 1;
        let more = if rest > 0 {
            format!(" +{rest}").len()
        } else {
            0
        };
        let sep = if shown > 0 { 3 } else { 0 };
        let len = e.content.chars().count();
        if used + sep + len + more > room {
            out.push(Span::styled(
                format!("{}+{}", if shown > 0 { " " } else { "" }, total - shown),
                dim,
            ));
            return out;
        }
        if shown > 0 {
            out.push(Span::styled(" · ", dim));
        }
        used += sep + len;
        out.push(e);
    }
    out
}

/// Spans joined with ` · ` into lines of at most `width`, each span kept whole where it
/// fits on a line at all.
fn wrap_entries(entries: Vec<Span<'static>>, max: usize, sep: Style) -> Vec<Line<'static>> {
    let mut lines: Vec<Vec<Span<'static>>> = Vec::new();
    for e in entries {
        let len = e.content.chars().count();
        match lines.last_mut() {
            Some(line) if width(line) + 3 + len <= max => {
                line.push(Span::styled(" · ", sep));
                line.push(e);
            }
            _ => lines.push(fit_spans(vec![e], max)),
        }
    }
    lines.into_iter().map(Line::from).collect()
}

/// ` PCIe … · enc … ` as one span for the bottom border.
fn framed(parts: &[String], style: Style) -> Vec<Span<'static>> {
    if parts.is_empty() {
        return Vec::new();
    }
    vec![Span::styled(format!(" {} ", parts.join(" · ")), style)]
}

/// The parts joined with ` · ` into lines of at most `width` (a part longer than a line
/// gets a line of its own, cut).
fn wrap_parts(parts: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 3 + part.chars().count() <= width => {
                line.push_str(" · ");
                line.push_str(part);
            }
            _ => lines.push(crate::ui::format::truncate(part, width)),
        }
    }
    lines
}

/// Health events worth a look, PCIe link and traffic, enc/dec, ECC, MIG and its instances,
/// as far as the source tells; in the warning colour when something is unhealthy or there
/// are uncorrected ECC errors.
fn detail_parts(g: &GpuReading, theme: &Theme) -> (Vec<String>, Style) {
    // XIDs seen, rows or pages waiting come first (a narrow border cuts the end): only what
    // is out of the ordinary; the warnings bar says what it means.
    let mut parts: Vec<String> = crate::ui::health_text::notable(&g.health);
    let unhealthy = !parts.is_empty();
    if let (Some(gen_), Some(width)) = (g.pcie_link_gen, g.pcie_link_width) {
        let mut pcie = format!("PCIe {gen_}×{width}");
        if let (Some(tx), Some(rx)) = (g.pcie_tx_per_second, g.pcie_rx_per_second) {
            pcie += &format!(" ↑{} ↓{}", rate(tx), rate(rx));
        }
        parts.push(pcie);
    }
    if g.encoder_util.is_some() || g.decoder_util.is_some() {
        parts.push(format!(
            "enc {} dec {}",
            or_na(g.encoder_util, |p| format!("{}%", p.0)),
            or_na(g.decoder_util, |p| format!("{}%", p.0))
        ));
    }
    if let Some(e) = g.ecc_errors_uncorrected {
        parts.push(format!("ECC {e}"));
    }
    if let Some(mig) = g.mig_enabled {
        parts.push(format!("MIG {}", if mig { "on" } else { "off" }));
    }
    // Each instance has a line of its own (`instances`); the border says how many.
    if !g.mig_devices.is_empty() {
        let n = g.mig_devices.len();
        parts.push(format!("{n} instance{}", if n == 1 { "" } else { "s" }));
    }
    let style = if unhealthy || g.ecc_errors_uncorrected.is_some_and(|e| e > 0) {
        theme.warning
    } else {
        theme.dim
    };
    (parts, style)
}

/// ` clocks: power cap, thermal ` with slowdowns in the critical colour; empty when
/// nothing holds the clocks or the source cannot tell.
fn throttle_spans(g: &GpuReading, theme: &Theme) -> Vec<Span<'static>> {
    let mut throttle = Vec::new();
    if let Some(reasons) = g.throttle_reasons.as_ref().filter(|r| !r.is_empty()) {
        throttle.push(Span::styled(" clocks: ", theme.dim));
        for (i, name) in reasons.iter().enumerate() {
            let (label, kind) = throttle_label(name);
            let style = match kind {
                ThrottleKind::Benign => theme.dim,
                ThrottleKind::PowerCap => theme.text,
                ThrottleKind::Slowdown => theme.critical,
            };
            if i > 0 {
                throttle.push(Span::styled(", ", theme.dim));
            }
            throttle.push(Span::styled(label.to_string(), style));
        }
        throttle.push(Span::raw(" "));
    }
    throttle
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_wrap_whole_at_the_width() {
        let parts = vec![
            "PCIe 5×16 ↑1.2G/s ↓3.4G/s".to_string(),
            "enc 0% dec 0%".into(),
            "ECC 0".into(),
        ];
        assert_eq!(
            wrap_parts(&parts, 41),
            vec!["PCIe 5×16 ↑1.2G/s ↓3.4G/s · enc 0% dec 0%", "ECC 0"]
        );
        assert_eq!(wrap_parts(&parts, 200).len(), 1);
    }

    #[test]
    fn owners_that_do_not_fit_are_counted_not_cut() {
        let entries = vec![
            Span::raw("slurm 48121 (alice) 64.0G"),
            Span::raw("erin 2.5G"),
            Span::raw("frank 1.0G"),
        ];
        let text: String = whole_owners(entries.clone(), 32, Style::default())
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(text, "slurm 48121 (alice) 64.0G +2");
        let text: String = whole_owners(entries, 100, Style::default())
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(text, "slurm 48121 (alice) 64.0G · erin 2.5G · frank 1.0G");
    }
}
