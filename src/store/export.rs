//! Exports: Markdown for reading (tool calls in fenced blocks, usage per message) and JSON that
//! is complete and reloadable (every message field, every branch, every attachment's bytes); a
//! compare exports as its columns. Import (`import.rs`) is the inverse of the JSON export.

use super::ids::rfc3339;
use super::{StoreError, StoreHandle, StoredConversation, read};
use crate::engine::message::{Message, Role};
use crate::engine::usage::UsageView;
use crate::text::code::fence;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The `format` tag of a JSON export.
pub const FORMAT: &str = "palaver.conversation";
/// The `format` tag of a compare's JSON export: its columns, each a conversation export.
pub const COMPARE_FORMAT: &str = "palaver.compare";
/// The export layout version.
pub const VERSION: u32 = 1;

/// A compare as exported to JSON: its group id and its columns in column order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareExport {
    pub format: String,
    pub version: u32,
    /// The compare group's id.
    pub id: String,
    pub title: String,
    pub created_at: String,
    pub updated_at: String,
    pub columns: Vec<Export>,
}

/// A conversation as exported to JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    pub format: String,
    pub version: u32,
    pub id: String,
    pub title: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub api: Option<String>,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    pub updated_at: String,
    pub compare_group: Option<String>,
    pub compare_column: Option<u32>,
    pub active_branch: i64,
    /// The active branch's messages in order: what the conversation shows.
    pub messages: Vec<Message>,
    /// Every branch with the rows it holds itself; present only when there is more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<ExportBranch>,
    /// The bytes of every attachment, by SHA-256 (messages name them by hash): each once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attachments: BTreeMap<String, ExportBlob>,
}

/// One attachment's bytes in an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportBlob {
    pub media_type: String,
    /// Standard base64.
    pub data: String,
}

impl Export {
    /// Fills `attachments` from the bytes the messages carry.
    #[must_use]
    pub fn with_blobs(mut self) -> Self {
        let rows = self.branches.iter().flat_map(|b| b.messages.iter().map(|r| &r.message));
        for m in self.messages.iter().chain(rows) {
            // A message's own attachments and its tool calls' images alike.
            for a in m.all_attachments() {
                let Some(d) = &a.data else { continue };
                self.attachments.entry(a.sha256.clone()).or_insert_with(|| ExportBlob {
                    media_type: a.media_type.clone(),
                    data: base64::engine::general_purpose::STANDARD.encode(d.bytes()),
                });
            }
        }
        self
    }

