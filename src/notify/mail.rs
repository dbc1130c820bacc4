//! The text of the emails the notifier sends, written from the state when each goes out (the
//! log holds what an email is about, never its text): missed messages, one conversation each,
//! and login alerts. Each has a plain-text and an HTML part, links that open the conversation
//! in the web client, and a one-click unsubscribe link.

use crate::auth::ServerSecret;
use crate::events::{NoticeTrigger, QueuedMail};
use crate::markdown::escape_html;
use crate::projections::notices::Outgoing;
use crate::projections::{Address, Message, Projections};
use crate::render::Site;

/// Messages shown in one missed-message email at most (the newest ones; Zulip's limit).
pub const MAX_MESSAGES_SHOWN: usize = 20;

/// An email ready for the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    pub to_name: String,
    pub to_address: String,
    /// The display name of the sender (the address is the server's own).
    pub from_name: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// The `Message-ID`, the same on every attempt, so that a mail sent twice across a crash
    /// is recognisably the same mail.
    pub message_id: String,
    /// The one-click unsubscribe address (`List-Unsubscribe`).
    pub unsubscribe_url: String,
    /// Where a reply goes: the email gateway's address of the conversation, when there is one.
    pub reply_to: Option<String>,
}

/// The email `out` is, from the state now; `None` when nothing is left to say (every message
/// deleted, or the person gone).
pub fn compose(
    state: &Projections,
    site: &Site,
    secret: &ServerSecret,
    reply_domain: Option<&str>,
    out: &Outgoing,
) -> Option<Email> {
    let person = state.users.get(out.user_id).filter(|u| u.is_active)?;
    let host = crate::render::users::email_domain(site);
    let message_id = format!("<chronicle.{}.{}@{host}>", out.mail_id, out.queued_at);
    let realm_name = state.realm.text("name");
    let mut reply_to = None;
    let (kind, subject, text, html) = match &out.mail {
        QueuedMail::MissedMessages {
            message_ids,
            trigger,
        } => {
            let messages: Vec<&Message> = message_ids
                .iter()
                .filter_map(|id| state.messages.get(*id))
                .filter(|m| crate::projections::can_read(state, person, m))
                .collect();
            if messages.is_empty() {
                return None;
            }
            let subject = missed_subject(state, out.user_id, &messages, &realm_name);
            reply_to = reply_domain.map(|domain| {
                crate::notify::gateway::address::reply_address(
                    secret,
                    domain,
                    out.user_id,
                    messages[0].id,
                )
            });
            let (text, html) = missed_body(state, site, out.user_id, &messages, *trigger);
            ("missed_messages", subject, text, html)
        }
        QueuedMail::LoginAlert { client, address } => {
            let when = local_time(out.queued_at, &person.timezone);
            let (browser, os) = describe_client(client);
            let subject = format!("New login from {browser} on {os}");
            let reset = format!("{}/accounts/password/reset/", site.realm_url);
            let text = format!(
                "Hi {name},\n\nYour account {email} in {realm_name} ({url}) was signed in to.\n\n\
                 Time: {when}\nDevice: {browser} on {os}\nAddress: {address}\n\n\
                 If this was you, there is nothing to do. If not, reset your password at once \
                 ({reset}) and tell your organization's administrators.\n",
                name = person.full_name,
                email = person.email,
                url = site.realm_url,
            );
            let html = format!(
                "<p>Hi {name},</p><p>Your account {email} in <a href=\"{url}\">{realm}</a> was \
                 signed in to.</p><ul><li>Time: {when}</li><li>Device: {browser} on {os}</li>\
                 <li>Address: {address}</li></ul><p>If this was you, there is nothing to do. If \
                 not, <a href=\"{reset}\">reset your password</a> at once and tell your \
                 organization's administrators.</p>",
                name = escape_html(&person.full_name),
                email = escape_html(&person.email),
                url = escape_html(&site.realm_url),
                realm = escape_html(&realm_name),
                when = escape_html(&when),
                browser = escape_html(&browser),
                os = escape_html(&os),
                address = escape_html(address),
                reset = escape_html(&reset),
            );
            ("login", subject, text, html)
        }
        QueuedMail::Digest { since } => {
            let digest = super::digest::digest_of(state, out.user_id, *since);
            if !digest.worth_sending() {
                return None;
            }
            let (text, html) = digest_body(state, site, &digest, *since);
            ("digest", format!("Digest for {realm_name}"), text, html)
        }
    };
    let from_name = match kind {
        "login" => format!("{realm_name} account security"),
        "digest" => format!("{realm_name} digest"),
        _ => format!("{realm_name} notifications"),
    };
    let unsubscribe_url = format!(
        "{}/accounts/unsubscribe/{kind}/{}",
        site.realm_url,
        secret.unsubscribe_key(out.user_id, kind)
    );
    let footer_text = format!(
        "\n--\nYou are receiving this because of your notification settings in {realm_name}. \
         Stop these emails: {unsubscribe_url}\nSettings: {}/#settings/notifications\n",
        site.realm_url
    );
    let footer_html = format!(
        "<hr><p style=\"color:#666;font-size:small\">You are receiving this because of your \
         notification settings in {}. <a href=\"{}\">Unsubscribe</a> · \
         <a href=\"{}/#settings/notifications\">Notification settings</a></p>",
        escape_html(&realm_name),
        escape_html(&unsubscribe_url),
        escape_html(&site.realm_url),
    );
    Some(Email {
        to_name: person.full_name.clone(),
        to_address: person.email.clone(),
        from_name,
        subject,
        text: text + &footer_text,
        html: format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>{html}{footer_html}</body></html>"
        ),
        message_id,
        unsubscribe_url,
        reply_to,
    })
}

