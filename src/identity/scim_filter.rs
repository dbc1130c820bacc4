//! SCIM filters (RFC 7644, section 3.4.2.2): parsed into a tree and evaluated against a
//! resource's JSON, so every attribute a resource shows can be filtered on (Zulip maps three).
//!
//! Bounded: at most [`MAX_FILTER_CHARS`] characters and [`MAX_DEPTH`] levels of nesting; a filter
//! that breaks the grammar or the bounds is an `invalidFilter` error, never a panic.

use serde_json::Value;

/// Longest filter taken.
pub const MAX_FILTER_CHARS: usize = 4096;
/// Deepest nesting of parentheses, `not` and value paths.
pub const MAX_DEPTH: usize = 32;

/// A parsed filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    /// `attr pr`
    Present(Vec<String>),
    /// `attr op value`
    Compare(Vec<String>, Op, Value),
    /// `attr[filter]`: an element of the multi-valued `attr` matches `filter`.
    ValuePath(Vec<String>, Box<Filter>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Co,
    Sw,
    Ew,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    OpenBracket,
    CloseBracket,
    Word(String),
    Text(String),
}

fn tokens(filter: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = filter.char_indices().peekable();
    while let Some(&(at, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                chars.next();
                out.push(Token::Open);
            }
            ')' => {
                chars.next();
                out.push(Token::Close);
            }
            '[' => {
                chars.next();
                out.push(Token::OpenBracket);
            }
            ']' => {
                chars.next();
                out.push(Token::CloseBracket);
            }
            '"' => {
                // A JSON string: find its closing quote (not escaped), then let serde read it.
                chars.next();
                let mut escaped = false;
                let mut end = None;
                for (i, c) in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        end = Some(i);
                        break;
                    }
                }
                let end = end.ok_or("a string is not closed")?;
                let text: String = serde_json::from_str(&filter[at..=end])
                    .map_err(|_| "a string is not valid".to_owned())?;
                out.push(Token::Text(text));
            }
            _ => {
                let mut word = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '"') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                out.push(Token::Word(word));
            }
        }
    }
    Ok(out)
}

