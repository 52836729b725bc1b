//! A promptfoo config (`promptfooconfig.yaml`) made into a palaver prompt set and its models,
//! so `compare --promptfoo` runs it through the same runner, store and reports as `--prompts`.
//! Each prompt × test becomes one prompt of the set (its template rendered with the test's
//! vars, as Nunjucks would), each provider one model. What palaver cannot run as promptfoo
//! would (an assert type it has no check for, a test option that changes the verdict) is
//! named in `unsupported`, with its test, for the caller to refuse before anything is sent.
//!
//! Files the config names (`file://…`) are read through `Files`, relative to its folder.

pub mod asserts;
mod cases;
pub mod providers;

use super::prompts::PromptItem;
pub use providers::Provider;
use serde_json::{Map, Value};

/// Reads a file the config names, relative to its folder: `None` when there is none.
pub type Files<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// A config made ready to run.
#[derive(Debug, Clone)]
pub struct Translation {
    pub items: Vec<PromptItem>,
    /// The models of the run, one per provider.
    pub columns: Vec<Provider>,
    /// The grading providers that are not columns (`defaultTest.options.provider`…).
    pub graders: Vec<Provider>,
    /// What cannot run as promptfoo runs it, each with its test: `test 3 ("desc"): assert `javascript``.
    pub unsupported: Vec<String>,
    /// Settings left out that do not change a verdict (a provider's unknown config key).
    pub notes: Vec<String>,
}

const KEYS: &[&str] = &[
    "description",
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "outputPath",
    "evaluateOptions",
    "sharing",
    "tags",
    "env",
    "metadata",
    "writeLatestResults",
];

/// Reads `name` through `files`.
///
/// # Errors
/// No such file, or one that cannot be read.
pub fn read(files: Files<'_>, name: &str) -> Result<String, String> {
    files(name)?.ok_or_else(|| format!("file://{name}: there is no such file beside the config"))
}

/// YAML (JSON is YAML too) as a JSON value.
///
/// # Errors
/// The parser's message, with its line.
pub fn yaml(text: &str) -> Result<Value, String> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Translates the config `text`.
///
/// # Errors
/// A config that is not one (no prompts, no providers, a file it names that cannot be read, a
/// provider palaver cannot call); each names where.
pub fn translate(text: &str, files: Files<'_>) -> Result<Translation, String> {
    let config = yaml(text).map_err(|e| format!("not YAML: {e}"))?;
    let Value::Object(config) = config else { return Err("a promptfoo config is a YAML mapping".into()) };
    let mut notes: Vec<String> = config
        .keys()
        .filter(|k| !KEYS.contains(&k.as_str()))
        .map(|k| format!("`{k}` is not used by palaver"))
        .collect();
    if config.get("evaluateOptions").and_then(|o| o.get("repeat")).and_then(Value::as_u64).is_some_and(|r| r > 1) {
        notes.push("evaluateOptions.repeat is not used (palaver runs each cell once)".into());
    }
    let prompts = prompts(config.get("prompts").ok_or("the config has no `prompts`")?, files)?;
    let columns = providers::all(config.get("providers").ok_or("the config has no `providers`")?, &mut notes)?;
    let mut graders: Vec<Provider> = Vec::new();
    let default = match config.get("defaultTest") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::String(s)) => match yaml(&read(files, s.strip_prefix("file://").unwrap_or(s))?)? {
            Value::Object(o) => o,
            _ => return Err("defaultTest: the file holds no mapping".into()),
        },
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err("`defaultTest` must be a mapping or a file://".into()),
    };
    let tests = cases::load(config.get("tests"), files)?;
    let mut items = Vec::new();
    let mut unsupported = Vec::new();
    for (n, test) in tests.iter().enumerate() {
        let test = cases::merged(&default, test);
        let at = cases::name(&test, n + 1);
        let grader = match cases::grader(&test) {
            Some(p) => {
                let made = providers::one(p, &mut notes).map_err(|e| format!("{at}: the grading provider {e}"))?;
                let spec = grader_spec(made, &columns, &mut graders);
                Some(spec)
            }
            None => None,
        };
        unsupported.extend(cases::refused(&test).into_iter().map(|what| format!("{at}: {what}")));
        let mut named = false;
        for vars in cases::vars(&test, files).map_err(|e| format!("{at}: {e}"))? {
            for (p, prompt) in prompts.iter().enumerate() {
                let id = cases::id(&test, n + 1, prompts.len(), p, &prompt.label, &items);
                let cx = asserts::Context { vars: &vars, files, grader: grader.as_deref() };
                let (expect, refused) = cases::expect(&test, &cx).map_err(|e| format!("{at}: {e}"))?;
                if !named {
                    unsupported.extend(refused.into_iter().map(|what| format!("{at}: {what}")));
                    named = true;
                }
                let (system, text) = prompt.render(&test, &vars).map_err(|e| format!("{at}: {e}"))?;
                items.push(PromptItem {
                    line: n + 1,
                    id,
                    prompt: text,
                    system,
                    attach: Vec::new(),
                    expect_raw: expect,
                    expect: None,
                    vars: Some(Value::Object(vars.clone())),
                    threshold: None,
                    conversation: None,
                });
            }
        }
    }
    if items.is_empty() {
        return Err("the config has no tests".into());
    }
    Ok(Translation { items, columns, graders, unsupported, notes })
}

