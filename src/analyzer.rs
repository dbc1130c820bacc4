//! How text becomes searchable, for the word index (`projections::search`), for checking one
//! message against a `search:` narrow, and for the highlights of a search's results.
//!
//! - **Words** are runs of letters and digits, lowercased. A word written in camel case
//!   (`getUserName`, `HTTPServer`) also counts as its parts, so code is found by them.
//! - **Stems**: a word matches every word with the same English Snowball stem ("deploying"
//!   finds "deploy" and "deployed"), as Zulip's full-text search (PostgreSQL's English
//!   configuration) does.
//! - **Stop words**: Zulip's list (the common English words of NLTK's list and the single
//!   letters b–z) are not searchable by themselves: a query drops them, and a query of only
//!   stop words finds nothing, as in Zulip. They are indexed apart, for the quoted phrases
//!   they stand in ("to be or not to be", which Zulip cannot find).
//! - **Chinese, Japanese and Korean** have no spaces between words: a run of their characters is
//!   indexed as its characters and its pairs of neighbouring characters (the bigrams of Lucene's
//!   CJK analyzer), and a query's run matches where the text holds it.
//! - **Queries**: every part must match. A quoted phrase matches its words in order, next to
//!   each other, unstemmed (Zulip's phrase rule). A word joined by punctuation without spaces
//!   (`sess.opts`, `example.com/path`, `v2.0`) matches where its words stand joined the same way;
//!   each of its words alone finds it too. The last word typed, when the query does not end in
//!   a space, also matches as the start of a word (`deplo` finds "deployment"), so results come
//!   while typing; a number is always matched whole.

use std::borrow::Cow;

/// Zulip's English stop words of more than one letter (its `zulip_english.stop`), sorted.
const LONGER_STOP_WORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Zulip's English stop words (its `zulip_english.stop`): not indexed, dropped from queries.
pub fn is_stop_word(lower: &str) -> bool {
    if lower.len() == 1 {
        // Every single letter but "a" and "i" is on the list, and those two are too.
        return lower.as_bytes()[0].is_ascii_lowercase();
    }
    LONGER_STOP_WORDS.binary_search(&lower).is_ok()
}

/// Every stop word, as `/register`'s `stop_words` lists them: the single letters, then the
/// longer words.
pub fn stop_words() -> Vec<&'static str> {
    const LETTERS: [&str; 26] = [
        "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r",
        "s", "t", "u", "v", "w", "x", "y", "z",
    ];
    LETTERS.iter().chain(LONGER_STOP_WORDS).copied().collect()
}

/// Whether `c` is written without spaces between words: Han (with its radicals, compatibility
/// forms and extensions), Hiragana, Katakana (with the half-width forms), Bopomofo, Hangul and
/// the iteration marks.
pub fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x1100..=0x11FF
            | 0x2E80..=0x2FDF
            | 0x3005..=0x3007
            | 0x3021..=0x3029
            | 0x3040..=0x30FF
            | 0x3100..=0x318F
            | 0x31A0..=0x31FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA960..=0xA97F
            | 0xAC00..=0xD7FF
            | 0xF900..=0xFAFF
            | 0xFF66..=0xFFDC
            | 0x20000..=0x3134F
    )
}

/// What a token is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Letters and digits of scripts written with spaces.
    Word,
    /// Chinese, Japanese or Korean characters.
    Cjk,
}

/// One run of word characters in a text, as written (not lowercased).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    pub text: &'a str,
    /// Byte offset in the text.
    pub start: usize,
    pub kind: Kind,
}

impl Token<'_> {
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

fn kind_of(c: char) -> Option<Kind> {
    if is_cjk(c) {
        Some(Kind::Cjk)
    } else if c.is_alphanumeric() {
        Some(Kind::Word)
    } else {
        None
    }
}

/// The tokens of `text`, in order.
pub fn tokens(text: &str) -> impl Iterator<Item = Token<'_>> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, kind) = loop {
            let (at, c) = chars.next()?;
            if let Some(kind) = kind_of(c) {
                break (at, kind);
            }
        };
        let mut end = text.len();
        while let Some(&(at, c)) = chars.peek() {
            if kind_of(c) != Some(kind) {
                end = at;
                break;
            }
            chars.next();
        }
        Some(Token {
            text: &text[start..end],
            start,
            kind,
        })
    })
}

