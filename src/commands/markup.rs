//! Rendering Markdown against the organization: the mentions, channel links, custom emoji and
//! linkifiers a message or a profile value may name, and the uploaded images it previews.

use crate::ids::UserId;
use crate::markdown::Resolver;
use crate::projections::{Projections, User};

pub struct OrgResolver<'a>(pub &'a Projections);

impl Resolver for OrgResolver<'_> {
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
        let state = self.0;
        let candidate = |u: &&User| u.is_active && u.full_name == name;
        match id {
            Some(id) => state
                .users
                .get(UserId(id))
                .filter(candidate)
                .map(|u| (u.user_id.0, u.full_name.clone())),
            None => {
                let mut matches = state.users.iter().filter(candidate);
                let first = matches.next()?;
                // An ambiguous name mentions nobody (Zulip asks for the `|id` form).
                matches
                    .next()
                    .is_none()
                    .then(|| (first.user_id.0, first.full_name.clone()))
            }
        }
    }

    /// Active user-defined groups (system groups, "role:…", are not mentioned by name).
    fn user_group(&self, name: &str) -> Option<(u64, String)> {
        self.0
            .groups
            .by_name(name)
            .filter(|g| g.system.is_none() && !g.deactivated)
            .map(|g| (g.id.0, g.name.clone()))
    }

    fn linkifiers(&self) -> Vec<&crate::linkify::Compiled> {
        self.0.linkifiers.compiled()
    }

    fn custom_emoji(&self, name: &str) -> Option<String> {
        self.0
            .custom_emoji
            .active_named(name)
            .map(crate::projections::emoji::source_url)
    }

    fn upload_image(&self, path: &str) -> Option<crate::markdown::UploadPreview> {
        let attachment = self.0.attachments.by_path(path)?;
        let image = attachment.image?;
        Some(crate::markdown::UploadPreview {
            width: image.width,
            height: image.height,
            content_type: attachment.content_type.clone(),
            animated: image.animated,
            thumbnail: crate::thumbnails::Format::default_for(&image).name(),
        })
    }

    fn channel(&self, name: &str) -> Option<(u64, String)> {
        self.0
            .channels
            .by_name(name)
            .filter(|c| !c.invite_only)
            .map(|c| (c.id.0, c.name.clone()))
    }
}
