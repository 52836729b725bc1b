//! demo-hosted: what a Responses API model with hosted tools streams, as OpenAI sends it. The
//! first reply is a web search, a message citing it, a code interpreter run, an MCP call and an
//! MCP approval request. demo-future answers with a message and an item type no client knows yet
//! (with an event type nobody knows), for forward compatibility. When a later request
//! answers the approval with an `mcp_approval_response` item, the reply is the approved MCP call,
//! or a message saying the call was not made.

use std::time::Duration;

use serde_json::{Value, json};

use super::Ctx;
use super::request::{ApprovalAnswer, ApprovalAsk, Request};
use super::responses::{Events, envelope, with};
use super::script::{self, PACE, split_arguments, split_words};
use super::sse::Frame;

pub const MODEL: &str = "demo-hosted";
/// The model whose reply holds an item and an event type from the future.
pub const FUTURE: &str = "demo-future";

/// Whether the Responses API reply of `model` is built here.
pub fn serves(model: &str) -> bool {
    model == MODEL || model == FUTURE
}

/// demo-future's message, before the item no client knows.
const FUTURE_TEXT: &str = "The next output item has a type no API defines yet, and it is announced by an event type nobody knows. A client should keep both and show the item as a generic card, never drop it.";

/// The pretend MCP server and its two tools: one that reads (runs without asking) and one that
/// writes (the provider asks the user first).
const MCP_SERVER: &str = "demo_wiki";
const MCP_SERVER_URL: &str = "https://wiki.demo.example/mcp";
const READ_TOOL: &str = "read_page";
const READ_ARGUMENTS: &str = r#"{"page":"responses-streaming"}"#;
const READ_OUTPUT: &str = "# Responses streaming\n\nEvery event carries a `type` and a `sequence_number`. Hosted tools report `in_progress`, then their own states (`searching`, `interpreting`, `generating`), then `completed`.";
const WRITE_TOOL: &str = "create_note";
const WRITE_ARGUMENTS: &str = r#"{"title":"Hosted tools","body":"Seen streaming in palaver's demo."}"#;

/// The search results every demo search "finds": (url, page title).
const SOURCES: &[(&str, &str)] = &[
    ("https://platform.openai.com/docs/guides/tools-web-search", "Web search - OpenAI API"),
    ("https://platform.openai.com/docs/api-reference/responses-streaming", "Streaming events - OpenAI API"),
    ("https://html.spec.whatwg.org/multipage/server-sent-events.html", "HTML Standard: Server-sent events"),
];

const CODE: &str = r#"import statistics

# Time to first token (ms) of five demo replies
ttft_ms = [212, 198, 240, 187, 225]
print(f"mean   {statistics.mean(ttft_ms):.1f} ms")
print(f"median {statistics.median(ttft_ms):.1f} ms")
print(f"spread {max(ttft_ms) - min(ttft_ms)} ms")
"#;
const CODE_LOGS: &str = "mean   212.4 ms\nmedian 212.0 ms\nspread 53 ms\n";

/// How many paces a hosted tool "works" between its progress events.
const TOOL_WORK: u32 = 10;

/// Reasoning the demo pretends to have done without showing it, so usage has every field.
const HIDDEN_REASONING: u64 = 24;

pub fn stream(ctx: &Ctx, req: &Request) -> Vec<Frame> {
    let mut events = Events::new(PACE);
    let start = json!({ "response": response(ctx, req, "in_progress", Vec::new(), Value::Null) });
    events.push(false, "response.created", start.clone());
    events.push(false, "response.in_progress", start);
    let (output, usage) = emit_output(&mut events, ctx, req);
    events.push(false, "response.completed", json!({ "response": response(ctx, req, "completed", output, usage) }));
    events.frames
}

pub fn object(ctx: &Ctx, req: &Request) -> Value {
    let mut silent = Events::new(Duration::ZERO);
    let (output, usage) = emit_output(&mut silent, ctx, req);
    response(ctx, req, "completed", output, usage)
}

/// The Response object: the shared envelope, with the hosted tools this model pretends to have
/// next to the ones the client offered.
fn response(ctx: &Ctx, req: &Request, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let mut response = envelope(ctx, req, status, output, usage);
    let mut tools = vec![
        json!({ "type": "web_search", "search_context_size": "medium", "user_location": null }),
        json!({ "type": "code_interpreter", "container": { "type": "auto" } }),
        json!({
            "type": "mcp", "server_label": MCP_SERVER, "server_url": MCP_SERVER_URL, "allowed_tools": null,
            "headers": null, "server_description": "A scripted wiki that lives inside palaver's demo provider",
            "require_approval": {
                "always": { "tool_names": [WRITE_TOOL] },
                "never": { "tool_names": [READ_TOOL] },
            },
        }),
    ];
    tools.extend(req.tools.as_array().into_iter().flatten().cloned());
    response["tools"] = json!(tools);
    response
}

