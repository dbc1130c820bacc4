//! Message templates shared by the git hosting integrations (GitHub, GitLab): pushed commits,
//! tags, pull request and issue lines, commit comments and releases, worded as Zulip's.

use std::collections::HashMap;

/// Commit rows listed in a push message; the rest are only counted.
pub const COMMITS_LIMIT: usize = 20;

/// Committers named in a push message; the rest are summed as `others`.
pub const COMMITTERS_LIMIT: usize = 3;

/// One pushed commit, as the push template needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The name the commit is credited to.
    pub name: String,
    /// The full SHA.
    pub sha: String,
    /// The commit's web page.
    pub url: String,
    /// The whole commit message (only its first line is shown).
    pub message: String,
}

/// The first 11 characters of a commit SHA.
pub fn short_sha(sha: &str) -> String {
    sha.chars().take(11).collect()
}

/// A message as a `~~~ quote` block, preceded by a newline.
pub fn quote(message: &str) -> String {
    format!("\n~~~ quote\n{message}\n~~~")
}

/// Whether `text` ends with ASCII punctuation (Python's `string.punctuation`).
pub fn ends_with_punctuation(text: &str) -> bool {
    text.chars()
        .next_back()
        .is_some_and(|c| c.is_ascii_punctuation())
}

/// The branch a ref names: the ref without `refs/heads/`.
pub fn branch_from_ref(git_ref: &str) -> &str {
    git_ref.strip_prefix("refs/heads/").unwrap_or(git_ref)
}

/// The tag a ref names: the ref without `refs/tags/`.
pub fn tag_from_ref(git_ref: &str) -> &str {
    git_ref.strip_prefix("refs/tags/").unwrap_or(git_ref)
}

/// Whether a push to `branch` passes the `branches` parameter: a comma-separated list of
/// names, each trimmed and compared exactly; no parameter lets every branch through.
pub fn branch_selected(branches: Option<&str>, branch: &str) -> bool {
    match branches {
        None => true,
        Some(list) => list.split(',').any(|b| b.trim() == branch),
    }
}

/// `{repo} / {kind} #{id} {title}`: the topic of a pull request, issue or snippet.
pub fn item_topic(repo: &str, kind: &str, id: &str, title: &str) -> String {
    format!("{repo} / {kind} #{id} {title}")
}

/// `{repo} / {branch}`: the topic of a push.
pub fn branch_topic(repo: &str, branch: &str) -> String {
    format!("{repo} / {branch}")
}

/// Committer names with their commit counts: most commits first, ties alphabetical; past
/// [`COMMITTERS_LIMIT`] names the rest are summed as `others`.
pub fn committers(commits: &[Commit]) -> Vec<(String, usize)> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for commit in commits {
        *counts.entry(commit.name.as_str()).or_insert(0) += 1;
    }
    let mut items: Vec<(String, usize)> = counts
        .into_iter()
        .map(|(name, n)| (name.to_string(), n))
        .collect();
    items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if items.len() > COMMITTERS_LIMIT {
        let others: usize = items[COMMITTERS_LIMIT..].iter().map(|(_, n)| n).sum();
        items.truncate(COMMITTERS_LIMIT);
        items.push(("others".to_string(), others));
    }
    items
}

/// `A (3), B (2) and C (1)`; a single entry is `A (1)`.
pub fn committer_summary(items: &[(String, usize)]) -> String {
    let mut out = String::new();
    for (i, (name, n)) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == items.len() { " and " } else { ", " });
        }
        out.push_str(&format!("{name} ({n})"));
    }
    out
}

/// One `* {first line} ([{sha}]({url}))` row per commit up to [`COMMITS_LIMIT`], then
/// `[and N more commit(s)]` if there were more.
pub fn commit_rows(commits: &[Commit]) -> String {
    let mut out = String::new();
    for commit in commits.iter().take(COMMITS_LIMIT) {
        let first_line = commit.message.split('\n').next().unwrap_or("");
        out.push_str(&format!(
            "* {first_line} ([{}]({}))\n",
            short_sha(&commit.sha),
            commit.url
        ));
    }
    if commits.len() > COMMITS_LIMIT {
        out.push_str(&format!(
            "[and {} more commit(s)]",
            commits.len() - COMMITS_LIMIT
        ));
    }
    out.trim_end().to_string()
}

