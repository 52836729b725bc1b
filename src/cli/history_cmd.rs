//! The `history` subcommands (DESIGN.md §2): `list` (a compare is one entry, its columns inside
//! it), `show`, `export` and `rm` of a conversation or a whole compare, `search` (the chat
//! screen's search) and `import` (in `history_import.rs`). Everything from the store or a file
//! is sanitised before it reaches the terminal; `--json` keeps the bytes (JSON escapes them).

use super::{plural, unknown};
use crate::cli::args::{ExportFormat, HistoryAction};
use crate::cli::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use crate::config::Paths;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::store::entries::{EntryRef, ListEntry};
use crate::store::export;
use crate::store::ids::{rfc3339, short_date};
use crate::store::{StoreError, StoreHandle, StoreOptions, StoredConversation};
use crate::ui::sanitize::sanitize;
use serde_json::json;
use std::io::Write;

#[path = "history_battles.rs"]
mod battles;
#[path = "history_import.rs"]
mod import;
#[path = "history_search.rs"]
mod search;

/// Runs a `history` subcommand; returns the exit status.
pub fn run(action: &HistoryAction, json: bool, paths: &Paths) -> u8 {
    let path = paths.database();
    if let HistoryAction::Import { file } = action {
        return import::run(file, json, &path);
    }
    if !path.exists() {
        // Nothing stored yet: an empty list, no match, and no conversation to show.
        return match action {
            HistoryAction::List | HistoryAction::Import { .. } => EXIT_OK,
            HistoryAction::Search { text, limit } => search::none_stored(&text.join(" "), *limit),
            HistoryAction::Show { id } | HistoryAction::Export { id, .. } | HistoryAction::Rm { id } => unknown(id),
        };
    }
    let store = match StoreHandle::open(&path, StoreOptions::default()) {
        Ok(s) => s,
        // A read-only directory or a full disk still lets the history be read.
        Err(e) => match (action, StoreHandle::open_read_only(&path, StoreOptions::default())) {
            (HistoryAction::Rm { .. }, _) | (_, Err(_)) => {
                say!("cannot open the history at {}: {e}", path.display());
                return EXIT_PROVIDER;
            }
            (_, Ok(s)) => s,
        },
    };
    let result = match action {
        HistoryAction::List => list(&store, json),
        HistoryAction::Show { id } => with_entry(&store, id, |e| show(&store, e, &path)),
        HistoryAction::Export { id, format } => with_entry(&store, id, |e| export_entry(&store, e, *format)),
        HistoryAction::Rm { id } => with_entry(&store, id, |e| rm(&store, e)),
        HistoryAction::Search { text, limit } => search::run(&store, &text.join(" "), *limit, json),
        HistoryAction::Import { .. } => Ok(EXIT_OK),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("{e}");
            EXIT_PROVIDER
        }
    }
}

/// Resolves an id or unique prefix (of a conversation or a compare), then runs `f` with it.
fn with_entry(
    store: &StoreHandle,
    id: &str,
    f: impl FnOnce(&EntryRef) -> Result<u8, StoreError>,
) -> Result<u8, StoreError> {
    match store.resolve_entry(id) {
        Ok(Some(entry)) => f(&entry),
        Ok(None) => Ok(unknown(id)),
        Err(e @ StoreError::Ambiguous { .. }) => {
            say!("{e}");
            Ok(EXIT_USAGE)
        }
        Err(e) => Err(e),
    }
}

fn list(store: &StoreHandle, json: bool) -> Result<u8, StoreError> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for e in store.list_entries(usize::MAX, 0)? {
        let line = if json { list_json(&e).to_string() } else { list_line(&e) };
        if writeln!(out, "{line}").is_err() {
            break; // stdout closed (`| head`): not an error
        }
    }
    let _ = out.flush();
    Ok(EXIT_OK)
}

