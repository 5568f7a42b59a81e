//! Rows of the settings table for the exporter, the Prometheus source and alerts (the rest
//! are in `rows.rs`, which says how to add one).

use super::DEFAULT_LISTEN;
use super::rows::{dur, none, quoted};
use super::serve::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PROCESS_METRICS_LIMIT,
};
use super::table::{Setting, Value};
use crate::alert_settings::rules;

use Value::{Default, Switch, Unset};

/// `gpuwatch serve`'s, `[prometheus]` and `[alerts]`, in `config init` file order.
pub(super) const SERVE_ALERTS: &[Setting] = &[
    Setting::new(
        "listen",
        "serve.listen",
        Default(|| quoted(&DEFAULT_LISTEN.to_string())),
        "gpuwatch serve: the IP:PORT to listen on; 0.0.0.0 exposes it on every interface \
         (dcgm-exporter's port is 9400)",
    )
    .serve(),
    Setting::new(
        "web.listen-address",
        "serve.web_listen_address",
        Unset {
            shown: "none",
            example: "[\":19445\"]",
        },
        "node_exporter's spelling of --listen, repeatable: HOST:PORT, [IPv6]:PORT, :PORT (every \
         interface) or a host name; instead of listen, not beside it",
    )
    .serve()
    .flag_only(),
    Setting::new(
        "dcgm-compat",
        "serve.dcgm_compat",
        Switch(false),
        "Also export dcgm-exporter's DCGM_FI_DEV_* names for existing dashboards",
    )
    .serve(),
    Setting::new(
        "process-metrics",
        "serve.process_metrics",
        Switch(false),
        "Also export per-PID series labelled by PID, user and command; per-user and \
         per-workload totals are always exported",
    )
    .serve(),
    Setting::new(
        "process-metrics-limit",
        "serve.process_metrics_limit",
        Default(|| DEFAULT_PROCESS_METRICS_LIMIT.to_string()),
        "With process_metrics: at most this many processes get series, the largest VRAM holders",
    )
    .serve(),
    Setting::new(
        "redact",
        "serve.redact",
        Switch(false),
        "Leave user names and command lines out of the snapshot and the series",
    )
    .serve(),
    Setting::new(
        "hostname",
        "serve.hostname",
        Unset {
            shown: "$NODE_NAME, else the host name",
            example: "gpu-node-1",
        },
        "The host name on the metrics and the snapshot; by default $NODE_NAME when set (a \
         Kubernetes DaemonSet), else this host's name",
    )
    .serve(),
    Setting::new(
        "web.config.file",
        "serve.web_config_file",
        none("/etc/gpuwatch/web.yml"),
        "TLS and basic auth, in the Prometheus exporter toolkit's web config format; plain \
         HTTP without a password by default",
    )
    .serve(),
    Setting::new(
        "max-connections",
        "serve.max_connections",
        Default(|| DEFAULT_MAX_CONNECTIONS.to_string()),
        "Connections held at once (at most what the open-file limit allows); when full, the \
         one idle or half-sent longest makes room",
    )
    .serve(),
    Setting::new(
        "http-header-timeout",
        "serve.header_timeout",
        Default(|| dur(DEFAULT_HEADER_TIMEOUT)),
        "Time for the TLS handshake and each request's headers, also ending idle keep-alive \
         connections",
    )
    .serve(),
    Setting::new(
        "http-idle-timeout",
        "serve.idle_timeout",
        Default(|| dur(DEFAULT_IDLE_TIMEOUT)),
        "A connection on which nothing moves either way for this long is closed",
    )
    .serve(),
    Setting::new(
        "prometheus",
        "prometheus.url",
        none("http://prometheus:9090"),
        "Draw the fleet a Prometheus server scrapes (gpuwatch's or dcgm-exporter's series), as \
         http://HOST:PORT or https://HOST:PORT",
    ),
    Setting::new(
        "selector",
        "prometheus.selector",
        none("{cluster=\"a\"}"),
        "With a Prometheus server: only series matching this selector",
    ),
    Setting::new(
        "prometheus-user",
        "prometheus.user",
        none("gpuwatch"),
        "Basic auth for the Prometheus server: the user (the password from password_file)",
    ),
    Setting::new(
        "password-file",
        "prometheus.password_file",
        none("/etc/gpuwatch/prometheus-password"),
        "Basic auth for the Prometheus server: a file holding the password",
    ),
    Setting::new(
        "bearer-token-file",
        "prometheus.bearer_token_file",
        none("/var/run/secrets/prometheus-token"),
        "A file holding a bearer token for the Prometheus server",
    ),
    Setting::new(
        "prometheus-ca-file",
        "prometheus.ca_file",
        none("/etc/gpuwatch/prometheus-ca.pem"),
        "With https: the CA certificates (PEM) the server's certificate must chain to; the \
         system's CAs otherwise",
    ),
    Setting::new(
        "alert-webhook",
        "alerts.webhooks",
        Default(|| "[]".into()),
        "POST each alert to these URLs (repeatable, or comma-separated in the variable); \
         http:// or https://; shown redacted in every message",
    ),
    Setting::new(
        "alert-format",
        "alerts.format",
        Default(|| quoted(crate::alert_settings::FORMAT_NAMES[0])),
        "The webhook body: \"json\" (gpuwatch's document), \"slack\" or \"discord\"",
    ),
    Setting::new(
        "alert-command",
        "alerts.command",
        none("logger -t gpuwatch \"$GPUWATCH_ALERT_MESSAGE\""),
        "A shell command run for each alert, the facts in GPUWATCH_ALERT_* variables and the \
         JSON on stdin",
    ),
    Setting::new(
        "no-bell",
        "alerts.bell",
        Switch(true),
        "Ring the terminal bell in the monitor on a new critical alert; the flag turns it off",
    ),
    Setting::new(
        "alert-for",
        "alerts.for_warning",
        Default(|| dur(rules::DEFAULT_FOR_WARNING)),
        "How long a warning must hold before it alerts",
    ),
    Setting::file_only(
        "alerts.for_critical",
        Default(|| dur(rules::DEFAULT_FOR_CRITICAL)),
        "How long a critical warning must hold before it alerts",
    ),
    Setting::new(
        "alert-repeat",
        "alerts.repeat",
        Default(|| dur(rules::DEFAULT_REPEAT)),
        "Send a firing alert again this often while it holds; \"0s\" never",
    ),
    Setting::new(
        "alert-resolve-after",
        "alerts.resolve_after",
        Default(|| dur(rules::DEFAULT_RESOLVE_AFTER)),
        "A fired alert is resolved only once its warning has stayed clear this long; one that \
         comes back sooner is the same alert, still firing (\"0s\" resolves at once)",
    ),
];
