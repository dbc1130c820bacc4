//! `slack_incoming`: Slack's incoming-webhook format (text, Block Kit blocks, legacy
//! attachments) turned into one Zulip message.
//!
//! The handler extracts the JSON (raw body or the `payload=` field) and answers Slack-style;
//! this file renders it. Blocks and attachments win over `text`; Slack's `<url|label>` links
//! and `*bold*`/`_italic_` become Markdown; mentions and `~strike~` are left as they are.

use super::{at, req_str, truthy, Outcome, Post, Request, Res};
use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// Formats a Slack incoming-webhook payload (no event type: no event filtering).
pub fn format(req: &Request<'_>) -> Outcome {
    match render(req.payload) {
        Ok(posts) => Outcome::Send {
            event_type: None,
            posts,
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn render(p: &Value) -> Res<Vec<Post>> {
    if !p.is_object() {
        return Err("payload is not a JSON object".to_string());
    }
    let topic = match p.get("channel") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(channel)) => channel
            .strip_prefix(['#', '@'])
            .unwrap_or(channel)
            .to_string(),
        Some(_) => return Err("channel is not a string".to_string()),
    };

    let mut pieces = Vec::new();
    for block in list(p, "blocks")? {
        pieces.push(render_block(block)?);
    }
    for attachment in list(p, "attachments")? {
        pieces.push(render_attachment(attachment)?);
    }
    let mut body = join_pieces(&pieces);

    if body.is_empty() && truthy(p.get("text")) {
        let text = string(p.get("text"), "text")?;
        let mut with_icon = String::new();
        if truthy(p.get("icon_emoji")) {
            with_icon.push_str(string(p.get("icon_emoji"), "icon_emoji")?);
            with_icon.push(' ');
        }
        with_icon.push_str(text);
        body = with_icon.trim().to_string();
    }
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let body = replace_formatting(replace_links(&body).trim());
    Ok(vec![Post { topic, body }])
}

/// The items of the list under `key` when it is truthy (absent, null and empty give none).
fn list<'v>(v: &'v Value, key: &str) -> Res<&'v [Value]> {
    let item = v.get(key);
    if !truthy(item) {
        return Ok(&[]);
    }
    item.and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| format!("{key} is not a list"))
}

/// A value that must be a string.
fn string<'v>(v: Option<&'v Value>, what: &str) -> Res<&'v str> {
    v.and_then(Value::as_str)
        .ok_or_else(|| format!("{what} is not a string"))
}

