//! `/api/v1/external/{integration}`: incoming webhooks. A service (GitHub, GitLab, Slack-style
//! senders, Alertmanager, Grafana) posts its payload with a bot's API key in the query string,
//! as Zulip's integrations take it; the integration's formatter (`crate::integrations`) turns it
//! into messages, which are sent as that bot to the `stream` and `topic` the URL names, or to the
//! bot's owner as a direct message when it names no channel.

use super::AppState;
use crate::auth::{constant_time_eq, has_api_key_format};
use crate::commands::messages::{ChannelRef, Destination};
use crate::commands::notices::Notices;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::ids::{ChannelId, UserId};
use crate::integrations::{find, Body, Integration, Outcome, PersonQuery, Request};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Most bytes of a webhook payload (GitHub allows 25 MB; big pushes are well under this).
pub const MAX_PAYLOAD_BYTES: usize = 10 * 1024 * 1024;

/// People one request may name for mentions (the rest are shown by name).
const MAX_PERSON_LOOKUPS: usize = 100;

/// Messages one request may post (a Bitbucket push of many branches, PagerDuty's batches).
const MAX_POSTS: usize = 100;

/// Zulip's `BOT_OWNER_STREAM_ALERT_WAITPERIOD`: at most one notice to a bot's owner a minute.
const OWNER_NOTICE_INTERVAL: Duration = Duration::from_secs(60);

/// The request's parameters: the form body's first, then the query string's.
struct WebhookParams(Vec<(String, String)>);