/// Parses `filter`; `Err` says why it is not one.
pub fn parse(filter: &str) -> Result<Filter, String> {
    if filter.chars().count() > MAX_FILTER_CHARS {
        return Err(format!("longer than {MAX_FILTER_CHARS} characters"));
    }
    let tokens = tokens(filter)?;
    let mut parser = Parser { tokens, at: 0 };
    let tree = parser.or(0)?;
    match parser.tokens.get(parser.at) {
        None => Ok(tree),
        Some(token) => Err(format!("unexpected {}", describe(token))),
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Open => "'('".into(),
        Token::Close => "')'".into(),
        Token::OpenBracket => "'['".into(),
        Token::CloseBracket => "']'".into(),
        Token::Word(w) => format!("'{w}'"),
        Token::Text(t) => format!("\"{t}\""),
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn expect(&mut self, wanted: Token) -> Result<(), String> {
        match self.next() {
            Some(token) if token == wanted => Ok(()),
            Some(token) => Err(format!(
                "expected {} but found {}",
                describe(&wanted),
                describe(&token)
            )),
            None => Err(format!("expected {} at the end", describe(&wanted))),
        }
    }

    fn or(&mut self, depth: usize) -> Result<Filter, String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        let mut left = self.and(depth)?;
        while self.peek_word("or") {
            self.at += 1;
            let right = self.and(depth)?;
            left = Filter::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self, depth: usize) -> Result<Filter, String> {
        let mut left = self.unary(depth)?;
        while self.peek_word("and") {
            self.at += 1;
            let right = self.unary(depth)?;
            left = Filter::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Filter, String> {
        if self.peek_word("not") {
            self.at += 1;
            self.expect(Token::Open)?;
            let inner = self.or(depth + 1)?;
            self.expect(Token::Close)?;
            return Ok(Filter::Not(Box::new(inner)));
        }
        if self.tokens.get(self.at) == Some(&Token::Open) {
            self.at += 1;
            let inner = self.or(depth + 1)?;
            self.expect(Token::Close)?;
            return Ok(inner);
        }
        let path = match self.next() {
            Some(Token::Word(word)) => attribute_path(&word)?,
            Some(token) => {
                return Err(format!(
                    "expected an attribute but found {}",
                    describe(&token)
                ))
            }
            None => return Err("expected an attribute at the end".into()),
        };
        if self.tokens.get(self.at) == Some(&Token::OpenBracket) {
            self.at += 1;
            let inner = self.or(depth + 1)?;
            self.expect(Token::CloseBracket)?;
            return Ok(Filter::ValuePath(path, Box::new(inner)));
        }
        let op = match self.next() {
            Some(Token::Word(op)) => op.to_ascii_lowercase(),
            Some(token) => {
                return Err(format!(
                    "expected an operator but found {}",
                    describe(&token)
                ))
            }
            None => return Err("expected an operator at the end".into()),
        };
        let op = match op.as_str() {
            "pr" => return Ok(Filter::Present(path)),
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "co" => Op::Co,
            "sw" => Op::Sw,
            "ew" => Op::Ew,
            "gt" => Op::Gt,
            "ge" => Op::Ge,
            "lt" => Op::Lt,
            "le" => Op::Le,
            other => return Err(format!("unknown operator '{other}'")),
        };
        let value = match self.next() {
            Some(Token::Text(text)) => Value::String(text),
            Some(Token::Word(word)) => match word.to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => serde_json::from_str::<serde_json::Number>(&word)
                    .map(Value::Number)
                    .map_err(|_| format!("'{word}' is not a value"))?,
            },
            Some(token) => return Err(format!("expected a value but found {}", describe(&token))),
            None => return Err("expected a value at the end".into()),
        };
        Ok(Filter::Compare(path, op, value))
    }
}

/// The schemas whose URN may come before an attribute's name.
const CORE_SCHEMAS: [&str; 2] = [
    "urn:ietf:params:scim:schemas:core:2.0:User",
    "urn:ietf:params:scim:schemas:core:2.0:Group",
];

/// `userName`, `name.formatted`, or with its schema's URN first
/// (`urn:ietf:params:scim:schemas:core:2.0:User:userName`): the attribute names, in order.
pub fn attribute_path(word: &str) -> Result<Vec<String>, String> {
    // Only the core schemas' own prefixes: an extension's attribute is another attribute.
    let lower = word.to_ascii_lowercase();
    let bare = if lower.starts_with("urn:") {
        CORE_SCHEMAS
            .iter()
            .find(|urn| lower.starts_with(&format!("{}:", urn.to_ascii_lowercase())))
            .map(|urn| &word[urn.len() + 1..])
            .ok_or_else(|| format!("'{word}' is not an attribute of this server"))?
    } else {
        word
    };
    let parts: Vec<String> = bare.split('.').map(str::to_owned).collect();
    let valid = |p: &String| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '$')
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$')
    };
    if parts.is_empty() || parts.len() > 2 || !parts.iter().all(valid) {
        return Err(format!("'{word}' is not an attribute"));
    }
    Ok(parts)
}

/// The value of `key` in `object`, by a name compared without case (SCIM's attribute names).
fn field<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    object
        .as_object()?
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

/// Every value `path` reaches in `resource` (several through a multi-valued attribute; the
/// `value` of complex elements when the path stops at them).
fn values<'a>(resource: &'a Value, path: &[String]) -> Vec<&'a Value> {
    let mut current = vec![resource];
    for name in path {
        let mut next = Vec::new();
        for value in current {
            let elements: Vec<&Value> = match value {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            for element in elements {
                match field(element, name) {
                    Some(Value::Array(items)) => next.extend(items.iter()),
                    Some(found) => next.push(found),
                    None => {}
                }
            }
        }
        current = next;
    }
    current
        .into_iter()
        .map(|v| {
            if v.is_object() {
                field(v, "value").unwrap_or(v)
            } else {
                v
            }
        })
        .collect()
}

fn compare(actual: &Value, op: Op, wanted: &Value) -> bool {
    use std::cmp::Ordering;
    let order = match (actual, wanted) {
        (Value::String(a), Value::String(b)) => {
            let (a, b) = (a.to_lowercase(), b.to_lowercase());
            match op {
                Op::Co => return a.contains(&b),
                Op::Sw => return a.starts_with(&b),
                Op::Ew => return a.ends_with(&b),
                _ => a.cmp(&b),
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            match a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(a, b)| a.partial_cmp(&b))
            {
                Some(order) => order,
                None => return false,
            }
        }
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => return op == Op::Ne,
    };
    match op {
        Op::Eq => order == Ordering::Equal,
        Op::Ne => order != Ordering::Equal,
        Op::Gt => order == Ordering::Greater,
        Op::Ge => order != Ordering::Less,
        Op::Lt => order == Ordering::Less,
        Op::Le => order != Ordering::Greater,
        Op::Co | Op::Sw | Op::Ew => false,
    }
}