/// The parts of a word written in camel case (`getUserName`: get, User, Name; `HTTPServer`:
/// HTTP, Server), or nothing when it has fewer than two. Digits stay with the letters before
/// them.
pub fn camel_parts(word: &str) -> Vec<&str> {
    // Most words have no capital past their first letter: no allocation for them.
    let mut rest = word.chars();
    rest.next();
    if !rest.any(char::is_uppercase) {
        return Vec::new();
    }
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut cuts = Vec::new();
    for k in 1..chars.len() {
        let (prev, here) = (chars[k - 1].1, chars[k].1);
        let next_lower = chars.get(k + 1).is_some_and(|(_, c)| c.is_lowercase());
        let starts_part = here.is_uppercase()
            && (prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower));
        if starts_part {
            cuts.push(chars[k].0);
        }
    }
    if cuts.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for cut in cuts {
        parts.push(&word[from..cut]);
        from = cut;
    }
    parts.push(&word[from..]);
    parts
}

/// `word` lowercased, without allocating for the usual short ASCII word.
pub fn with_lowercase<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buffer = [0u8; 64];
    match buffer.get_mut(..word.len()) {
        Some(lower) if word.is_ascii() => {
            lower.copy_from_slice(word.as_bytes());
            lower.make_ascii_lowercase();
            // ASCII stays valid UTF-8 when lowercased.
            f(std::str::from_utf8(lower).unwrap_or(word))
        }
        _ => f(&word.to_lowercase()),
    }
}

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: std::sync::OnceLock<rust_stemmers::Stemmer> = std::sync::OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// The English stem of a lowercased word; a word with digits, or longer than any English
/// word, is its own stem.
pub fn stem(lower: &str) -> Cow<'_, str> {
    if lower.len() > 48 || !lower.chars().all(char::is_alphabetic) {
        return Cow::Borrowed(lower);
    }
    stemmer().stem(lower)
}

/// Whether `lower` (a lowercased word) has the stem `wanted`. Snowball's English stemmer only
/// rewrites the end of a word and never lengthens it, so most words are told apart without
/// stemming them.
fn has_stem(lower: &str, wanted: &str) -> bool {
    lower.len() >= wanted.len()
        && lower.as_bytes().first() == wanted.as_bytes().first()
        && stem(lower) == wanted
}

/// What a text adds to the word index, one call per term.
pub enum Indexed<'a> {
    /// A lowercased word (or camel-case part) that is not a stop word: indexed under its stem.
    Word(&'a str),
    /// A stop word: indexed apart, as it is, only for the phrases it stands in (a search for
    /// the word alone drops it).
    Stop(&'a str),
    /// One Chinese, Japanese or Korean character, or two neighbouring ones: indexed as they are.
    Gram(&'a str),
}

/// A term of the index a query needs (owned [`Indexed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needed {
    /// A word's stem.
    Stem(String),
    Stop(String),
    Gram(String),
}

/// Calls `f` with every searchable term of `text`, repeats included.
pub fn each_indexed(text: &str, mut f: impl FnMut(Indexed<'_>)) {
    for token in tokens(text) {
        match token.kind {
            Kind::Word => {
                with_lowercase(token.text, |lower| match is_stop_word(lower) {
                    true => f(Indexed::Stop(lower)),
                    false => f(Indexed::Word(lower)),
                });
                for part in camel_parts(token.text) {
                    with_lowercase(part, |lower| {
                        if !is_stop_word(lower) {
                            f(Indexed::Word(lower));
                        }
                    });
                }
            }
            Kind::Cjk => each_gram(token.text, |gram| f(Indexed::Gram(gram))),
        }
    }
}

/// The characters of a run of CJK text, and its pairs of neighbouring characters.
pub fn each_gram(run: &str, mut f: impl FnMut(&str)) {
    let bounds: Vec<usize> = run
        .char_indices()
        .map(|(at, _)| at)
        .chain([run.len()])
        .collect();
    for k in 0..bounds.len() - 1 {
        f(&run[bounds[k]..bounds[k + 1]]);
        if let Some(end) = bounds.get(k + 2) {
            f(&run[bounds[k]..*end]);
        }
    }
}

/// One word of a phrase or of a joined word, lowercased, with what must stand before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub lower: String,
    pub kind: Kind,
    /// The characters between this word and the one before, when they must be exactly these
    /// (in a joined word such as `example.com`); `None`: any separation (in a quoted phrase).
    pub joined_by: Option<String>,
}

/// One part of a query; a message matches a query when it matches every part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    /// A word: a word of the text with the same stem (Zulip's rule).
    Word { lower: String, stem: String },
    /// The last word typed: a word of the text starting with it, or with its stem.
    Prefix { lower: String, stem: String },
    /// A quoted phrase or a joined word: these words, next to each other, in this order,
    /// unstemmed; with `open`, the last one may be the start of a word.
    Sequence { pieces: Vec<Piece>, open: bool },
    /// A run of CJK characters: the text holds it.
    Cjk { run: String },
}

