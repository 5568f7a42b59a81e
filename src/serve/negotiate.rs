//! What a scraper asked for: the OpenMetrics text format or 0.0.4 (`Accept`), and gzip or not
//! (`Accept-Encoding`), with q-values honoured as RFC 9110 has them; and the gzip itself.
//! Pure, apart from compressing.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// The text format of a `/metrics` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`, for anyone who does not ask for OpenMetrics.
    Text,
    OpenMetrics,
}

/// `(media range or coding, q)` for each element of an `Accept`-style header.
fn ranges(header: &str) -> impl Iterator<Item = (String, f32)> + '_ {
    header.split(',').filter_map(|part| {
        let mut params = part.split(';');
        let name = params.next()?.trim().to_ascii_lowercase();
        if name.is_empty() {
            return None;
        }
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        Some((name, q))
    })
}

/// OpenMetrics when the scraper prefers it (as Prometheus does when it may use it) over
/// plain text; 0.0.4 otherwise, including for no `Accept` at all.
pub fn format(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut om, mut text) = (0.0f32, 0.0f32);
    for (range, q) in ranges(accept) {
        match range.as_str() {
            "application/openmetrics-text" => om = om.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if om > 0.0 && om >= text {
        Format::OpenMetrics
    } else {
        Format::Text
    }
}

/// Whether `Accept-Encoding` allows gzip (`gzip`, `x-gzip` or `*`, with q > 0).
pub fn wants_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(header) = accept_encoding else {
        return false;
    };
    let mut gzip: Option<f32> = None;
    let mut any: Option<f32> = None;
    for (coding, q) in ranges(header) {
        match coding.as_str() {
            "gzip" | "x-gzip" => gzip = Some(q),
            "*" => any = Some(q),
            _ => {}
        }
    }
    gzip.or(any).is_some_and(|q| q > 0.0)
}

/// The body gzipped at the fast level: scrape bodies are text that compresses ~10× anyway.
pub fn gzip(body: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 8), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_own_accept_header_gets_openmetrics() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(format(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            format(Some("application/openmetrics-text; version=1.0.0")),
            Format::OpenMetrics
        );
    }

    #[test]
    fn anything_else_gets_text() {
        assert_eq!(format(None), Format::Text);
        assert_eq!(format(Some("*/*")), Format::Text);
        assert_eq!(format(Some("text/plain;version=0.0.4")), Format::Text);
        assert_eq!(
            format(Some("text/plain,application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(
            format(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
    }

    #[test]
    fn gzip_is_used_only_when_allowed() {
        assert!(wants_gzip(Some("gzip")));
        assert!(wants_gzip(Some("deflate, gzip;q=0.5")));
        assert!(wants_gzip(Some("*")));
        assert!(!wants_gzip(Some("gzip;q=0")));
        assert!(!wants_gzip(Some("br, deflate")));
        assert!(!wants_gzip(Some("*, gzip;q=0")));
        assert!(!wants_gzip(None));
    }

    #[test]
    fn gzip_round_trips() {
        let body = b"gpuwatch_gpu_info{gpu=\"0\"} 1\n".repeat(100);
        let packed = gzip(&body);
        assert!(packed.len() < body.len() / 5, "{}", packed.len());
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed[..]), &mut out)
            .unwrap();
        assert_eq!(out, body);
    }
}
