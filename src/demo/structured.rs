//! Structured outputs for every demo model: when a request asks for a JSON schema (Chat
//! `response_format`, Responses `text.format`) the answer is a JSON document that follows it,
//! built from the schema alone so the same schema always gets the same document; `json_object`
//! gets a small object about the turn.

use serde_json::{Map, Value, json};

use super::request::{Format, Request};
use super::script::{Ending, Piece, Script, tokens};

/// How deep `$ref`s and nesting are followed; past it the smallest value the schema allows.
const MAX_DEPTH: usize = 12;

/// Turns a scripted text answer into the document the request's format asks for. Tool calls,
/// filtered and failing replies keep their shape: only a finished answer is a document.
pub fn apply(req: &Request, script: &mut Script) {
    if req.format == Format::Text || !script.tool_calls.is_empty() || script.ending != Ending::Stop {
        return;
    }
    let doc = match &req.format {
        Format::Schema(schema) => document(schema),
        _ => json!({"model": req.model, "turn": req.user_turns, "you_said": super::script::quote(req)}),
    };
    let text = doc.to_string();
    let filter = script.text.first().and_then(|p| p.filter.clone());
    script.text = chop(&text).into_iter().map(|text| Piece { text, filter: filter.clone() }).collect();
    script.usage.completion = (tokens(&text) + text.len() as u64 / 4).max(1) + script.usage.reasoning;
}

/// Pieces of about eight characters, as a model streams JSON (cut on character boundaries).
fn chop(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(8).map(|c| c.iter().collect()).collect()
}

/// A JSON document that follows `schema`.
#[must_use]
pub fn document(schema: &Value) -> Value {
    Gen { root: schema }.value(schema, "value", 0)
}

struct Gen<'a> {
    root: &'a Value,
}

impl<'a> Gen<'a> {
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let Some(r) = schema.get("$ref").and_then(Value::as_str) else { return schema };
        let Some(pointer) = r.strip_prefix('#') else { return schema };
        self.root.pointer(pointer).unwrap_or(schema)
    }

    fn value(&self, schema: &'a Value, name: &str, depth: usize) -> Value {
        // A schema that only recurses (required all the way down) can have no document.
        if depth > 4 * MAX_DEPTH {
            return Value::Null;
        }
        let schema = self.resolve(schema);
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
            return first.clone();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(branches) = schema.get(key).and_then(Value::as_array) {
                // The first branch that is not plain `null` (an Optional field still gets a value).
                let pick = branches.iter().find(|b| b.get("type").and_then(Value::as_str) != Some("null"));
                if let Some(b) = pick.or(branches.first()) {
                    return self.value(b, name, depth + 1);
                }
            }
        }
        match type_of(schema) {
            "object" => self.object(schema, depth),
            "array" => self.array(schema, name, depth),
            "string" => Value::String(string(schema, name)),
            "integer" => json!(integer(schema, name)),
            "number" => number(schema),
            "boolean" => json!(true),
            _ => Value::Null,
        }
    }

    fn object(&self, schema: &'a Value, depth: usize) -> Value {
        let mut out = Map::new();
        let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Value::Object(out) };
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        for (key, prop) in props {
            // Deep down, only what must be there: a recursive schema ends.
            if depth >= MAX_DEPTH && !required.contains(&key.as_str()) {
                continue;
            }
            out.insert(key.clone(), self.value(prop, key, depth + 1));
        }
        Value::Object(out)
    }

    fn array(&self, schema: &'a Value, name: &str, depth: usize) -> Value {
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
        let want = if depth >= MAX_DEPTH { min } else { 2.max(min).min(max) };
        let items = schema.get("items").unwrap_or(&Value::Null);
        let mut out: Vec<Value> = Vec::new();
        for i in 0..want {
            let mut v = self.value(items, name, depth + 1);
            // Items differ from each other, so `uniqueItems` holds where it can.
            match &mut v {
                Value::String(s) if i > 0 => s.push_str(&format!(" {}", i + 1)),
                Value::Number(n) if i > 0 && n.is_i64() => v = json!(n.as_i64().unwrap_or(0).saturating_add(i as i64)),
                _ => {}
            }
            out.push(v);
        }
        Value::Array(out)
    }
}

fn type_of(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "null",
    }
}

