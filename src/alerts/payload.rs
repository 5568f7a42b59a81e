//! What an alert says, in the shapes the sinks send: the generic JSON document (kind,
//! severity, host, GPU, the warning's numbers in base units as the snapshot document has
//! them, owners, the sentence, firing/resolved, start time, flaps; a resolved one says so
//! and gives the GPU's numbers at that time, not the firing sentence again), Slack's and
//! Discord's webhook bodies, and the `GPUWATCH_ALERT_*` variables the command sink sets.
//! Pure formatting.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::engine::{Alert, Event, HeldBack, Status};
use crate::alert_settings::Format;
use crate::model::warnings::{Severity, Subject};
use crate::present::format::{bytes_short, duration_short};
use crate::reading::GpuReading;

fn rfc3339(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    }
}

/// The generic JSON document of one event.
pub fn json(event: &Event) -> Value {
    match event {
        Event::Alert(a) => alert_json(a),
        Event::HeldBack(h) => held_json(h),
    }
}

fn alert_json(a: &Alert) -> Value {
    let f = &a.facts;
    let warning = crate::wire::Warning::of(&f.warning, Some(f.message.clone()));
    let owners: Vec<Value> = f
        .owners
        .iter()
        // `null` when none of the owner's processes said (absent is not zero).
        .map(|(name, vram)| json!({"name": name, "gpu_memory": vram.value().map(|b| b.0)}))
        .collect();
    json!({
        "source": "gpuwatch",
        "status": a.status.name(),
        "kind": f.kind,
        "severity": severity_name(f.warning.severity),
        "host": f.host,
        "gpu_index": f.warning.gpu_index(),
        "gpu_uuid": f.warning.gpu().map(|g| g.0.clone()),
        "message": sentence(a),
        "owners": owners,
        "started": rfc3339(a.started),
        "at": rfc3339(a.at),
        "repeat": a.repeat,
        "test": a.test,
        "flaps": a.flaps,
        "cleared": a.cleared.map(rfc3339),
        "now": a.now.as_ref().map(numbers_json),
        "warning": warning,
    })
}

/// What the alert says: the warning's sentence while firing; once resolved, how long it
/// has been clear and the GPU's numbers now (the warning's are in `warning`, last seen).
fn sentence(a: &Alert) -> String {
    let mut s = match (a.status, a.cleared) {
        (Status::Resolved, Some(cleared)) => {
            let clear_for = a.at.duration_since(cleared).unwrap_or_default();
            let now = a.now.as_ref().map_or("no readings".into(), numbers_text);
            format!(
                "{} clear for {}; now {now}",
                subject_name(&a.facts.warning.subject),
                duration_short(clear_for)
            )
        }
        _ => a.facts.message.clone(),
    };
    if a.flaps > 0 {
        s += &format!(" — cleared and came back {} time(s)", a.flaps);
    }
    s
}

fn subject_name(subject: &Subject) -> String {
    match subject {
        Subject::Gpu { index, .. } => format!("GPU {index}"),
        Subject::Host { name } => format!("host {name}"),
    }
}

/// `64°C, VRAM 41% (33.1G/80.0G), busy 12%, 210 W`: what the GPU reports, absent left out.
fn numbers_text(g: &GpuReading) -> String {
    let mut parts = Vec::new();
    parts.extend(g.temperature.map(|t| format!("{}°C", t.0)));
    parts.extend(match (g.memory_used, g.memory_total) {
        (Some(used), Some(total)) if total.0 > 0 => Some(format!(
            "VRAM {:.0}% ({}/{})",
            used.0 as f64 * 100.0 / total.0 as f64,
            bytes_short(used),
            bytes_short(total)
        )),
        (Some(used), _) => Some(format!("VRAM {}", bytes_short(used))),
        _ => None,
    });
    parts.extend(g.util.map(|u| format!("busy {}%", u.0)));
    parts.extend(g.power.map(|w| format!("{:.0} W", w.0)));
    if parts.is_empty() {
        return "no readings".into();
    }
    parts.join(", ")
}

/// The same numbers under the snapshot document's names, in its units (`null`: not reported).
fn numbers_json(g: &GpuReading) -> Value {
    json!({
        "utilization_gpu": g.util.map(|u| u.0),
        "memory_used": g.memory_used.map(|b| b.0),
        "memory_total": g.memory_total.map(|b| b.0),
        "temperature_gpu": g.temperature.map(|t| t.0),
        "power_draw": g.power.map(|w| w.0),
    })
}

fn held_json(h: &HeldBack) -> Value {
    let held: Vec<Value> = h
        .counts
        .iter()
        .map(|((kind, status), n)| json!({"kind": kind, "status": status.name(), "count": n}))
        .collect();
    json!({
        "source": "gpuwatch",
        "status": "held_back",
        "count": h.total(),
        "held": held,
        "message": text(&Event::HeldBack(h.clone())),
        "at": rfc3339(h.at),
    })
}

