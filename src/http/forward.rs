//! Cluster mode: one node at a time takes the writes (the one holding the writer's lease,
//! `store::jetstream::Lease`), and the others pass write requests on to it. Writers that all
//! appended to the stream would mostly refuse each other's batches and decide them again; one
//! writer keeps the group commit of a single box.
//!
//! A node passes on every request that may write: any method but `GET`, `HEAD` and `OPTIONS`,
//! except the ones about its own event queues (`/register`, `DELETE /events`), which stay with
//! the node that holds the queue. The writer answers as usual and says in `Chronicle-Seq` how
//! far its state was when it answered; the node that passed the request on folds the stream up
//! to there before it answers its client, so that the client reads its own write (and gets its
//! events) on the node it asked.
//!
//! Passed-on requests carry `Chronicle-Forwarded`, a token derived from the server secret all
//! nodes share. The writer answers them itself even if it has just lost the lease (the stream's
//! sequence check keeps that safe), and does not count them against the forwarding node's
//! address: the forwarding node counted them against the client's.

use super::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::store::jetstream::Lease;
use actix_web::body::BoxBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{web, HttpResponse, ResponseError};
use futures_util::StreamExt;
use std::time::{Duration, Instant};

/// The header that marks a request one node passed to another.
pub const FORWARDED: &str = "chronicle-forwarded";
/// The writer's seq when it answered a passed-on request.
const SEQ: &str = "chronicle-seq";
/// How long a node waits to fold the writer's answer before answering anyway.
const FOLD_WAIT: Duration = Duration::from_secs(10);

/// What a node of a cluster needs to pass requests on.
pub struct Cluster {
    pub lease: Lease,
    /// Proves a request came from a node of this cluster.
    pub token: String,
    pub client: reqwest::Client,
    /// The largest request body passed on (the largest upload and some room).
    pub body_limit: usize,
    /// How long a client may take to send a body that is passed on (uploads: ten times as
    /// long).
    pub body_timeout: Duration,
}

/// Compares without stopping at the first difference, so that the time taken does not tell
/// how much of a guessed token was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Cluster {
    /// Whether a request with these headers came from another node of this cluster.
    pub fn carries_token(&self, headers: &actix_web::http::header::HeaderMap) -> bool {
        headers
            .get(FORWARDED)
            .is_some_and(|v| same(v.as_bytes(), self.token.as_bytes()))
    }

    /// Whether `req` came from another node of this cluster.
    pub fn is_forwarded(&self, req: &ServiceRequest) -> bool {
        self.carries_token(req.headers())
    }

    /// The bytes of an uploaded file this node does not have, from another node that does,
    /// checked against their SHA-256 (files are named by it). `None` when no node has them.
    pub async fn fetch_upload(&self, sha256: &str) -> Option<Vec<u8>> {
        use sha2::{Digest, Sha256};
        for node in self.lease.others() {
            let url = format!("{}/internal/uploads/{sha256}", node.trim_end_matches('/'));
            let reply = self
                .client
                .get(&url)
                .header(FORWARDED, self.token.as_str())
                .send()
                .await;
            let Ok(reply) = reply else { continue };
            if !reply.status().is_success() {
                continue;
            }
            let Ok(bytes) = reply.bytes().await else {
                continue;
            };
            let hash: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            if hash == sha256 {
                return Some(bytes.to_vec());
            }
            tracing::warn!(%node, %sha256, "another node sent an upload that does not match its hash");
        }
        None
    }

    /// Where `req` must go instead of being answered here: the writer's address, when this
    /// node is not the writer and the request may write.
    pub fn target(&self, req: &ServiceRequest) -> Option<String> {
        use actix_web::http::Method;
        let method = req.method();
        let path = req.path();
        // The end of a single sign-on is a GET that writes (an account, a session).
        let writes_on_get = path.starts_with("/complete/");
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) && !writes_on_get {
            return None;
        }
        let queues =
            path.ends_with("/register") || (*method == Method::DELETE && path.ends_with("/events"));
        if queues || self.is_forwarded(req) {
            return None;
        }
        self.lease
            .holder()
            .filter(|holder| holder.as_str() != self.lease.me())
    }
}

impl Cluster {
    /// The node holding the event queue `id` (its id starts with the node's tag), when that
    /// is another live node and `req` was not already passed on by one.
    pub async fn queue_home(&self, id: &str, req: &actix_web::HttpRequest) -> Option<String> {
        let passed_on = self.carries_token(req.headers());
        let (tag, _) = id.split_once(':')?;
        if passed_on {
            return None;
        }
        self.lease.node(tag).await
    }

    /// Asks the node at `home` about one of its event queues (`GET` or `DELETE /events`, with
    /// `query`) for the client of `req`, and answers with its answer. A client of a load
    /// balancer without affinity may reach any node; its queue stays where it was made.
    pub async fn ask_queue_home(
        &self,
        req: &actix_web::HttpRequest,
        home: &str,
        query: &str,
    ) -> Result<HttpResponse, ApiError> {
        let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let target = format!("{}{}?{query}", home.trim_end_matches('/'), req.path());
        let out = self.client.request(method, &target);
        let reply = self
            .with_headers(out, req.headers())
            .send()
            .await
            .map_err(|e| unavailable(&e.to_string()))?;
        relay(reply).await.map(|(response, _)| response)
    }

    /// `out` with the client's headers (those that are not the connection's own) and this
    /// cluster's token.
    fn with_headers(
        &self,
        mut out: reqwest::RequestBuilder,
        headers: &actix_web::http::header::HeaderMap,
    ) -> reqwest::RequestBuilder {
        for (name, value) in headers {
            if !hop_by_hop(name.as_str()) && name.as_str() != FORWARDED {
                out = out.header(name.as_str(), value.as_bytes());
            }
        }
        out.header(FORWARDED, self.token.as_str())
    }
}