impl WebhookParams {
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

/// Any method on `/api/v1/external/{integration}`, as Zulip routes them.
pub async fn incoming_webhook(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let name = req.match_info().get("integration").unwrap_or_default();
    let Some(integration) = find(name) else {
        return ApiError::not_found().error_response();
    };
    if req.method() == actix_web::http::Method::HEAD
        && crate::integrations::HEAD_CHECKED.contains(&integration.url_name)
    {
        return HttpResponse::Ok().finish();
    }
    let slack = integration.url_name == "slack_incoming";
    match handle(&state, &req, &body, integration).await {
        Ok(response) => response,
        // Slack senders get Slack's error shape for what goes wrong past authentication.
        Err(Failure::InView(error)) if slack => match &error {
            ApiError::Client { msg, .. } => {
                HttpResponse::build(error.status_code()).json(json!({"ok": false, "error": msg}))
            }
            ApiError::Internal(_) => error.error_response(),
        },
        Err(Failure::InView(error) | Failure::Auth(error)) => error.error_response(),
    }
}

/// Where a request failed: authentication errors keep Zulip's shape for every integration.
enum Failure {
    Auth(ApiError),
    InView(ApiError),
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Failure {
        Failure::InView(error)
    }
}

async fn handle(
    state: &web::Data<AppState>,
    req: &HttpRequest,
    body: &[u8],
    integration: &Integration,
) -> Result<HttpResponse, Failure> {
    let form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let mut pairs: Vec<(String, String)> = Vec::new();
    if form {
        pairs.extend(
            serde_urlencoded::from_bytes::<Vec<(String, String)>>(body).unwrap_or_default(),
        );
    }
    pairs.extend(
        serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string()).unwrap_or_default(),
    );
    let params = WebhookParams(pairs);
    // The key in the URL, as Zulip's integrations are set up; else HTTP Basic credentials,
    // which some services send instead (Zendesk).
    let basic =
        params.get("api_key").is_none() && req.headers().contains_key(header::AUTHORIZATION);
    let bot = match if basic {
        crate::http::auth::authenticate(req).map(|auth| auth.user_id)
    } else {
        authenticate(state, &params)
    } {
        Ok(bot) => bot,
        Err(refused) => {
            // A wrong key counts against the address, as any unauthenticated request.
            if let Some(peer) = req.peer_addr() {
                state
                    .rate_limiter
                    .hit(crate::http::rate_limit::Key::Ip(peer.ip()))
                    .map_err(Failure::Auth)?;
            }
            return Err(Failure::Auth(refused));
        }
    };
    if let Some(standing) = state
        .rate_limiter
        .hit(crate::http::rate_limit::Key::User(bot.0))
        .map_err(Failure::Auth)?
    {
        actix_web::HttpMessage::extensions_mut(req).insert(standing);
    }
    let payload = payload(integration, req, body, &params)?;
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let param = |name: &str| params.get(name);
    // People the service names: by their whole address (as Zulip's Jira integration finds
    // them), by full name, or by the start of an address the bot's owner may see (so that a
    // payload cannot spell out hidden addresses letter by letter); a bounded number a request.
    let lookups = std::cell::Cell::new(0usize);
    let person = |query: &PersonQuery<'_>| {
        lookups.set(lookups.get() + 1);
        if lookups.get() > MAX_PERSON_LOOKUPS {
            return None;
        }
        state.engine.read(|s| {
            let owner = s
                .users
                .get(bot)
                .and_then(|b| b.bot_owner_id)
                .and_then(|o| s.users.get(o))?;
            let active = || s.users.members().filter(|u| u.is_active && !u.is_bot());
            let visible =
                |u: &&crate::projections::User| crate::render::users::email_visible(s, owner, u);
            let found = match *query {
                PersonQuery::Email(email) => {
                    active().find(|u| u.email.eq_ignore_ascii_case(email.trim()))
                }
                PersonQuery::Name(name) => {
                    let lower = name.trim().to_lowercase();
                    if lower.chars().count() < 2 {
                        return None;
                    }
                    active()
                        .find(|u| u.full_name.to_lowercase() == lower)
                        .or_else(|| {
                            active()
                                .filter(visible)
                                .find(|u| u.email.to_lowercase().starts_with(&lower))
                        })
                }
            };
            found.map(|u| (u.full_name.clone(), u.user_id.0))
        })
    };
    let outcome = (integration.format)(&Request {
        header: &header,
        payload: &payload,
        param: &param,
        person: &person,
    });
    let success = || {
        let mut body = json!({"result": "success", "msg": ""});
        if integration.url_name == "slack_incoming" {
            body["ok"] = json!(true);
        }
        HttpResponse::Ok().json(body)
    };
    let posts: Vec<(Option<String>, crate::integrations::Post)> = match outcome {
        Outcome::Send { event_type, posts } => posts
            .into_iter()
            .map(|post| (event_type.clone(), post))
            .collect(),
        Outcome::SendEach(posts) => posts
            .into_iter()
            .map(|(event_type, post)| (Some(event_type), post))
            .collect(),
        Outcome::Ignored => return Ok(success()),
        Outcome::Unsupported { event_type } => {
            // Zulip answers 200 here, with `result: success` and the error's fields.
            return Ok(HttpResponse::Ok().json(json!({
                "result": "success",
                "msg": format!(
                    "The '{event_type}' event isn't currently supported by the {} webhook; ignoring",
                    integration.webhook_name
                ),
                "webhook_name": integration.webhook_name,
                "event_type": event_type,
                "code": "UNSUPPORTED_WEBHOOK_EVENT_TYPE",
            })));
        }
        Outcome::MissingHeader(name) => {
            let path = req.path().to_owned();
            let integration_name = integration.webhook_name;
            notify_owner(state, bot, |_, bot_name| {
                format!(
                    "Hi there!  Your bot {bot_name} just sent an HTTP request to {path} that\n\
                     is missing the HTTP {name} header.  Because this header is how\n\
                     {integration_name} indicates the event type, this usually indicates a configuration\n\
                     issue, where you either entered the URL for a different integration, or are running\n\
                     an older version of the third-party service that doesn't provide that header.\n\
                     Contact your organization's administrators if you need help debugging!"
                )
            })
            .await;
            return Err(ApiError::new(
                ErrorCode::MissingHttpEventHeader,
                format!("Missing the HTTP event header '{name}'"),
            )
            .with("header", name)
            .into());
        }
        Outcome::Refused(reason) => return Err(ApiError::bad_request(reason).into()),
        Outcome::Introduce => {
            let (name, email) = state
                .engine
                .read(|s| {
                    s.users
                        .get(bot)
                        .map(|u| (u.full_name.clone(), u.email.clone()))
                })
                .unwrap_or_default();
            return Ok(HttpResponse::Ok().json(json!({
                "result": "success", "msg": "", "full_name": name, "email": email, "id": bot.0,
            })));
        }
        Outcome::MissingData => {
            let integration_name = integration.webhook_name;
            notify_owner(state, bot, |_, bot_name| {
                format!(
                    "Hi there! Your bot {bot_name} just received a {integration_name} payload that is missing\n\
                     some data that Zulip requires. This usually indicates a configuration issue\n\
                     in your {integration_name} webhook settings. Please make sure that you set the required parameters\n\
                     when configuring the {integration_name} webhook. Contact your organization's administrators if you\n\
                     need further help!"
                )
            })
            .await;
            return Err(ApiError::bad_request("Invalid payload").into());
        }
        Outcome::Malformed(reason) => {
            tracing::info!(integration = integration.url_name, %reason, "webhook payload refused");
            return Err(ApiError::new(
                ErrorCode::AnomalousWebhookPayload,
                format!(
                    "Unable to parse request: Did {} generate this event?",
                    integration.webhook_name
                ),
            )
            .with("webhook_name", integration.webhook_name)
            .into());
        }
    };
    if posts.len() > MAX_POSTS {
        return Err(ApiError::bad_request(format!(
            "Too many messages in one request (at most {MAX_POSTS})"
        ))
        .into());
    }
    let topic_override = params.get("topic");
    let stream = params.get("stream");
    for (event_type, post) in posts {
        if let Some(event_type) = &event_type {
            if !wanted(&params, event_type)? {
                continue;
            }
        }
        let content = post.body.trim_end().trim_start_matches('\n').to_owned();
        if content.is_empty() {
            continue;
        }
        let topic = topic_override.clone().unwrap_or(post.topic);
        send(state, bot, integration, stream.as_deref(), topic, content).await?;
    }
    Ok(success())
}