/// The one-line text for chat services and the status line.
pub fn text(event: &Event) -> String {
    match event {
        Event::Alert(a) => {
            let f = &a.facts;
            let tag = match (a.test, a.status) {
                (true, _) => "TEST".to_string(),
                (false, s) => s.name().to_uppercase(),
            };
            let mut s = format!(
                "[{tag}] {} {} on {}: {}",
                severity_name(f.warning.severity),
                f.kind,
                f.host,
                sentence(a)
            );
            if !f.owners.is_empty() && a.status == Status::Firing {
                s += &format!(" — held by {}", owners_text(&f.owners));
            }
            s + &format!(" (since {})", rfc3339(a.started))
        }
        Event::HeldBack(h) => {
            let parts: Vec<String> = h
                .counts
                .iter()
                .map(|((kind, status), n)| format!("{n} {kind} {}", status.name()))
                .collect();
            format!(
                "[HELD BACK] {} alert(s) not sent in the last minute (rate limit): {}",
                h.total(),
                parts.join(", ")
            )
        }
    }
}

fn owners_text(owners: &[(String, crate::model::users::Total<crate::units::Bytes>)]) -> String {
    let who: Vec<String> = owners
        .iter()
        .map(|(name, vram)| format!("{name} {}", crate::present::format::total_short(*vram)))
        .collect();
    who.join(", ")
}

/// The body a webhook in `format` is sent.
pub fn body(event: &Event, format: Format) -> Value {
    match format {
        Format::Json => json(event),
        // Slack's incoming webhooks take `text`; Discord's take `content` (at most 2000
        // characters). The text carries names other users chose (process and user names):
        // neither service may turn them into mentions that page a whole channel.
        Format::Slack => json!({ "text": slack_escaped(&text(event)) }),
        Format::Discord => json!({
            "content": text(event).chars().take(2000).collect::<String>(),
            // No `@everyone`, `@here`, role or user mention is acted on, whatever the text.
            "allowed_mentions": { "parse": [] },
        }),
    }
}

