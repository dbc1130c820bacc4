//! Linkifiers (administrators): `POST /realm/filters`, `PATCH|DELETE /realm/filters/{id}`,
//! `PATCH /realm/linkifiers`.

use super::admin;
use super::Decision;
use crate::commands::Ctx;
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, LinkifierSpec};
use crate::ids::LinkifierId;
use crate::linkify::{expand_reverse_template, UrlTemplate};
use crate::projections::Projections;
use regex::Regex;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// A linkifier as a request gives it.
#[derive(Debug, Clone, Default)]
pub struct LinkifierRequest {
    pub pattern: String,
    pub url_template: String,
    pub example_input: Option<String>,
    pub reverse_template: Option<String>,
    pub alternative_url_templates: Vec<String>,
}

/// Zulip's validation failure: the first message, and every message by field in `errors`.
fn invalid(field: &str, msg: impl Into<String>) -> ApiError {
    let msg = msg.into();
    ApiError::bad_request(msg.clone()).with("errors", json!({ field: [msg] }))
}

/// Python's `repr` of a group name, as Zulip's messages quote it.
fn quoted(name: &str) -> String {
    format!("'{name}'")
}

/// The beginnings a URL template may have: a web address, a mail address, or a path on this
/// server. A template's scheme is its own text, never a matched group's, so `javascript:`,
/// `data:` and any other scheme a browser would run or open in place is refused.
const SAFE_TEMPLATE_STARTS: &[&str] = &["https://", "http://", "mailto:", "/"];

pub(crate) fn check_scheme(field: &str, template: &str) -> ApiResult<()> {
    let lower = template.to_ascii_lowercase();
    if SAFE_TEMPLATE_STARTS
        .iter()
        .any(|start| lower.starts_with(start))
    {
        Ok(())
    } else {
        Err(invalid(
            field,
            "URL templates must start with http://, https://, mailto: or /.",
        ))
    }
}

/// Zulip's checks, in Zulip's order; `except` is the linkifier being changed.
fn check(
    state: &Projections,
    request: LinkifierRequest,
    except: Option<LinkifierId>,
) -> ApiResult<LinkifierSpec> {
    let pattern = request.pattern.trim().to_owned();
    let url_template = request.url_template.trim().to_owned();
    for (field, value) in [("pattern", &pattern), ("url_template", &url_template)] {
        if value.is_empty() {
            return Err(invalid(field, "This field cannot be blank."));
        }
    }
    let template = UrlTemplate::parse(&url_template)
        .ok_or_else(|| invalid("url_template", "Invalid URL template."))?;
    check_scheme("url_template", &url_template)?;
    let regex = Regex::new(&pattern).map_err(|e| {
        let reason = e
            .to_string()
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: ").map(str::to_owned))
            .unwrap_or_else(|| "Unknown regular expression error".into());
        invalid(
            "__all__",
            format!("Bad regular expression: {reason}: {pattern}"),
        )
    })?;
    // The pattern must also survive Zulip's boundary wrapping (its group names are taken).
    if crate::linkify::compile(&pattern).is_err() {
        return Err(invalid(
            "__all__",
            "Bad regular expression: reserved group name",
        ));
    }
    let groups: BTreeSet<&str> = regex.capture_names().flatten().collect();
    let nonblank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let example_input = nonblank(request.example_input);
    let reverse_template = nonblank(request.reverse_template);
    if reverse_template.is_some() && example_input.is_none() {
        return Err(invalid(
            "reverse_template",
            "Example text is required to use an auto-conversion field.",
        ));
    }
    if let Some(example) = &example_input {
        let Some(caps) = regex.captures(example) else {
            return Err(invalid(
                "example_input",
                "Example input does not match the linkifier pattern.",
            ));
        };
        if let Some(reverse) = &reverse_template {
            let values: BTreeMap<String, String> = groups
                .iter()
                .filter_map(|g| {
                    caps.name(g)
                        .map(|m| ((*g).to_owned(), m.as_str().to_owned()))
                })
                .collect();
            let expanded = expand_reverse_template(reverse, &values)
                .map_err(|msg| invalid("reverse_template", msg))?;
            if expanded != *example {
                return Err(invalid(
                    "reverse_template",
                    "Example text does not match auto-conversion field.",
                ));
            }
        }
    }
    let variables: BTreeSet<&str> = template.variable_names().into_iter().collect();
    if let Some(name) = variables.difference(&groups).next() {
        return Err(invalid(
            "__all__",
            format!(
                "Group {} in URL template is not present in linkifier pattern.",
                quoted(name)
            ),
        ));
    }
    if let Some(name) = groups.difference(&variables).next() {
        return Err(invalid(
            "__all__",
            format!(
                "Group {} in linkifier pattern is not present in URL template.",
                quoted(name)
            ),
        ));
    }
    let mut alternatives = Vec::new();
    for alternative in request.alternative_url_templates {
        let alternative = alternative.trim().to_owned();
        let parsed = UrlTemplate::parse(&alternative)
            .ok_or_else(|| invalid("alternative_url_templates", "Invalid URL template."))?;
        check_scheme("alternative_url_templates", &alternative)?;
        if let Some(name) = parsed
            .variable_names()
            .into_iter()
            .find(|v| !groups.contains(v))
        {
            return Err(invalid(
                "alternative_url_templates",
                format!(
                    "Group {} in URL template is not present in linkifier pattern.",
                    quoted(name)
                ),
            ));
        }
        alternatives.push(alternative);
    }
    let duplicate = state
        .linkifiers
        .ordered()
        .into_iter()
        .any(|l| Some(l.id) != except && l.spec.pattern == pattern);
    if duplicate {
        return Err(invalid(
            "__all__",
            "Realm filter with this Realm and Pattern already exists.",
        ));
    }
    Ok(LinkifierSpec {
        pattern,
        url_template,
        example_input,
        reverse_template,
        alternative_url_templates: alternatives,
    })
}

