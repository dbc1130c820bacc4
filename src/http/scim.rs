//! SCIM 2.0 provisioning (RFC 7643 and 7644) at `/scim/v2`, as Zulip serves it for Okta and
//! Entra ID: the identity provider lists, creates, changes, deactivates and reactivates the
//! organization's accounts with a bearer token (`[scim] token`).
//!
//! - `GET /Users` (with `filter`, `startIndex`, `count`), `POST /Users/.search`, `POST /Users`,
//!   `GET|PUT|PATCH /Users/{id}`; `DELETE` is refused as Zulip refuses it (an account is
//!   deactivated, never deleted: `active` false).
//! - `GET /ServiceProviderConfig`, `/ResourceTypes`, `/Schemas` (Zulip answers 501 there; the
//!   discovery lets generic clients and conformance testers find their way).
//! - The user resource is Zulip's: `userName` is the address, `name.formatted` (or
//!   `givenName` and `familyName` with `name_formatted_included = false`), `displayName`,
//!   `role` (Zulip's names), `active`, `meta`. Filters take the whole RFC grammar over every
//!   attribute shown (`identity::scim_filter`).
//! - Errors are SCIM's (`urn:ietf:params:scim:api:messages:2.0:Error`, `status` a number, as
//!   Zulip sends it); a refused token or request is written to the sign-in audit as `scim`.

use super::AppState;
use crate::commands::scim::{self as commands, Changes, MemberOp};
use crate::error::{ApiError, ErrorCode};
use crate::events::Role;
use crate::identity::scim_filter;
use crate::identity::Scim;
use crate::ids::{GroupId, UserId};
use crate::projections::{Projections, User};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

const CONTENT_TYPE: &str = "application/scim+json";
const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const SEARCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";
/// Results per page when the client does not say (Zulip's), and at most.
const DEFAULT_COUNT: usize = 50;
const MAX_COUNT: usize = 1000;
/// The largest request body taken.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Zulip's role names, in its order.
const ROLES: [(&str, Role); 5] = [
    ("owner", Role::Owner),
    ("administrator", Role::Administrator),
    ("moderator", Role::Moderator),
    ("member", Role::Member),
    ("guest", Role::Guest),
];

/// A refusal in SCIM's shape.
struct Refusal {
    status: StatusCode,
    detail: String,
    scim_type: Option<&'static str>,
}

type Answer = Result<HttpResponse, Refusal>;

fn refuse(
    status: StatusCode,
    detail: impl Into<String>,
    scim_type: Option<&'static str>,
) -> Refusal {
    Refusal {
        status,
        detail: detail.into(),
        scim_type,
    }
}

fn bad(detail: impl Into<String>) -> Refusal {
    refuse(StatusCode::BAD_REQUEST, detail, None)
}

fn not_found(id: &str) -> Refusal {
    refuse(
        StatusCode::NOT_FOUND,
        format!("Resource {id} not found"),
        None,
    )
}

impl Refusal {
    fn response(&self) -> HttpResponse {
        let mut body = json!({
            "schemas": [ERROR_SCHEMA],
            "detail": self.detail,
            "status": self.status.as_u16(),
        });
        if let Some(kind) = self.scim_type {
            body["scimType"] = json!(kind);
        }
        HttpResponse::build(self.status)
            .content_type(CONTENT_TYPE)
            .body(body.to_string())
    }
}

/// A command's refusal as SCIM says it: a taken address is a conflict.
impl From<ApiError> for Refusal {
    fn from(error: ApiError) -> Refusal {
        let text = error.body()["msg"].as_str().unwrap_or_default().to_owned();
        match error.code() {
            None => refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Exception occurred while processing the SCIM request",
                None,
            ),
            _ if text.contains("already in use") => {
                refuse(StatusCode::CONFLICT, text, Some("uniqueness"))
            }
            _ => bad(text),
        }
    }
}

fn ok(status: StatusCode, body: &Value) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(CONTENT_TYPE)
        .body(body.to_string())
}

/// The SCIM settings when the request carries the configured token.
fn authorized<'a>(req: &HttpRequest, state: &'a AppState) -> Option<&'a Scim> {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    state
        .identity
        .scim
        .as_ref()
        .filter(|scim| crate::auth::constant_time_eq(given, scim.authorization.as_bytes()))
}

/// What answers a request without the token: 404 while SCIM is off (nothing recorded); else
/// 401 with an empty body, as Zulip's, counted against the address's unauthenticated limit
/// (429 past it) and, under the limit, written to the sign-in audit.
fn refusal_without_token(req: &HttpRequest, state: &AppState) -> HttpResponse {
    if state.identity.scim.is_none() {
        return refuse(
            StatusCode::NOT_FOUND,
            "SCIM is not enabled on this server",
            None,
        )
        .response();
    }
    let ip = super::auth::client_ip(req, state);
    if let Some(ip) = ip {
        if state
            .rate_limiter
            .hit(crate::http::rate_limit::Key::Ip(ip))
            .is_err()
        {
            return refuse(StatusCode::TOO_MANY_REQUESTS, "Too many requests", None).response();
        }
    }
    let refused = ApiError::new(ErrorCode::Unauthorized, "SCIM token refused");
    super::auth::audit_sign_in_outcome(state, "scim", "", ip, Err(&refused));
    HttpResponse::Unauthorized()
        .insert_header((header::WWW_AUTHENTICATE, "Bearer realm=\"scim\""))
        .finish()
}

