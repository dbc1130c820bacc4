//! One message as the projections keep it, its per-copy flag bits, and what it gathers after it
//! is sent (reactions, edits, submessages).

use crate::events::{MessageFlag, ReactionType};
use crate::ids::{ChannelId, MessageId, UserId};
use std::sync::Arc;

/// Per-user flag bits.
pub mod flags {
    pub const READ: u8 = 1;
    pub const STARRED: u8 = 2;
    pub const COLLAPSED: u8 = 4;
    pub const MENTIONED: u8 = 8;
    pub const STREAM_WILDCARD: u8 = 16;
    pub const TOPIC_WILDCARD: u8 = 32;
    pub const HAS_ALERT_WORD: u8 = 64;
}

/// The API names of a flag set, in Zulip's order.
pub fn flag_names(bits: u8, historical: bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (bit, name) in [
        (flags::READ, "read"),
        (flags::STARRED, "starred"),
        (flags::COLLAPSED, "collapsed"),
        (flags::MENTIONED, "mentioned"),
        (flags::STREAM_WILDCARD, "stream_wildcard_mentioned"),
        (flags::TOPIC_WILDCARD, "topic_wildcard_mentioned"),
        (flags::HAS_ALERT_WORD, "has_alert_word"),
    ] {
        if bits & bit != 0 {
            out.push(name);
        }
    }
    if bits & (flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0 {
        out.push("wildcard_mentioned");
    }
    if historical {
        out.push("historical");
    }
    out
}

pub fn flag_bit(flag: MessageFlag) -> u8 {
    match flag {
        MessageFlag::Read => flags::READ,
        MessageFlag::Starred => flags::STARRED,
        MessageFlag::Collapsed => flags::COLLAPSED,
    }
}

/// The shared copy of `value` in `known`, added if new.
pub(super) fn intern<T: ?Sized + std::hash::Hash + Eq>(
    known: &mut super::FastSet<Arc<T>>,
    value: &T,
) -> Arc<T>
where
    for<'a> Arc<T>: From<&'a T>,
{
    if let Some(shared) = known.get(value) {
        return shared.clone();
    }
    let shared = Arc::from(value);
    known.insert(Arc::clone(&shared));
    shared
}

/// Names and participant lists that many messages share, each kept once (a message points at
/// its copy). Nothing is dropped from them: a deleted topic's name stays until a restart, which
/// costs one allocation per name ever used.
#[derive(Debug, Clone, Default)]
pub(super) struct Shared {
    pub(super) clients: super::FastSet<Arc<str>>,
    topics: super::FastSet<Arc<str>>,
    participants: super::FastSet<Arc<[UserId]>>,
}

impl Shared {
    pub(super) fn topic(&mut self, topic: &str) -> Topic {
        Topic(intern(&mut self.topics, topic))
    }

    pub(super) fn address(&mut self, recipient: &crate::events::Recipient) -> Address {
        match recipient {
            crate::events::Recipient::Channel { channel_id, topic } => Address::Channel {
                channel_id: *channel_id,
                topic: self.topic(topic),
            },
            crate::events::Recipient::Direct { user_ids } => Address::Direct {
                user_ids: intern(&mut self.participants, user_ids.as_slice()),
            },
        }
    }
}

/// What a thread decoding a snapshot interns into: its own sets, in front of the sets every
/// thread decoding the same snapshot shares (when it is decoded in parts on several threads),
/// so that all its messages point at one copy of each name while the shared sets are locked
/// once per name and thread, not once per message.
struct Decoding {
    own: Shared,
    common: Option<Arc<std::sync::Mutex<Shared>>>,
}

impl Decoding {
    /// The shared copy of `value` in the set `pick` chooses.
    fn intern<T: ?Sized + std::hash::Hash + Eq>(
        &mut self,
        pick: impl Fn(&mut Shared) -> &mut super::FastSet<Arc<T>>,
        value: &T,
    ) -> Arc<T>
    where
        for<'a> Arc<T>: From<&'a T>,
    {
        if let Some(shared) = pick(&mut self.own).get(value) {
            return shared.clone();
        }
        let shared = match &self.common {
            Some(common) => intern(
                pick(&mut common.lock().unwrap_or_else(|p| p.into_inner())),
                value,
            ),
            None => Arc::from(value),
        };
        pick(&mut self.own).insert(Arc::clone(&shared));
        shared
    }
}

thread_local! {
    /// The shared names and lists of the snapshot being decoded on this thread
    /// (`decoding_shared`), so that a decoded message points at them from the start: a
    /// message decoded with its own copies and interned afterwards would leave their freed
    /// blocks scattered among the messages, where the allocator cannot give them back.
    static DECODING: std::cell::RefCell<Option<Decoding>> = const { std::cell::RefCell::new(None) };
}

/// Runs `decode` with every topic, client name and participant list it decodes interned, and
/// returns its result with the interned sets (for `Messages` to keep interning into).
pub(super) fn decoding_shared<R>(decode: impl FnOnce() -> R) -> (R, Shared) {
    decoding(None, decode)
}

/// Runs `decode` with every topic, client name and participant list it decodes interned into
/// `common`, which other threads decoding parts of the same snapshot share.
pub(super) fn decoding_into<R>(
    common: &Arc<std::sync::Mutex<Shared>>,
    decode: impl FnOnce() -> R,
) -> R {
    decoding(Some(common.clone()), decode).0
}

fn decoding<R>(
    common: Option<Arc<std::sync::Mutex<Shared>>>,
    decode: impl FnOnce() -> R,
) -> (R, Shared) {
    /// Puts back what the thread had before, even if `decode` panics.
    struct Restore(Option<Option<Decoding>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                DECODING.with(|d| d.replace(previous));
            }
        }
    }
    let fresh = Decoding {
        own: Shared::default(),
        common,
    };
    let mut restore = Restore(Some(DECODING.with(|d| d.replace(Some(fresh)))));
    let result = decode();
    let decoded = DECODING.with(|d| d.replace(restore.0.take().flatten()));
    (result, decoded.map(|d| d.own).unwrap_or_default())
}

