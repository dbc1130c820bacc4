//! Identifier newtypes. Ids are allocated by commands (never by `apply`) and travel inside events.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A user's (or bot's) `user_id`.
    UserId
);

id_type!(
    /// A user group's id (system groups included).
    GroupId
);

id_type!(
    /// A channel's `stream_id`.
    ChannelId
);

id_type!(
    /// A channel folder's id.
    FolderId
);

id_type!(
    /// A message's id.
    MessageId
);

id_type!(
    /// A custom profile field's id.
    FieldId
);

id_type!(
    /// A linkifier's id.
    LinkifierId
);

id_type!(
    /// An invitation's id (email invitations and reusable links share the sequence).
    InviteId
);

id_type!(
    /// A custom emoji's id (its `emoji_code` in reactions).
    EmojiId
);

id_type!(
    /// An uploaded file's attachment id (`GET /attachments`).
    AttachmentId
);

id_type!(
    /// A scheduled message's (or reminder's) id, not the id it gets when sent.
    ScheduledMessageId
);

/// Position of an event in the log: 1 for the first event, gapless, strictly increasing.
/// Stored as big-endian bytes so that sled's key order is log order.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Seq(pub u64);

impl Seq {
    pub fn to_key(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    pub fn from_key(key: &[u8]) -> Option<Seq> {
        let bytes: [u8; 8] = key.try_into().ok()?;
        Some(Seq(u64::from_be_bytes(bytes)))
    }

    pub fn next(self) -> Seq {
        Seq(self.0 + 1)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_keys_sort_like_numbers() {
        let a = Seq(255).to_key();
        let b = Seq(256).to_key();
        assert!(a < b);
        assert_eq!(Seq::from_key(&b), Some(Seq(256)));
        assert_eq!(Seq::from_key(&[1, 2, 3]), None);
    }
}