/// `ID  date  model  N msgs  title`; a compare names its models where a conversation has one.
fn list_line(e: &ListEntry) -> String {
    let n = e.messages;
    let model = if e.is_compare() {
        format!("compare · {} model{} ({})", e.columns.len(), plural(e.columns.len() as u64), e.models().join(", "))
    } else {
        e.model.clone().unwrap_or_else(|| "-".into())
    };
    format!(
        "{}  {}  {}  {n} msg{}  {}",
        e.id,
        short_date(e.updated_at),
        sanitize(&model),
        plural(n),
        sanitize(&e.title)
    )
}

/// The contract's line (`id`, `title`, `model`, `updated_at`, `messages`); a compare has
/// `model: null`, the sum of its columns' messages, and `columns`.
fn list_json(e: &ListEntry) -> serde_json::Value {
    let mut v = json!({"id": e.id, "title": e.title, "model": e.model,
        "updated_at": rfc3339(e.updated_at), "messages": e.messages});
    if e.is_compare() {
        let columns: Vec<_> = e
            .columns
            .iter()
            .map(|c| {
                json!({"id": c.id, "column": c.compare_column, "model": c.model, "provider": c.provider,
                    "updated_at": rfc3339(c.updated_at), "messages": c.messages})
            })
            .collect();
        v["columns"] = columns.into();
    }
    v
}

fn load(store: &StoreHandle, id: &str) -> Result<StoredConversation, StoreError> {
    store.load(id)?.ok_or_else(|| StoreError::Format(format!("conversation {id} vanished while reading")))
}

fn compare_entry(store: &StoreHandle, group: &str) -> Result<ListEntry, StoreError> {
    store.compare_entry(group)?.ok_or_else(|| StoreError::Format(format!("compare {group} vanished while reading")))
}

/// Everything `history` prints (a listing, a transcript, an export in any format) goes
/// through the one redactor: a store written before it, or by an older palaver, may hold a
/// secret it knows. JSON stays JSON (a secret's escaped form is searched, the mark needs none).
fn write_out(text: &str) -> Result<u8, StoreError> {
    let text = crate::sys::secrets::redact(text);
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    Ok(EXIT_OK)
}

fn show(store: &StoreHandle, entry: &EntryRef, db: &std::path::Path) -> Result<u8, StoreError> {
    let id = match entry {
        EntryRef::Conversation(id) => id,
        EntryRef::Compare(group) => return show_compare(store, group, db),
    };
    let c = load(store, id)?;
    let s = &c.summary;
    let column = match (&s.compare_group, s.compare_column) {
        (Some(g), col) => format!(
            " · column {} of compare {g} (`palaver history show {g}` shows every column)",
            col.map_or_else(|| "?".into(), |c| (c + 1).to_string())
        ),
        (None, _) => String::new(),
    };
    let mut out = format!(
        "{}\n{} · {} · {}{}\n",
        sanitize(&s.title),
        s.id,
        sanitize(s.model.as_deref().unwrap_or("-")),
        short_date(s.updated_at),
        sanitize(&column)
    );
    for m in &c.messages {
        out.push('\n');
        transcript_message(&mut out, m);
    }
    write_out(&out)
}

/// A compare: a header, then every column's transcript under a rule naming it; an arena's
/// columns battle by battle, each named by its battle and letter (its model after the vote).
fn show_compare(store: &StoreHandle, group: &str, db: &std::path::Path) -> Result<u8, StoreError> {
    let e = compare_entry(store, group)?;
    let n = e.columns.len();
    let fought = battles::of_group(db, group);
    let numbers = battles::numbers(&e.columns);
    let what = match numbers.iter().max() {
        Some(&k) if !fought.is_empty() => format!("arena · {k} battle{}", plural(k as u64)),
        _ => format!("compare · {n} model{}", plural(n as u64)),
    };
    let mut out = format!("{}\n{what} · {} · {}\n", sanitize(&e.title), e.id, short_date(e.updated_at));
    let mut order: Vec<usize> = (0..n).collect();
    if !fought.is_empty() {
        order.sort_by_key(|&i| (numbers[i], e.columns[i].compare_column));
    }
    for i in order {
        let col = &e.columns[i];
        let c = load(store, &col.id)?;
        let position = col.compare_column.map_or(i, |c| c as usize);
        let model = sanitize(col.model.as_deref().unwrap_or("-")).into_owned();
        let rule = if fought.is_empty() {
            format!("column {} · {model}", position + 1)
        } else {
            let battle = fought.iter().find(|b| b.id == format!("{group}/{}", numbers[i]));
            battles::label(numbers[i], position, &model, battle)
        };
        out.push_str(&format!("\n══ {rule} · {} ══\n", col.id));
        for m in &c.messages {
            out.push('\n');
            transcript_message(&mut out, m);
        }
    }
    write_out(&out)
}

