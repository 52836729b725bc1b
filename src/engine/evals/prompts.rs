//! Prompt sets: plain lines (one prompt a line, blank lines skipped) or JSON Lines, one object
//! a line: `{"prompt": "…", "system": "…", "id": "…", "attach": ["a.png"], "expect": …}`. The
//! format is decided by the first non-blank line (a JSON object: JSON Lines). Mistakes are
//! reported with their line number before anything is sent: a typo'd key, a bad regex, a
//! schema that does not compile, a duplicate id.
//!
//! A JSON Lines line with `vars` is a template: `{{name}}` in its `prompt`, `system`, `attach`,
//! `id` and `expect` is filled from each row of the table (inline, or a CSV or JSON Lines file
//! named relative to the set), one prompt per row. Lines without `vars` are taken as they are.
//!
//! A line's `"schema"` is a JSON schema, a short form, or the name of a JSON file in the set's
//! folder; a name that is both a short form and a file is a mistake asking which was meant.

use super::expect::Expect;
use serde_json::Value;
use std::collections::HashSet;

/// One prompt of a set.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptItem {
    /// The line of the file it came from (1-based), for messages about it.
    pub line: usize,
    /// The line's `id`, else its line number.
    pub id: String,
    pub prompt: String,
    pub system: Option<String>,
    /// Paths or URLs to attach, as given.
    pub attach: Vec<String>,
    /// The `expect` value as given (kept verbatim in the store), and its compiled checks.
    pub expect_raw: Option<Value>,
    pub expect: Option<Expect>,
    /// The row of a templated line: its variables (an object), stored and shown with the cells.
    pub vars: Option<Value>,
    /// `threshold`: the pass rate of a cell's repeated samples that passes the cell (0 to 1;
    /// `None`: every sample, `rates::DEFAULT_THRESHOLD`).
    pub threshold: Option<f64>,
    /// A multi-turn line (or one with recorded tool outputs), as kept: see [`super::turns`].
    /// `prompt` is then its first turn's, and its checks are its turns'.
    pub conversation: Option<Value>,
}

/// A prompt file that cannot be read as a set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct PromptError {
    pub line: usize,
    pub message: String,
}

const KEYS: &[&str] =
    &["prompt", "system", "id", "attach", "expect", "schema", "vars", "threshold", "turns", "tool_outputs", "tools"];

/// Reads a file the set names (a `vars` or schema file, relative to the set): `None` when
/// there is nothing by that name; `Err` says why it cannot be read.
pub type SetFiles<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// `expect` with a `schema` check added: the answer must follow `schema`, which is also sent.
#[must_use]
pub fn with_schema(expect: Option<Value>, schema: Value) -> Value {
    let check = serde_json::json!({"schema": schema});
    match expect {
        None => check,
        Some(Value::Array(mut a)) => {
            a.push(check);
            Value::Array(a)
        }
        Some(other) => Value::Array(vec![other, check]),
    }
}

/// Parses a prompt set whose `vars` cannot name files.
///
/// # Errors
/// The first line that is not a prompt, with why; or a set with no prompt at all.
pub fn parse(text: &str) -> Result<Vec<PromptItem>, PromptError> {
    parse_with(text, &|_| Ok(None))
}

/// Parses a prompt set, reading the `vars` files it names with `files`.
///
/// # Errors
/// The first line that is not a prompt, with why (for a template: the variable, the row and
/// its file's line); or a set with no prompt at all.
pub fn parse_with(text: &str, files: SetFiles<'_>) -> Result<Vec<PromptItem>, PromptError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = || {
        text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r'))).filter(|(_, l)| !l.trim().is_empty())
    };
    let json_lines = lines().next().is_some_and(|(_, l)| {
        l.trim_start().starts_with('{') && serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object())
    });
    let mut out = Vec::new();
    let mut ids = HashSet::new();
    for (line, l) in lines() {
        let items = if json_lines {
            json_line(line, l, files)?
        } else {
            vec![PromptItem {
                line,
                id: line.to_string(),
                prompt: l.to_owned(),
                system: None,
                attach: Vec::new(),
                expect_raw: None,
                expect: None,
                vars: None,
                threshold: None,
                conversation: None,
            }]
        };
        for item in items {
            if !ids.insert(item.id.clone()) {
                return Err(PromptError { line, message: format!("the id `{}` is used twice", item.id) });
            }
            out.push(item);
        }
    }
    if out.is_empty() {
        return Err(PromptError { line: 0, message: "the prompt set is empty".into() });
    }
    Ok(out)
}

