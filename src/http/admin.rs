//! The inspector: `GET /admin/projections[?at_seq=N&only=AREA]`,
//! `GET /admin/events[?after_seq=N&type=T&actor=U&since=T&until=T&limit=M]` and
//! `GET /admin/diff`. These read the log (that is their job); every other read is answered from
//! the projections. They show every conversation, so they are for the members of the
//! organization's `can_inspect_log_group` (its owners unless the owners grant more), and every
//! use is itself an event of the log (`LogInspected`: who, what, when) before it is answered.
//! `GET /admin/verify` checks checksums and shows no content: administrators.

use super::{AppState, Auth, Params};
use crate::audit::{event_json, only_area, EventFilter};
use crate::error::{ApiError, ApiResult};
use crate::ids::Seq;
use crate::projections::Projections;
use crate::store::read_envelopes;
use crate::time::parse_rfc3339_ms;
use actix_web::{web, HttpResponse};
use serde_json::json;

/// Checks that `auth` may use the inspector, and records that they do in the access audit
/// (`access_audit`): who, the endpoint and its parameters, the log's seq; on disk before
/// anything is read.
async fn inspect(state: &AppState, auth: &Auth, endpoint: &str, params: &Params) -> ApiResult<()> {
    let (allowed, email, log_seq) = state.engine.read(|s| {
        (
            s.realm_allows(auth.user_id, "can_inspect_log_group"),
            s.users
                .get(auth.user_id)
                .map(|u| u.email.clone())
                .unwrap_or_default(),
            s.seq.0,
        )
    });
    if !allowed {
        return Err(ApiError::new(
            crate::error::ErrorCode::UnauthorizedPrincipal,
            "Not allowed to inspect the log: the organization's owners decide who may (can_inspect_log_group)",
        ));
    }
    let look = crate::access_audit::Look {
        at_ms: crate::time::now_ms(),
        user_id: auth.user_id.0,
        email,
        endpoint: endpoint.to_owned(),
        query: params.audit_text(&[
            "at_seq",
            "only",
            "after_seq",
            "type",
            "actor",
            "since",
            "until",
            "limit",
            "from_seq",
            "to_seq",
        ]),
        log_seq,
    };
    let audit = state.access_audit.clone();
    web::block(move || audit.record(&look))
        .await
        .map_err(|e| ApiError::internal(format!("access audit: {e}")))?
        .map_err(|e| ApiError::internal(format!("access audit: {e}")))?;
    Ok(())
}

/// Most records `GET /admin/inspections` returns.
pub const MAX_INSPECTIONS_LIMIT: usize = 1000;

/// `GET /admin/inspections[?limit=N]`: the newest looks through the inspector (the access
/// audit), oldest first; for owners, who decide who may look.
pub async fn get_inspections(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    if auth.role != crate::events::Role::Owner {
        return Err(ApiError::must_be_owner());
    }
    let looks = newest_records(&state.access_audit, &mut params).await?;
    Ok(params.success(json!({ "inspections": looks })))
}

/// `GET /admin/sign-ins` (`limit`, 100 by default): the newest sign-in attempts, accepted or
/// refused (method, what was typed as the login, account, outcome, address, time); for
/// administrators.
pub async fn get_sign_ins(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let attempts = newest_records(&state.sign_in_audit, &mut params).await?;
    Ok(params.success(json!({ "sign_ins": attempts })))
}

/// The newest `limit` records of an audit file, oldest first.
async fn newest_records(
    audit: &std::sync::Arc<crate::access_audit::AccessAudit>,
    params: &mut Params,
) -> ApiResult<Vec<serde_json::Value>> {
    let limit: usize = params.int("limit")?.unwrap_or(100);
    if limit == 0 || limit > MAX_INSPECTIONS_LIMIT {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_INSPECTIONS_LIMIT}"
        ))
        .with("var_name", "limit"));
    }
    let audit = audit.clone();
    web::block(move || audit.newest(limit))
        .await
        .map_err(|e| ApiError::internal(format!("audit: {e}")))?
        .map_err(|e| ApiError::internal(format!("audit: {e}")))
}

/// Most events one listing returns.
pub const MAX_EVENTS_LIMIT: usize = 1000;

