//! Reading an export back: `history import FILE` takes what `history export --format json`
//! wrote (one conversation, or a compare with its columns) and the chat screen's "save to a
//! file" wrote. The file is untrusted: it is checked whole before anything is written — JSON,
//! format and version, every message, ids that are safe to use as names, times, branches that
//! form one tree, attachments whose bytes match their hashes — and a file that fails says what
//! is wrong and where. Writing is one transaction (`import_apply.rs`): all of it or nothing.

use super::StoreError;
use super::export::{COMPARE_FORMAT, CompareExport, Export, ExportBlob, ExportBranch, FORMAT, VERSION};
use super::ids::parse_rfc3339;
use crate::engine::attachment::{is_sha256, sha256_hex};
use crate::engine::message::{Message, MessageStatus};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The largest file `history import` reads (attachments travel inside it as base64).
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;
/// The longest id (conversation or compare group) an import keeps.
pub const MAX_ID_CHARS: usize = 64;
/// The most columns a compare export may hold.
pub const MAX_COLUMNS: usize = 16;
const MAX_TITLE_BYTES: usize = 64 * 1024;
const MAX_NAME_BYTES: usize = 4 * 1024;

/// What an export file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    Conversation(Box<Export>),
    Compare(Box<CompareExport>),
}

impl Document {
    /// The conversations to write, in order (a compare's columns in column order).
    #[must_use]
    pub fn conversations(&self) -> Vec<&Export> {
        match self {
            Self::Conversation(e) => vec![e],
            Self::Compare(c) => c.columns.iter().collect(),
        }
    }
}

/// Whether `id` is safe to keep as a conversation or compare id: 1–64 ASCII letters, digits,
/// `.`, `_` or `-`, not starting with `-` or `.` (it must never read as a flag or a path).
#[must_use]
pub fn is_safe_id(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !id.starts_with(['-', '.'])
}

/// At most 60 characters of a value from the file, quoted with escapes, for an error message.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(60).collect();
    let more = if cut.len() < s.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    format: Option<Value>,
    #[serde(default)]
    version: Option<Value>,
}

/// Parses and checks an export. Nothing is written.
///
/// # Errors
/// [`StoreError::Invalid`] naming what is wrong and where.
pub fn parse(text: &str) -> Result<Document, StoreError> {
    let bad = |m: String| StoreError::Invalid(m);
    let object = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']).starts_with('{');
    let head: Head = serde_json::from_str(text).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            bad(format!("not JSON: {e}"))
        } else {
            bad("not a palaver export: the file is JSON but not an object".into())
        }
    })?;
    if !object {
        return Err(bad("not a palaver export: the file is JSON but not an object".into()));
    }
    let compare = match head.format.as_ref().and_then(Value::as_str) {
        Some(FORMAT) => false,
        Some(COMPARE_FORMAT) => true,
        Some(other) => {
            return Err(bad(format!("not a palaver export: format is {}, not {FORMAT:?}", shown(other))));
        }
        None => return Err(bad(format!("not a palaver export: no \"format\": {FORMAT:?}"))),
    };
    match head.version.as_ref().and_then(Value::as_u64) {
        Some(v) if (1..=u64::from(VERSION)).contains(&v) => {}
        Some(v) if v > u64::from(VERSION) => {
            return Err(bad(format!("version {v} comes from a newer palaver (this one reads up to {VERSION})")));
        }
        _ => return Err(bad(format!("no valid \"version\" (a number from 1 to {VERSION})"))),
    }
    let mut doc = if compare {
        let c: CompareExport =
            serde_json::from_str(text).map_err(|e| bad(diagnose(text, true).unwrap_or_else(|| e.to_string())))?;
        check_compare(&c).map_err(bad)?;
        Document::Compare(Box::new(c))
    } else {
        let e: Export =
            serde_json::from_str(text).map_err(|e| bad(diagnose(text, false).unwrap_or_else(|| e.to_string())))?;
        check(&e, "").map_err(bad)?;
        Document::Conversation(Box::new(e))
    };
    settle_live(&mut doc);
    Ok(doc)
}

/// Replies exported while they streamed are stored as interrupted: no palaver is writing them.
fn settle_live(doc: &mut Document) {
    let convs: Vec<&mut Export> = match doc {
        Document::Conversation(e) => vec![&mut **e],
        Document::Compare(c) => c.columns.iter_mut().collect(),
    };
    for e in convs {
        let rows = e.branches.iter_mut().flat_map(|b| b.messages.iter_mut().map(|r| &mut r.message));
        for m in e.messages.iter_mut().chain(rows) {
            if m.is_live() {
                m.status = MessageStatus::Interrupted;
            }
        }
    }
}

