//! A promptfoo config's `tests`: inline, or `file://` CSV (promptfoo's `__expected`,
//! `__description`, `__prefix`, `__suffix` columns), JSON, JSON Lines or YAML; `defaultTest`
//! merged in as promptfoo merges it; vars read from their files and expanded (a list makes
//! one test per value, every combination, as promptfoo does).

use super::asserts::{self, Context};
use super::{Files, read, yaml};
use crate::engine::evals::prompts::PromptItem;
use serde_json::{Map, Value};

/// The test fields palaver runs as promptfoo does; `TOLD` it names as changing the verdict.
const KNOWN: &[&str] = &["description", "vars", "assert", "options", "metadata"];
const TOLD: &[(&str, &str)] = &[
    ("threshold", "a test `threshold` (palaver passes a cell when every check that weighs something passes)"),
    ("providers", "`providers` (a test for some providers only: palaver runs every test on every provider)"),
    ("provider", "a test's own `provider`"),
    ("providerOutput", "`providerOutput` (a recorded answer)"),
    ("assertScoringFunction", "`assertScoringFunction`"),
];
const OPTIONS: &[&str] = &["prefix", "suffix", "provider"];
/// Most tests one test's list vars may expand into.
const MAX_COMBINATIONS: usize = 10_000;

/// The config's `tests`.
///
/// # Errors
/// A file that cannot be read or is not a list of tests.
pub fn load(v: Option<&Value>, files: Files<'_>) -> Result<Vec<Map<String, Value>>, String> {
    let list = match v {
        None | Some(Value::Null) => return Err("the config has no `tests`".into()),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => vec![other.clone()],
    };
    let mut out = Vec::new();
    for t in list {
        match t {
            Value::Object(o) => out.push(o),
            Value::String(s) => out.extend(from_file(s.strip_prefix("file://").unwrap_or(&s), files)?),
            _ => return Err("`tests` holds test objects or file:// paths".into()),
        }
    }
    Ok(out)
}

fn from_file(name: &str, files: Files<'_>) -> Result<Vec<Map<String, Value>>, String> {
    let lower = name.to_ascii_lowercase();
    if name.contains('*') || [".js", ".ts", ".py"].iter().any(|e| lower.ends_with(e)) {
        return Err(format!("tests file://{name}: tests made by a program or a glob are not run by palaver"));
    }
    let text = read(files, name)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let at = |e: String| format!("tests file://{name}: {e}");
    let values: Vec<Value> = if lower.ends_with(".csv") {
        return csv(name, text).map_err(at);
    } else if lower.ends_with(".jsonl") {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| serde_json::from_str(l).map_err(|e| at(format!("line {}: {e}", i + 1))))
            .collect::<Result<_, _>>()?
    } else {
        match yaml(text).map_err(at)? {
            Value::Array(a) => a,
            one => vec![one],
        }
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Object(o) => Ok(o),
            _ => Err(at(format!("test {} is not an object", i + 1))),
        })
        .collect()
}

/// A CSV of tests: each column a var, but promptfoo's `__expected…` (an assert written as
/// `type:value`), `__description`, `__prefix`, `__suffix`, `__metric` and `__threshold`.
fn csv(name: &str, text: &str) -> Result<Vec<Map<String, Value>>, String> {
    let records = crate::engine::evals::template::csv_records(name, text)?;
    let Some((_, header)) = records.first() else { return Ok(Vec::new()) };
    let header: Vec<String> = header.iter().map(|h| h.trim().to_owned()).collect();
    let mut out = Vec::new();
    for (line, fields) in &records[1..] {
        if fields.len() != header.len() {
            return Err(format!("line {line}: {} fields, the header has {}", fields.len(), header.len()));
        }
        let (mut vars, mut asserts, mut test, mut options) = (Map::new(), Vec::new(), Map::new(), Map::new());
        for (key, value) in header.iter().zip(fields) {
            match key.as_str() {
                k if k.starts_with("__expected") => {
                    if !value.trim().is_empty() {
                        asserts.push(from_string(value.trim()));
                    }
                }
                "__description" => drop(test.insert("description".into(), Value::String(value.clone()))),
                "__prefix" | "__suffix" => drop(options.insert(key[2..].to_owned(), Value::String(value.clone()))),
                "__threshold" if !value.trim().is_empty() => {
                    drop(test.insert("threshold".into(), Value::String(value.clone())))
                }
                k if k.starts_with("__") => {}
                _ => drop(vars.insert(key.clone(), Value::String(value.clone()))),
            }
        }
        test.insert("vars".into(), Value::Object(vars));
        test.insert("assert".into(), Value::Array(asserts));
        test.insert("options".into(), Value::Object(options));
        out.push(test);
    }
    Ok(out)
}