/// One message for a terminal: a header line, the text, tool calls; model and tool text is
/// sanitised since it goes straight to the terminal.
fn transcript_message(out: &mut String, m: &Message) {
    let main = m.main();
    let who = crate::store::export_html::speaker(m);
    let status = if m.status == MessageStatus::Complete {
        String::new()
    } else {
        format!(" [{}]", crate::store::ops::enum_str(&m.status))
    };
    out.push_str(&format!("── {} ──{status}\n", sanitize(&who)));
    if !main.reasoning.is_empty() {
        out.push_str(&format!("(reasoning) {}\n", sanitize(main.reasoning.trim_end())));
    }
    if !main.content.is_empty() {
        out.push_str(&format!("{}\n", sanitize(&fold(m, main.content.trim_end()))));
    }
    if !main.refusal.is_empty() {
        out.push_str(&format!("(refusal) {}\n", sanitize(main.refusal.trim_end())));
    }
    for a in &m.attachments {
        out.push_str(&format!("▣ {} · sha256 {}\n", sanitize(&a.describe()), a.short_hash()));
    }
    for t in &main.tool_calls {
        let size = t.output.as_ref().map(|o| format!(", {} bytes out", o.len())).unwrap_or_default();
        let status = crate::store::ops::enum_str(&t.status);
        out.push_str(&format!("⚙ {}({}) → {status}{size}\n", sanitize(&t.name), sanitize(&t.arguments)));
    }
    if let Some(e) = &m.error {
        out.push_str(&format!("error ({}): {}\n", e.kind, sanitize(&e.message)));
    }
}

/// Tool output can be whole files: `show` keeps the first lines, `export` has all of it.
fn fold(m: &Message, text: &str) -> String {
    const KEEP: usize = 12;
    let lines = text.lines().count();
    if m.role() != Role::Tool || lines <= KEEP + 2 {
        return text.to_owned();
    }
    let head: Vec<&str> = text.lines().take(KEEP).collect();
    format!("{}\n… {} more lines (`palaver history export` has them)", head.join("\n"), lines - KEEP)
}

fn json_text(v: &impl serde::Serialize) -> Result<String, StoreError> {
    let mut s = serde_json::to_string_pretty(v).map_err(|e| StoreError::Format(e.to_string()))?;
    s.push('\n');
    Ok(s)
}