/// In front of every `/scim/v2` route: a request without the token is answered before its body
/// is read ([`refusal_without_token`]).
pub fn guard<S>(
    req: actix_web::dev::ServiceRequest,
    srv: &S,
) -> std::pin::Pin<
    Box<
        dyn std::future::Future<
            Output = Result<
                actix_web::dev::ServiceResponse<actix_web::body::BoxBody>,
                actix_web::Error,
            >,
        >,
    >,
>
where
    S: actix_web::dev::Service<
        actix_web::dev::ServiceRequest,
        Response = actix_web::dev::ServiceResponse<actix_web::body::BoxBody>,
        Error = actix_web::Error,
    >,
    S::Future: 'static,
{
    let refused = req
        .app_data::<web::Data<AppState>>()
        .filter(|state| authorized(req.request(), state).is_none())
        .map(|state| refusal_without_token(req.request(), state));
    if let Some(response) = refused {
        let response = req.into_response(response);
        return Box::pin(async move { Ok(response) });
    }
    let response = srv.call(req);
    Box::pin(response)
}

/// Runs `work` for an authorized client (the guard let it through); a refusal is answered in
/// SCIM's shape, and a bad request is written to the sign-in audit with its kind.
async fn serve<F, Fut>(req: &HttpRequest, state: &AppState, work: F) -> HttpResponse
where
    F: FnOnce(Scim) -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let Some(scim) = authorized(req, state).cloned() else {
        return refusal_without_token(req, state);
    };
    let client = scim.client_name.clone();
    match work(scim).await {
        Ok(response) => response,
        Err(refusal) => {
            tracing::info!(client = %client, status = refusal.status.as_u16(), detail = %refusal.detail, "SCIM request refused");
            if refusal.status == StatusCode::BAD_REQUEST {
                let ip = super::auth::client_ip(req, state);
                let error = ApiError::bad_request(refusal.scim_type.unwrap_or("invalidRequest"));
                super::auth::audit_sign_in_outcome(state, "scim", &client, ip, Err(&error));
            }
            refusal.response()
        }
    }
}

fn role_name(role: Role) -> &'static str {
    ROLES
        .iter()
        .find(|(_, r)| *r == role)
        .map_or("member", |(name, _)| name)
}

/// A person as a SCIM user resource.
pub fn user_resource(realm_url: &str, scim: &Scim, user: &User) -> Value {
    let name = if scim.name_formatted_included {
        json!({"formatted": user.full_name})
    } else {
        let (given, family) = user
            .full_name
            .split_once(' ')
            .unwrap_or((user.full_name.as_str(), ""));
        json!({"givenName": given, "familyName": family})
    };
    let joined = crate::time::iso8601_ms(user.date_joined_ms);
    json!({
        "schemas": [USER_SCHEMA],
        "id": user.user_id.0.to_string(),
        "userName": user.email,
        "name": name,
        "displayName": user.full_name,
        "role": role_name(user.role),
        "active": user.is_active,
        "meta": {
            "resourceType": "User",
            "created": joined,
            "lastModified": joined,
            "location": format!("{realm_url}/scim/v2/Users/{}", user.user_id.0),
        },
    })
}

/// The people SCIM manages: every human account, deactivated ones included, by id.
fn people(s: &Projections) -> impl Iterator<Item = &User> {
    s.users.members().filter(|u| !u.is_bot())
}

fn person(s: &Projections, id: &str) -> Option<UserId> {
    let id: u64 = id.parse().ok()?;
    s.users
        .get(UserId(id))
        .filter(|u| !u.is_bot())
        .map(|u| u.user_id)
}

/// A list request's parameters, from the query or a `.search` body.
struct Query {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    projection: Projection,
}

/// Which attributes an answer keeps (`attributes`, `excludedAttributes`: RFC 7644, 3.4.2.5).
#[derive(Debug, Clone, Default)]
struct Projection {
    /// Only these (and what is always returned).
    only: Option<Vec<Vec<String>>>,
    /// All but these.
    without: Vec<Vec<String>>,
}

/// Attributes every answer keeps whatever was asked.
const ALWAYS: [&str; 2] = ["id", "schemas"];

fn paths(text: &str) -> Result<Vec<Vec<String>>, Refusal> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            scim_filter::attribute_path(p)
                .map(|parts| parts.iter().map(|s| s.to_ascii_lowercase()).collect())
                .map_err(|why| refuse(StatusCode::BAD_REQUEST, why, Some("invalidPath")))
        })
        .collect()
}

