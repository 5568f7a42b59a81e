//! A MIG instance's line under its GPU (inside a full panel, and under the GPU's line in
//! compact mode): profile, GPU/compute instance ids, a memory bar with used/total, util
//! (`N/A` where the source cannot tell, never 0), processes, the shortened `MIG-` UUID and
//! who holds it. Reads only the `MigReading` and the model's holders.

use ratatui::text::{Line, Span};

use super::fit_spans;
use crate::model::mig::short_uuid;
use crate::model::owners::instance_owners;
use crate::present::format::{bar, gib, or_na};
use crate::reading::mig::MigReading;
use crate::state::State;
use crate::ui::Theme;

/// Panels narrower than this leave the UUID out (the profile and ids say which instance;
/// `pick` and the JSON give the whole UUID).
const UUID_MIN_WIDTH: usize = 76;

/// Used memory as a share of the instance's total, when both are known.
pub fn memory_ratio(m: &MigReading) -> Option<f64> {
    match (m.memory_used, m.memory_total) {
        (Some(u), Some(t)) if t.0 > 0 => Some(u.0 as f64 / t.0 as f64),
        _ => None,
    }
}

/// `3g.40gb gi1 ci0 ▕bar▏ 20.0/40.0G util N/A 1 proc MIG-4b6f1c2d · alice 20.0G`.
fn spans(
    state: &State,
    m: &MigReading,
    bar_w: usize,
    width: usize,
    theme: &Theme,
) -> Vec<Span<'static>> {
    let ratio = memory_ratio(m);
    let procs = m.pids.len();
    let mut out = vec![
        Span::styled(
            format!("{:<8} ", m.profile.as_deref().unwrap_or("MIG")),
            theme.title,
        ),
        Span::styled(
            format!(
                "gi{} ci{} ",
                or_na(m.gpu_instance_id, |i| i.to_string()),
                or_na(m.compute_instance_id, |i| i.to_string())
            ),
            theme.dim,
        ),
        Span::styled(bar(ratio, bar_w), theme.level(ratio)),
        Span::styled(
            format!(
                " {}/{}G ",
                or_na(m.memory_used, gib),
                or_na(m.memory_total, gib)
            ),
            theme.level(ratio),
        ),
        Span::raw(format!("util {} ", or_na(m.util, |u| format!("{}%", u.0)))),
        Span::raw(format!(
            "{procs} proc{} ",
            if procs == 1 { "" } else { "s" }
        )),
    ];
    if width >= UUID_MIN_WIDTH {
        out.push(Span::styled(format!("{} ", short_uuid(&m.id)), theme.dim));
    }
    let owners = instance_owners(&state.model, m);
    if owners.is_empty() && procs == 0 {
        out.push(Span::styled("free", theme.good));
    }
    for (who, vram) in owners {
        out.push(Span::styled("· ", theme.dim));
        let own = state.config.current_user.as_deref() == Some(who.as_str());
        let style = if own { theme.own_process } else { theme.text };
        out.push(Span::styled(
            format!("{who} {} ", crate::present::format::total_short(*vram)),
            style,
        ));
    }
    out
}

/// The line inside a full panel; `last` draws the tree's corner instead of its tee.
pub fn panel_line(
    state: &State,
    m: &MigReading,
    last: bool,
    width: usize,
    theme: &Theme,
) -> Line<'static> {
    let mut line = vec![Span::styled(if last { "└ " } else { "├ " }, theme.dim)];
    line.extend(spans(state, m, 8, width, theme));
    Line::from(fit_spans(line, width))
}

/// `+3 more MIG instances` when the panel has no room for every instance line.
pub fn more_line(hidden: usize, theme: &Theme) -> Line<'static> {
    Line::styled(
        format!(
            "└ +{hidden} more MIG instance{}",
            if hidden == 1 { "" } else { "s" }
        ),
        theme.dim,
    )
}

/// The line under a GPU's compact line: the corner under its label, then the instance.
pub fn compact_line(
    state: &State,
    m: &MigReading,
    label_w: usize,
    bar_w: usize,
    width: u16,
    theme: &Theme,
) -> Line<'static> {
    let width = width as usize;
    let mut line = vec![Span::styled(format!("{:>label_w$} ", "└"), theme.dim)];
    line.extend(spans(state, m, bar_w, width, theme));
    Line::from(fit_spans(line, width))
}
