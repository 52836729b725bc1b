//! Reads a Chat Completions or Responses request body into the few facts the scripted models react to.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The model used when a request names none; real providers would reject it, but a
/// newcomer's first hand-written `curl` should still get an answer.
pub const DEFAULT_MODEL: &str = "demo";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Responses,
}

/// One tool output the client sent back, with the tool's name when the request lets us find it.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub name: String,
    pub output: String,
}

/// An `mcp_approval_request` item found in the input (the client replays earlier output).
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAsk {
    pub id: String,
    pub server_label: String,
    pub name: String,
    pub arguments: String,
}

/// An `mcp_approval_response` input item: the user's answer to an approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAnswer {
    pub request_id: String,
    pub approve: bool,
    pub reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
    /// Raw body size; token counts are derived from it so they grow with the conversation.
    pub size_bytes: usize,
    pub last_user_text: Option<String>,
    /// The last user message's content parts as sent (empty when it was a plain string).
    pub last_user_parts: Vec<Value>,
    /// Content parts of earlier user messages that were not text (re-sent attachments).
    pub earlier_parts: Vec<Value>,
    pub user_turns: usize,
    /// Names of the function tools the client offers (empty when `tool_choice` is `"none"`).
    pub offered_tools: Vec<String>,
    /// Tool outputs sent after the last user message, i.e. the ones awaiting an answer.
    pub tool_results: Vec<ToolResult>,
    /// Approval requests replayed anywhere in the input, to look answers up by id.
    pub approval_asks: Vec<ApprovalAsk>,
    /// Approval answers sent after the last user message, i.e. the ones awaiting a reaction.
    pub approval_answers: Vec<ApprovalAnswer>,
    /// Echoed back in Responses objects, as OpenAI does.
    pub tools: Value,
    pub instructions: Value,
    /// Chat `response_format` / Responses `text.format`: what shape the answer must take.
    pub format: Format,
    /// Responses `text`, echoed back as sent (`{"format": {"type": "text"}}` when unset).
    pub text: Value,
    /// Token log probabilities asked for, with this many alternatives per token.
    pub logprobs: Option<u32>,
}

/// The answer's shape, as the request asks for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Format {
    /// Free text (the default).
    #[default]
    Text,
    /// Any JSON object.
    JsonObject,
    /// A JSON document following `schema`.
    Schema(Value),
}

/// The shape asked for: Chat's `response_format` (`json_schema` nests the schema under
/// `json_schema`), Responses' `text.format` (flat).
fn format_of(api: Api, obj: &Map<String, Value>) -> Format {
    let f = match api {
        Api::Chat => obj.get("response_format"),
        Api::Responses => obj.get("text").and_then(|t| t.get("format")),
    };
    let Some(f) = f else { return Format::Text };
    match f.get("type").and_then(Value::as_str) {
        Some("json_object") => Format::JsonObject,
        Some("json_schema") => {
            let holder = if api == Api::Chat { f.get("json_schema") } else { Some(f) };
            holder.and_then(|h| h.get("schema")).cloned().map_or(Format::JsonObject, Format::Schema)
        }
        _ => Format::Text,
    }
}

/// Chat: `logprobs: true` (+ `top_logprobs`); Responses: `include` naming
/// `message.output_text.logprobs`, or `top_logprobs` alone.
fn logprobs_of(api: Api, obj: &Map<String, Value>) -> Option<u32> {
    let top = obj.get("top_logprobs").and_then(Value::as_u64).map(|n| n.min(20) as u32);
    let asked = match api {
        Api::Chat => obj.get("logprobs").and_then(Value::as_bool) == Some(true),
        Api::Responses => {
            let include = obj.get("include").and_then(Value::as_array);
            include.into_iter().flatten().any(|i| i == "message.output_text.logprobs") || top.is_some_and(|n| n > 0)
        }
    };
    asked.then(|| top.unwrap_or(0))
}