/// Pieces trimmed, empty ones dropped, joined by blank lines.
fn join_pieces(pieces: &[String]) -> String {
    pieces
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One Block Kit block as Markdown.
fn render_block(block: &Value) -> Res<String> {
    let kind = req_str(block, &["type"])?;
    Ok(match kind {
        "actions" | "input" => String::new(),
        "context" => {
            let mut pieces = Vec::new();
            for element in list(block, "elements")? {
                match req_str(element, &["type"])? {
                    "image" => pieces.push(format!(
                        "[{}]({})",
                        req_str(element, &["alt_text"])?,
                        req_str(element, &["image_url"])?
                    )),
                    "plain_text" | "mrkdwn" => {
                        pieces.push(req_str(element, &["text"])?.to_string())
                    }
                    other => return Err(format!("unsupported context element type {other}")),
                }
            }
            join_pieces(&pieces)
        }
        "divider" => "----".to_string(),
        "header" => {
            if req_str(block, &["text", "type"])? != "plain_text" {
                return Err("header text is not plain_text".to_string());
            }
            format!("## {}", req_str(block, &["text", "text"])?)
        }
        "image" => {
            let url = req_str(block, &["image_url"])?;
            let alt = if block.get("title").is_some() {
                req_str(block, &["title", "text"])?
            } else {
                req_str(block, &["alt_text"])?
            };
            format!("[{alt}]({url})")
        }
        "section" => {
            let mut pieces = Vec::new();
            if block.get("text").is_some() {
                pieces.push(req_str(block, &["text", "text"])?.to_string());
            }
            if let Some(accessory) = block.get("accessory") {
                pieces.push(render_element(accessory)?);
            }
            if let Some(fields) = block.get("fields") {
                let fields = fields
                    .as_array()
                    .ok_or_else(|| "section fields is not a list".to_string())?;
                pieces.push(render_fields(fields)?);
            }
            join_pieces(&pieces)
        }
        other => return Err(format!("unsupported block type {other}")),
    })
}

/// A section's fields: one field as it is; otherwise a two-column table with an empty header.
fn render_fields(fields: &[Value]) -> Res<String> {
    if let [only] = fields {
        return Ok(req_str(only, &["text"])?.to_string());
    }
    let mut cells = Vec::with_capacity(fields.len());
    for field in fields {
        // A table cell can hold neither a line break nor a pipe.
        cells.push(req_str(field, &["text"])?.replace(['\n', '|'], " "));
    }
    let mut table = String::from("| | |\n|-|-|\n");
    for row in cells.chunks(2) {
        let left = row.first().map(String::as_str).unwrap_or("");
        let right = row.get(1).map(String::as_str).unwrap_or("");
        table.push_str(&format!("| {left} | {right} |\n"));
    }
    Ok(table)
}

/// A block element (a section's accessory): only images render.
fn render_element(element: &Value) -> Res<String> {
    if req_str(element, &["type"])? == "image" {
        Ok(format!(
            "[{}]({})",
            req_str(element, &["alt_text"])?,
            req_str(element, &["image_url"])?
        ))
    } else {
        Ok(String::new())
    }
}

/// A legacy attachment as Markdown.
fn render_attachment(attachment: &Value) -> Res<String> {
    let mut pieces = Vec::new();
    if truthy(attachment.get("title")) {
        let title = string(attachment.get("title"), "attachment title")?;
        if truthy(attachment.get("title_link")) {
            let link = string(attachment.get("title_link"), "attachment title_link")?;
            pieces.push(format!("## [{title}]({link})"));
        } else {
            pieces.push(format!("## {title}"));
        }
    }
    for key in ["pretext", "text"] {
        if truthy(attachment.get(key)) {
            pieces.push(string(attachment.get(key), key)?.to_string());
        }
    }
    if let Some(fields) = attachment.get("fields") {
        let fields = fields
            .as_array()
            .ok_or_else(|| "attachment fields is not a list".to_string())?;
        let mut lines = Vec::new();
        for field in fields {
            let title = field.get("title");
            let value = field.get("value");
            match (truthy(title), truthy(value)) {
                (true, true) => lines.push(format!(
                    "*{}*: {}",
                    string(title, "field title")?,
                    string(value, "field value")?
                )),
                (true, false) => lines.push(format!("*{}*", string(title, "field title")?)),
                (false, true) => lines.push(string(value, "field value")?.to_string()),
                (false, false) => {}
            }
        }
        pieces.push(lines.join("\n"));
    }
    for block in list(attachment, "blocks")? {
        pieces.push(render_block(block)?);
    }
    if truthy(attachment.get("image_url")) {
        pieces.push(format!(
            "[]({})",
            string(attachment.get("image_url"), "attachment image_url")?
        ));
    }
    if truthy(attachment.get("footer")) {
        pieces.push(string(attachment.get("footer"), "attachment footer")?.to_string());
    }
    if truthy(attachment.get("ts")) {
        let ts = at(attachment, &["ts"])
            .and_then(|v| {
                v.as_i64()
                    .map(|n| n.to_string())
                    .or_else(|| v.as_u64().map(|n| n.to_string()))
            })
            .ok_or_else(|| "attachment ts is not an integer".to_string())?;
        pieces.push(format!("<time:{ts}>"));
    }
    Ok(join_pieces(&pieces))
}

/// Slack links with a label, `<scheme://target|label>`, as Markdown links. Bare `<url>`,
/// `<mailto:...>` and mentions are left unchanged.
fn replace_links(text: &str) -> String {
    static LINK: OnceLock<Option<Regex>> = OnceLock::new();
    match LINK.get_or_init(|| Regex::new(r"<(\w+?://.*?)\|(.*?)>").ok()) {
        Some(re) => re.replace_all(text, "[${2}](${1})").into_owned(),
        None => text.to_string(),
    }
}

/// Slack's `*bold*` and `_italic_` as Markdown's `**bold**` and `*italic*`.
fn replace_formatting(text: &str) -> String {
    let bold = convert_emphasis(text, '*', "**");
    convert_emphasis(&bold, '_', "*")
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Rewrites `{delim}text{delim}` spans to `{to}text{to}`, scanning left to right without
/// overlap. A span opens at the start or after a non-word character, its text is one line
/// without `delim` that neither starts nor ends with whitespace, and it closes before the
/// end or a non-word character.
fn convert_emphasis(text: &str, delim: char, to: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut copied = 0;
    let mut p = 0;
    while p < chars.len() {
        match emphasis_at(&chars, p, delim) {
            Some((open, close)) => {
                out.extend(&chars[copied..open]);
                out.push_str(to);
                out.extend(&chars[open + 1..close]);
                out.push_str(to);
                copied = close + 1;
                p = copied;
            }
            None => p += 1,
        }
    }
    out.extend(&chars[copied.min(chars.len())..]);
    out
}

/// A span tried at `p`, either "non-word character then delimiter" or, at the start,
/// the delimiter itself: the indices of its opening and closing delimiters.
fn emphasis_at(chars: &[char], p: usize, delim: char) -> Option<(usize, usize)> {
    let here = *chars.get(p)?;
    if !is_word(here) && chars.get(p + 1) == Some(&delim) {
        if let Some(close) = emphasis_close(chars, p + 1, delim) {
            return Some((p + 1, close));
        }
    }
    if p == 0 && here == delim {
        if let Some(close) = emphasis_close(chars, 0, delim) {
            return Some((0, close));
        }
    }
    None
}

/// Where the span opened at `open` closes, if it is a valid span.
fn emphasis_close(chars: &[char], open: usize, delim: char) -> Option<usize> {
    let start = open + 1;
    let first = *chars.get(start)?;
    if first.is_whitespace() || first == delim {
        return None;
    }
    let mut end = start;
    while end < chars.len() && chars[end] != delim && chars[end] != '\n' {
        end += 1;
    }
    if chars.get(end) != Some(&delim) || chars[end - 1].is_whitespace() {
        return None;
    }
    match chars.get(end + 1) {
        Some(&next) if is_word(next) => None,
        _ => Some(end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::{run_fixture, single};

    fn post(payload: &str) -> Post {
        single(run_fixture(format, &[], payload, &[])).1
    }

    #[test]
    fn text_only_with_channel() {
        let p = post(include_str!(
            "../../tests/fixtures/webhooks/slack_incoming/text.json"
        ));
        assert_eq!(p.topic, "deploys");
        assert_eq!(p.body, "Build 118 of chronicle-demo finished.");
    }

    #[test]
    fn icon_emoji_prefixes_text() {
        let p = post(include_str!(
            "../../tests/fixtures/webhooks/slack_incoming/icon_emoji.json"
        ));
        assert_eq!(p.topic, "ops");
        assert_eq!(
            p.body,
            ":rocket: ada started deploying chronicle-demo v2.1.0 to staging"
        );
    }

    #[test]
    fn attachments_with_title_link_and_fields() {
        let p = post(include_str!(
            "../../tests/fixtures/webhooks/slack_incoming/attachments.json"
        ));
        assert_eq!(p.topic, "");
        assert_eq!(
            p.body,
            "## [Nightly report](https://reports.example.test/nightly/42)\n\n\
             All jobs ran.\n\n\
             Two were slow.\n\n\
             **Passed**: 118\n**Flaky**\n3 skipped\n\n\
             [](https://reports.example.test/chart.png)\n\n\
             chronicle-ci\n\n\
             <time:1700000000>"
        );
    }

    #[test]
    fn section_fields_become_a_table() {
        let p = post(include_str!(
            "../../tests/fixtures/webhooks/slack_incoming/blocks.json"
        ));
        assert_eq!(p.topic, "C0DEMO42");
        assert_eq!(
            p.body,
            "## Release checklist\n\n\
             ----\n\n\
             Three steps left for **v2.1.0**.\n\n\
             [chronicle logo](https://img.example.test/logo.png)\n\n\
             | | |\n|-|-|\n| **Owner** ada | **Due** Friday |\n| Notes: two lines |  |\n\n\
             Single field only\n\n\
             Shipped by ada\n\n\
             [avatar](https://img.example.test/ada.png)"
        );
    }

    #[test]
    fn links_and_emphasis_are_converted() {
        let p = post(include_str!(
            "../../tests/fixtures/webhooks/slack_incoming/formatting.json"
        ));
        assert_eq!(p.topic, "alerts");
        assert_eq!(
            p.body,
            "See [the dashboard](https://dash.example.test/d/1), <mailto:ada@example.test|mail> or \
             <https://plain.example.test>: **disk** is *almost* full, *foo*a*bar* stays, <@U0DEMO> too"
        );
    }

    #[test]
    fn text_is_ignored_when_blocks_render() {
        let p = post(r#"{"text": "fallback", "blocks": [{"type": "divider"}]}"#);
        assert_eq!(p.body, "----");
    }

    #[test]
    fn empty_payload_posts_nothing() {
        let outcome = run_fixture(
            format,
            &[],
            include_str!("../../tests/fixtures/webhooks/slack_incoming/empty.json"),
            &[],
        );
        assert_eq!(
            outcome,
            Outcome::Send {
                event_type: None,
                posts: vec![]
            }
        );
    }

    #[test]
    fn unknown_block_type_is_malformed() {
        let outcome = run_fixture(format, &[], r#"{"blocks": [{"type": "video"}]}"#, &[]);
        assert!(matches!(outcome, Outcome::Malformed(_)));
    }

    #[test]
    fn emphasis_rules() {
        assert_eq!(replace_formatting("some *foo* word"), "some **foo** word");
        assert_eq!(replace_formatting("*foo* *bar*"), "**foo** **bar**");
        assert_eq!(replace_formatting("*foo*a*bar*"), "*foo*a*bar*");
        assert_eq!(replace_formatting("some _foo_ word"), "some *foo* word");
        assert_eq!(replace_formatting("a * b * c"), "a * b * c");
        assert_eq!(replace_formatting("x*y*"), "x*y*");
    }
}
