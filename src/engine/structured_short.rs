//! The short form of a schema for `--schema`, in the spirit of llm's concise syntax:
//! `name, age int, tags [str]: the tags`. Fields are split on commas, or on newlines when there
//! is one (so a description may hold commas); each is `NAME [TYPE][: description]`, the type
//! one of `str` (the default), `int`, `float`, `bool`, or `[T]` for an array of them. The
//! result is a strict object schema: every field required, no other field allowed, as the
//! providers' strict structured outputs demand.

use serde_json::{Map, Value, json};

/// The JSON schema of a short form.
///
/// # Errors
/// An empty form, a field name that is not a word, an unknown type, a repeated field.
pub fn parse(form: &str) -> Result<Value, String> {
    let parts: Vec<&str> = if form.contains('\n') { form.lines().collect() } else { form.split(',').collect() };
    let mut properties = Map::new();
    let mut required = Vec::new();
    for part in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (head, description) = match part.split_once(':') {
            Some((h, d)) => (h.trim(), Some(d.trim()).filter(|d| !d.is_empty())),
            None => (part, None),
        };
        let mut words = head.split_whitespace();
        let name = words.next().unwrap_or_default();
        if !is_name(name) {
            return Err(format!("`{name}` is not a field name (letters, digits, _ and -)"));
        }
        let rest: Vec<&str> = words.collect();
        let ty = rest.join("");
        let mut prop = field_type(if ty.is_empty() { "str" } else { &ty }).ok_or_else(|| not_a_type(name, &rest))?;
        if let (Some(d), Some(o)) = (description, prop.as_object_mut()) {
            o.insert("description".into(), json!(d));
        }
        if properties.insert(name.to_owned(), prop).is_some() {
            return Err(format!("field `{name}` is there twice"));
        }
        required.push(json!(name));
    }
    if required.is_empty() {
        return Err("the short form names no field (e.g. 'name, age int, tags [str]: the tags')".into());
    }
    Ok(json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}))
}

/// Why the words after field `name` are not a type. Several words whose last one is a type
/// are most likely fields written without their commas (`name age int`): say so, with the
/// form it probably meant.
fn not_a_type(name: &str, rest: &[&str]) -> String {
    let ty = rest.join("");
    let looks_like_fields = rest.len() > 1 && rest.iter().any(|w| field_type(w).is_none() && is_name(w));
    if !looks_like_fields {
        return format!("`{ty}` (field `{name}`) is not a type: str, int, float, bool or [T]");
    }
    // Each word that is not a type starts a field; a type word belongs to the field before it.
    let mut fields: Vec<String> = vec![name.to_owned()];
    for w in rest {
        match fields.last_mut() {
            Some(last) if field_type(w).is_some() && !last.contains(' ') => {
                last.push(' ');
                last.push_str(w);
            }
            _ => fields.push((*w).to_owned()),
        }
    }
    format!(
        "`{name} {}` is not one field: separate fields with commas (`{}`); a type is str, int, float, bool or [T]",
        rest.join(" "),
        fields.join(", ")
    )
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The schema of one type word: `str`, `int`, `float`, `bool`, or `[T]`.
fn field_type(ty: &str) -> Option<Value> {
    if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        let items = field_type(if inner.is_empty() { "str" } else { inner })?;
        return Some(json!({"type": "array", "items": items}));
    }
    let name = match ty {
        "str" | "string" => "string",
        "int" | "integer" => "integer",
        "float" | "number" => "number",
        "bool" | "boolean" => "boolean",
        _ => return None,
    };
    Some(json!({"type": name}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_makes_a_strict_object() {
        let s = parse("name, age int, tags [str]: the tags").unwrap();
        assert_eq!(
            s,
            json!({"type": "object", "additionalProperties": false, "required": ["name", "age", "tags"],
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "the tags"}}})
        );
    }

    #[test]
    fn newlines_split_fields_so_descriptions_may_hold_commas() {
        let s = parse("score float: from 0 to 1, higher is better\nok bool\nids [int]").unwrap();
        assert_eq!(s["properties"]["score"]["description"], "from 0 to 1, higher is better");
        assert_eq!(s["properties"]["ok"]["type"], "boolean");
        assert_eq!(s["properties"]["ids"], json!({"type": "array", "items": {"type": "integer"}}));
        assert_eq!(s["required"], json!(["score", "ok", "ids"]));
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse("").unwrap_err().contains("names no field"));
        assert!(parse("age integr").unwrap_err().contains("`integr`"));
        assert!(parse("a, a int").unwrap_err().contains("twice"));
        assert!(parse("person.json").unwrap_err().contains("`person.json`"));
        assert!(parse("x [[int]]").is_ok(), "arrays nest");
    }

    #[test]
    fn fields_without_commas_are_told_to_use_them() {
        let e = parse("name age int").unwrap_err();
        assert_eq!(
            e,
            "`name age int` is not one field: separate fields with commas (`name, age int`); a type is str, int, \
             float, bool or [T]"
        );
        assert!(parse("a b c").unwrap_err().contains("(`a, b, c`)"));
        // A misspelt type alone is still a type mistake, and what was accepted still is.
        assert!(parse("age integr").unwrap_err().starts_with("`integr` (field `age`) is not a type"));
        assert!(parse("tags [ int ]").is_ok() && parse("name, age int").is_ok());
    }
}
