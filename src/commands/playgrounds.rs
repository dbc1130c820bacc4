//! Code playgrounds (`/realm/playgrounds`, Zulip's `RealmPlayground`): an organization's links
//! from a code block in a language to a site that runs it, chosen by administrators.

use super::{Ctx, Decision};
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::linkify::UrlTemplate;
use crate::projections::Projections;

/// Zulip's `RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH`.
pub const MAX_LANGUAGE_LENGTH: usize = 40;

/// The longest name taken (Zulip keeps it in a text column; a name is shown in a menu).
pub const MAX_NAME_LENGTH: usize = 60;

/// What `POST /realm/playgrounds` asks for.
#[derive(Debug, Clone)]
pub struct PlaygroundRequest {
    pub name: String,
    pub pygments_language: String,
    pub url_template: String,
}

/// `POST /realm/playgrounds`: administrators only; Zulip's checks (a language of Pygments'
/// characters, a URL template whose one variable is `code`, no second playground of the same
/// name for the language), and a template that starts as a linkifier's must. Answers the id.
pub fn add_playground(
    state: &Projections,
    ctx: &Ctx,
    request: PlaygroundRequest,
) -> ApiResult<Decision<u64>> {
    super::admin(state, ctx)?;
    let name = request.name.trim().to_owned();
    let pygments_language = request.pygments_language.trim().to_owned();
    let url_template = request.url_template.trim().to_owned();
    for value in [&name, &pygments_language, &url_template] {
        if value.is_empty() {
            return Err(ApiError::bad_request("This field cannot be blank."));
        }
    }
    if name.chars().count() > MAX_NAME_LENGTH {
        return Err(ApiError::bad_request(format!(
            "name is too long (limit: {MAX_NAME_LENGTH} characters)"
        )));
    }
    if pygments_language.chars().count() > MAX_LANGUAGE_LENGTH {
        return Err(ApiError::bad_request(format!(
            "Ensure this value has at most {MAX_LANGUAGE_LENGTH} characters (it has {})",
            pygments_language.chars().count()
        )));
    }
    // Zulip's `check_pygments_language`: letters, digits, space and `_+-./#`.
    if !pygments_language
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _+-./#".contains(c))
    {
        return Err(ApiError::bad_request(
            "Invalid characters in pygments language",
        ));
    }
    let template = UrlTemplate::parse(&url_template)
        .ok_or_else(|| ApiError::bad_request("Invalid URL template."))?;
    if template.variable_names() != ["code"] {
        return Err(ApiError::bad_request(
            "\"code\" should be the only variable present in the URL template",
        ));
    }
    super::linkifiers::check_scheme("url_template", &url_template)?;
    let taken =
        state.realm.playgrounds.values().any(|p| {
            p.name == name && p.pygments_language.eq_ignore_ascii_case(&pygments_language)
        });
    if taken {
        return Err(ApiError::bad_request(
            "Realm playground with this Realm, Pygments language and Name already exists.",
        ));
    }
    let playground_id = state.realm.highest_playground_id + 1;
    Ok(Decision::new(
        vec![Event::PlaygroundAdded {
            playground_id,
            name,
            pygments_language,
            url_template,
        }],
        playground_id,
    ))
}

/// `DELETE /realm/playgrounds/{playground_id}`.
pub fn remove_playground(
    state: &Projections,
    ctx: &Ctx,
    playground_id: u64,
) -> ApiResult<Decision> {
    super::admin(state, ctx)?;
    if !state.realm.playgrounds.contains_key(&playground_id) {
        return Err(ApiError::bad_request("Invalid playground"));
    }
    Ok(Decision::events(vec![Event::PlaygroundRemoved {
        playground_id,
    }]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{msg, Given};
    use crate::events::Role;

    fn request(name: &str, language: &str, template: &str) -> PlaygroundRequest {
        PlaygroundRequest {
            name: name.into(),
            pygments_language: language.into(),
            url_template: template.into(),
        }
    }

    #[test]
    fn administrators_add_and_remove_playgrounds_with_zulips_checks() {
        let mut given = Given::org();
        let admin = given.user("admin@example.com", Role::Administrator);
        let alice = given.user("alice@example.com", Role::Member);
        let python = request(
            " Python ",
            "Python",
            "https://python.example.com?code={code}",
        );
        let err = given.refused(alice, |s, c| add_playground(s, c, python.clone()));
        assert_eq!(msg(&err), "Must be an organization administrator");
        for (bad, expected) in [
            (
                request("", "Python", "https://x.example/{code}"),
                "This field cannot be blank.",
            ),
            (
                request("P", "Py<thon>", "https://x.example/{code}"),
                "Invalid characters in pygments language",
            ),
            (
                request("P", "Python", "https://x.example/{code"),
                "Invalid URL template.",
            ),
            (
                request("P", "Python", "https://x.example/{code}/{other}"),
                "\"code\" should be the only variable present in the URL template",
            ),
            (
                request("P", "Python", "https://x.example/"),
                "\"code\" should be the only variable present in the URL template",
            ),
            (
                request("P", "Python", "javascript:alert({code})"),
                "URL templates must start with http://, https://, mailto: or /.",
            ),
        ] {
            let err = given.refused(admin, |s, c| add_playground(s, c, bad.clone()));
            assert_eq!(msg(&err), expected);
        }
        let id = given.ok(admin, |s, c| add_playground(s, c, python.clone()));
        assert_eq!(id, 1);
        let shown = &given.state.realm.playgrounds[&1];
        assert_eq!(
            (shown.name.as_str(), shown.pygments_language.as_str()),
            ("Python", "Python")
        );
        let err = given.refused(admin, |s, c| add_playground(s, c, python.clone()));
        assert_eq!(
            msg(&err),
            "Realm playground with this Realm, Pygments language and Name already exists."
        );
        let err = given.refused(alice, |s, c| remove_playground(s, c, 1));
        assert_eq!(msg(&err), "Must be an organization administrator");
        given.ok(admin, |s, c| remove_playground(s, c, 1));
        let err = given.refused(admin, |s, c| remove_playground(s, c, 1));
        assert_eq!(msg(&err), "Invalid playground");
        // Ids are not reused.
        assert_eq!(
            given.ok(admin, |s, c| add_playground(s, c, python.clone())),
            2
        );
    }
}