/// `shared(sets)` with the sets of the snapshot being decoded on this thread, else `alone()`.
fn while_decoding<T>(shared: impl FnOnce(&mut Decoding) -> T, alone: impl FnOnce() -> T) -> T {
    DECODING.with(|d| match d.borrow_mut().as_mut() {
        Some(sets) => shared(sets),
        None => alone(),
    })
}

fn decode_client<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Arc<str>, D::Error> {
    struct Name;
    impl serde::de::Visitor<'_> for Name {
        type Value = Arc<str>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a client name")
        }
        fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Arc<str>, E> {
            Ok(while_decoding(
                |sets| sets.intern(|s| &mut s.clients, name),
                || Arc::from(name),
            ))
        }
    }
    deserializer.deserialize_str(Name)
}

fn decode_participants<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Arc<[UserId]>, D::Error> {
    let ids = <Vec<UserId> as serde::Deserialize>::deserialize(deserializer)?;
    Ok(while_decoding(
        |sets| sets.intern(|s| &mut s.participants, ids.as_slice()),
        || Arc::from(ids.as_slice()),
    ))
}

/// A topic's name as the projections keep it: every message of a topic shares one allocation
/// of its spelling (`Messages` interns them), so a message's topic costs a pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Topic(pub(super) Arc<str>);

impl Topic {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared allocation: equal pointers mean the same spelling (interned in one state).
    pub fn ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
}

/// A topic of its own, not shared: for a message that is not stored (the stored ones get
/// theirs from `Messages`).
impl From<&str> for Topic {
    fn from(name: &str) -> Topic {
        Topic(Arc::from(name))
    }
}