/// Emits the reply's items and returns them with the usage.
fn emit_output(events: &mut Events, ctx: &Ctx, req: &Request) -> (Vec<Value>, Value) {
    // Asked for a schema, every message of the reply is the document that follows it.
    let mut json_script = script::Script::plain(req, "x", PACE);
    super::structured::apply(req, &mut json_script);
    let document = (req.format != super::request::Format::Text).then(|| json_script.text());
    let mut out = Output { events, ctx, items: Vec::new(), spoken: String::new(), document, logprobs: req.logprobs };
    match req.approval_answers.last() {
        Some(answer) => out.answered(req, answer),
        None if !req.tool_results.is_empty() => out.unexpected_outputs(req),
        None if req.model == FUTURE => {
            out.message(&Cited::plain(&format!("{}{FUTURE_TEXT}", script::preface(req))));
            out.future_item();
        }
        None => out.first_turn(req),
    }
    let mut usage = script::usage(req, script::tokens(&out.spoken) + HIDDEN_REASONING, HIDDEN_REASONING);
    usage.cached = usage.prompt / 2;
    let usage = usage.responses_json();
    (out.items, usage)
}

/// Builds the output items of one reply, in order.
struct Output<'a> {
    events: &'a mut Events,
    ctx: &'a Ctx,
    items: Vec<Value>,
    /// Everything the "model" wrote (text, code, arguments), for the token count.
    spoken: String,
    /// The JSON document a `text.format` schema asks for: every message says it instead.
    document: Option<String>,
    /// Token log probabilities asked for, with this many alternatives.
    logprobs: Option<u32>,
}

