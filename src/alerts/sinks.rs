//! Where alerts go: a webhook (HTTP POST of the payload, 5 s timeout, retried with
//! backoff) or a command (`sh -c`, the facts in `GPUWATCH_ALERT_*`, the JSON on stdin,
//! killed after 5 s). Each delivery blocks, so `queue` runs each sink on its own thread. A
//! webhook URL is only ever shown redacted (`alert_settings::redact`): its path or user part
//! is often the secret. The sinks themselves are settings (`alert_settings::Sink`).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::engine::Event;
use super::payload;
use super::process_group;
use crate::alert_settings::{Sink, redact};
use crate::http_client::{self, Endpoint, Limits, Request, blocking, tls};

/// How long one attempt may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Waits between webhook attempts (so three attempts in all).
pub const BACKOFF: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(3)];
/// What a webhook answers is only looked at for its status; a chat service's reply is small.
const MAX_ANSWER: usize = 64 << 10;

/// Delivers one event, retrying a webhook with backoff; what the other side answered.
pub fn deliver(sink: &Sink, event: &Event) -> Result<String, String> {
    match sink {
        Sink::Webhook { url, format } => {
            let body = payload::body(event, *format).to_string();
            let mut result = post(url, &body);
            for wait in BACKOFF {
                if result.is_ok() {
                    break;
                }
                std::thread::sleep(wait);
                result = post(url, &body);
            }
            result
        }
        Sink::Command { command } => run_command(command, event),
    }
}

/// One attempt only (`gpuwatch alert test` says at once what each sink answered).
pub fn deliver_once(sink: &Sink, event: &Event) -> Result<String, String> {
    match sink {
        Sink::Webhook { url, format } => post(url, &payload::body(event, *format).to_string()),
        Sink::Command { command } => run_command(command, event),
    }
}

/// One POST through the one client (`crate::http_client`); an https URL's certificate
/// must chain to the system's CAs. No redirect is followed: a POST redirected would be
/// sent again as a GET without its body, a delivery that only looks successful.
fn post(url: &str, body: &str) -> Result<String, String> {
    // The URL's own words never reach a message: its path or user part is the secret.
    let endpoint = Endpoint::url(url, || tls::client_config(None))?;
    let request =
        Request::post("", body.to_string()).header(http::header::CONTENT_TYPE, "application/json");
    let limits = Limits {
        timeout: TIMEOUT,
        max_body: MAX_ANSWER,
    };
    match blocking::send(&endpoint, request, limits) {
        Ok(response) if response.status.is_success() => {
            Ok(format!("HTTP {}", response.status.as_u16()))
        }
        Ok(response) if response.status.is_redirection() => Err(format!(
            "HTTP {} (redirect not followed)",
            response.status.as_u16()
        )),
        Ok(response) => Err(format!("HTTP {}", response.status.as_u16())),
        Err(http_client::Error::TimedOut(_)) => Err(format!("no answer within {TIMEOUT:?}")),
        Err(http_client::Error::Tls(why)) if why.contains("does not verify") => Err(format!(
            "TLS: {why}; add its CA to the system's store (or point SSL_CERT_FILE at it)"
        )),
        Err(e) => Err(scrub(&e.to_string(), url)),
    }
}

/// `text` with every copy of `url` replaced by its redacted form (a message should never
/// quote it; this makes sure).
fn scrub(text: &str, url: &str) -> String {
    text.replace(url, &redact(url))
}

/// Runs `sh -c command` with the facts in its environment and the JSON on stdin.
fn run_command(command: &str, event: &Event) -> Result<String, String> {
    let mut child = process_group::own_group(&mut Command::new("sh"))
        .arg("-c")
        .arg(command)
        .envs(payload::env_vars(event))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine: ignore a broken pipe.
        let _ = stdin.write_all(payload::json(event).to_string().as_bytes());
    }
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok("exit 0".into()),
            Ok(Some(status)) => {
                return Err(match status.code() {
                    Some(code) => format!("exit {code}"),
                    None => "killed by a signal".into(),
                });
            }
            Ok(None) if Instant::now() >= deadline => {
                process_group::kill(&mut child);
                return Err(format!("still running after {TIMEOUT:?}; killed"));
            }
            // Polling a child is the portable way to wait with a timeout in std.
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_secrets() {
        assert_eq!(
            redact("https://hooks.slack.com/services/T000/B000/XXXXSECRET"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(
            redact("http://bob:hunter2@10.0.0.1:8080"),
            "http://10.0.0.1:8080/…"
        );
        assert_eq!(redact("http://127.0.0.1:9000"), "http://127.0.0.1:9000");
        assert_eq!(redact("http://h/?token=abc"), "http://h/…");
        let s = scrub("bad url http://h/secret/x here", "http://h/secret/x");
        assert_eq!(s, "bad url http://h/… here");
    }
}