/// A string that reads like its field: a name, a city, a date…, within its length limits.
fn string(schema: &Value, name: &str) -> String {
    let s = match schema.get("format").and_then(Value::as_str) {
        Some("date") => "2025-01-01".to_owned(),
        Some("date-time") => "2025-01-01T12:00:00Z".to_owned(),
        Some("time") => "12:00:00".to_owned(),
        Some("email") => "ada@example.com".to_owned(),
        Some("uri" | "url") => "https://example.com/".to_owned(),
        Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
        _ => match name.to_ascii_lowercase().as_str() {
            "name" | "full_name" | "author" => "Ada Lovelace".to_owned(),
            "city" => "Lisbon".to_owned(),
            "country" => "Portugal".to_owned(),
            "title" => "A demo answer".to_owned(),
            _ => format!("demo {name}"),
        },
    };
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema.get("maxLength").and_then(Value::as_u64).map_or(usize::MAX, |m| m as usize);
    let mut s: String = s.chars().take(max).collect();
    while s.chars().count() < min {
        s.push('x');
    }
    s
}

fn integer(schema: &Value, name: &str) -> i64 {
    let base = if name.eq_ignore_ascii_case("age") { 36 } else { 42 };
    let lo = schema
        .get("minimum")
        .and_then(Value::as_i64)
        .or_else(|| schema.get("exclusiveMinimum").and_then(Value::as_i64).map(|m| m.saturating_add(1)));
    let hi = schema
        .get("maximum")
        .and_then(Value::as_i64)
        .or_else(|| schema.get("exclusiveMaximum").and_then(Value::as_i64).map(|m| m.saturating_sub(1)));
    let mut v = base.max(lo.unwrap_or(i64::MIN)).min(hi.unwrap_or(i64::MAX));
    if let Some(m) = schema.get("multipleOf").and_then(Value::as_i64).filter(|m| *m > 0) {
        v = (v / m) * m;
        if lo.is_some_and(|lo| v < lo) {
            v += m;
        }
    }
    v
}

fn number(schema: &Value) -> Value {
    let lo = schema.get("minimum").or_else(|| schema.get("exclusiveMinimum")).and_then(Value::as_f64);
    let hi = schema.get("maximum").or_else(|| schema.get("exclusiveMaximum")).and_then(Value::as_f64);
    let v = match (lo, hi) {
        (Some(l), Some(h)) => f64::midpoint(l, h),
        (Some(l), None) => l + 1.5,
        (None, Some(h)) => h - 1.5,
        (None, None) => 3.5,
    };
    json!(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(schema: &Value) -> Value {
        let doc = document(schema);
        let v = jsonschema::validator_for(schema).unwrap();
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{doc} breaks {schema}: {errors:?}");
        doc
    }

    #[test]
    fn the_short_forms_schema_gets_a_person() {
        let s = json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age", "tags"],
            "additionalProperties": false});
        assert_eq!(valid(&s), json!({"name": "Ada Lovelace", "age": 36, "tags": ["demo tags", "demo tags 2"]}));
        assert_eq!(document(&s), document(&s), "deterministic");
    }

    #[test]
    fn pydantic_style_schemas_with_refs_optionals_enums_and_limits() {
        let s = json!({
            "$defs": {"Step": {"type": "object", "properties": {"explanation": {"type": "string"},
                "output": {"type": "string"}}, "required": ["explanation", "output"], "additionalProperties": false},
                "Kind": {"enum": ["a", "b"], "type": "string"}},
            "type": "object",
            "properties": {"steps": {"type": "array", "items": {"$ref": "#/$defs/Step"}, "minItems": 3},
                "final_answer": {"type": "string", "minLength": 40}, "kind": {"$ref": "#/$defs/Kind"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "score": {"type": "number", "minimum": 0, "maximum": 1},
                "n": {"type": "integer", "minimum": 50, "multipleOf": 7}, "when": {"type": "string", "format": "date-time"},
                "ok": {"type": ["boolean", "null"]}},
            "required": ["steps", "final_answer", "kind", "note", "score", "n", "when", "ok"],
            "additionalProperties": false});
        let doc = valid(&s);
        assert_eq!(doc["steps"].as_array().map(Vec::len), Some(3));
        assert_eq!(doc["kind"], "a");
        assert_eq!(doc["score"], 0.5);
    }

    #[test]
    fn a_recursive_schema_ends() {
        let s = json!({"$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name", "children"]}},
            "$ref": "#/$defs/Node"});
        valid(&s);
    }

    #[test]
    fn chopping_keeps_every_character() {
        let text = "{\"name\":\"Ada Lovelace — é\",\"age\":36}";
        assert_eq!(chop(text).concat(), text);
    }
}