impl Output<'_> {
    fn first_turn(&mut self, req: &Request) {
        let query = match req.last_user_text {
            Some(_) => script::quote(req),
            None => "palaver hosted tools".to_string(),
        };
        self.web_search(&query);
        self.message(&first_answer(req, &query));
        self.code_interpreter();
        let call = Call { id: self.id("mcp"), name: READ_TOOL, arguments: READ_ARGUMENTS, approval_request_id: None };
        self.mcp_call(&call, READ_OUTPUT);
        self.approval_request();
    }

    /// The reaction to an `mcp_approval_response`: the call runs, or a message says it did not.
    fn answered(&mut self, req: &Request, answer: &ApprovalAnswer) {
        let fallback = ApprovalAsk {
            id: answer.request_id.clone(),
            server_label: MCP_SERVER.to_string(),
            name: WRITE_TOOL.to_string(),
            arguments: WRITE_ARGUMENTS.to_string(),
        };
        let ask = req.approval_asks.iter().rev().find(|ask| ask.id == answer.request_id).unwrap_or(&fallback);
        if answer.approve {
            let output = format!(
                "Created note \u{201c}Hosted tools\u{201d} (note_demo_{}) on {}.",
                self.ctx.n, ask.server_label
            );
            let call = Call {
                id: self.id("mcp"),
                name: &ask.name,
                arguments: &ask.arguments,
                approval_request_id: Some(&answer.request_id),
            };
            self.mcp_call_on(&ask.server_label, &call, &output);
            let text = format!(
                "You approved request `{}`, so the provider called `{}` on `{}`. It answered: {output}\n\nThat was the whole approval round trip: my reply ended with an `mcp_approval_request`, your client sent back an `mcp_approval_response` with `\"approve\": true`, and the call ran on the provider's side.",
                answer.request_id, ask.name, ask.server_label
            );
            self.message(&Cited::plain(&text));
        } else {
            let reason = match &answer.reason {
                Some(reason) if !reason.trim().is_empty() => {
                    format!(" The reason you gave: \u{201c}{}\u{201d}.", reason.trim())
                }
                _ => String::new(),
            };
            let text = format!(
                "You denied request `{}`, so the call was not made: `{}` on `{}` never ran.{reason}\n\nAsk again if you change your mind; I will ask for approval again before writing anything.",
                answer.request_id, ask.name, ask.server_label
            );
            self.message(&Cited::plain(&text));
        }
    }

    fn unexpected_outputs(&mut self, req: &Request) {
        let names: Vec<String> = req.tool_results.iter().map(|result| format!("`{}`", result.name)).collect();
        let text = format!(
            "I received tool output for {}, but this model only calls hosted tools, which the provider runs itself. The one thing it waits for from your client is an `mcp_approval_response` item answering its `mcp_approval_request`.",
            names.join(", ")
        );
        self.message(&Cited::plain(&text));
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}_demo_{}", self.ctx.n)
    }

    fn index(&self) -> usize {
        self.items.len()
    }

    fn added(&mut self, item: &Value) {
        let index = self.index();
        self.events.push(false, "response.output_item.added", json!({ "output_index": index, "item": item }));
    }

    fn done(&mut self, item: Value) {
        let index = self.index();
        self.events.push(false, "response.output_item.done", json!({ "output_index": index, "item": item }));
        self.items.push(item);
    }

    /// The fields every per-item event carries.
    fn at(&self, item_id: &str) -> Value {
        json!({ "item_id": item_id, "output_index": self.index() })
    }

    fn web_search(&mut self, query: &str) {
        let id = self.id("ws");
        let sources: Vec<Value> = SOURCES.iter().map(|(url, _)| json!({ "type": "url", "url": url })).collect();
        let action = json!({ "type": "search", "query": query, "queries": [query], "sources": sources });
        let item = |status: &str| json!({ "id": id, "type": "web_search_call", "status": status, "action": action });
        self.added(&item("in_progress"));
        let at = self.at(&id);
        self.events.push(true, "response.web_search_call.in_progress", at.clone());
        self.events.push(true, "response.web_search_call.searching", at.clone());
        self.events.push_after(TOOL_WORK, "response.web_search_call.completed", at);
        self.done(item("completed"));
    }

    fn message(&mut self, cited: &Cited) {
        let doc = self.document.as_deref().map(Cited::plain);
        let cited = doc.as_ref().unwrap_or(cited);
        let pieces = split_words(&cited.text, 2);
        let logprobs: Vec<Value> = match self.logprobs {
            Some(top) => super::logprobs::entries(pieces.iter().map(String::as_str), top),
            None => Vec::new(),
        };
        let id = self.id("msg");
        let item = |status: &str, content: Value| json!({ "id": id, "type": "message", "role": "assistant", "status": status, "content": content });
        let part = |text: &str, annotations: &[Value], logprobs: &[Value]| json!({ "type": "output_text", "text": text, "annotations": annotations, "logprobs": logprobs });
        self.added(&item("in_progress", json!([])));
        let mut at = self.at(&id);
        at["content_index"] = json!(0);
        self.events.push(false, "response.content_part.added", with(&at, "part", part("", &[], &[])));
        let mut written = 0;
        let mut announced = 0;
        for (i, piece) in pieces.iter().enumerate() {
            written += piece.chars().count();
            let mut delta = with(&at, "delta", json!(piece));
            delta["logprobs"] = json!(logprobs.get(i).map_or_else(Vec::new, |e| vec![e.clone()]));
            self.events.push(true, "response.output_text.delta", delta);
            // A citation is announced as soon as the text it covers has streamed.
            while let Some(annotation) = cited.annotations.get(announced) {
                if annotation["end_index"].as_u64().is_some_and(|end| end as usize > written) {
                    break;
                }
                let mut event = with(&at, "annotation_index", json!(announced));
                event["annotation"] = annotation.clone();
                self.events.push(false, "response.output_text.annotation.added", event);
                announced += 1;
            }
        }
        let mut done = with(&at, "text", json!(cited.text));
        done["logprobs"] = json!(logprobs);
        self.events.push(false, "response.output_text.done", done);
        let full = part(&cited.text, &cited.annotations, &logprobs);
        self.events.push(false, "response.content_part.done", with(&at, "part", full.clone()));
        self.done(item("completed", json!([full])));
        self.spoken.push_str(&cited.text);
    }

    fn code_interpreter(&mut self) {
        let id = self.id("ci");
        let container = format!("cntr_demo_{}", self.ctx.n);
        let item = |status: &str, code: &str, outputs: Value| {
            json!({
                "id": id, "type": "code_interpreter_call", "status": status, "code": code,
                "container_id": container, "outputs": outputs,
            })
        };
        self.added(&item("in_progress", "", Value::Null));
        let at = self.at(&id);
        self.events.push(true, "response.code_interpreter_call.in_progress", at.clone());
        for piece in split_words(CODE, 2) {
            self.events.push(true, "response.code_interpreter_call_code.delta", with(&at, "delta", json!(piece)));
        }
        self.events.push(false, "response.code_interpreter_call_code.done", with(&at, "code", json!(CODE)));
        self.events.push(true, "response.code_interpreter_call.interpreting", at.clone());
        self.events.push_after(TOOL_WORK, "response.code_interpreter_call.completed", at);
        self.done(item("completed", CODE, json!([{ "type": "logs", "logs": CODE_LOGS }])));
        self.spoken.push_str(CODE);
    }

    fn mcp_call(&mut self, call: &Call, output: &str) {
        self.mcp_call_on(MCP_SERVER, call, output);
    }

    fn mcp_call_on(&mut self, server_label: &str, call: &Call, output: &str) {
        let item = |status: &str, arguments: &str, output: Option<&str>| {
            json!({
                "id": call.id, "type": "mcp_call", "status": status, "server_label": server_label,
                "name": call.name, "arguments": arguments, "approval_request_id": call.approval_request_id,
                "output": output, "error": null,
            })
        };
        self.added(&item("in_progress", "", None));
        let at = self.at(&call.id);
        self.events.push(true, "response.mcp_call.in_progress", at.clone());
        for piece in split_arguments(call.arguments) {
            self.events.push(true, "response.mcp_call_arguments.delta", with(&at, "delta", json!(piece)));
        }
        self.events.push(false, "response.mcp_call_arguments.done", with(&at, "arguments", json!(call.arguments)));
        self.events.push_after(TOOL_WORK, "response.mcp_call.completed", at);
        self.done(item("completed", call.arguments, Some(output)));
        self.spoken.push_str(call.arguments);
    }

    fn approval_request(&mut self) {
        let item = json!({
            "id": self.id("mcpr"), "type": "mcp_approval_request", "server_label": MCP_SERVER,
            "name": WRITE_TOOL, "arguments": WRITE_ARGUMENTS,
        });
        self.added(&item);
        self.done(item);
        self.spoken.push_str(WRITE_ARGUMENTS);
    }

    /// An item type from the future, with an event type nobody knows: clients must keep both.
    fn future_item(&mut self) {
        let id = self.id("dfi");
        let payload = json!({
            "note": "An output item type this client has never seen. It should be shown as a generic card, never dropped.",
            "version": 2,
            "flags": ["experimental", "demo"],
        });
        let item = |status: &str| json!({ "id": id, "type": "demo_future_item", "status": status, "payload": payload });
        self.added(&item("in_progress"));
        let mut ping = self.at(&id);
        ping["ping"] = json!(1);
        self.events.push(true, "response.demo_future_item.pinged", ping);
        self.done(item("completed"));
    }
}

