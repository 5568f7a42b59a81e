//! What the screen says about one selected process beyond its table row: the footer's
//! detail line (its job, and the GPU number the job itself uses — "job GPU 0 = GPU 3") and
//! the environment popup (`e`). Reads the row and the GPU list only; the environment was
//! read (filtered) by `procinfo` with the rest of the process's facts.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Theme;
use super::format::truncate;
use crate::model::procs::ProcRow;
use crate::model::visible::{self, Pinning};
use crate::reading::workload::ProcEnv;
use crate::reading::{GpuReading, Visibility};
use crate::state::State;

/// "job GPU 1 = GPU 3" when the process numbers its GPU differently from the host (or
/// "job GPU 3?" when CUDA's order may differ); `None` when it is the same or unknown.
pub fn job_gpu(row: &ProcRow, gpus: &[GpuReading]) -> Option<String> {
    let env = row.context.env.as_deref();
    let gpu = gpus.iter().find(|g| g.id == row.key.gpu)?;
    let pin = visible::pinning_for(env, gpu.vendor);
    let index = visible::job_index(&pin, env, gpu, gpus)?;
    let doubt = if index.certain { "" } else { "?" };
    (index.local != gpu.index || !index.certain)
        .then(|| format!("job GPU {}{doubt} = GPU {}", index.local, gpu.index))
}

/// The footer's line for the selected process.
pub fn line(row: &ProcRow, gpus: &[GpuReading]) -> String {
    if row.visibility != Visibility::Visible {
        return format!("PID {} {}", row.key.pid, row.command);
    }
    let mut parts = vec![format!(
        "PID {} {}",
        row.key.pid,
        row.user.as_deref().unwrap_or("?")
    )];
    parts.extend(row.job.clone());
    parts.extend(job_gpu(row, gpus));
    let vendor = gpus
        .iter()
        .find(|g| g.id == row.key.gpu)
        .and_then(|g| g.vendor);
    match visible::pinning_for(row.context.env.as_deref(), vendor) {
        Pinning::Unset => parts.push(visible::unset_words(vendor).into()),
        Pinning::Set { variable, entries } => {
            parts.push(format!("{variable}={}", entries.join(",")))
        }
        Pinning::Unknown => {}
    }
    parts.join(" · ")
}

/// The environment popup over the whole screen.
pub fn draw_env(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let row = state.model.procs().selected_row();
    let lines = match row {
        None => vec![Line::raw(" Select a process first (↑/↓), then press e.")],
        Some(row) => env_lines(row, theme),
    };
    let width = 90.min(area.width);
    let height = (lines.len() as u16 + 2).min(area.height);
    let popup = crate::layout::centered(area, width, height);
    frame.render_widget(Clear, popup);
    let title = match row {
        Some(r) => format!(" Environment of PID {} (e or Esc to close) ", r.key.pid),
        None => " Environment (e or Esc to close) ".into(),
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = width.saturating_sub(3) as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            if text.chars().count() > inner {
                Line::styled(truncate(&text, inner), l.style)
            } else {
                l
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

fn env_lines<'a>(row: &ProcRow, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::styled(format!(" {}", row.command), theme.title)];
    if let Some(job) = &row.job {
        lines.push(Line::raw(format!(" runs in: {job}")));
    }
    lines.push(Line::raw(""));
    match row.context.env.as_deref() {
        None => lines.push(Line::styled(
            " not readable: another user's process (its environment is only shown to \
             its owner and root)",
            theme.dim,
        )),
        Some(env) if env.vars().is_empty() => lines.push(Line::styled(
            format!(" no {}* variables set", ProcEnv::PREFIXES.join("*, ")),
            theme.warning,
        )),
        Some(env) => lines.extend(env.vars().iter().map(|(k, v)| {
            Line::from(vec![
                Span::styled(format!(" {k}"), theme.title),
                Span::raw(format!("={v}")),
            ])
        })),
    }
    lines
}
