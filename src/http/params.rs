//! Request parameters, Zulip style: from the query string and the form body (the body wins),
//! where list and object values arrive as JSON text. Every parameter a handler reads is
//! remembered, so the success reply can list the rest in `ignored_parameters_unsupported`.

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::render::fields::{Fields, JsonBuf, Obj};
use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

/// Largest request body accepted (a 10,000-character message is far below it).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Largest `multipart/form-data` body accepted: room for a custom emoji of Zulip's default
/// limit (`MAX_EMOJI_FILE_SIZE_MIB`, 5 MiB), so that a larger file gets Zulip's own message.
pub const MAX_MULTIPART_BYTES: usize = 6 * 1024 * 1024;

/// A file sent in a `multipart/form-data` request (Zulip accepts it under any field name).
#[derive(Debug)]
pub struct UploadedFile {
    pub bytes: Vec<u8>,
}

/// The parameters of one request.
#[derive(Debug, Default)]
pub struct Params {
    values: BTreeMap<String, String>,
    used: BTreeSet<String>,
    files: Vec<UploadedFile>,
}

impl Params {
    /// Parameters from already-parsed pairs (later pairs win).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Params {
        Params {
            values: pairs.into_iter().collect(),
            used: BTreeSet::new(),
            files: Vec::new(),
        }
    }

    /// The values of the parameters `names` that the request carried, as `name=value` pairs
    /// joined by `&` (each value cut to 200 characters), without marking them read: what an
    /// audit record keeps of a request. Only the names given, so nothing else it carried (a
    /// secret sent by mistake) is kept.
    pub fn audit_text(&self, names: &[&str]) -> String {
        names
            .iter()
            .filter_map(|name| {
                let value = self.values.get(*name)?;
                Some(format!(
                    "{name}={}",
                    value.chars().take(200).collect::<String>()
                ))
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    /// Takes the files of a `multipart/form-data` request (none for other requests).
    pub fn take_files(&mut self) -> Vec<UploadedFile> {
        std::mem::take(&mut self.files)
    }

    fn take(&mut self, name: &str) -> Option<&str> {
        self.used.insert(name.to_owned());
        self.values.get(name).map(String::as_str)
    }

    /// True if the request carried the parameter (marks it as read).
    pub fn has(&mut self, name: &str) -> bool {
        self.take(name).is_some()
    }

    /// An optional string.
    pub fn str(&mut self, name: &str) -> Option<String> {
        self.take(name).map(str::to_owned)
    }

    /// A required string.
    pub fn required_str(&mut self, name: &str) -> ApiResult<String> {
        self.str(name).ok_or_else(|| ApiError::missing(name))
    }

    /// An optional boolean, sent as JSON `true`/`false`.
    pub fn bool(&mut self, name: &str) -> ApiResult<Option<bool>> {
        match self.take(name) {
            None => Ok(None),
            Some(raw) => match raw.trim() {
                "true" | "True" => Ok(Some(true)),
                "false" | "False" => Ok(Some(false)),
                _ => Err(ApiError::bad_request(format!("{name} is not a boolean"))
                    .with("var_name", name)),
            },
        }
    }

    /// An optional integer of any width, sent as JSON number text.
    pub fn int<T: std::str::FromStr>(&mut self, name: &str) -> ApiResult<Option<T>> {
        match self.take(name) {
            None => Ok(None),
            Some(raw) => raw.trim().parse::<T>().map(Some).map_err(|_| {
                ApiError::bad_request(format!("{name} is not an integer")).with("var_name", name)
            }),
        }
    }

    /// A required integer.
    pub fn required_int<T: std::str::FromStr>(&mut self, name: &str) -> ApiResult<T> {
        self.int(name)?.ok_or_else(|| ApiError::missing(name))
    }

    /// An optional JSON-encoded value (a list, an object, ...).
    pub fn json<T: DeserializeOwned>(&mut self, name: &str) -> ApiResult<Option<T>> {
        let Some(raw) = self.take(name) else {
            return Ok(None);
        };
        let raw = raw.to_owned();
        let value: Value = serde_json::from_str(&raw).map_err(|_| {
            ApiError::bad_request(format!("{name} is not valid JSON")).with("var_name", name)
        })?;
        serde_json::from_value(value)
            .map(Some)
            .map_err(|_| ApiError::invalid(name, &raw))
    }

    /// Names the request carried that no code read, sorted.
    pub fn ignored(&self) -> Vec<String> {
        self.values
            .keys()
            .filter(|k| !self.used.contains(k.as_str()))
            .cloned()
            .collect()
    }

    /// `{"result":"success","msg":"", ...data}`, with `ignored_parameters_unsupported` when the
    /// request had parameters this endpoint does not take.
    pub fn success(&self, data: Value) -> HttpResponse {
        let mut body = Map::new();
        body.insert("result".into(), Value::from("success"));
        body.insert("msg".into(), Value::from(""));
        if let Value::Object(fields) = data {
            body.extend(fields);
        }
        let ignored = self.ignored();
        if !ignored.is_empty() {
            body.insert(
                "ignored_parameters_unsupported".into(),
                Value::from(ignored),
            );
        }
        HttpResponse::Ok().json(Value::Object(body))
    }

    /// The same answer as [`Params::success`], written straight to bytes: `fill` writes the
    /// fields after `result` and `msg`. For answers too large to build as a tree first.
    pub fn success_with(
        &self,
        capacity: usize,
        fill: impl FnOnce(&mut Obj<'_>),
    ) -> ApiResult<HttpResponse> {
        self.success_bytes(capacity, fill).map(json_response)
    }

    /// The body of [`Params::success_with`]'s answer, for work done off the async workers
    /// (an `HttpResponse` cannot cross threads; its bytes can).
    pub fn success_bytes(
        &self,
        capacity: usize,
        fill: impl FnOnce(&mut Obj<'_>),
    ) -> ApiResult<Vec<u8>> {
        let mut buf = JsonBuf::with_capacity(capacity);
        buf.object(|o| {
            o.field("result", "success");
            o.field("msg", "");
            fill(o);
            let ignored = self.ignored();
            if !ignored.is_empty() {
                o.field("ignored_parameters_unsupported", &ignored);
            }
        });
        buf.into_bytes()
            .ok_or_else(|| ApiError::internal("the answer could not be written as JSON"))
    }
}

/// A `200 OK` JSON answer of already written bytes.
pub fn json_response(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(actix_web::http::header::ContentType::json())
        .body(body)
}

fn parse_pairs(bytes: &[u8]) -> ApiResult<Vec<(String, String)>> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(bytes)
        .map_err(|_| ApiError::bad_request("Malformed form-encoded parameters"))
}

/// The request's media type, lowercased, without parameters (`None` without a header).
fn media_type(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next()?.trim().to_ascii_lowercase())
}

/// Most fields one `multipart/form-data` body may have.
pub const MAX_MULTIPART_FIELDS: usize = 64;

/// Reads a request body, refusing it past `limit` bytes (checked against `Content-Length`
/// first, then as it arrives).
async fn read_body(req: &HttpRequest, mut payload: Payload, limit: usize) -> ApiResult<Vec<u8>> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::bad_request("Request body too large"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::bad_request(format!("Could not read the request body: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::bad_request("Request body too large"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Reads a `multipart/form-data` body: fields with a file name are files, the others are
/// parameters like form fields. The whole body is read first (at most `MAX_MULTIPART_BYTES`),
/// so the parser never buffers more than that; at most `MAX_MULTIPART_FIELDS` fields, and the
/// text fields together within `MAX_BODY_BYTES` like a form.
async fn read_multipart(
    req: &HttpRequest,
    payload: Payload,
) -> ApiResult<(Vec<(String, String)>, Vec<UploadedFile>)> {
    let body = read_body(req, payload, MAX_MULTIPART_BYTES).await?;
    let malformed = |e: actix_multipart::MultipartError| {
        ApiError::bad_request(format!("Malformed multipart body: {e}"))
    };
    let stream = futures_util::stream::once(async move {
        Ok::<_, actix_web::error::PayloadError>(actix_web::web::Bytes::from(body))
    });
    let mut multipart = actix_multipart::Multipart::new(req.headers(), stream);
    let (mut pairs, mut files, mut text_bytes) = (Vec::new(), Vec::new(), 0usize);
    while let Some(field) = multipart.next().await {
        if pairs.len() + files.len() >= MAX_MULTIPART_FIELDS {
            return Err(ApiError::bad_request("Too many fields in the request"));
        }
        let mut field = field.map_err(malformed)?;
        let name = field.name().unwrap_or_default().to_owned();
        let is_file = field
            .content_disposition()
            .is_some_and(|d| d.get_filename().is_some());
        let mut bytes = Vec::new();
        while let Some(chunk) = field.next().await {
            bytes.extend_from_slice(&chunk.map_err(malformed)?);
        }
        if is_file {
            files.push(UploadedFile { bytes });
        } else {
            text_bytes += bytes.len();
            if text_bytes > MAX_BODY_BYTES {
                return Err(ApiError::bad_request("Request body too large"));
            }
            let text = String::from_utf8(bytes)
                .map_err(|_| ApiError::bad_request(format!("{name} is not valid UTF-8")))?;
            pairs.push((name, text));
        }
    }
    Ok((pairs, files))
}

impl FromRequest for Params {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Params, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let query = parse_pairs(req.query_string().as_bytes());
        let media_type = media_type(req);
        let form = media_type
            .as_deref()
            .is_none_or(|m| m == "application/x-www-form-urlencoded");
        let payload = payload.take();
        let req = req.clone();
        let deadline = req
            .app_data::<actix_web::web::Data<crate::http::AppState>>()
            .map_or_else(
                || crate::http::ClientTimeouts::default().body,
                |s| s.client_timeouts.body,
            );
        let read = async move {
            let mut pairs = query?;
            if media_type.as_deref() == Some("multipart/form-data") {
                let (fields, files) = read_multipart(&req, payload).await?;
                pairs.extend(fields);
                let mut params = Params::from_pairs(pairs);
                params.files = files;
                return Ok(params);
            }
            let body = read_body(&req, payload, MAX_BODY_BYTES).await?;
            if form && !body.is_empty() {
                pairs.extend(parse_pairs(&body)?);
            }
            Ok(Params::from_pairs(pairs))
        };
        Box::pin(async move {
            // A client that stalls mid-body is cut off instead of holding the buffer.
            tokio::time::timeout(deadline, read)
                .await
                .unwrap_or_else(|_| {
                    Err(ApiError::new(
                        ErrorCode::RequestTimeout,
                        "The request body did not arrive in time",
                    ))
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Params {
        Params::from_pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn typed_getters_and_errors() {
        let mut p = params(&[("a", "true"), ("n", "42"), ("l", "[1,2]"), ("bad", "x")]);
        assert_eq!(p.bool("a").unwrap(), Some(true));
        assert_eq!(p.int::<u64>("n").unwrap(), Some(42));
        assert_eq!(p.json::<Vec<u64>>("l").unwrap(), Some(vec![1, 2]));
        assert_eq!(
            p.bool("bad").unwrap_err().body()["msg"],
            "bad is not a boolean"
        );
        assert_eq!(
            p.required_str("missing").unwrap_err().body()["var_name"],
            "missing"
        );
        let mut p = params(&[("l", "[1,"), ("m", "{\"a\":1}")]);
        assert_eq!(
            p.json::<Vec<u64>>("l").unwrap_err().body()["msg"],
            "l is not valid JSON"
        );
        let err = p.json::<Vec<u64>>("m").unwrap_err();
        assert_eq!(err.body()["code"], "REQUEST_VARIABLE_INVALID");
    }

    #[test]
    fn unread_parameters_are_reported() {
        let mut p = params(&[("used", "1"), ("zeta", "2"), ("alpha", "3")]);
        let _ = p.str("used");
        assert_eq!(p.ignored(), vec!["alpha".to_string(), "zeta".to_string()]);
    }
}
