//! A prompt's `expect`: checks on the answer's text. A string is "contains"; an object may
//! hold `contains` (a string or a list, all must appear), `not_contains`, `regex`, `json: true`
//! (the answer is JSON), `json_schema` (the answer is JSON valid against the schema), `schema`
//! (the same check, and the schema is also sent as the structured-output format: a prompt line's
//! `"schema"` and `--schema` become this); a list holds several such checks. Every check must pass. The JSON of the answer is its whole text,
//! else the first fenced code block (models like to fence JSON).

use serde::Serialize;
use serde_json::Value;

/// One compiled check.
#[derive(Debug, Clone)]
pub enum Check {
    Contains(String),
    NotContains(String),
    Regex(regex::Regex),
    Json,
    Schema(Box<Value>),
}

impl PartialEq for Check {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Contains(a), Self::Contains(b)) | (Self::NotContains(a), Self::NotContains(b)) => a == b,
            (Self::Regex(a), Self::Regex(b)) => a.as_str() == b.as_str(),
            (Self::Json, Self::Json) => true,
            (Self::Schema(a), Self::Schema(b)) => a == b,
            _ => false,
        }
    }
}

/// A prompt's checks, compiled once.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub checks: Vec<Check>,
    /// The schema of a `schema` check: the request asks for answers that follow it.
    pub send: Option<Value>,
}

/// The outcome of one check on one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CheckResult {
    pub kind: String,
    pub pass: bool,
    /// What failed, for the report ("missing `Paris`", the schema error…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Expect {
    /// Compiles an `expect` value.
    ///
    /// # Errors
    /// An unknown check, a value of the wrong type, a regex or schema that does not compile.
    pub fn compile(v: &Value) -> Result<Self, String> {
        let mut checks = Vec::new();
        let mut send = None;
        add(v, &mut checks, &mut send)?;
        if checks.is_empty() {
            return Err("no check in it".into());
        }
        Ok(Self { checks, send })
    }

    /// Runs every check on `answer`.
    #[must_use]
    pub fn run(&self, answer: &str) -> Vec<CheckResult> {
        self.checks.iter().map(|c| c.run(answer)).collect()
    }
}

fn strings(v: &Value, what: &str) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_owned).ok_or_else(|| format!("`{what}` takes a string or a list of strings"))
            })
            .collect(),
        _ => Err(format!("`{what}` takes a string or a list of strings")),
    }
}

fn add(v: &Value, out: &mut Vec<Check>, send: &mut Option<Value>) -> Result<(), String> {
    match v {
        Value::String(s) => out.push(Check::Contains(s.clone())),
        Value::Array(a) => {
            for x in a {
                add(x, out, send)?;
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                match k.as_str() {
                    "contains" => out.extend(strings(x, k)?.into_iter().map(Check::Contains)),
                    "not_contains" => out.extend(strings(x, k)?.into_iter().map(Check::NotContains)),
                    "regex" => {
                        for r in strings(x, k)? {
                            let re = regex::RegexBuilder::new(&r)
                                .size_limit(1 << 20)
                                .build()
                                .map_err(|e| format!("regex `{r}`: {e}"))?;
                            out.push(Check::Regex(re));
                        }
                    }
                    "json" => match x {
                        Value::Bool(true) => out.push(Check::Json),
                        Value::Bool(false) => {}
                        _ => return Err("`json` takes true".into()),
                    },
                    "json_schema" | "schema" => {
                        jsonschema::validator_for(x).map_err(|e| format!("{k} does not compile: {e}"))?;
                        out.push(Check::Schema(Box::new(x.clone())));
                        if k == "schema" {
                            *send = Some(x.clone());
                        }
                    }
                    _ => {
                        return Err(format!(
                            "unknown check `{k}` (known: contains, not_contains, regex, json, json_schema, schema)"
                        ));
                    }
                }
            }
        }
        _ => return Err("expect takes a string, an object of checks, or a list of them".into()),
    }
    Ok(())
}

