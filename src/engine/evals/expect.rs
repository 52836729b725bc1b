//! A prompt's `expect`: checks on the answer. A string is "contains"; an object holds checks
//! by name; a list holds several such. Every check that weighs something must pass.
//!
//! - **Text:** `contains` (a string or a list, all must appear), `not_contains`, `icontains`
//!   (case-insensitive), `contains_any`, `contains_all`, `icontains_any`, `icontains_all`,
//!   `equals` (the whole answer, without the whitespace around it), `starts_with` (after leading
//!   whitespace), `regex`, `levenshtein` (`{"value": "…", "max": 5}`: at most that many edits
//!   from the whole answer), `words` and `chars` (`{"min": 1, "max": 50}`).
//! - **Shape:** `json` / `is_json: true` (the answer is JSON), `json_schema` (JSON valid against
//!   the schema), `schema` (the same check, and the schema is also sent as the structured-output
//!   format: a prompt line's `"schema"` and `--schema` become this), `finish_reason` (a string
//!   or a list), `is_refusal: true`. The JSON of the answer is its whole text, else the first
//!   fenced code block (models like to fence JSON).
//! - **Figures:** `max_cost` (dollars) and `max_latency_ms` (the cell's whole time) take the
//!   cell's figures ([`Facts`]); `perplexity` (at most this, from the answer's token log
//!   probabilities, which the request then asks for).
//! - **Tools** (`tool_checks`): `tool_called`, `tool_not_called`, `trajectory`, `tool_f1`.
//! - **Scripts:** `{"script": ["python3", "check.py"]}` (or `{"command": [...], "timeout_s":
//!   30}`): the user's program gets the cell as JSON on stdin and prints `{"pass", "score",
//!   "reason"}`; the runner runs it (sandboxed, network closed), and only when the user allowed
//!   a set's scripts.
//! - **Judges:** `{"judge": "rubric", "model": "…", "threshold": 0.7}` is graded by a judge
//!   model, which the runner calls (see `judge.rs` for its prompt and answer); `select_best`
//!   picks the best answer across the models.
//! - **Modifiers**, in the same object, apply to every check in it: `weight` (a number of 0 or
//!   more, 1 by default; a check weighing 0 is reported and decides nothing) and `metric` (a
//!   name reports group the checks under). `{"not": CHECKS}` passes where its checks fail.

use super::text_checks;
use super::tool_checks::{self, ToolTest};
use serde::Serialize;
use serde_json::Value;

/// Every check name `expect` knows, for the message naming an unknown one.
pub const KNOWN: &[&str] = &[
    "contains",
    "not_contains",
    "icontains",
    "contains_any",
    "contains_all",
    "icontains_any",
    "icontains_all",
    "equals",
    "starts_with",
    "regex",
    "levenshtein",
    "words",
    "chars",
    "json",
    "is_json",
    "json_schema",
    "schema",
    "finish_reason",
    "is_refusal",
    "perplexity",
    "tool_called",
    "tool_not_called",
    "trajectory",
    "tool_f1",
    "max_cost",
    "max_latency_ms",
    "script",
    "judge",
    "select_best",
    "not",
    "weight",
    "metric",
];

/// One compiled check: what it tests, and how it counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub test: Test,
    /// Passes where the test fails (`not`).
    pub negate: bool,
    /// How much it counts; 0: reported, deciding nothing.
    pub weight: f64,
    /// The name reports group it under.
    pub metric: Option<String>,
}

/// What a check tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    Contains(String),
    NotContains(String),
    /// Case-insensitive; the needle is lower-cased once.
    IContains(String),
    /// Any of them appears (`fold`: case-insensitive, needles lower-cased).
    ContainsAny {
        any: Vec<String>,
        fold: bool,
    },
    ContainsAll {
        all: Vec<String>,
        fold: bool,
    },
    Equals(String),
    StartsWith(String),
    Regex(Pattern),
    Levenshtein {
        value: String,
        max: usize,
    },
    Words(Bounds),
    Chars(Bounds),
    Json,
    Schema(Box<Value>),
    FinishReason(Vec<String>),
    Refusal,
    /// At most this perplexity over the answer's tokens.
    Perplexity(f64),
    Tool(Box<ToolTest>),
    MaxCost(f64),
    MaxLatencyMs(u64),
    /// A user's program: not run here (see [`Expect::scripts`]).
    Script(Box<ScriptSpec>),
    /// Graded by a judge model: not run here (see [`Expect::judges`]).
    Judge(Box<JudgeSpec>),
    /// The judge picks the best of the prompt's answers across the models: run once every
    /// model has answered (see [`Expect::select_best`]).
    SelectBest(Box<JudgeSpec>),
}