impl Clause {
    /// The terms of the index this clause needs, all of them (a prefix: none; the index
    /// looks up the words it starts).
    pub fn needed_terms(&self) -> Vec<Needed> {
        match self {
            Clause::Word { stem, .. } => vec![Needed::Stem(stem.clone())],
            Clause::Prefix { .. } => Vec::new(),
            Clause::Sequence { pieces, open } => {
                let closed = pieces.len() - usize::from(*open);
                let mut terms = Vec::new();
                for piece in &pieces[..closed] {
                    match piece.kind {
                        Kind::Word if is_stop_word(&piece.lower) => {
                            terms.push(Needed::Stop(piece.lower.clone()))
                        }
                        Kind::Word => terms.push(Needed::Stem(stem(&piece.lower).into_owned())),
                        Kind::Cjk => {
                            each_gram(&piece.lower, |g| terms.push(Needed::Gram(g.to_owned())))
                        }
                    }
                }
                terms
            }
            Clause::Cjk { run } => {
                let mut terms = Vec::new();
                let chars = run.chars().count();
                each_gram(run, |g| {
                    // The pairs when there are any (each character's list is longer).
                    if chars == 1 || g.chars().count() == 2 {
                        terms.push(Needed::Gram(g.to_owned()))
                    }
                });
                terms
            }
        }
    }
}

/// A parsed `search:` operand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub clauses: Vec<Clause>,
}

/// The quotation marks that open and close a phrase.
fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\u{201C}' | '\u{201D}')
}

impl Query {
    pub fn parse(operand: &str) -> Query {
        let open_end = operand
            .chars()
            .next_back()
            .is_some_and(|c| kind_of(c) == Some(Kind::Word));
        // Split into quoted phrases and the space-separated chunks between them.
        let mut segments: Vec<(&str, bool)> = Vec::new();
        let mut rest = operand;
        while !rest.is_empty() {
            if let Some(open) = rest.find(is_quote) {
                for chunk in rest[..open].split_whitespace() {
                    segments.push((chunk, false));
                }
                let after = &rest[open..];
                let after = &after[after.chars().next().map_or(0, char::len_utf8)..];
                match after.find(is_quote) {
                    Some(close) => {
                        segments.push((&after[..close], true));
                        let tail = &after[close..];
                        rest = &tail[tail.chars().next().map_or(0, char::len_utf8)..];
                    }
                    None => {
                        segments.push((after, true));
                        rest = "";
                    }
                }
            } else {
                for chunk in rest.split_whitespace() {
                    segments.push((chunk, false));
                }
                rest = "";
            }
        }
        let last = segments.len().saturating_sub(1);
        let mut clauses = Vec::new();
        for (k, (segment, quoted)) in segments.into_iter().enumerate() {
            let open = open_end && k == last;
            let found: Vec<Token<'_>> = tokens(segment).collect();
            let pieces: Vec<Piece> = found
                .iter()
                .enumerate()
                .map(|(n, token)| Piece {
                    lower: token.text.to_lowercase(),
                    kind: token.kind,
                    joined_by: match n {
                        0 => None,
                        _ => {
                            let gap = &segment[found[n - 1].end()..token.start];
                            (!gap.chars().any(char::is_whitespace)).then(|| gap.to_owned())
                        }
                    },
                })
                .collect();
            match pieces.as_slice() {
                [] => {}
                [piece] if !quoted => match piece.kind {
                    Kind::Cjk => clauses.push(Clause::Cjk {
                        run: piece.lower.clone(),
                    }),
                    Kind::Word if is_stop_word(&piece.lower) => {}
                    Kind::Word => {
                        let lower = piece.lower.clone();
                        let stem = stem(&lower).into_owned();
                        // A number is matched whole: "12" would start too many.
                        let number = lower.chars().all(char::is_numeric);
                        if open && lower.chars().count() >= 2 && !number {
                            clauses.push(Clause::Prefix { lower, stem });
                        } else {
                            clauses.push(Clause::Word { lower, stem });
                        }
                    }
                },
                _ => {
                    let open = open && pieces.last().is_some_and(|p| p.kind == Kind::Word);
                    clauses.push(Clause::Sequence { pieces, open })
                }
            }
        }
        Query { clauses }
    }