/// The answer as JSON: the whole text, else the first fenced code block.
#[must_use]
pub fn answer_json(answer: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(answer.trim()) {
        return Some(v);
    }
    let start = answer.find("```")?;
    let rest = &answer[start + 3..];
    let body_start = rest.find('\n')? + 1;
    let body = &rest[body_start..];
    let end = body.find("```")?;
    serde_json::from_str(body[..end].trim()).ok()
}

fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

impl Check {
    fn run(&self, answer: &str) -> CheckResult {
        let (kind, pass, detail) = match self {
            Self::Contains(s) => {
                let pass = answer.contains(s.as_str());
                ("contains", pass, (!pass).then(|| format!("missing `{}`", clip(s))))
            }
            Self::NotContains(s) => {
                let pass = !answer.contains(s.as_str());
                ("not_contains", pass, (!pass).then(|| format!("has `{}`", clip(s))))
            }
            Self::Regex(re) => {
                let pass = re.is_match(answer);
                ("regex", pass, (!pass).then(|| format!("no match for `{}`", clip(re.as_str()))))
            }
            Self::Json => {
                let pass = answer_json(answer).is_some();
                ("json", pass, (!pass).then(|| "the answer is not JSON".to_owned()))
            }
            Self::Schema(schema) => match (answer_json(answer), jsonschema::validator_for(schema)) {
                (None, _) => ("schema", false, Some("the answer is not JSON".to_owned())),
                (Some(_), Err(e)) => ("schema", false, Some(format!("the schema does not compile: {e}"))),
                (Some(v), Ok(validator)) => {
                    let first = validator.iter_errors(&v).next().map(|e| format!("{} at {}", e, e.instance_path()));
                    ("schema", first.is_none(), first.map(|d| clip(&d)))
                }
            },
        };
        CheckResult { kind: kind.to_owned(), pass, detail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(expect: Value, answer: &str) -> Vec<bool> {
        Expect::compile(&expect).unwrap().run(answer).into_iter().map(|r| r.pass).collect()
    }

    #[test]
    fn each_kind_of_check() {
        assert_eq!(run(json!("Paris"), "It is Paris."), [true]);
        assert_eq!(run(json!({"contains": ["a", "zz"]}), "abc"), [true, false]);
        assert_eq!(run(json!({"not_contains": "sorry"}), "Sorry"), [true]);
        assert_eq!(run(json!({"regex": "(?i)^it is \\w+"}), "It is Paris"), [true]);
        assert_eq!(run(json!({"json": true}), "{\"a\": 1}"), [true]);
        assert_eq!(run(json!({"json": true}), "Here:\n```json\n{\"a\": 1}\n```\n"), [true]);
        assert_eq!(run(json!({"json": true}), "nope"), [false]);
        let schema =
            json!({"json_schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}});
        assert_eq!(run(schema.clone(), "{\"a\": 1}"), [true]);
        let bad = Expect::compile(&schema).unwrap().run("{\"a\": \"x\"}");
        assert!(!bad[0].pass && bad[0].detail.as_deref().is_some_and(|d| d.contains("/a")), "{bad:?}");
        // Either spelling is reported under the one name the reports give it.
        assert_eq!(bad[0].kind, "schema");
        assert_eq!(run(json!(["x", {"regex": "y$"}]), "xy"), [true, true]);
        // `schema` checks the same way, and is the one that is sent.
        let sent = Expect::compile(&json!(["x", {"schema": {"type": "object"}}])).unwrap();
        assert_eq!(sent.send, Some(json!({"type": "object"})));
        assert_eq!(sent.run("{}").iter().map(|r| r.pass).collect::<Vec<_>>(), [false, true]);
        assert_eq!(Expect::compile(&schema).unwrap().send, None);
    }

    #[test]
    fn mistakes_are_errors_up_front() {
        assert!(Expect::compile(&json!({"regex": "("})).is_err());
        assert!(Expect::compile(&json!({"containz": "a"})).is_err());
        assert!(Expect::compile(&json!({"json_schema": {"type": 12}})).is_err());
        assert!(Expect::compile(&json!(3)).is_err());
        assert!(Expect::compile(&json!([])).is_err());
    }
}
