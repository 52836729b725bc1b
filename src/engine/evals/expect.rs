//! A prompt's `expect`: checks on the answer's text. A string is "contains"; an object may
//! hold `contains` (a string or a list, all must appear), `not_contains`, `regex`, `json: true`
//! (the answer is JSON), `json_schema` (the answer is JSON valid against the schema), `schema`
//! (the same check, and the schema is also sent as the structured-output format: a prompt line's
//! `"schema"` and `--schema` become this); a list holds several such checks. Every check must pass. The JSON of the answer is its whole text,
//! else the first fenced code block (models like to fence JSON).
//!
//! Checks beyond the text: `max_cost` (dollars) and `max_latency_ms` (the cell's whole time)
//! take the cell's figures ([`Facts`]); `{"judge": "rubric", "model": "…", "threshold": 0.7}`
//! is graded by a judge model, which the runner calls (see `judge.rs` for its prompt and answer).

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
    MaxCost(f64),
    MaxLatencyMs(u64),
    /// Graded by a judge model: not run here (see [`Expect::judges`]).
    Judge(Box<JudgeSpec>),
    /// The judge picks the best of the prompt's answers across the models: run once every
    /// model has answered (see [`Expect::select_best`]).
    SelectBest(Box<JudgeSpec>),
}

/// A `judge` check (or `select_best`, whose criterion is the rubric): the rubric, the judge model (`None`: the run's first model), the score it
/// must reach, and a prompt file replacing the built-in one.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeSpec {
    pub rubric: String,
    pub model: Option<String>,
    pub threshold: f64,
    pub prompt: Option<String>,
}

/// What a cell's figures say, for the checks that are not about the text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Facts {
    /// Dollars, when the model has a price.
    pub cost: Option<f64>,
    pub latency_ms: Option<u64>,
}

impl PartialEq for Check {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Contains(a), Self::Contains(b)) | (Self::NotContains(a), Self::NotContains(b)) => a == b,
            (Self::Regex(a), Self::Regex(b)) => a.as_str() == b.as_str(),
            (Self::Json, Self::Json) => true,
            (Self::Schema(a), Self::Schema(b)) => a == b,
            (Self::MaxCost(a), Self::MaxCost(b)) => a == b,
            (Self::MaxLatencyMs(a), Self::MaxLatencyMs(b)) => a == b,
            (Self::Judge(a), Self::Judge(b)) | (Self::SelectBest(a), Self::SelectBest(b)) => a == b,
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
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CheckResult {
    pub kind: String,
    pub pass: bool,
    /// What failed, for the report ("missing `Paris`", the schema error…); a judge's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A judge's score, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// A judge's own call: its model, tokens and cost (counted apart from the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Value>,
}

impl CheckResult {
    fn new(kind: &str, pass: bool, detail: Option<String>) -> Self {
        Self { kind: kind.to_owned(), pass, detail, score: None, judge: None }
    }
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

    /// Runs every check on `answer` but the judges.
    #[must_use]
    pub fn run(&self, answer: &str) -> Vec<CheckResult> {
        self.run_with(answer, Facts::default())
    }

    /// Runs every check on `answer` and the cell's `facts` but the judges (the runner calls
    /// them and adds their results).
    #[must_use]
    pub fn run_with(&self, answer: &str, facts: Facts) -> Vec<CheckResult> {
        self.checks.iter().filter_map(|c| c.run(answer, facts)).collect()
    }

    /// The `select_best` check, if any.
    #[must_use]
    pub fn select_best(&self) -> Option<&JudgeSpec> {
        self.checks.iter().find_map(|c| match c {
            Check::SelectBest(j) => Some(j.as_ref()),
            _ => None,
        })
    }

    /// Every check that calls a judge model (`judge` and `select_best`).
    pub fn judged(&self) -> impl Iterator<Item = &JudgeSpec> {
        self.checks.iter().filter_map(|c| match c {
            Check::Judge(j) | Check::SelectBest(j) => Some(j.as_ref()),
            _ => None,
        })
    }