impl Projection {
    fn from_pairs(pairs: &[(String, String)]) -> Result<Projection, Refusal> {
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        Ok(Projection {
            only: get("attributes").map(paths).transpose()?,
            without: get("excludedAttributes")
                .map(paths)
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// `resource` with only the attributes asked for.
    fn apply(&self, resource: Value) -> Value {
        let Value::Object(map) = resource else {
            return resource;
        };
        let kept = map
            .into_iter()
            .filter_map(|(name, value)| {
                let lower = name.to_ascii_lowercase();
                if ALWAYS.contains(&name.as_str()) {
                    return Some((name, value));
                }
                if self.without.iter().any(|p| p.len() == 1 && p[0] == lower) {
                    return None;
                }
                let value = match &self.only {
                    None => value,
                    Some(only) => {
                        let asked: Vec<&Vec<String>> =
                            only.iter().filter(|p| p[0] == lower).collect();
                        if asked.is_empty() {
                            return None;
                        }
                        // `name.formatted`: only that part of the complex attribute.
                        if asked.iter().any(|p| p.len() == 1) {
                            value
                        } else {
                            match value {
                                Value::Object(parts) => Value::Object(
                                    parts
                                        .into_iter()
                                        .filter(|(part, _)| {
                                            let part = part.to_ascii_lowercase();
                                            asked.iter().any(|p| p.get(1) == Some(&part))
                                        })
                                        .collect(),
                                ),
                                other => other,
                            }
                        }
                    }
                };
                let value = match value {
                    Value::Object(parts) => Value::Object(
                        parts
                            .into_iter()
                            .filter(|(part, _)| {
                                let part = part.to_ascii_lowercase();
                                !self
                                    .without
                                    .iter()
                                    .any(|p| p.len() == 2 && p[0] == lower && p[1] == part)
                            })
                            .collect(),
                    ),
                    other => other,
                };
                Some((name, value))
            })
            .collect();
        Value::Object(kept)
    }
}

/// One page of the resources `collect` gives for the query's filter.
fn page(query: Query, collect: impl FnOnce(Option<&scim_filter::Filter>) -> Vec<Value>) -> Answer {
    let filter = match query
        .filter
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        Some(text) => Some(scim_filter::parse(text).map_err(|why| {
            refuse(
                StatusCode::BAD_REQUEST,
                format!("Invalid filter/search query: {why}"),
                Some("invalidFilter"),
            )
        })?),
        None => None,
    };
    let start = query.start_index.unwrap_or(1);
    if start < 1 {
        return Err(bad("Invalid startIndex (must be >= 1)"));
    }
    let count = query.count.unwrap_or(DEFAULT_COUNT as i64);
    if count < 0 {
        return Err(bad("Invalid pagination values: count must not be negative"));
    }
    let count = usize::try_from(count).unwrap_or(MAX_COUNT).min(MAX_COUNT);
    let matching = collect(filter.as_ref());
    let total = matching.len();
    let skip = usize::try_from(start - 1).unwrap_or(usize::MAX);
    let page: Vec<Value> = matching
        .into_iter()
        .skip(skip)
        .take(count)
        .map(|r| query.projection.apply(r))
        .collect();
    Ok(ok(
        StatusCode::OK,
        &json!({
            "schemas": [LIST_SCHEMA],
            "totalResults": total,
            "itemsPerPage": page.len(),
            "startIndex": start,
            "Resources": page,
        }),
    ))
}

fn list_users_page(state: &AppState, scim: &Scim, query: Query) -> Answer {
    let realm_url = state.site.realm_url.clone();
    page(query, |filter| {
        state.engine.read(|s| {
            people(s)
                .map(|u| user_resource(&realm_url, scim, u))
                .filter(|r| filter.is_none_or(|f| scim_filter::matches(f, r)))
                .collect()
        })
    })
}

fn int_param(pairs: &[(String, String)], name: &str) -> Result<Option<i64>, Refusal> {
    match pairs.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        None => Ok(None),
        Some((_, v)) => v.trim().parse().map(Some).map_err(|_| {
            bad(format!(
                "Invalid pagination values: {name} must be a number"
            ))
        }),
    }
}

/// A list request's parameters from the query string.
fn query_of(req: &HttpRequest) -> Result<Query, Refusal> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).map_err(|_| bad("Invalid query"))?;
    Ok(Query {
        filter: pairs
            .iter()
            .find(|(n, _)| n == "filter")
            .map(|(_, v)| v.clone()),
        start_index: int_param(&pairs, "startIndex")?,
        count: int_param(&pairs, "count")?,
        projection: Projection::from_pairs(&pairs)?,
    })
}

/// `GET /scim/v2/Users`.
pub async fn list_users(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        list_users_page(&state, &scim, query_of(&req)?)
    })
    .await
}

/// A request body as JSON (bounded by the route's payload limit).
fn body_json(body: &[u8]) -> Result<Map<String, Value>, Refusal> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(refuse(
            StatusCode::BAD_REQUEST,
            "The request body must be a JSON object",
            Some("invalidSyntax"),
        )),
        Err(error) => Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("The request body is not JSON: {error}"),
            Some("invalidSyntax"),
        )),
    }
}

fn json_int(body: &Map<String, Value>, name: &str) -> Result<Option<i64>, Refusal> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            bad(format!(
                "Invalid pagination values: {name} must be a number"
            ))
        }),
    }
}

/// A list request's parameters from a `SearchRequest` body.
fn search_of(body: &[u8]) -> Result<Query, Refusal> {
    let body = body_json(body)?;
    let schemas = body.get("schemas").and_then(Value::as_array);
    if !schemas.is_some_and(|s| s.iter().any(|v| v == SEARCH_SCHEMA)) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("The search request must have the schema {SEARCH_SCHEMA}"),
            Some("invalidValue"),
        ));
    }
    let filter = match body.get("filter") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(f.clone()),
        Some(_) => return Err(bad("filter must be a string")),
    };
    // The body's lists of attributes, as the query string's comma-separated ones.
    let mut pairs = Vec::new();
    for name in ["attributes", "excludedAttributes"] {
        match body.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                let names: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
                let names =
                    names.ok_or_else(|| bad(format!("{name} must be a list of strings")))?;
                pairs.push((name.to_owned(), names.join(",")));
            }
            Some(_) => return Err(bad(format!("{name} must be a list of strings"))),
        }
    }
    Ok(Query {
        filter,
        start_index: json_int(&body, "startIndex")?,
        count: json_int(&body, "count")?,
        projection: Projection::from_pairs(&pairs)?,
    })
}

/// `POST /scim/v2/Users/.search` (a `SearchRequest`).
pub async fn search_users(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        list_users_page(&state, &scim, search_of(&body)?)
    })
    .await
}

fn id_in_path(req: &HttpRequest) -> String {
    req.match_info().get("id").unwrap_or_default().to_owned()
}

