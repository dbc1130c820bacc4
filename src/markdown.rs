//! Rendering of user-supplied text to HTML.
//!
//! Messages are CommonMark with GitHub extensions (comrak), raw HTML escaped, plus Zulip's own
//! syntax: user mentions `@**Full Name**` (silent `@_**Full Name**`, disambiguated
//! `@**Full Name|12**`), wildcard mentions (`@**all**`, `@**everyone**`, `@**channel**`,
//! `@**stream**`, `@**topic**`), user group mentions (`@*group*`, silent `@_*group*`), and
//! channel links `#**channel**`. Zulip syntax inside code is left
//! alone: it is replaced by placeholder tokens before parsing, outside code only, and the tokens
//! are swapped for their HTML afterwards. The organization's linkifiers then apply to the text
//! of the parsed document, never inside code, links or those tokens.

use crate::linkify::{find_all, Compiled};
use comrak::nodes::{AstNode, NodeValue};
use comrak::{format_html, parse_document, Arena, Options};

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

/// Zulip's encoding of a narrow URL component: percent-encoding with `.` for `%`.
pub fn encode_hash_component(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!(".{byte:02X}")),
        }
    }
    out
}

/// Markdown of descriptions (organization, channels, channel folders), rendered without the
/// organization at hand: Zulip's mention and channel syntax stays as typed.
pub fn render_description(text: &str) -> String {
    struct Nothing;
    impl Resolver for Nothing {
        fn user(&self, _: &str, _: Option<u64>) -> Option<(u64, String)> {
            None
        }
        fn channel(&self, _: &str) -> Option<(u64, String)> {
            None
        }
    }
    render_message(text, &Nothing).html
}

/// What a message's Zulip syntax refers to, resolved against the organization.
pub trait Resolver {
    /// A user by full name (and optional id), as `(user_id, full_name)`.
    fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)>;
    /// A channel by name, as `(channel_id, name)`.
    fn channel(&self, name: &str) -> Option<(u64, String)>;
    /// A user group that can be mentioned, by name, as `(group_id, name)`.
    fn user_group(&self, _name: &str) -> Option<(u64, String)> {
        None
    }
    /// The organization's linkifiers, in order.
    fn linkifiers(&self) -> Vec<&Compiled> {
        Vec::new()
    }
    /// The image URL of an active custom emoji of that name.
    fn custom_emoji(&self, _name: &str) -> Option<String> {
        None
    }
    /// The preview of the uploaded image at `/user_uploads/{path}`, if it is one.
    fn upload_image(&self, _path: &str) -> Option<UploadPreview> {
        None
    }
}

/// What a message shows of an uploaded image it links (Zulip's `div.message_inline_image`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadPreview {
    /// Its size as shown.
    pub width: u32,
    pub height: u32,
    pub content_type: String,
    pub animated: bool,
    /// The name of its default thumbnail format (`840x560.webp`).
    pub thumbnail: String,
}

/// At most this many uploaded images are previewed in a message (Zulip's
/// `INLINE_PREVIEW_LIMIT_PER_MESSAGE`).
const MAX_PREVIEWS: usize = 24;

/// Zulip's preview of an uploaded image a link names: the image's thumbnail inside a link to
/// the image, titled with the link's text.
fn preview_html(path: &str, title: &str, preview: &UploadPreview) -> String {
    let path = escape_html(path);
    format!(
        "<div class=\"message_inline_image\"><a href=\"/user_uploads/{path}\" title=\"{}\">\
         <img {}data-original-content-type=\"{}\" data-original-dimensions=\"{}x{}\" \
         src=\"/user_uploads/thumbnail/{path}/{}\"></a></div>",
        escape_html(title),
        if preview.animated {
            "data-animated=\"true\" "
        } else {
            ""
        },
        escape_html(&preview.content_type),
        preview.width,
        preview.height,
        escape_html(&preview.thumbnail),
    )
}

/// The text of a node (a link's label), tokens and markup left out.
fn plain_text<'a>(node: &'a AstNode<'a>) -> String {
    let mut out = String::new();
    for d in node.descendants() {
        match &d.data.borrow().value {
            NodeValue::Text(t) => out.push_str(t),
            NodeValue::Code(c) => out.push_str(&c.literal),
            _ => {}
        }
    }
    out.chars()
        .filter(|c| !matches!(*c, OPEN | CLOSE | BLOCK))
        .collect()
}

/// After each top-level block that links uploaded images, a block token for their previews (in
/// link order), as Zulip places them; none for links in quotes or code. Answers the tokens'
/// indices in `replacements`.
fn preview_uploads<'a>(
    arena: &'a Arena<AstNode<'a>>,
    root: &'a AstNode<'a>,
    resolver: &dyn Resolver,
    replacements: &mut Vec<String>,
) -> Vec<usize> {
    let mut tokens = Vec::new();
    let mut previewed = 0;
    let blocks: Vec<_> = root.children().collect();
    for block in blocks {
        if matches!(
            block.data.borrow().value,
            NodeValue::BlockQuote | NodeValue::CodeBlock(_) | NodeValue::HtmlBlock(_)
        ) {
            continue;
        }
        let mut html = String::new();
        for node in block.descendants() {
            let url = match &node.data.borrow().value {
                NodeValue::Link(link) => link.url.clone(),
                _ => continue,
            };
            let Some(path) = url.strip_prefix("/user_uploads/") else {
                continue;
            };
            if previewed == MAX_PREVIEWS {
                break;
            }
            if let Some(preview) = resolver.upload_image(path) {
                html.push_str(&preview_html(path, &plain_text(node), &preview));
                previewed += 1;
            }
        }
        if html.is_empty() {
            continue;
        }
        replacements.push(html);
        tokens.push(replacements.len() - 1);
        let at = comrak::nodes::LineColumn { line: 0, column: 0 };
        let new = |value| {
            arena.alloc(AstNode::new(std::cell::RefCell::new(
                comrak::nodes::Ast::new(value, at),
            )))
        };
        let paragraph = new(NodeValue::Paragraph);
        paragraph.append(new(NodeValue::Text(format!(
            "{BLOCK}{}{CLOSE}",
            replacements.len() - 1
        ))));
        block.insert_after(paragraph);
    }
    tokens
}

