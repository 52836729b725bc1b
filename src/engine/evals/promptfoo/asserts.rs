//! promptfoo's asserts as palaver's `expect` checks: each type palaver has mapped to its check,
//! with `not-`, `weight` and `metric`; the rest named, for the caller to refuse or skip.

use super::Files;
use serde_json::{Map, Value, json};

/// The types that have a palaver check, for the message naming one that has not.
pub const MAPPED: &[&str] = &[
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "regex",
    "levenshtein",
    "is-json",
    "cost",
    "latency",
    "perplexity",
    "is-refusal",
    "finish-reason",
    "llm-rubric",
    "select-best",
    "tool-call-f1",
];

/// Where an assert's values come from: the test's variables, its files and its grader.
pub struct Context<'a> {
    pub vars: &'a Map<String, Value>,
    pub files: Files<'a>,
    /// The judge model for `llm-rubric` and `select-best` (`profile/model`), if the config names one.
    pub grader: Option<&'a str>,
}

/// An assert as a palaver check, `Ok(None)` when palaver has no such check (the caller names it).
///
/// # Errors
/// An assert palaver has but whose value it cannot read (a bad schema, a number that is not one).
pub fn check(a: &Value, cx: &Context<'_>) -> Result<Option<Value>, String> {
    let Some(o) = a.as_object() else { return Err("an assert is an object with a `type`".into()) };
    let Some(kind) = o.get("type").and_then(Value::as_str) else { return Err("an assert needs its `type`".into()) };
    let (negate, base) = match kind.strip_prefix("not-") {
        Some(b) => (true, b),
        None => (false, kind),
    };
    if o.contains_key("transform") {
        return Ok(None);
    }
    let value = o.get("value").map(|v| render(v, cx.vars)).transpose()?;
    let threshold = o.get("threshold").and_then(Value::as_f64);
    let Some(mut made) = test(base, value, threshold, cx)? else { return Ok(None) };
    if negate {
        made = json!({ "not": made });
    }
    if let Some(m) = made.as_object_mut() {
        if let Some(w) = o.get("weight") {
            m.insert("weight".into(), w.clone());
        }
        if let Some(name) = o.get("metric") {
            m.insert("metric".into(), name.clone());
        }
    }
    Ok(Some(made))
}

/// The check for type `base` (without its `not-`).
fn test(base: &str, value: Option<Value>, threshold: Option<f64>, cx: &Context<'_>) -> Result<Option<Value>, String> {
    let text = || value.as_ref().map(as_text).ok_or_else(|| format!("`{base}` needs a `value`"));
    let list = || -> Result<Value, String> {
        match &value {
            Some(Value::Array(a)) => Ok(Value::Array(a.iter().map(|v| Value::String(as_text(v))).collect())),
            // A string is a comma-separated list, as promptfoo reads one.
            Some(v) => Ok(as_text(v).split(',').map(|s| Value::String(s.trim().to_owned())).collect()),
            None => Err(format!("`{base}` needs a `value`")),
        }
    };
    let grader = |mut j: Value| {
        if let (Some(m), Some(g)) = (j.as_object_mut(), cx.grader) {
            m.insert("model".into(), Value::String(g.to_owned()));
        }
        j
    };
    Ok(Some(match base {
        "equals" if matches!(value, Some(Value::Object(_) | Value::Array(_))) => return Ok(None),
        "equals" => json!({ "equals": text()? }),
        "contains" => json!({ "contains": text()? }),
        "icontains" => json!({ "icontains": text()? }),
        "starts-with" => json!({ "starts_with": text()? }),
        "regex" => json!({ "regex": text()? }),
        "contains-any" => json!({ "contains_any": list()? }),
        "contains-all" => json!({ "contains_all": list()? }),
        "icontains-any" => json!({ "icontains_any": list()? }),
        "icontains-all" => json!({ "icontains_all": list()? }),
        "levenshtein" => json!({ "levenshtein": { "value": text()?, "max": threshold.unwrap_or(5.0).floor() as u64 } }),
        "is-json" => match value {
            None => json!({ "is_json": true }),
            Some(schema) => json!({ "json_schema": schema_of(schema, cx.files)? }),
        },
        "cost" => json!({ "max_cost": threshold.ok_or("`cost` needs a `threshold` (dollars)")? }),
        "latency" => json!({ "max_latency_ms": threshold.ok_or("`latency` needs a `threshold` (ms)")?.floor() as u64 }),
        "perplexity" => json!({ "perplexity": threshold.ok_or("`perplexity` needs a `threshold`")? }),
        "is-refusal" => json!({ "is_refusal": true }),
        "finish-reason" => json!({ "finish_reason": text()? }),
        "llm-rubric" => {
            let mut j = json!({ "judge": text()? });
            if let Some(t) = threshold {
                j["threshold"] = json!(t.clamp(0.0, 1.0));
            }
            grader(j)
        }
        "select-best" => grader(json!({ "select_best": text()? })),
        "tool-call-f1" => json!({ "tool_f1": { "expected": list()?, "min": threshold.unwrap_or(1.0) } }),
        _ => return Ok(None),
    }))
}

