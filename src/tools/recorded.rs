//! Recorded tool outputs (a prompt-set line's `tool_outputs`): the answers a registry gives in
//! place of running anything. A call is answered by the first recording of its name whose
//! `arguments` equal the call's once both are read as JSON (a recording without `arguments`
//! answers any call of its name); a call nothing answers gets an error output naming it, and
//! the cell fails that turn (see `runs::conversation`).

use super::ToolOutput;
use serde_json::Value;

/// One recorded result.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub name: String,
    /// `None`: any call of this name.
    pub arguments: Option<Value>,
    pub output: String,
}

/// The recordings one turn may use, its own first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    pub recordings: Vec<Recording>,
}

const KEYS: &[&str] = &["name", "arguments", "output"];

/// Reads a `tool_outputs` list: `[{"name", "arguments"?, "output"}]`. An `output` that is not
/// a string is sent as its JSON text; `arguments` is an object, or a string holding one.
///
/// # Errors
/// What is wrong, naming the entry (1-based).
pub fn parse(v: &Value) -> Result<Vec<Recording>, String> {
    let Value::Array(items) = v else {
        return Err("`tool_outputs` must be a list of {\"name\", \"arguments\", \"output\"} objects".into());
    };
    items.iter().enumerate().map(|(i, item)| one(item).map_err(|e| format!("tool_outputs[{}]: {e}", i + 1))).collect()
}

fn one(item: &Value) -> Result<Recording, String> {
    let Value::Object(obj) = item else { return Err("not an object".into()) };
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{k}` (known: {})", KEYS.join(", ")));
    }
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err("`name` must be the tool's name".into()),
    };
    let arguments = match obj.get("arguments") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => return Err("`arguments` must be a JSON object".into()),
        },
        Some(_) => return Err("`arguments` must be a JSON object".into()),
    };
    let output = match obj.get("output") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => return Err(format!("no `output` for `{name}`")),
        Some(other) => other.to_string(),
    };
    Ok(Recording { name, arguments, output })
}

/// Whether two JSON values are the same once read: key order and number spelling
/// (`1` and `1.0`) do not matter.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

impl Recorded {
    /// The recording that answers a call of `name` with the model's `arguments` text.
    #[must_use]
    pub fn find(&self, name: &str, arguments: &str) -> Option<&Recording> {
        let sent: Option<Value> = if arguments.trim().is_empty() {
            Some(Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_str(arguments).ok()
        };
        self.recordings.iter().find(|r| {
            r.name == name
                && match (&r.arguments, &sent) {
                    (None, _) => true,
                    (Some(want), Some(got)) => same(want, got),
                    (Some(_), None) => false,
                }
        })
    }

    /// The answer to a call: its recorded output, or an error naming the call.
    #[must_use]
    pub fn answer(&self, name: &str, arguments: &str) -> ToolOutput {
        match self.find(name, arguments) {
            Some(r) => ToolOutput::ok(r.output.clone()),
            None => ToolOutput::error(format!("{} (nothing ran)", unrecorded(name, arguments))),
        }
    }
}

/// What a call nothing answers is called: `no recorded output for get_weather {"city":"Rome"}`.
#[must_use]
pub fn unrecorded(name: &str, arguments: &str) -> String {
    let args = serde_json::from_str::<Value>(arguments).map_or_else(|_| arguments.trim().to_owned(), |v| v.to_string());
    let args = if args.is_empty() { "{}".to_owned() } else { super::clip(&args, 300) };
    format!("no recorded output for {} {args}", super::clip(name, 100))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded() -> Recorded {
        let v = json!([
            {"name": "get_weather", "arguments": {"city": "Paris", "days": 1}, "output": "sunny"},
            {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}", "output": {"t": -3}},
            {"name": "now", "output": "noon"}
        ]);
        Recorded { recordings: parse(&v).unwrap() }
    }

    #[test]
    fn a_call_matches_on_its_name_and_its_arguments_as_json() {
        let r = recorded();
        assert_eq!(r.answer("get_weather", r#"{ "days": 1.0, "city": "Paris" }"#), ToolOutput::ok("sunny"));
        assert_eq!(r.answer("get_weather", r#"{"city":"Oslo"}"#).text, r#"{"t":-3}"#);
        assert_eq!(r.answer("now", r#"{"tz":"UTC"}"#).text, "noon", "no arguments: any call of the name");
        assert_eq!(r.answer("now", "").text, "noon");
        let miss = r.answer("get_weather", r#"{"city":"Rome"}"#);
        assert!(miss.is_error);
        assert_eq!(miss.text, r#"no recorded output for get_weather {"city":"Rome"} (nothing ran)"#);
        assert!(r.find("get_weather", "{not json").is_none());
        assert!(r.find("read_file", "{}").is_none());
    }

    #[test]
    fn bad_recordings_name_their_entry() {
        let e = |v: Value| parse(&v).unwrap_err();
        assert!(e(json!({"name": "x"})).contains("must be a list"));
        assert_eq!(
            e(json!([{"name": "x", "output": "o"}, {"output": "o"}])),
            "tool_outputs[2]: `name` must be the tool's name"
        );
        assert_eq!(e(json!([{"name": "x"}])), "tool_outputs[1]: no `output` for `x`");
        assert!(e(json!([{"name": "x", "output": "o", "args": {}}])).contains("unknown key `args`"));
        assert!(e(json!([{"name": "x", "output": "o", "arguments": [1]}])).contains("JSON object"));
    }
}
