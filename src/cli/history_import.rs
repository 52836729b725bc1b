//! `palaver history import FILE`: what `history export --format json` wrote comes back as new
//! history. The file is untrusted: at most `MAX_FILE_BYTES`, UTF-8, and checked whole by the
//! store (`store::import`) before one transaction writes all of it; a file that fails is
//! refused with what is wrong (exit 2) and nothing is written. The file's ids are kept when
//! this history does not have them; a taken id gets a fresh one, said on stderr.

use crate::cli::exit::{EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use crate::store::import::{Document, MAX_FILE_BYTES, parse};
use crate::store::{Imported, StoreError, StoreHandle, StoreOptions};
use crate::ui::sanitize::sanitize;
use serde_json::json;
use std::path::Path;

/// At most this much of a refusal's reason is printed (it may quote the file).
const REASON_CHARS: usize = 400;

/// Reads `file` (`-`: stdin), at most [`MAX_FILE_BYTES`].
fn read(file: &Path) -> Result<String, String> {
    let limit = usize::try_from(MAX_FILE_BYTES + 1).unwrap_or(usize::MAX);
    let bytes = if file == Path::new("-") {
        crate::sys::read::head(std::io::stdin().lock(), limit).map_err(crate::sys::read::ReadError::Io)
    } else {
        crate::sys::read::open_regular(file).and_then(|f| Ok(crate::sys::read::head(f, limit)?))
    };
    let bytes = bytes.map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("it is larger than {} MB, the most an import reads", MAX_FILE_BYTES >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

fn shown(reason: &str) -> String {
    let cut: String = reason.chars().take(REASON_CHARS).collect();
    let more = if cut.len() < reason.len() { "…" } else { "" };
    format!("{}{more}", sanitize(&cut))
}

/// Runs the import; returns the exit status.
pub fn run(file: &Path, json: bool, database: &Path) -> u8 {
    let name =
        if file == Path::new("-") { "stdin".to_owned() } else { sanitize(&file.display().to_string()).into_owned() };
    let doc = match read(file).and_then(|text| parse(&text).map_err(|e| e.to_string())) {
        Ok(d) => d,
        Err(why) => {
            say!("cannot import {name}: {}; nothing was imported", shown(&why));
            return EXIT_USAGE;
        }
    };
    let store = match StoreHandle::open(database, StoreOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            say!("cannot import {name}: the history at {} cannot be opened: {e}", database.display());
            return EXIT_PROVIDER;
        }
    };
    let asked = doc.clone();
    match store.import(doc) {
        Ok(done) => {
            report(&asked, &done, json);
            EXIT_OK
        }
        Err(e @ StoreError::Invalid(_)) => {
            say!("cannot import {name}: {e}; nothing was imported");
            EXIT_USAGE
        }
        Err(e) => {
            say!("cannot import {name}: {e}; nothing was imported");
            EXIT_PROVIDER
        }
    }
}

/// What became of the file: a line per import on stdout (its new ID first), notes on stderr.
fn report(asked: &Document, done: &[Imported], json: bool) {
    for d in done {
        if let Some(old) = &d.renamed_from {
            say!("this history already has a conversation {old}; imported as {}", d.id);
        }
        if let Some(g) = &d.group_dropped {
            say!("compare {g} here already has that column; {} is imported as a conversation of its own", d.id);
        }
    }
    let messages: usize = done.iter().map(|d| d.messages).sum();
    let line = match asked {
        Document::Conversation(_) => {
            let Some(d) = done.first() else { return };
            if json {
                json!({"id": d.id, "title": d.title, "messages": d.messages, "renamed_from": d.renamed_from,
                    "compare": d.compare.as_ref().map(|c| &c.0)})
                .to_string()
            } else {
                format!("{}  imported “{}” · {} message{}", d.id, sanitize(&d.title), d.messages, s(d.messages))
            }
        }
        Document::Compare(c) => {
            let group = done.first().and_then(|d| d.compare.as_ref()).map_or(c.id.as_str(), |g| g.0.as_str());
            if group != c.id {
                say!("this history already has a compare {}; imported as {group}", c.id);
            }
            if json {
                let cols: Vec<_> = done
                    .iter()
                    .map(|d| {
                        json!({"id": d.id, "column": d.compare.as_ref().map(|c| c.1), "messages": d.messages,
                        "renamed_from": d.renamed_from})
                    })
                    .collect();
                json!({"id": group, "title": c.title, "messages": messages, "columns": cols}).to_string()
            } else {
                let ids: Vec<&str> = done.iter().map(|d| d.id.as_str()).collect();
                format!(
                    "{group}  imported compare “{}” · {} column{}: {}",
                    sanitize(&c.title),
                    done.len(),
                    s(done.len()),
                    ids.join(", ")
                )
            }
        }
    };
    rawln!("{line}");
}

fn s(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