/// A JSON Lines line: one prompt, or one per row of its `vars`.
fn json_line(line: usize, l: &str, files: SetFiles<'_>) -> Result<Vec<PromptItem>, PromptError> {
    let err = |message: String| PromptError { line, message };
    let (item, vars) = fields(line, l, files)?;
    let items = match vars {
        Some(v) => super::template_set::rows(&item, &v, files).map_err(err)?,
        None => vec![item],
    };
    items
        .into_iter()
        .map(|mut item| {
            if let Some(v) = &item.expect_raw {
                item.expect = Some(Expect::compile(v).map_err(|e| err(format!("expect: {e}")))?);
            }
            // Compiled to be checked now; the cell compiles it again from what the store keeps.
            if let Some(c) = &item.conversation {
                super::turns::Conversation::compile(c).map_err(err)?;
            }
            Ok(item)
        })
        .collect()
}

/// A line's fields, its `expect` not compiled yet, and its `vars` as given.
fn fields(line: usize, l: &str, files: SetFiles<'_>) -> Result<(PromptItem, Option<Value>), PromptError> {
    let err = |message: String| PromptError { line, message };
    let v: Value = serde_json::from_str(l)
        .map_err(|e| err(format!("not JSON ({e}); a JSON Lines set needs an object on every line")))?;
    let Value::Object(obj) = v else { return Err(err("not a JSON object".into())) };
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err(format!("unknown key `{k}` (known: {})", KEYS.join(", "))));
    }
    let system = match obj.get("system") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(err("`system` must be a string".into())),
    };
    let id = match obj.get("id") {
        None | Some(Value::Null) => line.to_string(),
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(err("`id` must be a non-empty string or a number".into())),
    };
    let attach = match obj.get("attach") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| err("`attach` must be a path or a list of paths".into()))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(err("`attach` must be a path or a list of paths".into())),
    };
    let mut expect_raw = obj.get("expect").filter(|v| !v.is_null()).cloned();
    // `"schema"`: a JSON schema, or `--schema`'s inline JSON or short form. It is sent with the
    // prompt and checked like an expect, so it is kept (and resumed) as one.
    match obj.get("schema") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Object(_)) => expect_raw = Some(with_schema(expect_raw, v.clone())),
        Some(Value::String(text)) => {
            let s = line_schema(text, files).map_err(|e| err(format!("schema: {e}")))?;
            expect_raw = Some(with_schema(expect_raw, s));
        }
        Some(_) => return Err(err("`schema` must be a JSON schema or a short form such as \"name, age int\"".into())),
    }
    // A conversation's checks are its turns' (the line's own go to its last turn).
    let conversation =
        super::turns::read(&obj, obj.get("prompt").filter(|v| !v.is_null()), expect_raw.clone()).map_err(err)?;
    let prompt = match &conversation {
        Some(c) => {
            expect_raw = None;
            super::turns::first_prompt(c)
        }
        None => match obj.get("prompt") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => return Err(err("`prompt` is empty".into())),
            Some(_) => return Err(err("`prompt` must be a string".into())),
            None => return Err(err("no `prompt`".into())),
        },
    };
    let vars = obj.get("vars").filter(|v| !v.is_null()).cloned();
    let threshold = match obj.get("threshold") {
        None | Some(Value::Null) => None,
        Some(_) if expect_raw.is_none() => {
            return Err(err("`threshold` decides a cell by its checks' pass rate: give the line an `expect`".into()));
        }
        Some(v) => match v.as_f64().filter(|t| (0.0..=1.0).contains(t)) {
            Some(t) => Some(t),
            None => return Err(err("`threshold` takes the pass rate its samples must reach, 0 to 1, e.g. 0.8".into())),
        },
    };
    let item =
        PromptItem { line, id, prompt, system, attach, expect_raw, expect: None, vars: None, threshold, conversation };
    Ok((item, vars))
}

