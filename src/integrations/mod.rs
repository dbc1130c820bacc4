//! Incoming webhook integrations: how a third-party service's request (event header, JSON
//! payload, URL parameters) becomes the messages Zulip's integration of the same name posts.
//!
//! This layer is pure: no I/O, no state, no clock. The HTTP handler authenticates, parses the
//! body, asks [`find`] for the integration, calls its formatter, then applies the `topic`
//! override and `only_events`/`exclude_events` before sending the [`Post`]s.
//!
//! Formatters never panic on untrusted input: anything missing or of the wrong type becomes
//! [`Outcome::Malformed`].

pub mod alertmanager;
pub mod azuredevops;
pub mod bitbucket2;
pub mod circleci;
pub mod git;
pub mod gitea;
pub mod github;
pub mod gitlab;
pub mod grafana;
pub mod heroku;
pub mod jira;
pub mod librato;
pub mod newrelic;
pub mod opsgenie;
pub mod pagerduty;
pub mod papertrail;
pub mod sentry;
pub mod slack;
pub mod splunk;
pub mod travis;
pub mod trello;
pub mod uptimerobot;
pub mod zabbix;
pub mod zapier;
pub mod zendesk;

use serde_json::Value;

/// One message an integration wants posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    /// The topic, before the `topic` parameter override and topic normalisation.
    pub topic: String,
    /// The Markdown body, before message normalisation (trailing whitespace is stripped later).
    pub body: String,
}

/// What an integration made of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Messages to post (possibly none), with the event type used for
    /// only_events/exclude_events filtering (None when the integration has none).
    Send {
        event_type: Option<String>,
        posts: Vec<Post>,
    },
    /// Messages each with an event type of its own (Grafana's alerts in one request may be
    /// firing and resolved): `only_events`/`exclude_events` apply message by message.
    SendEach(Vec<(String, Post)>),
    /// The event is deliberately ignored (success, nothing posted).
    Ignored,
    /// Zulip's UNSUPPORTED_WEBHOOK_EVENT_TYPE with this event_type.
    Unsupported { event_type: String },
    /// MISSING_HTTP_EVENT_HEADER naming this header.
    MissingHeader(&'static str),
    /// The payload lacks something the integration needs (Zulip answers 500 here; we answer a
    /// 400 with this reason).
    Malformed(String),
    /// A refusal the integration words itself, as Zulip's does (400 `BAD_REQUEST`).
    Refused(String),
    /// The payload lacks data the user's configuration of the service should have put in:
    /// Zulip's "Invalid payload", and the bot's owner is told how to fix it.
    MissingData,
    /// The service checking its connection: answered with the bot's name, address and id,
    /// nothing posted (Zapier's `auth`).
    Introduce,
}

/// How an integration's service sends its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// A JSON document as the body.
    Json,
    /// A JSON document in the form (or query) field `payload`, or as the body when it is sent
    /// as `application/json`.
    FormPayload,
    /// Form fields (and query parameters), read with [`Request::param`]; the payload is them
    /// as a JSON object of strings.
    Form,
    /// Form fields, read with [`Request::param`], and the body as JSON when it is JSON
    /// (null otherwise) as the payload.
    Either,
}

/// What a request gives an integration.
pub struct Request<'a> {
    /// Header lookup, case-insensitive name.
    pub header: &'a dyn Fn(&str) -> Option<String>,
    /// The parsed JSON payload.
    pub payload: &'a Value,
    /// Query/form parameter lookup (e.g. "topic", "branches", "name", "desc",
    /// "use_merge_request_title", "ignore_private_repositories").
    pub param: &'a dyn Fn(&str) -> Option<String>,
    /// The organization's active people a service names, as `(full name, user id)`: by address,
    /// or by a name (a full name, or the start of an address), for silent mentions.
    pub person: &'a dyn Fn(&PersonQuery<'_>) -> Option<(String, u64)>,
}