/// A linkifier's URL if it is safe to link to: http(s) and mailto, and scheme-less URLs as
/// http (Zulip's `sanitize_url`); anything else links nothing.
fn safe_url(url: &str) -> Option<String> {
    let scheme = url.split_once(':').map(|(s, _)| s).filter(|s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    match scheme.map(str::to_ascii_lowercase).as_deref() {
        Some("http" | "https" | "mailto") => Some(url.to_owned()),
        Some(_) => None,
        None if url.starts_with('/') => Some(url.to_owned()),
        None => Some(format!("http://{url}")),
    }
}

/// Applies the linkifiers to the document's text outside links (code has no text nodes), each
/// match becoming a placeholder token for its `<a>`.
fn linkify_document<'a>(
    root: &'a AstNode<'a>,
    linkifiers: &[&Compiled],
    replacements: &mut Vec<String>,
) {
    if linkifiers.is_empty() {
        return;
    }
    for node in root.descendants() {
        let in_link = node.ancestors().skip(1).any(|a| {
            matches!(
                a.data.borrow().value,
                NodeValue::Link(_) | NodeValue::Image(_)
            )
        });
        if in_link {
            continue;
        }
        let mut data = node.data.borrow_mut();
        let NodeValue::Text(text) = &mut data.value else {
            continue;
        };
        // Tokens already placed (mentions, channel links) are not linkified.
        let mut tokens = Vec::new();
        let mut from = 0;
        while let Some(open) = text[from..].find(OPEN).map(|i| i + from) {
            let close = text[open..]
                .find(CLOSE)
                .map_or(text.len(), |i| open + i + CLOSE.len_utf8());
            tokens.push((open, close));
            from = close;
        }
        let found: Vec<_> = find_all(linkifiers, text)
            .into_iter()
            .filter(|f| !tokens.iter().any(|(s, e)| f.start < *e && *s < f.end))
            .filter_map(|f| safe_url(&f.url).map(|url| (f, url)))
            .collect();
        if found.is_empty() {
            continue;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (f, url) in found {
            out.push_str(&text[at..f.start]);
            replacements.push(format!(
                "<a href=\"{}\">{}</a>",
                escape_html(&url),
                escape_html(&text[f.start..f.end])
            ));
            out.push_str(&format!("{OPEN}{}{CLOSE}", replacements.len() - 1));
            at = f.end;
        }
        out.push_str(&text[at..]);
        *text = out;
    }
}

/// A rendered message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rendered {
    pub html: String,
    /// Users mentioned by name, not silently.
    pub mentioned: Vec<u64>,
    /// User groups mentioned, not silently (their members are mentioned; the caller expands
    /// them, knowing the members).
    pub mentioned_groups: Vec<u64>,
    pub stream_wildcard: bool,
    pub topic_wildcard: bool,
}

fn options() -> Options<'static> {
    let mut options = Options::default();
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.extension.table = true;
    options.render.escape = true;
    options.render.hardbreaks = true;
    options
}

/// Private-use characters that cannot come from a client's text after sanitising.
const OPEN: char = '\u{F8F0}';
const CLOSE: char = '\u{F8F1}';
/// Opens the token of a block (a spoiler), which replaces the paragraph it stands alone in.
const BLOCK: char = '\u{F8F2}';

/// Renders a message's Markdown, resolving mentions and channel links.
pub fn render_message(source: &str, resolver: &dyn Resolver) -> Rendered {
    if let Some(html) = plain_paragraphs(source) {
        if resolver.linkifiers().is_empty() {
            return Rendered {
                html,
                ..Rendered::default()
            };
        }
    }
    render_parsed(source, resolver)
}

/// [`render_message`] through the full parse.
fn render_parsed(source: &str, resolver: &dyn Resolver) -> Rendered {
    let clean: String = source
        .chars()
        .filter(|c| *c != OPEN && *c != CLOSE && *c != BLOCK)
        .collect();
    let mut rendered = Rendered::default();
    let mut replacements: Vec<String> = Vec::new();
    let clean = expand_zulip_fences(
        &clean,
        resolver,
        &mut rendered,
        &mut replacements,
        Nesting::default(),
    );
    rendered.html = render_message_tokens(&clean, resolver, &mut rendered, replacements);
    rendered.mentioned.sort_unstable();
    rendered.mentioned.dedup();
    rendered
}