/// `GET /admin/projections`: the projection dump, now or as of event `at_seq`.
pub async fn get_projections(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    inspect(&state, &auth, "projections", &params).await?;
    let at_seq: Option<u64> = params.int("at_seq")?;
    let current = state.engine.read(|s| s.seq);
    let dump = match at_seq {
        None => state.engine.read(Projections::dump),
        Some(n) if n > current.0 => {
            return Err(ApiError::bad_request(format!(
                "at_seq {n} is beyond the last event ({current})"
            ))
            .with("var_name", "at_seq"))
        }
        Some(n) => {
            let log = state.engine.log().clone();
            web::block(move || crate::replay::fold(log.as_ref(), Some(Seq(n)), |_| {}))
                .await
                .map_err(|e| ApiError::internal(format!("fold: {e}")))?
                .map_err(|e| ApiError::internal(format!("fold: {e}")))?
                .dump()
        }
    };
    let dump = match params.str("only") {
        None => dump,
        Some(area) => only_area(&dump, &area)
            .map_err(|e| ApiError::bad_request(e).with("var_name", "only"))?,
    };
    Ok(params.success(json!({"projections": dump})))
}

/// Reads the audit filters (`after_seq`, `type`, `actor`, `since`, `until`) shared with
/// `chronicle log`.
fn read_filter(params: &mut Params, state: &AppState) -> ApiResult<EventFilter> {
    let mut filter = EventFilter {
        after_seq: params.int("after_seq")?.unwrap_or(0),
        ..EventFilter::default()
    };
    if let Some(types) = params.str("type") {
        filter.types = Some(
            EventFilter::parse_types(&types)
                .map_err(|e| ApiError::bad_request(e).with("var_name", "type"))?,
        );
    }
    if let Some(actor) = params.str("actor") {
        let id = match actor.parse::<u64>() {
            Ok(id) => Some(id),
            Err(_) => state
                .engine
                .read(|s| s.users.by_email(&actor).map(|u| u.user_id.0)),
        };
        filter.actor = Some(
            id.ok_or_else(|| ApiError::bad_request("No such user").with("var_name", "actor"))?,
        );
    }
    for (name, slot) in [
        ("since", &mut filter.since_ms),
        ("until", &mut filter.until_ms),
    ] {
        if let Some(text) = params.str(name) {
            *slot = Some(parse_rfc3339_ms(&text).ok_or_else(|| {
                ApiError::bad_request(format!("{name} is not an RFC 3339 time"))
                    .with("var_name", name)
            })?);
        }
    }
    Ok(filter)
}

/// `GET /admin/events`: the log, oldest first, with every secret redacted, filtered like
/// `chronicle log`. `scanned_to_seq` is where the next page starts (`after_seq`).
pub async fn get_events(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    inspect(&state, &auth, "events", &params).await?;
    let filter = read_filter(&mut params, &state)?;
    let limit: usize = params.int("limit")?.unwrap_or(100);
    if limit == 0 || limit > MAX_EVENTS_LIMIT {
        return Err(ApiError::bad_request(format!(
            "limit must be between 1 and {MAX_EVENTS_LIMIT}"
        ))
        .with("var_name", "limit"));
    }
    let last_seq = state.engine.read(|s| s.seq.0);
    let log = state.engine.log().clone();
    let (events, scanned) = web::block(move || {
        let mut events = Vec::new();
        let mut scanned = filter.after_seq;
        for env in read_envelopes(log.as_ref(), Seq(filter.after_seq.saturating_add(1))) {
            let env = env?;
            // Only what is applied: a batch being written right now is not listed yet.
            if env.seq.0 > last_seq || filter.past_the_end(&env) {
                break;
            }
            scanned = env.seq.0;
            if filter.keeps(&env) {
                events.push(event_json(&env));
                if events.len() == limit {
                    break;
                }
            }
        }
        Ok::<_, crate::store::StoreError>((events, scanned))
    })
    .await
    .map_err(|e| ApiError::internal(format!("scan: {e}")))?
    .map_err(|e| ApiError::internal(format!("scan: {e}")))?;
    Ok(params.success(json!({"events": events, "last_seq": last_seq, "scanned_to_seq": scanned})))
}

/// `GET /admin/verify`: every record's checksum and the hash chain, up to the last applied
/// event (`chronicle verify` while the server runs).
pub async fn verify_log(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let last_seq = state.engine.read(|s| s.seq);
    let log = state.engine.log().clone();
    let report = web::block(move || crate::store::verify_chain(log.as_ref(), Some(last_seq)))
        .await
        .map_err(|e| ApiError::internal(format!("verify: {e}")))?
        .map_err(|e| ApiError::internal(format!("verify: {e}")))?;
    let first_break = report
        .first_break
        .map(|(seq, reason)| json!({"seq": seq, "reason": reason}));
    Ok(params.success(json!({
        "records_checked": report.records,
        "unchained_prefix": report.unchained,
        "head": report.head,
        "first_break": first_break,
    })))
}