/// How a service names a person.
#[derive(Debug, Clone, Copy)]
pub enum PersonQuery<'q> {
    /// Their email address, exactly (case aside).
    Email(&'q str),
    /// A full name (case aside), or else the start of an address.
    Name(&'q str),
}

/// Zulip's silent mention of a person.
pub(crate) fn silent_mention((name, id): (String, u64)) -> String {
    format!("@_**{name}|{id}**")
}

/// An integration: its URL name, its name in error messages (`GitHub`...), and its formatter.
pub struct Integration {
    /// The last segment of `/api/v1/external/{url_name}`.
    pub url_name: &'static str,
    /// The name in UNSUPPORTED_WEBHOOK_EVENT_TYPE errors and owner notifications.
    pub webhook_name: &'static str,
    /// The client name messages are sent with (`Zulip{webhook_name}Webhook`).
    pub client_name: &'static str,
    /// Its name as people know it (`realm_incoming_webhook_bots`' `display_name`).
    pub display_name: &'static str,
    /// The event types `only_events`/`exclude_events` filter on (`all_event_types`); `None`
    /// when its messages have none.
    pub event_types: Option<&'static [&'static str]>,
    /// The URL parameters it reads besides `api_key`, `stream` and `topic`: name, label, and
    /// the check of its value as Zulip names it (`check_bool`, `check_string`), as
    /// `config_options` lists them.
    pub url_options: &'static [(&'static str, &'static str, &'static str)],
    /// How the service sends its data.
    pub body: Body,
    /// Payload in, messages out.
    pub format: fn(&Request<'_>) -> Outcome,
}