/// The HTML of text that holds no Markdown, no Zulip syntax and nothing to link, written
/// directly: the same HTML the full parse gives (a property test compares the two), at a
/// fraction of its cost. Most chat messages are such prose. `None` when the text holds
/// anything else: it then takes the full path.
///
/// Such text is ASCII letters, digits, spaces, tabs and `,.;'"?!()-/` and `:` before a space
/// or a tab (`Q:\tWhy?`), with no `www.`; each paragraph's first line starts with a letter or
/// `"` and each other line, past its indentation, with a letter, `"`, or `-- ` and a letter (a
/// signature); no line ends in a space or tab. CommonMark makes each run of lines a
/// paragraph, drops a continuation line's indentation, and (with hard breaks on) ends each
/// line but the last with `<br />`.
pub fn plain_paragraphs(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let allowed = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b' ' | b'\t' | b'\n' | b',' | b'.' | b';' | b'\'' | b'"' | b'?'
            )
            || matches!(b, b'!' | b'(' | b')' | b'-' | b'/')
            || (b == b':'
                && bytes
                    .get(i + 1)
                    .is_none_or(|n| matches!(n, b' ' | b'\t' | b'\n')));
        if !allowed {
            return None;
        }
        if (b == b'w' || b == b'W')
            && bytes[i..].len() >= 4
            && bytes[i..i + 4].eq_ignore_ascii_case(b"www.")
        {
            return None;
        }
    }
    let mut html = String::with_capacity(text.len() + 16);
    let mut in_paragraph = false;
    for line in text.split('\n') {
        if line.is_empty() {
            if in_paragraph {
                html.push_str("</p>\n");
                in_paragraph = false;
            }
            continue;
        }
        if line.ends_with([' ', '\t']) {
            return None;
        }
        let body = if in_paragraph {
            let body = line.trim_start_matches([' ', '\t']);
            let starts = body.as_bytes()[0];
            let signed = body.starts_with("-- ")
                && body.as_bytes().get(3).is_some_and(u8::is_ascii_alphabetic);
            if !(starts.is_ascii_alphabetic() || starts == b'"' || signed) {
                return None;
            }
            html.push_str("<br />\n");
            body
        } else {
            if !matches!(line.as_bytes()[0], b'"' | b'a'..=b'z' | b'A'..=b'Z') {
                return None;
            }
            html.push_str("<p>");
            in_paragraph = true;
            line
        };
        let mut rest = body;
        while let Some(quote) = rest.find('"') {
            html.push_str(&rest[..quote]);
            html.push_str("&quot;");
            rest = &rest[quote + 1..];
        }
        html.push_str(rest);
    }
    if in_paragraph {
        html.push_str("</p>");
    }
    Some(html.trim_end().to_owned())
}

