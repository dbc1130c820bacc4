//! Rendering of user-supplied text to HTML. Until the Markdown processor lands with messages,
//! text is rendered as escaped paragraphs, which is what Zulip produces for plain prose.

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

/// Plain text as HTML paragraphs (blank lines separate paragraphs, single newlines become
/// `<br>`); the empty string stays empty.
pub fn render_paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| format!("<p>{}</p>", escape_html(p).replace('\n', "<br>\n")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_wraps() {
        assert_eq!(render_paragraphs(""), "");
        assert_eq!(render_paragraphs("a <b> & c"), "<p>a &lt;b&gt; &amp; c</p>");
        assert_eq!(
            render_paragraphs("one\n\ntwo\nlines"),
            "<p>one</p>\n<p>two<br>\nlines</p>"
        );
    }
}