impl std::ops::Deref for Topic {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Topic {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Topic {
    /// Interned while a snapshot is decoded (`decoding_shared`), else a topic of its own.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Topic, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Topic;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a topic")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Topic, E> {
                Ok(while_decoding(
                    |sets| Topic(sets.intern(|s| &mut s.topics, text)),
                    || Topic(Arc::from(text)),
                ))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// Where a message is, as the projections keep it: the log's `events::Recipient`, with the
/// topic and the participants of a direct conversation shared between the messages that have
/// the same ones. It is written (dump, snapshots) exactly as the log's `Recipient` is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Address {
    Channel {
        channel_id: ChannelId,
        topic: Topic,
    },
    /// Every participant, the sender included, ascending.
    Direct {
        #[serde(deserialize_with = "decode_participants")]
        user_ids: Arc<[UserId]>,
    },
}

impl Address {
    /// The log's form, for an event that carries a message's place.
    pub fn to_recipient(&self) -> crate::events::Recipient {
        match self {
            Address::Channel { channel_id, topic } => crate::events::Recipient::Channel {
                channel_id: *channel_id,
                topic: topic.to_string(),
            },
            Address::Direct { user_ids } => crate::events::Recipient::Direct {
                user_ids: user_ids.to_vec(),
            },
        }
    }
}

/// One message. Bodies are shared (`Arc`) between the engine's two copies of the state.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Message {
    pub id: MessageId,
    pub sender_id: UserId,
    pub recipient: Address,
    pub content: Arc<str>,
    /// The rendering, unless it is `<p>` + content + `</p>` (most messages are one plain
    /// paragraph): see `rendered_content`.
    pub(super) rendered: Option<Arc<str>>,
    /// Interned: one allocation per client name (`Shared`).
    #[serde(deserialize_with = "decode_client")]
    pub client: Arc<str>,
    pub timestamp: i64,
    pub is_me_message: bool,
    /// Users mentioned by name (their copies carry `MENTIONED`); usually none.
    pub mentioned: Box<[UserId]>,
    /// `STREAM_WILDCARD` and `TOPIC_WILDCARD` bits for every copy.
    pub wildcards: u8,
    /// Reactions and edits; most messages have neither, so they cost one pointer.
    pub extra: Option<Box<MessageExtra>>,
}

/// What a message gathers after it is sent.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageExtra {
    /// In the order they were added.
    pub reactions: Vec<Reaction>,
    /// Oldest first.
    pub edits: Vec<EditRecord>,
    /// Seconds; the last content edit or topic/channel change.
    pub last_edit_timestamp: Option<i64>,
    /// Seconds; the last topic/channel change (resolving a topic does not count).
    pub last_moved_timestamp: Option<i64>,
    /// Widget data attached to the message, oldest first.
    pub submessages: Vec<Submessage>,
    /// Recipients whose alert words the content contains (their copies carry
    /// `HAS_ALERT_WORD`).
    #[serde(default)]
    pub alerted: Vec<UserId>,
}

/// One submessage (Zulip's widget data: a poll vote, a to-do item).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Submessage {
    pub id: u64,
    pub sender_id: UserId,
    pub msg_type: String,
    /// JSON text.
    pub content: String,
}

/// One reaction on a message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reaction {
    pub user_id: UserId,
    pub emoji_name: String,
    pub emoji_code: String,
    pub reaction_type: ReactionType,
}

/// One entry of a message's edit history: what it was before the edit.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EditRecord {
    pub user_id: UserId,
    /// Seconds.
    pub timestamp: i64,
    /// Set when the content changed.
    pub prev_content: Option<(Arc<str>, Arc<str>)>,
    /// Set when the topic changed.
    pub prev_topic: Option<String>,
    /// Set when the channel changed.
    pub prev_channel: Option<ChannelId>,
}

