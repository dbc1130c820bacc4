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
