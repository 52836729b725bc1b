//! The user's catalogue copy as an index: `palaver catalogue update` checks the catalogue's
//! text once and writes each model's line under its lookup keys into a small SQLite file
//! (`catalogue.db` in the data directory), so a run looks a model up in a few B-tree probes
//! instead of parsing the whole catalogue: a million-model copy costs a run what one lookup
//! costs. The keys are those `Catalogue::parse` makes (the full `provider/id` in lower case,
//! and the bare id for the first provider that has it), first in the file first served.

use super::catalogue::{Entry, parse_header, parse_line};
use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};
use std::path::Path;
use std::sync::Mutex;

/// The index file's name in the data directory.
pub const FILE_NAME: &str = "catalogue.db";

/// What the index holds besides its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub models: usize,
    pub source: String,
    pub date: String,
}

/// An open index (read only).
pub struct Index {
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Index")
    }
}

impl Index {
    /// Opens the index at `path` and reads its facts.
    ///
    /// # Errors
    /// The file is missing or not an index palaver wrote.
    pub fn open(path: &Path) -> Result<(Self, Facts), String> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| e.to_string())?;
        let facts = conn
            .query_row("SELECT models, source, date FROM facts", [], |r| {
                Ok(Facts { models: r.get::<_, i64>(0)? as usize, source: r.get(1)?, date: r.get(2)? })
            })
            .map_err(|e| e.to_string())?;
        Ok((Self { conn: Mutex::new(conn) }, facts))
    }

    /// The entry filed under `key` (already lower case), if any.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<Entry> {
        let conn = self.conn.lock().ok()?;
        let line: Option<String> = conn
            .query_row("SELECT e.line FROM keys k JOIN entries e ON e.id = k.entry WHERE k.key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .ok()?;
        // Checked when written: a line that no longer parses is as good as absent.
        parse_line(&line?).ok()
    }
}

/// Checks `text` (palaver's catalogue format) a line at a time and writes its index to `dest`
/// (through a temporary file beside it, renamed over it). Nothing but one line is held at a
/// time besides the text.
///
/// # Errors
/// A missing header, a line that does not read (named by its number), no model, or the file
/// cannot be written.
pub fn write(text: &str, dest: &Path) -> Result<Facts, String> {
    let mut lines = text.lines();
    let (source, date) = parse_header(lines.next().unwrap_or_default())?;
    let tmp = dest.with_extension("db.tmp");
    let _ = std::fs::remove_file(&tmp);
    let written = fill(&tmp, lines, source, date);
    let facts = match written {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, dest).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    Ok(facts)
}

fn fill<'a>(tmp: &Path, lines: impl Iterator<Item = &'a str>, source: String, date: String) -> Result<Facts, String> {
    let io = |e: rusqlite::Error| format!("cannot write {}: {e}", tmp.display());
    let mut conn = Connection::open(tmp).map_err(io)?;
    // A file built once and renamed into place: no journal is needed to survive a crash.
    conn.execute_batch(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
         CREATE TABLE entries (id INTEGER PRIMARY KEY, line TEXT NOT NULL);
         CREATE TABLE keys (key TEXT PRIMARY KEY, entry INTEGER NOT NULL) WITHOUT ROWID;
         CREATE TABLE facts (models INTEGER NOT NULL, source TEXT NOT NULL, date TEXT NOT NULL);",
    )
    .map_err(io)?;
    let tx = conn.transaction().map_err(io)?;
    let mut models = 0usize;
    {
        let mut entry = tx.prepare("INSERT INTO entries (line) VALUES (?1)").map_err(io)?;
        let mut key = tx.prepare("INSERT OR IGNORE INTO keys (key, entry) VALUES (?1, ?2)").map_err(io)?;
        for (n, line) in lines.enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let e = parse_line(line).map_err(|e| format!("line {}: {e}", n + 2))?;
            let id = entry.insert([line]).map_err(io)?;
            let full = e.key.to_ascii_lowercase();
            key.execute(params![full, id]).map_err(io)?;
            if let Some((_, bare)) = full.split_once('/') {
                key.execute(params![bare, id]).map_err(io)?;
            }
            models += 1;
        }
    }
    if models == 0 {
        return Err("the catalogue lists no model".into());
    }
    tx.execute("INSERT INTO facts VALUES (?1, ?2, ?3)", params![models as i64, source, date]).map_err(io)?;
    tx.commit().map_err(io)?;
    Ok(Facts { models, source, date })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::catalogue::MAGIC;

    #[test]
    fn an_index_serves_the_keys_a_parse_would_first_in_the_file_first() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join(FILE_NAME);
        let text = format!(
            "{MAGIC}\tsource=s\tdate=d\nopenai/m\t10\nazure/m\t20\n# note\nrouter/openai/x\t30\nopenai/x\t40\n"
        );
        let facts = write(&text, &db).unwrap();
        assert_eq!(facts, Facts { models: 4, source: "s".into(), date: "d".into() });
        let (ix, _) = Index::open(&db).unwrap();
        assert_eq!(ix.get("m").unwrap().context_window, Some(10), "the bare id is its first provider's");
        assert_eq!(ix.get("azure/m").unwrap().context_window, Some(20));
        // "openai/x" was first filed as the bare id of router/openai/x, as a parse does.
        assert_eq!(ix.get("openai/x").unwrap().context_window, Some(30));
        assert!(ix.get("nope").is_none());
        let e = write(&format!("{MAGIC}\na/b\t1\nc/d\tmany\n"), &db).unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
        assert!(!dir.path().join("catalogue.db.tmp").exists());
        assert_eq!(Index::open(&db).unwrap().1.models, 4, "a broken update leaves the index as it was");
    }
}
