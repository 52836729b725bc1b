//! Structured outputs (`--schema`): the schema a reply must follow, how each API is asked for
//! it (Chat `response_format`, Responses `text.format`, or `json_object` for providers that take
//! only that), and the check of the answer on arrival. Where the schema comes from (a file, a
//! saved name) is the caller's business; this module takes its text.

use crate::api::Api;
use serde::Serialize;
use serde_json::{Value, json};

/// At most this many errors are kept per answer: the first ones say what is wrong.
const MAX_ERRORS: usize = 20;

/// A schema the reply must follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    /// The name sent with it (`json_schema.name`): letters, digits, `_` and `-`, at most 64.
    pub name: String,
    pub schema: Value,
}

/// One way the answer breaks the schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaError {
    /// JSON pointer to the failing value (`""` is the whole answer, `/age`, `/tags/2`).
    pub path: String,
    pub message: String,
}

/// The check of an answer against the schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub valid: bool,
    pub errors: Vec<SchemaError>,
    /// The answer as JSON (`None`: it is not JSON).
    #[serde(skip)]
    pub value: Option<Value>,
    /// The answer's JSON text as the model wrote it (the whole answer, or its fenced block).
    #[serde(skip)]
    pub text: Option<String>,
}

impl Verdict {
    /// The first error as `path: message` (`(root)` for the whole answer), for one line.
    #[must_use]
    pub fn first_error(&self) -> Option<String> {
        let e = self.errors.first()?;
        let path = if e.path.is_empty() { "(root)" } else { &e.path };
        let more = match self.errors.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        Some(format!("at {path}: {}{more}", e.message))
    }
}

impl Structured {
    /// A schema from `--schema`'s text: inline JSON when it starts with `{`, else the short
    /// form. `name` is what to call it (a file's stem, a saved name), `answer` when unset.
    ///
    /// # Errors
    /// JSON that does not parse, a schema that does not compile, a short form with a mistake.
    pub fn from_text(text: &str, name: Option<&str>) -> Result<Self, String> {
        let schema = if text.trim_start().starts_with('{') {
            serde_json::from_str::<Value>(text).map_err(|e| format!("the schema is not JSON: {e}"))?
        } else {
            super::structured_short::parse(text)?
        };
        Self::new(schema, name)
    }

    /// A schema from a file's text: JSON only (a file of anything else, `/etc/passwd`, is not
    /// read as a short form of one field a line). A file holding OpenAI's `json_schema`
    /// wrapper (`{"name","schema","strict"}`) is taken as it is meant. `stem` names it.
    ///
    /// # Errors
    /// Text that is not JSON, a schema that does not compile.
    pub fn from_file(text: &str, stem: Option<&str>) -> Result<Self, String> {
        let schema: Value = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text))
            .map_err(|e| format!("the file is not JSON ({e}); a schema file holds a JSON schema"))?;
        match schema.get("schema").filter(|v| v.is_object()) {
            Some(inner) => {
                let name = schema.get("name").and_then(Value::as_str);
                Self::new(inner.clone(), name.or(stem))
            }
            None => Self::new(schema, stem),
        }
    }

    /// A schema from its JSON value (a compiled check up front: a mistake is said before sending).
    ///
    /// # Errors
    /// The schema does not compile, or is not an object.
    pub fn new(schema: Value, name: Option<&str>) -> Result<Self, String> {
        if !schema.is_object() {
            return Err("a schema is a JSON object".into());
        }
        jsonschema::validator_for(&schema).map_err(|e| format!("the schema does not compile: {e}"))?;
        Ok(Self { name: wire_name(name.unwrap_or("answer")), schema })
    }

    /// What goes in Chat's `response_format`, or Responses' `text.format` (the body builder
    /// wraps it). `json_object_only`: the provider takes no schema, only "answer in JSON".
    #[must_use]
    pub fn format(&self, api: Api, json_object_only: bool) -> Value {
        if json_object_only {
            return json!({"type": "json_object"});
        }
        match api {
            Api::Chat => json!({"type": "json_schema",
                "json_schema": {"name": self.name, "schema": self.schema, "strict": true}}),
            Api::Responses => json!({"type": "json_schema", "name": self.name, "schema": self.schema, "strict": true}),
        }
    }

    /// The system-prompt line that carries the schema to a provider that takes only
    /// `json_object` (which also wants the word JSON somewhere in the prompt).
    #[must_use]
    pub fn instruction(&self) -> String {
        format!(
            "Answer with one JSON document and nothing else (no prose, no code fence). It must follow this JSON schema: {}",
            self.schema
        )
    }

    /// Checks `answer` against the schema.
    #[must_use]
    pub fn check(&self, answer: &str) -> Verdict {
        check(&self.schema, answer)
    }
}