/// The rendering a message does not store but rebuilds from its content: the content's
/// paragraphs where it is plain prose (`markdown::plain_paragraphs`: lines joined by `<br />`,
/// quotes escaped, as the full parse renders them), else the content as one paragraph. A pure
/// function of the content, so a snapshot can leave out every rendering that equals it.
pub fn rebuilt_rendering(content: &str) -> String {
    if one_plain_line(content) {
        return format!("<p>{content}</p>");
    }
    crate::markdown::plain_paragraphs(content).unwrap_or_else(|| format!("<p>{content}</p>"))
}

/// Whether `content` is one line without quotes, which [`rebuilt_rendering`] gives back as one
/// paragraph whether or not it is plain prose: `plain_paragraphs` changes only line breaks,
/// indentation and quotes. Most chat messages are; this spares them the scan and the string.
fn one_plain_line(content: &str) -> bool {
    !content.is_empty() && !content.contains(['\n', '"'])
}

/// What a message keeps of its rendering: nothing when [`rebuilt_rendering`] gives it back
/// (most chat messages, and most prose quoted over several lines, are plain paragraphs).
pub fn stored_rendering(content: &str, rendered: &Arc<str>) -> Option<Arc<str>> {
    // Compared without building the rebuilt rendering where that can be avoided: every
    // rebuilt rendering is paragraphs, and one plain line is its content in one.
    let rebuilt = if !(rendered.starts_with("<p>") && rendered.ends_with("</p>")) {
        false
    } else if one_plain_line(content) {
        rendered[3..rendered.len() - 4] == *content
    } else {
        rebuilt_rendering(content) == **rendered
    };
    (!rebuilt).then(|| rendered.clone())
}

/// A message decoded from a snapshot written before [`rebuilt_rendering`] rebuilt more than
/// one paragraph (`snap4` and older), whose unstored rendering is its content as one
/// paragraph: that rendering is stored where the rule of today would rebuild another.
pub fn keep_paragraph_rendering(message: &mut Message) {
    if message.rendered.is_none() {
        let paragraph = format!("<p>{}</p>", message.content);
        if rebuilt_rendering(&message.content) != paragraph {
            message.rendered = Some(Arc::from(paragraph));
        }
    }
}

impl Message {
    /// The flag bits a recipient's copy takes from the message itself: its wildcards, and
    /// `MENTIONED` and `HAS_ALERT_WORD` for the users named in it.
    pub fn mention_bits(&self, user: UserId) -> u8 {
        let mut bits = self.wildcards;
        if self.mentioned.contains(&user) {
            bits |= flags::MENTIONED;
        }
        if self
            .extra
            .as_ref()
            .is_some_and(|e| e.alerted.contains(&user))
        {
            bits |= flags::HAS_ALERT_WORD;
        }
        bits
    }

