//! `grafana`: Grafana alert notifications, both unified alerting (Grafana 8+, a payload with
//! `alerts`: one message per alert) and legacy alerting (Grafana 7 and older: one message).
//!
//! The event type is the alert's status (`firing`/`resolved`) or the legacy rule `state`.

use super::{at, opt_str, py_str, req, req_str, truthy, Outcome, Post, Request, Res};
use serde_json::Value;

/// Every event type Grafana reports.
pub const ALL_EVENT_TYPES: &[&str] = &["ok", "pending", "alerting", "paused", "firing", "resolved"];

/// Legacy rule states Zulip accepts.
const LEGACY_STATES: &[&str] = &["no_data", "paused", "alerting", "ok", "pending", "unknown"];

/// Every event type this integration posts: the unified alerts' statuses, then the legacy
/// rule states.
pub const EVENT_TYPES: &[&str] = &[
    "firing", "resolved", "no_data", "paused", "alerting", "ok", "pending", "unknown",
];

/// The `endsAt` of an alert that has not ended.
const NOT_ENDED: &str = "0001-01-01T00:00:00Z";

/// Formats a Grafana alert notification.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let result = match p.get("alerts") {
        Some(alerts) => unified(alerts),
        None => legacy(p),
    };
    result.unwrap_or_else(Outcome::Malformed)
}

fn unified(alerts: &Value) -> Res<Outcome> {
    let alerts = alerts
        .as_array()
        .ok_or_else(|| "field alerts is not a list".to_string())?;
    let mut posts = Vec::with_capacity(alerts.len());
    for alert in alerts {
        let status = req_str(alert, &["status"])?;
        let header = match status {
            "firing" => ":alert: **FIRING**\n\n",
            "resolved" => ":checkbox: **RESOLVED**\n\n",
            other => return Err(format!("unknown alert status {other}")),
        };
        let alertname = opt_str(alert, &["labels", "alertname"])?.filter(|n| !n.is_empty());
        let topic = match alertname {
            Some(name) => format!("[{name}]"),
            None => format!("[{}]", req_str(alert, &["fingerprint"])?),
        };

        let mut body = String::from(header);
        if let Some(name) = alertname {
            body.push_str(&format!("**{name}**\n\n"));
        }
        body.push_str(&format!(
            "This alert was fired at <time:{}>.",
            req_str(alert, &["startsAt"])?
        ));
        let ends = req_str(alert, &["endsAt"])?;
        if ends != NOT_ENDED {
            body.push_str(&format!("\n\nThis alert was resolved at <time:{ends}>."));
        }
        if let Some(labels) = object(alert, "labels")?.filter(|m| !m.is_empty()) {
            body.push_str("\n\nLabels:\n");
            for (key, value) in labels {
                body.push_str(&format!("- {key}: {}\n", py_str(value)));
            }
            body.push('\n');
        }
        if truthy(alert.get("values")) {
            body.push_str("Values:\n");
            for (key, value) in object(alert, "values")?.into_iter().flatten() {
                body.push_str(&format!("- {key}: {}\n", py_str(value)));
            }
            body.push('\n');
        } else if truthy(alert.get("valueString")) {
            body.push_str(&format!(
                "Values:\n{}\n\n",
                req_str(alert, &["valueString"])?
            ));
        }
        if let Some(annotations) = object(alert, "annotations")?.filter(|m| !m.is_empty()) {
            body.push_str("Annotations:\n");
            for (key, value) in annotations {
                body.push_str(&format!("- {key}: {}\n", py_str(value)));
            }
        }
        for (key, label) in [
            ("generatorURL", "Generator"),
            ("silenceURL", "Silence"),
            ("imageURL", "Image"),
        ] {
            if truthy(alert.get(key)) {
                body.push_str(&format!("\n[{label}]({})", req_str(alert, &[key])?));
            }
        }
        posts.push((
            status.to_string(),
            Post {
                topic,
                body: body.trim_end().to_string(),
            },
        ));
    }
    Ok(Outcome::SendEach(posts))
}

/// The object under `key`, if present and not null.
fn object<'v>(v: &'v Value, key: &str) -> Res<Option<&'v serde_json::Map<String, Value>>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(format!("field {key} is not an object")),
    }
}

