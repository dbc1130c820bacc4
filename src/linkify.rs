//! Linkifiers: RFC 6570 URL templates, Zulip's reverse templates, and finding a linkifier's
//! matches in text the way Zulip's Markdown does.
//!
//! A linkifier's pattern only matches at a boundary: after the start of the text, white space
//! or an opening delimiter, and before the end of the text or a character that is neither a
//! letter nor a digit (Zulip's `prepare_linkifier_pattern`).

use regex::Regex;
use std::collections::BTreeMap;

/// One expression of a URL template: `{op var1,var2:3,var3*}`.
#[derive(Debug, Clone, PartialEq)]
struct Expression {
    op: Option<char>,
    vars: Vec<VarSpec>,
}

#[derive(Debug, Clone, PartialEq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Expression(Expression),
}

/// A parsed RFC 6570 URL template (levels 1 to 4).
#[derive(Debug, Clone, PartialEq)]
pub struct UrlTemplate {
    parts: Vec<Part>,
}

const OPERATORS: &[char] = &['+', '#', '.', '/', ';', '?', '&'];

fn valid_varname(name: &str) -> bool {
    let bytes = name.as_bytes();
    if name.is_empty() || name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = |b: Option<&u8>| b.is_some_and(u8::is_ascii_hexdigit);
                if !(hex(bytes.get(i + 1)) && hex(bytes.get(i + 2))) {
                    return false;
                }
                i += 3;
                continue;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

impl UrlTemplate {
    /// Parses a template; `None` when it is not a valid RFC 6570 template.
    pub fn parse(text: &str) -> Option<UrlTemplate> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => return None,
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(rest[..i].to_owned()));
                    }
                    let body_start = i + 1;
                    let end = rest[body_start..].find(['{', '}'])? + body_start;
                    if rest.as_bytes()[end] != b'}' {
                        return None;
                    }
                    parts.push(Part::Expression(parse_expression(&rest[body_start..end])?));
                    rest = &rest[end + 1..];
                }
            }
        }
        Some(UrlTemplate { parts })
    }

    /// Every variable name, in order of appearance.
    pub fn variable_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for part in &self.parts {
            if let Part::Expression(e) = part {
                for var in &e.vars {
                    if !names.contains(&var.name.as_str()) {
                        names.push(&var.name);
                    }
                }
            }
        }
        names
    }

    /// Expands with string values; absent variables are left out, as RFC 6570 says.
    pub fn expand(&self, values: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => encode_literal(text, &mut out),
                Part::Expression(e) => expand_expression(e, values, &mut out),
            }
        }
        out
    }
}

fn parse_expression(body: &str) -> Option<Expression> {
    let (op, list) = match body.chars().next() {
        Some(c) if OPERATORS.contains(&c) => (Some(c), &body[1..]),
        // Reserved for future extensions: not valid templates.
        Some('=' | ',' | '!' | '@' | '|') => return None,
        _ => (None, body),
    };
    let mut vars = Vec::new();
    for spec in list.split(',') {
        let (name, prefix) = if let Some(name) = spec.strip_suffix('*') {
            (name, None)
        } else if let Some((name, length)) = spec.split_once(':') {
            let n: usize = length.parse().ok().filter(|n| (1..10_000).contains(n))?;
            if length.starts_with('0') {
                return None;
            }
            (name, Some(n))
        } else {
            (spec, None)
        };
        if !valid_varname(name) {
            return None;
        }
        vars.push(VarSpec {
            name: name.to_owned(),
            prefix,
        });
    }
    Some(Expression { op, vars })
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

fn is_reserved(c: char) -> bool {
    matches!(
        c,
        ':' | '/'
            | '?'
            | '#'
            | '['
            | ']'
            | '@'
            | '!'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | '+'
            | ','
            | ';'
            | '='
    )
}

fn percent_encode(c: char, out: &mut String) {
    let mut buf = [0u8; 4];
    for byte in c.encode_utf8(&mut buf).bytes() {
        out.push_str(&format!("%{byte:02X}"));
    }
}

/// Whether `text` starts with a `%XX` triplet.
fn starts_with_triplet(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 3 && b[0] == b'%' && b[1].is_ascii_hexdigit() && b[2].is_ascii_hexdigit()
}

/// Encodes `text`, keeping unreserved characters (and, with `reserved`, reserved characters
/// and existing `%XX` triplets).
fn encode(text: &str, reserved: bool, out: &mut String) {
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        if reserved && starts_with_triplet(&text[i..]) {
            out.push_str(&text[i..i + 3]);
            chars.nth(1);
        } else if is_unreserved(c) || (reserved && is_reserved(c)) {
            out.push(c);
        } else {
            percent_encode(c, out);
        }
    }
}

/// Literal parts keep what may stand in a URL and encode the rest (a lone `%` becomes `%25`).
fn encode_literal(text: &str, out: &mut String) {
    encode(text, true, out);
}