/// An assert written as text, as promptfoo reads `__expected`: `grade:`/`llm-rubric:`, a
/// `[not-]type[(threshold)]:value`, code (`javascript:`, `fn:`, `python:`), else `equals`.
fn from_string(s: &str) -> Value {
    let (kind, rest) = if let Some(r) = s.strip_prefix("grade:").or_else(|| s.strip_prefix("llm-rubric:")) {
        ("llm-rubric".to_owned(), Some(r.to_owned()))
    } else if ["javascript:", "fn:", "eval:", "python:"].iter().any(|p| s.starts_with(p)) {
        (s.split(':').next().unwrap_or_default().replace("fn", "javascript").replace("eval", "javascript"), None)
    } else {
        let head = s.split(':').next().unwrap_or_default();
        let (name, threshold) = match head.split_once('(') {
            Some((n, t)) => (n, t.strip_suffix(')').and_then(|t| t.parse::<f64>().ok())),
            None => (head, None),
        };
        let bare = name.strip_prefix("not-").unwrap_or(name);
        let known =
            asserts::MAPPED.contains(&bare) || ["contains-json", "similar", "javascript", "python"].contains(&bare);
        if !known {
            return serde_json::json!({"type": "equals", "value": s});
        }
        let value = s.get(head.len() + 1..).map(str::to_owned);
        let mut a = serde_json::json!({"type": name});
        if let Some(v) = value {
            a["value"] = Value::String(v);
        }
        if let Some(t) = threshold {
            a["threshold"] = serde_json::json!(t);
        }
        return a;
    };
    let mut a = serde_json::json!({"type": kind});
    if let Some(v) = rest {
        a["value"] = Value::String(v);
    }
    a
}

/// `test` with `default` under it: vars and options merged (the test's win), asserts added
/// after the default's, other fields the test's else the default's.
pub fn merged(default: &Map<String, Value>, test: &Map<String, Value>) -> Map<String, Value> {
    let mut out = default.clone();
    for (k, v) in test {
        let joined = match (k.as_str(), default.get(k), v) {
            ("vars" | "options", Some(Value::Object(d)), Value::Object(t)) => {
                let mut m = d.clone();
                m.extend(t.clone());
                Value::Object(m)
            }
            ("assert", Some(Value::Array(d)), Value::Array(t)) => Value::Array(d.iter().chain(t).cloned().collect()),
            _ => v.clone(),
        };
        out.insert(k.clone(), joined);
    }
    out
}

/// How messages name test `n`: `test 3 ("its description")`.
pub fn name(test: &Map<String, Value>, n: usize) -> String {
    match test.get("description").and_then(Value::as_str) {
        Some(d) => format!("test {n} ({d:?})"),
        None => format!("test {n}"),
    }
}

/// The test's id in the set: its description, else `test N`; the prompt's label before it
/// when the config has several; made unique among `made`.
pub fn id(test: &Map<String, Value>, n: usize, prompts: usize, p: usize, label: &str, made: &[PromptItem]) -> String {
    let own = test.get("description").and_then(Value::as_str).map_or_else(|| format!("test {n}"), str::to_owned);
    let base = if prompts > 1 { format!("{} · {own}", short(label, p)) } else { own };
    let taken = |c: &str| made.iter().any(|i| i.id == c);
    if !taken(&base) {
        return base;
    }
    (2..).map(|i| format!("{base} #{i}")).find(|c| !taken(c)).unwrap_or(base)
}

fn short(label: &str, p: usize) -> String {
    let first: String = label.lines().next().unwrap_or_default().chars().take(40).collect();
    if first.is_empty() { format!("prompt {}", p + 1) } else { first }
}