fn one(state: &AppState, scim: &Scim, id: &str, status: StatusCode) -> Answer {
    located(status, user_of(state, scim, id)?)
}

fn user_of(state: &AppState, scim: &Scim, id: &str) -> Result<Value, Refusal> {
    let realm_url = state.site.realm_url.clone();
    let resource = state.engine.read(|s| {
        person(s, id)
            .and_then(|u| s.users.get(u))
            .map(|u| user_resource(&realm_url, scim, u))
    });
    resource.ok_or_else(|| not_found(id))
}

/// A resource with its `Location` header.
fn located(status: StatusCode, resource: Value) -> Answer {
    let location = resource["meta"]["location"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut response = ok(status, &resource);
    if let Ok(value) = header::HeaderValue::from_str(&location) {
        if !location.is_empty() {
            response.headers_mut().insert(header::LOCATION, value);
        }
    }
    Ok(response)
}

/// `GET /scim/v2/Users/{id}`.
pub async fn get_user(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let projection = query_of(&req)?.projection;
        let user = user_of(&state, &scim, &id_in_path(&req))?;
        located(StatusCode::OK, projection.apply(user))
    })
    .await
}

/// The name a resource body gives: `name.formatted`, else the given and family names joined,
/// else `displayName`.
fn name_of(body: &Map<String, Value>) -> Result<Option<String>, Refusal> {
    let text = |v: Option<&Value>| -> Result<Option<String>, Refusal> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(bad("Names must be strings")),
        }
    };
    let name = lookup(body, "name").and_then(Value::as_object);
    if let Some(name) = name {
        if let Some(formatted) = text(lookup(name, "formatted"))? {
            return Ok(Some(formatted));
        }
        let parts: Vec<String> = [
            text(lookup(name, "givenName"))?,
            text(lookup(name, "familyName"))?,
        ]
        .into_iter()
        .flatten()
        .collect();
        if !parts.is_empty() {
            return Ok(Some(parts.join(" ")));
        }
    }
    text(lookup(body, "displayName"))
}

/// `body[name]`, the name compared without case (SCIM's attribute names).
fn lookup<'a>(body: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    body.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

fn role_of(value: Option<&Value>) -> Result<Option<Role>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => ROLES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .map(|(_, role)| Some(*role))
            .ok_or_else(|| {
                let names: Vec<&str> = ROLES.iter().map(|(n, _)| *n).collect();
                bad(format!("Invalid role: {name}. Valid values are: {names:?}"))
            }),
        Some(_) => Err(bad("role must be a string")),
    }
}

/// `active` as a boolean; Entra ID sends `"True"` and `"False"` as strings.
fn active_of(value: Option<&Value>) -> Result<Option<bool>, Refusal> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(other) => Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("Invalid value for active: {other}"),
            Some("invalidValue"),
        )),
    }
}

fn user_name_of(body: &Map<String, Value>) -> Result<Option<String>, Refusal> {
    match lookup(body, "userName") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(email)) => Ok(Some(email.trim().to_owned())),
        Some(_) => Err(bad("userName must be a string")),
    }
}

/// `POST /scim/v2/Users`: a new account (201 with its resource).
pub async fn create_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let body = body_json(&body)?;
        let email = user_name_of(&body)?
            .filter(|e| !e.is_empty())
            .ok_or_else(|| bad("Must specify userName (the email address) when creating a new user"))?;
        if !crate::commands::users::validate_email(&email) {
            return Err(refuse(StatusCode::BAD_REQUEST, "Invalid email value", Some("invalidValue")));
        }
        let full_name = name_of(&body)?.ok_or_else(|| {
            bad("Must specify name.formatted, name.givenName or name.familyName when creating a new user")
        })?;
        if active_of(lookup(&body, "active"))? == Some(false) {
            return Err(bad("New user must have active=True"));
        }
        let role = role_of(lookup(&body, "role"))?;
        if state
            .engine
            .read(|s| crate::commands::users::email_taken(s, &email))
        {
            return Err(refuse(
                StatusCode::CONFLICT,
                format!("Email address already in use: {email} already has an account"),
                Some("uniqueness"),
            ));
        }
        let nonce = crate::auth::new_api_key_nonce();
        let created = state
            .engine
            .execute(None, move |s, ctx| {
                commands::create(s, ctx, &email, &full_name, role, nonce.clone())
            })
            .await?;
        tracing::info!(client = %scim.client_name, user = created.value.0, "SCIM created an account");
        one(&state, &scim, &created.value.0.to_string(), StatusCode::CREATED)
    })
    .await
}

/// Applies `changes` to `id` and answers its resource.
async fn apply(state: &AppState, scim: &Scim, id: &str, changes: Changes) -> Answer {
    let user_id = state
        .engine
        .read(|s| person(s, id))
        .ok_or_else(|| not_found(id))?;
    if changes != Changes::default() {
        state
            .engine
            .execute(None, move |s, ctx| {
                commands::change(s, ctx, user_id, &changes)
            })
            .await?;
        tracing::info!(client = %scim.client_name, user = user_id.0, "SCIM changed an account");
    }
    one(state, scim, id, StatusCode::OK)
}

/// A new address (`userName`), checked as an address; the command checks it is free.
fn user_name(email: &str) -> Result<String, Refusal> {
    let email = email.trim();
    if crate::commands::users::validate_email(email) {
        Ok(email.to_owned())
    } else {
        Err(refuse(
            StatusCode::BAD_REQUEST,
            "Invalid email value",
            Some("invalidValue"),
        ))
    }
}

