//! The flow inspector's model: the round trips of one turn (the last user message and what
//! followed it) as selectable steps — each request as sent, the response status and headers,
//! the frames with their arrival times, the reply, each tool run — with the raw JSON of any
//! step, "copy as curl" and an export of the whole flow. In a compare it shows one column's
//! turn at a time (Tab moves to the next); in an arena, only once the vote has named the models
//! (requests and frames name them). Drawing is `ui::inspector`'s job.

use super::effect::Effect;
use super::overlay::Overlay;
use super::state::{State, TargetInfo};
use super::tools::ToolEffect;
use super::transcript::Transcript;
use crate::api::Api;
use crate::engine::message::{Message, Role};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Lines a page key scrolls the raw pane.
const PAGE: u16 = 10;
/// Request bodies kept (the newest); each holds the whole conversation so far.
const KEEP_REQUESTS: usize = 64;

/// A request body as it went out.
#[derive(Debug, Clone, PartialEq)]
pub struct SentRequest {
    pub api: Api,
    /// The request's own body, shared, not copied.
    pub body: std::sync::Arc<crate::engine::body::Body>,
}

/// Whose message a request was sent for: the chat's (generation 0, column 0 are unused there)
/// or a compare column's; each transcript numbers its messages from one.
type RequestKey = (Option<(u64, usize)>, u64);

/// The inspector's state: what is selected, and the bodies of the requests sent.
#[derive(Debug, Default)]
pub struct Inspector {
    pub selected: usize,
    /// Lines the raw pane is scrolled by.
    pub scroll: u16,
    /// In a compare: the column shown.
    pub column: usize,
    /// Request bodies by the assistant message they were sent for.
    pub requests: HashMap<RequestKey, SentRequest>,
}

impl Inspector {
    /// Keeps the bodies of the requests among `fx`, the chat's and the compare columns'.
    pub fn record(&mut self, fx: &[Effect]) {
        for e in fx {
            match e {
                Effect::StartRequest { id, api, body } => {
                    self.requests.insert((None, *id), SentRequest { api: *api, body: body.clone() });
                }
                Effect::Compare(super::compare::CompareEffect::Start { generation, column, id, api, body, .. }) => {
                    let key = (Some((*generation, *column)), *id);
                    self.requests.insert(key, SentRequest { api: *api, body: body.clone() });
                }
                _ => {}
            }
        }
        if self.requests.len() > KEEP_REQUESTS {
            // Oldest first: a column's ids restart, so order by insertion is not kept; the
            // generation and then the id is close enough (newer compares, newer turns).
            let mut keys: Vec<RequestKey> = self.requests.keys().copied().collect();
            keys.sort_unstable_by_key(|(col, id)| (col.map_or(0, |c| c.0), *id));
            for k in &keys[..keys.len() - KEEP_REQUESTS] {
                self.requests.remove(k);
            }
        }
    }
}

/// What the inspector shows: the chat's conversation, or one compare column's.
pub struct Source<'a> {
    pub transcript: &'a Transcript,
    /// The selected message (the chat's selection; a column has none).
    pub selected: Option<u64>,
    pub target: &'a TargetInfo,
    /// (generation, column) in a compare.
    pub column: Option<(u64, usize)>,
    /// How the source is named in the title: "column B · demo" in a compare.
    pub label: Option<String>,
    /// An arena before the vote: nothing is shown, since requests and frames name the models.
    pub hidden: bool,
    requests: &'a HashMap<RequestKey, SentRequest>,
}

impl Source<'_> {
    /// The body of the request sent for message `id`, when it was kept.
    #[must_use]
    pub fn request(&self, id: u64) -> Option<&SentRequest> {
        self.requests.get(&(self.column, id))
    }

    #[must_use]
    pub fn message(&self, id: u64) -> Option<&Message> {
        self.transcript.message(id)
    }
}

impl State {
    /// The conversation the inspector shows: in a compare, the column it is on.
    #[must_use]
    pub fn flow_source(&self) -> Source<'_> {
        let requests = &self.flow.requests;
        if let Some(cmp) = self.compare.active.as_ref() {
            let i = self.flow.column.min(cmp.columns.len().saturating_sub(1));
            if let Some(col) = cmp.columns.get(i) {
                let hidden = cmp.arena.as_ref().is_some_and(|a| !a.revealed);
                let label = if hidden {
                    format!("column {}", super::compare::arena::letter(i))
                } else {
                    format!("column {} · {}", super::compare::arena::letter(i), col.target.model)
                };
                return Source {
                    transcript: &col.transcript,
                    selected: None,
                    target: &col.target,
                    column: Some((cmp.generation, i)),
                    label: Some(label),
                    hidden,
                    requests,
                };
            }
        }
        Source {
            transcript: &self.transcript,
            selected: self.selected,
            target: &self.target,
            column: None,
            label: None,
            hidden: false,
            requests,
        }
    }
}

