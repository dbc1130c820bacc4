//! `trello`: Trello's board webhooks: what happened to cards (created, moved, renamed,
//! described, due dates, archived, labels, members, attachments, checklists, comments, checked
//! items) and to the board (members, lists, its name). The topic is the board's name; the
//! payload's `action.type` decides. Trello checks the address with a `HEAD` request first.

use super::text_at as s;
use super::{at, global_time, Outcome, Post, Request, Res};
use serde_json::Value;

/// Card actions that say nothing worth a message.
const IGNORED_CARD_ACTIONS: &[&str] = &[
    "copyCard",
    "createCheckItem",
    "updateCheckItem",
    "updateList",
];

/// Formats a Trello webhook.
pub fn format(req: &Request<'_>) -> Outcome {
    let p = req.payload;
    let kind = at(p, &["action", "type"])
        .and_then(Value::as_str)
        .unwrap_or_default();
    if IGNORED_CARD_ACTIONS.contains(&kind) {
        return Outcome::Ignored;
    }
    let result = match kind {
        "updateCard"
        | "createCard"
        | "addLabelToCard"
        | "removeLabelFromCard"
        | "addMemberToCard"
        | "removeMemberFromCard"
        | "addAttachmentToCard"
        | "addChecklistToCard"
        | "commentCard"
        | "updateCheckItemStateOnCard" => card(p, kind),
        "removeMemberFromBoard" | "addMemberToBoard" | "createList" | "updateBoard" => {
            board(p, kind)
        }
        other => Ok(Err(other.to_owned())),
    };
    match result {
        Ok(Ok(Some(body))) => Outcome::Send {
            event_type: None,
            posts: vec![Post {
                topic: s(p, &["action", "data", "board", "name"]).to_owned(),
                body: format!("{} {body}", s(p, &["action", "memberCreator", "fullName"])),
            }],
        },
        Ok(Ok(None)) => Outcome::Ignored,
        Ok(Err(unsupported)) => Outcome::Unsupported {
            event_type: unsupported,
        },
        Err(reason) => Outcome::Malformed(reason),
    }
}

fn quote(text: &str) -> String {
    format!("~~~ quote\n{text}\n~~~")
}

fn due(v: Option<&Value>) -> Res<String> {
    v.and_then(Value::as_str)
        .and_then(global_time)
        .ok_or_else(|| "a due date is not a time".to_owned())
}

/// The message after the acting person's name (`Ok(None)`: ignored; `Err`: unsupported).
type Text = Res<Result<Option<String>, String>>;

fn card(p: &Value, kind: &str) -> Text {
    let data = at(p, &["action", "data"]).cloned().unwrap_or(Value::Null);
    let link = format!(
        "[{}](https://trello.com/c/{})",
        s(&data, &["card", "name"]),
        s(&data, &["card", "shortLink"])
    );
    let member = s(p, &["action", "member", "fullName"]);
    let text = match kind {
        "createCard" => format!("created {link}."),
        "addLabelToCard" => format!(
            "added a {} label with \"{}\" to {link}.",
            s(&data, &["value"]),
            s(&data, &["text"])
        ),
        "removeLabelFromCard" => format!(
            "removed a {} label with \"{}\" from {link}.",
            s(&data, &["value"]),
            s(&data, &["text"])
        ),
        "addMemberToCard" => format!("added {member} to {link}."),
        "removeMemberFromCard" => format!("removed {member} from {link}."),
        "addAttachmentToCard" => format!(
            "added [{}]({}) to {link}.",
            s(&data, &["attachment", "name"]),
            s(&data, &["attachment", "url"])
        ),
        "addChecklistToCard" => format!(
            "added the {} checklist to {link}.",
            s(&data, &["checklist", "name"])
        ),
        "commentCard" => format!("commented on {link}:\n{}", quote(s(&data, &["text"]))),
        "updateCheckItemStateOnCard" => format!(
            "{} **{}** in **{}** ({link}).",
            if s(&data, &["checkItem", "state"]) == "complete" {
                "checked"
            } else {
                "unchecked"
            },
            s(&data, &["checkItem", "name"]),
            s(&data, &["checklist", "name"])
        ),
        _ => return update_card(&data, &link),
    };
    Ok(Ok(Some(text)))
}

fn update_card(data: &Value, link: &str) -> Text {
    let old = data.get("old").cloned().unwrap_or(Value::Null);
    let card = data.get("card").cloned().unwrap_or(Value::Null);
    let text = if super::truthy(data.get("listBefore")) {
        format!(
            "moved {link} from {} to {}.",
            s(data, &["listBefore", "name"]),
            s(data, &["listAfter", "name"])
        )
    } else if !s(&old, &["name"]).is_empty() {
        format!(
            "renamed the card from \"{}\" to {link}.",
            s(&old, &["name"])
        )
    } else if old.get("desc") == Some(&Value::String(String::new())) {
        format!(
            "set description for {link} to:\n{}",
            quote(s(&card, &["desc"]))
        )
    } else if !s(&old, &["desc"]).is_empty() {
        if s(&card, &["desc"]).is_empty() {
            format!("removed description from {link}.")
        } else {
            format!(
                "changed description for {link} from\n{}\nto\n{}",
                quote(s(&old, &["desc"])),
                quote(s(&card, &["desc"]))
            )
        }
    } else if old.get("due") == Some(&Value::Null) {
        format!("set due date for {link} to {}.", due(card.get("due"))?)
    } else if !s(&old, &["due"]).is_empty() {
        if card.get("due") == Some(&Value::Null) {
            format!("removed the due date from {link}.")
        } else {
            format!(
                "changed due date for {link} from {} to {}.",
                due(old.get("due"))?,
                due(card.get("due"))?
            )
        }
    } else if old.get("closed") == Some(&Value::Bool(false))
        && card.get("closed") == Some(&Value::Bool(true))
    {
        format!("archived {link}.")
    } else if old.get("closed") == Some(&Value::Bool(true))
        && card.get("closed") == Some(&Value::Bool(false))
    {
        format!("reopened {link}.")
    } else if ["cover", "dueComplete", "idAttachmentCover", "pos"]
        .iter()
        .any(|key| old.get(*key).is_some())
    {
        return Ok(Ok(None));
    } else {
        return Ok(Err("updateCard".to_owned()));
    };
    Ok(Ok(Some(text)))
}

fn board(p: &Value, kind: &str) -> Text {
    let data = at(p, &["action", "data"]).cloned().unwrap_or(Value::Null);
    let link = format!(
        "[{}](https://trello.com/b/{})",
        s(&data, &["board", "name"]),
        s(&data, &["board", "shortLink"])
    );
    let member = s(p, &["action", "member", "fullName"]);
    let text = match kind {
        "removeMemberFromBoard" => format!("removed {member} from {link}."),
        "addMemberToBoard" => format!("added {member} to {link}."),
        "createList" => format!("added {} list to {link}.", s(&data, &["list", "name"])),
        _ => {
            if at(&data, &["old", "prefs", "background"]).is_some() {
                return Ok(Ok(None));
            }
            let old = s(&data, &["old", "name"]);
            if old.is_empty() {
                return Ok(Err("updateBoard".to_owned()));
            }
            format!("renamed the board from {old} to {link}.")
        }
    };
    Ok(Ok(Some(text)))
}
