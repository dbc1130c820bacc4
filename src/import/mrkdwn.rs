//! Slack's mrkdwn to Zulip's Markdown.
//!
//! - `*bold*` → `**bold**`, `_italic_` → `*italic*`, `~strike~` → `~~strike~~`, with Slack's
//!   rule for where a marker counts (not inside a word: before the opening marker and after the
//!   closing one stands the start or end of the line, a space, or punctuation other than the
//!   marker itself, `` ` ``, `@` and `\`, and no opening bracket after a closing marker or closing
//!   bracket before an opening one), the rule Zulip's converter has; never inside code;
//! - `<@U123>` and `<@U123|name>` → `@**Full Name|id**` (a real mention: the flags follow);
//! - `<#C123|general>` → `#**general**`;
//! - `<!here>`, `<!channel>`, `<!everyone>` → `@**all**`;
//! - `<https://x|label>` → `[label](https://x)`, `<https://x>` → `https://x`,
//!   `<mailto:a@b|a@b>` → `mailto:a@b`;
//! - then the three entities Slack escapes (`&lt;`, `&gt;`, `&amp;`) are decoded.

use std::borrow::Cow;

/// What a Slack id refers to, for links and mentions.
pub trait Names {
    /// A user's Chronicle id and full name.
    fn user(&self, slack_id: &str) -> Option<(u64, String)>;
    /// A channel's name.
    fn channel(&self, slack_id: &str) -> Option<String>;
}

/// A URL without the Slack access token some exports append to links into Slack
/// (`?t=xoxe-…`, any `xox…` value): an exporter's secret is never stored.
pub fn without_token(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            !pair
                .split_once('=')
                .is_some_and(|(_, value)| value.starts_with("xox"))
        })
        .collect();
    let mut out = base.to_owned();
    if kept.iter().any(|p| !p.is_empty()) {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Converts one message text.
pub fn convert(text: &str, names: &dyn Names) -> String {
    // Each step leaves text without its construct as it is, uncopied (most messages have none).
    let linked = if text.contains('<') {
        Cow::Owned(angle_brackets(text, names))
    } else {
        Cow::Borrowed(text)
    };
    let mut out = String::with_capacity(linked.len());
    // Formatting applies outside code spans and blocks only.
    for (code, part) in code_split(&linked) {
        if code {
            out.push_str(part);
        } else {
            let part = markers(part, '*', "**");
            let part = markers(&part, '~', "~~");
            out.push_str(&markers(&part, '_', "*"));
        }
    }
    decode_entities(out)
}

/// `<…>` constructs: mentions, channel links, special mentions and links.
fn angle_brackets(text: &str, names: &dyn Names) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after
            .find(['>', '\n'])
            .filter(|c| after.as_bytes()[*c] == b'>')
        else {
            out.push('<');
            rest = after;
            continue;
        };
        let inner = &after[..close];
        let (target, label) = match inner.split_once('|') {
            Some((t, l)) => (t, Some(l)),
            None => (inner, None),
        };
        let replaced = if let Some(id) = target.strip_prefix('@') {
            match names.user(id) {
                Some((zulip_id, name)) => format!("@**{name}|{zulip_id}**"),
                None => format!("@{}", label.unwrap_or(id)),
            }
        } else if let Some(id) = target.strip_prefix('#') {
            match names.channel(id).or_else(|| label.map(str::to_owned)) {
                Some(name) => format!("#**{name}**"),
                None => format!("#{id}"),
            }
        } else if let Some(special) = target.strip_prefix('!') {
            match special.split('^').next().unwrap_or_default() {
                "here" | "channel" | "everyone" => "@**all**".to_owned(),
                other => label.map_or_else(|| format!("@{other}"), str::to_owned),
            }
        } else if target.starts_with("mailto:") {
            target.to_owned()
        } else if target.contains("://") {
            let url = without_token(target);
            match label {
                Some(label) if label != target => format!("[{label}]({url})"),
                _ => url,
            }
        } else {
            // Not one of Slack's constructs: the text as it stood.
            format!("<{inner}>")
        };
        out.push_str(&replaced);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Splits text into code (`` `…` `` spans and ```` ``` ```` blocks) and the rest, in order.
fn code_split(text: &str) -> Vec<(bool, &str)> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let fence = if rest[start..].starts_with("```") {
            "```"
        } else {
            "`"
        };
        let body = &rest[start + fence.len()..];
        let Some(end) = body.find(fence) else {
            break;
        };
        if start > 0 {
            parts.push((false, &rest[..start]));
        }
        let stop = start + fence.len() + end + fence.len();
        parts.push((true, &rest[start..stop]));
        rest = &rest[stop..];
    }
    if !rest.is_empty() {
        parts.push((false, rest));
    }
    parts
}