/// Zulip's subject lines: `DMs with A` (the senders), `Group DMs with A, B, and C` (the
/// others; `A, B, and N others` past three), `#channel > topic` (`[resolved] #channel > topic`
/// for a resolved one), `New messages` when the content is hidden; then ` [organization]` when
/// the person asked for it (`realm_name_in_email_notifications_policy` 2: always; 1,
/// automatic, adds it only for an address in several organizations, which one Chronicle
/// server never has).
fn missed_subject(
    state: &Projections,
    user: crate::ids::UserId,
    messages: &[&Message],
    realm: &str,
) -> String {
    let first = messages[0];
    let subject = if !content_allowed(state, user) {
        "New messages".to_owned()
    } else {
        match &first.recipient {
            Address::Channel { channel_id, topic } => {
                let channel = state
                    .channels
                    .get(*channel_id)
                    .map(|c| c.name.clone())
                    .unwrap_or_default();
                match topic.strip_prefix(crate::projections::messages::RESOLVED_TOPIC_PREFIX) {
                    Some(bare) => format!("[resolved] #{channel} > {bare}"),
                    None if topic.is_empty() => format!(
                        "#{channel} > {}",
                        crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME
                    ),
                    None => format!("#{channel} > {topic}"),
                }
            }
            Address::Direct { user_ids } if user_ids.len() <= 2 => {
                format!("DMs with {}", unique_senders(state, messages).join(", "))
            }
            Address::Direct { user_ids } => {
                let others: Vec<String> = user_ids
                    .iter()
                    .filter(|id| **id != user)
                    .filter_map(|id| state.users.get(*id))
                    .map(|u| u.full_name.clone())
                    .collect();
                let shown = if others.len() > 3 {
                    format!(
                        "{}, {}, and {} others",
                        others[0],
                        others[1],
                        others.len() - 2
                    )
                } else {
                    english_list(&others)
                };
                format!("Group DMs with {shown}")
            }
        }
    };
    if state
        .user_settings
        .int(user, "realm_name_in_email_notifications_policy")
        == 2
    {
        format!("{subject} [{realm}]")
    } else {
        subject
    }
}

/// `A`, `A and B`, `A, B, and C`.
fn english_list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// Whether the email may show what the messages say: the person's choice and the
/// organization's.
fn content_allowed(state: &Projections, user: crate::ids::UserId) -> bool {
    state
        .user_settings
        .flag(user, "message_content_in_email_notifications")
        && state
            .realm
            .flag("message_content_allowed_in_email_notifications")
}

