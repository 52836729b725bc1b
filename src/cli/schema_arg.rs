//! `--schema FILE|JSON|SHORT|NAME`: where the schema comes from. Inline JSON when the text
//! starts with `{`; a file when one is there by that name; a schema saved with `palaver schemas
//! save NAME`; otherwise the short form (`'name, age int, tags [str]: the tags'`). The schema
//! itself lives in `engine::structured`.

use crate::engine::structured::Structured;
use std::path::Path;

/// The largest schema file read.
pub const SCHEMA_FILE: crate::sys::read::Budget = crate::sys::read::Budget::fixed("schema_file_bytes", 1024 * 1024);

/// The schema `spec` names.
///
/// # Errors
/// A file that cannot be read or is not JSON, a schema that does not compile, a short form
/// with a mistake, a short form that is also a file's name; each says which it was read as.
pub fn resolve(spec: &str) -> Result<Structured, String> {
    resolve_in(spec, Path::new(""))
}

/// [`resolve`] with relative file names taken in `base`.
fn resolve_in(spec: &str, base: &Path) -> Result<Structured, String> {
    let trimmed = spec.trim();
    if trimmed.starts_with('{') {
        return Structured::from_text(trimmed, None).map_err(|e| format!("--schema: {e}"));
    }
    // A short form has a comma or is one field's name; a saved schema's name wins over it.
    let short = || crate::engine::structured_short::parse(trimmed).is_ok();
    let file = base.join(trimmed);
    if std::fs::metadata(&file).is_ok() && !trimmed.contains(',') {
        if short() {
            let shown = crate::text::sanitize::sanitize(trimmed);
            return Err(format!(
                "--schema {shown}: there is a file by that name and it is also a short form; write ./{shown} \
                 for the file, or {shown}, (with a comma) for a one-field short form"
            ));
        }
        return from_file(&file);
    }
    let saved = super::schemas_cmd::saved(&crate::config::Paths::from_env(), trimmed);
    if let Some(path) = saved.filter(|_| !trimmed.contains(',')) {
        return from_file(&path);
    }
    Structured::from_text(trimmed, None).map_err(|e| format!("--schema (read as a short form): {e}"))
}

/// A schema file: a regular file of JSON, at most [`SCHEMA_FILE`].
fn from_file(path: &Path) -> Result<Structured, String> {
    let shown = crate::text::sanitize::sanitize(&path.display().to_string()).into_owned();
    let text = read_schema_file(path).map_err(|e| format!("--schema {shown}: {e}"))?;
    let stem = path.file_stem().and_then(|s| s.to_str());
    Structured::from_file(&text, stem).map_err(|e| format!("--schema {shown}: {e}"))
}

/// A schema file's text, refused past [`SCHEMA_FILE`]; a FIFO or a device is refused before a
/// byte is read (it would block, or never end).
///
/// # Errors
/// The file is not regular, cannot be read, is larger than the limit, or is not UTF-8.
pub fn read_schema_file(path: &Path) -> Result<String, String> {
    use crate::sys::read::ReadError;
    crate::sys::read::file_string(path, SCHEMA_FILE).map_err(|e| match e {
        ReadError::NotUtf8 => "the file is not JSON (not even UTF-8 text)".to_owned(),
        ReadError::Over(b) => b.refused("the schema file"),
        ReadError::Io(e) => format!("cannot read it: {e}"),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_json_files_and_short_forms() {
        assert_eq!(resolve("{\"type\":\"object\"}").unwrap().schema["type"], "object");
        assert_eq!(resolve("name, age int").unwrap().schema["required"], serde_json::json!(["name", "age"]));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("person.json");
        std::fs::write(&f, r#"{"type":"object","properties":{"a":{"type":"string"}}}"#).unwrap();
        let s = resolve(f.to_str().unwrap()).unwrap();
        assert_eq!((s.name.as_str(), &s.schema["properties"]["a"]["type"]), ("person", &serde_json::json!("string")));
        let w = dir.path().join("wrapped.json");
        std::fs::write(&w, r#"{"name":"city","strict":true,"schema":{"type":"object"}}"#).unwrap();
        let s = resolve(w.to_str().unwrap()).unwrap();
        assert_eq!((s.name.as_str(), &s.schema), ("city", &serde_json::json!({"type": "object"})));
        let e = resolve("nothere.json").unwrap_err();
        assert!(e.contains("short form") && e.contains("nothere.json"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_json_is_refused_not_read_as_a_short_form() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("passwd");
        std::fs::write(&f, "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/usr/sbin/nologin\n").unwrap();
        let e = resolve(f.to_str().unwrap()).unwrap_err();
        assert!(e.contains("is not JSON") && e.contains("passwd"), "{e}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, format!("{{\"description\":\"{}\"}}", "x".repeat(2 << 20))).unwrap();
        assert!(resolve(big.to_str().unwrap()).unwrap_err().contains("schema_file_bytes"), "the limit is named");
        assert!(resolve("/dev/zero").unwrap_err().contains("not a regular file"), "a device is never read");
    }

    #[test]
    fn a_short_form_that_is_also_a_file_asks_which() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("person"), r#"{"type":"object"}"#).unwrap();
        let e = resolve_in("person", dir.path()).unwrap_err();
        assert!(e.contains("./person") && e.contains("person,"), "{e}");
        assert_eq!(resolve_in("./person", dir.path()).unwrap().schema["type"], "object");
        assert_eq!(resolve_in("person,", dir.path()).unwrap().schema["required"], serde_json::json!(["person"]));
        assert!(resolve_in("other", dir.path()).is_ok(), "no file by that name: a short form");
    }
}
