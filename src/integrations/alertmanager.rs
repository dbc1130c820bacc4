//! `alertmanager`: Prometheus Alertmanager notifications, one message per topic and status.
//!
//! Alerts are grouped by the value of the `name` field (default `instance`) as the topic, and
//! described by the `desc` field (default `alertname`); both are looked up in the alert's labels,
//! then its annotations. There is no event type, so no event filtering.

use super::{req_array, req_str, Outcome, Post, Request, Res};
use serde_json::Value;

/// Formats an Alertmanager notification.
pub fn format(req: &Request<'_>) -> Outcome {
    let name_field = (req.param)("name").unwrap_or_else(|| "instance".to_string());
    let desc_field = (req.param)("desc").unwrap_or_else(|| "alertname".to_string());
    match render(req.payload, &name_field, &desc_field) {
        Ok(posts) => Outcome::Send {
            event_type: None,
            posts,
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

/// One topic's alert lines, by status.
struct Group {
    topic: String,
    firing: Vec<String>,
    resolved: Vec<String>,
}

fn render(p: &Value, name_field: &str, desc_field: &str) -> Res<Vec<Post>> {
    let mut groups: Vec<Group> = Vec::new();
    for alert in req_array(p, &["alerts"])? {
        let name = lookup(alert, name_field)?
            .unwrap_or("(unknown)")
            .to_string();
        let desc = match lookup(alert, desc_field)? {
            Some(desc) => desc.to_string(),
            None => format!("<missing field: {desc_field}>"),
        };
        let url = req_str(alert, &["generatorURL"])?.replace("tab=1", "tab=0");
        let line = format!("{desc} ([source]({url}))");
        let index = match groups.iter().position(|g| g.topic == name) {
            Some(index) => index,
            None => {
                groups.push(Group {
                    topic: name,
                    firing: Vec::new(),
                    resolved: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let Some(group) = groups.get_mut(index) else {
            continue;
        };
        match req_str(alert, &["status"])? {
            "firing" => group.firing.push(line),
            "resolved" => group.resolved.push(line),
            other => return Err(format!("unknown alert status {other}")),
        }
    }

    let mut posts = Vec::new();
    for group in groups {
        for (icon, title, lines) in [
            (":alert:", "FIRING", &group.firing),
            (":squared_ok:", "Resolved", &group.resolved),
        ] {
            let body = match lines.as_slice() {
                [] => continue,
                [only] => format!("{icon} **{title}** {only}"),
                many => {
                    let items: Vec<String> = many.iter().map(|l| format!("* {l}")).collect();
                    format!("{icon} **{title}**\n{}", items.join("\n"))
                }
            };
            posts.push(Post {
                topic: group.topic.clone(),
                body,
            });
        }
    }
    Ok(posts)
}

/// A field of an alert: its label, else its annotation.
fn lookup<'v>(alert: &'v Value, field: &str) -> Res<Option<&'v str>> {
    for section in ["labels", "annotations"] {
        if let Some(value) = alert.get(section).and_then(|s| s.get(field)) {
            return value
                .as_str()
                .map(Some)
                .ok_or_else(|| format!("{section}.{field} is not a string"));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::run_fixture;

    const ALERTS: &str = include_str!("../../tests/fixtures/webhooks/alertmanager/alerts.json");

    fn posts(params: &[(&str, &str)]) -> Vec<Post> {
        match run_fixture(format, &[], ALERTS, params) {
            Outcome::Send { event_type, posts } => {
                assert_eq!(event_type, None);
                posts
            }
            other => panic!("{other:?}"),
        }
    }

    fn post(topic: &str, body: &str) -> Post {
        Post {
            topic: topic.to_string(),
            body: body.to_string(),
        }
    }

    #[test]
    fn grouped_by_topic_then_status_with_name_and_desc_params() {
        let got = posts(&[("name", "host"), ("desc", "summary")]);
        let g = "http://prometheus.example.test:9090/graph?g0.expr=node_temp&g0.tab=0";
        assert_eq!(
            got,
            vec![
                post(
                    "rack-a",
                    &format!(
                        ":alert: **FIRING**\n\
                         * Core temperature is 81C ([source]({g}))\n\
                         * Fan speed is 0 rpm ([source]({g}))"
                    )
                ),
                post(
                    "rack-a",
                    &format!(":squared_ok: **Resolved** Core temperature is 64C ([source]({g}))")
                ),
                post(
                    "rack-b",
                    &format!(":alert: **FIRING** Disk is 97% full ([source]({g}))")
                ),
            ]
        );
    }

    #[test]
    fn defaults_and_missing_fields() {
        let got = posts(&[("desc", "no_such_field")]);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].topic, "node-1:9100");
        assert!(got[0]
            .body
            .starts_with(":alert: **FIRING**\n* <missing field: no_such_field> ([source]("));
        assert_eq!(got[2].topic, "(unknown)");
    }
}