/// The body of a missed-message email: who said what (or, with content hidden, who wrote and
/// where), each message with its link, and why the person gets it.
fn missed_body(
    state: &Projections,
    site: &Site,
    user: crate::ids::UserId,
    messages: &[&Message],
    trigger: NoticeTrigger,
) -> (String, String) {
    let shown = &messages[messages.len().saturating_sub(MAX_MESSAGES_SHOWN)..];
    let first = messages[0];
    let conversation_url = format!(
        "{}/{}",
        site.realm_url,
        crate::commands::notices::message_url(state, first)
    );
    let with_content = content_allowed(state, user);
    let mut text = String::new();
    let mut html = String::new();
    let reason = reason(trigger);
    text.push_str(&format!("{reason}\n\n"));
    html.push_str(&format!("<p>{}</p>", escape_html(reason)));
    if !with_content {
        let senders: Vec<String> = unique_senders(state, shown);
        text.push_str(&format!(
            "New messages from {}.\n\nThis email does not include message content because of \
             your or your organization's settings.\n\nOpen the conversation: {conversation_url}\n",
            english_list(&senders)
        ));
        html.push_str(&format!(
            "<p>New messages from {}.</p><p>This email does not include message content \
             because of your or your organization's settings.</p>\
             <p><a href=\"{}\">Open the conversation</a></p>",
            escape_html(&english_list(&senders)),
            escape_html(&conversation_url)
        ));
        return (text, html);
    }
    if messages.len() > shown.len() {
        let earlier = messages.len() - shown.len();
        text.push_str(&format!("({earlier} earlier messages not shown)\n\n"));
        html.push_str(&format!("<p>({earlier} earlier messages not shown)</p>"));
    }
    for message in shown {
        let sender = state
            .users
            .get(message.sender_id)
            .map(|u| u.full_name.clone())
            .unwrap_or_default();
        let url = format!(
            "{}/{}",
            site.realm_url,
            crate::commands::notices::message_url(state, message)
        );
        text.push_str(&format!(
            "{sender} ({}):\n{}\n\n",
            format_time(message.timestamp * 1000),
            message.content
        ));
        html.push_str(&format!(
            "<div style=\"margin:1em 0\"><p><b>{}</b> <a href=\"{}\" style=\"color:#666\">{}</a></p>{}</div>",
            escape_html(&sender),
            escape_html(&url),
            escape_html(&format_time(message.timestamp * 1000)),
            absolute_links(&message.rendered_content(), &site.realm_url),
        ));
    }
    text.push_str(&format!("Reply in the conversation: {conversation_url}\n"));
    html.push_str(&format!(
        "<p><a href=\"{}\">Reply in Chronicle</a></p>",
        escape_html(&conversation_url)
    ));
    (text, html)
}

