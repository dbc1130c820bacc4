//! The one error type every handler returns, and the code table that maps a Zulip error code to
//! its wire string and HTTP status.
//!
//! Zulip clients match on `code`, never on `msg` (which Zulip translates), so the codes and their
//! statuses follow Zulip 10.2's `ErrorCode` table exactly; `schema/errors.md` lists them.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::{json, Map, Value};
use std::fmt;

/// Zulip's error codes that Chronicle emits, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    RequestVariableMissing,
    RequestVariableInvalid,
    RequestConfusingVar,
    InvalidJson,
    BadNarrow,
    CannotDeactivateLastUser,
    StreamDoesNotExist,
    UnauthorizedPrincipal,
    BadEventQueueId,
    InvitationFailed,
    RateLimitHit,
    /// A client that did not send its request body in time (408).
    RequestTimeout,
    UserDeactivated,
    AuthenticationFailed,
    Unauthorized,
    ReactionAlreadyExists,
    ReactionDoesNotExist,
    ChannelAlreadyExists,
    SystemGroupRequired,
    ExpectationMismatch,
    CannotDeactivateGroupInUse,
    MoveMessagesTimeLimitExceeded,
    StreamWildcardMentionNotAllowed,
    TopicWildcardMentionNotAllowed,
    RealmUploadQuota,
    BadImage,
    /// No push notification service is configured (400).
    PushServiceNotConfigured,
    /// No device of the caller takes pushes (400).
    NoActivePushDevice,
    /// The push service refuses this server: its administrator must act (403).
    AdminActionRequired,
    /// The push service could not be reached (502).
    FailedToConnectBouncer,
    /// The push service failed (502).
    InternalServerErrorOnBouncer,
    /// Incoming webhooks: the header that names the event is missing (400).
    MissingHttpEventHeader,
    /// Incoming webhooks: a payload the integration cannot read (400).
    AnomalousWebhookPayload,
    /// Incoming webhooks: an API key that is malformed or nobody's (401).
    InvalidApiKey,
    /// `BAD_REQUEST` with 404: an unknown route or a resource that does not exist.
    NotFound,
    /// `BAD_REQUEST` with 403.
    AccessDenied,
    /// A web session's write without its CSRF token (403).
    CsrfFailed,
    /// `BAD_REQUEST` with 503: the write could not be placed in a log other nodes kept
    /// appending to; the request changed nothing and may be repeated.
    Busy,
    /// 507 `STORAGE_FULL`: the data directory's free space is below the reserve (or ran out);
    /// writes are refused until space returns, reads go on. Zulip has no such code.
    StorageFull,
    /// 503 `STORAGE_UNAVAILABLE`: the log's storage failed or is too slow to take the write
    /// now; the request changed nothing and may be repeated after `Retry-After`.
    StorageUnavailable,
}

