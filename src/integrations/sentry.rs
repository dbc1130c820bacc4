//! `sentry`: Sentry's internal integrations and alert rules (`data.event`, `data.issue`), its
//! older webhook plugin (an `event` beside the issue's `url`), and the oldest plugin format (a
//! project and a message). Events are new exceptions, with the frame that raised them, or
//! message events; issues are created, assigned, resolved or ignored. The topic is the event's
//! or issue's title. There are no event types to filter on.

use super::{global_time, Outcome, Post, Request, Res};
use serde_json::Value;

/// Formats a Sentry webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req.payload) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn text<'v>(v: &'v Value, key: &str) -> Res<&'v str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{key} is missing"))
}

fn post(topic: &str, body: String) -> Outcome {
    Outcome::Send {
        event_type: None,
        posts: vec![Post {
            topic: topic.to_owned(),
            body,
        }],
    }
}

fn render(p: &Value) -> Res<Outcome> {
    match p.get("data") {
        Some(Value::Object(data)) if !data.is_empty() => {
            let data = Value::Object(data.clone());
            if let Some(event) = data.get("event") {
                event_message(event)
            } else if let Some(issue) = data.get("issue") {
                issue_message(p, issue)
            } else {
                let keys: Vec<String> = data
                    .as_object()
                    .map(|m| m.keys().map(|k| format!("'{k}'")).collect())
                    .unwrap_or_default();
                Ok(Outcome::Unsupported {
                    event_type: format!("[{}]", keys.join(", ")),
                })
            }
        }
        _ => match p.get("event").filter(|e| e.get("event_id").is_some()) {
            Some(event) => event_message(&plugin_event(p, event)?),
            None => Ok(post(
                p.get("project_name")
                    .and_then(Value::as_str)
                    .unwrap_or("None"),
                format!(
                    "New [issue]({}) (level: {}):\n\n``` quote\n{}\n```",
                    text(p, "url")?,
                    text(p, "level")?.to_uppercase(),
                    text(p, "message")?
                ),
            )),
        },
    }
}

