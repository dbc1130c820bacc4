//! What of an email becomes the message: the reply without the text it quotes, without the
//! signature, and the subject as a topic, by Zulip's rules where it has them (`email_mirror.py`:
//! talon's quotation stripping, `filter_footer`, `strip_from_subject`).

/// Zulip's topic for an email without a subject.
pub const NO_SUBJECT: &str = "Email with no subject";

/// Zulip's body for an email with nothing left in it.
pub const NO_BODY: &str = "(No email body)";

/// The reply itself: cut where the quoted message begins (an "On ... wrote:" line, Outlook's
/// "-----Original Message-----" or its "From: ... Sent: ..." block, or a closing run of `>`
/// lines), unless `include_quotes`; and cut at the signature (one line that is `--` alone,
/// Zulip's rule), unless `include_footer`.
pub fn reply_text(text: &str, include_quotes: bool, include_footer: bool) -> String {
    let text = text.replace("\r\n", "\n").replace('\0', "");
    let mut lines: Vec<&str> = text.lines().collect();
    if !include_quotes {
        if let Some(cut) = quote_start(&lines) {
            lines.truncate(cut);
        }
    }
    if !include_footer {
        let dashes: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim() == "--")
            .map(|(i, _)| i)
            .collect();
        if let [only] = dashes.as_slice() {
            lines.truncate(*only);
        }
    }
    let body = lines.join("\n").trim().to_owned();
    if body.is_empty() {
        NO_BODY.to_owned()
    } else {
        body
    }
}

/// Where the quoted part of a reply begins, if it has one.
fn quote_start(lines: &[&str]) -> Option<usize> {
    // Where the closing run of quoted and blank lines begins: found once, from the end (an
    // email of many `>` lines before a last line of text would otherwise be read again from
    // each of them).
    let quoted = |l: &str| l.trim().is_empty() || l.trim_start().starts_with('>');
    let closing_quotes = lines.len() - lines.iter().rev().take_while(|l| quoted(l)).count();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        let lower = trimmed.to_ascii_lowercase();
        // "On Tue, 3 Mar 2026 at 14:05, Ada <ada@example.com> wrote:", possibly over two lines.
        if lower.starts_with("on ") {
            if lower.ends_with("wrote:") {
                return Some(i);
            }
            if lines
                .get(i + 1)
                .is_some_and(|next| next.trim().to_ascii_lowercase().ends_with("wrote:"))
            {
                return Some(i);
            }
        }
        if lower.starts_with("-----original message-----")
            || trimmed.starts_with("________________")
        {
            return Some(i);
        }
        // Outlook: "From: …" then "Sent: …" after the reply.
        if lower.starts_with("from:")
            && lines
                .get(i + 1)
                .is_some_and(|next| next.trim().to_ascii_lowercase().starts_with("sent:"))
        {
            return Some(i);
        }
        // A closing block of quoted lines (with blank lines between them).
        if trimmed.starts_with('>') && i >= closing_quotes {
            return Some(i);
        }
    }
    None
}

/// The topic an email's subject makes: without its `Re:`/`Fwd:` prefixes (in the languages
/// Zulip knows them in) and control characters; Zulip's placeholder when nothing is left.
pub fn topic_from_subject(subject: &str) -> String {
    let cleaned: String = subject.chars().filter(|c| !c.is_control()).collect();
    // Prefixes are stepped over in place, looking at a few characters at a time: a subject of
    // thousands of "Re:" costs no more than reading it.
    let mut topic = cleaned.as_str();
    loop {
        let trimmed = topic.trim_start();
        let head: String = trimmed
            .chars()
            .take(4)
            .flat_map(char::to_lowercase)
            .collect();
        let prefix = ["re:", "fwd:", "fw:", "aw:", "sv:", "wg:", "tr:", "rv:"]
            .iter()
            .find(|p| head.starts_with(*p));
        // A prefix matched in lower case is ASCII in the subject too, so its length is its
        // length there; `get` keeps that an assumption that cannot panic.
        match prefix.and_then(|p| trimmed.get(p.len()..)) {
            Some(after) => topic = after,
            None => {
                // "[3]" counters some clients add.
                let bracket = trimmed.strip_prefix('[').and_then(|rest| {
                    let (n, after) = rest.split_once(']')?;
                    n.chars().all(|c| c.is_ascii_digit()).then_some(after)
                });
                match bracket {
                    Some(after) if !after.is_empty() => topic = after,
                    _ => break,
                }
            }
        }
    }
    let topic = topic.trim().to_owned();
    if topic.is_empty() {
        NO_SUBJECT.to_owned()
    } else {
        topic
    }
}

/// A file name fit to show in a message link (no brackets or line breaks).
pub fn link_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '[' | ']' | '\n' | '\r'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_lose_the_quoted_message_and_the_signature() {
        let gmail = "Sounds good, see you then.\r\n\r\nOn Tue, 3 Mar 2026 at 14:05, Chronicle \
                     <noreply@chat.example.com> wrote:\r\n> Lunch at noon?\r\n>\r\n> -- \r\n";
        assert_eq!(
            reply_text(gmail, false, false),
            "Sounds good, see you then."
        );
        let wrapped = "Yes.\n\nOn Tue, 3 Mar 2026 at 14:05, Someone With A Long Name\n<x@example.com> wrote:\n> hi";
        assert_eq!(reply_text(wrapped, false, false), "Yes.");
        let outlook = "Agreed\n\n-----Original Message-----\nFrom: A\nSent: today\n\nhi";
        assert_eq!(reply_text(outlook, false, false), "Agreed");
        let signed = "Will do.\n--\nAda Lovelace\nAnalytical Engines Ltd";
        assert_eq!(reply_text(signed, false, false), "Will do.");
        assert!(reply_text(signed, false, true).contains("Analytical Engines"));
        // Two `--` lines: Zulip leaves the text alone.
        assert!(reply_text("a\n--\nb\n--\nc", false, false).ends_with('c'));
        // Quotes inside the reply (a `>` line followed by more reply) stay.
        assert_eq!(
            reply_text("> you said\nI agree", false, false),
            "> you said\nI agree"
        );
        assert!(reply_text(gmail, true, false).contains("Lunch at noon?"));
        assert_eq!(reply_text("\n> only a quote\n", false, false), NO_BODY);
        // Many quoted lines before a last line of reply: all kept (the closing run of quotes
        // is found once, from the end, however many lines there are).
        let many = "> q\n".repeat(200_000) + "mine";
        assert_eq!(reply_text(&many, false, false), many);
        let closing = "mine\n".to_owned() + &"> q\n\n".repeat(200_000);
        assert_eq!(reply_text(&closing, false, false), "mine");
    }

    #[test]
    fn subjects_become_topics() {
        assert_eq!(
            topic_from_subject("Re: RE: Fwd: Budget 2027"),
            "Budget 2027"
        );
        assert_eq!(topic_from_subject("AW: [2] Planung"), "Planung");
        assert_eq!(topic_from_subject("  "), NO_SUBJECT);
        assert_eq!(topic_from_subject("Re:"), NO_SUBJECT);
        assert_eq!(topic_from_subject("line\u{7}bell"), "linebell");
        assert_eq!(
            topic_from_subject("Regarding the plan"),
            "Regarding the plan"
        );
        // Prefixes by the hundred thousand are stepped over in place.
        let long = "Re: [3] ".repeat(100_000) + "Plans";
        assert_eq!(topic_from_subject(&long), "Plans");
        assert_eq!(topic_from_subject("RE:Ärger"), "Ärger");
        assert_eq!(topic_from_subject("Ää: x"), "Ää: x");
    }
}