fn expand_expression(e: &Expression, values: &BTreeMap<String, String>, out: &mut String) {
    let (first, sep, named, if_empty, reserved) = match e.op {
        None => ("", ",", false, "", false),
        Some('+') => ("", ",", false, "", true),
        Some('#') => ("#", ",", false, "", true),
        Some('.') => (".", ".", false, "", false),
        Some('/') => ("/", "/", false, "", false),
        Some(';') => (";", ";", true, "", false),
        Some('?') => ("?", "&", true, "=", false),
        _ => ("&", "&", true, "=", false),
    };
    let mut wrote_any = false;
    for var in &e.vars {
        let Some(value) = values.get(&var.name) else {
            continue;
        };
        out.push_str(if wrote_any { sep } else { first });
        wrote_any = true;
        let value: String = match var.prefix {
            Some(n) => value.chars().take(n).collect(),
            None => value.clone(),
        };
        if named {
            out.push_str(&var.name);
            if value.is_empty() {
                out.push_str(if_empty);
                continue;
            }
            out.push('=');
        }
        encode(&value, reserved, out);
    }
}

/// A reverse template (`{name}` placeholders, `{{` and `}}` for braces) filled from named
/// values; the error is Zulip's message.
pub fn expand_reverse_template(
    template: &str,
    values: &BTreeMap<String, String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => {
                            return Err(
                                "Invalid auto-conversion field: missing '}' character.".into()
                            )
                        }
                    }
                }
                if name.is_empty() {
                    return Err("Invalid auto-conversion field: empty field name.".into());
                }
                let value = values.get(&name).ok_or_else(|| {
                    format!(
                        "Group '{name}' in auto-conversion field is not present in linkifier pattern."
                    )
                })?;
                out.push_str(value);
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// A linkifier's pattern wrapped with Zulip's boundaries.
pub fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!(
        r#"(?P<linkifier_before_match>^|\s|\x{{0085}}|\pZ|['"(,:<])(?P<linkifier_actual_match>{pattern})(?P<linkifier_after_match>$|[^\pL\pN])"#
    ))
}

/// A linkifier ready to apply.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub regex: Regex,
    pub template: UrlTemplate,
}

/// Where a linkifier matched: the byte range of the matched text and the link it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub url: String,
}

/// The matches of every linkifier in `text`: earlier linkifiers first, and no match overlapping
/// one already taken; sorted by position.
pub fn find_all(linkifiers: &[&Compiled], text: &str) -> Vec<Found> {
    let mut taken: Vec<Found> = Vec::new();
    for linkifier in linkifiers {
        let mut at = 0;
        while at <= text.len() {
            let Some(caps) = linkifier.regex.captures_at(text, at) else {
                break;
            };
            let Some(actual) = caps.name("linkifier_actual_match") else {
                break;
            };
            // The next search starts right after the matched text, so that the character
            // after it can open the next match.
            at = if actual.end() > at {
                actual.end()
            } else {
                at + text[at..].chars().next().map_or(1, char::len_utf8)
            };
            let values: BTreeMap<String, String> = linkifier
                .regex
                .capture_names()
                .flatten()
                .filter(|n| !n.starts_with("linkifier_"))
                .filter_map(|n| caps.name(n).map(|m| (n.to_owned(), m.as_str().to_owned())))
                .collect();
            let found = Found {
                start: actual.start(),
                end: actual.end(),
                url: linkifier.template.expand(&values),
            };
            let overlaps = taken
                .iter()
                .any(|t| found.start < t.end && t.start < found.end);
            if !overlaps && found.start < found.end {
                taken.push(found);
            }
        }
    }
    taken.sort_by_key(|f| f.start);
    taken
}

