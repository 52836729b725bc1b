//! Multi-turn lines of a prompt set: `"turns": [{"prompt", "expect", "tool_outputs"}, …]` is one
//! conversation, each turn's answer checked by its own `expect`; a line's own `expect` (and
//! `schema`) is checked on the last turn. `tool_outputs` (on the line, or on a turn, whose own
//! come first) are recorded results that answer the conversation's tool calls: the tools
//! offered are the line's `tools` (built-in names, or function definitions) and every recorded
//! built-in, and nothing runs for real. A line with `prompt` and `tool_outputs` is a
//! conversation of one turn.
//!
//! A line is kept (and stored, and resumed) as one JSON value: `{"turns": [{"prompt",
//! "expect"?, "tool_outputs"?}], "tool_outputs"?, "tools"?}`, read by [`Conversation::compile`].

use super::expect::Expect;
use crate::tools::recorded::{self, Recorded, Recording};
use crate::tools::{Approval, Registry, ToolSource, ToolSpec};
use serde_json::{Map, Value, json};

const TURN_KEYS: &[&str] = &["prompt", "expect", "tool_outputs"];

/// One turn, compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnCase {
    pub prompt: String,
    pub expect: Option<Expect>,
    /// What answers its tool calls: the turn's recordings, then the line's.
    pub recorded: Recorded,
}

/// A multi-turn line (or a line with recorded tool outputs), compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub turns: Vec<TurnCase>,
    /// The tools offered, answered from recordings; `None`: the run's own tools, run for real.
    pub tools: Option<Vec<ToolSpec>>,
}

/// `a` and `b` as one `expect` (both checked).
fn merge(a: Option<Value>, b: Option<Value>) -> Option<Value> {
    let list = |v: Value| match v {
        Value::Array(a) => a,
        other => vec![other],
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(Value::Array(list(a).into_iter().chain(list(b)).collect())),
        (a, b) => a.or(b),
    }
}

/// The conversation of a line, as kept, when it has `turns`, `tool_outputs` or `tools`;
/// `prompt` and `expect` are the line's own (its `expect` goes to the last turn).
///
/// # Errors
/// Both `prompt` and `turns`, or neither; an empty or malformed `turns`; a turn without prompt.
pub fn read(obj: &Map<String, Value>, prompt: Option<&Value>, expect: Option<Value>) -> Result<Option<Value>, String> {
    let given = |k: &str| obj.get(k).filter(|v| !v.is_null()).cloned();
    let (turns, outputs, tools) = (given("turns"), given("tool_outputs"), given("tools"));
    if turns.is_none() && outputs.is_none() && tools.is_none() {
        return Ok(None);
    }
    let mut list = match (turns, prompt) {
        (Some(_), Some(_)) => return Err("give either `prompt` or `turns`, not both".into()),
        (None, None) => return Err("no `prompt` (or `turns`)".into()),
        (None, Some(p)) => vec![json!({"prompt": p})],
        (Some(Value::Array(t)), None) if t.is_empty() => return Err("`turns` is empty".into()),
        (Some(Value::Array(t)), None) => t,
        (Some(_), None) => return Err("`turns` must be a list of {\"prompt\", \"expect\"} objects".into()),
    };
    for (i, turn) in list.iter().enumerate() {
        check_turn(turn).map_err(|e| format!("turn {}: {e}", i + 1))?;
    }
    if let Some(last) = list.last_mut().and_then(Value::as_object_mut) {
        if let Some(e) = merge(last.remove("expect").filter(|v| !v.is_null()), expect) {
            last.insert("expect".into(), e);
        }
    }
    let mut out = Map::new();
    out.insert("turns".into(), Value::Array(list));
    out.extend(outputs.map(|v| ("tool_outputs".to_owned(), v)));
    out.extend(tools.map(|v| ("tools".to_owned(), v)));
    Ok(Some(Value::Object(out)))
}

fn check_turn(turn: &Value) -> Result<(), String> {
    let Value::Object(t) = turn else { return Err("not a {\"prompt\", \"expect\"} object".into()) };
    if let Some(k) = t.keys().find(|k| !TURN_KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key `{k}` (known: {})", TURN_KEYS.join(", ")));
    }
    match t.get("prompt") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(()),
        Some(Value::String(_)) => Err("`prompt` is empty".into()),
        Some(_) => Err("`prompt` must be a string".into()),
        None => Err("no `prompt`".into()),
    }
}