    /// Whether the query has nothing to look for (empty, punctuation, or only stop words): it
    /// then finds nothing.
    pub fn is_empty(&self) -> bool {
        self.clauses.is_empty()
    }

    /// Whether a message with this topic and content matches every part of the query.
    pub fn matches(&self, topic: &str, content: &str) -> bool {
        if self.clauses.is_empty() {
            return false;
        }
        let topic = Analyzed::new(topic);
        let content = Analyzed::new(content);
        self.clauses
            .iter()
            .all(|clause| topic.matches(clause) || content.matches(clause))
    }

    /// `html` (rendered content, or an escaped topic) with every match of the query wrapped in
    /// `<span class="highlight">`, as Zulip's `match_content` and `match_subject`: words
    /// outside tags and character references.
    pub fn highlight(&self, html: &str) -> String {
        let mut out = String::with_capacity(html.len() + 32);
        let mut rest = html;
        while !rest.is_empty() {
            if rest.starts_with('<') {
                let end = rest.find('>').map_or(rest.len(), |at| at + 1);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                continue;
            }
            let end = rest.find('<').unwrap_or(rest.len());
            self.highlight_text(&rest[..end], &mut out);
            rest = &rest[end..];
        }
        out
    }

    fn highlight_text(&self, text: &str, out: &mut String) {
        let analyzed = Analyzed::new(text);
        // Tokens inside a character reference (`&amp;`, `&#39;`) are not words of the text.
        let in_reference = |token: &Token<'_>| {
            let before = &text[..token.start];
            let after = &text[token.end()..];
            after.starts_with(';') && (before.ends_with('&') || before.ends_with("&#"))
        };
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for clause in &self.clauses {
            match clause {
                Clause::Word { .. } | Clause::Prefix { .. } => {
                    for (k, token) in analyzed.tokens.iter().enumerate() {
                        if !in_reference(token) && analyzed.word_matches(k, clause) {
                            ranges.push((token.start, token.end()));
                        }
                    }
                }
                Clause::Sequence { pieces, open } => {
                    for at in analyzed.sequence_starts(pieces, *open) {
                        let first = &analyzed.tokens[at];
                        let last = &analyzed.tokens[at + pieces.len() - 1];
                        ranges.push((first.start, last.end()));
                    }
                }
                Clause::Cjk { run } => {
                    for (at, _) in text.match_indices(run.as_str()) {
                        ranges.push((at, at + run.len()));
                    }
                }
            }
        }
        ranges.sort_unstable();
        let mut written = 0;
        for (start, end) in ranges {
            if end <= written {
                continue;
            }
            let start = start.max(written);
            out.push_str(&text[written..start]);
            out.push_str("<span class=\"highlight\">");
            out.push_str(&text[start..end]);
            out.push_str("</span>");
            written = end;
        }
        out.push_str(&text[written..]);
    }
}

/// A text split into tokens once, for checking the clauses of a query against it.
struct Analyzed<'a> {
    text: &'a str,
    tokens: Vec<Token<'a>>,
    /// Each token lowercased (most are already: borrowed then).
    lower: Vec<Cow<'a, str>>,
}