/// Every integration Chronicle serves.
pub const INTEGRATIONS: &[Integration] = &[
    Integration {
        url_name: "slack_incoming",
        webhook_name: "SlackIncoming",
        client_name: "ZulipSlackIncomingWebhook",
        display_name: "Slack-compatible webhook",
        event_types: None,
        url_options: &[],
        body: Body::FormPayload,
        format: slack::format,
    },
    Integration {
        url_name: "github",
        webhook_name: "GitHub",
        client_name: "ZulipGitHubWebhook",
        display_name: "GitHub",
        event_types: Some(github::EVENT_TYPES),
        url_options: &[
            (
                "branches",
                "Branches (comma-separated) to send push notifications for",
                "check_string",
            ),
            (
                "ignore_private_repositories",
                "Exclude notifications from private repositories",
                "check_bool",
            ),
        ],
        body: Body::Json,
        format: github::format,
    },
    Integration {
        url_name: "gitlab",
        webhook_name: "GitLab",
        client_name: "ZulipGitLabWebhook",
        display_name: "GitLab",
        event_types: Some(gitlab::SUPPORTED),
        url_options: &[
            (
                "branches",
                "Branches (comma-separated) to send push notifications for",
                "check_string",
            ),
            (
                "use_merge_request_title",
                "Use the merge request title as the topic",
                "check_bool",
            ),
        ],
        body: Body::Json,
        format: gitlab::format,
    },
    Integration {
        url_name: "bitbucket2",
        webhook_name: "Bitbucket2",
        client_name: "ZulipBitbucket2Webhook",
        display_name: "Bitbucket",
        event_types: Some(bitbucket2::EVENT_TYPES),
        url_options: &[(
            "branches",
            "Branches (comma-separated) to send push notifications for",
            "check_string",
        )],
        body: Body::Json,
        format: bitbucket2::format,
    },
    Integration {
        url_name: "gitea",
        webhook_name: "Gitea",
        client_name: "ZulipGiteaWebhook",
        display_name: "Gitea",
        event_types: Some(gitea::EVENT_TYPES),
        url_options: &[(
            "branches",
            "Branches (comma-separated) to send push notifications for",
            "check_string",
        )],
        body: Body::Json,
        format: gitea::format,
    },
    Integration {
        url_name: "azuredevops",
        webhook_name: "AzureDevOps",
        client_name: "ZulipAzureDevOpsWebhook",
        display_name: "AzureDevOps",
        event_types: None,
        url_options: &[(
            "branches",
            "Branches (comma-separated) to send push notifications for",
            "check_string",
        )],
        body: Body::Json,
        format: azuredevops::format,
    },
    Integration {
        url_name: "alertmanager",
        webhook_name: "Alertmanager",
        client_name: "ZulipAlertmanagerWebhook",
        display_name: "Prometheus Alertmanager",
        event_types: None,
        url_options: &[
            ("name", "The label that names an alert", "check_string"),
            (
                "desc",
                "The annotation that describes an alert",
                "check_string",
            ),
        ],
        body: Body::Json,
        format: alertmanager::format,
    },
    Integration {
        url_name: "grafana",
        webhook_name: "Grafana",
        client_name: "ZulipGrafanaWebhook",
        display_name: "Grafana",
        event_types: Some(grafana::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: grafana::format,
    },
    Integration {
        url_name: "circleci",
        webhook_name: "CircleCI",
        client_name: "ZulipCircleCIWebhook",
        display_name: "CircleCI",
        event_types: Some(circleci::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: circleci::format,
    },
    Integration {
        url_name: "jira",
        webhook_name: "Jira",
        client_name: "ZulipJiraWebhook",
        display_name: "Jira",
        event_types: Some(jira::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: jira::format,
    },
    Integration {
        url_name: "newrelic",
        webhook_name: "NewRelic",
        client_name: "ZulipNewRelicWebhook",
        display_name: "New Relic",
        event_types: Some(newrelic::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: newrelic::format,
    },
    Integration {
        url_name: "heroku",
        webhook_name: "Heroku",
        client_name: "ZulipHerokuWebhook",
        display_name: "Heroku",
        event_types: None,
        url_options: &[],
        body: Body::Form,
        format: heroku::format,
    },
    Integration {
        url_name: "pagerduty",
        webhook_name: "PagerDuty",
        client_name: "ZulipPagerDutyWebhook",
        display_name: "PagerDuty",
        event_types: Some(pagerduty::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: pagerduty::format,
    },
    Integration {
        url_name: "papertrail",
        webhook_name: "Papertrail",
        client_name: "ZulipPapertrailWebhook",
        display_name: "Papertrail",
        event_types: None,
        url_options: &[],
        body: Body::FormPayload,
        format: papertrail::format,
    },
    Integration {
        url_name: "sentry",
        webhook_name: "Sentry",
        client_name: "ZulipSentryWebhook",
        display_name: "Sentry",
        event_types: None,
        url_options: &[],
        body: Body::Json,
        format: sentry::format,
    },
    Integration {
        url_name: "travis",
        webhook_name: "Travis",
        client_name: "ZulipTravisWebhook",
        display_name: "Travis CI",
        event_types: Some(travis::EVENT_TYPES),
        url_options: &[(
            "ignore_pull_requests",
            "Leave out pull request builds",
            "check_bool",
        )],
        body: Body::FormPayload,
        format: travis::format,
    },
    Integration {
        url_name: "opsgenie",
        webhook_name: "Opsgenie",
        client_name: "ZulipOpsgenieWebhook",
        display_name: "Opsgenie",
        event_types: Some(opsgenie::EVENT_TYPES),
        url_options: &[(
            "eu_region",
            "Use Opsgenie's European service region",
            "check_bool",
        )],
        body: Body::Json,
        format: opsgenie::format,
    },
    Integration {
        url_name: "uptimerobot",
        webhook_name: "UptimeRobot",
        client_name: "ZulipUptimeRobotWebhook",
        display_name: "UptimeRobot",
        event_types: Some(uptimerobot::EVENT_TYPES),
        url_options: &[],
        body: Body::Json,
        format: uptimerobot::format,
    },
    Integration {
        url_name: "trello",
        webhook_name: "Trello",
        client_name: "ZulipTrelloWebhook",
        display_name: "Trello",
        event_types: None,
        url_options: &[],
        body: Body::Json,
        format: trello::format,
    },
    Integration {
        url_name: "zendesk",
        webhook_name: "Zendesk",
        client_name: "ZulipZendeskWebhook",
        display_name: "Zendesk",
        event_types: None,
        url_options: &[],
        body: Body::Form,
        format: zendesk::format,
    },
    Integration {
        url_name: "zabbix",
        webhook_name: "Zabbix",
        client_name: "ZulipZabbixWebhook",
        display_name: "Zabbix",
        event_types: None,
        url_options: &[],
        body: Body::Json,
        format: zabbix::format,
    },
    Integration {
        url_name: "splunk",
        webhook_name: "Splunk",
        client_name: "ZulipSplunkWebhook",
        display_name: "Splunk",
        event_types: None,
        url_options: &[],
        body: Body::Json,
        format: splunk::format,
    },
    Integration {
        url_name: "zapier",
        webhook_name: "Zapier",
        client_name: "ZulipZapierWebhook",
        display_name: "Zapier",
        event_types: None,
        url_options: &[],
        body: Body::Json,
        format: zapier::format,
    },
    Integration {
        url_name: "librato",
        webhook_name: "Librato",
        client_name: "ZulipLibratoWebhook",
        display_name: "Librato",
        event_types: None,
        url_options: &[],
        body: Body::Either,
        format: librato::format,
    },
];

/// `realm_incoming_webhook_bots` of `/register`: every integration, as Zulip describes them
/// to the web app's bot form.
pub fn webhook_bots_json() -> Value {
    Value::Array(
        INTEGRATIONS
            .iter()
            .map(|i| {
                serde_json::json!({
                    "name": i.url_name,
                    "display_name": i.display_name,
                    "all_event_types": i.event_types,
                    "config_options": i.url_options.iter().map(|(key, label, validator)| {
                        serde_json::json!({"key": key, "label": label, "validator": validator})
                    }).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// Integrations whose service checks the address with a `HEAD` request before using it:
/// answered with an empty 200, before authentication (Zulip's `return_success_on_head_request`).
pub const HEAD_CHECKED: &[&str] = &["trello"];

/// The integration served at `/api/v1/external/{url_name}`.
pub fn find(url_name: &str) -> Option<&'static Integration> {
    INTEGRATIONS.iter().find(|i| i.url_name == url_name)
}

// ---- Payload access shared by the formatters -------------------------------------------------

/// An ISO 8601 time as Zulip's integrations show it: `<time:YYYY-MM-DDTHH:MM:SS±HH:MM>`, to the
/// second, in the offset the time was given in (UTC without one).
pub(crate) fn global_time(text: &str) -> Option<String> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text.trim())
        .or_else(|_| chrono::DateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S%.f%:z"))
        .ok()?;
    Some(format!("<time:{}>", parsed.format("%Y-%m-%dT%H:%M:%S%:z")))
}

/// Seconds since the epoch as Zulip's global time, in UTC (`None` out of the calendar's range).
pub(crate) fn epoch_time(seconds: i64) -> Option<String> {
    chrono::DateTime::from_timestamp(seconds, 0)
        .map(|t| format!("<time:{}>", t.format("%Y-%m-%dT%H:%M:%S+00:00")))
}

/// A formatter step's result: the error is the reason given with [`Outcome::Malformed`].
pub(crate) type Res<T> = Result<T, String>;

/// The value at `path` (a chain of object keys) under `v`, if every step exists.
pub(crate) fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key)?;
    }
    Some(cur)
}

/// The value at `path`, which must be present (it may be null).
pub(crate) fn req<'v>(v: &'v Value, path: &[&str]) -> Res<&'v Value> {
    at(v, path).ok_or_else(|| format!("missing field {}", path.join(".")))
}

/// The string at `path`, which must be present and a string.
pub(crate) fn req_str<'v>(v: &'v Value, path: &[&str]) -> Res<&'v str> {
    req(v, path)?
        .as_str()
        .ok_or_else(|| format!("field {} is not a string", path.join(".")))
}

/// The string at `path`, or None when it is absent or null; any other type is an error.
pub(crate) fn opt_str<'v>(v: &'v Value, path: &[&str]) -> Res<Option<&'v str>> {
    match at(v, path) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("field {} is not a string", path.join("."))),
    }
}