/// What a step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// The user's prompt that started the turn.
    Prompt,
    /// A request as sent.
    Request,
    /// The response's status, headers and timing.
    Response,
    /// The frames as they arrived.
    Frames,
    /// What the reply came to: text, calls, items, finish reason.
    Reply,
    /// One tool call's run.
    Tool,
}

/// One step of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub kind: StepKind,
    /// The message the step belongs to.
    pub id: u64,
    /// The call, for tool steps.
    pub call: Option<usize>,
    pub title: String,
    pub detail: String,
}

/// Cell indices of the turn shown: from the last user message at or before the selected cell
/// (or the end) up to the next user message.
#[must_use]
pub fn turn_range(src: &Source<'_>) -> std::ops::Range<usize> {
    let cells = &src.transcript.cells;
    let at = src.selected.and_then(|id| src.transcript.index_of(id)).unwrap_or(cells.len().saturating_sub(1));
    let is_user = |i: usize| cells.get(i).and_then(|c| c.message()).is_some_and(|m| m.role() == Role::User);
    let start = (0..=at.min(cells.len().saturating_sub(1))).rev().find(|&i| is_user(i)).unwrap_or(0);
    let end = (start + 1..cells.len()).find(|&i| is_user(i)).unwrap_or(cells.len());
    start..end
}

fn ms(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_owned(), crate::text::fmt::duration)
}

fn first_line(s: &str, n: usize) -> String {
    crate::tools::clip(s.lines().next().unwrap_or(""), n)
}

/// The steps of the turn shown, in order (none in an arena before the vote).
#[must_use]
pub fn steps(state: &State) -> Vec<Step> {
    let src = state.flow_source();
    let mut out = Vec::new();
    if src.hidden {
        return out;
    }
    for cell in &src.transcript.cells[turn_range(&src)] {
        let Some(m) = cell.message() else { continue };
        match m.role() {
            Role::User => out.push(Step {
                kind: StepKind::Prompt,
                id: m.id,
                call: None,
                title: "you".to_owned(),
                detail: first_line(m.text(), 60),
            }),
            Role::Assistant => assistant_steps(&src, &state.tools.set.0, m, &mut out),
            Role::Tool | Role::System => {}
        }
    }
    out
}

fn assistant_steps(src: &Source<'_>, tools: &crate::tools::Registry, m: &Message, out: &mut Vec<Step>) {
    let step = |kind, title: String, detail: String| Step { kind, id: m.id, call: None, title, detail };
    let detail = match src.request(m.id) {
        Some(r) => {
            let n =
                r.body.get("messages").or_else(|| r.body.get("input")).and_then(Value::as_array).map_or(0, Vec::len);
            let tools = r.body.get("tools").and_then(Value::as_array).map_or(0, Vec::len);
            let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
            format!(
                "{} · {}",
                plural(n, if r.body.get("input").is_some() { "input item" } else { "message" }),
                plural(tools, "tool")
            )
        }
        None => "body not kept".to_owned(),
    };
    let path = m.api.as_deref().and_then(Api::parse).unwrap_or(src.target.api).path();
    out.push(step(StepKind::Request, format!("→ POST /{path}"), detail));
    let status = m.http_status.map_or_else(|| "← no response yet".to_owned(), |s| format!("← HTTP {s}"));
    let detail = format!("ttft {} · total {}", ms(m.timing.ttft_ms), ms(m.timing.total_ms));
    out.push(step(StepKind::Response, status, detail));
    let last = m.frames.last().map_or(0, |f| f.at_ms);
    let dropped = if m.frames_dropped > 0 { format!(" · {} dropped", m.frames_dropped) } else { String::new() };
    out.push(step(
        StepKind::Frames,
        format!("≋ {} frames", m.frames.len()),
        format!("last at +{}{dropped}", ms(Some(last))),
    ));
    let main = m.main();
    let finish = main.finish_reason.clone().unwrap_or_else(|| format!("{:?}", m.status).to_lowercase());
    let mut what = Vec::new();
    if !main.content.is_empty() {
        what.push(format!("{} chars", main.content.chars().count()));
    }
    if !main.tool_calls.is_empty() {
        what.push(format!("{} calls", main.tool_calls.len()));
    }
    if !m.items.is_empty() {
        what.push(format!("{} items", m.items.len()));
    }
    out.push(step(StepKind::Reply, format!("◆ reply · {finish}"), what.join(" · ")));
    for (i, c) in main.tool_calls.iter().enumerate() {
        let (mark, _) = c.status.mark();
        let size = c.output.as_ref().map_or_else(String::new, |o| format!(" · {}", crate::text::fmt::size(o.len())));
        // A call to an MCP server's tool names the server and how it is reached.
        let via = match crate::engine::tool_loop::spec_for(tools, c).map(|s| s.source) {
            Some(crate::tools::ToolSource::Mcp(server, t)) => {
                format!("{} ({}) · ", crate::tools::clip(&server, 20), t.short())
            }
            _ => String::new(),
        };
        out.push(Step {
            kind: StepKind::Tool,
            id: m.id,
            call: Some(i),
            title: format!("⚙ {} {mark}", crate::tools::clip(&c.name, 32)),
            detail: format!("{via}{}{size}", ms(c.duration_ms)),
        });
    }
}

