//! The Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 text, written by hand and
//! at once (the samples are the same; headers and escaping differ): metric families with
//! HELP, TYPE and samples, escaped as each format requires. Knows nothing of GPUs.
//!
//! Why not the prometheus-client crate: it encodes OpenMetrics 1.0 only (a `# EOF` line,
//! counters renamed to `<name>_total` under a `<name>` TYPE line, `# UNIT` lines) and wants
//! metrics registered once and updated in place. We render a fresh snapshot per sample and
//! were asked for the 0.0.4 format with exact names, which this ~100-line writer gives.

use std::fmt::Write;

/// The Content-Type of the 0.0.4 text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The Content-Type of OpenMetrics text 1.0.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The line that ends an OpenMetrics document (the writer leaves it to whoever ends it).
pub const OPENMETRICS_EOF: &str = "# EOF\n";

/// A family's type: the field table's, so a row's type is written once.
pub use crate::reading::fields::MetricKind as Kind;

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// A sample's labels, in the order they are written.
pub type Labels = Vec<(&'static str, String)>;

/// One family: its name, type and help line.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

/// A document being written in both formats; `finish` returns the 0.0.4 text, `finish_both`
/// both (the OpenMetrics one without its `# EOF`, so more can be appended).
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
    openmetrics: String,
}

/// Both texts of one document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Texts {
    pub text: String,
    /// Without the closing `# EOF`.
    pub openmetrics: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes one family with its samples. A family with no samples writes nothing at all:
    /// an unknown reading is absent, never a zero or a bare header.
    pub fn family(&mut self, family: Family, samples: impl IntoIterator<Item = (Labels, f64)>) {
        let mut header_written = false;
        for (labels, value) in samples {
            // NaN or infinity would only come from a broken reading: treat it as unknown.
            if !value.is_finite() {
                continue;
            }
            if !header_written {
                self.header(family);
                header_written = true;
            }
            self.sample(family.name, &labels, value);
        }
    }

    pub fn finish(self) -> String {
        self.out
    }

    pub fn finish_both(self) -> Texts {
        Texts {
            text: self.out,
            openmetrics: self.openmetrics,
        }
    }

    fn header(&mut self, family: Family) {
        let _ = writeln!(
            self.out,
            "# HELP {} {}",
            family.name,
            escape_help(family.help)
        );
        let _ = writeln!(self.out, "# TYPE {} {}", family.name, family.kind.as_str());
        let (name, kind) = openmetrics_family(family);
        let help = escape_help(family.help).replace('"', "\\\"");
        let _ = writeln!(self.openmetrics, "# HELP {name} {help}");
        let _ = writeln!(self.openmetrics, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &Labels, value: f64) {
        let start = self.out.len();
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (key, val)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{key}=\"{}\"", escape_label(val));
            }
            self.out.push('}');
        }
        // Rust prints finite floats in plain decimal (never exponent form) and whole
        // numbers without a fraction, both of which either format accepts.
        let _ = writeln!(self.out, " {value}");
        // A sample line is the same in both formats.
        let line = &self.out[start..];
        self.openmetrics.push_str(line);
    }
}

/// OpenMetrics names a counter's family without the `_total` its samples carry; a counter
/// whose name lacks it (dcgm-exporter's energy counter) cannot be an OpenMetrics counter, so
/// it is `unknown` there, which Prometheus stores the same way.
fn openmetrics_family(family: Family) -> (&'static str, &'static str) {
    match family.kind {
        Kind::Gauge => (family.name, "gauge"),
        Kind::Counter => match family.name.strip_suffix("_total") {
            Some(base) => (base, "counter"),
            None => (family.name, "unknown"),
        },
    }
}

/// Label values escape backslash, double quote and line feed.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escapes backslash and line feed (quotes stay as they are).
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMP: Family = Family {
        name: "t_celsius",
        kind: Kind::Gauge,
        help: "Temp.",
    };

    #[test]
    fn family_writes_help_type_and_samples() {
        let mut e = Exposition::new();
        e.family(TEMP, [(vec![("gpu", "0".to_string())], 61.0)]);
        e.family(
            Family {
                name: "e_joules_total",
                kind: Kind::Counter,
                help: "Energy.",
            },
            [(Labels::new(), 1.5)],
        );
        assert_eq!(
            e.finish(),
            "# HELP t_celsius Temp.\n# TYPE t_celsius gauge\nt_celsius{gpu=\"0\"} 61\n\
             # HELP e_joules_total Energy.\n# TYPE e_joules_total counter\ne_joules_total 1.5\n"
        );
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_escapes_quotes_in_help() {
        let mut e = Exposition::new();
        let counter = |name| Family {
            name,
            kind: Kind::Counter,
            help: "Energy \"so far\".",
        };
        e.family(counter("e_joules_total"), [(Labels::new(), 1.5)]);
        e.family(counter("DCGM_E"), [(Labels::new(), 2.0)]);
        e.family(TEMP, [(vec![("gpu", "0".to_string())], 61.0)]);
        let both = e.finish_both();
        assert_eq!(
            both.openmetrics,
            "# HELP e_joules Energy \\\"so far\\\".\n# TYPE e_joules counter\ne_joules_total 1.5\n\
             # HELP DCGM_E Energy \\\"so far\\\".\n# TYPE DCGM_E unknown\nDCGM_E 2\n\
             # HELP t_celsius Temp.\n# TYPE t_celsius gauge\nt_celsius{gpu=\"0\"} 61\n"
        );
        assert!(both.text.contains("# TYPE e_joules_total counter\n"));
        assert!(
            both.text
                .contains("# HELP e_joules_total Energy \"so far\".\n")
        );
    }

    #[test]
    fn a_family_without_samples_writes_nothing() {
        let mut e = Exposition::new();
        e.family(TEMP, std::iter::empty());
        e.family(TEMP, [(Labels::new(), f64::NAN)]);
        assert_eq!(e.finish(), "");
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_help("x\\y\nz \"q\""), "x\\\\y\\nz \"q\"");
    }

    #[test]
    fn large_and_fractional_values_print_plainly() {
        let mut e = Exposition::new();
        e.family(
            TEMP,
            [(Labels::new(), 85_899_345_920.0), (Labels::new(), 0.37)],
        );
        let text = e.finish();
        assert!(text.contains("t_celsius 85899345920\n"), "{text}");
        assert!(text.contains("t_celsius 0.37\n"), "{text}");
    }
}
