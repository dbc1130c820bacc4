//! Word-level differences between two renderings of a message, as Zulip shows them in edit
//! history (`content_html_diff`): the new HTML with inserted words wrapped in
//! `<span class="highlight_text_inserted">` and removed words, after them, in
//! `<span class="highlight_text_deleted">`, all inside one `<div>`.
//!
//! Tags are atoms and words carry their trailing whitespace, so equal runs come out byte for
//! byte. The longest common subsequence is computed between the first and last difference
//! only (edits are usually small); once a request's [`CELL_BUDGET`] is spent, a changed middle is
//! shown as replaced whole rather than spending quadratic time on it.

/// The most alignment cells (tokens of one side × the other) one request may spend on all the
/// diffs it shows: a message with many long edits must not hold the state's read lock for long.
pub const CELL_BUDGET: usize = 1_000_000;

#[derive(Debug, Clone, Copy)]
enum Token<'a> {
    Tag(&'a str),
    Word(&'a str),
}

/// Words are compared without their trailing whitespace (a word that gains a neighbour is
/// still the same word).
impl PartialEq for Token<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Token::Tag(a), Token::Tag(b)) => a == b,
            (Token::Word(a), Token::Word(b)) => a.trim_end() == b.trim_end(),
            _ => false,
        }
    }
}

impl<'a> Token<'a> {
    fn text(self) -> &'a str {
        match self {
            Token::Tag(t) | Token::Word(t) => t,
        }
    }
}

fn tokens(html: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            out.push(Token::Tag(&rest[..end]));
            rest = &rest[end..];
            continue;
        }
        // A word runs to the next whitespace or tag; its trailing whitespace comes with it.
        let word_end = rest
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(rest.len());
        let after_space = rest[word_end..]
            .find(|c: char| !c.is_whitespace())
            .map_or(rest.len(), |i| word_end + i);
        let end = if after_space == 0 { 1 } else { after_space };
        out.push(Token::Word(&rest[..end]));
        rest = &rest[end..];
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equal,
    Insert,
    Delete,
}

/// The edit script turning `old` into `new`: each token of `new` (Equal/Insert) and of `old`
/// (Delete), in output order (within a change, insertions before deletions, as Zulip's).
fn script<'a>(old: &[Token<'a>], new: &[Token<'a>], budget: &mut usize) -> Vec<(Op, Token<'a>)> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut out: Vec<(Op, Token<'a>)> = new[..prefix].iter().map(|t| (Op::Equal, *t)).collect();
    let cells = a.len().saturating_mul(b.len());
    if cells > *budget {
        out.extend(b.iter().map(|t| (Op::Insert, *t)));
        out.extend(a.iter().map(|t| (Op::Delete, *t)));
    } else {
        *budget -= cells;
        // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
        let width = b.len() + 1;
        let mut lcs = vec![0u32; (a.len() + 1) * width];
        for i in (0..a.len()).rev() {
            for j in (0..b.len()).rev() {
                lcs[i * width + j] = if a[i] == b[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        let (mut inserted, mut deleted) = (Vec::new(), Vec::new());
        let flush =
            |out: &mut Vec<(Op, Token<'a>)>, ins: &mut Vec<Token<'a>>, del: &mut Vec<Token<'a>>| {
                out.extend(ins.drain(..).map(|t| (Op::Insert, t)));
                out.extend(del.drain(..).map(|t| (Op::Delete, t)));
            };
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                flush(&mut out, &mut inserted, &mut deleted);
                out.push((Op::Equal, b[j]));
                i += 1;
                j += 1;
            } else if j < b.len()
                && (i == a.len() || lcs[i * width + j + 1] >= lcs[(i + 1) * width + j])
            {
                inserted.push(b[j]);
                j += 1;
            } else {
                deleted.push(a[i]);
                i += 1;
            }
        }
        flush(&mut out, &mut inserted, &mut deleted);
    }
    out.extend(new[new.len() - suffix..].iter().map(|t| (Op::Equal, *t)));
    out
}

/// Zulip's `content_html_diff` of two renderings, spending at most `budget` alignment cells
/// (what it spends is taken off).
pub fn highlight_differences(old: &str, new: &str, budget: &mut usize) -> String {
    let (old, new) = (tokens(old), tokens(new));
    let mut html = String::from("<div>");
    let mut open: Option<Op> = None;
    let close = |html: &mut String, open: &mut Option<Op>| {
        if open.take().is_some() {
            html.push_str("</span>");
        }
    };
    for (op, token) in script(&old, &new, budget) {
        match (op, token) {
            (Op::Equal, t) => {
                close(&mut html, &mut open);
                html.push_str(t.text());
            }
            // Inserted tags stay (they are part of the new rendering); removed ones go.
            (Op::Insert, Token::Tag(t)) => {
                close(&mut html, &mut open);
                html.push_str(t);
            }
            (Op::Delete, Token::Tag(_)) => {}
            (op, Token::Word(w)) => {
                if open != Some(op) {
                    close(&mut html, &mut open);
                    html.push_str(match op {
                        Op::Insert => "<span class=\"highlight_text_inserted\">",
                        _ => "<span class=\"highlight_text_deleted\">",
                    });
                    open = Some(op);
                }
                html.push_str(w);
            }
        }
    }
    close(&mut html, &mut open);
    html.push_str("</div>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_words_are_marked_and_the_rest_kept() {
        assert_eq!(
            highlight_differences(
                "<p>Lunch at noon today</p>",
                "<p>Lunch at one today</p>",
                &mut CELL_BUDGET.clone()
            ),
            "<div><p>Lunch at <span class=\"highlight_text_inserted\">one </span>\
             <span class=\"highlight_text_deleted\">noon </span>today</p></div>"
        );
        assert_eq!(
            highlight_differences(
                "<p>Hello</p>",
                "<p>Hello <strong>world</strong></p>",
                &mut CELL_BUDGET.clone()
            ),
            "<div><p>Hello <strong><span class=\"highlight_text_inserted\">world</span>\
             </strong></p></div>"
        );
        assert_eq!(
            highlight_differences("<p>same</p>", "<p>same</p>", &mut 0),
            "<div><p>same</p></div>"
        );
        assert_eq!(
            highlight_differences("", "<p>new</p>", &mut CELL_BUDGET.clone()),
            "<div><p><span class=\"highlight_text_inserted\">new</span></p></div>"
        );
    }

    #[test]
    fn large_rewrites_do_not_go_quadratic() {
        let old: String = (0..3000).map(|i| format!("a{i} ")).collect();
        let new: String = (0..3000).map(|i| format!("b{i} ")).collect();
        let mut budget = CELL_BUDGET;
        let diff = highlight_differences(&old, &new, &mut budget);
        assert_eq!(budget, CELL_BUDGET, "9M cells: over budget, nothing spent");
        assert!(diff.starts_with("<div><span class=\"highlight_text_inserted\">b0 "));
        assert!(diff.ends_with("a2999 </span></div>"));
        // Each diff spends from the same budget.
        let (a, b) = ("<p>x y z</p>", "<p>x q z</p>");
        let mut budget = 1;
        assert!(highlight_differences(a, b, &mut budget).contains("highlight_text_inserted"));
        assert_eq!(budget, 0);
        let whole = highlight_differences(a, b, &mut budget);
        assert!(whole.contains("highlight_text_deleted"));
    }
}