/// The HTML of Markdown whose Zulip fences are already expanded (`replacements` holds their
/// tokens): Zulip syntax resolved into more tokens, the CommonMark parse, linkifiers, and the
/// tokens swapped back.
fn render_message_tokens(
    text: &str,
    resolver: &dyn Resolver,
    rendered: &mut Rendered,
    mut replacements: Vec<String>,
) -> String {
    let tokenized = tokenize_outside_code(text, |syntax| {
        let html = resolve(syntax, resolver, rendered)?;
        replacements.push(html);
        Some(format!("{OPEN}{}{CLOSE}", replacements.len() - 1))
    });
    let options = options();
    let arena = Arena::new();
    let root = parse_document(&arena, &tokenized, &options);
    linkify_document(root, &resolver.linkifiers(), &mut replacements);
    let previews = if tokenized.contains("/user_uploads/") {
        preview_uploads(&arena, root, resolver, &mut replacements)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = format_html(root, &options, &mut out);
    let html = String::from_utf8(out).unwrap_or_default();
    let mut html = substitute_tokens(&html, &replacements, &previews);
    html.truncate(html.trim_end().len());
    html
}

/// `html` with each token put back: `OPEN i CLOSE` by replacement `i`, and a block token
/// (`BLOCK i CLOSE`: a spoiler, a preview), which stands alone in a paragraph, by replacement
/// `i` in place of the whole paragraph (and of its newline for a preview: Zulip writes none
/// after one). One pass from left to right: a message may hold thousands of tokens.
fn substitute_tokens(html: &str, replacements: &[String], previews: &[usize]) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find([OPEN, BLOCK]) {
        let block = rest[at..].starts_with(BLOCK);
        let marker = if block { BLOCK } else { OPEN }.len_utf8();
        let after = &rest[at + marker..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let replacement = after[..digits]
            .parse::<usize>()
            .ok()
            .and_then(|i| Some((i, replacements.get(i)?)))
            .filter(|_| after[digits..].starts_with(CLOSE));
        let Some((i, replacement)) = replacement else {
            // Not a token of ours: kept as it is.
            out.push_str(&rest[..at + marker]);
            rest = after;
            continue;
        };
        let mut before = &rest[..at];
        let mut tail = &after[digits + CLOSE.len_utf8()..];
        if block {
            if let (Some(b), Some(t)) = (before.strip_suffix("<p>"), tail.strip_prefix("</p>")) {
                before = b;
                tail = t;
                if previews.contains(&i) {
                    tail = tail.strip_prefix('\n').unwrap_or(tail);
                }
            }
        }
        out.push_str(before);
        out.push_str(replacement);
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// How deep spoilers may nest inside spoilers before the inner ones stay as code.
const MAX_SPOILER_DEPTH: usize = 4;

/// How deep ```` ```quote ```` fences may nest before the inner ones stay as code. Each level
/// is a call of [`expand_zulip_fences`] on a copy of its body: without a bound, a message of
/// unclosed quote fences (a few bytes a line) would recurse once per line, past any thread's
/// stack, and abort the server.
const MAX_QUOTE_DEPTH: usize = 32;

/// How deep [`expand_zulip_fences`] is in spoilers and in quotes.
#[derive(Clone, Copy, Default)]
struct Nesting {
    spoilers: usize,
    quotes: usize,
}

/// Zulip's fenced blocks with a meaning of their own, before the CommonMark parse: ```` ```quote ````
/// becomes a block quote (its lines prefixed with `>`), ```` ```spoiler Header ```` a spoiler
/// block rendered here (header and content are Markdown) and left as a token on a line of its
/// own. Other fences, and everything inside them, are left as they are.
fn expand_zulip_fences(
    text: &str,
    resolver: &dyn Resolver,
    rendered: &mut Rendered,
    replacements: &mut Vec<String>,
    nesting: Nesting,
) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let fence_len = trimmed.len() - trimmed.trim_start_matches(['`', '~']).len();
        let fence_char = trimmed.chars().next();
        if fence_len < 3 || trimmed[..fence_len].chars().any(|c| Some(c) != fence_char) {
            out.push_str(line);
            i += 1;
            continue;
        }
        let fence = &trimmed[..fence_len];
        let info = trimmed[fence_len..].trim();
        let (kind, rest) = info.split_once(char::is_whitespace).unwrap_or((info, ""));
        // The block runs to a closing fence of the same character, at least as long.
        let closes = |l: &str| {
            let t = l.trim();
            t.len() >= fence.len() && t.chars().all(|c| Some(c) == fence_char)
        };
        let end = (i + 1..lines.len()).find(|j| closes(lines[*j]));
        let body_end = end.unwrap_or(lines.len());
        let body: String = lines[i + 1..body_end].concat();
        let next = end.map_or(lines.len(), |e| e + 1);
        match kind {
            "quote" if nesting.quotes < MAX_QUOTE_DEPTH => {
                let inner = Nesting {
                    quotes: nesting.quotes + 1,
                    ..nesting
                };
                let inner = expand_zulip_fences(&body, resolver, rendered, replacements, inner);
                for quoted in inner.split_inclusive('\n') {
                    out.push('>');
                    if !quoted.trim().is_empty() {
                        out.push(' ');
                    }
                    out.push_str(quoted.trim_end_matches('\n'));
                    out.push('\n');
                }
                out.push('\n');
            }
            "spoiler" if nesting.spoilers < MAX_SPOILER_DEPTH => {
                let header = render_nested(rest, resolver, rendered, nesting);
                let content = render_nested(&body, resolver, rendered, nesting);
                let header = if header.is_empty() {
                    String::new()
                } else {
                    format!("\n{header}\n")
                };
                let content = if content.is_empty() {
                    String::new()
                } else {
                    format!("\n{content}\n")
                };
                replacements.push(format!(
                    "<div class=\"spoiler-block\"><div class=\"spoiler-header\">{header}</div><div class=\"spoiler-content\" aria-hidden=\"true\">{content}</div></div>"
                ));
                out.push_str(&format!("\n{BLOCK}{}{CLOSE}\n\n", replacements.len() - 1));
            }
            _ => {
                // Any other fence: copied through untouched, up to and with its closing line.
                for copied in &lines[i..next] {
                    out.push_str(copied);
                }
            }
        }
        i = next;
    }
    out
}

/// The HTML of Markdown nested in a spoiler, its mentions counted for the whole message.
fn render_nested(
    text: &str,
    resolver: &dyn Resolver,
    rendered: &mut Rendered,
    nesting: Nesting,
) -> String {
    let mut inner = Rendered::default();
    let mut replacements = Vec::new();
    let nesting = Nesting {
        spoilers: nesting.spoilers + 1,
        ..nesting
    };
    let expanded = expand_zulip_fences(text, resolver, &mut inner, &mut replacements, nesting);
    // Rendered as a message of its own (its own tokens), then merged.
    let nested = render_message_tokens(&expanded, resolver, &mut inner, replacements);
    rendered.mentioned.extend(inner.mentioned);
    rendered.mentioned_groups.extend(inner.mentioned_groups);
    rendered.stream_wildcard |= inner.stream_wildcard;
    rendered.topic_wildcard |= inner.topic_wildcard;
    nested
}

/// The HTML for one piece of Zulip syntax (`@**x**`, `@_**x**`, `#**x**`), or `None` to leave
/// the text as it is.
fn resolve(syntax: &str, resolver: &dyn Resolver, rendered: &mut Rendered) -> Option<String> {
    if let Some(text) = syntax
        .strip_prefix("<time:")
        .and_then(|s| s.strip_suffix('>'))
    {
        return Some(global_time(text));
    }
    if let Some(name) = syntax.strip_prefix(':').and_then(|s| s.strip_suffix(':')) {
        // The organization's emoji win over the built-in ones, as in Zulip.
        if let Some(url) = resolver.custom_emoji(name) {
            return Some(format!(
                "<img alt=\":{name}:\" class=\"emoji\" src=\"{url}\" title=\"{title}\">",
                name = escape_html(name),
                url = escape_html(&url),
                title = escape_html(&name.replace('_', " ")),
            ));
        }
        let code = crate::emoji::unicode_code(name)?;
        return Some(format!(
            "<span aria-label=\"{label}\" class=\"emoji emoji-{code}\" role=\"img\" title=\"{label}\">:{name}:</span>",
            label = escape_html(&name.replace('_', " ")),
            name = escape_html(name),
        ));
    }
    if let Some(name) = syntax
        .strip_prefix("#**")
        .and_then(|s| s.strip_suffix("**"))
    {
        if let Some((id, name)) = resolver.channel(name) {
            return Some(format!(
                "<a class=\"stream\" data-stream-id=\"{id}\" href=\"/#narrow/channel/{id}-{}\">#{}</a>",
                escape_html(&name.replace(' ', "-")),
                escape_html(&name)
            ));
        }
        // `#**channel>topic**`: a link to a topic.
        let (channel, topic) = name.split_once('>')?;
        let (id, channel) = resolver.channel(channel)?;
        return Some(format!(
            "<a class=\"stream-topic\" data-stream-id=\"{id}\" href=\"/#narrow/channel/{id}-{}/topic/{}\">#{} &gt; {}</a>",
            escape_html(&encode_hash_component(&channel.replace(' ', "-"))),
            escape_html(&encode_hash_component(topic)),
            escape_html(&channel),
            escape_html(topic)
        ));
    }
    if let Some((silent, name)) = group_mention(syntax) {
        let (group_id, name) = resolver.user_group(name)?;
        if !silent {
            rendered.mentioned_groups.push(group_id);
        }
        let (class, prefix) = if silent {
            ("user-group-mention silent", "")
        } else {
            ("user-group-mention", "@")
        };
        return Some(format!(
            "<span class=\"{class}\" data-user-group-id=\"{group_id}\">{prefix}{}</span>",
            escape_html(&name)
        ));
    }
    let (silent, inner) = if let Some(rest) = syntax.strip_prefix("@_**") {
        (true, rest.strip_suffix("**")?)
    } else {
        (false, syntax.strip_prefix("@**")?.strip_suffix("**")?)
    };
    let prefix = if silent { "" } else { "@" };
    let class = if silent {
        "user-mention silent"
    } else {
        "user-mention"
    };
    match inner {
        "all" | "everyone" | "channel" | "stream" => {
            if !silent {
                rendered.stream_wildcard = true;
            }
            return Some(format!(
                "<span class=\"{class}\" data-user-id=\"*\">{prefix}{inner}</span>"
            ));
        }
        "topic" => {
            if !silent {
                rendered.topic_wildcard = true;
            }
            let class = if silent {
                "topic-mention silent"
            } else {
                "topic-mention"
            };
            return Some(format!("<span class=\"{class}\">{prefix}topic</span>"));
        }
        _ => {}
    }
    let (name, id) = match inner.rsplit_once('|') {
        Some((name, id)) => (name, id.parse::<u64>().ok()),
        None => (inner, None),
    };
    let (user_id, full_name) = resolver.user(name, id)?;
    if !silent {
        rendered.mentioned.push(user_id);
    }
    Some(format!(
        "<span class=\"{class}\" data-user-id=\"{user_id}\">{prefix}{}</span>",
        escape_html(&full_name)
    ))
}

/// `@*group*` or `@_*group*` (not a user mention's `@**`): whether silent, and the name.
fn group_mention(syntax: &str) -> Option<(bool, &str)> {
    if syntax.starts_with("@**") || syntax.starts_with("@_**") {
        return None;
    }
    let (silent, rest) = match syntax.strip_prefix("@_*") {
        Some(rest) => (true, rest),
        None => (false, syntax.strip_prefix("@*")?),
    };
    let name = rest.strip_suffix('*')?;
    (!name.is_empty()).then_some((silent, name))
}

/// Zulip's rendering of a global time: `<time datetime="…Z">` around the text as typed, or an
/// error span for text that is not an instant (ISO 8601 or seconds since the epoch).
fn global_time(text: &str) -> String {
    let ms = match text.trim().parse::<i64>() {
        Ok(secs) => secs.checked_mul(1000),
        Err(_) => crate::time::parse_rfc3339_ms(text.trim()),
    };
    match ms.filter(|ms| (0..=253_402_300_799_000).contains(ms)) {
        Some(ms) => {
            let iso = crate::time::iso8601_ms(ms - ms.rem_euclid(1000));
            let utc = format!("{}Z", &iso[..19]);
            format!("<time datetime=\"{utc}\">{}</time>", escape_html(text))
        }
        None => format!(
            "<span class=\"timestamp-error\">Invalid time format: {}</span>",
            escape_html(text)
        ),
    }
}

/// `<time:…>` for an instant (seconds since the epoch), as Zulip writes times in its notices.
pub fn time_syntax(secs: i64) -> String {
    let iso = crate::time::iso8601_ms(secs.saturating_mul(1000));
    format!("<time:{}+00:00>", &iso[..19])
}

/// The `:name:` at the start of `text`, if it has the shape of an emoji name.
fn emoji_at(text: &str) -> Option<&str> {
    let body = text.strip_prefix(':')?;
    let end = body.find(':')?;
    let name = &body[..end];
    let shaped = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '+' | '-'));
    shaped.then(|| &text[..end + 2])
}

