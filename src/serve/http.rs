//! The exporter's HTTP side: routes and handlers over the latest pre-rendered documents.
//! Handlers only clone what the sampler loop published; they never poll the GPUs, take no
//! lock the sampler waits on, and render nothing themselves.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use crate::state::State;
use crate::ui::text::warning_line;
use crate::wire;

use super::metrics::{self, MetricOptions};
use super::negotiate::{self, Format};
use super::stats::Stats;
use super::text::{self, OPENMETRICS_EOF, Texts};

/// What one sample produced, rendered once and shared by every scrape until the next.
#[derive(Debug, Clone)]
pub struct Published {
    /// A sample has been applied (`/-/ready` says 200).
    pub ready: bool,
    /// The 0.0.4 text.
    pub metrics: Bytes,
    /// The same in OpenMetrics text, without `# EOF` (the self-metrics go after it).
    pub openmetrics: Bytes,
    /// The `--once --json` document (redacted with `--redact`); `None` until the first sample.
    pub snapshot: Option<Bytes>,
    /// When this was published; `None` before the first sample.
    pub at: Option<Instant>,
}

impl Published {
    /// `extra`: more families appended to the metrics in both formats (the alert counters).
    pub fn render(state: &State, options: MetricOptions, extra: &Texts) -> Self {
        // Not ready while the poll under way is overdue: the readings are going stale.
        let ready = state.model.now().is_some() && state.model.stalled().is_none();
        let texts = metrics::render_both(state, options);
        let snapshot = ready.then(|| {
            let mut doc = wire::Snapshot::of(&state.model, warning_line);
            if options.redact {
                super::redact::redact(&mut doc);
            }
            doc.to_json().into()
        });
        Published {
            ready,
            metrics: (texts.text + &extra.text).into(),
            openmetrics: (texts.openmetrics + &extra.openmetrics).into(),
            snapshot,
            at: ready.then(Instant::now),
        }
    }
}

/// The latest published documents.
pub type Latest = watch::Receiver<Arc<Published>>;

/// What every handler reads.
#[derive(Clone)]
pub struct Shared {
    pub latest: Latest,
    pub stats: Arc<Stats>,
}

/// The routes, the metrics at `telemetry` (`--web.telemetry-path`, checked not to be
/// another route's).
pub fn router(shared: Shared, telemetry: &str) -> Router {
    // Relative links, so the page also works behind a proxy's path prefix.
    let index = INDEX
        .replace("{LINK}", telemetry.trim_start_matches('/'))
        .replace("{TELEMETRY}", telemetry);
    Router::new()
        .route(
            "/",
            get(move || {
                let page = index.clone();
                async move { Html(page) }
            }),
        )
        .route(telemetry, get(metrics_page))
        .route("/api/v1/snapshot", get(snapshot))
        .route("/-/ready", get(ready))
        .route("/-/healthy", get(healthy))
        .with_state(shared)
}

/// The current documents; the borrow ends at once, so the sampler loop never waits on us.
fn current(latest: &Latest) -> Arc<Published> {
    latest.borrow().clone()
}

const WAITING: &str = "waiting for the first sample\n";

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The sample's documents plus the self-metrics of this moment, in the format asked for.
async fn metrics_page(Extract(shared): Extract<Shared>, headers: HeaderMap) -> Response {
    let format = negotiate::format(header_text(&headers, header::ACCEPT));
    match format {
        Format::Text => shared.stats.scrapes_text.inc(),
        Format::OpenMetrics => shared.stats.scrapes_openmetrics.inc(),
    }
    let published = current(&shared.latest);
    let own = shared.stats.render(published.at);
    let (content_type, body) = match format {
        Format::Text => (
            text::CONTENT_TYPE,
            [&published.metrics[..], own.text.as_bytes()].concat(),
        ),
        Format::OpenMetrics => (
            text::OPENMETRICS_CONTENT_TYPE,
            [
                &published.openmetrics[..],
                own.openmetrics.as_bytes(),
                OPENMETRICS_EOF.as_bytes(),
            ]
            .concat(),
        ),
    };
    encoded(&headers, content_type, body)
}

/// `body` with its type, gzipped when the client allows it.
fn encoded(request: &HeaderMap, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = if negotiate::wants_gzip(header_text(request, header::ACCEPT_ENCODING)) {
        let mut r = negotiate::gzip(&body).into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        body.into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Caches must keep the gzipped and plain answers apart.
    h.insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    response
}

async fn snapshot(Extract(shared): Extract<Shared>, headers: HeaderMap) -> Response {
    match current(&shared.latest).snapshot.clone() {
        Some(json) => encoded(&headers, "application/json", json.to_vec()),
        None => (StatusCode::SERVICE_UNAVAILABLE, WAITING).into_response(),
    }
}

async fn ready(Extract(shared): Extract<Shared>) -> Response {
    if current(&shared.latest).ready {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, WAITING).into_response()
    }
}

/// Up and answering, ready or not (Prometheus's and the exporters' liveness page): a
/// liveness probe must not restart an exporter that waits for a slow first sample.
async fn healthy() -> &'static str {
    "healthy\n"
}

const INDEX: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>gpuwatch exporter</title></head>
<body>
<h1>gpuwatch exporter</h1>
<ul>
<li><a href="{LINK}">{TELEMETRY}</a>: Prometheus metrics (text format 0.0.4, or OpenMetrics when asked)</li>
<li><a href="api/v1/snapshot">/api/v1/snapshot</a>: the <code>gpuwatch --once --json</code> document</li>
<li><a href="-/ready">/-/ready</a>: 200 once the first sample is in</li>
<li><a href="-/healthy">/-/healthy</a>: 200 while the exporter answers</li>
</ul>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ViewConfig;

    #[test]
    fn before_the_first_sample_it_is_not_ready_and_has_no_snapshot() {
        let waiting = Published::render(
            &State::new(ViewConfig::default()),
            MetricOptions::default(),
            &Texts::default(),
        );
        assert!(!waiting.ready);
        assert!(waiting.snapshot.is_none() && waiting.at.is_none());
        assert!(waiting.metrics.starts_with(b"# HELP gpuwatch_build_info "));
    }
}