/// An MCP call to emit.
struct Call<'a> {
    id: String,
    name: &'a str,
    arguments: &'a str,
    approval_request_id: Option<&'a str>,
}

/// Answer text with `url_citation` annotations whose indices count characters, as OpenAI's do.
struct Cited {
    text: String,
    annotations: Vec<Value>,
}

impl Cited {
    fn plain(text: &str) -> Cited {
        Cited { text: text.to_string(), annotations: Vec::new() }
    }

    fn say(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends an inline markdown link to the source, as OpenAI's search answers do, and an
    /// annotation covering it.
    fn cite(&mut self, (url, title): (&str, &str)) {
        let host = url.split('/').nth(2).unwrap_or(url);
        let start = self.text.chars().count();
        self.text.push_str(&format!("([{host}]({url}))"));
        let end = self.text.chars().count();
        self.annotations.push(json!({
            "type": "url_citation", "start_index": start, "end_index": end, "title": title, "url": url,
        }));
    }
}

fn first_answer(req: &Request, query: &str) -> Cited {
    let mut cited = Cited::plain(&script::preface(req));
    cited.say(&format!(
        "I searched the web for \u{201c}{query}\u{201d}. This is a scripted demo, so the search always finds the same {} pages.\n\nWith the Responses API, tools such as web search run on the provider's side and report their progress as typed events like `response.web_search_call.searching` ",
        SOURCES.len()
    ));
    cited.cite(SOURCES[1]);
    cited.say(". Each event is a server-sent event: an `event:` line, a JSON `data:` line and a blank line ");
    cited.cite(SOURCES[2]);
    cited.say(". Answers built from a search cite their sources like this one ");
    cited.cite(SOURCES[0]);
    cited.say(".\n\nNext I will run a little Python in the code interpreter, read a page through an MCP server, and ask for your approval before writing a note to it.");
    cited
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citation_indices_count_characters_and_cover_the_link() {
        let mut cited = Cited::plain("\u{201c}caf\u{e9}\u{201d} ");
        cited.cite(SOURCES[0]);
        let start = cited.annotations[0]["start_index"].as_u64().unwrap_or(0) as usize;
        let end = cited.annotations[0]["end_index"].as_u64().unwrap_or(0) as usize;
        let covered: String = cited.text.chars().skip(start).take(end - start).collect();
        assert_eq!(covered, format!("([platform.openai.com]({}))", SOURCES[0].0));
    }
}