    /// A message with its attachments' bytes put back from `attachments`.
    pub(crate) fn restored(&self, m: &Message) -> Message {
        let mut m = m.clone();
        for a in m.all_attachments_mut().filter(|a| a.data.is_none()) {
            let bytes = self
                .attachments
                .get(&a.sha256)
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(&b.data).ok());
            // Bytes that do not hash to their name are not put back under it.
            a.data = bytes
                .filter(|b| crate::engine::attachment::sha256_hex(b) == a.sha256)
                .map(crate::engine::attachment::Blob::new);
        }
        m
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportBranch {
    pub branch: i64,
    pub parent: Option<i64>,
    pub fork_position: usize,
    pub created_at: String,
    pub messages: Vec<ExportRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportRow {
    pub position: usize,
    pub message: Message,
}

/// Reads a conversation for export (`None` when there is no such id).
///
/// # Errors
/// A database error.
pub fn export(store: &StoreHandle, id: &str) -> Result<Option<Export>, StoreError> {
    store.with_reader(|db| {
        let Some(conv) = read::load(db, id, None)? else { return Ok(None) };
        let mut branches = Vec::new();
        if conv.branches.len() > 1 {
            for b in &conv.branches {
                let rows = read::rows(db, id, b.branch, 0, i64::MAX)?;
                branches.push(ExportBranch {
                    branch: b.branch,
                    parent: b.parent,
                    fork_position: b.fork_position,
                    created_at: rfc3339(b.created_at),
                    messages: rows.into_iter().map(|(_, position, message)| ExportRow { position, message }).collect(),
                });
            }
        }
        let s = conv.summary;
        Ok(Some(
            Export {
                format: FORMAT.into(),
                version: VERSION,
                id: s.id,
                title: s.title,
                model: s.model,
                provider: s.provider,
                api: s.api,
                created_at: rfc3339(s.created_at),
                updated_at: rfc3339(s.updated_at),
                compare_group: s.compare_group,
                compare_column: s.compare_column,
                active_branch: conv.branch,
                messages: conv.messages,
                branches,
                attachments: BTreeMap::new(),
            }
            .with_blobs(),
        ))
    })
}

/// Parses a JSON export of one conversation (see [`super::import::parse`] for a compare too).
///
/// # Errors
/// Not JSON, not an export, a newer layout, or a file that does not hold together.
pub fn parse(json: &str) -> Result<Export, StoreError> {
    match super::import::parse(json)? {
        super::import::Document::Conversation(e) => Ok(*e),
        super::import::Document::Compare(_) => {
            Err(StoreError::Invalid("a compare export (several conversations), not one conversation".into()))
        }
    }
}

/// Writes an export into the store in one transaction and waits until it is on disk. Keeps
/// the exported id unless the store already has it; returns the id used.
///
/// # Errors
/// A database error, or writes that failed.
pub fn import(store: &StoreHandle, e: &Export) -> Result<String, StoreError> {
    let done = store.import(super::import::Document::Conversation(Box::new(e.clone())))?;
    done.into_iter().next().map(|i| i.id).ok_or(StoreError::Closed)
}

/// A compare's columns read for export, in column order (`None` when there is no such group).
///
/// # Errors
/// A database error.
pub fn export_compare(store: &StoreHandle, group: &str) -> Result<Option<CompareExport>, StoreError> {
    let Some(entry) = store.compare_entry(group)? else { return Ok(None) };
    let mut columns = Vec::with_capacity(entry.columns.len());
    for c in &entry.columns {
        columns.extend(export(store, &c.id)?);
    }
    Ok(Some(CompareExport {
        format: COMPARE_FORMAT.into(),
        version: VERSION,
        id: entry.id,
        title: entry.title,
        created_at: rfc3339(entry.created_at),
        updated_at: rfc3339(entry.updated_at),
        columns,
    }))
}

fn block(out: &mut String, lang: &str, text: &str) {
    let f = fence(text);
    let nl = if text.ends_with('\n') { "" } else { "\n" };
    let _ = write!(out, "{f}{lang}\n{text}{nl}{f}\n\n");
}

/// Arguments pretty-printed when they are valid JSON, verbatim otherwise.
fn pretty(args: &str) -> String {
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| args.to_owned())
}

pub(crate) fn usage_line(m: &Message) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(r) = m.main().finish_reason.as_deref() {
        parts.push(format!("finish: {r}"));
    }
    match &m.usage {
        Some(u) => {
            let v = UsageView::from_raw(u);
            let with = |n: Option<u64>, extra: Option<(&str, Option<u64>)>| {
                let extra = extra.and_then(|(k, x)| x.map(|x| format!(" ({x} {k})"))).unwrap_or_default();
                n.map(|n| format!("{n}{extra}"))
            };
            if let Some(p) = with(v.prompt, Some(("cached", v.cached))) {
                parts.push(format!("prompt {p}"));
            }
            if let Some(c) = with(v.completion, Some(("reasoning", v.reasoning))) {
                parts.push(format!("completion {c}"));
            }
            if let Some(t) = v.total {
                parts.push(format!("total {t}"));
            }
        }
        None if m.role() == Role::Assistant => parts.push("no usage sent".into()),
        None => {}
    }
    if let Some(t) = m.timing.ttft_ms {
        parts.push(format!("ttft {t} ms"));
    }
    if let Some(t) = m.timing.total_ms {
        parts.push(format!("{t} ms"));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// Readable Markdown of the loaded branch.
#[must_use]
pub fn to_markdown(c: &StoredConversation) -> String {
    to_markdown_linking(c, "attachments")
}

/// The file name an attachment is written under beside a Markdown export: its hash first, so
/// two files of the same name never collide, then a name safe on every file system.
#[must_use]
pub fn attachment_file_name(a: &crate::engine::attachment::Attachment) -> String {
    let safe: String = a
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .take(80)
        .collect();
    format!("{}-{safe}", a.short_hash())
}

/// Readable Markdown whose attachments link to files in `dir` (relative to the Markdown file).
#[must_use]
pub fn to_markdown_linking(c: &StoredConversation, dir: &str) -> String {
    let s = &c.summary;
    let mut out = format!("# {}\n\n", if s.title.is_empty() { "(untitled)".to_owned() } else { line(&s.title) });
    let facts: Vec<String> = [Some(code(&s.id)), s.model.as_deref().map(line), s.provider.as_deref().map(line)]
        .into_iter()
        .chain([s.api.as_deref().map(line)])
        .flatten()
        .chain([format!("created {}", rfc3339(s.created_at)), format!("updated {}", rfc3339(s.updated_at))])
        .collect();
    let _ = write!(out, "{}\n\n", facts.join(" · "));
    for m in &c.messages {
        message_markdown(&mut out, m);
        for a in &m.attachments {
            let target = a.url.clone().unwrap_or_else(|| format!("{dir}/{}", attachment_file_name(a)));
            let bang = if a.is_image() { "!" } else { "" };
            let name = line(&a.name.replace(['[', ']'], "_"));
            if crate::text::markdown::is_script_url(&target) || target.contains(['<', '>', '\n']) {
                // A URL that would run script, or break out of its `<…>`, is not linked.
                let _ = write!(out, "{name} · {}\n\n", line(&a.describe()));
            } else {
                let _ = write!(out, "{bang}[{name}](<{target}>) · {}\n\n", line(&a.describe()));
            }
        }
    }
    out
}

/// Untrusted text as Markdown (an answer, its reasoning): raw HTML and script links escaped.
fn md(s: &str) -> String {
    crate::text::markdown::escape(s, crate::text::markdown::Place::Block)
}

/// Untrusted text on one line of a heading or a list of facts: plain text.
fn line(s: &str) -> String {
    crate::text::markdown::escape(s, crate::text::markdown::Place::Line)
}

/// A name or an id in a code span, where Markdown and HTML are text; one that would close the
/// span (a backtick, a line break) is written as plain text instead.
fn code(s: &str) -> String {
    if s.contains(['`', '\n', '\r']) { line(s) } else { format!("`{s}`") }
}

fn message_markdown(out: &mut String, m: &Message) {
    let main = m.main();
    let who = match m.role() {
        Role::User => "You".to_owned(),
        Role::System => "System".to_owned(),
        Role::Tool => format!("Tool result {}", code(m.tool_call_id.as_deref().unwrap_or("?"))),
        Role::Assistant => {
            format!("Assistant{}", m.model.as_deref().map(|x| format!(" · {}", line(x))).unwrap_or_default())
        }
    };
    // A summary that stands for the turns above it in what was sent after it.
    let who = match &m.compaction {
        Some(c) => format!("{who} · summary of the {} turns above (compacted)", c.turns),
        None => who,
    };
    let status = if m.status == crate::engine::message::MessageStatus::Complete {
        String::new()
    } else {
        format!(" ({})", super::ops::enum_str(&m.status))
    };
    let _ = write!(out, "---\n\n### {who}{status}\n\n");
    if !main.reasoning.is_empty() {
        let _ =
            write!(out, "<details><summary>Reasoning</summary>\n\n{}\n\n</details>\n\n", md(main.reasoning.trim_end()));
    }
    if m.role() == Role::Tool {
        block(out, "", &main.content);
    } else if !main.content.is_empty() {
        let _ = write!(out, "{}\n\n", md(main.content.trim_end()));
    }
    if !main.refusal.is_empty() {
        let _ = write!(out, "> **Refusal:** {}\n\n", md(main.refusal.trim_end()).replace('\n', "\n> "));
    }
    for t in &main.tool_calls {
        let ms = t.duration_ms.map(|d| format!(" · {d} ms")).unwrap_or_default();
        let _ = write!(
            out,
            "**Tool call** {} · {} · {}{ms}\n\n",
            code(&t.name),
            code(&t.id),
            super::ops::enum_str(&t.status)
        );
        out.push_str("Arguments:\n\n");
        block(out, "json", &pretty(&t.arguments));
        if let Some(o) = &t.output {
            out.push_str("Output:\n\n");
            block(out, "", o);
        }
    }
    if let Some(e) = &m.error {
        let code = e.status.map(|s| format!(" HTTP {s}")).unwrap_or_default();
        let _ = write!(out, "**Error** ({}{code}): {}\n\n", e.kind, line(&e.message));
    }
    if let Some(line) = usage_line(m) {
        let _ = write!(out, "*{line}*\n\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_their_content() {
        assert_eq!(fence("a ``` b"), "````");
        assert_eq!(fence("plain"), "```");
    }
}
