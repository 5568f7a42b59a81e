//! nvidia-smi's CSV: the `--format` options, the header line and the rows, byte for byte as
//! nvidia-smi writes them (`, ` between cells, units in the header and after each value,
//! `[N/A]` for what the source could not tell, no quoting), plus gpuwatch's `quoted`
//! (RFC 4180) for new scripts. Text only; knows nothing of fields or sources.

use std::borrow::Cow;

use crate::text_safe::escape;

/// What nvidia-smi writes for a value it could not read.
pub const NA: &str = "[N/A]";

/// `--format=csv[,noheader][,nounits][,quoted]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub header: bool,
    pub units: bool,
    /// RFC 4180: cells joined by `,` alone, a cell holding `,`, `"` or an edge space quoted
    /// with its `"` doubled. nvidia-smi never quotes, so a process name with a comma breaks
    /// its rows; this keeps them whole.
    pub quoted: bool,
}

impl Format {
    pub const CSV: Format = Format {
        header: true,
        units: true,
        quoted: false,
    };

    /// Parses `--format`'s value; the error names the option that is wrong.
    pub fn parse(text: &str) -> Result<Format, String> {
        let mut parts = text.split(',').map(str::trim);
        if parts.next() != Some("csv") {
            return Err(format!(
                "{text:?} is not a format: it starts with csv, then any of noheader, nounits, quoted (e.g. csv,noheader,nounits)"
            ));
        }
        let mut f = Format::CSV;
        for part in parts {
            match part {
                "noheader" => f.header = false,
                "nounits" => f.units = false,
                "quoted" => f.quoted = true,
                other => {
                    return Err(format!(
                        "{other:?} is not a csv option (noheader, nounits, quoted) in {text:?}"
                    ));
                }
            }
        }
        Ok(f)
    }
}

/// A column: its field's nvidia-smi name and unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub unit: Option<&'static str>,
}

/// The header line (with its newline): `index, memory.used [MiB]`. nvidia-smi keeps the
/// units in the header under `nounits` too.
pub fn header(columns: &[Column], f: Format) -> String {
    let cells = columns.iter().map(|c| match c.unit {
        Some(unit) => Cow::Owned(format!("{} [{unit}]", c.name)),
        None => Cow::Borrowed(c.name),
    });
    line(cells, f)
}

/// One row (with its newline) of values without their units (`None`: `[N/A]`), one per
/// column.
pub fn row(columns: &[Column], values: &[Option<String>], f: Format) -> String {
    let cells = columns.iter().zip(values).map(|(c, v)| match (v, c.unit) {
        (None, _) => Cow::Borrowed(NA),
        (Some(v), Some(unit)) if f.units => Cow::Owned(format!("{v} {unit}")),
        (Some(v), _) => Cow::Borrowed(v.as_str()),
    });
    line(cells, f)
}

fn line<'a>(cells: impl Iterator<Item = Cow<'a, str>>, f: Format) -> String {
    // Escaped whatever the format: a process name is someone else's text, and a newline
    // in it would forge a row.
    let cells: Vec<String> = cells
        .map(|c| {
            let c = escape(&c).into_owned();
            if f.quoted { quote(&c) } else { c }
        })
        .collect();
    let mut out = cells.join(if f.quoted { "," } else { ", " });
    out.push('\n');
    out
}

/// RFC 4180's quoting of one cell, only where it is needed.
fn quote(cell: &str) -> String {
    let needs = cell.contains([',', '"']) || cell.starts_with(' ') || cell.ends_with(' ');
    if needs {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USED: Column = Column {
        name: "memory.used",
        unit: Some("MiB"),
    };
    const NAME: Column = Column {
        name: "process_name",
        unit: None,
    };

    #[test]
    fn formats_parse_and_refuse_what_they_do_not_know() {
        assert_eq!(Format::parse("csv"), Ok(Format::CSV));
        let f = Format::parse("csv,noheader,nounits").unwrap();
        assert!(!f.header && !f.units && !f.quoted);
        assert!(Format::parse("csv,quoted").unwrap().quoted);
        assert!(
            Format::parse("json")
                .unwrap_err()
                .contains("starts with csv")
        );
        assert!(
            Format::parse("csv,nohead")
                .unwrap_err()
                .contains("\"nohead\"")
        );
    }

    #[test]
    fn header_and_rows_are_nvidia_smis_shape() {
        let cols = [NAME, USED];
        assert_eq!(
            header(&cols, Format::CSV),
            "process_name, memory.used [MiB]\n"
        );
        let nounits = Format::parse("csv,nounits").unwrap();
        assert_eq!(header(&cols, nounits), "process_name, memory.used [MiB]\n");
        let v = [Some("python3".to_string()), Some("58071".to_string())];
        assert_eq!(row(&cols, &v, Format::CSV), "python3, 58071 MiB\n");
        assert_eq!(row(&cols, &v, nounits), "python3, 58071\n");
        assert_eq!(row(&cols, &[None, None], Format::CSV), "[N/A], [N/A]\n");
    }

    #[test]
    fn quoted_keeps_a_comma_in_one_cell_and_plain_keeps_nvidia_smis_bytes() {
        let cols = [NAME, USED];
        let v = [
            Some("chrome --type=gpu-process,x \"y\"".to_string()),
            Some("1".to_string()),
        ];
        let quoted = Format::parse("csv,quoted").unwrap();
        assert_eq!(
            row(&cols, &v, quoted),
            "\"chrome --type=gpu-process,x \"\"y\"\"\",1 MiB\n"
        );
        assert_eq!(
            row(&cols, &v, Format::CSV),
            "chrome --type=gpu-process,x \"y\", 1 MiB\n"
        );
        let evil = [Some("a\nb".to_string()), None];
        assert_eq!(row(&cols, &evil, Format::CSV), "a\\nb, [N/A]\n");
    }
}