/// Calls `replace` on each `:emoji:`, `@**…**`, `@_**…**` and `#**…**` outside fenced code blocks and
/// inline code spans, splicing in what it returns.
fn tokenize_outside_code(text: &str, mut replace: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            out.push_str(line);
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_owned());
            out.push_str(line);
            continue;
        }
        out.push_str(&tokenize_line(line, &mut replace));
    }
    out
}

fn tokenize_line(line: &str, replace: &mut impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        // Inline code: copy through the matching run of backticks.
        if rest.starts_with('`') {
            let ticks = rest.len() - rest.trim_start_matches('`').len();
            let run = &rest[..ticks];
            if let Some(end) = rest[ticks..].find(run) {
                let stop = ticks + end + ticks;
                out.push_str(&rest[..stop]);
                rest = &rest[stop..];
                continue;
            }
            out.push_str(run);
            rest = &rest[ticks..];
            continue;
        }
        if let Some(token) = emoji_at(rest).and_then(|syntax| {
            let token = replace(syntax)?;
            Some((syntax.len(), token))
        }) {
            out.push_str(&token.1);
            rest = &rest[token.0..];
            continue;
        }
        // A global time: `<time:2025-05-01T10:00:00+00:00>` or `<time:1746093600>`.
        if rest.starts_with("<time:") {
            if let Some(end) = rest.find('>') {
                let syntax = &rest[..=end];
                if !syntax.contains('\n') {
                    if let Some(token) = replace(syntax) {
                        out.push_str(&token);
                        rest = &rest[end + 1..];
                        continue;
                    }
                }
            }
        }
        let candidate = ["@_**", "@**", "#**"].iter().find(|p| rest.starts_with(*p));
        if let Some(prefix) = candidate {
            if let Some(end) = rest[prefix.len()..].find("**") {
                let stop = prefix.len() + end + 2;
                let syntax = &rest[..stop];
                if end > 0 && !syntax[prefix.len()..stop - 2].contains('\n') {
                    if let Some(token) = replace(syntax) {
                        out.push_str(&token);
                        rest = &rest[stop..];
                        continue;
                    }
                }
            }
        } else if let Some(prefix) = ["@_*", "@*"].iter().find(|p| rest.starts_with(*p)) {
            // A user group mention, `@*group*`.
            if let Some(end) = rest[prefix.len()..].find('*') {
                let stop = prefix.len() + end + 1;
                let syntax = &rest[..stop];
                if end > 0 && !syntax.contains('\n') {
                    if let Some(token) = replace(syntax) {
                        out.push_str(&token);
                        rest = &rest[stop..];
                        continue;
                    }
                }
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Org;
    impl Resolver for Org {
        fn user(&self, name: &str, id: Option<u64>) -> Option<(u64, String)> {
            (name == "Ada Lovelace" && id.is_none_or(|i| i == 7))
                .then(|| (7, "Ada Lovelace".into()))
        }
        fn channel(&self, name: &str) -> Option<(u64, String)> {
            (name == "general").then(|| (3, "general".into()))
        }
        fn user_group(&self, name: &str) -> Option<(u64, String)> {
            (name == "designers").then(|| (9, "designers".into()))
        }
    }

    #[test]
    fn user_group_mentions_render_as_zulip_renders_them() {
        let r = render_message(
            "@*designers*, quietly @_*designers*, not @*nobody*, and `@*designers*` in code",
            &Org,
        );
        assert_eq!(
            r.html,
            "<p><span class=\"user-group-mention\" data-user-group-id=\"9\">@designers</span>, \
             quietly <span class=\"user-group-mention silent\" data-user-group-id=\"9\">designers</span>, \
             not @<em>nobody</em>, and <code>@*designers*</code> in code</p>"
        );
        assert_eq!(r.mentioned_groups, vec![9]);
        assert!(r.mentioned.is_empty());
        // A user mention is still a user mention.
        let user = render_message("@**Ada Lovelace** @_**Ada Lovelace**", &Org);
        assert!(user.mentioned_groups.is_empty() && user.mentioned == vec![7]);
    }

    #[test]
    fn plain_prose_renders_as_the_full_parse_does() {
        // Fragments that sit on every edge of the plain path's rules.
        let fragments = [
            "a", "Zed", "7", "1.", "1)", "-", "--", "-- ", "- ", " ", "  ", "\t", "\n", "\n\n",
            ":", ": ", ":x", "\"", "'", "(", ")", "www.", "Www.", "w", "x.y", "?", "!", "/", ";",
            ",", ".", "* ", "=", "+ ", "a--b", " -- ", ":\t", "Q:\tWhy", "\n\t\"", "\"a",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        struct NoOne;
        impl Resolver for NoOne {
            fn user(&self, _: &str, _: Option<u64>) -> Option<(u64, String)> {
                None
            }
            fn channel(&self, _: &str) -> Option<(u64, String)> {
                None
            }
        }
        let mut plain = 0;
        for _ in 0..100_000 {
            let len = 1 + next() % 12;
            let text: String = (0..len)
                .map(|_| fragments[(next() % fragments.len() as u64) as usize])
                .collect();
            if let Some(html) = plain_paragraphs(&text) {
                plain += 1;
                assert_eq!(html, render_parsed(&text, &NoOne).html, "{text:?}");
            }
        }
        assert!(plain > 1_000, "only {plain} texts took the plain path");
        // Real prose, where installed: Debian's fortunes.
        let quotes = crate::bench::corpus::texts().unwrap_or_default();
        let mut plain_quotes = 0;
        for quote in quotes {
            if let Some(html) = plain_paragraphs(quote) {
                plain_quotes += 1;
                assert_eq!(html, render_parsed(quote, &NoOne).html, "{quote:?}");
            }
        }
        // Most of it is such prose (the rest has Markdown: `*`, `[`, `#`, indented verse).
        assert!(
            plain_quotes * 2 >= quotes.len(),
            "{plain_quotes} of {}",
            quotes.len()
        );
        let text = "He said \"no\".\n\t\t-- Anon\n\nNext: here";
        assert_eq!(
            plain_paragraphs(text).unwrap(),
            "<p>He said &quot;no&quot;.<br />\n-- Anon</p>\n<p>Next: here</p>"
        );
    }

    #[test]
    fn quote_and_spoiler_fences() {
        assert_eq!(
            render_message("before\n```quote\nhello **x** @**Ada Lovelace**\n\nagain\n```\nafter", &Org).html,
            "<p>before</p>\n<blockquote>\n<p>hello <strong>x</strong> <span class=\"user-mention\" data-user-id=\"7\">@Ada Lovelace</span></p>\n<p>again</p>\n</blockquote>\n<p>after</p>"
        );
        let spoiler = render_message(
            "````spoiler Title **t**\nsecret @**Ada Lovelace**\n```quote\nq\n```\n````",
            &Org,
        );
        assert_eq!(
            spoiler.html,
            "<div class=\"spoiler-block\"><div class=\"spoiler-header\">\n<p>Title <strong>t</strong></p>\n</div><div class=\"spoiler-content\" aria-hidden=\"true\">\n<p>secret <span class=\"user-mention\" data-user-id=\"7\">@Ada Lovelace</span></p>\n<blockquote>\n<p>q</p>\n</blockquote>\n</div></div>"
        );
        assert_eq!(spoiler.mentioned, vec![7]);
        // Other fences keep their content as code, Zulip fences inside them included.
        assert_eq!(
            render_message("```\n```quote\nno\n```", &Org).html,
            "<pre><code>```quote\nno\n</code></pre>"
        );
        // An unclosed quote runs to the end.
        assert_eq!(
            render_message("~~~quote\nopen", &Org).html,
            "<blockquote>\n<p>open</p>\n</blockquote>"
        );
    }

    #[test]
    fn quotes_nest_to_a_bound_on_a_small_stack() {
        // Unclosed quote fences, one a line, as deep as a message allows: before the bound each
        // was a call of its own, and this overflowed the 2 MiB stack of the server's threads.
        let text = "```quote\n".repeat(crate::commands::messages::MAX_MESSAGE_LENGTH / 9) + "deep";
        let html = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || render_message(&text, &Org).html)
            .unwrap()
            .join()
            .unwrap();
        // 32 quotes, then the rest is a code block holding the inner fences as text.
        assert_eq!(html.matches("<blockquote>").count(), MAX_QUOTE_DEPTH);
        assert_eq!(html.matches("<pre><code").count(), 1, "{html:.2000}");
        assert!(html.contains("```quote\n```quote\n"), "{html:.2000}");
        assert!(html.contains("deep"));
    }

    #[test]
    fn thousands_of_tokens_are_put_back_in_one_pass() {
        let text = ":+1: @**Ada Lovelace** ".repeat(2000);
        let html = render_message(&text, &Org).html;
        assert_eq!(html.matches("emoji-1f44d").count(), 2000);
        assert_eq!(html.matches("data-user-id=\"7\"").count(), 2000);
        assert!(!html.contains([OPEN, CLOSE, BLOCK]));
        // Text that only looks like a token is kept (the markers cannot come from a message:
        // they are taken out first).
        assert_eq!(
            substitute_tokens(&format!("a{OPEN}9{CLOSE}b{OPEN}x"), &["R".into()], &[]),
            format!("a{OPEN}9{CLOSE}b{OPEN}x")
        );
        assert_eq!(
            substitute_tokens(
                &format!("<p>{BLOCK}0{CLOSE}</p>\n<p>{BLOCK}1{CLOSE}</p>\n{OPEN}0{CLOSE}"),
                &["S".into(), "P".into()],
                &[1]
            ),
            "S\nPS"
        );
    }

    #[test]
    fn global_times() {
        assert_eq!(
            render_message("at <time:1746093600> and <time:2025-05-01T10:00:00+00:00>", &Org).html,
            "<p>at <time datetime=\"2025-05-01T10:00:00Z\">1746093600</time> and <time datetime=\"2025-05-01T10:00:00Z\">2025-05-01T10:00:00+00:00</time></p>"
        );
        assert_eq!(
            render_message("<time:soon>", &Org).html,
            "<p><span class=\"timestamp-error\">Invalid time format: soon</span></p>"
        );
        assert_eq!(time_syntax(1746093600), "<time:2025-05-01T10:00:00+00:00>");
        assert_eq!(
            render_message("`<time:1>`", &Org).html,
            "<p><code>&lt;time:1&gt;</code></p>"
        );
    }

    #[test]
    fn descriptions_are_markdown_with_html_escaped() {
        assert_eq!(render_description(""), "");
        assert_eq!(
            render_description("a <b> & c"),
            "<p>a &lt;b&gt; &amp; c</p>"
        );
        assert_eq!(
            render_description("one\n\n**two**\nlines @**Ada Lovelace**"),
            "<p>one</p>\n<p><strong>two</strong><br />\nlines @<strong>Ada Lovelace</strong></p>"
        );
    }

    #[test]
    fn markdown_with_zulip_syntax() {
        let r = render_message("Hi @**Ada Lovelace**, see #**general** and *this*", &Org);
        assert_eq!(
            r.html,
            "<p>Hi <span class=\"user-mention\" data-user-id=\"7\">@Ada Lovelace</span>, see \
             <a class=\"stream\" data-stream-id=\"3\" href=\"/#narrow/channel/3-general\">#general</a> \
             and <em>this</em></p>"
        );
        assert_eq!(r.mentioned, vec![7]);
        let topic = render_message("See #**general>plans 2**.", &Org);
        assert_eq!(
            topic.html,
            "<p>See <a class=\"stream-topic\" data-stream-id=\"3\" \
             href=\"/#narrow/channel/3-general/topic/plans.202\">#general &gt; plans 2</a>.</p>"
        );
        let silent = render_message("@_**Ada Lovelace|7**", &Org);
        assert!(silent.html.contains("user-mention silent"));
        assert!(silent.mentioned.is_empty());
        let emoji = render_message("Nice :octopus: :not_an_emoji: `:tada:`", &Org);
        assert_eq!(
            emoji.html,
            "<p>Nice <span aria-label=\"octopus\" class=\"emoji emoji-1f419\" role=\"img\" \
             title=\"octopus\">:octopus:</span> :not_an_emoji: <code>:tada:</code></p>"
        );
        let wildcard = render_message("@**all** and @**topic**", &Org);
        assert!(wildcard.stream_wildcard && wildcard.topic_wildcard);
    }

    #[test]
    fn uploaded_images_are_previewed_as_zulip_previews_them() {
        struct WithImages;
        impl Resolver for WithImages {
            fn user(&self, _: &str, _: Option<u64>) -> Option<(u64, String)> {
                None
            }
            fn channel(&self, _: &str) -> Option<(u64, String)> {
                None
            }
            fn upload_image(&self, path: &str) -> Option<UploadPreview> {
                let animated = path.ends_with(".gif");
                path.starts_with("2/ab/").then(|| UploadPreview {
                    width: 128,
                    height: if animated { 56 } else { 128 },
                    content_type: if animated { "image/gif" } else { "image/png" }.into(),
                    animated,
                    thumbnail: if animated {
                        "840x560-anim.webp"
                    } else {
                        "840x560.webp"
                    }
                    .into(),
                })
            }
        }
        let render = |text: &str| render_message(text, &WithImages).html;
        // Zulip's own test case (`test_markdown_thumbnail.py`), byte for byte.
        assert_eq!(
            render("[image](/user_uploads/2/ab/x/image.png)"),
            "<p><a href=\"/user_uploads/2/ab/x/image.png\">image</a></p>\n\
             <div class=\"message_inline_image\"><a href=\"/user_uploads/2/ab/x/image.png\" \
             title=\"image\"><img data-original-content-type=\"image/png\" \
             data-original-dimensions=\"128x128\" \
             src=\"/user_uploads/thumbnail/2/ab/x/image.png/840x560.webp\"></a></div>"
        );
        // Two images and an animation, then more text: the previews follow their paragraph,
        // in link order, with no newline between them or after them.
        assert_eq!(
            render("[a](/user_uploads/2/ab/a.png) and [b `x`](/user_uploads/2/ab/b.gif)\n\nnext"),
            "<p><a href=\"/user_uploads/2/ab/a.png\">a</a> and <a href=\"/user_uploads/2/ab/b.gif\">b <code>x</code></a></p>\n\
             <div class=\"message_inline_image\"><a href=\"/user_uploads/2/ab/a.png\" title=\"a\">\
             <img data-original-content-type=\"image/png\" data-original-dimensions=\"128x128\" \
             src=\"/user_uploads/thumbnail/2/ab/a.png/840x560.webp\"></a></div>\
             <div class=\"message_inline_image\"><a href=\"/user_uploads/2/ab/b.gif\" title=\"b x\">\
             <img data-animated=\"true\" data-original-content-type=\"image/gif\" \
             data-original-dimensions=\"128x56\" \
             src=\"/user_uploads/thumbnail/2/ab/b.gif/840x560-anim.webp\"></a></div>\
             <p>next</p>"
        );
        // Not previewed: a file that is no image, links in quotes and code, and past 24.
        for text in [
            "[doc](/user_uploads/2/zz/doc.pdf)",
            "> [q](/user_uploads/2/ab/q.png)",
            "`[c](/user_uploads/2/ab/c.png)`",
            "```\n[c](/user_uploads/2/ab/c.png)\n```",
        ] {
            assert!(!render(text).contains("message_inline_image"), "{text}");
        }
        let many: Vec<String> = (0..30)
            .map(|i| format!("[{i}](/user_uploads/2/ab/{i}.png)"))
            .collect();
        assert_eq!(
            render(&many.join(" "))
                .matches("message_inline_image")
                .count(),
            24
        );
        // Inside a list, the preview follows the whole list.
        assert!(render("- [l](/user_uploads/2/ab/l.png)\n- two").contains("</ul>\n<div class"));
    }

    #[test]
    fn code_and_html_stay_inert() {
        let r = render_message(
            "`@**Ada Lovelace**`\n```\n@**Ada Lovelace**\n```\n<script>x</script>",
            &Org,
        );
        assert!(r.mentioned.is_empty(), "{}", r.html);
        assert!(
            r.html.contains("<code>@**Ada Lovelace**</code>"),
            "{}",
            r.html
        );
        assert!(!r.html.contains("<script>"), "{}", r.html);
        assert!(r.html.contains("&lt;script&gt;"), "{}", r.html);
        // Unknown names stay as typed.
        let r = render_message("@**Nobody**", &Org);
        assert!(r.mentioned.is_empty());
        assert!(r.html.contains("@<strong>Nobody</strong>"), "{}", r.html);
    }
}