/// `PUT /scim/v2/Users/{id}`: `userName` required (a new one changes the address); `name`,
/// `active` and `role` applied when given (as Zulip's, absent attributes are left as they are).
pub async fn replace_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let id = id_in_path(&req);
        let body = body_json(&body)?;
        let email = user_name_of(&body)?.ok_or_else(|| bad("Must specify userName"))?;
        let email = user_name(&email)?;
        let changes = Changes {
            email: Some(email),
            full_name: name_of(&body)?,
            active: active_of(lookup(&body, "active"))?,
            role: role_of(lookup(&body, "role"))?,
            ..Changes::default()
        };
        apply(&state, &scim, &id, changes).await
    })
    .await
}

/// One attribute a `PATCH` sets, by its path.
fn set_attribute(changes: &mut Changes, path: &str, value: &Value) -> Result<(), Refusal> {
    let path = scim_filter::attribute_path(path)
        .map_err(|why| refuse(StatusCode::BAD_REQUEST, why, Some("invalidPath")))?;
    let path: Vec<String> = path.iter().map(|p| p.to_ascii_lowercase()).collect();
    let text = || match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        _ => Err(refuse(
            StatusCode::BAD_REQUEST,
            "A name must be a non-empty string",
            Some("invalidValue"),
        )),
    };
    match path
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["username"] => {
            let email = value
                .as_str()
                .ok_or_else(|| bad("userName must be a string"))?;
            changes.email = Some(user_name(email)?)
        }
        ["active"] => changes.active = active_of(Some(value))?,
        ["role"] => changes.role = role_of(Some(value))?,
        ["displayname"] | ["name", "formatted"] => changes.full_name = Some(text()?),
        ["name", "givenname"] => changes.given_name = Some(text()?),
        ["name", "familyname"] => changes.family_name = Some(text()?),
        ["name"] => {
            // The parts given replace theirs; the others stay (RFC 7644, 3.5.2.3).
            let name = value
                .as_object()
                .ok_or_else(|| bad("name must be an object"))?;
            for (part, value) in name {
                set_attribute(changes, &format!("name.{part}"), value)?;
            }
        }
        _ => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("The attribute {} cannot be changed here", path.join(".")),
                Some("invalidPath"),
            ))
        }
    }
    Ok(())
}

/// A `PatchOp` body's operations: the op in lowercase (Entra writes `Replace`), the path, the
/// value.
fn patch_operations(body: &[u8]) -> Result<Vec<(String, Option<String>, Value)>, Refusal> {
    let body = body_json(body)?;
    let schemas = lookup(&body, "schemas").and_then(Value::as_array);
    if !schemas.is_some_and(|s| s.iter().any(|v| v == PATCH_SCHEMA)) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("The request must have the schema {PATCH_SCHEMA}"),
            Some("invalidValue"),
        ));
    }
    let operations = lookup(&body, "Operations")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("Operations must be a list"))?;
    operations
        .iter()
        .map(|operation| {
            let operation = operation
                .as_object()
                .ok_or_else(|| bad("Each operation must be an object"))?;
            let op = lookup(operation, "op")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase();
            let path = lookup(operation, "path")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let value = lookup(operation, "value").cloned().unwrap_or(Value::Null);
            Ok((op, path, value))
        })
        .collect()
}

/// `PATCH /scim/v2/Users/{id}` (a `PatchOp`): `replace` (and `add`, which on these single-valued
/// attributes is the same) of `userName`, `name`, `displayName`, `active` and `role`, with a
/// path or as an object of attributes.
pub async fn patch_user(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let id = id_in_path(&req);
        if state.engine.read(|s| person(s, &id)).is_none() {
            return Err(not_found(&id));
        }
        let mut changes = Changes::default();
        for (op, path, value) in &patch_operations(&body)? {
            match (op.as_str(), path.as_deref()) {
                ("replace" | "add", Some(path)) => set_attribute(&mut changes, path, value)?,
                ("replace" | "add", None) => {
                    let attributes = value
                        .as_object()
                        .ok_or_else(|| bad("Without a path, the value must be an object"))?;
                    for (name, value) in attributes {
                        if name.eq_ignore_ascii_case("id") || name.eq_ignore_ascii_case("schemas") {
                            continue;
                        }
                        set_attribute(&mut changes, name, value)?;
                    }
                }
                ("remove", None) => {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        "A remove operation needs a path",
                        Some("noTarget"),
                    ))
                }
                ("remove", Some(path)) => {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        format!("The attribute {path} cannot be removed"),
                        Some("mutability"),
                    ))
                }
                (other, _) => return Err(bad(format!("Unknown PATCH op \"{other}\""))),
            }
        }
        apply(&state, &scim, &id, changes).await
    })
    .await
}

/// `DELETE /scim/v2/Users/{id}`: refused as Zulip refuses it (an account's history stays; it is
/// deactivated instead).
pub async fn delete_user(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        Err(bad(
            "DELETE operation not supported. Use PUT or PATCH to modify the \"active\" attribute instead.",
        ))
    })
    .await
}

/// `GET /scim/v2/ServiceProviderConfig`.
pub async fn service_provider_config(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let realm_url = state.site.realm_url.clone();
    serve(&req.clone(), &state.clone(), |_| async move {
        Ok(ok(
            StatusCode::OK,
            &json!({
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
                "documentationUri": "https://github.com/chronicle-chat/chronicle/blob/main/docs/authentication.md",
                "patch": {"supported": true},
                "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
                "filter": {"supported": true, "maxResults": MAX_COUNT},
                "changePassword": {"supported": false},
                "sort": {"supported": false},
                "etag": {"supported": false},
                "authenticationSchemes": [{
                    "type": "oauthbearertoken",
                    "name": "Bearer token",
                    "description": "The token of the server's [scim] settings",
                    "primary": true,
                }],
                "meta": {
                    "resourceType": "ServiceProviderConfig",
                    "location": format!("{realm_url}/scim/v2/ServiceProviderConfig"),
                },
            }),
        ))
    })
    .await
}