/// A conversation as kept whose every turn also checks `schema` (`--schema`: each turn is sent
/// with it, so each answer is checked against it).
#[must_use]
pub fn with_schema(mut conversation: Value, schema: &Value) -> Value {
    let turns = conversation.get_mut("turns").and_then(Value::as_array_mut);
    for turn in turns.into_iter().flatten().filter_map(Value::as_object_mut) {
        let expect = turn.remove("expect");
        turn.insert("expect".into(), super::prompts::with_schema(expect, schema.clone()));
    }
    conversation
}

/// The first turn's prompt of a conversation as kept (what lists and reports show).
#[must_use]
pub fn first_prompt(conversation: &Value) -> String {
    conversation.pointer("/turns/0/prompt").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// Whether a conversation as kept grades its cells: a turn has checks, or its tools are
/// recorded (a call with no recording fails its turn).
#[must_use]
pub fn is_checked(conversation: &Value) -> bool {
    let turns = conversation.get("turns").and_then(Value::as_array);
    conversation.get("tools").is_some()
        || conversation.get("tool_outputs").is_some()
        || turns.into_iter().flatten().any(|t| t.get("expect").is_some() || t.get("tool_outputs").is_some())
}

/// A recorded tool offered by name: a built-in's definition, answered from recordings.
fn builtin(name: &str) -> Option<ToolSpec> {
    crate::tools::builtin::Builtin::ALL.iter().map(|b| b.spec()).find(|s| s.name == name)
}

fn recorded_spec(mut spec: ToolSpec) -> ToolSpec {
    spec.source = ToolSource::Recorded;
    spec.approval = Approval::Never;
    spec
}

/// One entry of `tools`: a built-in's name, or a function definition (`{"name", "description",
/// "parameters"}`, or the same wrapped as `{"type": "function", "function": {…}}`).
fn tool(v: &Value) -> Result<ToolSpec, String> {
    let builtins = || crate::tools::builtin::Builtin::ALL.map(|b| b.spec().name).join(", ");
    let f = v.get("function").filter(|_| v.get("type").and_then(Value::as_str) == Some("function")).unwrap_or(v);
    match f {
        Value::String(name) => builtin(name).map(recorded_spec).ok_or_else(|| {
            format!("`{name}` is not a built-in tool ({}); give its definition: {{\"name\", \"description\", \"parameters\"}}", builtins())
        }),
        Value::Object(o) => {
            let name = o.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty());
            let name = name.ok_or("a definition needs a `name`")?;
            let description = match o.get("description") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(_) => return Err(format!("`{name}`: `description` must be a string")),
            };
            let parameters = match o.get("parameters") {
                None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                Some(p @ Value::Object(_)) => p.clone(),
                Some(_) => return Err(format!("`{name}`: `parameters` must be a JSON schema object")),
            };
            Ok(ToolSpec { name: name.to_owned(), description, parameters, source: ToolSource::Recorded, approval: Approval::Never })
        }
        _ => Err("each tool is a built-in's name or a {\"name\", \"description\", \"parameters\"} definition".into()),
    }
}

/// The tools offered: the line's `tools`, then every recorded built-in they leave out.
fn offered(tools: Option<&Value>, names: &[&str]) -> Result<Vec<ToolSpec>, String> {
    let mut specs = match tools {
        None => Vec::new(),
        Some(Value::Array(a)) => {
            a.iter().map(tool).collect::<Result<Vec<_>, _>>().map_err(|e| format!("tools: {e}"))?
        }
        Some(_) => return Err("`tools` must be a list of built-in names or function definitions".into()),
    };
    for name in names {
        if specs.iter().any(|s| s.name == *name) {
            continue;
        }
        let spec = builtin(name).ok_or_else(|| {
            format!(
                "tool_outputs: `{name}` is not a built-in tool: define it in `tools`, e.g. \
                 [{{\"name\": \"{name}\", \"description\": \"…\", \"parameters\": {{\"type\": \"object\", …}}}}]"
            )
        })?;
        specs.push(recorded_spec(spec));
    }
    Ok(specs)
}