/// Slack's control sequences (`<!channel>`, `<@U123>`, `<url|label>`) are written with
/// `<`, `>` and `&`; Slack's own rule is to send those three as entities, and then nothing
/// in the text is read as markup.
fn slack_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The facts as `GPUWATCH_ALERT_*` variables for the command sink (empty where unknown).
pub fn env_vars(event: &Event) -> Vec<(&'static str, String)> {
    let mut vars = vec![("GPUWATCH_ALERT_MESSAGE", text(event))];
    match event {
        Event::Alert(a) => {
            let f = &a.facts;
            vars.extend([
                ("GPUWATCH_ALERT_STATUS", a.status.name().to_string()),
                ("GPUWATCH_ALERT_KIND", f.kind.to_string()),
                (
                    "GPUWATCH_ALERT_SEVERITY",
                    severity_name(f.warning.severity).into(),
                ),
                ("GPUWATCH_ALERT_HOST", f.host.clone()),
                (
                    "GPUWATCH_ALERT_GPU",
                    f.warning
                        .gpu_index()
                        .map(|i| i.to_string())
                        .unwrap_or_default(),
                ),
                (
                    "GPUWATCH_ALERT_GPU_UUID",
                    f.warning.gpu().map(|g| g.0.clone()).unwrap_or_default(),
                ),
                ("GPUWATCH_ALERT_OWNERS", owners_text(&f.owners)),
                ("GPUWATCH_ALERT_STARTED", rfc3339(a.started)),
                ("GPUWATCH_ALERT_TEST", u8::from(a.test).to_string()),
            ]);
        }
        Event::HeldBack(_) => vars.push(("GPUWATCH_ALERT_STATUS", "held_back".into())),
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert_settings::ENV_NAMES;
    use crate::alerts::engine::{Observed, Status};
    use crate::model::warnings::{Subject, Warning, WarningKind};
    use crate::reading::GpuId;
    use crate::source::GpuSource;
    use crate::source::sim::{SimClock, SimSource};
    use crate::units::{Bytes, Celsius};
    use std::time::Duration;

    fn firing() -> Event {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_603_600);
        Event::Alert(Box::new(Alert {
            status: Status::Firing,
            facts: Observed {
                warning: Warning {
                    severity: Severity::Critical,
                    subject: Subject::Gpu {
                        id: GpuId("GPU-3".into()),
                        index: 3,
                        host: None,
                    },
                    kind: WarningKind::Overheating {
                        temperature: Celsius(92),
                        held_for: Duration::from_secs(31),
                        critical_at: Celsius(90),
                        slowdown: None,
                    },
                },
                kind: crate::wire::WarningCode::Overheating,
                host: "gpu1".into(),
                message: "GPU 3 92°C for 31s — overheating (critical at 90°C)".into(),
                owners: vec![("carol".into(), Bytes::from_gib(52.3).into())],
            },
            started: at,
            at: at + Duration::from_secs(1),
            repeat: false,
            test: false,
            flaps: 0,
            at_start: false,
            cleared: None,
            now: None,
        }))
    }

    #[test]
    fn the_json_document_has_the_facts_and_the_numbers() {
        let v = json(&firing());
        assert_eq!(v["status"], "firing");
        assert_eq!(v["kind"], "overheating");
        assert_eq!(v["severity"], "critical");
        assert_eq!(v["host"], "gpu1");
        assert_eq!(v["gpu_index"], 3);
        assert_eq!(v["gpu_uuid"], "GPU-3");
        assert_eq!(v["owners"][0]["name"], "carol");
        assert_eq!(v["started"], "2026-01-05T09:00:00Z");
        assert_eq!(v["warning"]["temperature"], 92);
        assert_eq!(v["warning"]["held_for"], 31.0);
    }

    #[test]
    fn chat_shapes_carry_the_sentence() {
        let want = "[FIRING] critical overheating on gpu1: GPU 3 92°C for 31s — overheating \
                    (critical at 90°C) — held by carol 52.3G (since 2026-01-05T09:00:00Z)";
        assert_eq!(body(&firing(), Format::Slack), json!({"text": want}));
        assert_eq!(
            body(&firing(), Format::Discord),
            json!({"content": want, "allowed_mentions": {"parse": []}})
        );
        let vars = env_vars(&firing());
        let get = |k| vars.iter().find(|(n, _)| *n == k).unwrap().1.clone();
        assert_eq!(get("GPUWATCH_ALERT_GPU"), "3");
        assert_eq!(get("GPUWATCH_ALERT_OWNERS"), "carol 52.3G");
        assert!(vars.iter().all(|(n, _)| ENV_NAMES.contains(n)));
    }

    /// Issue 26 item 15: a process or user named after a mention reaches neither chat
    /// service as one: Slack gets `<`, `>`, `&` as entities, Discord is told to parse no
    /// mention at all.
    #[test]
    fn names_that_look_like_mentions_page_nobody() {
        let Event::Alert(mut a) = firing() else {
            panic!()
        };
        a.facts.message = "idle holder <!channel> & <@U024BE7LH> @everyone".into();
        a.facts.owners = vec![("<!here|x>".into(), Bytes::from_gib(1.0).into())];
        let event = Event::Alert(a);
        let slack = body(&event, Format::Slack)["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!slack.contains(['<', '>']), "{slack}");
        assert!(
            slack.contains("&lt;!channel&gt; &amp; &lt;@U024BE7LH&gt;")
                && slack.contains("&lt;!here|x&gt;"),
            "{slack}"
        );
        // Entities already in a name are escaped again, so they show as typed.
        assert_eq!(slack_escaped("&lt;"), "&amp;lt;");
        let discord = body(&event, Format::Discord);
        assert_eq!(discord["allowed_mentions"], json!({"parse": []}));
        assert!(discord["content"].as_str().unwrap().contains("@everyone"));
        // The generic JSON document is data, not chat markup: the names stay as they are.
        assert_eq!(json(&event)["owners"][0]["name"], "<!here|x>");
    }

    /// Issue 20: a resolved message says it is resolved, for how long it has been clear and
    /// the GPU's numbers then, not the firing sentence; the flaps are counted.
    #[test]
    fn a_resolved_message_gives_the_numbers_then_and_the_flaps() {
        let Event::Alert(mut a) = firing() else {
            panic!()
        };
        a.status = Status::Resolved;
        a.flaps = 3;
        a.cleared = Some(a.at);
        a.at += Duration::from_secs(300);
        let clock = SimClock::Virtual {
            start: SystemTime::UNIX_EPOCH,
        };
        let mut sim = SimSource::new(1, 7, Duration::from_secs(1), clock);
        let mut g = sim.sample().unwrap().gpus.remove(0);
        g.temperature = Some(Celsius(64));
        g.memory_used = Some(Bytes::from_gib(33.0));
        g.memory_total = Some(Bytes::from_gib(80.0));
        g.util = Some(crate::units::Percent(12));
        g.power = None;
        a.now = Some(g);
        let event = Event::Alert(a);
        assert_eq!(
            text(&event),
            "[RESOLVED] critical overheating on gpu1: GPU 3 clear for 5m; now 64°C, VRAM 41% \
             (33.0G/80.0G), busy 12% — cleared and came back 3 time(s) (since 2026-01-05T09:00:00Z)"
        );
        let v = json(&event);
        assert_eq!(v["status"], "resolved");
        assert_eq!(v["flaps"], 3);
        assert_eq!(v["cleared"], "2026-01-05T09:00:01Z");
        assert_eq!(v["now"]["temperature_gpu"], 64);
        assert_eq!(v["now"]["power_draw"], Value::Null, "absent is not zero");
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .starts_with("GPU 3 clear for 5m; now 64°C")
        );
        // The warning as last seen stays in `warning`.
        assert_eq!(v["warning"]["temperature"], 92);
        assert_eq!(json(&firing())["flaps"], 0);
    }
}
