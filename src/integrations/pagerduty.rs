//! `pagerduty`: PagerDuty's webhooks, versions 1 and 2 (a list of `messages`, one Zulip message
//! each) and 3 (one `event`). The event type is the action (`triggered`, `acknowledged`,
//! `resolved`, `priority updated`, ...); the topic is `Incident <number or title>`.

use super::number_at;
use super::text_at as s;
use super::{at, Outcome, Post, Request, Res};
use serde_json::Value;

/// The actions, as `only_events`/`exclude_events` name them.
pub const EVENT_TYPES: &[&str] = &[
    "triggered",
    "acknowledged",
    "unacknowledged",
    "resolved",
    "assigned",
    "reassigned",
    "escalated",
    "delegated",
    "reopened",
    "priority updated",
    "status updated",
    "annotated",
    "responder added",
    "responder replied",
    "conference bridge updated",
    "service updated",
    "workflow started",
    "workflow completed",
];

const V1: &[(&str, &str)] = &[
    ("incident.trigger", "triggered"),
    ("incident.acknowledge", "acknowledged"),
    ("incident.unacknowledge", "unacknowledged"),
    ("incident.resolve", "resolved"),
    ("incident.assign", "assigned"),
    ("incident.escalate", "escalated"),
    ("incident.delegate", "delegated"),
];

const V2: &[(&str, &str)] = &[
    ("incident.trigger", "triggered"),
    ("incident.acknowledge", "acknowledged"),
    ("incident.resolve", "resolved"),
    ("incident.assign", "assigned"),
];

const V3: &[(&str, &str)] = &[
    ("incident.triggered", "triggered"),
    ("incident.acknowledged", "acknowledged"),
    ("incident.unacknowledged", "unacknowledged"),
    ("incident.resolved", "resolved"),
    ("incident.reassigned", "reassigned"),
    ("incident.escalated", "escalated"),
    ("incident.delegated", "delegated"),
    ("incident.reopened", "reopened"),
    ("incident.priority_updated", "priority updated"),
    ("incident.status_update_published", "status updated"),
    ("incident.annotated", "annotated"),
    ("incident.responder.added", "responder added"),
    ("incident.responder.replied", "responder replied"),
    (
        "incident.conference_bridge.updated",
        "conference bridge updated",
    ),
    ("incident.service_updated", "service updated"),
    ("incident.workflow.started", "workflow started"),
    ("incident.workflow.completed", "workflow completed"),
];

/// What one message is made of.
#[derive(Default)]
struct Incident {
    action: &'static str,
    label: String,
    url: String,
    service: String,
    service_url: String,
    assignee: String,
    agent: Option<String>,
    /// The quoted trigger text (versions 1 and 2), `None` for none at all.
    trigger: Option<String>,
    policy: String,
    details: String,
}

/// Formats a PagerDuty webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req.payload) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn link(v: &Value, text_key: &str) -> String {
    format!("[{}]({})", s(v, &[text_key]), s(v, &["html_url"]))
}

fn render(p: &Value) -> Res<Outcome> {
    let mut posts: Vec<(String, Post)> = Vec::new();
    if let Some(messages) = p
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
    {
        for message in messages {
            let Some(kind) = message.get("type").and_then(Value::as_str) else {
                break;
            };
            let Some((_, action)) = V1.iter().find(|(k, _)| *k == kind) else {
                return Ok(Outcome::Unsupported {
                    event_type: kind.to_owned(),
                });
            };
            posts.push((action.to_string(), post(&v1(message, action))));
        }
        for message in messages {
            let Some(kind) = message.get("event").and_then(Value::as_str) else {
                break;
            };
            let Some((_, action)) = V2.iter().find(|(k, _)| *k == kind) else {
                return Ok(Outcome::Unsupported {
                    event_type: kind.to_owned(),
                });
            };
            posts.push((action.to_string(), post(&v2(message, action)?)));
        }
    } else if let Some(event) = p.get("event") {
        let kind = s(event, &["event_type"]);
        let Some((_, action)) = V3.iter().find(|(k, _)| *k == kind) else {
            return Ok(Outcome::Unsupported {
                event_type: kind.to_owned(),
            });
        };
        posts.push((action.to_string(), post(&v3(event, action))));
    } else {
        return Ok(Outcome::Ignored);
    }
    Ok(Outcome::SendEach(posts))
}

fn quote(text: &str) -> String {
    format!("``` quote\n{text}\n```")
}

fn person_by_email(user: &Value) -> String {
    let email = s(user, &["email"]);
    let local = email.split('@').next().unwrap_or_default();
    format!("[{local}]({})", s(user, &["html_url"]))
}

fn v1(message: &Value, action: &'static str) -> Incident {
    let incident = at(message, &["data", "incident"])
        .cloned()
        .unwrap_or(Value::Null);
    let present = |key: &str| incident.get(key).filter(|v| !v.is_null());
    let trigger = match present("trigger_summary_data") {
        Some(summary) => {
            let parts: Vec<&str> = [s(summary, &["subject"]), s(summary, &["description"])]
                .into_iter()
                .filter(|t| !t.is_empty())
                .collect();
            quote(&parts.join("\n"))
        }
        None => quote(""),
    };
    Incident {
        action,
        label: number_at(&incident, &["incident_number"]).unwrap_or_default(),
        url: s(&incident, &["html_url"]).to_owned(),
        service: s(&incident, &["service", "name"]).to_owned(),
        service_url: s(&incident, &["service", "html_url"]).to_owned(),
        assignee: present("assigned_to_user")
            .map(person_by_email)
            .unwrap_or_else(|| "nobody".into()),
        agent: present("resolved_by_user").map(person_by_email),
        trigger: Some(trigger),
        ..Incident::default()
    }
}