/// Hop-by-hop headers, which belong to one connection and are not passed on.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

fn unavailable(detail: &str) -> ApiError {
    tracing::warn!(
        detail,
        "a write could not be passed to the cluster's writer"
    );
    ApiError::new(
        ErrorCode::Busy,
        "The server that takes writes cannot be reached; try again",
    )
}

/// Passes `req` to the writer at `writer` and answers with its answer, once this node has
/// folded what the writer had when it answered.
pub async fn pass_on(
    req: ServiceRequest,
    writer: String,
    state: web::Data<AppState>,
    cluster: std::sync::Arc<Cluster>,
) -> ServiceResponse<BoxBody> {
    let (http, mut payload) = req.into_parts();
    // The limits the writer applies, so that nothing larger is held here: files may be as
    // large as an upload and take ten times as long; every other body is at most 1 MiB.
    let upload = http.path().contains("user_uploads")
        || http.path().ends_with("/avatar")
        || http.path().contains("/emoji/");
    let (limit, timeout) = if upload {
        (cluster.body_limit, cluster.body_timeout * 10)
    } else {
        (1 << 20, cluster.body_timeout)
    };
    let answer = async {
        // A node cut off from the stream would not see the change it passed on: it refuses,
        // as the writer would if it were cut off.
        let writes = state.engine.writes();
        if matches!(writes, crate::engine::Writes::Unreachable { .. }) {
            if let Some(refused) = writes.refusal() {
                return Err(refused);
            }
        }
        let mut body = web::BytesMut::new();
        let read = tokio::time::timeout(timeout, async {
            while let Some(chunk) = payload.next().await {
                let chunk = chunk.map_err(|e| ApiError::bad_request(e.to_string()))?;
                if body.len() + chunk.len() > limit {
                    return Err(ApiError::bad_request("Request body too large"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(())
        })
        .await;
        match read {
            Ok(result) => result?,
            Err(_) => {
                return Err(ApiError::new(
                    ErrorCode::RequestTimeout,
                    "The request body was not sent in time",
                ))
            }
        }
        let target = format!(
            "{}{}",
            writer.trim_end_matches('/'),
            http.uri().path_and_query().map_or("/", |p| p.as_str())
        );
        let method = reqwest::Method::from_bytes(http.method().as_str().as_bytes())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let mut out = cluster.client.request(method, &target);
        if let Some(peer) = http.peer_addr() {
            out = out.header("x-forwarded-for", peer.ip().to_string());
        }
        let reply = cluster
            .with_headers(out, http.headers())
            .body(body.freeze())
            .send()
            .await
            .map_err(|e| unavailable(&e.to_string()))?;
        let (response, seq) = relay(reply).await?;
        if let Some(seq) = seq {
            fold_up_to(&state, seq).await;
        }
        Ok(response)
    }
    .await;
    let response = answer.unwrap_or_else(|e| e.error_response());
    ServiceResponse::new(http, response)
}

/// Another node's answer as this node's, without the connection's own headers, and the
/// writer's `Chronicle-Seq` when it sent one.
async fn relay(reply: reqwest::Response) -> Result<(HttpResponse, Option<u64>), ApiError> {
    let status = actix_web::http::StatusCode::from_u16(reply.status().as_u16())
        .map_err(|e| unavailable(&e.to_string()))?;
    let mut response = HttpResponse::build(status);
    let mut seq = None;
    for (name, value) in reply.headers() {
        if name.as_str() == SEQ {
            seq = value.to_str().ok().and_then(|v| v.parse::<u64>().ok());
        } else if !hop_by_hop(name.as_str()) {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_str().as_bytes()),
                HeaderValue::from_bytes(value.as_bytes()),
            ) {
                response.append_header((name, value));
            }
        }
    }
    let bytes = reply
        .bytes()
        .await
        .map_err(|e| unavailable(&e.to_string()))?;
    Ok((response.body(bytes), seq))
}

/// Waits until this node's state has folded `seq`, catching up with the stream meanwhile.
async fn fold_up_to(state: &AppState, seq: u64) {
    let started = Instant::now();
    while state.engine.read(|s| s.seq.0) < seq {
        if started.elapsed() > FOLD_WAIT || state.engine.catch_up().await.is_err() {
            tracing::warn!(seq, "answered before this node folded the writer's change");
            return;
        }
        if state.engine.read(|s| s.seq.0) < seq {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Adds the writer's seq to its answer to a passed-on request.
pub fn with_seq(mut res: ServiceResponse<BoxBody>, seq: u64) -> ServiceResponse<BoxBody> {
    if let Ok(value) = HeaderValue::from_str(&seq.to_string()) {
        res.headers_mut()
            .insert(HeaderName::from_static(SEQ), value);
    }
    res
}

/// `GET /internal/uploads/{sha256}`: an uploaded file's bytes, for another node of the cluster
/// (`Cluster::fetch_upload`); not found for anyone else, and on a single box.
pub async fn internal_upload(
    state: web::Data<AppState>,
    req: actix_web::HttpRequest,
    sha256: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let not_found = || ApiError::new(ErrorCode::NotFound, "Not Found");
    let allowed = state
        .cluster
        .as_ref()
        .is_some_and(|c| c.carries_token(req.headers()));
    if !allowed {
        return Err(not_found());
    }
    let store = state.uploads.clone();
    let bytes = web::block(move || store.read(&sha256))
        .await
        .map_err(|e| ApiError::internal(format!("upload storage: {e}")))?
        .map_err(|_| not_found())?;
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .body(bytes))
}