/// The string at `path`, or empty when it is absent or not a string.
pub(crate) fn text_at<'v>(v: &'v Value, path: &[&str]) -> &'v str {
    at(v, path).and_then(Value::as_str).unwrap_or_default()
}

/// The number or string at `path`, as text (`None` when it is neither).
pub(crate) fn number_at(v: &Value, path: &[&str]) -> Option<String> {
    match at(v, path) {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The integer at `path`, as text (Python's `str` of an int).
pub(crate) fn req_int(v: &Value, path: &[&str]) -> Res<String> {
    match req(v, path)? {
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        _ => Err(format!("field {} is not an integer", path.join("."))),
    }
}

/// The boolean at `path`, which must be present and a boolean.
pub(crate) fn req_bool(v: &Value, path: &[&str]) -> Res<bool> {
    req(v, path)?
        .as_bool()
        .ok_or_else(|| format!("field {} is not a boolean", path.join(".")))
}

/// The array at `path`, which must be present and an array.
pub(crate) fn req_array<'v>(v: &'v Value, path: &[&str]) -> Res<&'v Vec<Value>> {
    req(v, path)?
        .as_array()
        .ok_or_else(|| format!("field {} is not a list", path.join(".")))
}

/// Python truthiness of an optional JSON value (absent, null, false, 0, "", [] and {} are
/// false).
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// A JSON boolean URL parameter (`true`/`false`), with its default when absent.
pub(crate) fn bool_param(req: &Request<'_>, name: &str, default: bool) -> Res<bool> {
    match (req.param)(name) {
        None => Ok(default),
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(_) => Err(format!("{name} is not a boolean")),
            Err(_) => Err(format!("{name} is not valid JSON")),
        },
    }
}