/// The grading provider the test's options name.
pub fn grader(test: &Map<String, Value>) -> Option<&Value> {
    let p = test.get("options")?.get("provider")?;
    // `{text: {...}, embedding: {...}}` names one per kind of grading: the text one grades rubrics.
    Some(p.get("text").unwrap_or(p))
}

/// The test's fields and options that palaver cannot honour, said as such.
pub fn refused(test: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> =
        TOLD.iter().filter(|(k, _)| test.contains_key(*k)).map(|(_, what)| (*what).to_owned()).collect();
    out.extend(
        test.keys()
            .filter(|k| !KNOWN.contains(&k.as_str()) && !TOLD.iter().any(|(t, _)| t == k))
            .map(|k| format!("the test field `{k}`")),
    );
    if let Some(Value::Object(o)) = test.get("options") {
        out.extend(o.keys().filter(|k| !OPTIONS.contains(&k.as_str())).map(|k| format!("options.{k}")));
    }
    out
}

/// The test's `expect` and the asserts it could not carry (named).
///
/// # Errors
/// An assert palaver has whose value it cannot read.
pub fn expect(test: &Map<String, Value>, cx: &Context<'_>) -> Result<(Option<Value>, Vec<String>), String> {
    let list = match test.get("assert") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err("`assert` must be a list".into()),
    };
    let (mut checks, mut refused) = (Vec::new(), Vec::new());
    for (i, a) in list.iter().enumerate() {
        let kind = a.get("type").and_then(Value::as_str).unwrap_or("?");
        let why = if a.get("transform").is_some() {
            Some(format!("assert {} `{kind}` with a `transform`", i + 1))
        } else if a.get("provider").is_some() {
            Some(format!("assert {} `{kind}` with its own `provider` (name the grader in options.provider)", i + 1))
        } else {
            None
        };
        match (why, asserts::check(a, cx).map_err(|e| format!("assert {} `{kind}`: {e}", i + 1))?) {
            (None, Some(c)) => checks.push(c),
            (Some(w), _) => refused.push(w),
            (None, None) => refused.push(format!("assert {} `{kind}` (palaver has no such check)", i + 1)),
        }
    }
    Ok(((!checks.is_empty()).then_some(Value::Array(checks)), refused))
}

/// The test's vars, `file://` values read, one map per combination of its list values.
///
/// # Errors
/// A file that cannot be read; too many combinations.
pub fn vars(test: &Map<String, Value>, files: Files<'_>) -> Result<Vec<Map<String, Value>>, String> {
    let given = match test.get("vars") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(Value::String(s)) => match yaml(&read(files, s.strip_prefix("file://").unwrap_or(s))?)? {
            Value::Object(o) => o,
            _ => return Err("the vars file holds no mapping".into()),
        },
        Some(_) => return Err("`vars` must be a mapping".into()),
    };
    let mut rows = vec![Map::new()];
    for (k, v) in given {
        let values = match v {
            Value::Array(a) if !a.is_empty() => a,
            one => vec![one],
        };
        let mut next = Vec::with_capacity(rows.len() * values.len());
        for row in &rows {
            for value in &values {
                let mut r = row.clone();
                r.insert(k.clone(), var_value(value, files)?);
                next.push(r);
            }
        }
        if next.len() > MAX_COMBINATIONS {
            return Err(format!("the list vars make more than {MAX_COMBINATIONS} tests"));
        }
        rows = next;
    }
    Ok(rows)
}

/// A var's value: a `file://` one read (a YAML file as its JSON, any other as its trimmed
/// text), a string without its last line break, as promptfoo has them.
fn var_value(v: &Value, files: Files<'_>) -> Result<Value, String> {
    let Value::String(s) = v else { return Ok(v.clone()) };
    let Some(name) = s.strip_prefix("file://") else {
        return Ok(Value::String(s.strip_suffix('\n').unwrap_or(s).to_owned()));
    };
    let lower = name.to_ascii_lowercase();
    if [".js", ".cjs", ".mjs", ".ts", ".py"].iter().any(|e| lower.ends_with(e)) {
        return Err(format!("the var file://{name} is a program: palaver runs none"));
    }
    let text = read(files, name)?;
    if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        return Ok(Value::String(yaml(&text).map_err(|e| format!("file://{name}: {e}"))?.to_string()));
    }
    Ok(Value::String(text.trim().to_owned()))
}