/// A value as text: a string as it is, a number or anything else as its JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every string in `v` rendered with the test's variables, as promptfoo renders assert values.
pub fn render(v: &Value, vars: &Map<String, Value>) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) if s.contains("{{") || s.contains("{%") => {
            Value::String(crate::engine::evals::jinja::render(s, vars).map_err(|e| format!("value: {e}"))?)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| render(x, vars)).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| Ok((k.clone(), render(x, vars)?))).collect::<Result<_, String>>()?)
        }
        other => other.clone(),
    })
}

/// An `is-json` schema: an object, YAML or JSON text, or a `file://` file of either.
fn schema_of(v: Value, files: Files<'_>) -> Result<Value, String> {
    match v {
        Value::String(s) => {
            let text = match s.strip_prefix("file://") {
                Some(name) => super::read(files, name)?,
                None => s,
            };
            match super::yaml(&text) {
                Ok(schema @ (Value::Object(_) | Value::Bool(_))) => Ok(schema),
                Ok(_) => Err("is-json: the schema is not a JSON schema (an object)".into()),
                Err(e) => Err(format!("is-json: the schema is neither JSON nor YAML ({e})")),
            }
        }
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(a: Value) -> Option<Value> {
        let vars = json!({"city": "Paris"}).as_object().unwrap().clone();
        let files = |_: &str| Ok(Some("type: object\nrequired: [a]\n".to_owned()));
        check(&a, &Context { vars: &vars, files: &files, grader: Some("g/judge") }).unwrap()
    }

    #[test]
    fn each_mapped_type_becomes_its_check() {
        assert_eq!(map(json!({"type": "contains", "value": "{{ city | upper }}"})), Some(json!({"contains": "PARIS"})));
        assert_eq!(map(json!({"type": "equals", "value": 4})), Some(json!({"equals": "4"})));
        assert_eq!(
            map(json!({"type": "not-icontains-any", "value": "a, b", "weight": 2, "metric": "m"})),
            Some(json!({"not": {"icontains_any": ["a", "b"]}, "weight": 2, "metric": "m"}))
        );
        assert_eq!(
            map(json!({"type": "levenshtein", "value": "x", "threshold": 3})),
            Some(json!({"levenshtein": {"value": "x", "max": 3}}))
        );
        assert_eq!(map(json!({"type": "is-json"})), Some(json!({"is_json": true})));
        assert_eq!(
            map(json!({"type": "is-json", "value": "file://s.yaml"})),
            Some(json!({"json_schema": {"type": "object", "required": ["a"]}}))
        );
        assert_eq!(map(json!({"type": "latency", "threshold": 500})), Some(json!({"max_latency_ms": 500})));
        assert_eq!(map(json!({"type": "cost", "threshold": 0.01})), Some(json!({"max_cost": 0.01})));
        assert_eq!(
            map(json!({"type": "llm-rubric", "value": "polite", "threshold": 0.8})),
            Some(json!({"judge": "polite", "threshold": 0.8, "model": "g/judge"}))
        );
        assert_eq!(
            map(json!({"type": "select-best", "value": "shortest"})),
            Some(json!({"select_best": "shortest", "model": "g/judge"}))
        );
        for t in MAPPED {
            let a = if *t == "is-json" { json!({"type": t}) } else { json!({"type": t, "value": "x", "threshold": 1}) };
            let made = map(a).unwrap_or_else(|| panic!("{t} is mapped"));
            crate::engine::evals::expect::Expect::compile(&made).unwrap_or_else(|e| panic!("{t}: {e}"));
        }
    }

    #[test]
    fn types_palaver_has_not_are_none() {
        for t in ["javascript", "python", "contains-json", "similar", "webhook", "g-eval"] {
            assert_eq!(map(json!({"type": t, "value": "x"})), None, "{t}");
        }
        assert_eq!(map(json!({"type": "equals", "value": {"a": 1}})), None, "JSON equality");
        assert_eq!(map(json!({"type": "contains", "value": "a", "transform": "output.trim()"})), None);
    }
}