/// `GET /admin/diff?from_seq=A&to_seq=B[&only=AREA]`: what changed in the projections between
/// two events (`chronicle diff`).
pub async fn get_diff(
    state: web::Data<AppState>,
    auth: Auth,
    mut params: Params,
) -> ApiResult<HttpResponse> {
    inspect(&state, &auth, "diff", &params).await?;
    let from: u64 = params.required_int("from_seq")?;
    let to: u64 = params.required_int("to_seq")?;
    let only = params.str("only");
    let current = state.engine.read(|s| s.seq);
    if from > to || to > current.0 {
        return Err(ApiError::bad_request(format!(
            "from_seq and to_seq must satisfy from_seq <= to_seq <= {current}"
        )));
    }
    let log = state.engine.log().clone();
    let (before, after) = web::block(move || {
        let mut s = crate::replay::fold(log.as_ref(), Some(Seq(from)), |_| {})?;
        let before = s.dump();
        crate::replay::continue_while(&mut s, log.as_ref(), |env| env.seq.0 <= to, |_| {})?;
        Ok::<_, crate::store::StoreError>((before, s.dump()))
    })
    .await
    .map_err(|e| ApiError::internal(format!("fold: {e}")))?
    .map_err(|e| ApiError::internal(format!("fold: {e}")))?;
    let diff = match only {
        None => crate::audit::diff(&before, &after),
        Some(area) => {
            let pick = |dump: &serde_json::Value| {
                only_area(dump, &area)
                    .map_err(|e| ApiError::bad_request(e).with("var_name", "only"))
            };
            crate::audit::diff(&pick(&before)?, &pick(&after)?)
        }
    };
    Ok(params.success(json!({ "diff": diff })))
}

/// `GET /admin/`: the audit page (static; everything it shows comes from the admin API, with
/// the credentials its reader types in). Its script and styles are files of their own, so its
/// policy allows no inline script or style at all.
pub async fn audit_page() -> HttpResponse {
    audit_file(
        "text/html; charset=utf-8",
        include_str!("admin_page/index.html"),
    )
}

/// `GET /admin/audit.js`.
pub async fn audit_script() -> HttpResponse {
    audit_file(
        "text/javascript; charset=utf-8",
        include_str!("admin_page/audit.js"),
    )
}

/// `GET /admin/audit.css`.
pub async fn audit_styles() -> HttpResponse {
    audit_file(
        "text/css; charset=utf-8",
        include_str!("admin_page/audit.css"),
    )
}

fn audit_file(content_type: &'static str, body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Content-Security-Policy", AUDIT_PAGE_POLICY))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .insert_header(("Cache-Control", "no-cache"))
        .body(body)
}

/// The audit page's content security policy: its own files only, nothing inline, no frames.
pub const AUDIT_PAGE_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `POST /admin/backup`: a consistent copy of the organization as of now (`backup`), written to
/// `DATA_DIR/backups/<time>-<seq>-<random>` while the server goes on serving; for owners.
pub async fn take_backup(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    if auth.role != crate::events::Role::Owner {
        return Err(ApiError::must_be_owner());
    }
    // Every change acknowledged before now is applied, so it is at or before this seq.
    let upto = state.engine.read(|s| s.seq);
    let now = crate::time::iso8601_ms(crate::time::now_ms())
        .replace([':', '-'], "")
        .replace('.', "");
    // Two backups in the same millisecond still get names of their own.
    let name = format!(
        "{now}-{upto}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    );
    let dest = state.data_dir.join("backups").join(&name);
    let (log, source, path) = (
        state.engine.log().clone(),
        state.data_dir.clone(),
        dest.clone(),
    );
    let report = web::block(move || crate::backup::take(log.as_ref(), &source, upto, &path))
        .await
        .map_err(|e| ApiError::internal(format!("backup: {e}")))?
        .map_err(|e| ApiError::internal(format!("backup: {e}")))?;
    tracing::info!(%name, seq = report.seq, records = report.records, "backup taken");
    let mut body = report.json();
    body["backup"] = json!(name);
    body["path"] = json!(dest.display().to_string());
    Ok(params.success(body))
}

/// `POST /admin/ldap-sync`: one sync with the LDAP directory now (names, roles, groups, who is
/// deactivated or back), as the server does on its timer; for administrators. Answers what
/// changed, by user id.
pub async fn ldap_sync(
    state: web::Data<AppState>,
    auth: Auth,
    params: Params,
) -> ApiResult<HttpResponse> {
    auth.require_admin()?;
    let report =
        crate::identity::sync_directory(&state.engine, &state.identity, &state.uploads).await?;
    let body = serde_json::to_value(&report)
        .map_err(|e| ApiError::internal(format!("sync report: {e}")))?;
    Ok(params.success(body))
}