/// Why a body was rejected; becomes a 400 with an OpenAI error body.
#[derive(Debug, Clone)]
pub struct BadRequest {
    pub message: String,
    pub param: Option<&'static str>,
}

#[derive(Default)]
struct Conversation {
    user_turns: usize,
    last_user_text: Option<String>,
    last_user_parts: Vec<Value>,
    earlier_parts: Vec<Value>,
    tool_results: Vec<ToolResult>,
    approval_asks: Vec<ApprovalAsk>,
    approval_answers: Vec<ApprovalAnswer>,
    /// call id → tool name, learned from earlier assistant tool calls.
    call_names: HashMap<String, String>,
}

impl Conversation {
    fn user(&mut self, content: Option<&Value>) {
        self.user_turns += 1;
        let earlier = std::mem::take(&mut self.last_user_parts);
        self.earlier_parts.extend(earlier.into_iter().filter(|p| p.get("text").is_none()));
        self.last_user_text = Some(text_of(content));
        self.last_user_parts = content.and_then(Value::as_array).cloned().unwrap_or_default();
        // Only results after the newest user message are pending; older ones were answered.
        self.tool_results.clear();
        self.approval_answers.clear();
    }

    fn call(&mut self, id: Option<&str>, name: Option<&str>) {
        if let (Some(id), Some(name)) = (id, name) {
            self.call_names.insert(id.to_string(), name.to_string());
        }
    }

    fn result(&mut self, id: Option<&str>, output: String) {
        let id = id.unwrap_or("tool");
        let name = self.call_names.get(id).cloned().unwrap_or_else(|| id.to_string());
        self.tool_results.push(ToolResult { name, output });
    }
}

pub fn parse(api: Api, body: &[u8]) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_slice(body).map_err(|err| BadRequest {
        message: format!(
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload. Parser error: {err})"
        ),
        param: None,
    })?;
    let Value::Object(obj) = value else {
        return Err(BadRequest { message: "The request body must be a JSON object.".to_string(), param: None });
    };
    let model = match obj.get("model") {
        None | Some(Value::Null) => DEFAULT_MODEL.to_string(),
        Some(Value::String(model)) => model.clone(),
        Some(_) => {
            return Err(BadRequest {
                message: "Invalid type for 'model': expected a string.".to_string(),
                param: Some("model"),
            });
        }
    };
    let conversation = match api {
        Api::Chat => chat_conversation(obj.get("messages")),
        Api::Responses => responses_conversation(obj.get("input")),
    };
    Ok(Request {
        model,
        stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage: obj
            .get("stream_options")
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        size_bytes: body.len(),
        last_user_text: conversation.last_user_text,
        last_user_parts: conversation.last_user_parts,
        earlier_parts: conversation.earlier_parts,
        user_turns: conversation.user_turns,
        offered_tools: offered_tools(&obj),
        tool_results: conversation.tool_results,
        approval_asks: conversation.approval_asks,
        approval_answers: conversation.approval_answers,
        tools: obj.get("tools").cloned().unwrap_or(Value::Array(Vec::new())),
        instructions: obj.get("instructions").cloned().unwrap_or(Value::Null),
        format: format_of(api, &obj),
        text: obj.get("text").cloned().unwrap_or_else(|| serde_json::json!({"format": {"type": "text"}})),
        logprobs: logprobs_of(api, &obj),
    })
}