    /// The judge checks, in order.
    pub fn judges(&self) -> impl Iterator<Item = &JudgeSpec> {
        self.checks.iter().filter_map(|c| match c {
            Check::Judge(j) => Some(j.as_ref()),
            _ => None,
        })
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
        Value::Object(o) if o.contains_key("judge") => out.push(Check::Judge(Box::new(judge(o, "judge")?))),
        Value::Object(o) if o.contains_key("select_best") => {
            out.push(Check::SelectBest(Box::new(judge(o, "select_best")?)));
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
                    "max_cost" => match x.as_f64().filter(|c| *c >= 0.0) {
                        Some(c) => out.push(Check::MaxCost(c)),
                        None => return Err("`max_cost` takes dollars, a number of 0 or more".into()),
                    },
                    "max_latency_ms" => match x.as_u64() {
                        Some(ms) => out.push(Check::MaxLatencyMs(ms)),
                        None => return Err("`max_latency_ms` takes milliseconds, a whole number".into()),
                    },
                    _ => {
                        return Err(format!(
                            "unknown check `{k}` (known: contains, not_contains, regex, json, json_schema, schema, \
                             max_cost, max_latency_ms, judge)"
                        ));
                    }
                }
            }
        }
        _ => return Err("expect takes a string, an object of checks, or a list of them".into()),
    }
    Ok(())
}

/// A `judge` object: `judge` (the rubric), `model`, `threshold` (0 to 1, default 0.5), `prompt`.
fn judge(o: &serde_json::Map<String, Value>, kind: &str) -> Result<JudgeSpec, String> {
    let keys: &[&str] =
        if kind == "judge" { &["judge", "model", "threshold", "prompt"] } else { &[kind, "model", "prompt"] };
    if let Some(k) = o.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(format!("`{kind}` takes {}, not `{k}`", keys.join(", ")));
    }
    let text = |k: &str| match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(format!("the judge's `{k}` must be a non-empty string")),
    };
    let rubric =
        text(kind)?.ok_or_else(|| format!("`{kind}` takes the rubric (or criterion) answers are graded by"))?;
    let threshold = match o.get("threshold") {
        None => 0.5,
        Some(v) => v.as_f64().filter(|t| (0.0..=1.0).contains(t)).ok_or("`threshold` is a score from 0 to 1")?,
    };
    Ok(JudgeSpec { rubric, model: text("model")?, threshold, prompt: text("prompt")? })
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
    fn run(&self, answer: &str, facts: Facts) -> Option<CheckResult> {
        let (kind, pass, detail) = match self {
            Self::Judge(_) | Self::SelectBest(_) => return None,
            Self::MaxCost(max) => match facts.cost {
                Some(c) => ("max_cost", c <= *max, (c > *max).then(|| format!("cost ${c:.6} > ${max}"))),
                None => ("max_cost", false, Some("no price is known for this model".to_owned())),
            },
            Self::MaxLatencyMs(max) => match facts.latency_ms {
                Some(ms) => ("max_latency_ms", ms <= *max, (ms > *max).then(|| format!("{ms} ms > {max} ms"))),
                None => ("max_latency_ms", false, Some("no duration was measured".to_owned())),
            },
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
        Some(CheckResult::new(kind, pass, detail))
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
    fn cost_latency_and_judge_checks() {
        let e = Expect::compile(&json!({"max_cost": 0.01, "max_latency_ms": 500})).unwrap();
        let facts = Facts { cost: Some(0.02), latency_ms: Some(400) };
        let r = e.run_with("x", facts);
        assert_eq!((r[0].pass, r[0].detail.as_deref()), (false, Some("cost $0.020000 > $0.01")));
        assert!(r[1].pass);
        assert_eq!(e.run("x")[0].detail.as_deref(), Some("no price is known for this model"));
        let e =
            Expect::compile(&json!(["Paris", {"judge": "names the capital", "model": "m", "threshold": 0.7}])).unwrap();
        assert_eq!(e.run("Paris").len(), 1, "the judge is not run here");
        let j: Vec<&JudgeSpec> = e.judges().collect();
        assert_eq!(
            (j[0].rubric.as_str(), j[0].model.as_deref(), j[0].threshold),
            ("names the capital", Some("m"), 0.7)
        );
        assert_eq!(Expect::compile(&json!({"judge": "r"})).unwrap().judges().next().unwrap().threshold, 0.5);
        assert!(Expect::compile(&json!({"judge": "r", "threshold": 7})).is_err());
        assert!(Expect::compile(&json!({"judge": "r", "contains": "x"})).unwrap_err().contains("not `contains`"));
        let e = Expect::compile(&json!([{"select_best": "the clearest", "model": "m"}, {"judge": "r"}])).unwrap();
        assert_eq!(e.select_best().unwrap().rubric, "the clearest");
        assert_eq!((e.judges().count(), e.judged().count(), e.run("x").len()), (1, 2, 0));
        assert!(Expect::compile(&json!({"select_best": "c", "threshold": 0.5})).is_err());
        assert!(Expect::compile(&json!({"judge": ""})).is_err());
        assert!(Expect::compile(&json!({"max_cost": -1})).is_err());
        assert!(Expect::compile(&json!({"max_latency_ms": 1.5})).is_err());
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