fn resource_type(realm_url: &str, kind: &str) -> Value {
    let (schema, description) = if kind == "Group" {
        (GROUP_SCHEMA, "A user group of the organization")
    } else {
        (USER_SCHEMA, "A person of the organization")
    };
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": kind,
        "name": kind,
        "endpoint": format!("/{kind}s"),
        "description": description,
        "schema": schema,
        "schemaExtensions": [],
        "meta": {"resourceType": "ResourceType", "location": format!("{realm_url}/scim/v2/ResourceTypes/{kind}")},
    })
}

fn attribute(name: &str, kind: &str, required: bool, mutability: &str, description: &str) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": false, "description": description,
        "required": required, "caseExact": false, "mutability": mutability,
        "returned": "default", "uniqueness": if name == "userName" { "server" } else { "none" },
    })
}

/// The user schema as this server shows users: the name's parts as configured, the display
/// name read-only (it is the full name).
fn user_schema(realm_url: &str, scim: &Scim) -> Value {
    let mut name = attribute("name", "complex", true, "readWrite", "The person's name");
    name["subAttributes"] = if scim.name_formatted_included {
        json!([attribute(
            "formatted",
            "string",
            true,
            "readWrite",
            "The full name"
        )])
    } else {
        json!([
            attribute(
                "givenName",
                "string",
                true,
                "readWrite",
                "The first word of the name"
            ),
            attribute(
                "familyName",
                "string",
                false,
                "readWrite",
                "The rest of the name"
            ),
        ])
    };
    let mut role = attribute("role", "string", false, "readWrite", "Zulip's role");
    role["canonicalValues"] = json!(ROLES.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": USER_SCHEMA,
        "name": "User",
        "description": "A person of the organization",
        "attributes": [
            attribute("userName", "string", true, "readWrite", "The email address"),
            name,
            attribute("displayName", "string", false, "readOnly", "The full name"),
            role,
            attribute("active", "boolean", false, "readWrite", "False: deactivated"),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{realm_url}/scim/v2/Schemas/{USER_SCHEMA}")},
    })
}

fn group_schema(realm_url: &str) -> Value {
    let mut members = attribute(
        "members",
        "complex",
        false,
        "readWrite",
        "The group's people",
    );
    members["multiValued"] = json!(true);
    let mut value = attribute("value", "string", false, "immutable", "The person's id");
    value["caseExact"] = json!(true);
    let mut reference = attribute("$ref", "reference", false, "immutable", "The person's URI");
    reference["referenceTypes"] = json!(["User"]);
    let mut kind = attribute("type", "string", false, "immutable", "Always User");
    kind["canonicalValues"] = json!(["User"]);
    members["subAttributes"] = json!([
        value,
        reference,
        attribute("display", "string", false, "readOnly", "The person's name"),
        kind,
    ]);
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "A user group of the organization",
        "attributes": [
            attribute("displayName", "string", true, "readWrite", "The group's name"),
            members,
        ],
        "meta": {"resourceType": "Schema", "location": format!("{realm_url}/scim/v2/Schemas/{GROUP_SCHEMA}")},
    })
}

fn list_of(resources: Vec<Value>) -> Value {
    json!({
        "schemas": [LIST_SCHEMA],
        "totalResults": resources.len(),
        "itemsPerPage": resources.len(),
        "startIndex": 1,
        "Resources": resources,
    })
}

/// `GET /scim/v2/ResourceTypes[/{id}]`.
pub async fn resource_types(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let realm_url = state.site.realm_url.clone();
    serve(&req.clone(), &state.clone(), |_| async move {
        match req.match_info().get("id") {
            None => Ok(ok(
                StatusCode::OK,
                &list_of(vec![
                    resource_type(&realm_url, "User"),
                    resource_type(&realm_url, "Group"),
                ]),
            )),
            Some(kind @ ("User" | "Group")) => {
                Ok(ok(StatusCode::OK, &resource_type(&realm_url, kind)))
            }
            Some(other) => Err(not_found(other)),
        }
    })
    .await
}

/// `GET /scim/v2/Schemas[/{id}]`.
pub async fn schemas(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let realm_url = state.site.realm_url.clone();
    serve(&req.clone(), &state.clone(), |scim| async move {
        match req.match_info().get("id") {
            None => Ok(ok(
                StatusCode::OK,
                &list_of(vec![
                    user_schema(&realm_url, &scim),
                    group_schema(&realm_url),
                ]),
            )),
            Some(USER_SCHEMA) => Ok(ok(StatusCode::OK, &user_schema(&realm_url, &scim))),
            Some(GROUP_SCHEMA) => Ok(ok(StatusCode::OK, &group_schema(&realm_url))),
            Some(other) => Err(not_found(other)),
        }
    })
    .await
}

/// What SCIM defines and this server does not serve (Bulk, Me, a search at the root): 501, as
/// Zulip answers them.
pub async fn not_implemented(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        Err(refuse(StatusCode::NOT_IMPLEMENTED, "Not Implemented", None))
    })
    .await
}

/// Any other address under `/scim/v2`: 404.
pub async fn no_such_endpoint(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        Err(refuse(StatusCode::NOT_FOUND, "No such SCIM endpoint", None))
    })
    .await
}