/// The digest's body: the busiest conversations with two messages of each, then the new
/// channels (or, with content hidden, how many messages came).
fn digest_body(
    state: &Projections,
    site: &Site,
    digest: &super::digest::Digest,
    since: i64,
) -> (String, String) {
    let mut text = format!(
        "Here is what happened in {} since {}.\n\n",
        site.realm_url,
        format_time(since)
    );
    let mut html = format!(
        "<p>Here is what happened in <a href=\"{}\">{}</a> since {}.</p>",
        escape_html(&site.realm_url),
        escape_html(&state.realm.text("name")),
        escape_html(&format_time(since))
    );
    let channel_name = |id| {
        state
            .channels
            .get(id)
            .map(|c| c.name.clone())
            .unwrap_or_default()
    };
    if digest.content_hidden {
        text.push_str(&format!("{} new messages.\n\n", digest.new_messages));
        html.push_str(&format!("<p>{} new messages.</p>", digest.new_messages));
    }
    if !digest.hot.is_empty() {
        text.push_str("Hot conversations\n\n");
        html.push_str("<h3>Hot conversations</h3>");
    }
    for topic in &digest.hot {
        let name = channel_name(topic.channel);
        let url = format!(
            "{}/{}/topic/{}",
            site.realm_url,
            crate::commands::notices::channel_narrow(topic.channel, &name),
            crate::markdown::encode_hash_component(&topic.topic)
        );
        let shown = if topic.topic.is_empty() {
            crate::projections::messages::EMPTY_TOPIC_DISPLAY_NAME
        } else {
            &topic.topic
        };
        text.push_str(&format!(
            "#{name} > {shown} ({url})\n{}\n",
            english_list(&topic.senders)
        ));
        html.push_str(&format!(
            "<p><a href=\"{}\"><b>#{} &gt; {}</b></a><br>{}</p>",
            escape_html(&url),
            escape_html(&name),
            escape_html(shown),
            escape_html(&english_list(&topic.senders))
        ));
        for id in &topic.samples {
            let Some(message) = state.messages.get(*id) else {
                continue;
            };
            let sender = state
                .users
                .get(message.sender_id)
                .map(|u| u.full_name.clone())
                .unwrap_or_default();
            text.push_str(&format!("  {sender}: {}\n", message.content));
            html.push_str(&format!(
                "<div style=\"margin-left:1em\"><b>{}</b>{}</div>",
                escape_html(&sender),
                absolute_links(&message.rendered_content(), &site.realm_url)
            ));
        }
        let more = topic.count.saturating_sub(topic.samples.len());
        if more > 0 {
            text.push_str(&format!("  + {more} more messages\n"));
            html.push_str(&format!(
                "<p style=\"margin-left:1em\">+ {more} more messages</p>"
            ));
        }
        text.push('\n');
    }
    if !digest.new_channels.is_empty() {
        let names: Vec<String> = digest
            .new_channels
            .iter()
            .map(|id| channel_name(*id))
            .collect();
        text.push_str(&format!("New channels: {}\n", names.join(", ")));
        html.push_str("<h3>New channels</h3><ul>");
        for (id, name) in digest.new_channels.iter().zip(&names) {
            html.push_str(&format!(
                "<li><a href=\"{}/{}\">#{}</a></li>",
                escape_html(&site.realm_url),
                escape_html(&crate::commands::notices::channel_narrow(*id, name)),
                escape_html(name)
            ));
        }
        html.push_str("</ul>");
    }
    (text, html)
}

fn unique_senders(state: &Projections, messages: &[&Message]) -> Vec<String> {
    let mut seen = Vec::new();
    for m in messages {
        if let Some(user) = state.users.get(m.sender_id) {
            if !seen.contains(&user.full_name) {
                seen.push(user.full_name.clone());
            }
        }
    }
    seen
}

/// Why the email came, by its trigger.
fn reason(trigger: NoticeTrigger) -> &'static str {
    match trigger {
        NoticeTrigger::DirectMessage => "You have new direct messages.",
        NoticeTrigger::Mentioned => "You were mentioned.",
        NoticeTrigger::TopicWildcardMentioned
        | NoticeTrigger::TopicWildcardMentionedInFollowedTopic => {
            "Everyone in a topic you take part in was mentioned."
        }
        NoticeTrigger::StreamWildcardMentioned
        | NoticeTrigger::StreamWildcardMentionedInFollowedTopic => {
            "Everyone in a channel you are subscribed to was mentioned."
        }
        NoticeTrigger::FollowedTopicEmailNotify | NoticeTrigger::FollowedTopicPushNotify => {
            "New messages in a topic you follow."
        }
        NoticeTrigger::StreamEmailNotify | NoticeTrigger::StreamPushNotify => {
            "New messages in a channel you get email notifications for."
        }
    }
}

/// Rendered message HTML with the server's relative links (`/user_uploads/...`,
/// `/#narrow/...`) made absolute, for a mail reader that has no base address. The HTML is the
/// server's own rendering (sanitized when it was sent), so only attribute starts are rewritten.
fn absolute_links(rendered: &str, realm_url: &str) -> String {
    rendered
        .replace("href=\"/", &format!("href=\"{realm_url}/"))
        .replace("src=\"/", &format!("src=\"{realm_url}/"))
}

