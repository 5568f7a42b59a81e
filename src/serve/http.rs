//! The exporter's HTTP side: routes and handlers over the latest pre-rendered documents.
//! Handlers only clone what the sampler loop published; they never poll the GPUs, take no
//! lock the sampler waits on, and render nothing themselves.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as Extract;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use crate::headless;
use crate::state::State;

use super::metrics::{self, MetricOptions};
use super::text;

/// What one sample produced, rendered once and shared by every scrape until the next.
#[derive(Debug, Clone)]
pub struct Published {
    /// A sample has been applied (`/-/ready` says 200).
    pub ready: bool,
    pub metrics: Bytes,
    /// The `--once --json` document; `None` until the first sample.
    pub snapshot: Option<Bytes>,
}

impl Published {
    /// `extra`: more families appended to the metrics (the alert counters).
    pub fn render(state: &State, options: MetricOptions, extra: &str) -> Self {
        // Not ready while the poll under way is overdue: the readings are going stale.
        let ready = state.model.now().is_some() && state.model.stalled().is_none();
        Published {
            ready,
            metrics: (metrics::render(state, options) + extra).into(),
            snapshot: ready.then(|| headless::render_json(state).into()),
        }
    }
}

/// The latest published documents.
pub type Latest = watch::Receiver<Arc<Published>>;

pub fn router(latest: Latest) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/metrics", get(metrics_page))
        .route("/api/v1/snapshot", get(snapshot))
        .route("/-/ready", get(ready))
        .with_state(latest)
}

/// The current documents; the borrow ends at once, so the sampler loop never waits on us.
fn current(latest: &Latest) -> Arc<Published> {
    latest.borrow().clone()
}

const WAITING: &str = "waiting for the first sample\n";

async fn metrics_page(Extract(latest): Extract<Latest>) -> Response {
    let body = current(&latest).metrics.clone();
    ([(header::CONTENT_TYPE, text::CONTENT_TYPE)], body).into_response()
}

async fn snapshot(Extract(latest): Extract<Latest>) -> Response {
    match current(&latest).snapshot.clone() {
        Some(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, WAITING).into_response(),
    }
}

async fn ready(Extract(latest): Extract<Latest>) -> Response {
    if current(&latest).ready {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, WAITING).into_response()
    }
}

async fn index() -> Html<&'static str> {
    Html(INDEX)
}

const INDEX: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>gpuwatch exporter</title></head>
<body>
<h1>gpuwatch exporter</h1>
<ul>
<li><a href="metrics">/metrics</a>: Prometheus metrics (text format 0.0.4)</li>
<li><a href="api/v1/snapshot">/api/v1/snapshot</a>: the <code>gpuwatch --once --json</code> document</li>
<li><a href="-/ready">/-/ready</a>: 200 once the first sample is in</li>
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
            "",
        );
        assert!(!waiting.ready);
        assert!(waiting.snapshot.is_none());
        assert!(waiting.metrics.starts_with(b"# HELP gpuwatch_build_info "));
    }
}