impl<'a> Analyzed<'a> {
    fn new(text: &'a str) -> Analyzed<'a> {
        let tokens: Vec<Token<'a>> = tokens(text).collect();
        let lower = tokens
            .iter()
            .map(|t| {
                // Already lowercase when every letter is a lowercase one.
                match t
                    .text
                    .chars()
                    .all(|c| c.is_lowercase() || !c.is_alphabetic())
                {
                    true => Cow::Borrowed(t.text),
                    false => Cow::Owned(t.text.to_lowercase()),
                }
            })
            .collect();
        Analyzed {
            text,
            tokens,
            lower,
        }
    }

    fn matches(&self, clause: &Clause) -> bool {
        match clause {
            Clause::Word { .. } | Clause::Prefix { .. } => {
                (0..self.tokens.len()).any(|k| self.word_matches(k, clause))
            }
            Clause::Sequence { pieces, open } => {
                self.sequence_starts(pieces, *open).next().is_some()
            }
            Clause::Cjk { run } => self.text.contains(run.as_str()),
        }
    }

    /// Whether token `k` (the whole word or one of its camel-case parts, neither a stop word)
    /// matches a word or prefix clause.
    fn word_matches(&self, k: usize, clause: &Clause) -> bool {
        if self.tokens[k].kind != Kind::Word {
            return false;
        }
        let test = |lower: &str| {
            !is_stop_word(lower)
                && match clause {
                    Clause::Word { lower: want, stem } => lower == want || has_stem(lower, stem),
                    Clause::Prefix { lower: want, stem } => {
                        lower.starts_with(want.as_str()) || has_stem(lower, stem)
                    }
                    _ => false,
                }
        };
        test(&self.lower[k])
            || camel_parts(self.tokens[k].text)
                .into_iter()
                .any(|part| test(&part.to_lowercase()))
    }

    /// Where `pieces` stand in order, next to each other (joined as they require).
    fn sequence_starts<'s>(
        &'s self,
        pieces: &'s [Piece],
        open: bool,
    ) -> impl Iterator<Item = usize> + 's {
        let n = pieces.len();
        (0..(self.tokens.len() + 1).saturating_sub(n)).filter(move |&at| {
            pieces.iter().enumerate().all(|(k, piece)| {
                let token = &self.tokens[at + k];
                let lower = &self.lower[at + k];
                let same = if open && k == n - 1 {
                    lower.starts_with(piece.lower.as_str())
                } else {
                    **lower == *piece.lower
                };
                let joined = match (&piece.joined_by, k) {
                    (Some(gap), k) if k > 0 => {
                        self.text[self.tokens[at + k - 1].end()..token.start] == **gap
                    }
                    _ => true,
                };
                token.kind == piece.kind && same && joined
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(query: &str, text: &str) -> bool {
        Query::parse(query).matches("", text)
    }

    #[test]
    fn tokens_split_words_and_cjk_runs() {
        let all: Vec<(&str, Kind)> = tokens("Deploy v2.0 東京タワーに行く, ok Über")
            .map(|t| (t.text, t.kind))
            .collect();
        assert_eq!(
            all,
            [
                ("Deploy", Kind::Word),
                ("v2", Kind::Word),
                ("0", Kind::Word),
                ("東京タワーに行く", Kind::Cjk),
                ("ok", Kind::Word),
                ("Über", Kind::Word),
            ]
        );
        assert_eq!(tokens("  ...!  ").count(), 0);
    }

    #[test]
    fn camel_case_words_have_parts() {
        assert_eq!(camel_parts("getUserName"), ["get", "User", "Name"]);
        assert_eq!(camel_parts("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(camel_parts("parseJSON2Html"), ["parse", "JSON2", "Html"]);
        assert!(camel_parts("Deploy").is_empty());
        assert!(camel_parts("NASA").is_empty());
    }

    #[test]
    fn stems_and_stop_words_are_zulips() {
        for (word, expected) in [
            ("deploying", "deploy"),
            ("deployed", "deploy"),
            ("deploys", "deploy"),
            ("staging", "stage"),
            ("v2", "v2"),
        ] {
            assert_eq!(stem(word), expected, "{word}");
        }
        for word in ["the", "a", "i", "x", "doing", "ourselves", "now"] {
            assert!(is_stop_word(word), "{word}");
        }
        for word in ["deploy", "0", "7", "é", "nowhere"] {
            assert!(!is_stop_word(word), "{word}");
        }
    }

    #[test]
    fn words_match_by_stem_and_stop_words_find_nothing() {
        assert!(found("deploying ", "We deployed it"));
        assert!(found("Deploys ", "deploy now"));
        assert!(!found("deploying ", "redeploy"));
        assert!(found("deploy staging", "Staging: deploy"));
        assert!(!found("deploy staging ", "deploy prod"));
        assert!(Query::parse("the and of ").is_empty());
        assert!(!found("the ", "the cat"));
        // A stop word in a query is dropped, not required.
        assert!(found("the cat", "a cat"));
        // "does" (a stop word) is not the word "doe" although it stems to it.
        assert!(!found("doe ", "does it"));
        assert!(Query::parse("!! ...").is_empty());
    }

    #[test]
    fn the_last_word_typed_is_a_prefix() {
        assert!(found("deplo", "the deployment"));
        assert!(found("deployme", "the deployment"));
        assert!(!found("deplo ", "the deployment"));
        assert!(found("green deplo", "green deployment"));
        assert!(!found("deplo green", "green deployment"));
        // Its stem matches too: "deploying" finds "deployed".
        assert!(found("deploying", "deployed"));
        // A single character is a whole word, and a stop word typed last is dropped.
        assert!(found("7", "7 days"));
        assert!(!found("7", "70 days"));
        // Words with digits (issue 39's report), whole or joined.
        assert!(found("abc123", "ticket abc123 closed"));
        assert!(found("10:30", "meet at 10:30 today"));
        assert!(!found("10:30", "meet at 10:45, room 30"));
        // Numbers are whole words even when typed last.
        assert!(!found("12", "123 apples"));
        assert!(found("123", "123 apples"));
        assert!(found("v1", "v12 apples"));
        assert!(!found("cats th", "cats"));
        assert_eq!(
            Query::parse("cats the").clauses,
            Query::parse("cats ").clauses
        );
    }

    #[test]
    fn phrases_match_words_in_order_unstemmed() {
        assert!(found("\"deploy failed\"", "the deploy failed twice"));
        assert!(found("\"deploy failed\"", "Deploy,\n  FAILED"));
        assert!(!found("\"deploy failed\"", "failed deploy"));
        assert!(!found("\"deploy failed\"", "deploy has failed"));
        assert!(!found("\"deploying\"", "deployed"));
        assert!(found("\"to be or not to be\"", "To be, or not to be"));
        assert!(found("prod \"deploy failed\" ", "deploy failed on prod"));
        assert!(!found("prod \"deploy failed\" ", "deploy failed on stage"));
        // Typographic quotes, and a phrase left open while typing.
        assert!(found("“deploy failed”", "deploy failed"));
        assert!(found("\"deploy fai", "deploy failed"));
    }

    #[test]
    fn identifiers_and_urls_are_found_by_their_parts_and_whole() {
        let text = "set sess.opts from https://example.com/path/to?q=1 and getUserName() v2.0";
        for query in [
            "sess.opts",
            "opts ",
            "sess ",
            "example.com/path",
            "example.com",
            "https://example.com/path/to",
            "getUserName",
            "getusername ",
            "user ",
            "name ",
            "v2.0",
        ] {
            assert!(found(query, text), "{query}");
        }
        for query in ["sess/opts", "opts.sess", "example.org", "path.to ", "v2.1 "] {
            assert!(!found(query, text), "{query}");
        }
        // Open while typing: the last word of a joined word is a prefix.
        assert!(found("example.co", text));
    }

    #[test]
    fn cjk_text_is_found_without_spaces() {
        let text = "明日は東京タワーに行きます。서울에서 만나요";
        for query in ["東京", "東京タワー", "タワー", "京", "行き", "서울", "만나"]
        {
            assert!(found(query, text), "{query}");
        }
        for query in ["京都", "大阪", "서울로"] {
            assert!(!found(query, text), "{query}");
        }
        let mut grams = Vec::new();
        each_gram("東京都", |g| grams.push(g.to_owned()));
        assert_eq!(grams, ["東", "東京", "京", "京都", "都"]);
        assert_eq!(
            Clause::Cjk {
                run: "東京都".into()
            }
            .needed_terms(),
            [Needed::Gram("東京".into()), Needed::Gram("京都".into())]
        );
    }

    #[test]
    fn highlights_wrap_matching_words_outside_tags() {
        let query = Query::parse("deploying \"in prod\" 東京 ");
        let html = "<p>We <strong>deployed</strong> it in prod &amp; deploy <a href=\"https://deploy.example\">here</a> 東京タワー</p>";
        assert_eq!(
            query.highlight(html),
            "<p>We <strong><span class=\"highlight\">deployed</span></strong> it \
             <span class=\"highlight\">in prod</span> &amp; \
             <span class=\"highlight\">deploy</span> \
             <a href=\"https://deploy.example\">here</a> \
             <span class=\"highlight\">東京</span>タワー</p>"
        );
        let amp = Query::parse("amp ");
        assert_eq!(amp.highlight("a &amp; b"), "a &amp; b");
        let prefix = Query::parse("dep");
        assert_eq!(
            prefix.highlight("Deploys &lt;dep&gt;"),
            "<span class=\"highlight\">Deploys</span> &lt;<span class=\"highlight\">dep</span>&gt;"
        );
    }
}