fn legacy(p: &Value) -> Res<Outcome> {
    let topic = req_str(p, &["title"])?.to_string();
    let state = req_str(p, &["state"])?;
    if !LEGACY_STATES.contains(&state) {
        return Err(format!("unknown alert state {state}"));
    }
    let mut body = match state {
        "alerting" => ":alert: **ALERTING**\n\n".to_string(),
        "ok" => ":squared_ok: **OK**\n\n".to_string(),
        other => format!(":info: **{}**\n\n", other.to_uppercase()),
    };
    body.push_str(&format!(
        "[{}]({})\n\n",
        req_str(p, &["ruleName"])?,
        req_str(p, &["ruleUrl"])?
    ));
    if truthy(p.get("message")) {
        body.push_str(&format!("{}\n\n", req_str(p, &["message"])?));
    }
    match at(p, &["evalMatches"]) {
        None | Some(Value::Null) => {}
        Some(Value::Array(matches)) => {
            for m in matches {
                body.push_str(&format!(
                    "**{}:** {}\n",
                    req_str(m, &["metric"])?,
                    py_str(req(m, &["value"])?)
                ));
            }
        }
        Some(_) => return Err("field evalMatches is not a list".to_string()),
    }
    if truthy(p.get("imageUrl")) {
        body.push_str(&format!(
            "\n[Click to view visualization]({})",
            req_str(p, &["imageUrl"])?
        ));
    }
    Ok(Outcome::Send {
        event_type: Some(state.to_string()),
        posts: vec![Post {
            topic,
            body: body.trim().to_string(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::{run_fixture, run_value, single};

    #[test]
    fn unified_alerts_each_have_their_status_as_event_type() {
        let mut payload: Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/webhooks/grafana/unified_resolved.json"
        ))
        .unwrap();
        let mut firing = payload["alerts"][0].clone();
        firing["status"] = Value::String("firing".into());
        firing["labels"]["alertname"] = Value::String("CpuHot".into());
        payload["alerts"].as_array_mut().unwrap().push(firing);
        match run_value(format, &[], &payload, &[]) {
            Outcome::SendEach(posts) => {
                let kinds: Vec<(&str, &str)> = posts
                    .iter()
                    .map(|(kind, post)| (kind.as_str(), post.topic.as_str()))
                    .collect();
                assert_eq!(
                    kinds,
                    [("resolved", "[DiskAlmostFull]"), ("firing", "[CpuHot]")]
                );
            }
            other => panic!("expected a post per alert, got {other:?}"),
        }
    }

    #[test]
    fn unified_resolved_alert() {
        let (event, p) = single(run_fixture(
            format,
            &[],
            include_str!("../../tests/fixtures/webhooks/grafana/unified_resolved.json"),
            &[],
        ));
        assert_eq!(event.as_deref(), Some("resolved"));
        assert_eq!(p.topic, "[DiskAlmostFull]");
        assert_eq!(
            p.body,
            ":checkbox: **RESOLVED**\n\n\
             **DiskAlmostFull**\n\n\
             This alert was fired at <time:2024-05-01T10:00:00.123Z>.\n\n\
             This alert was resolved at <time:2024-05-01T11:30:00.456Z>.\n\n\
             Labels:\n- alertname: DiskAlmostFull\n- instance: db-1\n\n\
             Values:\n[ var='B' labels={instance=db-1} value=78.5 ]\n\n\
             Annotations:\n- summary: Disk usage back under 80%\n\n\
             [Generator](https://grafana.example.test/alerting/grafana/abc123/view)\n\
             [Silence](https://grafana.example.test/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DDiskAlmostFull)"
        );
    }

    #[test]
    fn unified_values_use_python_str() {
        let payload = r#"{"alerts": [{"status": "firing", "labels": {}, "annotations": {},
            "startsAt": "2024-05-01T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "f00d", "values": {"A": 10.5, "B": 100.0, "C": 3, "D": true, "E": null}}]}"#;
        let (event, p) = single(run_fixture(format, &[], payload, &[]));
        assert_eq!(event.as_deref(), Some("firing"));
        assert_eq!(p.topic, "[f00d]");
        assert_eq!(
            p.body,
            ":alert: **FIRING**\n\nThis alert was fired at <time:2024-05-01T10:00:00Z>.Values:\n\
             - A: 10.5\n- B: 100.0\n- C: 3\n- D: True\n- E: None"
        );
    }

    #[test]
    fn legacy_alerting() {
        let (event, p) = single(run_fixture(
            format,
            &[],
            include_str!("../../tests/fixtures/webhooks/grafana/legacy_alerting.json"),
            &[],
        ));
        assert_eq!(event.as_deref(), Some("alerting"));
        assert_eq!(p.topic, "[Alerting] Chronicle latency");
        assert_eq!(
            p.body,
            ":alert: **ALERTING**\n\n\
             [Chronicle latency](https://grafana.example.test/d/xyz/chronicle?viewPanel=2)\n\n\
             Latency is above 500 ms.\n\n\
             **p99:** 730\n**p95:** 512.5\n\n\
             [Click to view visualization](https://grafana.example.test/render/panel.png)"
        );
    }

    #[test]
    fn legacy_other_states_and_bad_state() {
        let paused = r#"{"title": "Paused rule", "ruleName": "r", "ruleUrl": "https://g.example.test/r",
            "state": "no_data", "evalMatches": []}"#;
        let (_, p) = single(run_fixture(format, &[], paused, &[]));
        assert_eq!(
            p.body,
            ":info: **NO_DATA**\n\n[r](https://g.example.test/r)"
        );
        let bad = r#"{"title": "t", "ruleName": "r", "ruleUrl": "u", "state": "exploded"}"#;
        assert!(matches!(
            run_fixture(format, &[], bad, &[]),
            Outcome::Malformed(_)
        ));
    }
}
