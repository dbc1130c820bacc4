//! Zulip narrows: parsing the two wire forms, compiling a narrow against the state (which
//! index to walk, which predicate to apply), and matching a message. `GET /messages`, the
//! flag endpoints, `matches_narrow` and narrowed event queues all use this one engine.

use crate::analyzer::Query;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::TopicPolicy;
use crate::ids::ChannelId;
use crate::ids::{MessageId, UserId};
use crate::projections::id_set::IdSet;
use crate::projections::messages::{flags, topic_param};
use crate::projections::search::Plan;
use crate::projections::user_topics::topic_key;
use crate::projections::Address;
use crate::projections::{can_read, Message, Projections, User};
use serde_json::{json, Value};

/// One narrow term.
#[derive(Debug, Clone)]
pub struct Term {
    operator: String,
    operand: Value,
    negated: bool,
}

/// A narrow in either form (`[["channel", "x"]]` or `[{"operator": ..., "operand": ...}]`).
pub fn parse_narrow(raw: Option<Value>) -> ApiResult<Vec<Term>> {
    let items = match raw {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ApiError::bad_request("narrow is not a list").with("var_name", "narrow"))
        }
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Array(pair) if pair.len() == 2 => Ok(Term {
                operator: pair[0].as_str().unwrap_or_default().to_owned(),
                operand: pair[1].clone(),
                negated: false,
            }),
            Value::Object(map) => Ok(Term {
                operator: map
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                operand: map.get("operand").cloned().unwrap_or(Value::Null),
                negated: map.get("negated").and_then(Value::as_bool).unwrap_or(false),
            }),
            _ => Err(ApiError::new(
                ErrorCode::BadNarrow,
                "Invalid narrow operator: malformed term",
            )
            .with("desc", "malformed term")),
        })
        .collect()
}

/// Zulip's `with` operator: the narrow follows the message it names to its conversation now,
/// wherever it was moved. Its channel/topic or direct-message terms are replaced by the
/// message's current ones; a message the viewer cannot read leaves the narrow as it was
/// (without the `with`).
fn resolve_with(state: &Projections, me: &User, terms: Vec<Term>) -> ApiResult<Vec<Term>> {
    let (with, mut rest): (Vec<Term>, Vec<Term>) =
        terms.into_iter().partition(|t| t.operator == "with");
    let term = match with.as_slice() {
        [] => return Ok(rest),
        [term] => term,
        _ => return Err(bad_narrow("Duplicate 'with' operators.")),
    };
    let id = term
        .operand
        .as_u64()
        .or_else(|| term.operand.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| bad_narrow("Invalid 'with' operator"))?;
    let Some(message) = state
        .messages
        .get(MessageId(id))
        .filter(|m| can_read(state, me, m))
    else {
        return Ok(rest);
    };
    rest.retain(|t| {
        !matches!(
            t.operator.as_str(),
            "stream" | "channel" | "topic" | "subject" | "dm" | "pm-with"
        )
    });
    let term = |operator: &str, operand: Value| Term {
        operator: operator.to_owned(),
        operand,
        negated: false,
    };
    let mut conversation = match &message.recipient {
        Address::Channel { channel_id, topic } => vec![
            term("channel", json!(channel_id.0)),
            term("topic", json!(topic)),
        ],
        Address::Direct { user_ids } => {
            let others: Vec<u64> = user_ids
                .iter()
                .filter(|u| **u != me.user_id)
                .map(|u| u.0)
                .collect();
            let operand = if others.is_empty() {
                vec![me.user_id.0]
            } else {
                others
            };
            vec![term("dm", json!(operand))]
        }
    };
    conversation.extend(rest);
    Ok(conversation)
}

fn bad_narrow(desc: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BadNarrow,
        format!("Invalid narrow operator: {desc}"),
    )
    .with("desc", desc)
}

/// The index a narrow walks.
enum Source<'a> {
    /// A channel's, a topic's or a conversation's messages.
    Set(&'a IdSet),
    /// The messages in every one of the word index's lists for a search (shortest first),
    /// within a set when the narrow also names one.
    Words {
        lists: Vec<crate::projections::search::List<'a>>,
        within: Option<&'a IdSet>,
    },
}

/// A compiled narrow: where candidates come from, and a predicate over them.
pub struct Narrow<'a> {
    state: &'a Projections,
    me: &'a User,
    /// What the narrow walks; `None`: the user's own copies.
    source: Option<Source<'a>>,
    use_received: bool,
    /// A search walked the word index instead of the user's copies: only messages the user
    /// holds a copy of count.
    require_copy: bool,
    terms: Vec<Term>,
    /// Each `search:` operand, parsed once.
    queries: Vec<(String, Query)>,
}