impl ErrorCode {
    /// The string clients see in `code`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest
            | ErrorCode::NotFound
            | ErrorCode::AccessDenied
            | ErrorCode::Busy => "BAD_REQUEST",
            ErrorCode::RequestVariableMissing => "REQUEST_VARIABLE_MISSING",
            ErrorCode::RequestVariableInvalid => "REQUEST_VARIABLE_INVALID",
            ErrorCode::RequestConfusingVar => "REQUEST_CONFUSING_VAR",
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::StorageFull => "STORAGE_FULL",
            ErrorCode::StorageUnavailable => "STORAGE_UNAVAILABLE",
            ErrorCode::CsrfFailed => "CSRF_FAILED",
            ErrorCode::PushServiceNotConfigured => "PUSH_SERVICE_NOT_CONFIGURED",
            ErrorCode::NoActivePushDevice => "NO_ACTIVE_PUSH_DEVICE",
            ErrorCode::AdminActionRequired => "ADMIN_ACTION_REQUIRED",
            ErrorCode::FailedToConnectBouncer => "FAILED_TO_CONNECT_BOUNCER",
            ErrorCode::InternalServerErrorOnBouncer => "INTERNAL_SERVER_ERROR_ON_BOUNCER",
            ErrorCode::MissingHttpEventHeader => "MISSING_HTTP_EVENT_HEADER",
            ErrorCode::AnomalousWebhookPayload => "ANOMALOUS_WEBHOOK_PAYLOAD",
            ErrorCode::InvalidApiKey => "INVALID_API_KEY",
            ErrorCode::BadNarrow => "BAD_NARROW",
            ErrorCode::CannotDeactivateLastUser => "CANNOT_DEACTIVATE_LAST_USER",
            ErrorCode::StreamDoesNotExist => "STREAM_DOES_NOT_EXIST",
            ErrorCode::UnauthorizedPrincipal => "UNAUTHORIZED_PRINCIPAL",
            ErrorCode::BadEventQueueId => "BAD_EVENT_QUEUE_ID",
            ErrorCode::InvitationFailed => "INVITATION_FAILED",
            ErrorCode::RateLimitHit => "RATE_LIMIT_HIT",
            ErrorCode::RequestTimeout => "REQUEST_TIMEOUT",
            ErrorCode::UserDeactivated => "USER_DEACTIVATED",
            ErrorCode::AuthenticationFailed => "AUTHENTICATION_FAILED",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::ReactionAlreadyExists => "REACTION_ALREADY_EXISTS",
            ErrorCode::ReactionDoesNotExist => "REACTION_DOES_NOT_EXIST",
            ErrorCode::ChannelAlreadyExists => "CHANNEL_ALREADY_EXISTS",
            ErrorCode::SystemGroupRequired => "SYSTEM_GROUP_REQUIRED",
            ErrorCode::ExpectationMismatch => "EXPECTATION_MISMATCH",
            ErrorCode::CannotDeactivateGroupInUse => "CANNOT_DEACTIVATE_GROUP_IN_USE",
            ErrorCode::MoveMessagesTimeLimitExceeded => "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
            ErrorCode::StreamWildcardMentionNotAllowed => "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
            ErrorCode::TopicWildcardMentionNotAllowed => "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
            ErrorCode::RealmUploadQuota => "REALM_UPLOAD_QUOTA",
            ErrorCode::BadImage => "BAD_IMAGE",
        }
    }

    /// The HTTP status Zulip 10.2 sends with this code.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::Unauthorized
            | ErrorCode::InvalidApiKey
            | ErrorCode::UserDeactivated
            | ErrorCode::AuthenticationFailed => StatusCode::UNAUTHORIZED,
            ErrorCode::RateLimitHit => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::ChannelAlreadyExists => StatusCode::CONFLICT,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::AccessDenied | ErrorCode::CsrfFailed | ErrorCode::AdminActionRequired => {
                StatusCode::FORBIDDEN
            }
            ErrorCode::FailedToConnectBouncer | ErrorCode::InternalServerErrorOnBouncer => {
                StatusCode::BAD_GATEWAY
            }
            ErrorCode::Busy | ErrorCode::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// An error answer in Zulip's shape: `{"result":"error","msg":..,"code":..,<extra>}`.
///
/// `Internal` is kept apart: its details go to the server log only, and the client sees Zulip's
/// generic 500 body.
#[derive(Debug)]
pub enum ApiError {
    Client {
        code: ErrorCode,
        msg: String,
        extra: Map<String, Value>,
    },
    Internal(String),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Self {
        ApiError::Client {
            code,
            msg: msg.into(),
            extra: Map::new(),
        }
    }

