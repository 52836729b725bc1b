//! Checks on the tool calls an answer made (a prompt-set cell run with `--tools`): a tool was
//! called (with arguments matching a schema or holding given fields), a tool was not called,
//! the path of calls (`exact`, `in_order`, `any_order`), and an F1 score of the tools called
//! against an expected set.

use serde_json::Value;

/// One call as the cell stored it: its tool's name and its arguments (JSON text, or JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Call<'a> {
    pub name: &'a str,
    arguments: Option<&'a Value>,
}

impl Call<'_> {
    /// The arguments as JSON (`None`: they are not JSON; no arguments at all are `{}`).
    fn arguments(&self) -> Option<Value> {
        match self.arguments {
            None | Some(Value::Null) => Some(Value::Object(serde_json::Map::new())),
            Some(Value::String(s)) if s.trim().is_empty() => Some(Value::Object(serde_json::Map::new())),
            Some(Value::String(s)) => serde_json::from_str(s).ok(),
            Some(v) => Some(v.clone()),
        }
    }
}

/// The calls of a cell's stored `tool_calls` (`[{name, arguments, …}]`), in order.
#[must_use]
pub fn calls(stored: Option<&Value>) -> Vec<Call<'_>> {
    let all = stored.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    all.iter().filter_map(|c| Some(Call { name: c.get("name")?.as_str()?, arguments: c.get("arguments") })).collect()
}

/// How a trajectory is compared with the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Exactly these calls, in this order.
    Exact,
    /// These calls in this order, others allowed between them.
    InOrder,
    /// Each of these called, in any order.
    AnyOrder,
}

/// A check on the calls.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolTest {
    Called { name: String, schema: Option<Value>, fields: Option<Value> },
    NotCalled(Vec<String>),
    Trajectory { tools: Vec<String>, order: Order },
    F1 { expected: Vec<String>, min: f64 },
}

/// What a tool check found: whether it passed, what failed, and a score for F1.
pub type Found = (bool, Option<String>, Option<f64>);

impl ToolTest {
    /// The check named `k` with value `x`, when `k` names a tool check.
    ///
    /// # Errors
    /// A value of the wrong shape, or a schema that does not compile.
    pub fn compile(k: &str, x: &Value) -> Option<Result<Self, String>> {
        Some(match k {
            "tool_called" => called(x),
            "tool_not_called" => names(x, k).map(Self::NotCalled),
            "trajectory" => trajectory(x),
            "tool_f1" => f1(x),
            _ => return None,
        })
    }

    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Called { .. } => "tool_called",
            Self::NotCalled(_) => "tool_not_called",
            Self::Trajectory { .. } => "trajectory",
            Self::F1 { .. } => "tool_f1",
        }
    }

    #[must_use]
    pub fn run(&self, calls: &[Call<'_>]) -> Found {
        match self {
            Self::Called { name, schema, fields } => run_called(calls, name, schema.as_ref(), fields.as_ref()),
            Self::NotCalled(names) => {
                let hit = calls.iter().find(|c| names.iter().any(|n| n == "*" || n == c.name));
                (hit.is_none(), hit.map(|c| format!("`{}` was called", c.name)), None)
            }
            Self::Trajectory { tools, order } => {
                let made: Vec<&str> = calls.iter().map(|c| c.name).collect();
                let pass = follows(&made, tools, *order);
                (pass, (!pass).then(|| format!("the calls were [{}]", made.join(", "))), None)
            }
            Self::F1 { expected, min } => {
                let score = f1_score(calls, expected);
                let detail = (score + 1e-9 < *min).then(|| format!("F1 {score:.2} < {min}"));
                (detail.is_none(), detail, Some(score))
            }
        }
    }
}