/// The webhook plugin's event, given the address and time the newer formats carry.
fn plugin_event(p: &Value, event: &Value) -> Res<Value> {
    let id = text(event, "event_id")?;
    let base = reqwest::Url::parse(text(p, "url")?).map_err(|e| e.to_string())?;
    let web_url = base
        .join(&format!("events/{id}/"))
        .map_err(|e| e.to_string())?;
    let seconds = ["timestamp", "received"]
        .iter()
        .find_map(|key| match event.get(*key) {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.parse::<f64>().ok(),
            _ => None,
        })
        .ok_or("the event has no time")?;
    let at =
        chrono::DateTime::from_timestamp(seconds.floor() as i64, 0).ok_or("time out of range")?;
    let mut event = event.clone();
    if let Value::Object(fields) = &mut event {
        fields.insert("web_url".into(), Value::String(web_url.to_string()));
        fields.insert(
            "datetime".into(),
            Value::String(at.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        );
    }
    Ok(event)
}

/// A Sentry time (`2020-04-29T11:23:45.978469Z`) as Zulip shows it.
fn time(v: &Value, key: &str) -> Res<String> {
    let raw = text(v, key)?;
    global_time(raw).ok_or_else(|| format!("{key} is not an ISO 8601 time"))
}

fn event_message(event: &Value) -> Res<Outcome> {
    let title = text(event, "title")?;
    let platform = event
        .get("platform")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = match event.get("version") {
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(Value::Number(n)) => n.as_i64(),
        _ => None,
    };
    // Events of the old Python SDK (Raven) lack what the messages need; Sentry's own sample
    // event still says version 5.
    if platform == "python"
        && version.is_some_and(|v| v < 7)
        && title != "This is an example Python exception"
    {
        return Ok(Outcome::Unsupported {
            event_type: "Raven SDK".into(),
        });
    }
    let language = match platform {
        "go" => "go",
        "java" => "java",
        "javascript" | "node" => "javascript",
        "python" => "python3",
        "ruby" => "ruby",
        _ => "",
    };
    let web_url = text(event, "web_url")?;
    let level = text(event, "level")?;
    let timestamp = time(event, "datetime")?;
    let body = if let Some(exception) = event.get("exception") {
        let filename = event
            .get("metadata")
            .and_then(|m| m.get("filename"))
            .and_then(Value::as_str);
        let mut body = format!(
            "**New exception:** [{title}]({web_url})\n```quote\n**level:** {level}\n\
             **timestamp:** {timestamp}\n**filename:** {}\n```",
            filename.unwrap_or("None")
        );
        if let Some(traceback) = traceback(exception, filename) {
            body.push_str(&format!("\n\nTraceback:\n```{language}\n{traceback}```"));
        }
        body
    } else if event.get("logentry").is_some() {
        format!(
            "**New message event:** [{title}]({web_url})\n```quote\n**level:** {level}\n\
             **timestamp:** {timestamp}\n```"
        )
    } else {
        return Ok(Outcome::Unsupported {
            event_type: "unknown-event type".into(),
        });
    };
    Ok(post(title, body))
}

/// The lines around where the exception was raised in `filename`, the raising line marked.
fn traceback(exception: &Value, filename: Option<&str>) -> Option<String> {
    let filename = filename?;
    let stacktrace = exception
        .get("values")?
        .as_array()?
        .iter()
        .rev()
        .find_map(|v| v.get("stacktrace").filter(|s| !s.is_null()))?;
    let frame = stacktrace
        .get("frames")?
        .as_array()?
        .iter()
        .rev()
        .find(|f| f.get("filename").and_then(Value::as_str) == Some(filename))?;
    let context = frame.get("context_line")?.as_str()?;
    let lines = |key: &str| -> Vec<String> {
        frame
            .get(key)
            .and_then(Value::as_array)
            .map(|ls| {
                ls.iter()
                    .map(|l| l.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let show = |line: &str| {
        if line.is_empty() {
            "\n".to_owned()
        } else {
            format!("     {line}\n")
        }
    };
    let mut out = String::new();
    for line in lines("pre_context") {
        out.push_str(&show(&line));
    }
    out.push_str(&format!("---> {context}\n"));
    for line in lines("post_context") {
        out.push_str(&show(&line));
    }
    Some(out)
}

fn issue_message(p: &Value, issue: &Value) -> Res<Outcome> {
    let title = text(issue, "title")?;
    let actor = || -> Res<&str> {
        p.get("actor")
            .ok_or_else(|| "actor is missing".to_string())
            .and_then(|a| text(a, "name"))
    };
    let body = match text(p, "action")? {
        "created" => {
            let assignee = match issue.get("assignedTo") {
                None | Some(Value::Null) => "No one".to_owned(),
                Some(a) if a.get("type").and_then(Value::as_str) == Some("team") => {
                    format!("team {}", text(a, "name")?)
                }
                Some(a) => text(a, "name")?.to_owned(),
            };
            format!(
                "**New issue created:** {title}\n```quote\n**level:** {}\n**timestamp:** {}\n\
                 **assignee:** {assignee}\n```",
                text(issue, "level")?,
                time(issue, "lastSeen")?
            )
        }
        "assigned" => {
            let a = issue.get("assignedTo").ok_or("assignedTo is missing")?;
            let assignee = if a.get("type").and_then(Value::as_str) == Some("team") {
                format!("team {}", text(a, "name")?)
            } else {
                text(a, "name")?.to_owned()
            };
            format!(
                "Issue **{title}** has now been assigned to **{assignee}** by **{}**.",
                actor()?
            )
        }
        "resolved" => format!(
            "Issue **{title}** was marked as resolved by **{}**.",
            actor()?
        ),
        "ignored" => format!("Issue **{title}** was ignored by **{}**.", actor()?),
        other => {
            return Ok(Outcome::Unsupported {
                event_type: format!("{other} action"),
            })
        }
    };
    Ok(post(title, body))
}