/// Finds where a file that does not deserialize goes wrong, part by part, so the message names
/// the message or branch at fault rather than a line number in a megabyte of JSON.
fn diagnose(text: &str, compare: bool) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    if !compare {
        return diagnose_conversation(&v, "");
    }
    if let Some(Value::Array(cols)) = v.get("columns") {
        for (i, c) in cols.iter().enumerate() {
            if let Some(e) = diagnose_conversation(c, &format!("columns[{i}].")) {
                return Some(e);
            }
        }
    }
    let mut top = v.as_object()?.clone();
    top.insert("columns".into(), Value::Array(Vec::new()));
    CompareExport::deserialize(Value::Object(top)).err().map(|e| e.to_string())
}

fn diagnose_conversation(v: &Value, at: &str) -> Option<String> {
    let Some(obj) = v.as_object() else { return Some(top_level(at, "not an object")) };
    let mut top = obj.clone();
    if let Some(Value::Array(ms)) = obj.get("messages") {
        for (i, m) in ms.iter().enumerate() {
            if let Err(e) = Message::deserialize(m) {
                return Some(format!("{at}messages[{i}]: {e}"));
            }
        }
        top.insert("messages".into(), Value::Array(Vec::new()));
    }
    if let Some(Value::Array(bs)) = obj.get("branches") {
        for (i, b) in bs.iter().enumerate() {
            let rows = b.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            for (j, r) in rows.iter().enumerate() {
                if let Some(Err(e)) = r.get("message").map(Message::deserialize) {
                    return Some(format!("{at}branches[{i}].messages[{j}].message: {e}"));
                }
            }
            let mut head = b.clone();
            if let Some(o) = head.as_object_mut() {
                o.insert("messages".into(), Value::Array(Vec::new()));
            }
            if let Err(e) = ExportBranch::deserialize(&head) {
                return Some(format!("{at}branches[{i}]: {e}"));
            }
        }
        top.insert("branches".into(), Value::Array(Vec::new()));
    }
    if let Some(Value::Object(blobs)) = obj.get("attachments") {
        for (k, b) in blobs {
            if let Err(e) = ExportBlob::deserialize(b) {
                return Some(format!("{at}attachments[{}]: {e}", shown(k)));
            }
        }
    }
    Export::deserialize(Value::Object(top)).err().map(|e| top_level(at, &e.to_string()))
}

/// A message about the object at `at` itself (`columns[1].` → `columns[1]: …`).
fn top_level(at: &str, msg: &str) -> String {
    match at.strip_suffix('.') {
        Some(place) => format!("{place}: {msg}"),
        None => msg.to_owned(),
    }
}

fn check_compare(c: &CompareExport) -> Result<(), String> {
    if !is_safe_id(&c.id) {
        return Err(format!(
            "id {} is not a compare id (letters, digits, . _ -; at most {MAX_ID_CHARS})",
            shown(&c.id)
        ));
    }
    if c.columns.is_empty() || c.columns.len() > MAX_COLUMNS {
        return Err(format!("a compare holds 1 to {MAX_COLUMNS} columns; this one has {}", c.columns.len()));
    }
    let mut seen = HashSet::new();
    for (i, col) in c.columns.iter().enumerate() {
        let at = format!("columns[{i}].");
        if col.format != FORMAT {
            return Err(format!("{at}format is {}, not {FORMAT:?}", shown(&col.format)));
        }
        check(col, &at)?;
        if !seen.insert(col.compare_column.unwrap_or(u32::try_from(i).unwrap_or(u32::MAX))) {
            return Err(top_level(&at, "compare_column repeats another column's"));
        }
    }
    time(&c.created_at, "created_at")?;
    time(&c.updated_at, "updated_at")?;
    Ok(())
}

fn time(s: &str, field: &str) -> Result<u64, String> {
    parse_rfc3339(s)
        .ok_or_else(|| format!("{field} {} is not an RFC 3339 time like 2026-01-31T12:00:00.000Z", shown(s)))
}

/// The checks a conversation export must pass; `at` prefixes every place named.
fn check(e: &Export, at: &str) -> Result<(), String> {
    if e.version > VERSION || e.version == 0 {
        return Err(top_level(at, &format!("version {} is not one this palaver reads (1 to {VERSION})", e.version)));
    }
    if !is_safe_id(&e.id) {
        let why =
            format!("id {} is not a conversation id (letters, digits, . _ -; at most {MAX_ID_CHARS})", shown(&e.id));
        return Err(top_level(at, &why));
    }
    if e.title.len() > MAX_TITLE_BYTES {
        return Err(format!("{at}title is {} bytes; at most {MAX_TITLE_BYTES}", e.title.len()));
    }
    for (name, v) in [("model", &e.model), ("provider", &e.provider), ("api", &e.api)] {
        if v.as_ref().is_some_and(|v| v.len() > MAX_NAME_BYTES) {
            return Err(format!("{at}{name} is longer than {MAX_NAME_BYTES} bytes"));
        }
    }
    time(&e.created_at, &format!("{at}created_at"))?;
    time(&e.updated_at, &format!("{at}updated_at"))?;
    match (&e.compare_group, e.compare_column) {
        (Some(g), Some(_)) if !is_safe_id(g) => {
            return Err(format!("{at}compare_group {} is not a compare id", shown(g)));
        }
        (Some(_), None) => return Err(top_level(at, "compare_group is set without a compare_column")),
        _ => {}
    }
    check_branches(e, at)?;
    check_blobs(e, at)
}