/// A group as a SCIM group resource: its people, by id.
fn group_resource(realm_url: &str, s: &Projections, group: &crate::projections::Group) -> Value {
    // A role group's people come from their roles; a user group's are its direct members,
    // deactivated people included (as Zulip shows them), bots left out.
    let ids = if group.system.is_some() {
        s.groups.direct_members(group, &s.users)
    } else {
        group.members.clone()
    };
    let members: Vec<Value> = ids
        .into_iter()
        .filter_map(|id| s.users.get(id))
        .filter(|u| !u.is_bot())
        .map(|u| {
            json!({
                "value": u.user_id.0.to_string(),
                "$ref": format!("{realm_url}/scim/v2/Users/{}", u.user_id.0),
                "display": u.full_name,
                "type": "User",
            })
        })
        .collect();
    json!({
        "schemas": [GROUP_SCHEMA],
        "id": group.id.0.to_string(),
        "displayName": group.name,
        "members": members,
        "meta": {
            "resourceType": "Group",
            "location": format!("{realm_url}/scim/v2/Groups/{}", group.id.0),
        },
    })
}

/// The groups SCIM shows: every active group, the role groups (read-only) included.
fn active_group(s: &Projections, id: &str) -> Option<GroupId> {
    let id: u64 = id.parse().ok()?;
    s.groups
        .get(GroupId(id))
        .filter(|g| !g.deactivated)
        .map(|g| g.id)
}

fn list_groups_page(state: &AppState, query: Query) -> Answer {
    let realm_url = state.site.realm_url.clone();
    page(query, |filter| {
        state.engine.read(|s| {
            s.groups
                .iter()
                .filter(|g| !g.deactivated)
                .map(|g| group_resource(&realm_url, s, g))
                .filter(|r| filter.is_none_or(|f| scim_filter::matches(f, r)))
                .collect()
        })
    })
}

/// `GET /scim/v2/Groups`.
pub async fn list_groups(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        list_groups_page(&state, query_of(&req)?)
    })
    .await
}

/// `POST /scim/v2/Groups/.search`.
pub async fn search_groups(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        list_groups_page(&state, search_of(&body)?)
    })
    .await
}

fn one_group(state: &AppState, id: &str, status: StatusCode) -> Answer {
    located(status, group_of(state, id)?)
}

fn group_of(state: &AppState, id: &str) -> Result<Value, Refusal> {
    let realm_url = state.site.realm_url.clone();
    let resource = state.engine.read(|s| {
        active_group(s, id)
            .and_then(|g| s.groups.get(g))
            .map(|g| group_resource(&realm_url, s, g))
    });
    resource.ok_or_else(|| not_found(id))
}

/// `GET /scim/v2/Groups/{id}`.
pub async fn get_group(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |_| async move {
        let projection = query_of(&req)?.projection;
        let group = group_of(&state, &id_in_path(&req))?;
        located(StatusCode::OK, projection.apply(group))
    })
    .await
}

/// Member ids from a list of `{"value": "ID"}` (a single object too).
fn member_ids(value: &Value) -> Result<BTreeSet<UserId>, Refusal> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        Value::Null => Vec::new(),
        _ => return Err(bad("members must be a list of {\"value\": id}")),
    };
    items
        .into_iter()
        .map(|item| {
            let id = item
                .as_object()
                .and_then(|o| lookup(o, "value"))
                .and_then(|v| match v {
                    Value::String(s) => s.trim().parse::<u64>().ok(),
                    Value::Number(n) => n.as_u64(),
                    _ => None,
                })
                .ok_or_else(|| {
                    refuse(
                        StatusCode::BAD_REQUEST,
                        format!("Invalid member: {item}"),
                        Some("invalidValue"),
                    )
                })?;
            Ok(UserId(id))
        })
        .collect()
}

fn display_name_of(body: &Map<String, Value>) -> Result<Option<String>, Refusal> {
    match lookup(body, "displayName") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => Ok(Some(name.clone())),
        Some(_) => Err(bad("displayName must be a string")),
    }
}

/// A group command's refusal: a taken name is a conflict, as Zulip says it.
fn group_refusal(error: ApiError, name: Option<&str>) -> Refusal {
    let text = error.body()["msg"].as_str().unwrap_or_default().to_owned();
    if text.ends_with("already exists.") {
        return refuse(
            StatusCode::CONFLICT,
            format!("Group name already in use: {}", name.unwrap_or_default()),
            Some("uniqueness"),
        );
    }
    if text.starts_with("Resource ") {
        return refuse(StatusCode::NOT_FOUND, text, None);
    }
    Refusal::from(error)
}

/// `POST /scim/v2/Groups`.
pub async fn create_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let body = body_json(&body)?;
        let name = display_name_of(&body)?.ok_or_else(|| bad("Must specify displayName"))?;
        let members = member_ids(lookup(&body, "members").unwrap_or(&Value::Null))?;
        let wanted = name.clone();
        let created = state
            .engine
            .execute(None, move |s, ctx| {
                commands::create_group(s, ctx, &wanted, &members)
            })
            .await
            .map_err(|e| group_refusal(e, Some(&name)))?;
        tracing::info!(client = %scim.client_name, group = created.value.0, "SCIM created a group");
        one_group(&state, &created.value.0.to_string(), StatusCode::CREATED)
    })
    .await
}