fn v2(message: &Value, action: &'static str) -> Res<Incident> {
    let incident = message.get("incident").cloned().unwrap_or(Value::Null);
    Ok(Incident {
        action,
        label: number_at(&incident, &["incident_number"]).unwrap_or_default(),
        url: s(&incident, &["html_url"]).to_owned(),
        service: s(&incident, &["service", "name"]).to_owned(),
        service_url: s(&incident, &["service", "html_url"]).to_owned(),
        assignee: incident
            .get("assignments")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|a| a.get("assignee"))
            .map(|a| link(a, "summary"))
            .unwrap_or_else(|| "nobody".into()),
        agent: incident
            .get("last_status_change_by")
            .filter(|v| !v.is_null())
            .map(|a| link(a, "summary")),
        trigger: incident
            .get("description")
            .and_then(Value::as_str)
            .map(quote),
        ..Incident::default()
    })
}

fn v3(event: &Value, action: &'static str) -> Incident {
    let data = event.get("data").cloned().unwrap_or(Value::Null);
    let (label, url) = match data.get("incident") {
        Some(incident) => (
            s(incident, &["summary"]).to_owned(),
            s(incident, &["html_url"]).to_owned(),
        ),
        None => (
            format!(
                "{} (#{})",
                s(&data, &["title"]),
                number_at(&data, &["number"]).unwrap_or_default()
            ),
            s(&data, &["html_url"]).to_owned(),
        ),
    };
    let assignee = data
        .get("assignees")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .or_else(|| data.get("user").filter(|u| !u.is_null()))
        .map(|a| link(a, "summary"))
        .unwrap_or_else(|| "nobody".into());
    let policy = match data.get("escalation_policy").filter(|p| !p.is_null()) {
        Some(policy) => format!(
            "current escalation policy is {} and ",
            link(policy, "summary")
        ),
        None => String::new(),
    };
    let details = match action {
        "priority updated" => s(&data, &["priority", "summary"]).to_owned(),
        "status updated" | "responder added" | "responder replied" => {
            s(&data, &["message"]).to_owned()
        }
        "annotated" => s(&data, &["content"]).to_owned(),
        "conference bridge updated" => s(&data, &["conference_url"]).to_owned(),
        "service updated" => s(&data, &["service", "summary"]).to_owned(),
        "workflow started" | "workflow completed" => {
            let workflow = s(&data, &["incident_workflow", "summary"]);
            match s(&data, &["summary"]) {
                "" => workflow.to_owned(),
                summary => format!("{workflow} ({summary})"),
            }
        }
        _ => String::new(),
    };
    Incident {
        action,
        label,
        url,
        service: s(&data, &["service", "summary"]).to_owned(),
        service_url: s(&data, &["service", "html_url"]).to_owned(),
        assignee,
        agent: event
            .get("agent")
            .filter(|a| !a.is_null())
            .map(|a| link(a, "summary")),
        trigger: Some(String::new()),
        policy,
        details,
    }
}

fn post(i: &Incident) -> Post {
    let incident = format!("[{}]({})", i.label, i.url);
    let trigger = i.trigger.clone().unwrap_or_default();
    let with_trigger = |head: String| format!("{head}\n\n{trigger}");
    let body = match i.action {
        "triggered" | "unacknowledged" => with_trigger(format!(
            "Incident {incident} {} by [{}]({}) (assigned to {}).",
            i.action, i.service, i.service_url, i.assignee
        )),
        "assigned" | "reassigned" => with_trigger(format!(
            "Incident {incident} {} to {}.",
            i.action, i.assignee
        )),
        "resolved" => with_trigger(match &i.agent {
            Some(agent) => format!("Incident {incident} resolved by {agent}."),
            None => format!("Incident {incident} resolved."),
        }),
        "escalated" if i.trigger.as_deref() == Some("") => {
            format!("Incident {incident} escalated to {}.", i.assignee)
        }
        "delegated" if i.trigger.as_deref() == Some("") => format!(
            "Incident {incident} delegated; {}current assignee is {}.",
            i.policy, i.assignee
        ),
        "reopened" => format!("Incident {incident} reopened."),
        "priority updated" => format!("Incident {incident} priority updated to {}", i.details),
        "status updated" => format!("Incident {incident} status update published: {}", i.details),
        "annotated" => format!("Incident {incident} annotated with: {}", i.details),
        "responder added" => format!(
            "Responder {} added to incident {incident}.\n\n{}",
            i.assignee,
            quote(&i.details)
        ),
        "responder replied" => format!(
            "Responder {} replied to incident {incident}.\n\n{}",
            i.assignee,
            quote(&i.details)
        ),
        "conference bridge updated" => {
            format!(
                "Incident {incident} conference bridge updated: {}",
                i.details
            )
        }
        "service updated" => format!("Incident {incident} service updated to {}", i.details),
        "workflow started" => format!("Incident {incident} workflow started: {}", i.details),
        "workflow completed" => format!("Incident {incident} workflow completed: {}", i.details),
        action => with_trigger(format!("Incident {incident} {action} by {}.", i.assignee)),
    };
    Post {
        topic: format!("Incident {}", i.label),
        body,
    }
}
