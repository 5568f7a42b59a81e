//! Styles for every role on screen, in three flavours: the 16 ANSI colours for a dark
//! background, the same for a light one, and monochrome (`NO_COLOR`, `--no-color`) where
//! warnings still stand out through bold and reverse video.

use ratatui::style::{Color, Modifier, Style};

use crate::model::warnings::Severity;
use crate::present::ThemeName;

#[derive(Debug, Clone)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub title: Style,
    pub header_bar: Style,
    pub good: Style,
    pub warning: Style,
    pub critical: Style,
    /// The label in front of a warning line (`CRIT`, `WARN`).
    pub warning_badge: Style,
    pub critical_badge: Style,
    pub selected: Style,
    /// The focused GPU's panel.
    pub focus: Style,
    pub own_process: Style,
    pub table_header: Style,
    pub sorted_column: Style,
    pub spark_temp: Style,
    pub spark_power: Style,
    pub spark_util: Style,
}

impl Theme {
    pub fn new(color: bool) -> Theme {
        if color { Self::ansi() } else { Self::mono() }
    }

    pub fn named(name: ThemeName) -> Theme {
        match name {
            ThemeName::Dark => Self::ansi(),
            ThemeName::Light => Self::light(),
            ThemeName::Mono => Self::mono(),
        }
    }

    fn ansi() -> Theme {
        let fg = |c| Style::new().fg(c);
        Theme {
            text: Style::new(),
            dim: fg(Color::DarkGray),
            title: Style::new().add_modifier(Modifier::BOLD),
            header_bar: Style::new().fg(Color::Black).bg(Color::Cyan),
            good: fg(Color::Green),
            warning: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            critical: fg(Color::LightRed).add_modifier(Modifier::BOLD),
            warning_badge: Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            critical_badge: Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            focus: fg(Color::LightCyan).add_modifier(Modifier::BOLD),
            own_process: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            table_header: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            sorted_column: fg(Color::Cyan).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            spark_temp: fg(Color::Red),
            spark_power: fg(Color::Yellow),
            spark_util: fg(Color::Green),
        }
    }

    /// The same roles on a white background: dark text, and no yellow or cyan text (both
    /// wash out on white); yellow survives only as a background behind black text.
    fn light() -> Theme {
        let fg = |c| Style::new().fg(c);
        Theme {
            text: fg(Color::Black),
            dim: fg(Color::DarkGray),
            title: fg(Color::Black).add_modifier(Modifier::BOLD),
            header_bar: Style::new().fg(Color::White).bg(Color::Blue),
            good: fg(Color::Green),
            warning: fg(Color::Magenta).add_modifier(Modifier::BOLD),
            critical: fg(Color::Red).add_modifier(Modifier::BOLD),
            warning_badge: Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            critical_badge: Style::new()
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            own_process: fg(Color::Blue).add_modifier(Modifier::BOLD),
            focus: fg(Color::Blue).add_modifier(Modifier::BOLD),
            table_header: fg(Color::Black).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            sorted_column: fg(Color::Blue).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            spark_temp: fg(Color::Red),
            spark_power: fg(Color::Magenta),
            spark_util: fg(Color::Green),
        }
    }

    fn mono() -> Theme {
        let plain = Style::new();
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let reverse = Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD);
        Theme {
            text: plain,
            dim: plain,
            title: bold,
            header_bar: Style::new().add_modifier(Modifier::REVERSED),
            good: plain,
            warning: bold,
            critical: reverse,
            // Nothing blinks: NO_COLOR users asked for a quiet screen, and a blinking badge
            // in a pane left open all day is the opposite. Critical is reverse video and
            // bold; a warning's badge is bold and underlined, so the two still differ.
            warning_badge: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            critical_badge: reverse,
            selected: Style::new().add_modifier(Modifier::REVERSED),
            focus: bold,
            own_process: bold,
            table_header: Style::new().add_modifier(Modifier::UNDERLINED),
            sorted_column: Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
            spark_temp: plain,
            spark_power: plain,
            spark_util: plain,
        }
    }

    /// Style for something at `severity`, or `fallback` when nothing is wrong.
    pub fn severity(&self, severity: Option<Severity>, fallback: Style) -> Style {
        match severity {
            Some(Severity::Critical) => self.critical,
            Some(Severity::Warning) => self.warning,
            None => fallback,
        }
    }

    /// Colour for a fill level: green, yellow from 90 %, red from 97 %.
    pub fn level(&self, ratio: Option<f64>) -> Style {
        match ratio {
            Some(r) if r >= 0.97 => self.critical,
            Some(r) if r >= 0.90 => self.warning,
            Some(_) => self.good,
            None => self.dim,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn light_text_is_dark_and_never_yellow_or_cyan() {
        let light = Theme::named(ThemeName::Light);
        assert_eq!(light.text.fg, Some(Color::Black));
        for style in [
            light.text,
            light.dim,
            light.title,
            light.good,
            light.warning,
            light.critical,
            light.own_process,
            light.focus,
            light.table_header,
            light.sorted_column,
            light.spark_temp,
            light.spark_power,
            light.spark_util,
        ] {
            assert!(
                !matches!(
                    style.fg,
                    Some(
                        Color::Yellow
                            | Color::LightYellow
                            | Color::Cyan
                            | Color::LightCyan
                            | Color::White
                    )
                ),
                "{style:?} washes out on white"
            );
        }
        // Warnings stay distinct from critical alerts and from plain text.
        assert_ne!(light.warning, light.critical);
        assert_ne!(light.warning.fg, light.text.fg);
    }
}