/// Python's `str()` of a JSON value: strings as they are, ints as digits, floats as Python's
/// `repr`, `True`/`False`, `None`; lists and objects as compact JSON.
pub(crate) fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                n.to_string()
            } else {
                n.as_f64().map(py_float).unwrap_or_else(|| n.to_string())
            }
        }
        other => other.to_string(),
    }
}

/// Python's `repr` of a float: the shortest round-tripping digits, fixed notation for
/// exponents -4..=15 (always with a fractional part), scientific (`1e-05`, `1.5e+16`) outside.
pub(crate) fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // `{:e}` gives the shortest round-tripping digits: "1.05e1", "-1e16", "1e-5".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else {
            let point = point as usize;
            if point >= digits.len() {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{body}")
    } else {
        let mantissa = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

/// Runs a formatter on a payload with the given headers and parameters (test helper).
#[cfg(test)]
pub(crate) fn run_fixture(
    format: fn(&Request<'_>) -> Outcome,
    headers: &[(&str, &str)],
    payload: &str,
    params: &[(&str, &str)],
) -> Outcome {
    let payload: Value = serde_json::from_str(payload).expect("fixture is valid JSON");
    run_value(format, headers, &payload, params)
}

/// Runs a formatter on an already parsed payload (test helper).
#[cfg(test)]
pub(crate) fn run_value(
    format: fn(&Request<'_>) -> Outcome,
    headers: &[(&str, &str)],
    payload: &Value,
    params: &[(&str, &str)],
) -> Outcome {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| (*v).to_string())
    };
    let person = |_: &PersonQuery<'_>| None;
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_string())
    };
    format(&Request {
        header: &header,
        payload,
        param: &param,
        person: &person,
    })
}

/// The single post of a `Send` outcome, with its event type (test helper).
#[cfg(test)]
pub(crate) fn single(outcome: Outcome) -> (Option<String>, Post) {
    match outcome {
        Outcome::Send {
            event_type,
            mut posts,
        } => {
            assert_eq!(posts.len(), 1, "expected one post, got {posts:?}");
            (event_type, posts.remove(0))
        }
        Outcome::SendEach(mut posts) => {
            assert_eq!(posts.len(), 1, "expected one post, got {posts:?}");
            let (event_type, post) = posts.remove(0);
            (Some(event_type), post)
        }
        other => panic!("expected one post, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn find_knows_each_integration_by_its_address_once() {
        for integration in INTEGRATIONS {
            assert_eq!(
                find(integration.url_name).map(|i| i.client_name),
                Some(integration.client_name)
            );
            let same = INTEGRATIONS
                .iter()
                .filter(|i| i.url_name == integration.url_name)
                .count();
            assert_eq!(same, 1, "{} is listed once", integration.url_name);
        }
        assert_eq!(INTEGRATIONS.len(), 24);
        assert!(
            find("jenkins").is_none(),
            "Jenkins posts messages, with no webhook"
        );
        assert_eq!(
            find("github").map(|i| i.client_name),
            Some("ZulipGitHubWebhook")
        );
    }

    #[test]
    fn python_str_of_values() {
        assert_eq!(py_str(&json!(10)), "10");
        assert_eq!(py_str(&json!(-3)), "-3");
        assert_eq!(py_str(&json!(10.5)), "10.5");
        assert_eq!(py_str(&json!(100.0)), "100.0");
        assert_eq!(py_str(&json!(0.0001)), "0.0001");
        assert_eq!(py_str(&json!(0.00001)), "1e-05");
        assert_eq!(py_str(&json!(1e16)), "1e+16");
        assert_eq!(py_str(&json!(1.5e16)), "1.5e+16");
        assert_eq!(py_str(&json!(123456789012345.6)), "123456789012345.6");
        assert_eq!(py_str(&json!(-2.25)), "-2.25");
        assert_eq!(py_str(&json!(true)), "True");
        assert_eq!(py_str(&json!(null)), "None");
        assert_eq!(py_str(&json!("x")), "x");
    }

    #[test]
    fn truthiness() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!([]))));
        assert!(!truthy(Some(&json!(0))));
        assert!(truthy(Some(&json!("a"))));
        assert!(truthy(Some(&json!({"a": 1}))));
    }
}