/// Every `search:` operand of a narrow, parsed (`BAD_NARROW` for an overlong one).
fn search_queries(terms: &[Term]) -> ApiResult<Vec<(String, Query)>> {
    use crate::projections::search::MAX_QUERY_CHARS;
    terms
        .iter()
        .filter(|t| t.operator == "search")
        .map(|t| {
            let operand = t.operand.as_str().unwrap_or_default();
            if operand.chars().count() > MAX_QUERY_CHARS {
                return Err(bad_narrow("search operand too long"));
            }
            Ok((operand.to_owned(), Query::parse(operand)))
        })
        .collect()
}

fn user_by_operand(state: &Projections, operand: &Value) -> Option<UserId> {
    match operand {
        Value::Number(n) => n
            .as_u64()
            .map(UserId)
            .filter(|id| state.users.get(*id).is_some()),
        Value::String(email) => state.users.by_email(email).map(|u| u.user_id).or_else(|| {
            email
                .strip_prefix("user")
                .and_then(|r| r.split('@').next())
                .and_then(|n| n.parse().ok())
                .map(UserId)
        }),
        _ => None,
    }
}

/// The operators whose operand names people.
const PERSON_OPERATORS: [&str; 6] = [
    "sender",
    "mentions",
    "dm-including",
    "group-pm-with",
    "dm",
    "pm-with",
];

/// `me` as a person's operand (`sender:me`, `mentions:me`, as Zulip's search documents) is the
/// one asking.
fn with_me_resolved(me: &User, terms: Vec<Term>) -> Vec<Term> {
    terms
        .into_iter()
        .map(|mut term| {
            if PERSON_OPERATORS.contains(&term.operator.as_str())
                && term.operand.as_str() == Some("me")
            {
                term.operand = json!(me.user_id.0);
            }
            term
        })
        .collect()
}

fn users_by_operand(state: &Projections, operand: &Value) -> Option<Vec<UserId>> {
    match operand {
        Value::Array(items) => items.iter().map(|v| user_by_operand(state, v)).collect(),
        Value::String(text) => text
            .split(',')
            .map(|e| user_by_operand(state, &json!(e.trim())))
            .collect(),
        Value::Number(_) => user_by_operand(state, operand).map(|u| vec![u]),
        _ => None,
    }
}