/// The user whose API key the request carries (`api_key`, Zulip's webhook authentication).
fn authenticate(state: &AppState, params: &WebhookParams) -> ApiResult<UserId> {
    let key = params
        .get("api_key")
        .ok_or_else(|| ApiError::missing("api_key"))?;
    let key = key.trim();
    if !has_api_key_format(key) {
        return Err(ApiError::new(ErrorCode::InvalidApiKey, "Malformed API key"));
    }
    state.engine.read(|s| {
        // Bots first: they are who webhooks are for, and there are few of them.
        let bots = s.users.iter().filter(|u| u.is_bot());
        let user = bots
            .chain(s.users.iter().filter(|u| !u.is_bot()))
            .filter(|u| !u.is_system_bot())
            .find(|u| {
                let expected = state.secret.api_key(u.user_id, &u.api_key_nonce);
                constant_time_eq(expected.as_bytes(), key.as_bytes())
            })
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidApiKey, "Invalid API key"))?;
        if !user.is_active {
            return Err(ApiError::new(
                ErrorCode::UserDeactivated,
                "Account is deactivated",
            ));
        }
        Ok(user.user_id)
    })
}

/// The payload: the JSON body (whatever its type); Slack-style senders may also send it as the
/// form or query field `payload`.
fn payload(
    integration: &Integration,
    req: &HttpRequest,
    body: &[u8],
    params: &WebhookParams,
) -> ApiResult<Value> {
    let json_body = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim() == "application/json");
    let text = match integration.body {
        Body::Form => {
            return Ok(Value::Object(
                params
                    .0
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            ))
        }
        Body::FormPayload if !json_body => params
            .get("payload")
            .ok_or_else(|| ApiError::bad_request("Missing 'payload' argument"))?,
        Body::Either => {
            return Ok(serde_json::from_slice(body).unwrap_or(Value::Null));
        }
        Body::FormPayload | Body::Json => String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::bad_request("Malformed payload"))?,
    };
    serde_json::from_str(&text).map_err(|_| ApiError::bad_request("Malformed JSON"))
}

