//! `librato`: Librato (AppOptics) alerts (JSON in the form field `payload`: triggered, with
//! each violated condition, or cleared) and chart snapshots (a JSON body of Slack-style
//! `attachments`). The topic is `Alert <name>`, or `Snapshots`.

use super::text_at as s;
use super::{at, truthy, Outcome, Post, Request};
use serde_json::Value;

/// Formats a Librato alert or snapshot.
pub fn format(req: &Request<'_>) -> Outcome {
    let payload: Value = match (req.param)("payload") {
        Some(text) => match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(_) => return Outcome::Refused("payload is not valid JSON".into()),
        },
        None => Value::Object(Default::default()),
    };
    let attachments: Vec<Value> = req
        .payload
        .get("attachments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let empty = payload.as_object().is_none_or(|o| o.is_empty());
    if attachments.is_empty() && empty {
        return Outcome::Refused("Malformed JSON input".into());
    }
    let topic = if attachments.is_empty() {
        match at(&payload, &["alert", "name"]).and_then(Value::as_str) {
            Some(name) => format!("Alert {name}"),
            None => return Outcome::Malformed("alert.name is missing".into()),
        }
    } else {
        "Snapshots".to_owned()
    };
    let body = if truthy(payload.get("clear")) {
        cleared(&payload)
    } else if truthy(payload.get("violations")) {
        triggered(&payload)
    } else if attachments
        .first()
        .is_some_and(|a| truthy(a.get("image_url")))
    {
        Ok(attachments
            .iter()
            .map(|a| {
                format!(
                    "**{}** sent a [snapshot]({}) of [metric]({}).",
                    s(a, &["author_name"]),
                    s(a, &["image_url"]),
                    s(a, &["title"])
                )
            })
            .collect())
    } else {
        Err("Unexpected message type".to_owned())
    };
    match body {
        Ok(body) => Outcome::Send {
            event_type: None,
            posts: vec![Post { topic, body }],
        },
        Err(reason) => Outcome::Refused(reason),
    }
}

fn alert_url(p: &Value) -> Result<String, String> {
    match at(p, &["alert", "id"]) {
        Some(Value::Number(n)) => Ok(format!("https://metrics.librato.com/alerts#/{n}")),
        Some(Value::String(id)) => Ok(format!("https://metrics.librato.com/alerts#/{id}")),
        _ => Err("'id'".to_owned()),
    }
}

/// Seconds since the epoch as Zulip's global time.
fn time(v: Option<&Value>) -> Result<String, String> {
    let seconds = v.and_then(Value::as_i64).ok_or("a time is missing")?;
    super::epoch_time(seconds).ok_or_else(|| "a time is out of range".to_owned())
}

fn cleared(p: &Value) -> Result<String, String> {
    Ok(format!(
        "Alert [alert_name]({}) has cleared at {}!",
        alert_url(p)?,
        time(p.get("trigger_time"))?
    ))
}

fn triggered(p: &Value) -> Result<String, String> {
    let mut body = format!("Alert [alert_name]({}) has triggered! ", alert_url(p)?);
    let runbook = s(p, &["alert", "runbook_url"]);
    if !runbook.is_empty() {
        body.push_str(&format!("[Reaction steps]({runbook}):"));
    }
    let conditions = p
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let violations = at(p, &["violations", "test-source"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (condition, violation) in conditions.iter().zip(violations.iter()) {
        let threshold = match condition.get("threshold") {
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(t)) => t.clone(),
            _ => String::new(),
        };
        body.push_str(&format!(
            "\n * Metric `{}`, {} was {} {threshold}",
            s(violation, &["metric"]),
            s(condition, &["summary_function"]),
            s(condition, &["type"])
        ));
        if truthy(condition.get("duration")) {
            let duration = condition
                .get("duration")
                .map(super::py_str)
                .unwrap_or_default();
            body.push_str(&format!(" by {duration}s"));
        }
        body.push_str(&format!(
            ", recorded at {}.",
            time(violation.get("recorded_at"))?
        ));
    }
    Ok(body)
}