/// Whether `resource` matches `filter`.
pub fn matches(filter: &Filter, resource: &Value) -> bool {
    match filter {
        Filter::And(a, b) => matches(a, resource) && matches(b, resource),
        Filter::Or(a, b) => matches(a, resource) || matches(b, resource),
        Filter::Not(inner) => !matches(inner, resource),
        Filter::Present(path) => values(resource, path).iter().any(|v| match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => true,
        }),
        Filter::Compare(path, op, wanted) => {
            let found = values(resource, path);
            if found.is_empty() {
                // Absent: equal to null, different from anything else.
                return match op {
                    Op::Eq => wanted.is_null(),
                    Op::Ne => !wanted.is_null(),
                    _ => false,
                };
            }
            if *op == Op::Ne {
                found.iter().all(|v| compare(v, *op, wanted))
            } else {
                found.iter().any(|v| compare(v, *op, wanted))
            }
        }
        Filter::ValuePath(path, inner) => {
            let mut elements = Vec::new();
            let mut current = vec![resource];
            for name in path {
                current = current.into_iter().filter_map(|v| field(v, name)).collect();
            }
            for value in current {
                match value {
                    Value::Array(items) => elements.extend(items.iter()),
                    other => elements.push(other),
                }
            }
            elements.iter().any(|element| matches(inner, element))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> Value {
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "id": "10",
            "userName": "Hamlet@Zulip.com",
            "name": {"formatted": "King Hamlet"},
            "active": true,
            "emails": [{"value": "hamlet@zulip.com", "type": "work", "primary": true}],
            "meta": {"created": "2026-01-02T03:04:05Z"},
        })
    }

    #[test]
    fn filters_match_as_rfc_7644_says() {
        let user = user();
        for (filter, expected) in [
            (r#"userName eq "hamlet@zulip.com""#, true),
            (r#"USERNAME Eq "HAMLET@ZULIP.COM""#, true),
            (
                r#"urn:ietf:params:scim:schemas:core:2.0:User:userName sw "ham""#,
                true,
            ),
            (r#"userName ew "@zulip.com" and active eq true"#, true),
            (
                r#"userName ew "@example.com" or name.formatted co "king""#,
                true,
            ),
            (r#"not (active eq true)"#, false),
            (
                r#"active eq false or (id eq "10" and not(userName pr))"#,
                false,
            ),
            (r#"emails[type eq "work" and value co "hamlet"]"#, true),
            (r#"emails[type eq "home"]"#, false),
            (r#"emails.value eq "hamlet@zulip.com""#, true),
            (r#"emails eq "hamlet@zulip.com""#, true),
            (r#"title pr"#, false),
            (r#"title eq null"#, true),
            (r#"title ne "x""#, true),
            (r#"meta.created gt "2026-01-01T00:00:00Z""#, true),
            (r#"meta.created lt "2026-01-01T00:00:00Z""#, false),
            (
                r#"id eq "10" and name.formatted eq "King \"Hamlet\"""#,
                false,
            ),
        ] {
            let parsed = parse(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
            assert_eq!(matches(&parsed, &user), expected, "{filter}");
        }
    }

    #[test]
    fn a_broken_filter_says_why_and_nothing_panics() {
        for (filter, why) in [
            ("", "expected an attribute at the end"),
            ("userName", "expected an operator at the end"),
            (r#"userName eq"#, "expected a value at the end"),
            (r#"userName is "x""#, "unknown operator 'is'"),
            (r#"userName eq "x" and"#, "expected an attribute at the end"),
            (r#"(userName eq "x""#, "expected ')' at the end"),
            (r#"userName eq "x"#, "a string is not closed"),
            (r#"userName eq x"#, "'x' is not a value"),
            (r#"user name eq "x""#, "unknown operator 'name'"),
            (r#"userName eq "x" )"#, "unexpected ')'"),
            (r#"1st eq "x""#, "'1st' is not an attribute"),
            (
                r#"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager pr"#,
                "'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager' is not an \
                 attribute of this server",
            ),
        ] {
            assert_eq!(parse(filter), Err(why.to_owned()), "{filter}");
        }
        let deep = format!("{}userName pr{}", "(".repeat(40), ")".repeat(40));
        assert!(parse(&deep).unwrap_err().contains("nested deeper"));
        assert!(parse(&"a".repeat(5000))
            .unwrap_err()
            .contains("longer than"));
    }
}