/// Branches must form one tree rooted at branch 0, each row at or after its branch's fork, and
/// `messages` must be what the active branch shows (else the file was edited in one place only).
fn check_branches(e: &Export, at: &str) -> Result<(), String> {
    if e.branches.is_empty() {
        if e.active_branch != 0 {
            let why = format!("active_branch {} names no branch (the file has only branch 0)", e.active_branch);
            return Err(top_level(at, &why));
        }
        return Ok(());
    }
    let mut parents: HashMap<i64, (Option<i64>, usize)> = HashMap::new();
    for (i, b) in e.branches.iter().enumerate() {
        let here = format!("{at}branches[{i}]");
        if parents.insert(b.branch, (b.parent, b.fork_position)).is_some() {
            return Err(format!("{here}: branch {} appears twice", b.branch));
        }
        time(&b.created_at, &format!("{here}.created_at"))?;
        if (b.branch == 0) != b.parent.is_none() {
            return Err(format!("{here}: branch 0 is the root (no parent); every other branch has one"));
        }
        let mut positions = HashSet::new();
        for r in &b.messages {
            if !positions.insert(r.position) {
                return Err(format!("{here}: position {} appears twice", r.position));
            }
            if b.parent.is_some() && r.position < b.fork_position {
                return Err(format!("{here}: position {} is before its fork at {}", r.position, b.fork_position));
            }
        }
    }
    if !parents.contains_key(&0) {
        return Err(top_level(at, "branches: no root branch 0"));
    }
    for (i, b) in e.branches.iter().enumerate() {
        // Every branch reaches the root in fewer steps than there are branches: no cycle.
        let mut cur = b.parent;
        for _ in 0..=parents.len() {
            match cur {
                None => break,
                Some(p) => match parents.get(&p) {
                    Some(&(next, _)) => cur = next,
                    None => return Err(format!("{at}branches[{i}]: parent {p} is not a branch of the file")),
                },
            }
        }
        if cur.is_some() {
            return Err(format!("{at}branches[{i}]: its parents go round in a circle"));
        }
    }
    if !parents.contains_key(&e.active_branch) {
        return Err(top_level(at, &format!("active_branch {} is not one of the branches", e.active_branch)));
    }
    let view = view(e, &parents);
    // Frames are left out: `messages` carries them, branch rows do not.
    let frameless = |m: &Message| Message { frames: Vec::new(), ..m.clone() };
    let same =
        view.len() == e.messages.len() && view.iter().zip(&e.messages).all(|(a, b)| frameless(a) == frameless(b));
    if !same {
        let why = format!(
            "messages do not match what branch {} holds in branches (was one edited without the other?)",
            e.active_branch
        );
        return Err(top_level(at, &why));
    }
    Ok(())
}

/// The active branch's messages as the store would show them: each branch's own rows from its
/// fork on, earlier positions from its parent (as `read::segments` walks them).
fn view<'a>(e: &'a Export, parents: &HashMap<i64, (Option<i64>, usize)>) -> Vec<&'a Message> {
    let at = |p: usize| i64::try_from(p).unwrap_or(i64::MAX);
    let parent_of = |b| {
        let (parent, fork) = parents.get(&b).copied().unwrap_or((None, 0));
        Ok::<_, std::convert::Infallible>((parent, at(fork)))
    };
    let segs = super::read::walk_segments(e.active_branch, parents.len() + 1, parent_of).unwrap_or_default();
    let mut out = Vec::new();
    for (b, lo, hi) in segs {
        let Some(branch) = e.branches.iter().find(|x| x.branch == b) else { continue };
        let mut rows: Vec<_> = branch.messages.iter().filter(|r| at(r.position) >= lo && at(r.position) < hi).collect();
        rows.sort_by_key(|r| r.position);
        out.extend(rows.into_iter().map(|r| &r.message));
    }
    out
}

/// Every attachment's bytes must be base64 and hash to the name they are filed under.
fn check_blobs(e: &Export, at: &str) -> Result<(), String> {
    for (hash, blob) in &e.attachments {
        let here = format!("{at}attachments[{}]", shown(hash));
        if !is_sha256(hash) {
            return Err(format!("{here}: not a SHA-256 (64 lowercase hex digits)"));
        }
        if blob.media_type.len() > MAX_NAME_BYTES {
            return Err(format!("{here}: media_type is longer than {MAX_NAME_BYTES} bytes"));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&blob.data)
            .map_err(|err| format!("{here}: data is not base64 ({err})"))?;
        if sha256_hex(&bytes) != *hash {
            return Err(format!("{here}: the bytes do not match their SHA-256 (the file was changed)"));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