fn offered_tools(obj: &Map<String, Value>) -> Vec<String> {
    if obj.get("tool_choice").and_then(Value::as_str) == Some("none") {
        return Vec::new();
    }
    let tools = obj.get("tools").and_then(Value::as_array);
    tools
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            // Chat nests the name under `function`; Responses puts it at the top level.
            tool.get("function")
                .and_then(|function| function.get("name"))
                .or_else(|| tool.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

fn chat_conversation(messages: Option<&Value>) -> Conversation {
    let mut conversation = Conversation::default();
    for message in messages.and_then(Value::as_array).into_iter().flatten() {
        match message.get("role").and_then(Value::as_str) {
            Some("user") => conversation.user(message.get("content")),
            Some("assistant") => {
                let calls = message.get("tool_calls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    let name = call.get("function").and_then(|f| f.get("name"));
                    conversation.call(call.get("id").and_then(Value::as_str), name.and_then(Value::as_str));
                }
            }
            Some("tool") => conversation
                .result(message.get("tool_call_id").and_then(Value::as_str), text_of(message.get("content"))),
            _ => {}
        }
    }
    conversation
}

fn responses_conversation(input: Option<&Value>) -> Conversation {
    let mut conversation = Conversation::default();
    match input {
        Some(text @ Value::String(_)) => conversation.user(Some(text)),
        Some(Value::Array(items)) => {
            for item in items {
                let kind = item.get("type").and_then(Value::as_str);
                let role = item.get("role").and_then(Value::as_str);
                match (kind, role) {
                    (Some("message") | None, Some("user")) => {
                        conversation.user(item.get("content"));
                    }
                    (Some("function_call"), _) => conversation
                        .call(item.get("call_id").and_then(Value::as_str), item.get("name").and_then(Value::as_str)),
                    (Some("function_call_output"), _) => {
                        conversation.result(item.get("call_id").and_then(Value::as_str), text_of(item.get("output")))
                    }
                    (Some("mcp_approval_request"), _) => {
                        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
                        conversation.approval_asks.push(ApprovalAsk {
                            id: text("id"),
                            server_label: text("server_label"),
                            name: text("name"),
                            arguments: text("arguments"),
                        });
                    }
                    (Some("mcp_approval_response"), _) => conversation.approval_answers.push(ApprovalAnswer {
                        request_id: item
                            .get("approval_request_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        approve: item.get("approve").and_then(Value::as_bool).unwrap_or(false),
                        reason: item.get("reason").and_then(Value::as_str).map(str::to_string),
                    }),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    conversation
}

/// Text of a message content: a plain string, or the concatenated `text` of its parts
/// (`text`, `input_text`, `output_text`; images and audio have no `text` and are skipped).
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_tool_results_after_last_user_message_are_named() {
        let body = br#"{"model":"demo-tools","messages":[
            {"role":"user","content":"hi"},
            {"role":"user","content":[{"type":"text","text":"list it"}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"a\nb"}]}"#;
        let Ok(req) = parse(Api::Chat, body) else {
            panic!("a valid chat body was rejected");
        };
        assert_eq!(req.user_turns, 2);
        assert_eq!(req.last_user_text.as_deref(), Some("list it"));
        assert_eq!(req.tool_results.len(), 1);
        assert_eq!(req.tool_results[0].name, "read_file");
    }

    #[test]
    fn responses_input_string_and_missing_model() {
        let Ok(req) = parse(Api::Responses, br#"{"input":"hello"}"#) else {
            panic!("a valid responses body was rejected");
        };
        assert_eq!(req.model, DEFAULT_MODEL);
        assert_eq!(req.user_turns, 1);
        assert!(parse(Api::Responses, b"{nope").is_err());
    }

    #[test]
    fn responses_approval_answers_after_the_last_user_message_are_pending() {
        let body = br#"{"model":"demo-hosted","input":[
            {"role":"user","content":"search the web"},
            {"type":"mcp_approval_request","id":"mcpr_1","server_label":"wiki","name":"create_note","arguments":"{}"},
            {"type":"mcp_approval_response","approval_request_id":"mcpr_0","approve":true},
            {"role":"user","content":"again"},
            {"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":false,"reason":"not now"}]}"#;
        let Ok(req) = parse(Api::Responses, body) else {
            panic!("a valid responses body was rejected");
        };
        assert_eq!(req.approval_asks.len(), 1);
        assert_eq!(req.approval_asks[0].name, "create_note");
        assert_eq!(
            req.approval_answers,
            vec![ApprovalAnswer { request_id: "mcpr_1".into(), approve: false, reason: Some("not now".into()) }]
        );
    }
}