    /// The rendered HTML (rebuilt for plain prose, which is not stored: [`rebuilt_rendering`]).
    pub fn rendered_content(&self) -> std::borrow::Cow<'_, str> {
        match &self.rendered {
            Some(html) => std::borrow::Cow::Borrowed(html),
            None => std::borrow::Cow::Owned(rebuilt_rendering(&self.content)),
        }
    }

    /// The rendered HTML as a shared string (for edit history, which keeps the old one).
    pub fn rendered_arc(&self) -> Arc<str> {
        match &self.rendered {
            Some(html) => html.clone(),
            None => Arc::from(self.rendered_content()),
        }
    }

    /// Replaces the content and its rendering, returning the old pair.
    pub fn set_body(&mut self, content: Arc<str>, rendered: &Arc<str>) -> (Arc<str>, Arc<str>) {
        let old_rendered = self.rendered_arc();
        self.rendered = stored_rendering(&content, rendered);
        (std::mem::replace(&mut self.content, content), old_rendered)
    }

    pub fn channel(&self) -> Option<ChannelId> {
        match &self.recipient {
            Address::Channel { channel_id, .. } => Some(*channel_id),
            Address::Direct { .. } => None,
        }
    }

    pub fn topic(&self) -> &str {
        match &self.recipient {
            Address::Channel { topic, .. } => topic,
            Address::Direct { .. } => "",
        }
    }

    pub fn reactions(&self) -> &[Reaction] {
        self.extra.as_deref().map_or(&[], |e| &e.reactions)
    }

    pub fn edits(&self) -> &[EditRecord] {
        self.extra.as_deref().map_or(&[], |e| &e.edits)
    }

    pub fn submessages(&self) -> &[Submessage] {
        self.extra.as_deref().map_or(&[], |e| &e.submessages)
    }

    pub(super) fn extra_mut(&mut self) -> &mut MessageExtra {
        self.extra.get_or_insert_with(Default::default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::{Given, OWNER};

    #[test]
    fn a_decoded_snapshot_shares_topics_clients_and_participants_between_messages() {
        use crate::projections::Projections;
        let mut given = Given::org();
        let member = given.user("m@example.com", crate::events::Role::Member);
        let channel = given.channel("c", &[OWNER, member]);
        // Messages a chunk (64 ids) apart, so that each is in a part of its own, decoded on
        // whichever thread takes it.
        let apart = |given: &mut Given, send: &dyn Fn(&mut Given) -> MessageId| {
            for n in 0..64 {
                given.message(OWNER, channel, "filler", &format!("{n}"));
            }
            send(given)
        };
        let ids = [
            apart(&mut given, &|g| g.message(OWNER, channel, "lunch", "a")),
            apart(&mut given, &|g| g.message(member, channel, "lunch", "b")),
            apart(&mut given, &|g| g.direct(OWNER, &[member], "c")),
            apart(&mut given, &|g| g.direct(member, &[OWNER], "d")),
        ];
        let mut sections = Vec::new();
        let hash = given
            .state
            .encode_snapshot_in_parts_of(&mut sections, 1)
            .unwrap_or_else(|e| panic!("not encoded: {e}"));
        let decoded = Projections::decode_snapshot(&sections, &hash)
            .unwrap_or_else(|e| panic!("not decoded: {e:?}"));
        assert_eq!(decoded.dump(), given.state.dump());
        let bytes = rmp_serde::to_vec(&given.state).unwrap_or_default();
        let plain: Projections =
            rmp_serde::from_slice(&bytes).unwrap_or_else(|e| panic!("not decoded: {e}"));
        let place = |state: &Projections, id| {
            let message = state
                .messages
                .get(id)
                .unwrap_or_else(|| panic!("{id:?} missing"));
            let place = match &message.recipient {
                Address::Channel { topic, .. } => topic.ptr(),
                Address::Direct { user_ids } => user_ids.as_ptr().cast::<u8>(),
            };
            (place, message.client.as_ptr())
        };
        let [a, b, c, d] = ids.map(|id| place(&decoded, id));
        assert_eq!(
            a, b,
            "one topic and one client name for both channel messages"
        );
        assert_eq!(c, d, "one participant list for the conversation");
        assert_eq!(a.1, c.1);
        // Decoded without it, every message has its own.
        let [a, b, ..] = ids.map(|id| place(&plain, id));
        assert_ne!(a.0, b.0);
        // Interning goes on from the decoded sets: a new message shares them too.
        let mut given = Given {
            state: decoded,
            ..given
        };
        let e = given.message(member, channel, "lunch", "e");
        assert_eq!(place(&given.state, e), place(&given.state, ids[0]));
    }

    #[test]
    fn decoding_stops_interning_when_it_ends_even_by_a_panic() {
        let decode = || {
            let a: Topic = serde_json::from_str("\"t\"").unwrap_or_else(|e| panic!("{e}"));
            let b: Topic = serde_json::from_str("\"t\"").unwrap_or_else(|e| panic!("{e}"));
            a.ptr() == b.ptr()
        };
        let (shared, _) = decoding_shared(decode);
        assert!(shared, "interned while decoding");
        assert!(!decode(), "not interned after");
        let panicked = std::panic::catch_unwind(|| decoding_shared(|| panic!("a decoding bug")));
        assert!(panicked.is_err());
        assert!(!decode(), "not interned after a decode that panicked");
    }

    #[test]
    fn a_plain_paragraph_is_rebuilt_and_any_other_rendering_kept() {
        assert_eq!(stored_rendering("hi", &Arc::from("<p>hi</p>")), None);
        let bold: Arc<str> = Arc::from("<p>a <strong>b</strong></p>");
        assert_eq!(stored_rendering("a **b**", &bold), Some(bold.clone()));
        // Escaped text differs from its source, so it is kept.
        let escaped: Arc<str> = Arc::from("<p>a &lt; b</p>");
        assert_eq!(stored_rendering("a < b", &escaped), Some(escaped));
        // Whatever is kept or left out, the rendering comes back.
        for (content, rendering) in [
            ("hi", "<p>hi</p>"),
            ("", "<p></p>"),
            (" x", "<p> x</p>"),
            ("a\nb", "<p>a<br />\nb</p>"),
            ("a\nb", "<p>a\nb</p>"),
            ("say \"x\"", "<p>say &quot;x&quot;</p>"),
            ("say \"x\"", "<p>say \"x\"</p>"),
            ("a **b**", "<p>a <strong>b</strong></p>"),
            ("a **b**", "<p>a **b**</p>"),
        ] {
            let back = match stored_rendering(content, &Arc::from(rendering)) {
                Some(kept) => kept.to_string(),
                None => rebuilt_rendering(content),
            };
            assert_eq!(back, rendering, "{content:?}");
        }

        let mut given = Given::org();
        let channel = given.channel("c", &[OWNER]);
        let sent = given.message(OWNER, channel, "t", "hello");
        let mut message = given
            .state
            .messages
            .get(sent)
            .cloned()
            .unwrap_or_else(|| panic!("the message was not stored"));
        assert_eq!(message.rendered, None, "a plain paragraph is not stored");
        assert_eq!(message.rendered_content(), "<p>hello</p>");
        let (old_content, old_html) = message.set_body(Arc::from("a **b**"), &bold);
        assert_eq!((&*old_content, &*old_html), ("hello", "<p>hello</p>"));
        assert_eq!(message.rendered_content(), &*bold);
        assert_eq!(&*message.content, "a **b**");
    }

    #[test]
    fn prose_of_several_lines_is_rebuilt_and_an_older_snapshots_rule_kept() {
        let mut given = Given::org();
        let channel = given.channel("c", &[OWNER]);
        let verse = "He said \"no\".\n\t\t-- Anon\n\nNext: here";
        let html = "<p>He said &quot;no&quot;.<br />\n-- Anon</p>\n<p>Next: here</p>";
        let quoted = given.message(OWNER, channel, "t", verse);
        let short = given.message(OWNER, channel, "t", "hello");
        let stored = |given: &Given, id| {
            let message = given.state.messages.get(id).unwrap();
            (
                message.rendered.clone(),
                message.rendered_content().into_owned(),
            )
        };
        assert_eq!(stored(&given, quoted), (None, html.to_owned()));
        assert_eq!(stored(&given, short), (None, "<p>hello</p>".to_owned()));
        // A rendering the rule would not rebuild is kept.
        assert_eq!(
            stored_rendering(verse, &Arc::from("<p>other</p>")).as_deref(),
            Some("<p>other</p>")
        );

        // In a snapshot older than `snap5`, an unstored rendering was the content as one
        // paragraph: decoding one stores that where today's rule rebuilds another.
        given.state.messages.keep_paragraph_renderings();
        let paragraph = format!("<p>{verse}</p>");
        assert_eq!(
            stored(&given, quoted),
            (Some(Arc::from(paragraph.as_str())), paragraph.clone())
        );
        assert_eq!(stored(&given, short), (None, "<p>hello</p>".to_owned()));
    }
}
