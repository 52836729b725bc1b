//! `--schema FILE|JSON|SHORT|NAME`: where the schema comes from. Inline JSON when the text
//! starts with `{`; a file when one is there by that name; a schema saved with `palaver schemas
//! save NAME`; otherwise the short form (`'name, age int, tags [str]: the tags'`). The schema
//! itself lives in `engine::structured`.

use crate::engine::structured::Structured;
use std::path::Path;

/// The schema `spec` names.
///
/// # Errors
/// A file that cannot be read, JSON that does not parse, a schema that does not compile, a
/// short form with a mistake; each says which of them it was read as.
pub fn resolve(spec: &str) -> Result<Structured, String> {
    let trimmed = spec.trim();
    if trimmed.starts_with('{') {
        return Structured::from_text(trimmed, None).map_err(|e| format!("--schema: {e}"));
    }
    let saved = super::schemas_cmd::saved(&crate::config::Paths::from_env(), trimmed);
    let path =
        if Path::new(trimmed).is_file() { Path::new(trimmed) } else { saved.as_deref().unwrap_or(Path::new(trimmed)) };
    if !trimmed.contains(',') && path.is_file() {
        let text = crate::sys::read::file_string(path, crate::sys::read::INPUT_FILE)
            .map_err(|e| e.about(&format!("--schema: cannot read {trimmed}")))?;
        let stem = path.file_stem().and_then(|s| s.to_str());
        let trimmed = path.to_str().unwrap_or(trimmed);
        let mut s = Structured::from_text(&text, stem).map_err(|e| format!("--schema {trimmed}: {e}"))?;
        // A file holding an OpenAI `json_schema` wrapper ({"name","schema","strict"}) is taken as it is meant.
        if let Some(inner) = s.schema.get("schema").filter(|v| v.is_object()).cloned() {
            let name = s.schema.get("name").and_then(|n| n.as_str()).map(str::to_owned);
            s = Structured::new(inner, name.as_deref().or(stem)).map_err(|e| format!("--schema {trimmed}: {e}"))?;
        }
        return Ok(s);
    }
    Structured::from_text(trimmed, None).map_err(|e| format!("--schema (read as a short form): {e}"))
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
}