fn run_called(calls: &[Call<'_>], name: &str, schema: Option<&Value>, fields: Option<&Value>) -> Found {
    let named: Vec<&Call<'_>> = calls.iter().filter(|c| c.name == name).collect();
    if named.is_empty() {
        return (false, Some(format!("no call to `{name}`")), None);
    }
    if schema.is_none() && fields.is_none() {
        return (true, None, None);
    }
    let mut why = None;
    for call in named {
        let Some(args) = call.arguments() else {
            why = Some(format!("`{name}`'s arguments are not JSON"));
            continue;
        };
        if let Some(error) = schema.and_then(|s| schema_error(s, &args)) {
            why = Some(format!("`{name}`'s arguments: {error}"));
        } else if fields.is_some_and(|f| !holds(&args, f)) {
            why = Some(format!("`{name}`'s arguments lack the expected fields"));
        } else {
            return (true, None, None);
        }
    }
    (false, why, None)
}

fn schema_error(schema: &Value, args: &Value) -> Option<String> {
    match jsonschema::validator_for(schema) {
        Err(e) => Some(format!("the schema does not compile: {e}")),
        Ok(v) => v.iter_errors(args).next().map(|e| format!("{e} at {}", e.instance_path())),
    }
}

/// Whether `value` holds every field of `want` with the same value (objects compared field by
/// field, so nested objects may hold more).
fn holds(value: &Value, want: &Value) -> bool {
    match (value, want) {
        (Value::Object(v), Value::Object(w)) => w.iter().all(|(k, x)| v.get(k).is_some_and(|y| holds(y, x))),
        _ => value == want,
    }
}

fn follows(made: &[&str], tools: &[String], order: Order) -> bool {
    match order {
        Order::Exact => made.len() == tools.len() && made.iter().zip(tools).all(|(m, t)| m == t),
        Order::InOrder => {
            let mut rest = made.iter();
            tools.iter().all(|t| rest.any(|m| m == t))
        }
        Order::AnyOrder => tools.iter().all(|t| made.contains(&t.as_str())),
    }
}

/// F1 of the set of tools called against the expected set (1 when both are empty).
fn f1_score(calls: &[Call<'_>], expected: &[String]) -> f64 {
    use std::collections::BTreeSet;
    let made: BTreeSet<&str> = calls.iter().map(|c| c.name).collect();
    let want: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    if made.is_empty() && want.is_empty() {
        return 1.0;
    }
    let both = made.intersection(&want).count();
    if both == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let (p, r) = (both as f64 / made.len() as f64, both as f64 / want.len() as f64);
    2.0 * p * r / (p + r)
}

fn names(x: &Value, k: &str) -> Result<Vec<String>, String> {
    let usage = || format!("`{k}` takes a tool's name or a list of names");
    match x {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a.iter().map(|n| n.as_str().map(str::to_owned).ok_or_else(usage)).collect(),
        _ => Err(usage()),
    }
}

/// `"name"` or `{"name", "arguments_schema", "arguments"}`.
fn called(x: &Value) -> Result<ToolTest, String> {
    const USAGE: &str = "`tool_called` takes a tool's name, or {\"name\", \"arguments_schema\", \"arguments\"}";
    if let Value::String(name) = x {
        return Ok(ToolTest::Called { name: name.clone(), schema: None, fields: None });
    }
    let o = x.as_object().ok_or(USAGE)?;
    if o.keys().any(|k| !["name", "arguments_schema", "arguments"].contains(&k.as_str())) {
        return Err(USAGE.into());
    }
    let name = o.get("name").and_then(Value::as_str).ok_or(USAGE)?.to_owned();
    let schema = o.get("arguments_schema").cloned();
    if let Some(s) = &schema {
        jsonschema::validator_for(s).map_err(|e| format!("`tool_called`'s arguments_schema does not compile: {e}"))?;
    }
    let fields = o.get("arguments").cloned();
    if fields.as_ref().is_some_and(|f| !f.is_object()) {
        return Err("`tool_called`'s `arguments` takes an object of the fields expected".into());
    }
    Ok(ToolTest::Called { name, schema, fields })
}

/// `["a", "b"]` (exact) or `{"tools": [...], "order": "exact" | "in_order" | "any_order"}`.
fn trajectory(x: &Value) -> Result<ToolTest, String> {
    const USAGE: &str = "`trajectory` takes a list of tool names, or {\"tools\": [...], \"order\": \"exact\" | \"in_order\" | \"any_order\"}";
    if x.is_array() {
        return Ok(ToolTest::Trajectory { tools: names(x, "trajectory")?, order: Order::Exact });
    }
    let o = x.as_object().ok_or(USAGE)?;
    if o.keys().any(|k| k != "tools" && k != "order") {
        return Err(USAGE.into());
    }
    let tools = names(o.get("tools").ok_or(USAGE)?, "trajectory")?;
    let order = match o.get("order").map(|v| v.as_str()) {
        None | Some(Some("exact")) => Order::Exact,
        Some(Some("in_order")) => Order::InOrder,
        Some(Some("any_order")) => Order::AnyOrder,
        Some(_) => return Err(USAGE.into()),
    };
    Ok(ToolTest::Trajectory { tools, order })
}

/// `{"expected": [...], "min": 0.8}` (`min` 1 by default).
fn f1(x: &Value) -> Result<ToolTest, String> {
    const USAGE: &str = "`tool_f1` takes {\"expected\": [tool names], \"min\": a score from 0 to 1}";
    let o = x.as_object().ok_or(USAGE)?;
    if o.keys().any(|k| k != "expected" && k != "min") {
        return Err(USAGE.into());
    }
    let expected = names(o.get("expected").ok_or(USAGE)?, "tool_f1")?;
    let min = match o.get("min") {
        None => 1.0,
        Some(m) => m.as_f64().filter(|m| (0.0..=1.0).contains(m)).ok_or(USAGE)?,
    };
    Ok(ToolTest::F1 { expected, min })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(check: Value, stored: &Value) -> Found {
        let (k, x) = check.as_object().and_then(|o| o.iter().next()).unwrap();
        ToolTest::compile(k, x).unwrap().unwrap().run(&calls(Some(stored)))
    }

    #[test]
    fn each_tool_check() {
        let made = json!([
            {"name": "search", "arguments": "{\"q\": \"rust\", \"opts\": {\"n\": 3, \"lang\": \"en\"}}"},
            {"name": "read_file", "arguments": "{\"path\": \"a.txt\"}"},
            {"name": "broken", "arguments": "{not json"}
        ]);
        assert!(run(json!({"tool_called": "search"}), &made).0);
        assert_eq!(run(json!({"tool_called": "write"}), &made).1.as_deref(), Some("no call to `write`"));
        assert!(run(json!({"tool_called": {"name": "search", "arguments": {"opts": {"n": 3}}}}), &made).0);
        assert!(!run(json!({"tool_called": {"name": "search", "arguments": {"q": "go"}}}), &made).0);
        let schema = json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "integer"}}});
        let r = run(json!({"tool_called": {"name": "read_file", "arguments_schema": schema}}), &made);
        assert!(!r.0 && r.1.as_deref().is_some_and(|d| d.contains("/path")), "{r:?}");
        assert!(run(json!({"tool_called": "broken"}), &made).0, "a call by name needs no arguments");
        let r = run(json!({"tool_called": {"name": "broken", "arguments": {}}}), &made);
        assert_eq!(r.1.as_deref(), Some("`broken`'s arguments are not JSON"));
        assert!(!run(json!({"tool_not_called": ["write", "read_file"]}), &made).0);
        assert!(!run(json!({"tool_not_called": "*"}), &made).0);
        assert!(run(json!({"tool_not_called": "*"}), &json!([])).0);
        assert!(run(json!({"trajectory": ["search", "read_file", "broken"]}), &made).0);
        assert!(!run(json!({"trajectory": ["search", "read_file"]}), &made).0);
        assert!(run(json!({"trajectory": {"tools": ["search", "broken"], "order": "in_order"}}), &made).0);
        assert!(!run(json!({"trajectory": {"tools": ["broken", "search"], "order": "in_order"}}), &made).0);
        assert!(run(json!({"trajectory": {"tools": ["broken", "search"], "order": "any_order"}}), &made).0);
        let r = run(json!({"tool_f1": {"expected": ["search", "read_file"], "min": 0.8}}), &made);
        assert!(r.0 && (r.2.unwrap() - 0.8).abs() < 1e-9, "{r:?}");
        assert!(!run(json!({"tool_f1": {"expected": ["search"]}}), &made).0);
    }

    #[test]
    fn mistakes_are_errors() {
        for bad in [
            json!({"tool_called": 3}),
            json!({"tool_called": {"name": "x", "args": {}}}),
            json!({"tool_called": {"name": "x", "arguments": []}}),
            json!({"trajectory": {"tools": ["a"], "order": "sideways"}}),
            json!({"tool_f1": {"expected": ["a"], "min": 2}}),
            json!({"tool_not_called": 1}),
        ] {
            let (k, x) = bad.as_object().and_then(|o| o.iter().next()).unwrap();
            assert!(ToolTest::compile(k, x).unwrap().is_err(), "{bad}");
        }
        assert!(ToolTest::compile("contains", &json!("x")).is_none());
    }
}