/// A UTC time as `2026-11-29 14:05 UTC`.
pub fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = crate::time::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// A time in the person's time zone (UTC when they set none or an unknown one), as
/// `Sun, Nov 29, 2026, 14:05 CET`.
pub fn local_time(ms: i64, timezone: &str) -> String {
    use chrono_tz::Tz;
    let zone: Tz = timezone.parse().unwrap_or(Tz::UTC);
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(utc) => utc
            .with_timezone(&zone)
            .format("%a, %b %-d, %Y, %H:%M %Z")
            .to_string(),
        None => format_time(ms),
    }
}

/// A browser and an operating system named from a `User-Agent`, as a login alert says them
/// (Zulip's apps say `Zulip`); unknown parts are said so.
pub fn describe_client(user_agent: &str) -> (String, String) {
    let ua = user_agent;
    let browser = if ua.to_ascii_lowercase().contains("zulip") {
        "Zulip"
    } else if ua.contains("Edg/") || ua.contains("Edge/") {
        "Edge"
    } else if ua.contains("OPR/") || ua.contains("Opera") {
        "Opera"
    } else if ua.contains("Firefox/") {
        "Firefox"
    } else if ua.contains("Chrome/") || ua.contains("Chromium/") || ua.contains("CriOS/") {
        "Chrome"
    } else if ua.contains("Safari/") {
        "Safari"
    } else if ua.contains("MSIE") || ua.contains("Trident/") {
        "Internet Explorer"
    } else {
        "An unknown browser"
    };
    let os = if ua.contains("Android") {
        "Android"
    } else if ua.contains("iPhone") || ua.contains("iPad") || ua.contains("iOS") {
        "iOS"
    } else if ua.contains("Windows") {
        "Windows"
    } else if ua.contains("Mac OS X") || ua.contains("Macintosh") || ua.contains("macOS") {
        "macOS"
    } else if ua.contains("CrOS") {
        "ChromeOS"
    } else if ua.contains("Linux") || ua.contains("X11") {
        "Linux"
    } else {
        "an unknown operating system"
    };
    (browser.to_owned(), os.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::testing::Given;
    use crate::events::{Event, RealmValue, Role};
    use crate::ids::UserId;

    fn site() -> Site {
        Site {
            realm_url: "https://chat.example.com".into(),
            ..Site::default()
        }
    }

    fn missed(given: &Given, user: UserId, ids: Vec<crate::ids::MessageId>) -> Email {
        let out = Outgoing {
            mail_id: 7,
            user_id: user,
            mail: QueuedMail::MissedMessages {
                message_ids: ids,
                trigger: NoticeTrigger::DirectMessage,
            },
            queued_at: 1_700_000_000_000,
        };
        compose(&given.state, &site(), &ServerSecret::generate(), None, &out).unwrap()
    }

    #[test]
    fn missed_message_emails_say_where_with_links_and_zulips_subjects() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let carol = given.user("carol@example.com", Role::Member);
        let general = given.channel("general", &[alice, bob]);
        let dm = given.direct(alice, &[bob], "lunch <at> noon?");
        let group = given.direct(carol, &[alice, bob], "all of us");
        let topic = given.message(alice, general, "Plans", "see /user_uploads/x");
        let mail = missed(&given, bob, vec![dm]);
        assert_eq!(mail.subject, "DMs with alice");
        assert_eq!(mail.to_address, "bob@example.com");
        assert_eq!(mail.from_name, "Org notifications");
        assert!(mail.text.contains("lunch <at> noon?"), "{}", mail.text);
        assert!(
            mail.html.contains("lunch &lt;at&gt; noon?"),
            "{}",
            mail.html
        );
        assert!(mail.html.contains(&format!(
            "https://chat.example.com/#narrow/dm/{},{}/near/{dm}",
            alice.0, bob.0
        )));
        assert!(mail
            .unsubscribe_url
            .starts_with("https://chat.example.com/accounts/unsubscribe/missed_messages/"));
        assert!(mail.message_id.ends_with("@chat.example.com>"));
        assert_eq!(
            missed(&given, bob, vec![group]).subject,
            "Group DMs with alice and carol"
        );
        assert_eq!(missed(&given, bob, vec![topic]).subject, "#general > Plans");
        given.fold(vec![Event::UserSettingChanged {
            user_id: bob,
            name: "realm_name_in_email_notifications_policy".into(),
            value: RealmValue::Int(2),
        }]);
        assert_eq!(
            missed(&given, bob, vec![topic]).subject,
            "#general > Plans [Org]"
        );
    }

    #[test]
    fn hidden_content_says_who_and_where_but_not_what() {
        let mut given = Given::org();
        let alice = given.user("alice@example.com", Role::Member);
        let bob = given.user("bob@example.com", Role::Member);
        let dm = given.direct(alice, &[bob], "the secret plan");
        given.fold(vec![Event::RealmSettingChanged {
            name: "message_content_allowed_in_email_notifications".into(),
            value: RealmValue::Bool(false),
        }]);
        let mail = missed(&given, bob, vec![dm]);
        assert_eq!(mail.subject, "New messages");
        assert!(!mail.text.contains("secret") && !mail.html.contains("secret"));
        assert!(
            mail.text.contains("New messages from alice"),
            "{}",
            mail.text
        );
    }

    #[test]
    fn nothing_to_send_when_every_message_is_gone() {
        let mut given = Given::org();
        let bob = given.user("bob@example.com", Role::Member);
        let out = Outgoing {
            mail_id: 1,
            user_id: bob,
            mail: QueuedMail::MissedMessages {
                message_ids: vec![crate::ids::MessageId(999)],
                trigger: NoticeTrigger::DirectMessage,
            },
            queued_at: 0,
        };
        assert!(compose(&given.state, &site(), &ServerSecret::generate(), None, &out).is_none());
    }

    #[test]
    fn the_digest_names_the_busy_conversations_with_links() {
        let mut given = Given::org();
        let ada = given.user("ada@example.com", Role::Member);
        let ben = given.user("ben@example.com", Role::Member);
        let general = given.channel("general", &[ada, ben]);
        given.at(10_000_000);
        given.message(ben, general, "Launch plan", "first draft is up");
        let out = Outgoing {
            mail_id: 3,
            user_id: ada,
            mail: QueuedMail::Digest { since: 5_000_000 },
            queued_at: 11_000_000,
        };
        let mail = compose(&given.state, &site(), &ServerSecret::generate(), None, &out).unwrap();
        assert_eq!(mail.subject, "Digest for Org");
        assert_eq!(mail.from_name, "Org digest");
        assert!(
            mail.text.contains("#general > Launch plan"),
            "{}",
            mail.text
        );
        assert!(
            mail.text.contains("ben: first draft is up"),
            "{}",
            mail.text
        );
        assert!(
            mail.html
                .contains("https://chat.example.com/#narrow/channel/"),
            "{}",
            mail.html
        );
        assert!(mail
            .unsubscribe_url
            .contains("/accounts/unsubscribe/digest/"));
        // Nothing since: no email at all.
        let quiet = Outgoing {
            mail: QueuedMail::Digest { since: 20_000_000 },
            ..out
        };
        assert!(compose(
            &given.state,
            &site(),
            &ServerSecret::generate(),
            None,
            &quiet
        )
        .is_none());
    }

    #[test]
    fn login_alerts_name_the_browser_the_system_and_the_local_time() {
        assert_eq!(
            describe_client(
                "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
            ),
            ("Firefox".to_owned(), "Linux".to_owned())
        );
        assert_eq!(
            describe_client("ZulipMobile/27.230 (Android 14)"),
            ("Zulip".to_owned(), "Android".to_owned())
        );
        assert_eq!(
            local_time(1_764_424_800_000, "Europe/Berlin"),
            "Sat, Nov 29, 2025, 15:00 CET"
        );
        assert_eq!(
            local_time(1_764_424_800_000, ""),
            "Sat, Nov 29, 2025, 14:00 UTC"
        );
    }
}