fn not_found() -> ApiError {
    ApiError::bad_request("Linkifier not found.")
}

/// `POST /realm/filters`.
pub fn add_linkifier(
    state: &Projections,
    ctx: &Ctx,
    request: LinkifierRequest,
) -> ApiResult<Decision<LinkifierId>> {
    admin(state, ctx)?;
    let spec = check(state, request, None)?;
    let linkifier_id = LinkifierId(state.linkifiers.max_id().0 + 1);
    Ok(Decision::new(
        vec![Event::LinkifierAdded { linkifier_id, spec }],
        linkifier_id,
    ))
}

/// `PATCH /realm/filters/{id}`: a whole new definition.
pub fn update_linkifier(
    state: &Projections,
    ctx: &Ctx,
    id: LinkifierId,
    request: LinkifierRequest,
) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let current = state.linkifiers.get(id).ok_or_else(not_found)?;
    let spec = check(state, request, Some(id))?;
    if spec == current.spec {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::LinkifierChanged {
        linkifier_id: id,
        spec,
    }]))
}

/// `DELETE /realm/filters/{id}`.
pub fn remove_linkifier(state: &Projections, ctx: &Ctx, id: LinkifierId) -> ApiResult<Decision> {
    admin(state, ctx)?;
    state.linkifiers.get(id).ok_or_else(not_found)?;
    Ok(Decision::events(vec![Event::LinkifierRemoved {
        linkifier_id: id,
    }]))
}

/// `PATCH /realm/linkifiers`: every linkifier exactly once.
pub fn reorder_linkifiers(state: &Projections, ctx: &Ctx, order: Vec<u64>) -> ApiResult<Decision> {
    admin(state, ctx)?;
    let given: BTreeSet<u64> = order.iter().copied().collect();
    if given.len() != order.len() {
        return Err(ApiError::bad_request(
            "The ordered list must not contain duplicated linkifiers",
        ));
    }
    let existing: BTreeSet<u64> = state
        .linkifiers
        .ordered()
        .into_iter()
        .map(|l| l.id.0)
        .collect();
    if given != existing {
        return Err(ApiError::bad_request(
            "The ordered list must enumerate all existing linkifiers exactly once",
        ));
    }
    if order.is_empty() {
        return Ok(Decision::events(Vec::new()));
    }
    Ok(Decision::events(vec![Event::LinkifiersReordered {
        order: order.into_iter().map(LinkifierId).collect(),
    }]))
}