/// Whether `only_events` / `exclude_events` (JSON lists of shell-style patterns) let this event
/// type through.
fn wanted(params: &WebhookParams, event_type: &str) -> ApiResult<bool> {
    let list = |name: &str| -> ApiResult<Option<Vec<String>>> {
        match params.get(name) {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("{name} is not valid JSON"))),
        }
    };
    if let Some(only) = list("only_events")? {
        if !only.iter().any(|p| shell_match(p, event_type)) {
            return Ok(false);
        }
    }
    if let Some(excluded) = list("exclude_events")? {
        if excluded.iter().any(|p| shell_match(p, event_type)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Shell-style matching (`*`, `?`, `[...]`), as Python's `fnmatch`.
pub fn shell_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Dynamic programming over (pattern position, text position): bounded by their product.
    let mut reachable = vec![false; text.len() + 1];
    reachable[0] = true;
    let mut p = 0;
    while p < pattern.len() {
        let mut next = vec![false; text.len() + 1];
        match pattern[p] {
            '*' => {
                let mut seen = false;
                for t in 0..=text.len() {
                    seen |= reachable[t];
                    next[t] = seen;
                }
                p += 1;
            }
            '[' => {
                // A set up to the closing bracket; an unclosed `[` is a plain character.
                let close = (p + 2..pattern.len()).find(|i| pattern[*i] == ']');
                let (set, step) = match close {
                    Some(end) => (&pattern[p + 1..end], end + 1 - p),
                    None => (&pattern[p..p + 1], 1),
                };
                let (negated, set) = match set.first() {
                    Some('!') if close.is_some() => (true, &set[1..]),
                    _ => (false, set),
                };
                let in_set = |c: char| {
                    let mut i = 0;
                    while i < set.len() {
                        if i + 2 < set.len() && set[i + 1] == '-' {
                            if set[i] <= c && c <= set[i + 2] {
                                return true;
                            }
                            i += 3;
                        } else {
                            if set[i] == c {
                                return true;
                            }
                            i += 1;
                        }
                    }
                    false
                };
                for t in 0..text.len() {
                    next[t + 1] = reachable[t] && (in_set(text[t]) != negated);
                }
                p += step;
            }
            c => {
                for t in 0..text.len() {
                    next[t + 1] = reachable[t] && (c == '?' || text[t] == c);
                }
                p += 1;
            }
        }
        reachable = next;
    }
    reachable[text.len()]
}

/// Sends one message as the bot: to the channel `stream` names (an id when it is all digits,
/// else a name), or to the bot's owner. A channel named that does not exist is not an error
/// (the sender cannot act on it): the owner hears of it from the notification bot instead, at
/// most once a minute.
async fn send(
    state: &web::Data<AppState>,
    bot: UserId,
    integration: &Integration,
    stream: Option<&str>,
    topic: String,
    content: String,
) -> ApiResult<()> {
    let destination = match stream {
        Some(id) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => {
            let id = id
                .parse::<u64>()
                .map_err(|_| ApiError::invalid("stream", id))?;
            Destination::Channel {
                channel: ChannelRef::Id(ChannelId(id)),
                topic: crate::projections::messages::topic_param(&topic),
            }
        }
        Some(name) => {
            let exists = state.engine.read(|s| s.channels.by_name(name).is_some());
            if !exists {
                notify_owner(state, bot, |bot_email, _| {
                    format!(
                        "Your bot `{bot_email}` tried to send a message to channel #**{name}**, but that channel does not exist. Click [here](#channels/new) to create it."
                    )
                })
                .await;
                return Ok(());
            }
            Destination::Channel {
                channel: ChannelRef::Name(name.to_owned()),
                topic: crate::projections::messages::topic_param(&topic),
            }
        }
        None => {
            let owner = state
                .engine
                .read(|s| s.users.get(bot).and_then(|u| u.bot_owner_id))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "This webhook needs a channel ('stream') for users that are not bots",
                    )
                })?;
            Destination::Direct {
                user_ids: vec![owner],
            }
        }
    };
    let client = integration.client_name;
    state
        .engine
        .execute(Some(bot), move |s, ctx| {
            crate::commands::messages::send_message(
                s,
                ctx,
                destination.clone(),
                &content,
                client,
                None,
            )
        })
        .await?;
    Ok(())
}

/// Last notice to each bot's owner.
static LAST_NOTICE: Mutex<Option<HashMap<UserId, Instant>>> = Mutex::new(None);

/// A direct message from the notification bot to `bot`'s owner, unless one went out in the last
/// minute (Zulip's rate limit on these); `text` gets the bot's address and name.
async fn notify_owner(
    state: &web::Data<AppState>,
    bot: UserId,
    text: impl FnOnce(&str, &str) -> String,
) {
    {
        let mut guard = LAST_NOTICE.lock().unwrap_or_else(|p| p.into_inner());
        let last = guard.get_or_insert_with(HashMap::new);
        if last
            .get(&bot)
            .is_some_and(|at| at.elapsed() < OWNER_NOTICE_INTERVAL)
        {
            return;
        }
        last.insert(bot, Instant::now());
    }
    let target = state.engine.read(|s| {
        s.users.get(bot).filter(|u| u.is_bot()).and_then(|u| {
            u.bot_owner_id
                .map(|owner| (owner, u.email.clone(), u.full_name.clone()))
        })
    });
    let Some((owner, email, name)) = target else {
        return;
    };
    let content = text(&email, &name);
    let sent = state
        .engine
        .execute(None, move |s, _| {
            let mut notices = Notices::new(s);
            notices.to_user(owner, content.clone());
            Ok(crate::commands::Decision::events(notices.into_events()))
        })
        .await;
    if let Err(error) = sent {
        tracing::warn!(%error, "could not tell a bot's owner about a webhook");
    }
}

#[cfg(test)]
mod tests {
    use super::shell_match;

    #[test]
    fn shell_patterns_match_as_fnmatch() {
        assert!(shell_match("push_*", "push_commits"));
        assert!(shell_match("*", ""));
        assert!(shell_match("issue?", "issues"));
        assert!(shell_match("[ab]c", "bc"));
        assert!(shell_match("[!a]c", "bc"));
        assert!(!shell_match("[!b]c", "bc"));
        assert!(shell_match("[a-c]x", "bx"));
        assert!(!shell_match("push_*", "pull_request"));
        assert!(!shell_match("issues", "issue"));
        assert!(shell_match("a[b", "a[b"));
    }
}