impl Conversation {
    /// Compiles a conversation as kept (see [`read`]), its variables filled in.
    ///
    /// # Errors
    /// A turn's `expect` that does not compile (or holds `select_best`), a malformed recording,
    /// a recorded tool with no definition.
    pub fn compile(v: &Value) -> Result<Self, String> {
        let line_outputs = match v.get("tool_outputs") {
            Some(o) => recorded::parse(o)?,
            None => Vec::new(),
        };
        let raw_turns = v.get("turns").and_then(Value::as_array).ok_or("no `turns`")?;
        let mut turns = Vec::new();
        let mut names: Vec<&str> = line_outputs.iter().map(|r| r.name.as_str()).collect();
        for (i, t) in raw_turns.iter().enumerate() {
            let n = i + 1;
            let prompt = t.get("prompt").and_then(Value::as_str).ok_or(format!("turn {n}: no `prompt`"))?;
            let expect = match t.get("expect") {
                Some(e) => Some(Expect::compile(e).map_err(|e| format!("turn {n}: expect: {e}"))?),
                None => None,
            };
            if expect.as_ref().is_some_and(|e| e.select_best().is_some()) {
                return Err(format!(
                    "turn {n}: `select_best` is not run in a conversation (it ranks the models' answers to one prompt)"
                ));
            }
            let mut recordings: Vec<Recording> = match t.get("tool_outputs") {
                Some(o) => recorded::parse(o).map_err(|e| format!("turn {n}: {e}"))?,
                None => Vec::new(),
            };
            recordings.extend(line_outputs.iter().cloned());
            turns.push(TurnCase { prompt: prompt.to_owned(), expect, recorded: Recorded { recordings } });
        }
        for t in raw_turns {
            names.extend(
                t.pointer("/tool_outputs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["name"].as_str()),
            );
        }
        let is_recorded = v.get("tools").is_some() || !names.is_empty();
        let tools = if is_recorded { Some(offered(v.get("tools"), &names)?) } else { None };
        Ok(Self { turns, tools })
    }

    /// Every turn's checks.
    pub fn expects(&self) -> impl Iterator<Item = &Expect> {
        self.turns.iter().filter_map(|t| t.expect.as_ref())
    }

    /// The registry of turn `i` when its tools are recorded (every call answered from its
    /// recordings, nothing run); `None`: the run's own.
    #[must_use]
    pub fn registry(&self, i: usize) -> Option<Registry> {
        let specs = self.tools.clone()?;
        Some(Registry::recorded(specs, self.turns.get(i).map(|t| t.recorded.clone()).unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::prompts::parse;
    use super::*;

    #[test]
    fn a_turns_line_is_one_conversation_whose_last_turn_takes_the_line_s_expect() {
        let set = parse(concat!(
            r#"{"id":"trip","turns":[{"prompt":"Weather in Paris?","expect":{"tool_called":"get_weather"}},"#,
            r#"{"prompt":"And tomorrow?","expect":"rain"}],"expect":{"not_contains":"sorry"},"#,
            r#""tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"#,
            r#""tool_outputs":[{"name":"get_weather","arguments":{"city":"Paris"},"output":"sunny"}]}"#
        ))
        .unwrap();
        let item = &set[0];
        assert_eq!((item.prompt.as_str(), item.expect_raw.clone()), ("Weather in Paris?", None));
        let conv = Conversation::compile(item.conversation.as_ref().unwrap()).unwrap();
        assert_eq!(conv.turns.len(), 2);
        assert_eq!(conv.turns[1].expect.as_ref().unwrap().checks.len(), 2, "the turn's and the line's");
        assert_eq!(conv.turns[1].recorded.recordings[0].output, "sunny");
        let tools = conv.tools.as_ref().unwrap();
        assert_eq!(
            (tools.len(), tools[0].source.clone(), tools[0].approval),
            (1, ToolSource::Recorded, Approval::Never)
        );
        let registry = conv.registry(0).unwrap();
        assert_eq!(registry.definitions()[0]["name"], "get_weather");
        assert!(registry.recordings().is_some());
        let schema = with_schema(item.conversation.clone().unwrap(), &json!({"type": "object"}));
        let conv = Conversation::compile(&schema).unwrap();
        assert!(conv.turns.iter().all(|t| t.expect.as_ref().unwrap().send.is_some()), "every turn checks it");
    }

    #[test]
    fn recorded_built_ins_are_offered_and_others_need_a_definition() {
        let set = parse(r#"{"prompt":"look","tool_outputs":[{"name":"read_file","output":"x"}]}"#).unwrap();
        let conv = Conversation::compile(set[0].conversation.as_ref().unwrap()).unwrap();
        assert_eq!(conv.turns.len(), 1);
        assert_eq!(conv.tools.unwrap()[0].name, "read_file");
        let e = parse(r#"{"prompt":"a","tool_outputs":[{"name":"get_weather","output":"x"}]}"#).unwrap_err();
        assert!(e.message.contains("`get_weather` is not a built-in tool: define it in `tools`"), "{e}");
        let e = parse(r#"{"prompt":"a","tools":["fly"]}"#).unwrap_err();
        assert!(e.message.contains("tools: `fly` is not a built-in tool (read_file"), "{e}");
        let plain = parse(r#"{"turns":[{"prompt":"a"},{"prompt":"b"}]}"#).unwrap();
        assert_eq!(Conversation::compile(plain[0].conversation.as_ref().unwrap()).unwrap().tools, None);
    }

    #[test]
    fn malformed_turns_name_the_line_and_the_turn() {
        let e = |s: &str| parse(s).unwrap_err();
        let got = e("{\"prompt\":\"a\"}\n{\"prompt\":\"b\",\"turns\":[{\"prompt\":\"c\"}]}");
        assert_eq!((got.line, got.message.as_str()), (2, "give either `prompt` or `turns`, not both"));
        assert_eq!(e(r#"{"turns":[]}"#).message, "`turns` is empty");
        assert_eq!(e(r#"{"turns":[{"prompt":"a"},{"expect":"x"}]}"#).message, "turn 2: no `prompt`");
        assert_eq!(e(r#"{"turns":[{"prompt":" "}]}"#).message, "turn 1: `prompt` is empty");
        assert!(e(r#"{"turns":[{"prompt":"a","promt":1}]}"#).message.starts_with("turn 1: unknown key `promt`"));
        assert!(e(r#"{"turns":"a"}"#).message.starts_with("`turns` must be a list"));
        assert!(e(r#"{"turns":[{"prompt":"a","expect":{"regex":"("}}]}"#).message.starts_with("turn 1: expect:"));
        assert!(e(r#"{"turns":[{"prompt":"a","expect":{"select_best":"best"}}]}"#).message.contains("select_best"));
        assert!(
            e(r#"{"turns":[{"prompt":"a","tool_outputs":[{"name":"read_file"}]}]}"#)
                .message
                .contains("turn 1: tool_outputs[1]")
        );
    }

    #[test]
    fn a_templated_conversation_fills_every_turn() {
        let set = parse(concat!(
            r#"{"turns":[{"prompt":"Weather in {{city}}?"},{"prompt":"Pack for {{city}}","expect":"{{item}}"}],"#,
            r#""tool_outputs":[{"name":"read_file","arguments":{"path":"{{city}}.txt"},"output":"{{item}}"}],"#,
            r#""vars":[{"city":"Oslo","item":"coat"},{"city":"Nice","item":"hat"}]}"#
        ))
        .unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set[1].prompt, "Weather in Nice?");
        let conv = Conversation::compile(set[1].conversation.as_ref().unwrap()).unwrap();
        assert_eq!(conv.turns[1].prompt, "Pack for Nice");
        assert_eq!(conv.turns[1].recorded.recordings[0].arguments, Some(json!({"path": "Nice.txt"})));
        assert!(conv.turns[1].expect.as_ref().unwrap().run("a hat").iter().all(|c| c.pass));
        let e = parse(r#"{"turns":[{"prompt":"{{x}}"},{"prompt":"{{y}}"}],"vars":[{"x":1}]}"#).unwrap_err();
        assert_eq!(e.message, "unknown variable `y` (the vars have: x)");
    }
}