/// Parses a frame's data as JSON when it is JSON, else keeps the text.
fn data_value(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.to_owned()))
}

/// The raw JSON of a step.
#[must_use]
pub fn step_json(state: &State, step: &Step) -> Value {
    let src = state.flow_source();
    let Some(m) = src.message(step.id) else { return Value::Null };
    let main = m.main();
    match step.kind {
        StepKind::Prompt => json!({"role": "user", "content": m.text()}),
        StepKind::Request => match src.request(m.id) {
            Some(r) => json!({
                "method": "POST",
                "path": format!("/{}", r.api.path()),
                "headers": {"content-type": "application/json", "authorization": "<redacted>"},
                "body": r.body.json(),
            }),
            None => json!({"note": "this request was sent before palaver started; its body was not kept"}),
        },
        StepKind::Response => {
            let headers: serde_json::Map<String, Value> =
                m.response_headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            json!({
                "status": m.http_status,
                "headers": headers,
                "meta": m.meta,
                "timing": m.timing,
                "usage": m.usage,
                "error": m.error,
            })
        }
        StepKind::Frames => {
            let frames: Vec<Value> = m
                .frames
                .iter()
                .map(|f| json!({"at_ms": f.at_ms, "event": f.event, "data": data_value(&f.data)}))
                .collect();
            json!({"frames": frames, "frames_dropped": m.frames_dropped})
        }
        StepKind::Reply => json!({
            "status": m.status,
            "finish_reason": main.finish_reason,
            "content": main.content,
            "reasoning": main.reasoning,
            "refusal": main.refusal,
            "tool_calls": main.tool_calls,
            "annotations": main.annotations,
            "items": m.items,
            "item_notes": m.item_notes,
        }),
        StepKind::Tool => {
            let Some(c) = step.call.and_then(|i| main.tool_calls.get(i)) else { return Value::Null };
            let args =
                serde_json::from_str::<Value>(&c.arguments).unwrap_or_else(|_| Value::String(c.arguments.clone()));
            json!({
                "id": c.id, "name": c.name, "kind": c.kind, "arguments": args,
                "status": c.status, "duration_ms": c.duration_ms, "output": c.output,
            })
        }
    }
}

/// The raw pane's text for a step: a request as method, path, headers and body; a response as
/// status and headers, then its facts; frames one a line with their arrival time; the rest as
/// pretty JSON.
#[must_use]
pub fn step_text(state: &State, step: &Step) -> String {
    let text = raw_step_text(state, step);
    // Shown, copied and exported: through the one redactor (a secret a reply spelled across
    // two frames, a history stored before the secret was known).
    match crate::sys::secrets::redact(&text) {
        std::borrow::Cow::Owned(clean) => clean,
        std::borrow::Cow::Borrowed(_) => text,
    }
}

fn raw_step_text(state: &State, step: &Step) -> String {
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let src = state.flow_source();
    let Some(m) = src.message(step.id) else { return String::new() };
    match step.kind {
        StepKind::Frames => {
            let mut s = String::new();
            for f in &m.frames {
                let event = if f.event.is_empty() { "data" } else { &f.event };
                s.push_str(&format!("+{:>6} ms  {event}  {}\n", f.at_ms, f.data));
            }
            if m.frames_dropped > 0 {
                s.push_str(&format!("… {} more frames were counted but not kept\n", m.frames_dropped));
            }
            if s.is_empty() {
                s.push_str("no frames (yet)\n");
            }
            s
        }
        StepKind::Request => match src.request(m.id) {
            Some(r) => format!(
                "POST /{}\ncontent-type: application/json\nauthorization: <redacted: the key is never kept>\n\n{}",
                r.api.path(),
                pretty(&crate::engine::attach_wire::abbreviated(&r.body))
            ),
            None => pretty(&step_json(state, step)),
        },
        StepKind::Response => {
            let mut s = m.http_status.map_or_else(|| "no response yet\n".to_owned(), |c| format!("HTTP {c}\n"));
            for (k, v) in &m.response_headers {
                s.push_str(&format!("{k}: {v}\n"));
            }
            let facts = json!({"timing": m.timing, "meta": m.meta, "usage": m.usage, "error": m.error});
            s.push('\n');
            s.push_str(&pretty(&facts));
            s
        }
        _ => pretty(&step_json(state, step)),
    }
}

