//! Who may join by address: the organization's allowed email domains (`/realm/domains`, owners
//! only, as Zulip) and `emails_restricted_to_domains`. While the restriction is on, an account
//! is made (by an invitation, a directory or an identity provider) only for an address in one of
//! the domains, or under one that allows its subdomains, and without a `+` in its local part.

use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::{Event, RealmValue};
use crate::projections::Projections;

/// Zulip's `validate_domain`: why `domain` (already trimmed and lowercased) cannot be one.
pub fn domain_problem(domain: &str) -> Option<&'static str> {
    if domain.is_empty() {
        return Some("Domain can't be empty.");
    }
    if !domain.contains('.') {
        return Some("Domain must have at least one dot (.)");
    }
    if domain.len() > 255 {
        return Some("Domain is too long");
    }
    if domain.starts_with('.') || domain.ends_with('.') {
        return Some("Domain cannot start or end with a dot (.)");
    }
    for label in domain.split('.') {
        if label.is_empty() {
            return Some("Consecutive '.' are not allowed.");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some("Subdomains cannot start or end with a '-'.");
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Some("Domain can only have letters, numbers, '.' and '-'s.");
        }
    }
    None
}

/// Why an account may not be made for `email` here (Zulip's `email_allowed_for_realm`, as
/// its invitation form words it), or `None`.
pub fn email_refusal(state: &Projections, email: &str) -> Option<&'static str> {
    if !state.realm.flag("emails_restricted_to_domains") {
        return None;
    }
    let (local, domain) = email.rsplit_once('@')?;
    if local.contains('+') {
        return Some("Email addresses containing + are not allowed.");
    }
    let domain = domain.to_ascii_lowercase();
    if state.realm.domains.contains_key(&domain) {
        return None;
    }
    // A parent domain that allows its subdomains.
    let mut rest = domain.as_str();
    while let Some((_, parent)) = rest.split_once('.') {
        if state.realm.domains.get(parent) == Some(&true) {
            return None;
        }
        rest = parent;
    }
    Some("Outside your domain.")
}

/// `POST /realm/domains` (`domain`, `allow_subdomains`): answers Zulip's `new_domain`.
pub fn add_domain(
    state: &Projections,
    ctx: &Ctx,
    domain: &str,
    allow_subdomains: bool,
) -> ApiResult<Decision<(u64, String)>> {
    super::owner(state, ctx)?;
    let domain = domain.trim().to_lowercase();
    if let Some(problem) = domain_problem(&domain) {
        return Err(ApiError::bad_request(format!("Invalid domain: {problem}")));
    }
    if state.realm.domains.contains_key(&domain) {
        return Err(ApiError::bad_request(format!(
            "The domain {domain} is already a part of your organization."
        )));
    }
    // Zulip answers the row's id; here a domain's place among the domains, counting from 1.
    let id = state.realm.domains.len() as u64 + 1;
    Ok(Decision::new(
        vec![Event::RealmDomainAdded {
            domain: domain.clone(),
            allow_subdomains,
        }],
        (id, domain),
    ))
}

/// `PATCH /realm/domains/{domain}` (`allow_subdomains`).
pub fn change_domain(
    state: &Projections,
    ctx: &Ctx,
    domain: &str,
    allow_subdomains: bool,
) -> ApiResult<Decision<()>> {
    super::owner(state, ctx)?;
    match state.realm.domains.get(domain) {
        None => Err(not_found(domain)),
        Some(now) if *now == allow_subdomains => Ok(Decision::events(Vec::new())),
        Some(_) => Ok(Decision::events(vec![Event::RealmDomainChanged {
            domain: domain.to_owned(),
            allow_subdomains,
        }])),
    }
}

/// `DELETE /realm/domains/{domain}`. Removing the last domain lifts the restriction, as Zulip
/// does (an organization restricted to no domain could admit nobody).
pub fn remove_domain(state: &Projections, ctx: &Ctx, domain: &str) -> ApiResult<Decision<()>> {
    super::owner(state, ctx)?;
    if !state.realm.domains.contains_key(domain) {
        return Err(not_found(domain));
    }
    let mut events = vec![Event::RealmDomainRemoved {
        domain: domain.to_owned(),
    }];
    if state.realm.domains.len() == 1 && state.realm.flag("emails_restricted_to_domains") {
        events.push(Event::RealmSettingChanged {
            name: "emails_restricted_to_domains".into(),
            value: RealmValue::Bool(false),
        });
    }
    Ok(Decision::events(events))
}

/// The refusal of an account for an address outside the allowed domains, in Zulip's words
/// (its registration page's).
pub fn not_allowed(email: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Your email address, {email}, is not in one of the domains that are allowed to register \
         for accounts in this organization."
    ))
}

fn not_found(domain: &str) -> ApiError {
    ApiError::bad_request(format!("No entry found for domain {domain}."))
}