fn is_opening_bracket(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | '«' | '“' | '‘' | '‹' | '「' | '『' | '（' | '［' | '｛'
    )
}

fn is_closing_bracket(c: char) -> bool {
    matches!(
        c,
        ')' | ']' | '}' | '»' | '”' | '’' | '›' | '」' | '』' | '）' | '］' | '｝'
    )
}

/// Punctuation, a symbol or a space (Unicode's P, S and Zs): what may stand beside a marker.
fn is_boundary(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation() || c == ' ' || c == '\t'
    } else {
        !c.is_alphanumeric() && !c.is_control() && c != '\u{200d}'
    }
}

/// Replaces `marker…marker` spans by `zulip…zulip` where Slack would format them.
fn markers<'a>(text: &'a str, marker: char, zulip: &str) -> Cow<'a, str> {
    if !text.contains(marker) {
        return Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    let opens = |prev: Option<char>| match prev {
        None | Some('\n') => true,
        Some(p) => {
            is_boundary(p)
                && p != marker
                && !matches!(p, '`' | '@' | '\\')
                && !is_closing_bracket(p)
        }
    };
    let closes = |next: Option<char>| match next {
        None | Some('\n') => true,
        Some(n) => {
            is_boundary(n)
                && n != marker
                && !matches!(n, '`' | '@' | '\\')
                && !is_opening_bracket(n)
        }
    };
    while i < chars.len() {
        if chars[i] == marker && opens(i.checked_sub(1).map(|p| chars[p])) {
            // The nearest marker closes, on the same line, with something between.
            let end = chars[i + 1..]
                .iter()
                .position(|c| *c == marker || *c == '\n')
                .map(|p| i + 1 + p)
                .filter(|e| chars[*e] == marker && *e > i + 1);
            if let Some(end) = end.filter(|e| closes(chars.get(e + 1).copied())) {
                out.push_str(zulip);
                out.extend(&chars[i + 1..end]);
                out.push_str(zulip);
                i = end + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    Cow::Owned(out)
}

/// Slack escapes exactly these three in message text.
fn decode_entities(text: String) -> String {
    if !text.contains('&') {
        return text;
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture;
    impl Names for Fixture {
        fn user(&self, id: &str) -> Option<(u64, String)> {
            (id == "U8VAHEVUY").then(|| (4, "Steve Howell".to_owned()))
        }
        fn channel(&self, id: &str) -> Option<String> {
            (id == "C5Z73A7RA").then(|| "general".to_owned())
        }
    }

    /// Zulip's own oracle for its converter (tests/fixtures/zulip/slack_message_conversion.json,
    /// Apache-2.0), which these rules must agree with.
    #[test]
    fn zulips_conversion_cases() {
        let cases: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/zulip/slack_message_conversion.json"
        ))
        .unwrap();
        let cases = cases["regular_tests"].as_array().unwrap();
        assert_eq!(cases.len(), 17);
        for case in cases {
            let input = case["input"].as_str().unwrap();
            let expected = case["conversion_output"].as_str().unwrap();
            assert_eq!(
                convert(input, &Fixture),
                expected,
                "{}",
                case["name"].as_str().unwrap()
            );
        }
    }

    #[test]
    fn mentions_links_entities_and_code() {
        assert_eq!(
            convert("<@U8VAHEVUY> this is a test mention", &Fixture),
            "@**Steve Howell|4** this is a test mention"
        );
        assert_eq!(
            convert("see <#C5Z73A7RA|general> and <!here>, <!channel>", &Fixture),
            "see #**general** and @**all**, @**all**"
        );
        assert_eq!(convert("<@UNKNOWN|ghost> hi", &Fixture), "@ghost hi");
        assert_eq!(
            convert("a &lt;chars&gt; &amp;amp; b", &Fixture),
            "a <chars> &amp; b"
        );
        assert_eq!(
            convert("`*not bold*` but *bold* ```_x_```", &Fixture),
            "`*not bold*` but **bold** ```_x_```"
        );
        assert_eq!(convert("2 < 3 and 4 > 1", &Fixture), "2 < 3 and 4 > 1");
        // An exporter's token never comes along.
        assert_eq!(
            convert("<https://files.slack.com/a.png?t=xoxe-1-2|a.png>", &Fixture),
            "[a.png](https://files.slack.com/a.png)"
        );
        assert_eq!(
            without_token("https://x.example/p?a=1&t=xoxp-9&b=2#top"),
            "https://x.example/p?a=1&b=2#top"
        );
        assert_eq!(convert("*a\nb*", &Fixture), "*a\nb*");
    }
}
