//! Real text for the messages the benchmark sends: the quotations of Debian's `fortunes-min`
//! package (`/usr/share/games/fortunes`), which `scripts/test.sh` installs. Chat is measured on
//! text people write, with its lengths and vocabulary, not on short synthetic lines.

use std::sync::OnceLock;

/// Where the corpus is.
pub const DIR: &str = "/usr/share/games/fortunes";

/// The quotations (each cut to Zulip's message length), or `None` when the package is not
/// installed; read once.
pub fn texts() -> Option<&'static [String]> {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        let mut out = Vec::new();
        for name in ["fortunes", "literature", "riddles"] {
            let Ok(text) = std::fs::read_to_string(format!("{DIR}/{name}")) else {
                continue;
            };
            out.extend(
                text.split("\n%\n")
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| t.chars().take(10_000).collect::<String>()),
            );
        }
        out
    });
    (!texts.is_empty()).then_some(texts.as_slice())
}

/// The `n`th text of the corpus (cycling), or `fallback` without one.
pub fn text(n: u64, fallback: impl FnOnce() -> String) -> String {
    match texts() {
        Some(all) => all[(n % all.len() as u64) as usize].clone(),
        None => fallback(),
    }
}

/// What the messages were: for the report.
pub fn source() -> String {
    match texts() {
        Some(all) => {
            let mean = all.iter().map(|t| t.chars().count()).sum::<usize>() / all.len();
            format!(
                "real text: {} quotations of Debian's fortunes-min, mean {mean} characters",
                all.len()
            )
        }
        None => "synthetic lines (fortunes-min is not installed)".into(),
    }
}

/// Searches as people type them, drawn from the corpus the messages were: a word, two words of
/// one quotation, a phrase of two neighbouring words, and the first letters of a word (the
/// last word typed is a prefix). Words of three letters or more, no stop words.
pub fn search_queries(count: usize) -> Vec<String> {
    use crate::analyzer::{is_stop_word, tokens, Kind};
    let fallback = || vec!["Message 1: a typical short chat line.".to_owned()];
    let texts = texts().map_or_else(fallback, <[String]>::to_vec);
    let mut queries = Vec::with_capacity(count);
    let mut k = 0usize;
    while queries.len() < count && k < count * 20 {
        let text = &texts[k.wrapping_mul(7919) % texts.len()];
        let words: Vec<String> = tokens(text)
            .filter(|t| t.kind == Kind::Word && t.text.chars().all(char::is_alphabetic))
            .map(|t| t.text.to_lowercase())
            .collect();
        let searchable: Vec<&String> = words
            .iter()
            .filter(|w| w.chars().count() >= 3 && !is_stop_word(w))
            .collect();
        k += 1;
        if searchable.len() < 2 || words.len() < 2 {
            continue;
        }
        let pick = |n: usize| searchable[n % searchable.len()];
        let query = match queries.len() % 4 {
            0 => format!("{} ", pick(k)),
            1 => format!("{} {} ", pick(k), pick(k / 2 + 1)),
            2 => {
                let at = k % (words.len() - 1);
                format!("\"{} {}\"", words[at], words[at + 1])
            }
            _ => pick(k).chars().take(4).collect(),
        };
        queries.push(query);
    }
    queries
}