/// A `script` check: the program and its arguments, how long it may take, and the folder it
/// runs in (the prompt set's, set when the set is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSpec {
    pub command: Vec<String>,
    pub timeout_ms: u64,
    pub dir: Option<std::path::PathBuf>,
}

/// A count's bounds, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min: Option<usize>,
    pub max: Option<usize>,
}

/// A `judge` check (or `select_best`, whose criterion is the rubric): the rubric, the judge model (`None`: the run's first model), the score it
/// must reach, and a prompt file replacing the built-in one.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeSpec {
    pub rubric: String,
    pub model: Option<String>,
    /// The share of the scale (0 to 1) a score must reach.
    pub threshold: f64,
    pub prompt: Option<String>,
    /// The scale the judge is told to score on, and reads its score on (`None`: 0 to 1, and
    /// scores the judge puts on 1–10 or 1–100 read leniently).
    pub scale: Option<Scale>,
}

/// A judge's declared scale, both ends included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub low: f64,
    pub high: f64,
}

impl Scale {
    /// `"0-1"`, `"1-5"`, `"1-10"`, `"0-100"`…: two numbers, the first below the second.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        let (low, high) = s.split_once('-')?;
        let (low, high): (f64, f64) = (low.trim().parse().ok()?, high.trim().parse().ok()?);
        (low.is_finite() && high.is_finite() && low >= 0.0 && low < high).then_some(Self { low, high })
    }

    /// A score on this scale as a share of it (`None` when it lies outside).
    #[must_use]
    pub fn share(self, raw: f64) -> Option<f64> {
        (self.low..=self.high).contains(&raw).then(|| (raw - self.low) / (self.high - self.low))
    }

    /// A share of the scale as a score on it.
    #[must_use]
    pub fn raw(self, share: f64) -> f64 {
        self.low + share * (self.high - self.low)
    }
}

/// What a cell says beyond its text, for the checks that are not about the text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Facts<'a> {
    /// Dollars, when the model has a price.
    pub cost: Option<f64>,
    pub latency_ms: Option<u64>,
    pub finish_reason: Option<&'a str>,
    /// The API's own refusal field held text.
    pub refusal: bool,
    /// Over the answer's tokens, when log probabilities came back.
    pub perplexity: Option<f64>,
    /// The cell's stored tool calls (`[{name, arguments, …}]`).
    pub tool_calls: Option<&'a Value>,
}