/// Checks `answer` (the whole text, or its first fenced block) against `schema`.
#[must_use]
pub fn check(schema: &Value, answer: &str) -> Verdict {
    let (text, parsed) = json_text(answer);
    let value = match parsed {
        Ok(v) => v,
        Err(why) => {
            let errors = vec![SchemaError { path: String::new(), message: format!("the answer is not JSON: {why}") }];
            return Verdict { valid: false, errors, value: None, text: None };
        }
    };
    let errors: Vec<SchemaError> = match jsonschema::validator_for(schema) {
        Err(e) => vec![SchemaError { path: String::new(), message: format!("the schema does not compile: {e}") }],
        Ok(v) => v
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| SchemaError { path: e.instance_path().to_string(), message: e.to_string() })
            .collect(),
    };
    Verdict { valid: errors.is_empty(), errors, value: Some(value), text: Some(text.to_owned()) }
}

/// The answer's JSON text and its value: the whole answer, else its first fenced block; the
/// whole answer's parse error when neither is JSON.
fn json_text(answer: &str) -> (&str, Result<Value, String>) {
    let whole = answer.trim();
    let err = match serde_json::from_str::<Value>(whole) {
        Ok(v) => return (whole, Ok(v)),
        Err(e) => e.to_string(),
    };
    let fenced = answer.find("```").and_then(|start| {
        let rest = &answer[start + 3..];
        let body = &rest[rest.find('\n')? + 1..];
        Some(body[..body.find("```")?].trim())
    });
    match fenced.map(|t| (t, serde_json::from_str::<Value>(t))) {
        Some((t, Ok(v))) => (t, Ok(v)),
        _ => (whole, Err(err)),
    }
}

/// A name the APIs take: `[A-Za-z0-9_-]`, at most 64 characters.
fn wire_name(name: &str) -> String {
    let n: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).take(64).collect();
    if n.is_empty() { "answer".into() } else { n }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person() -> Structured {
        Structured::from_text("name, age int", None).unwrap()
    }

    #[test]
    fn each_api_is_asked_its_own_way() {
        let s = person();
        let chat = s.format(Api::Chat, false);
        assert_eq!(chat["type"], "json_schema");
        assert_eq!(chat["json_schema"]["name"], "answer");
        assert_eq!(chat["json_schema"]["strict"], true);
        assert_eq!(chat["json_schema"]["schema"]["required"], json!(["name", "age"]));
        let resp = s.format(Api::Responses, false);
        assert_eq!(resp["name"], "answer");
        assert_eq!(resp["schema"], s.schema);
        assert_eq!(s.format(Api::Chat, true), json!({"type": "json_object"}));
        assert!(s.instruction().contains("\"required\""));
    }

    #[test]
    fn a_valid_answer_passes_and_a_wrong_one_names_its_path() {
        let s = person();
        let ok = s.check("{\"name\": \"Ada\", \"age\": 36}");
        assert!(ok.valid && ok.errors.is_empty());
        assert_eq!(ok.text.as_deref(), Some("{\"name\": \"Ada\", \"age\": 36}"));
        let bad = s.check("{\"name\": \"Ada\", \"age\": \"old\"}");
        assert!(!bad.valid);
        assert_eq!(bad.errors[0].path, "/age");
        assert!(bad.first_error().unwrap().starts_with("at /age: "), "{:?}", bad.first_error());
        let missing = s.check("{\"name\": \"Ada\"}");
        assert_eq!(missing.errors[0].path, "");
        assert!(missing.first_error().unwrap().contains("(root)") && missing.errors[0].message.contains("age"));
    }

    #[test]
    fn fenced_json_is_read_and_prose_is_not_json() {
        let s = person();
        let fenced = s.check("Here:\n```json\n{\"name\": \"A\", \"age\": 1}\n```\n");
        assert!(fenced.valid);
        assert_eq!(fenced.text.as_deref(), Some("{\"name\": \"A\", \"age\": 1}"));
        let prose = s.check("I am a person.");
        assert!(!prose.valid && prose.value.is_none());
        assert!(prose.errors[0].message.starts_with("the answer is not JSON"));
    }

    #[test]
    fn bad_schemas_are_refused_up_front() {
        assert!(Structured::from_text("{\"type\": 12}", None).unwrap_err().contains("does not compile"));
        assert!(Structured::from_text("{nope", None).unwrap_err().contains("not JSON"));
        assert!(Structured::new(json!([1]), None).is_err());
        assert_eq!(Structured::from_text("{}", Some("my schema.json")).unwrap().name, "my_schema_json");
    }
}