/// A line's `"schema"` string: inline JSON, a short form, or a JSON file in the set's folder.
fn line_schema(text: &str, files: SetFiles<'_>) -> Result<Value, String> {
    use crate::engine::structured::Structured;
    let name = text.trim();
    if name.starts_with('{') {
        return Structured::from_text(name, None).map(|s| s.schema);
    }
    let short = super::super::structured_short::parse(name);
    let file = if name.contains(',') { None } else { files(name)? };
    match (short, file) {
        (Ok(_), Some(_)) => Err(format!(
            "`{name}` is both a short form and a file in the prompt set's folder: write \"./{name}\" for the \
             file, or \"{name},\" (with a comma) for a one-field short form"
        )),
        (Ok(schema), None) => Structured::new(schema, None).map(|s| s.schema),
        (Err(_), Some(t)) => {
            let stem = std::path::Path::new(name).file_stem().and_then(|s| s.to_str());
            Structured::from_file(&t, stem).map(|s| s.schema).map_err(|e| format!("{name}: {e}"))
        }
        (Err(e), None) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_skip_blanks_and_number_by_line() {
        let set = parse("first\n\n  \nsecond {not json}\r\n").unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!((set[0].id.as_str(), set[0].prompt.as_str()), ("1", "first"));
        assert_eq!((set[1].id.as_str(), set[1].prompt.as_str()), ("4", "second {not json}"));
    }

    #[test]
    fn json_lines_take_every_field() {
        let set = parse(
            "{\"prompt\":\"hi\",\"id\":\"greet\",\"system\":\"be brief\",\"attach\":\"a.png\",\"expect\":\"hello\"}\n\
             {\"prompt\":\"two\",\"id\":7,\"attach\":[\"x\",\"y\"],\"expect\":{\"regex\":\"^t\"}}\n",
        )
        .unwrap();
        assert_eq!(set[0].id, "greet");
        assert_eq!(set[0].system.as_deref(), Some("be brief"));
        assert_eq!(set[0].attach, vec!["a.png"]);
        assert!(set[0].expect.is_some());
        assert_eq!(set[1].id, "7");
        assert_eq!(set[1].attach, vec!["x", "y"]);
    }

    #[test]
    fn mistakes_name_their_line() {
        let e = parse("{\"prompt\":\"a\"}\nnot json\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("{\"prompt\":\"a\",\"promt\":1}").unwrap_err();
        assert!(e.message.contains("unknown key `promt`"), "{e}");
        let e = parse("{\"prompt\":\"a\",\"expect\":{\"regex\":\"(\"}}").unwrap_err();
        assert!(e.message.starts_with("expect:"), "{e}");
        let e = parse("{\"prompt\":\"a\",\"id\":\"x\"}\n{\"prompt\":\"b\",\"id\":\"x\"}").unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
        assert!(parse("\n\n").is_err());
        assert!(parse("{\"system\":\"s\"}").unwrap_err().message.contains("no `prompt`"));
    }

    #[test]
    fn a_lines_schema_becomes_a_sent_schema_check() {
        let set = parse(
            "{\"prompt\":\"a\",\"schema\":\"name, age int\",\"expect\":\"Ada\"}\n{\"prompt\":\"b\",\"schema\":{\"type\":\"object\"}}\n",
        )
        .unwrap();
        let first = set[0].expect.as_ref().unwrap();
        assert_eq!(first.checks.len(), 2, "the expect and the schema");
        assert_eq!(first.send.as_ref().unwrap()["required"], serde_json::json!(["name", "age"]));
        assert_eq!(set[1].expect_raw, Some(serde_json::json!({"schema": {"type": "object"}})));
        assert!(parse("{\"prompt\":\"a\",\"schema\":\"age integr\"}").unwrap_err().message.starts_with("schema:"));
        assert!(parse("{\"prompt\":\"a\",\"schema\":3}").is_err());
    }

    #[test]
    fn a_lines_schema_may_name_a_json_file_of_the_set() {
        let files = |name: &str| match name {
            "person.json" | "./person" | "person" => Ok(Some(r#"{"type":"object","required":["n"]}"#.to_owned())),
            "notes.txt" => Ok(Some("root:x:0:0\nbin:x:1:1\n".to_owned())),
            "../up.json" => Err("../up.json: /x/up.json is outside the prompt set's folder".to_owned()),
            _ => Ok(None),
        };
        let set = parse_with("{\"prompt\":\"a\",\"schema\":\"person.json\"}", &files).unwrap();
        assert_eq!(set[0].expect_raw, Some(serde_json::json!({"schema": {"type": "object", "required": ["n"]}})));
        let e = parse_with("{\"prompt\":\"a\",\"schema\":\"notes.txt\"}", &files).unwrap_err();
        assert!(e.message.contains("notes.txt: the file is not JSON"), "{e}");
        let e = parse_with("{\"prompt\":\"a\",\"schema\":\"person\"}", &files).unwrap_err();
        assert!(e.message.contains("both a short form and a file") && e.message.contains("./person"), "{e}");
        assert!(parse_with("{\"prompt\":\"a\",\"schema\":\"./person\"}", &files).is_ok());
        let e = parse_with("{\"prompt\":\"a\"}\n{\"prompt\":\"b\",\"schema\":\"../up.json\"}", &files).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("outside the prompt set's folder"), "{e}");
    }

    #[test]
    fn a_threshold_is_a_pass_rate_of_a_checked_line() {
        let one = |l: &str| parse(l).map(|v| v[0].threshold);
        assert_eq!(one(r#"{"prompt": "a", "expect": {"contains": "x"}, "threshold": 0.6}"#), Ok(Some(0.6)));
        assert_eq!(one(r#"{"prompt": "a", "expect": {"contains": "x"}}"#), Ok(None));
        let e = one(r#"{"prompt": "a", "expect": {"contains": "x"}, "threshold": 1.5}"#).unwrap_err();
        assert!(e.message.contains("0 to 1"), "{e}");
        let e = one(r#"{"prompt": "a", "threshold": 0.5}"#).unwrap_err();
        assert!(e.message.contains("expect"), "{e}");
    }
}