/// A compiled `regex` check, equal to another of the same pattern.
#[derive(Debug, Clone)]
pub struct Pattern(pub regex::Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
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
    /// How much the check counts, when not 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

fn one() -> f64 {
    1.0
}

#[allow(clippy::trivially_copy_pass_by_ref, clippy::float_cmp)]
fn is_one(w: &f64) -> bool {
    *w == 1.0
}

impl CheckResult {
    #[must_use]
    pub fn new(kind: &str, pass: bool, detail: Option<String>) -> Self {
        Self { kind: kind.to_owned(), pass, detail, score: None, judge: None, weight: 1.0, metric: None }
    }
}

/// Whether a cell passes on its stored checks (`[{kind, pass, weight?}, …]`): it has one at
/// least, and every check that weighs something passed. The one rule every report uses.
#[must_use]
pub fn cell_passes(checks: &[Value]) -> bool {
    let weighs = |r: &&Value| r.get("weight").and_then(Value::as_f64).is_none_or(|w| w > 0.0);
    !checks.is_empty() && checks.iter().filter(weighs).all(|r| r.get("pass").and_then(Value::as_bool) == Some(true))
}

impl Expect {
    /// Compiles an `expect` value.
    ///
    /// # Errors
    /// An unknown check, a value of the wrong type, a regex or schema that does not compile.
    pub fn compile(v: &Value) -> Result<Self, String> {
        let mut checks = Vec::new();
        let mut send = None;
        add(v, &Modifiers::default(), &mut checks, &mut send)?;
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
    pub fn run_with(&self, answer: &str, facts: Facts<'_>) -> Vec<CheckResult> {
        self.checks.iter().filter_map(|c| c.run(answer, facts)).collect()
    }

    /// The `select_best` check, if any.
    #[must_use]
    pub fn select_best(&self) -> Option<&JudgeSpec> {
        self.checks.iter().find_map(|c| match &c.test {
            Test::SelectBest(j) => Some(j.as_ref()),
            _ => None,
        })
    }

    /// Every check that calls a judge model (`judge` and `select_best`).
    pub fn judged(&self) -> impl Iterator<Item = &JudgeSpec> {
        self.checks.iter().filter_map(|c| match &c.test {
            Test::Judge(j) | Test::SelectBest(j) => Some(j.as_ref()),
            _ => None,
        })
    }

    /// The judge checks, in order, each with its check (for its modifiers).
    pub fn judge_checks(&self) -> impl Iterator<Item = (&JudgeSpec, &Check)> {
        self.checks.iter().filter_map(|c| match &c.test {
            Test::Judge(j) => Some((j.as_ref(), c)),
            _ => None,
        })
    }

    /// The judge checks, in order.
    pub fn judges(&self) -> impl Iterator<Item = &JudgeSpec> {
        self.checks.iter().filter_map(|c| match &c.test {
            Test::Judge(j) => Some(j.as_ref()),
            _ => None,
        })
    }

    /// The `script` checks, in order.
    pub fn scripts(&self) -> impl Iterator<Item = (&ScriptSpec, &Check)> {
        self.checks.iter().filter_map(|c| match &c.test {
            Test::Script(s) => Some((s.as_ref(), c)),
            _ => None,
        })
    }

    /// Whether a check reads token log probabilities (the request then asks for them).
    #[must_use]
    pub fn wants_logprobs(&self) -> bool {
        self.has(|t| matches!(t, Test::Perplexity(_)))
    }

    /// Whether any check is of this kind.
    pub fn has(&self, kind: impl Fn(&Test) -> bool) -> bool {
        self.checks.iter().any(|c| kind(&c.test))
    }
}

/// How the checks of one object count: what `not`, `weight` and `metric` around them say.
#[derive(Debug, Clone, Default)]
struct Modifiers {
    negate: bool,
    weight: Option<f64>,
    metric: Option<String>,
}

impl Modifiers {
    fn check(&self, test: Test) -> Check {
        Check { test, negate: self.negate, weight: self.weight.unwrap_or(1.0), metric: self.metric.clone() }
    }

    /// These modifiers with an object's own `weight` and `metric`.
    fn of(&self, o: &serde_json::Map<String, Value>) -> Result<Self, String> {
        let mut m = self.clone();
        if let Some(w) = o.get("weight") {
            m.weight = Some(w.as_f64().filter(|w| *w >= 0.0).ok_or("`weight` takes a number of 0 or more")?);
        }
        if let Some(name) = o.get("metric") {
            let name = name.as_str().filter(|n| !n.trim().is_empty()).ok_or("`metric` takes a name")?;
            m.metric = Some(name.to_owned());
        }
        Ok(m)
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

fn add(v: &Value, m: &Modifiers, out: &mut Vec<Check>, send: &mut Option<Value>) -> Result<(), String> {
    match v {
        Value::String(s) => out.push(m.check(Test::Contains(s.clone()))),
        Value::Array(a) => {
            for x in a {
                add(x, m, out, send)?;
            }
        }
        Value::Object(o) if o.contains_key("judge") => {
            out.push(m.of(o)?.check(Test::Judge(Box::new(judge(o, "judge")?))))
        }
        Value::Object(o) if o.contains_key("select_best") => {
            out.push(m.of(o)?.check(Test::SelectBest(Box::new(judge(o, "select_best")?))));
        }
        Value::Object(o) => {
            let m = m.of(o)?;
            for (k, x) in o {
                match k.as_str() {
                    "weight" | "metric" => {}
                    "not" => add(x, &Modifiers { negate: !m.negate, ..m.clone() }, out, send)?,
                    _ => out.extend(tests(k, x, send)?.into_iter().map(|t| m.check(t))),
                }
            }
        }
        _ => return Err("expect takes a string, an object of checks, or a list of them".into()),
    }
    Ok(())
}

/// The tests a check named `k` with value `x` makes.
fn tests(k: &str, x: &Value, send: &mut Option<Value>) -> Result<Vec<Test>, String> {
    let lower = |v: Vec<String>| v.into_iter().map(|s| s.to_lowercase()).collect::<Vec<_>>();
    let one = |t: Test| Ok(vec![t]);
    match k {
        "contains" => Ok(strings(x, k)?.into_iter().map(Test::Contains).collect()),
        "not_contains" => Ok(strings(x, k)?.into_iter().map(Test::NotContains).collect()),
        "icontains" => Ok(lower(strings(x, k)?).into_iter().map(Test::IContains).collect()),
        "contains_any" => one(Test::ContainsAny { any: strings(x, k)?, fold: false }),
        "icontains_any" => one(Test::ContainsAny { any: lower(strings(x, k)?), fold: true }),
        "contains_all" => one(Test::ContainsAll { all: strings(x, k)?, fold: false }),
        "icontains_all" => one(Test::ContainsAll { all: lower(strings(x, k)?), fold: true }),
        "equals" => one(Test::Equals(x.as_str().ok_or("`equals` takes a string")?.to_owned())),
        "starts_with" => one(Test::StartsWith(x.as_str().ok_or("`starts_with` takes a string")?.to_owned())),
        "regex" => strings(x, k)?
            .into_iter()
            .map(|r| {
                let re = regex::RegexBuilder::new(&r).size_limit(1 << 20).build();
                re.map(|re| Test::Regex(Pattern(re))).map_err(|e| format!("regex `{r}`: {e}"))
            })
            .collect(),
        "levenshtein" => one(levenshtein(x)?),
        "words" => one(Test::Words(bounds(x, k)?)),
        "chars" => one(Test::Chars(bounds(x, k)?)),
        "json" | "is_json" => match x {
            Value::Bool(true) => one(Test::Json),
            Value::Bool(false) => Ok(Vec::new()),
            _ => Err(format!("`{k}` takes true")),
        },
        "json_schema" | "schema" => {
            jsonschema::validator_for(x).map_err(|e| format!("{k} does not compile: {e}"))?;
            if k == "schema" {
                *send = Some(x.clone());
            }
            one(Test::Schema(Box::new(x.clone())))
        }
        "finish_reason" => one(Test::FinishReason(strings(x, k)?)),
        "script" => one(Test::Script(Box::new(script(x)?))),
        "perplexity" => match x.as_f64().filter(|p| *p >= 1.0) {
            Some(p) => one(Test::Perplexity(p)),
            None => Err("`perplexity` takes the most it may be, a number of 1 or more".into()),
        },
        "is_refusal" => match x {
            Value::Bool(true) => one(Test::Refusal),
            _ => Err("`is_refusal` takes true (and `{\"not\": {\"is_refusal\": true}}` says the opposite)".into()),
        },
        "max_cost" => match x.as_f64().filter(|c| *c >= 0.0) {
            Some(c) => one(Test::MaxCost(c)),
            None => Err("`max_cost` takes dollars, a number of 0 or more".into()),
        },
        "max_latency_ms" => match x.as_u64() {
            Some(ms) => one(Test::MaxLatencyMs(ms)),
            None => Err("`max_latency_ms` takes milliseconds, a whole number".into()),
        },
        _ => match ToolTest::compile(k, x) {
            Some(test) => one(Test::Tool(Box::new(test?))),
            None => Err(format!("unknown check `{k}` (known: {})", KNOWN.join(", "))),
        },
    }
}

/// `{"value": "…", "max": N}` (`max` 5 by default).
fn levenshtein(x: &Value) -> Result<Test, String> {
    const USAGE: &str = "`levenshtein` takes {\"value\": \"the expected answer\", \"max\": edits}";
    let o = x.as_object().ok_or(USAGE)?;
    if o.keys().any(|k| k != "value" && k != "max") {
        return Err(USAGE.into());
    }
    let value = o.get("value").and_then(Value::as_str).ok_or(USAGE)?.to_owned();
    let max = match o.get("max") {
        None => 5,
        Some(m) => m.as_u64().and_then(|m| usize::try_from(m).ok()).ok_or(USAGE)?,
    };
    Ok(Test::Levenshtein { value, max })
}

/// `["program", "arg", …]`, or `{"command": [...], "timeout_s": N}` (30 s by default); `dir`
/// is the folder the runner set (the prompt set's).
fn script(x: &Value) -> Result<ScriptSpec, String> {
    const USAGE: &str =
        "`script` takes a command as a list ([\"python3\", \"check.py\"]), or {\"command\": [...], \"timeout_s\": N}";
    let (command, timeout, dir) = match x {
        Value::Array(_) => (x, None, None),
        Value::Object(o) if o.keys().all(|k| ["command", "timeout_s", "dir"].contains(&k.as_str())) => {
            (o.get("command").ok_or(USAGE)?, o.get("timeout_s"), o.get("dir").and_then(Value::as_str))
        }
        _ => return Err(USAGE.into()),
    };
    let command = strings(command, "script")?;
    if command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(USAGE.into());
    }
    let timeout_ms = match timeout {
        None => 30_000,
        Some(t) => t.as_f64().filter(|t| *t > 0.0 && *t <= 3600.0).map(|t| (t * 1000.0) as u64).ok_or(USAGE)?,
    };
    Ok(ScriptSpec { command, timeout_ms, dir: dir.map(std::path::PathBuf::from) })
}

/// `{"min": N, "max": N}`, either or both.
fn bounds(x: &Value, k: &str) -> Result<Bounds, String> {
    let usage = || format!("`{k}` takes {{\"min\": N, \"max\": N}} (either or both, whole numbers)");
    let o = x.as_object().ok_or_else(usage)?;
    if o.is_empty() || o.keys().any(|b| b != "min" && b != "max") {
        return Err(usage());
    }
    let get = |b: &str| match o.get(b) {
        None => Ok(None),
        Some(v) => v.as_u64().and_then(|n| usize::try_from(n).ok()).map(Some).ok_or_else(usage),
    };
    Ok(Bounds { min: get("min")?, max: get("max")? })
}

/// A `judge` object: `judge` (the rubric), `model`, `scale` (`"1-10"`…) and its pass mark
/// `pass` on it, or `threshold` (a share of the scale, 0 to 1, default 0.5), `prompt`, and the
/// modifiers `weight` and `metric`.
fn judge(o: &serde_json::Map<String, Value>, kind: &str) -> Result<JudgeSpec, String> {
    let keys: &[&str] = if kind == "judge" {
        &["judge", "model", "threshold", "scale", "pass", "prompt", "weight", "metric"]
    } else {
        &[kind, "model", "prompt", "weight", "metric"]
    };
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
    let scale = match o.get("scale") {
        None => None,
        Some(v) => {
            Some(v.as_str().and_then(Scale::parse).ok_or("`scale` is a range such as \"0-1\", \"1-5\" or \"1-10\"")?)
        }
    };
    let threshold = match (o.get("threshold"), o.get("pass")) {
        (Some(_), Some(_)) => return Err("give the judge `pass` (a mark on its scale) or `threshold`, not both".into()),
        (None, None) => 0.5,
        (Some(v), None) => {
            v.as_f64().filter(|t| (0.0..=1.0).contains(t)).ok_or("`threshold` is a score from 0 to 1")?
        }
        (None, Some(v)) => {
            let on = scale.ok_or("`pass` is a mark on the judge's `scale`: declare the scale too")?;
            v.as_f64()
                .and_then(|p| on.share(p))
                .ok_or_else(|| format!("`pass` is a mark from {} to {}", on.low, on.high))?
        }
    };
    Ok(JudgeSpec { rubric, model: text("model")?, threshold, prompt: text("prompt")?, scale })
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
    fn run(&self, answer: &str, facts: Facts<'_>) -> Option<CheckResult> {
        let (kind, pass, detail, score) = match &self.test {
            Test::Tool(t) => {
                let (pass, detail, score) = t.run(&tool_checks::calls(facts.tool_calls));
                (t.kind(), pass, detail, score)
            }
            test => {
                let (kind, pass, detail) = test.run(answer, facts)?;
                (kind, pass, detail, None)
            }
        };
        Some(self.result(kind, pass, detail, score))
    }

    /// The result of this check from what its test found, with its `not`, weight and metric.
    #[must_use]
    pub fn result(&self, kind: &str, pass: bool, detail: Option<String>, score: Option<f64>) -> CheckResult {
        let mut result = if self.negate {
            let why = format!("must not pass, and passed{}", detail.map(|d| format!(" ({d})")).unwrap_or_default());
            CheckResult::new(&format!("not_{kind}"), !pass, pass.then_some(why))
        } else {
            CheckResult::new(kind, pass, detail)
        };
        result.score = score;
        result.weight = self.weight;
        result.metric.clone_from(&self.metric);
        result
    }

    /// A result the runner made (a judge's grade, a script's verdict) counted as this check is:
    /// its `not`, weight and metric applied.
    #[must_use]
    pub fn counted(&self, found: CheckResult) -> CheckResult {
        let judge = found.judge.clone();
        CheckResult { judge, ..self.result(&found.kind, found.pass, found.detail, found.score) }
    }
}

impl Test {
    /// The check's kind, whether it passed, and what failed (or, for a negated check, what
    /// passed). `None` for the judges, which the runner grades.
    fn run(&self, answer: &str, facts: Facts<'_>) -> Option<(&'static str, bool, Option<String>)> {
        let missing = |pass: bool, s: &str| (!pass).then(|| format!("missing `{}`", clip(s)));
        Some(match self {
            Self::Judge(_) | Self::SelectBest(_) | Self::Tool(_) | Self::Script(_) => return None,
            Self::Perplexity(max) => match facts.perplexity {
                Some(p) => ("perplexity", p <= *max, (p > *max).then(|| format!("perplexity {p:.2} > {max}"))),
                None => ("perplexity", false, Some("no token log probabilities came back".to_owned())),
            },
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
                ("contains", pass, missing(pass, s))
            }
            Self::NotContains(s) => {
                let pass = !answer.contains(s.as_str());
                ("not_contains", pass, (!pass).then(|| format!("has `{}`", clip(s))))
            }
            Self::IContains(s) => {
                let pass = answer.to_lowercase().contains(s.as_str());
                ("icontains", pass, missing(pass, s))
            }
            Self::ContainsAny { any, fold } => {
                let text = if *fold { answer.to_lowercase() } else { answer.to_owned() };
                let pass = any.iter().any(|s| text.contains(s.as_str()));
                let kind = if *fold { "icontains_any" } else { "contains_any" };
                (kind, pass, (!pass).then(|| format!("none of {} appears", any.len())))
            }
            Self::ContainsAll { all, fold } => {
                let text = if *fold { answer.to_lowercase() } else { answer.to_owned() };
                let first = all.iter().find(|s| !text.contains(s.as_str()));
                let kind = if *fold { "icontains_all" } else { "contains_all" };
                (kind, first.is_none(), first.map(|s| format!("missing `{}`", clip(s))))
            }
            Self::Equals(s) => {
                let pass = answer.trim() == s.trim();
                ("equals", pass, (!pass).then(|| format!("is not `{}`", clip(s))))
            }
            Self::StartsWith(s) => {
                let pass = answer.trim_start().starts_with(s.as_str());
                ("starts_with", pass, (!pass).then(|| format!("does not start with `{}`", clip(s))))
            }
            Self::Regex(Pattern(re)) => {
                let pass = re.is_match(answer);
                ("regex", pass, (!pass).then(|| format!("no match for `{}`", clip(re.as_str()))))
            }
            Self::Levenshtein { value, max } => {
                let d = text_checks::levenshtein_within(answer.trim(), value.trim(), *max);
                (
                    "levenshtein",
                    d.is_some(),
                    d.is_none().then(|| format!("more than {max} edits from `{}`", clip(value))),
                )
            }
            Self::Words(b) => count("words", text_checks::words(answer), *b),
            Self::Chars(b) => count("chars", text_checks::chars(answer), *b),
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
            Self::FinishReason(want) => {
                let got = facts.finish_reason.unwrap_or("none");
                let pass = want.iter().any(|w| w == got);
                ("finish_reason", pass, (!pass).then(|| format!("finished with `{got}`, not {}", want.join(" or "))))
            }
            Self::Refusal => {
                let pass = text_checks::is_refusal(answer, facts.refusal);
                ("is_refusal", pass, (!pass).then(|| "the answer is not a refusal".to_owned()))
            }
        })
    }
}

/// A count's check against its bounds.
fn count(kind: &'static str, n: usize, b: Bounds) -> (&'static str, bool, Option<String>) {
    let low = b.min.filter(|&min| n < min).map(|min| format!("{n} {kind}, fewer than {min}"));
    let high = b.max.filter(|&max| n > max).map(|max| format!("{n} {kind}, more than {max}"));
    let detail = low.or(high);
    (kind, detail.is_none(), detail)
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
        let facts = Facts { cost: Some(0.02), latency_ms: Some(400), ..Facts::default() };
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
    fn text_and_shape_checks() {
        assert_eq!(run(json!({"icontains": ["PARIS", "france"]}), "paris, France"), [true, true]);
        assert_eq!(run(json!({"contains_any": ["Lyon", "Paris"]}), "Paris"), [true]);
        assert_eq!(run(json!({"contains_any": ["Lyon", "Nice"]}), "Paris"), [false]);
        assert_eq!(run(json!({"icontains_any": ["PARIS"]}), "paris"), [true]);
        assert_eq!(run(json!({"contains_all": ["a", "b"]}), "ab"), [true]);
        assert_eq!(run(json!({"icontains_all": ["A", "z"]}), "ab"), [false]);
        assert_eq!(run(json!({"equals": "Paris"}), "  Paris\n"), [true]);
        assert_eq!(run(json!({"equals": "Paris"}), "Paris."), [false]);
        assert_eq!(run(json!({"starts_with": "Yes"}), "\nYes, it is."), [true]);
        assert_eq!(run(json!({"levenshtein": {"value": "Paris", "max": 1}}), "Parsi"), [false]);
        assert_eq!(run(json!({"levenshtein": {"value": "Paris", "max": 2}}), "Parsi"), [true]);
        assert_eq!(run(json!({"levenshtein": {"value": "Paris"}}), "Pariis"), [true]);
        assert_eq!(run(json!({"words": {"min": 2, "max": 3}}), "one two three four"), [false]);
        assert_eq!(run(json!({"chars": {"max": 5}}), " héllo "), [true]);
        assert_eq!(run(json!({"is_json": true}), "[1]"), [true]);
        assert_eq!(run(json!({"is_refusal": true}), "I'm sorry, but I can't help with that."), [true]);
        let e = Expect::compile(&json!({"finish_reason": ["stop", "tool_calls"], "is_refusal": true})).unwrap();
        let facts = Facts { finish_reason: Some("length"), refusal: true, ..Facts::default() };
        let r = e.run_with("Sure", facts);
        assert_eq!(
            (r[0].pass, r[0].detail.as_deref()),
            (false, Some("finished with `length`, not stop or tool_calls"))
        );
        assert!(r[1].pass, "the API's own refusal field counts");
    }

    #[test]
    fn perplexity_and_tool_checks_read_the_facts() {
        let e = Expect::compile(&json!({"perplexity": 3, "tool_f1": {"expected": ["a", "b"], "min": 0.5}})).unwrap();
        assert!(e.wants_logprobs());
        let calls = json!([{"name": "a", "arguments": "{}"}]);
        let facts = Facts { perplexity: Some(3.5), tool_calls: Some(&calls), ..Facts::default() };
        let r = e.run_with("x", facts);
        assert_eq!(
            (r[0].kind.as_str(), r[0].pass, r[0].detail.as_deref()),
            ("perplexity", false, Some("perplexity 3.50 > 3"))
        );
        assert_eq!((r[1].kind.as_str(), r[1].pass), ("tool_f1", true));
        assert!((r[1].score.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(e.run("x")[0].detail.as_deref(), Some("no token log probabilities came back"));
        let none = Expect::compile(&json!({"not": {"tool_called": "a"}})).unwrap();
        assert!(!none.run_with("x", facts)[0].pass);
        assert!(!Expect::compile(&json!("x")).unwrap().wants_logprobs());
        assert!(Expect::compile(&json!({"perplexity": 0.5})).is_err());
    }

    #[test]
    fn scripts_are_left_to_the_runner() {
        let e = Expect::compile(
            &json!([{"script": ["python3", "check.py"]}, {"script": {"command": ["sh"], "timeout_s": 2, "dir": "/x"}}]),
        )
        .unwrap();
        let specs: Vec<&ScriptSpec> = e.scripts().map(|(s, _)| s).collect();
        assert_eq!((specs[0].command.len(), specs[0].timeout_ms, specs[0].dir.is_none()), (2, 30_000, true));
        assert_eq!((specs[1].timeout_ms, specs[1].dir.as_deref()), (2000, Some(std::path::Path::new("/x"))));
        assert!(e.run("x").is_empty(), "nothing runs here");
        for bad in [
            json!({"script": "check.py"}),
            json!({"script": []}),
            json!({"script": {"command": ["a"], "timeout_s": 0}}),
        ] {
            assert!(Expect::compile(&bad).is_err(), "{bad}");
        }
        let (_, check) = Expect::compile(&json!({"not": {"script": ["a"]}, "weight": 3}))
            .unwrap()
            .scripts()
            .next()
            .map(|(s, c)| (s.clone(), c.clone()))
            .unwrap();
        let counted = check.counted(CheckResult::new("script", true, Some("fine".into())));
        assert_eq!((counted.kind.as_str(), counted.pass, counted.weight), ("not_script", false, 3.0));
    }

    #[test]
    fn not_weight_and_metric() {
        let e = Expect::compile(&json!([
            {"not": {"contains": "sorry", "is_refusal": true}},
            {"equals": "x", "weight": 0, "metric": "exact"},
            {"not": {"not": "Paris"}, "weight": 2}
        ]))
        .unwrap();
        let r = e.run("Paris");
        let kinds: Vec<&str> = r.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, ["not_contains", "not_is_refusal", "equals", "contains"]);
        assert!(r[0].pass && r[1].pass && !r[2].pass && r[3].pass, "{r:?}");
        assert_eq!((r[2].weight, r[2].metric.as_deref(), r[3].weight), (0.0, Some("exact"), 2.0));
        let failed = e.run("sorry");
        assert_eq!(failed[0].detail.as_deref(), Some("must not pass, and passed"));
        // A check weighing nothing decides nothing; the weights survive the store's JSON.
        let stored: Vec<Value> = r.iter().map(|c| serde_json::to_value(c).unwrap()).collect();
        assert!(cell_passes(&stored));
        assert!(!cell_passes(&[]));
        let back: CheckResult = serde_json::from_value(stored[2].clone()).unwrap();
        assert_eq!(back, r[2]);
        assert!(stored[0].get("weight").is_none(), "weight 1 is not written");
    }

    #[test]
    fn mistakes_are_errors_up_front() {
        let unknown = Expect::compile(&json!({"containz": "a"})).unwrap_err();
        assert!(KNOWN.iter().all(|k| unknown.contains(k)), "{unknown}");
        assert!(unknown.contains("select_best"));
        assert!(Expect::compile(&json!({"levenshtein": "Paris"})).is_err());
        assert!(Expect::compile(&json!({"words": {"least": 2}})).is_err());
        assert!(Expect::compile(&json!({"contains": "a", "weight": -1})).is_err());
        assert!(Expect::compile(&json!({"is_refusal": false})).is_err());
        let j = Expect::compile(&json!({"judge": "r", "scale": "1-10", "pass": 7})).unwrap();
        let spec = j.judges().next().unwrap();
        assert!((spec.threshold - 6.0 / 9.0).abs() < 1e-9 && spec.scale.is_some());
        assert!(Expect::compile(&json!({"judge": "r", "pass": 7})).unwrap_err().contains("declare the scale"));
        assert!(Expect::compile(&json!({"judge": "r", "scale": "1-10", "pass": 11})).is_err());
        assert!(Expect::compile(&json!({"judge": "r", "scale": "1-10", "pass": 7, "threshold": 0.5})).is_err());
        assert!(Expect::compile(&json!({"judge": "r", "scale": "ten"})).is_err());
        assert!(Expect::compile(&json!({"regex": "("})).is_err());
        assert!(Expect::compile(&json!({"containz": "a"})).is_err());
        assert!(Expect::compile(&json!({"json_schema": {"type": 12}})).is_err());
        assert!(Expect::compile(&json!(3)).is_err());
        assert!(Expect::compile(&json!([])).is_err());
    }
}