/// A push of commits to a branch (or of none: a new, moved or deleted branch). An empty
/// `compare_url` drops the link.
pub fn push_commits_message(
    user: &str,
    compare_url: &str,
    branch: &str,
    commits: &[Commit],
    deleted: bool,
    force: bool,
) -> String {
    if commits.is_empty() && deleted {
        return format!("{user} [deleted]({compare_url}) the branch {branch}.");
    }
    let push_type = if force { "force pushed" } else { "pushed" };
    if commits.is_empty() {
        return if compare_url.is_empty() {
            format!("{user} {push_type} the branch {branch}.")
        } else {
            format!("{user} [{push_type}]({compare_url}) the branch {branch}.")
        };
    }
    let n = commits.len();
    let plural = if n > 1 { "s" } else { "" };
    let pushed = if compare_url.is_empty() {
        format!("{push_type} {n} commit{plural}")
    } else {
        format!("[{push_type}]({compare_url}) {n} commit{plural}")
    };
    let people = committers(commits);
    let rows = commit_rows(commits);
    let only_pusher = people.len() == 1 && people.first().is_some_and(|(name, _)| name == user);
    let text = if only_pusher {
        format!("{user} {pushed} to branch {branch}.\n\n{rows}")
    } else {
        format!(
            "{user} {pushed} to branch {branch}. Commits by {}.\n\n{rows}",
            committer_summary(&people)
        )
    };
    text.trim_end().to_string()
}

/// `{user} {action} tag {tag}`, with a `.` unless the tag ends in punctuation.
pub fn tag_message(user: &str, action: &str, tag: &str) -> String {
    let mut out = format!("{user} {action} tag {tag}");
    if !ends_with_punctuation(tag) {
        out.push('.');
    }
    out
}

/// `{user} {action} on [{sha11}]({url})`, then `:` and the quoted message, or `.`.
pub fn commit_comment_message(
    user: &str,
    action: &str,
    url: &str,
    sha: &str,
    message: Option<&str>,
) -> String {
    let mut out = format!("{user} {action} on [{}]({url})", short_sha(sha));
    match message.filter(|m| !m.is_empty()) {
        Some(m) => {
            out.push(':');
            out.push_str(&quote(m));
        }
        None => out.push('.'),
    }
    out
}

/// `{user} {action} release [{name}]({url}) for tag {tag}.`
pub fn release_message(user: &str, action: &str, name: &str, url: &str, tag: &str) -> String {
    format!("{user} {action} release [{name}]({url}) for tag {tag}.")
}

/// The parts of a pull request or issue line:
/// `{user} {action}{assignee} [{kind}{ #number}{ title}]({url})`, then branches, assignees or
/// reviewer, punctuation, and the quoted message.
#[derive(Debug, Default, Clone)]
pub struct ItemLine<'a> {
    /// Who acted.
    pub user: &'a str,
    /// The verb (`opened`, `merged`, `[commented](url) on`...).
    pub action: &'a str,
    /// `PR`, `MR`, `issue`, `PR review`...
    pub kind: &'a str,
    /// The link target.
    pub url: &'a str,
    /// The number after `#`, if any.
    pub number: Option<&'a str>,
    /// The title, shown inside the link (only when the topic no longer carries it).
    pub title: Option<&'a str>,
    /// Source and target branches, shown as `` from `a` to `b` ``.
    pub branches: Option<(&'a str, &'a str)>,
    /// A body to quote.
    pub message: Option<&'a str>,
    /// A single assignee, shown as `(assigned to X)`.
    pub assignee: Option<&'a str>,
    /// Several assignees, shown as `(assigned to A, B and C)`; wins over `assignee`.
    pub assignees: &'a [String],
    /// Who was (un)assigned, for the `assigned`/`unassigned` actions.
    pub assignee_updated: Option<&'a str>,
    /// Requested reviewers, shown as `(assigned reviewers: R)`.
    pub reviewer: Option<&'a str>,
}