impl<'a> Narrow<'a> {
    /// Compiles `terms` for `me` (Zulip's `BAD_NARROW` for unknown operators, channels or
    /// users).
    pub fn compile(
        state: &'a Projections,
        me: &'a User,
        terms: Vec<Term>,
    ) -> ApiResult<Narrow<'a>> {
        let terms = resolve_with(state, me, terms)?;
        let terms = with_me_resolved(me, terms);
        let mut narrow = Narrow {
            state,
            me,
            source: None,
            use_received: true,
            require_copy: false,
            terms: Vec::new(),
            queries: search_queries(&terms)?,
        };
        let channel_of = |operand: &Value| -> Option<ChannelId> {
            match operand {
                Value::Number(n) => n
                    .as_u64()
                    .map(ChannelId)
                    .filter(|id| state.channels.get(*id).is_some()),
                Value::String(name) => state.channels.by_name(name).map(|c| c.id),
                _ => None,
            }
        };
        let mut channel = None;
        for term in &terms {
            match term.operator.as_str() {
                "channel" | "stream" => {
                    let id =
                        channel_of(&term.operand).ok_or_else(|| bad_narrow("unknown channel"))?;
                    if !term.negated {
                        channel = Some(id);
                    }
                }
                // As Zulip: an unknown user or a malformed id is an error, not an empty page.
                "sender" | "dm-including" | "group-pm-with" | "mentions" => {
                    if user_by_operand(state, &term.operand).is_none() {
                        let shown = match &term.operand {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        };
                        return Err(bad_narrow(&format!("unknown user {shown}")));
                    }
                }
                "id" => {
                    let numeric = term.operand.as_u64().is_some()
                        || term.operand.as_str().is_some_and(|s| {
                            !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
                        });
                    if !numeric {
                        return Err(bad_narrow("Invalid message ID"));
                    }
                }
                "topic" | "subject" | "dm" | "pm-with" | "is" | "search" | "near" | "has"
                | "channels" | "streams" | "with" => {}
                other => return Err(bad_narrow(other)),
            }
        }
        if let Some(id) = channel {
            narrow.use_received = false;
            let topic = terms
                .iter()
                .find(|t| matches!(t.operator.as_str(), "topic" | "subject") && !t.negated)
                .and_then(|t| t.operand.as_str());
            let set = match topic {
                Some(topic) => state.messages.in_topic(id, &topic_param(topic)),
                None => state.messages.in_channel(id),
            };
            narrow.source = Some(Source::Set(
                set.unwrap_or(&crate::projections::id_set::EMPTY),
            ));
        }
        if let Some(term) = terms
            .iter()
            .find(|t| matches!(t.operator.as_str(), "dm" | "pm-with") && !t.negated)
        {
            let mut users =
                users_by_operand(state, &term.operand).ok_or_else(|| bad_narrow("invalid user"))?;
            users.push(me.user_id);
            users.sort();
            users.dedup();
            narrow.use_received = false;
            narrow.source = Some(Source::Set(
                state
                    .messages
                    .in_conversation(&users)
                    .unwrap_or(&crate::projections::id_set::EMPTY),
            ));
        }
        // A search walks the word index's answer (within the source above, if any).
        let query = terms
            .iter()
            .find(|t| t.operator == "search" && !t.negated)
            .and_then(|t| t.operand.as_str())
            .and_then(|operand| narrow.query(operand));
        match query.and_then(|q| state.messages.search_plan(q)) {
            Some(Plan::Lists(lists)) => {
                let within = match narrow.source.take() {
                    Some(Source::Set(set)) => Some(set),
                    _ => None,
                };
                narrow.require_copy = narrow.use_received;
                narrow.source = Some(Source::Words { lists, within });
            }
            Some(Plan::Nothing) => {
                narrow.use_received = false;
                narrow.source = Some(Source::Set(&crate::projections::id_set::EMPTY));
            }
            // The narrow's own source, each message checked.
            Some(Plan::Everything) | None => {}
        }
        narrow.terms = terms;
        Ok(narrow)
    }

    fn matches_term(&self, message: &Message, term: &Term) -> bool {
        let state = self.state;
        let bits = state.messages.flags(self.me.user_id, message.id);
        match term.operator.as_str() {
            "channel" | "stream" => match &term.operand {
                Value::Number(n) => message.channel().is_some_and(|c| Some(c.0) == n.as_u64()),
                Value::String(name) => message
                    .channel()
                    .and_then(|c| state.channels.get(c))
                    .is_some_and(|c| c.name.to_lowercase() == name.to_lowercase()),
                _ => false,
            },
            "topic" | "subject" => {
                message.channel().is_some()
                    && topic_key(message.topic())
                        == topic_key(&topic_param(term.operand.as_str().unwrap_or_default()))
            }
            "sender" => user_by_operand(state, &term.operand) == Some(message.sender_id),
            // A mention that notifies that person (Zulip's `mentioned` flag of their copy): by
            // name or through a group they are in, not a silent one or a wildcard.
            "mentions" => user_by_operand(state, &term.operand)
                .is_some_and(|user| message.mentioned.contains(&user)),
            "dm" | "pm-with" => {
                match (&message.recipient, users_by_operand(state, &term.operand)) {
                    (Address::Direct { user_ids }, Some(mut users)) => {
                        users.push(self.me.user_id);
                        users.sort();
                        users.dedup();
                        **user_ids == *users
                    }
                    _ => false,
                }
            }
            "dm-including" | "group-pm-with" => {
                match (&message.recipient, user_by_operand(state, &term.operand)) {
                    (Address::Direct { user_ids }, Some(user)) => user_ids.contains(&user),
                    _ => false,
                }
            }
            "is" => match term.operand.as_str().unwrap_or_default() {
                "dm" | "private" => matches!(message.recipient, Address::Direct { .. }),
                "starred" => bits.is_some_and(|b| b & flags::STARRED != 0),
                "mentioned" => bits.is_some_and(|b| {
                    b & (flags::MENTIONED | flags::STREAM_WILDCARD | flags::TOPIC_WILDCARD) != 0
                }),
                "alerted" => bits.is_some_and(|b| b & flags::HAS_ALERT_WORD != 0),
                "unread" => bits.is_some_and(|b| b & flags::READ == 0),
                "resolved" => message.topic().starts_with("✔ "),
                "followed" => message.channel().is_some_and(|c| {
                    state
                        .user_topics
                        .policy(self.me.user_id, c, message.topic())
                        == TopicPolicy::Followed
                }),
                "muted" => message.channel().is_some_and(|c| {
                    state
                        .user_topics
                        .policy(self.me.user_id, c, message.topic())
                        == TopicPolicy::Muted
                        || state
                            .channels
                            .subscription(self.me.user_id, c)
                            .is_some_and(|s| s.is_muted)
                }),
                _ => false,
            },
            "search" => {
                let operand = term.operand.as_str().unwrap_or_default();
                match self.query(operand) {
                    Some(query) => query.matches(message.topic(), &message.content),
                    None => Query::parse(operand).matches(message.topic(), &message.content),
                }
            }
            "id" => {
                term.operand
                    .as_u64()
                    .or_else(|| term.operand.as_str().and_then(|s| s.parse().ok()))
                    == Some(message.id.0)
            }
            "has" => match term.operand.as_str().unwrap_or_default() {
                "link" => message.rendered_content().contains("<a href"),
                "reaction" => !message.reactions().is_empty(),
                "attachment" => state.attachments.of_message(message.id).next().is_some(),
                "image" => state
                    .attachments
                    .of_message(message.id)
                    .any(|a| a.is_image()),
                _ => false,
            },
            "channels" | "streams" => message
                .channel()
                .and_then(|c| state.channels.get(c))
                .is_some_and(|c| !c.invite_only),
            // `near` and `with` only move the anchor or the view; they do not filter.
            _ => true,
        }
    }

    /// The parsed form of a `search:` operand of this narrow.
    fn query(&self, operand: &str) -> Option<&Query> {
        self.queries
            .iter()
            .find(|(o, _)| o == operand)
            .map(|(_, query)| query)
    }

    /// Zulip's `match_content` and `match_subject` for a message of a search's results: its
    /// rendered content and its (escaped) topic with the words the search matched highlighted.
    /// `None` when the narrow searches nothing.
    pub fn highlights(&self, message: &Message) -> Option<(String, String)> {
        // Every operand's words at once, as Zulip joins them into one query.
        let mut all = Query::default();
        for term in self
            .terms
            .iter()
            .filter(|t| t.operator == "search" && !t.negated)
        {
            if let Some(query) = self.query(term.operand.as_str().unwrap_or_default()) {
                all.clauses.extend(query.clauses.iter().cloned());
            }
        }
        if all.is_empty() {
            return None;
        }
        let subject = crate::markdown::escape_html(message.topic());
        Some((
            all.highlight(&message.rendered_content()),
            all.highlight(&subject),
        ))
    }

    /// Whether the message exists, `me` may read it, and it matches every term.
    pub fn matches(&self, id: MessageId) -> bool {
        let Some(message) = self.state.messages.get(id) else {
            return false;
        };
        if self.require_copy && self.state.messages.flags(self.me.user_id, id).is_none() {
            return false;
        }
        can_read(self.state, self.me, message)
            && self
                .terms
                .iter()
                .all(|t| self.matches_term(message, t) != t.negated)
    }

    /// Candidate ids in ascending order, as a set to take ranges of.
    pub fn candidates(&self) -> Box<dyn DoubleEndedIterator<Item = MessageId> + '_> {
        match &self.source {
            Some(Source::Set(set)) => Box::new(set.iter().copied()),
            // A small channel, topic or conversation is walked itself, each id looked up in
            // the word lists; otherwise the rarest word's list is walked.
            Some(Source::Words {
                lists,
                within: Some(set),
            }) if lists.first().is_some_and(|l| (set.len() as u64) < l.len()) => {
                let lists = lists.clone();
                Box::new(
                    set.iter()
                        .copied()
                        .filter(move |id| lists.iter().all(|l| l.contains(*id))),
                )
            }
            Some(Source::Words { lists, within }) => {
                let within = *within;
                Box::new(
                    crate::projections::search::intersect(lists.clone())
                        .filter(move |id| within.is_none_or(|set| set.contains(id))),
                )
            }
            None if self.use_received => Box::new(self.state.messages.held_ids(self.me.user_id)),
            None => Box::new(std::iter::empty()),
        }
    }
}

/// Checks a narrow's operators (Zulip's `BAD_NARROW` for unknown ones or unknown channels).
pub fn check_narrow(state: &Projections, viewer: &User, terms: &[Term]) -> ApiResult<()> {
    Narrow::compile(state, viewer, terms.to_vec()).map(|_| ())
}

/// Whether `viewer` may read `message` and it matches every term of a narrow: which message
/// events a queue registered with that narrow receives.
pub fn narrow_matches(
    state: &Projections,
    viewer: &User,
    terms: &[Term],
    message: &Message,
) -> bool {
    let narrow = Narrow {
        state,
        me: viewer,
        source: None,
        use_received: true,
        require_copy: false,
        terms: Vec::new(),
        queries: search_queries(terms).unwrap_or_default(),
    };
    can_read(state, viewer, message)
        && terms
            .iter()
            .all(|t| narrow.matches_term(message, t) != t.negated)
}
