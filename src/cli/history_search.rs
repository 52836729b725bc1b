//! `palaver history search TEXT`: the chat screen's search (Ctrl+L) on the command line — the
//! same store query (every word must match, the last also as the start of a word; newest
//! first). One hit a line, the conversation's ID first so `history show` can take it; the
//! snippet flattened to one line and sanitised. No match is not an error: nothing on stdout,
//! a note on stderr, exit 0 (a script tests for empty output).

use crate::cli::exit::{EXIT_OK, EXIT_USAGE};
use crate::store::ids::{rfc3339, short_date};
use crate::store::read::fts_query;
use crate::store::{Hit, StoreError, StoreHandle};
use crate::ui::sanitize::sanitize;
use serde_json::json;
use std::io::Write;

/// The query has nothing to search for (exit 2), else `None`.
fn unsearchable(text: &str) -> Option<u8> {
    if fts_query(text).is_some() {
        return None;
    }
    say!("nothing to search for in “{}”: give a word with letters or digits", sanitize(text));
    Some(EXIT_USAGE)
}

/// There is no history yet, so nothing matches.
pub fn none_stored(text: &str, _limit: usize) -> u8 {
    if let Some(code) = unsearchable(text) {
        return code;
    }
    no_match(text);
    EXIT_OK
}

fn no_match(text: &str) {
    say!("no message matches “{}”", sanitize(text.trim()));
}

/// Searches and prints the hits.
///
/// # Errors
/// A database error.
pub fn run(store: &StoreHandle, text: &str, limit: usize, json: bool) -> Result<u8, StoreError> {
    if let Some(code) = unsearchable(text) {
        return Ok(code);
    }
    // One more than asked, to know whether there are more.
    let mut hits = store.search(text, limit.saturating_add(1))?;
    let more = hits.len() > limit;
    hits.truncate(limit);
    if hits.is_empty() {
        no_match(text);
        return Ok(EXIT_OK);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for h in &hits {
        let line = if json { hit_json(h).to_string() } else { hit_line(h) };
        if writeln!(out, "{line}").is_err() {
            break; // stdout closed (`| head`): not an error
        }
    }
    let _ = out.flush();
    if more {
        say!("the newest {limit} matches; --limit N shows more");
    }
    Ok(EXIT_OK)
}

/// Who wrote the matched message, as the chat screen's list says it; a compare column adds its
/// model and compare.
fn who(h: &Hit) -> String {
    let role = match h.role.as_str() {
        "user" => "you",
        "assistant" => "reply",
        "tool" => "tool result",
        other => other,
    };
    match &h.compare_group {
        Some(g) => format!("{role} ({} in compare {g})", h.model.as_deref().unwrap_or("-")),
        None => role.to_owned(),
    }
}

/// `ID  date  who  “title”: snippet`, on one line, safe for a terminal.
#[must_use]
pub fn hit_line(h: &Hit) -> String {
    let snippet = h.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "{}  {}  {}  “{}”: {}",
        h.conversation_id,
        short_date(h.updated_at),
        sanitize(&who(h)),
        sanitize(&h.title),
        sanitize(&snippet)
    )
}

/// A hit as JSON: the snippet as stored, `ranges` the byte ranges of the matched words in it.
#[must_use]
pub fn hit_json(h: &Hit) -> serde_json::Value {
    let ranges: Vec<[usize; 2]> = h.ranges.iter().map(|r| [r.start, r.end]).collect();
    json!({"id": h.conversation_id, "title": h.title, "role": h.role, "model": h.model,
        "compare": h.compare_group, "branch": h.branch, "position": h.position,
        "snippet": h.snippet, "ranges": ranges, "updated_at": rfc3339(h.updated_at)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(snippet: &str, group: Option<&str>) -> Hit {
        Hit {
            conversation_id: "20260101-000000-abcd".into(),
            title: "t\u{1b}[2J".into(),
            branch: 0,
            position: 1,
            role: "assistant".into(),
            snippet: snippet.into(),
            ranges: std::iter::once(0..3).collect(),
            updated_at: 0,
            model: Some("demo".into()),
            compare_group: group.map(Into::into),
        }
    }

    #[test]
    fn a_hit_is_one_safe_line_its_id_first() {
        let line = hit_line(&hit("the\nborrow \u{1b}]52;c;x\u{7} checker", None));
        assert!(line.starts_with("20260101-000000-abcd  1970-01-01 00:00  reply  “t"), "{line}");
        assert!(!line.contains('\n') && !line.contains('\u{1b}') && !line.contains('\u{7}'), "{line:?}");
        assert!(line.contains("the borrow"), "{line}");
        let col = hit_line(&hit("x", Some("cmp-1")));
        assert!(col.contains("reply (demo in compare cmp-1)"), "{col}");
        let v = hit_json(&hit("abc", Some("cmp-1")));
        assert_eq!(v["ranges"], json!([[0, 3]]));
        assert_eq!(v["compare"], "cmp-1");
    }
}