impl ItemLine<'_> {
    /// The rendered line.
    pub fn render(&self) -> String {
        let id = self.number.map(|n| format!(" #{n}")).unwrap_or_default();
        let title = self.title.map(|t| format!(" {t}")).unwrap_or_default();
        let updated = self.assignee_updated.unwrap_or("None");
        let assignee = match self.action {
            "assigned" => format!(" {updated} to"),
            "unassigned" => format!(" {updated} from"),
            _ => String::new(),
        };
        let mut out = format!(
            "{} {}{assignee} [{}{id}{title}]({})",
            self.user, self.action, self.kind, self.url
        );
        let branches = self
            .branches
            .filter(|(from, to)| !from.is_empty() && !to.is_empty());
        if let Some((from, to)) = branches {
            out.push_str(&format!(" from `{from}` to `{to}`"));
        }
        let single = self.assignee.filter(|a| !a.is_empty());
        if let Some((last, rest)) = self.assignees.split_last() {
            let names = if rest.is_empty() {
                last.clone()
            } else {
                format!("{} and {last}", rest.join(", "))
            };
            out.push_str(&format!(" (assigned to {names})"));
        } else if let Some(name) = single {
            out.push_str(&format!(" (assigned to {name})"));
        } else if let Some(reviewer) = self.reviewer.filter(|r| !r.is_empty()) {
            out.push_str(&format!(" (assigned reviewers: {reviewer})"));
        }
        let message = self.message.filter(|m| !m.is_empty());
        let punctuation = if message.is_some() { ':' } else { '.' };
        let title_punctuated = self.title.is_some_and(ends_with_punctuation);
        if !self.assignees.is_empty() || single.is_some() || branches.is_some() || !title_punctuated
        {
            out.push(punctuation);
        }
        if let Some(m) = message {
            out.push('\n');
            out.push_str(&quote(m));
        }
        out.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(name: &str, n: usize) -> Commit {
        Commit {
            name: name.to_string(),
            sha: format!("{n:02}3456789abcdef0123456789abcdef01234567"),
            url: format!("https://example.test/c/{n}"),
            message: format!("Change {n}\n\nDetails"),
        }
    }

    #[test]
    fn committers_are_ranked_and_capped() {
        let commits: Vec<Commit> = [
            ("Zed", 1usize),
            ("Ada", 4),
            ("Bob", 3),
            ("Cy", 2),
            ("Al", 2),
        ]
        .iter()
        .flat_map(|(name, n)| (0..*n).map(move |i| commit(name, i)))
        .collect();
        let items = committers(&commits);
        assert_eq!(
            committer_summary(&items),
            "Ada (4), Bob (3), Al (2) and others (3)"
        );
        assert_eq!(committer_summary(&committers(&commits[..1])), "Zed (1)");
    }

    #[test]
    fn push_by_the_pusher_alone_names_no_committers() {
        let body = push_commits_message(
            "ada",
            "https://x/compare",
            "main",
            &[commit("ada", 1)],
            false,
            false,
        );
        assert_eq!(
            body,
            "ada [pushed](https://x/compare) 1 commit to branch main.\n\n* Change 1 ([013456789ab](https://example.test/c/1))"
        );
    }

    #[test]
    fn item_line_punctuation_rule() {
        let line = ItemLine {
            user: "ada",
            action: "opened",
            kind: "issue",
            url: "https://x/1",
            number: Some("1"),
            title: Some("Is it broken?"),
            ..ItemLine::default()
        };
        assert_eq!(
            line.render(),
            "ada opened [issue #1 Is it broken?](https://x/1)"
        );
        let with_assignee = ItemLine {
            assignee: Some("bob"),
            ..line.clone()
        };
        assert_eq!(
            with_assignee.render(),
            "ada opened [issue #1 Is it broken?](https://x/1) (assigned to bob)."
        );
        let names = vec!["A".to_string(), "B".to_string(), "C".to_string()];
        let several = ItemLine {
            title: None,
            assignees: &names,
            message: Some("text"),
            ..line
        };
        assert_eq!(
            several.render(),
            "ada opened [issue #1](https://x/1) (assigned to A, B and C):\n\n~~~ quote\ntext\n~~~"
        );
    }
}