/// The `-m` spec of a grading provider: a column's when it is one, else its own (added once).
fn grader_spec(made: Provider, columns: &[Provider], graders: &mut Vec<Provider>) -> String {
    let same = |p: &&Provider| p.label == made.label && p.model == made.model && p.base_url == made.base_url;
    if let Some(p) = columns.iter().find(same).or_else(|| graders.iter().find(same)) {
        return p.spec();
    }
    let mut made = made;
    let taken: Vec<String> = columns.iter().chain(graders.iter()).map(|p| p.name.clone()).collect();
    let base = format!("grader-{}", made.name);
    made.name = (1..)
        .map(|i| if i == 1 { base.clone() } else { format!("{base}-{i}") })
        .find(|n| !taken.contains(n))
        .unwrap_or(base);
    let spec = made.spec();
    graders.push(made);
    spec
}

/// One prompt of the config: its template and the label promptfoo shows.
#[derive(Debug, Clone)]
struct Prompt {
    label: String,
    raw: String,
}

impl Prompt {
    /// The prompt for a test: its prefix and suffix added, rendered with `vars`; a chat
    /// prompt (a JSON list of messages) gives its system message apart.
    fn render(&self, test: &Map<String, Value>, vars: &Map<String, Value>) -> Result<(Option<String>, String), String> {
        let option = |k: &str| test.get("options").and_then(|o| o.get(k)).and_then(Value::as_str).unwrap_or_default();
        let raw = format!("{}{}{}", option("prefix"), self.raw, option("suffix"));
        // A JSON prompt has the strings inside it rendered, so a value's quotes keep it JSON.
        let text = match serde_json::from_str::<Value>(&raw) {
            Ok(json @ (Value::Array(_) | Value::Object(_))) => asserts::render(&json, vars).map(|v| v.to_string()),
            _ => super::jinja::render(&raw, vars),
        };
        let text = text.map_err(|e| format!("prompt {}: {e}", self.label))?;
        chat(&text).map_or(Ok((None, text.clone())), |r| r.map_err(|e| format!("prompt {}: {e}", self.label)))
    }
}

/// A rendered prompt that is a JSON list of chat messages: (system, the user's message).
fn chat(text: &str) -> Option<Result<(Option<String>, String), String>> {
    let trimmed = text.trim();
    if !trimmed.starts_with('[') {
        return None;
    }
    let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(trimmed) else { return None };
    let role = |m: &Value, r: &str| m.get("role").and_then(Value::as_str) == Some(r);
    if messages.is_empty() || !messages.iter().all(|m| m.get("role").is_some()) {
        return None;
    }
    let content = |m: &Value| m.get("content").and_then(Value::as_str).map(str::to_owned);
    let system: Vec<String> = messages.iter().filter(|m| role(m, "system")).filter_map(content).collect();
    let user: Vec<&Value> = messages.iter().filter(|m| !role(m, "system")).collect();
    Some(match user.as_slice() {
        [one] if role(one, "user") => match content(one) {
            Some(text) => Ok(((!system.is_empty()).then(|| system.join("\n\n")), text)),
            None => Err("a chat message whose content is not text".into()),
        },
        _ => Err("a chat prompt of several turns (palaver runs a system and one user message)".into()),
    })
}

/// The config's `prompts`: inline strings, `file://` files (several prompts split by `---`
/// lines in a text file; a JSON or YAML file of chat messages), or `{raw|id, label}` objects.
fn prompts(v: &Value, files: Files<'_>) -> Result<Vec<Prompt>, String> {
    let list = match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let (spec, label) = match p {
            Value::String(s) => (s.clone(), None),
            Value::Object(o) => {
                let spec = o.get("raw").or_else(|| o.get("id")).and_then(Value::as_str);
                let spec = spec.ok_or("a prompt object needs `raw` or `id`")?;
                (spec.to_owned(), o.get("label").and_then(Value::as_str).map(str::to_owned))
            }
            _ => return Err("`prompts` holds strings or objects with `raw` or `id`".into()),
        };
        out.extend(prompt_of(&spec, label, i + 1, files)?);
    }
    if out.is_empty() {
        return Err("`prompts` is empty".into());
    }
    Ok(out)
}

/// Prompt `n` of the list; an inline one without a label is called `prompt N`.
fn prompt_of(spec: &str, label: Option<String>, n: usize, files: Files<'_>) -> Result<Vec<Prompt>, String> {
    let Some(name) = spec.strip_prefix("file://") else {
        return Ok(vec![Prompt { label: label.unwrap_or_else(|| format!("prompt {n}")), raw: spec.to_owned() }]);
    };
    let lower = name.to_ascii_lowercase();
    if [".js", ".cjs", ".mjs", ".ts", ".py", ".jinja", ".j2"].iter().any(|e| lower.ends_with(e)) || name.contains('*') {
        return Err(format!("prompt file://{name}: a prompt made by a program or a glob is not run by palaver"));
    }
    let text = read(files, name)?;
    let shown = label.unwrap_or_else(|| format!("file://{name}"));
    if lower.ends_with(".json") {
        return Ok(vec![Prompt { label: shown, raw: text }]);
    }
    if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        let messages = yaml(&text).map_err(|e| format!("prompt file://{name}: {e}"))?;
        return Ok(vec![Prompt { label: shown, raw: messages.to_string() }]);
    }
    // promptfoo splits a text file into prompts at lines of `---`.
    let parts: Vec<String> = split_prompts(&text);
    let many = parts.len() > 1;
    Ok(parts
        .into_iter()
        .enumerate()
        .map(|(i, raw)| Prompt { label: if many { format!("{shown}#{}", i + 1) } else { shown.clone() }, raw })
        .collect())
}

fn split_prompts(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            out.push(String::new());
        } else if let Some(last) = out.last_mut() {
            last.push_str(line);
        }
    }
    out.into_iter().map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect()
}

#[cfg(test)]
mod tests;