/// Zulip's `topic_links`: linkifier matches (earlier linkifiers first), then plain http(s)
/// URLs, never overlapping, in order of position, as `(text, url)`.
pub fn topic_links(linkifiers: &[&Compiled], topic: &str) -> Vec<(String, String)> {
    // (precedence, start, end, url): each linkifier alone, then the URLs.
    let mut candidates: Vec<(usize, usize, usize, String)> = Vec::new();
    for (precedence, linkifier) in linkifiers.iter().enumerate() {
        for found in find_all(&[*linkifier], topic) {
            candidates.push((precedence, found.start, found.end, found.url));
        }
    }
    let mut at = 0;
    for piece in topic.split([' ', '!', ';', ')', ',', '\'', '"']) {
        let start = at;
        at += piece.len() + 1;
        let lower = piece.to_ascii_lowercase();
        if (lower.starts_with("http://") || lower.starts_with("https://")) && piece.len() > 8 {
            candidates.push((
                linkifiers.len(),
                start,
                start + piece.len(),
                piece.to_owned(),
            ));
        }
    }
    candidates.sort_by_key(|(precedence, start, _, _)| (*precedence, *start));
    let mut taken: Vec<(usize, usize, String)> = Vec::new();
    for (_, start, end, url) in candidates {
        if !taken.iter().any(|(s, e, _)| start < *e && *s < end) {
            taken.push((start, end, url));
        }
    }
    taken.sort_by_key(|(start, _, _)| *start);
    taken
        .into_iter()
        .map(|(start, end, url)| (topic[start..end].to_owned(), url))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn templates_parse_like_rfc_6570() {
        for valid in [
            "https://example.com/{foo}{bars}",
            "https://example.com/{?foo*}",
            "{+foo,bar}",
            "{/foo,bar,baz}",
            "{.domain}",
            "{#fragment:5}",
            "%%",
            "%%(foo)s",
            "foo[bar]",
            "$not_a_url$",
        ] {
            assert!(UrlTemplate::parse(valid).is_some(), "{valid}");
        }
        for invalid in [
            "https://example.com/{foo",
            "{{}",
            "{//foo}",
            "{bar++}",
            "a}b",
            "{}",
        ] {
            assert!(UrlTemplate::parse(invalid).is_none(), "{invalid}");
        }
        let t = UrlTemplate::parse("https://x/{a}/{+b}{?c,d}").unwrap();
        assert_eq!(t.variable_names(), vec!["a", "b", "c", "d"]);
    }

    #[test]
    fn templates_expand_with_each_operator() {
        let v = values(&[("id", "a b/c"), ("x", "1")]);
        let expand = |t: &str| UrlTemplate::parse(t).unwrap().expand(&v);
        assert_eq!(
            expand("https://t.example/{id}"),
            "https://t.example/a%20b%2Fc"
        );
        assert_eq!(
            expand("https://t.example/{+id}"),
            "https://t.example/a%20b/c"
        );
        assert_eq!(
            expand("https://t.example{/x,id}"),
            "https://t.example/1/a%20b%2Fc"
        );
        assert_eq!(
            expand("https://t.example/p{?x,missing}"),
            "https://t.example/p?x=1"
        );
        assert_eq!(expand("https://t.example/{#x}"), "https://t.example/#1");
        assert_eq!(expand("https://t.example/{id:1}"), "https://t.example/a");
        assert_eq!(
            UrlTemplate::parse("https://example.com/A%20Test/%%%ba/{id}")
                .unwrap()
                .expand(&values(&[("id", "123")])),
            "https://example.com/A%20Test/%25%25%ba/123"
        );
    }

    #[test]
    fn reverse_templates() {
        let v = values(&[("id", "7")]);
        assert_eq!(
            expand_reverse_template("#{id} {{x}}", &v).unwrap(),
            "#7 {x}"
        );
        assert_eq!(
            expand_reverse_template("#{id", &v).unwrap_err(),
            "Invalid auto-conversion field: missing '}' character."
        );
        assert_eq!(
            expand_reverse_template("#{}", &v).unwrap_err(),
            "Invalid auto-conversion field: empty field name."
        );
        assert_eq!(
            expand_reverse_template("#{nope}", &v).unwrap_err(),
            "Group 'nope' in auto-conversion field is not present in linkifier pattern."
        );
    }

    #[test]
    fn matches_respect_zulip_boundaries_and_order() {
        let trac = Compiled {
            regex: compile(r"#(?P<id>[0-9]{2,8})").unwrap(),
            template: UrlTemplate::parse("https://trac.example.com/ticket/{id}").unwrap(),
        };
        let linked = |text: &str| -> Vec<String> {
            let found = find_all(&[&trac], text);
            found
                .iter()
                .map(|f| text[f.start..f.end].to_owned())
                .collect()
        };
        for (text, expected) in [
            ("Hello #123 World", vec!["#123"]),
            ("(#123)", vec!["#123"]),
            ("\"#123\"", vec!["#123"]),
            ("#123@", vec!["#123"]),
            ("#12 #34", vec!["#12", "#34"]),
            ("Hello #123World", vec![]),
            ("Hello#123 World", vec![]),
            (")#123(", vec![]),
            ("##123", vec![]),
        ] {
            assert_eq!(linked(text), expected, "{text}");
        }
        let found = find_all(&[&trac], "see #224");
        assert_eq!(found[0].url, "https://trac.example.com/ticket/224");
        // An earlier linkifier wins where two would match.
        let other = Compiled {
            regex: compile(r"#(?P<id>[0-9]+)").unwrap(),
            template: UrlTemplate::parse("https://other.example/{id}").unwrap(),
        };
        let found = find_all(&[&other, &trac], "#555");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].url, "https://other.example/555");
        // Topics: linkifier matches and plain URLs, by position.
        assert_eq!(
            topic_links(&[&trac], "#444 https://google.com"),
            vec![
                (
                    "#444".to_owned(),
                    "https://trac.example.com/ticket/444".to_owned()
                ),
                (
                    "https://google.com".to_owned(),
                    "https://google.com".to_owned()
                ),
            ]
        );
        assert!(topic_links(&[&trac], "nothing here").is_empty());
    }
}