fn export_entry(store: &StoreHandle, entry: &EntryRef, format: ExportFormat) -> Result<u8, StoreError> {
    let text = match (entry, format) {
        // Markdown is for reading (often in a terminal): no escape sequence survives it. JSON is
        // the complete record and keeps every byte (escaped by JSON itself).
        (EntryRef::Conversation(id), ExportFormat::Md) => {
            let conv = load(store, id)?;
            let dir = format!("{}-attachments", conv.summary.id);
            write_attachments(&conv, &dir);
            crate::text::sanitize::sanitize_keep_tabs(&export::to_markdown_linking(&conv, &dir)).into_owned()
        }
        (EntryRef::Conversation(id), ExportFormat::Json) => {
            let e =
                export::export(store, id)?.ok_or_else(|| StoreError::Format(format!("conversation {id} vanished")))?;
            json_text(&e)?
        }
        // One page that loads nothing: the images travel inside it as data URIs.
        (EntryRef::Conversation(id), ExportFormat::Html) => {
            let e =
                export::export(store, id)?.ok_or_else(|| StoreError::Format(format!("conversation {id} vanished")))?;
            crate::store::export_html::to_html(&e)
        }
        (EntryRef::Compare(group), ExportFormat::Html) => {
            let e = export::export_compare(store, group)?
                .ok_or_else(|| StoreError::Format(format!("compare {group} vanished")))?;
            crate::store::export_html::compare_to_html(&e.title, &e.columns)
        }
        (EntryRef::Compare(group), ExportFormat::Md) => compare_markdown(store, group)?,
        (EntryRef::Compare(group), ExportFormat::Json) => {
            let e = export::export_compare(store, group)?
                .ok_or_else(|| StoreError::Format(format!("compare {group} vanished")))?;
            json_text(&e)?
        }
    };
    write_out(&text)
}

/// A compare in Markdown: its title once, then each column's transcript under its own heading.
fn compare_markdown(store: &StoreHandle, group: &str) -> Result<String, StoreError> {
    let e = compare_entry(store, group)?;
    let dir = format!("{group}-attachments");
    let n = e.columns.len();
    let mut out = format!(
        "# {}\n\nCompare of {n} model{} · `{group}` · updated {}\n\n",
        if e.title.is_empty() { "(untitled)" } else { &e.title },
        plural(n as u64),
        rfc3339(e.updated_at)
    );
    for (i, col) in e.columns.iter().enumerate() {
        let conv = load(store, &col.id)?;
        write_attachments(&conv, &dir);
        let number = col.compare_column.map_or(i + 1, |c| c as usize + 1);
        let md = export::to_markdown_linking(&conv, &dir);
        // The column's own `# title` line is the compare's, already written.
        let body = md.split_once("\n\n").map_or(md.as_str(), |(_, rest)| rest);
        let model = col.model.as_deref().unwrap_or("-");
        out.push_str(&format!("## Column {number} · {model}\n\n{body}"));
    }
    Ok(crate::text::sanitize::sanitize_keep_tabs(&out).into_owned())
}

/// Writes the attachments of a Markdown export into `dir` (in the working directory, beside
/// where the Markdown is usually redirected), each file named by its hash; says so on stderr.
fn write_attachments(conv: &StoredConversation, dir: &str) {
    let atts: Vec<_> = conv.messages.iter().flat_map(|m| &m.attachments).filter(|a| a.data.is_some()).collect();
    if atts.is_empty() {
        return;
    }
    let mut written = 0;
    for a in atts {
        let Some(d) = &a.data else { continue };
        let path = std::path::Path::new(dir).join(export::attachment_file_name(a));
        match std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, d.bytes())) {
            Ok(()) => written += 1,
            Err(e) => say!("cannot write {}: {e}", path.display()),
        }
    }
    say!("{written} attachment file(s) written to {dir}/ (the Markdown links to them)");
}

fn rm(store: &StoreHandle, entry: &EntryRef) -> Result<u8, StoreError> {
    match entry {
        EntryRef::Conversation(id) => {
            let Some(s) = store.get(id)? else { return Ok(unknown(id)) };
            store.delete(id);
            store.flush()?;
            let n = s.messages;
            println!("deleted {} “{}” ({n} message{})", s.id, sanitize(&s.title), plural(n));
        }
        EntryRef::Compare(group) => {
            let e = compare_entry(store, group)?;
            for c in &e.columns {
                store.delete(&c.id);
            }
            store.flush()?;
            let (k, n) = (e.columns.len(), e.messages);
            println!(
                "deleted compare {} “{}” ({k} column{}, {n} message{})",
                e.id,
                sanitize(&e.title),
                plural(k as u64),
                plural(n)
            );
        }
    }
    Ok(EXIT_OK)
}
