//! Quitting with history that could not be saved (a full disk, a locked or read-only
//! database): the writer's queue is flushed once more; if that fails, the screen closes and
//! palaver says so on the plain terminal and offers to write the conversation to a JSON file
//! (the format of `history export --format json`) or to retry, rather than exiting 0 with the
//! reply gone.

use crate::engine::message::Message;
use crate::store::StoreHandle;
use crate::store::export::{Export, FORMAT, VERSION};
use crate::store::ids::{now_ms, rfc3339};
use std::io::{BufRead, Write};

/// The conversation as it was on screen.
pub struct Unsaved {
    pub id: Option<String>,
    pub title: Option<String>,
    pub model: String,
    pub messages: Vec<Message>,
}

/// Writes what is queued; `Err` says why it could not.
pub async fn flush(store: Option<StoreHandle>) -> Result<(), String> {
    let Some(store) = store else { return Ok(()) };
    tokio::task::spawn_blocking(move || store.flush().map_err(|e| e.to_string()))
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
}

/// `Err` with the reason when the history could not be opened (`off_reason`) and the
/// conversation has messages: nothing of it is stored.
pub fn never_opened(off_reason: Option<&str>, has_messages: bool) -> Result<(), String> {
    match off_reason {
        Some(why) if has_messages => Err(format!("the history could not be opened ({why})")),
        _ => Ok(()),
    }
}

/// The reason, saying so when the screen closed before a reopened conversation's `earlier`
/// messages were read: the offer then holds the rest alone, and those are in the history.
#[must_use]
pub fn tail_only(reason: String, earlier: Option<usize>) -> String {
    match earlier {
        Some(n) => format!(
            "{reason} (the screen closed before the {n} earlier messages of this reopened conversation \
             were read: what is offered here is the rest; those {n} are in the history, where they were read from)"
        ),
        None => reason,
    }
}

/// Asks what to do with a conversation that could not be saved, on the restored terminal;
/// returns the exit status: `status` once it is written or saved, 1 when the user leaves it.
pub async fn offer(store: Option<StoreHandle>, conv: Unsaved, reason: String, status: u8) -> u8 {
    let default_path = format!("palaver-unsaved-{}.json", conv.id.as_deref().unwrap_or("conversation"));
    let mut reason = reason;
    loop {
        eprintln!("palaver: {reason}");
        eprintln!("palaver: this conversation is not in the history. What now?");
        eprint!("  w [PATH]  write it to {default_path} (or PATH) · r  retry saving · q  quit without it: ");
        let _ = std::io::stderr().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut s = String::new();
            std::io::stdin().lock().read_line(&mut s).map(|n| (n > 0).then_some(s))
        })
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
        let Some(line) = line else { return 1 };
        let line = line.trim();
        match line.split_once(' ').map_or((line, ""), |(a, b)| (a, b.trim())) {
            ("w", path) => {
                let path = if path.is_empty() { default_path.as_str() } else { path };
                match write(&conv, path) {
                    Ok(()) => {
                        eprintln!("palaver: wrote the conversation to {path}");
                        return status;
                    }
                    Err(e) => reason = format!("cannot write {path}: {e}"),
                }
            }
            ("r", _) if store.is_none() => {
                reason =
                    "the history is not open, so there is nothing to retry: w writes the conversation to a file".into();
            }
            ("r", _) => match flush(store.clone()).await {
                Ok(()) => {
                    eprintln!("palaver: the history is saved");
                    return status;
                }
                Err(e) => reason = e,
            },
            ("q", _) => return 1,
            _ => reason = "answer w, r or q".into(),
        }
    }
}

/// The conversation as a JSON export, complete and reloadable.
fn write(conv: &Unsaved, path: &str) -> std::io::Result<()> {
    let now = rfc3339(now_ms());
    let export = Export {
        format: FORMAT.into(),
        version: VERSION,
        id: conv.id.clone().unwrap_or_else(|| "unsaved".into()),
        title: conv.title.clone().unwrap_or_default(),
        model: Some(conv.model.clone()),
        provider: None,
        api: None,
        created_at: now.clone(),
        updated_at: now,
        compare_group: None,
        compare_column: None,
        active_branch: 0,
        messages: conv.messages.clone(),
        branches: Vec::new(),
        attachments: std::collections::BTreeMap::new(),
    }
    .with_blobs();
    let text = serde_json::to_string_pretty(&export).map_err(std::io::Error::other)?;
    std::fs::write(path, crate::sys::secrets::redact(&text).as_bytes())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    #[test]
    fn a_history_that_never_opened_is_offered_only_with_messages() {
        assert!(never_opened(Some("read-only"), true).is_err_and(|e| e.contains("read-only")));
        assert_eq!(never_opened(Some("read-only"), false), Ok(()));
        assert_eq!(never_opened(None, true), Ok(()));
    }

    #[test]
    fn an_offer_made_before_the_head_was_read_says_it_holds_the_rest() {
        let said = tail_only("disk full".into(), Some(9_800));
        assert!(said.starts_with("disk full ("), "{said}");
        assert!(said.contains("9800 earlier messages") && said.contains("in the history"), "{said}");
        assert_eq!(tail_only("disk full".into(), None), "disk full");
    }

    #[test]
    fn the_written_file_is_a_reloadable_export() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.json");
        let conv = Unsaved {
            id: Some("20260101-000000-abcd".into()),
            title: Some("t".into()),
            model: "m".into(),
            messages: vec![Message::user("hello"), Message::with_text(crate::engine::message::Role::Assistant, "hi")],
        };
        write(&conv, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let back = crate::store::export::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.messages.len(), 2);
        assert_eq!(back.messages[1].text(), "hi");
    }
}