async fn change_group(
    state: &AppState,
    scim: &Scim,
    id: &str,
    name: Option<String>,
    members: Vec<MemberOp>,
) -> Answer {
    let group_id = state
        .engine
        .read(|s| active_group(s, id))
        .ok_or_else(|| not_found(id))?;
    let wanted = name.clone();
    state
        .engine
        .execute(None, move |s, ctx| {
            commands::change_group(s, ctx, group_id, wanted.as_deref(), &members)
        })
        .await
        .map_err(|e| group_refusal(e, name.as_deref()))?;
    tracing::info!(client = %scim.client_name, group = group_id.0, "SCIM changed a group");
    one_group(state, id, StatusCode::OK)
}

/// `PUT /scim/v2/Groups/{id}`: the name and the whole member list.
pub async fn replace_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let body = body_json(&body)?;
        let name = display_name_of(&body)?;
        let members = member_ids(lookup(&body, "members").unwrap_or(&Value::Null))?;
        change_group(
            &state,
            &scim,
            &id_in_path(&req),
            name,
            vec![MemberOp::Set(members)],
        )
        .await
    })
    .await
}

/// The member a path such as `members[value eq "12"]` (Okta's way to remove one) names.
fn member_in_path(path: &str) -> Result<Option<UserId>, Refusal> {
    let bracket = "members[".len();
    let Some(inner) = path
        .get(..bracket)
        .filter(|p| p.eq_ignore_ascii_case("members["))
        .and_then(|_| path.get(bracket..))
        .and_then(|p| p.strip_suffix(']'))
    else {
        return Ok(None);
    };
    match scim_filter::parse(inner) {
        Ok(scim_filter::Filter::Compare(attr, scim_filter::Op::Eq, value))
            if attr.len() == 1 && attr[0].eq_ignore_ascii_case("value") =>
        {
            let id = match &value {
                Value::String(s) => s.parse::<u64>().ok(),
                Value::Number(n) => n.as_u64(),
                _ => None,
            };
            id.map(|id| Some(UserId(id))).ok_or_else(|| {
                refuse(
                    StatusCode::BAD_REQUEST,
                    format!("Invalid member: {value}"),
                    Some("invalidValue"),
                )
            })
        }
        _ => Err(refuse(
            StatusCode::BAD_REQUEST,
            format!("Unsupported path: {path}"),
            Some("invalidPath"),
        )),
    }
}

/// `PATCH /scim/v2/Groups/{id}`: `replace` of `displayName` or `members` (with a path or as
/// an object), `add` and `remove` of members (`remove` also by `members[value eq "ID"]`).
pub async fn patch_group(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let id = id_in_path(&req);
        if state.engine.read(|s| active_group(s, &id)).is_none() {
            return Err(not_found(&id));
        }
        let mut name = None;
        let mut members = Vec::new();
        for (op, path, value) in &patch_operations(&body)? {
            let path = path.as_deref().map(str::trim);
            match (op.as_str(), path.map(str::to_ascii_lowercase).as_deref()) {
                ("replace" | "add", Some("displayname")) => {
                    let text = value
                        .as_str()
                        .ok_or_else(|| bad("displayName must be a string"))?;
                    name = Some(text.to_owned());
                }
                ("replace", Some("members")) => members.push(MemberOp::Set(member_ids(value)?)),
                ("add", Some("members")) => members.push(MemberOp::Add(member_ids(value)?)),
                ("remove", Some("members")) if value.is_null() => {
                    members.push(MemberOp::Set(BTreeSet::new()))
                }
                ("remove", Some("members")) => members.push(MemberOp::Remove(member_ids(value)?)),
                ("remove", Some(_)) => match member_in_path(path.unwrap_or_default())? {
                    Some(gone) => members.push(MemberOp::Remove(BTreeSet::from([gone]))),
                    None => {
                        return Err(refuse(
                            StatusCode::BAD_REQUEST,
                            format!(
                                "The attribute {} cannot be removed",
                                path.unwrap_or_default()
                            ),
                            Some("mutability"),
                        ))
                    }
                },
                ("replace" | "add", None) => {
                    let attributes = value
                        .as_object()
                        .ok_or_else(|| bad("Without a path, the value must be an object"))?;
                    if let Some(n) = display_name_of(attributes)? {
                        name = Some(n);
                    }
                    if let Some(list) = lookup(attributes, "members") {
                        let ids = member_ids(list)?;
                        members.push(if op == "add" {
                            MemberOp::Add(ids)
                        } else {
                            MemberOp::Set(ids)
                        });
                    }
                }
                ("remove", None) => {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        "A remove operation needs a path",
                        Some("noTarget"),
                    ))
                }
                ("replace" | "add", Some(other)) => {
                    return Err(refuse(
                        StatusCode::BAD_REQUEST,
                        format!("The attribute {other} cannot be changed here"),
                        Some("invalidPath"),
                    ))
                }
                (other, _) => return Err(bad(format!("Unknown PATCH op \"{other}\""))),
            }
        }
        change_group(&state, &scim, &id, name, members).await
    })
    .await
}

/// `DELETE /scim/v2/Groups/{id}`: the group is deactivated (204).
pub async fn delete_group(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    serve(&req.clone(), &state.clone(), |scim| async move {
        let id = id_in_path(&req);
        let group_id = state
            .engine
            .read(|s| active_group(s, &id))
            .ok_or_else(|| not_found(&id))?;
        state
            .engine
            .execute(None, move |s, ctx| commands::delete_group(s, ctx, group_id))
            .await
            .map_err(|e| group_refusal(e, None))?;
        tracing::info!(client = %scim.client_name, group = group_id.0, "SCIM deactivated a group");
        Ok(HttpResponse::NoContent().finish())
    })
    .await
}