impl State {
    /// Opens the inspector, or closes it when it is on top.
    pub(crate) fn toggle_inspector(&mut self) {
        if self.overlays.last().is_some_and(|o| matches!(o, Overlay::Inspector)) {
            self.overlays.pop();
            return;
        }
        self.overlays.retain(|o| !matches!(o, Overlay::Inspector));
        self.overlays.push(Overlay::Inspector);
        self.flow.selected = 0;
        self.flow.scroll = 0;
        // In a compare it opens on the focused column.
        self.flow.column = self.compare.active.as_ref().map_or(0, |c| c.focus);
    }

    /// Tab in the inspector: the next (or previous) compare column's turn.
    fn flow_next_column(&mut self, step: isize) -> bool {
        let Some(n) = self.compare.active.as_ref().map(|c| c.columns.len()).filter(|&n| n > 0) else {
            return false;
        };
        let at = self.flow.column.min(n - 1);
        self.flow.column = (at + n).wrapping_add_signed(step) % n;
        self.flow.selected = 0;
        self.flow.scroll = 0;
        true
    }

    /// Keys for the overlays the tool loop owns; `None` when the top overlay is not one of them.
    pub(crate) fn tools_overlay_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> Option<bool> {
        match self.overlays.last()? {
            Overlay::Approval => Some(self.approval_key(key, fx)),
            Overlay::Inspector => Some(self.inspector_key(key, fx)),
            _ => None,
        }
    }

    fn inspector_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        if key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
            return false;
        }
        match key.code {
            KeyCode::Tab => return self.flow_next_column(1),
            KeyCode::BackTab => return self.flow_next_column(-1),
            _ => {}
        }
        let steps = steps(self);
        let n = steps.len();
        let f = &mut self.flow;
        let before = f.selected;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.overlays.pop();
                return true;
            }
            KeyCode::Up | KeyCode::Char('k') => f.selected = f.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => f.selected = (f.selected + 1).min(n.saturating_sub(1)),
            KeyCode::Home | KeyCode::Char('g') => f.selected = 0,
            KeyCode::End | KeyCode::Char('G') => f.selected = n.saturating_sub(1),
            KeyCode::PageUp => f.scroll = f.scroll.saturating_sub(PAGE),
            KeyCode::PageDown | KeyCode::Char(' ') => f.scroll = f.scroll.saturating_add(PAGE),
            KeyCode::Left => f.scroll = f.scroll.saturating_sub(1),
            KeyCode::Right => f.scroll = f.scroll.saturating_add(1),
            KeyCode::Char('c') => {
                let step = steps.get(f.selected.min(n.saturating_sub(1)));
                self.copy_curl(step, fx);
            }
            KeyCode::Char('y') => {
                if let Some(step) = steps.get(f.selected.min(n.saturating_sub(1))) {
                    let text = serde_json::to_string_pretty(&step_json(self, step)).unwrap_or_default();
                    self.copying(format!("the step's JSON ({} characters)", text.chars().count()));
                    fx.push(Effect::Copy(text));
                }
            }
            KeyCode::Char('x') => {
                let json = self.flow_json(&steps);
                fx.push(Effect::Tools(ToolEffect::Export { json }));
            }
            _ => return false,
        }
        if self.flow.selected != before {
            self.flow.scroll = 0;
        }
        true
    }

    /// Copies the request of the selected step's round trip as curl.
    fn copy_curl(&mut self, step: Option<&Step>, fx: &mut Vec<Effect>) {
        // A prompt step has no request of its own: use the first reply's.
        let steps = steps(self);
        let id = match step {
            Some(s) if s.kind == StepKind::Prompt => steps.iter().find(|s| s.kind == StepKind::Request).map(|s| s.id),
            Some(s) => Some(s.id),
            None => None,
        };
        let src = self.flow_source();
        let provider = src.target.provider.clone();
        match id.and_then(|id| src.request(id)).cloned() {
            Some(r) => {
                let key = src.target.key_shown.clone();
                self.copying(format!("the request as curl (the key is {key})"));
                fx.push(Effect::Tools(ToolEffect::CopyCurl { provider, api: r.api, body: Value::clone(&r.body) }));
            }
            None => self.flash_error("no request body was kept for this step"),
        }
    }

    /// The whole flow of the turn shown, for export.
    fn flow_json(&self, steps: &[Step]) -> Value {
        let list: Vec<Value> = steps
            .iter()
            .map(|s| {
                json!({"kind": format!("{:?}", s.kind).to_lowercase(), "title": s.title, "detail": s.detail,
                    "data": step_json(self, s)})
            })
            .collect();
        let target = self.flow_source().target;
        json!({
            "palaver_flow": 1,
            "provider": target.provider,
            "model": target.model,
            "api": target.api.name(),
            "steps": list,
        })
    }
}