    /// A generic `BAD_REQUEST` (400) with a message.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, msg)
    }

    /// Adds an extra top-level field to the error body (for example `var_name`).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        if let ApiError::Client { extra, .. } = &mut self {
            extra.insert(key.to_owned(), value.into());
        }
        self
    }

    /// Asks the client to wait `seconds` before trying again: a `retry-after` field in the body
    /// (as Zulip's rate limit sends) and the `Retry-After` header.
    pub fn retry_after(self, seconds: f64) -> Self {
        self.with("retry-after", seconds)
    }

    /// `REQUEST_VARIABLE_MISSING` naming the parameter.
    pub fn missing(var: &str) -> Self {
        Self::new(
            ErrorCode::RequestVariableMissing,
            format!("Missing '{var}' argument"),
        )
        .with("var_name", var)
    }

    /// `REQUEST_VARIABLE_INVALID` naming the parameter and the value it had.
    pub fn invalid(var: &str, bad_value: &str) -> Self {
        Self::new(
            ErrorCode::RequestVariableInvalid,
            format!("Bad value for '{var}': {bad_value}"),
        )
        .with("var_name", var)
        .with("bad_value", bad_value)
    }

    /// 401 `UNAUTHORIZED`, sent with `WWW-Authenticate: Basic realm="zulip"`.
    pub fn unauthorized(msg: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, msg)
    }

    pub fn not_found() -> Self {
        Self::new(ErrorCode::NotFound, "Not Found")
    }

    pub fn must_be_admin() -> Self {
        Self::new(
            ErrorCode::UnauthorizedPrincipal,
            "Must be an organization administrator",
        )
    }

    pub fn must_be_owner() -> Self {
        Self::new(
            ErrorCode::UnauthorizedPrincipal,
            "Must be an organization owner",
        )
    }

    /// A server-side failure; `detail` is logged, never sent.
    pub fn internal(detail: impl Into<String>) -> Self {
        ApiError::Internal(detail.into())
    }

    /// The code, for tests and logs (`None` for internal errors).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ApiError::Client { code, .. } => Some(*code),
            ApiError::Internal(_) => None,
        }
    }

    /// The error body as JSON.
    pub fn body(&self) -> Value {
        match self {
            ApiError::Client { code, msg, extra } => {
                let mut body = Map::new();
                body.insert("result".into(), json!("error"));
                body.insert("msg".into(), json!(msg));
                body.insert("code".into(), json!(code.as_str()));
                for (k, v) in extra {
                    body.insert(k.clone(), v.clone());
                }
                Value::Object(body)
            }
            ApiError::Internal(_) => json!({"result": "error", "msg": "Internal server error"}),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Client { code, msg, .. } => write!(f, "{}: {msg}", code.as_str()),
            ApiError::Internal(detail) => write!(f, "internal error: {detail}"),
        }
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Client { code, .. } => code.status(),
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(detail) = self {
            tracing::error!(%detail, "request failed with an internal error");
        }
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
        if let Some(seconds) = self.body()["retry-after"].as_f64() {
            let seconds = seconds.ceil().max(1.0);
            if let Ok(value) = HeaderValue::from_str(&format!("{seconds}")) {
                response.insert_header((header::RETRY_AFTER, value));
            }
        }
        if matches!(self.code(), Some(ErrorCode::Unauthorized)) {
            response.insert_header((
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"zulip\""),
            ));
        }
        response.json(self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_names_the_variable() {
        let body = ApiError::missing("content").body();
        assert_eq!(
            body,
            json!({"result":"error","msg":"Missing 'content' argument",
                   "code":"REQUEST_VARIABLE_MISSING","var_name":"content"})
        );
    }

    #[test]
    fn internal_errors_hide_details() {
        let err = ApiError::internal("sled exploded at /secret/path");
        assert_eq!(
            err.body(),
            json!({"result":"error","msg":"Internal server error"})
        );
        assert_eq!(err.status_code(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn unauthorized_sends_basic_challenge() {
        let resp = ApiError::unauthorized("Invalid API key").error_response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers()
                .get(header::WWW_AUTHENTICATE)
                .map(|v| v.as_bytes()),
            Some(&b"Basic realm=\"zulip\""[..])
        );
    }
}
