//! The conversation model: messages with their choices, tool calls, usage, safety results,
//! timings and raw frames. Pure data; the reducer in `reducer.rs` is the only thing that grows it.

pub use crate::api::event::ErrorInfo;
use crate::api::event::ResponseMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    #[default]
    Complete,
    /// Request sent, nothing arrived yet.
    Waiting,
    Streaming,
    /// The user stopped it; what arrived is kept.
    Cancelled,
    /// The stream ended without a finish (dropped connection, crash); what arrived is kept.
    Interrupted,
    /// The provider reported an error; what arrived is kept.
    Failed,
}

/// Lifecycle of a tool call as the user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Arguments still streaming.
    #[default]
    Streaming,
    /// Complete, not yet run.
    Pending,
    AwaitingApproval,
    Running,
    Done,
    Failed,
    Denied,
    /// Not run because tools are off (`--tools none`).
    Skipped,
}

impl ToolStatus {
    /// The mark and the words a user reads for this state: ("✓", "done").
    #[must_use]
    pub fn mark(&self) -> (&'static str, &'static str) {
        match self {
            Self::Streaming => ("…", "arguments streaming"),
            Self::Pending => ("○", "not run"),
            Self::AwaitingApproval => ("?", "waiting for approval"),
            Self::Running => ("◐", "running"),
            Self::Done => ("✓", "done"),
            Self::Failed => ("✗", "failed"),
            Self::Denied => ("⊘", "denied"),
            Self::Skipped => ("-", "not run"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments text as streamed (a JSON string, possibly invalid).
    pub arguments: String,
    pub output: Option<String>,
    pub status: ToolStatus,
    pub duration_ms: Option<u64>,
    /// Empty for a function call; else the Responses item kind (`custom`, `shell`,
    /// `local_shell`, `apply_patch`, `mcp_approval`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Provider extras to send back with the call next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    /// The call's `index` on the wire (chat); calls are ordered by it when the reply ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Images the tool returned (MCP image content); bytes kept by hash in the store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::attachment::Attachment>,
}

/// One choice of a reply (index 0 is the one a user reads; n > 1 keeps the others).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub index: u32,
    pub content: String,
    pub reasoning: String,
    pub refusal: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    /// Completion filter results merged across chunks: flags OR-ed, highest severity kept.
    pub content_filter: Option<Map<String, Value>>,
    /// Async-filter offsets, vLLM `stop_reason` and similar per-choice annotations, as sent.
    pub filter_notes: Vec<Value>,
    pub logprobs: Vec<Value>,
    pub annotations: Vec<Value>,
}

/// Timings measured by palaver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Wall clock when the request went out (unix ms).
    pub started_at_ms: u64,
    pub ttft_ms: Option<u64>,
    pub total_ms: Option<u64>,
    /// Count of text/reasoning deltas, for tokens-per-second when usage is absent.
    pub deltas: u64,
}

/// A raw wire frame kept for the inspector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawFrame {
    pub at_ms: u64,
    pub event: String,
    pub data: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: u64,
    /// Bumped on every change; the render cache keys on it.
    pub revision: u64,
    pub role: Option<Role>,
    pub status: MessageStatus,
    pub choices: Vec<Choice>,
    /// For `role: tool` messages, the call this answers.
    pub tool_call_id: Option<String>,
    /// For `role: tool` messages, the kind of call answered (see `ToolCall::kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_kind: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub api: Option<String>,
    /// The base URL the reply was asked from, secrets stripped (`target::storable_url`); none
    /// for the embedded demo. `--continue` goes back there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    pub meta: ResponseMeta,
    /// Usage exactly as the provider sent it (the last one).
    pub usage: Option<Value>,
    pub prompt_filter: Option<Value>,
    /// Responses API output items in order, as finally sent.
    pub items: Vec<Value>,
    /// What palaver noted about items by index (partial image counts); never sent back.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub item_notes: std::collections::BTreeMap<u32, Map<String, Value>>,
    pub error: Option<ErrorInfo>,
    /// The reply contained frames that were not valid JSON.
    pub damaged: Vec<String>,
    pub unknown: Vec<Value>,
    pub timing: Timing,
    /// HTTP status and response headers (sensitive ones removed) of the reply.
    pub http_status: Option<u16>,
    pub response_headers: Vec<(String, String)>,
    pub frames: Vec<RawFrame>,
    /// Bytes held in `frames`, so the budget check costs nothing per frame.
    #[serde(default)]
    pub frames_bytes: usize,
    pub frames_dropped: u64,
    /// Files and images sent with this (user) message; their bytes are kept by hash in the store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<super::attachment::Attachment>,
    /// Set on a reply that summarises the turns before it (`/compact`): once it finished well,
    /// requests send it in their place (see `compact.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<super::compact::Compaction>,
}

impl Message {
    #[must_use]
    pub fn user(text: &str) -> Self {
        Self::with_text(Role::User, text)
    }

    #[must_use]
    pub fn system(text: &str) -> Self {
        Self::with_text(Role::System, text)
    }

    #[must_use]
    pub fn with_text(role: Role, text: &str) -> Self {
        let mut m = Self { role: Some(role), ..Self::default() };
        m.main_mut().content = text.to_owned();
        m
    }

    /// A tool result message answering `call_id`.
    #[must_use]
    pub fn tool_result(call_id: &str, output: &str) -> Self {
        let mut m = Self::with_text(Role::Tool, output);
        m.tool_call_id = Some(call_id.to_owned());
        m
    }

    /// The tool result message answering `call`, with its output (or refusal) and kind.
    #[must_use]
    pub fn answer_to(call: &ToolCall) -> Self {
        let mut m = Self::tool_result(&call.id, call.output.as_deref().unwrap_or_default());
        m.tool_kind = Some(call.kind.clone()).filter(|k| !k.is_empty());
        m.attachments.clone_from(&call.images);
        m
    }

    /// An empty assistant reply about to stream.
    #[must_use]
    pub fn assistant_pending() -> Self {
        Self { role: Some(Role::Assistant), status: MessageStatus::Waiting, ..Self::default() }
    }

    #[must_use]
    pub fn role(&self) -> Role {
        self.role.unwrap_or(Role::Assistant)
    }

    /// Choice 0, the one a user reads.
    #[must_use]
    pub fn main(&self) -> &Choice {
        static EMPTY: std::sync::OnceLock<Choice> = std::sync::OnceLock::new();
        self.choices.first().unwrap_or_else(|| EMPTY.get_or_init(Choice::default))
    }

    pub fn main_mut(&mut self) -> &mut Choice {
        self.choice_mut(0)
    }

    pub fn choice_mut(&mut self, index: u32) -> &mut Choice {
        let pos = match self.choices.iter().position(|c| c.index == index) {
            Some(p) => p,
            None => {
                self.choices.push(Choice { index, ..Choice::default() });
                self.choices.sort_by_key(|c| c.index);
                self.choices.iter().position(|c| c.index == index).unwrap_or(0)
            }
        };
        &mut self.choices[pos]
    }

    #[must_use]
    pub fn text(&self) -> &str {
        &self.main().content
    }

    /// Whether any of a reply arrived: text, reasoning, a refusal, a tool call, an output item.
    #[must_use]
    pub fn arrived_any(&self) -> bool {
        !self.items.is_empty()
            || self.choices.iter().any(|c| {
                !(c.content.is_empty() && c.reasoning.is_empty() && c.refusal.is_empty() && c.tool_calls.is_empty())
            })
    }

    /// What stopping this reply kept, in the words every face uses: a cancel before anything
    /// arrived has nothing to keep, and must not say it kept a partial reply.
    #[must_use]
    pub fn kept_when_stopped(&self) -> &'static str {
        if self.arrived_any() { "what arrived is kept" } else { "nothing had arrived, so there is nothing to keep" }
    }

    /// Every attachment the message holds: its own, then each tool call's images, in order.
    pub fn all_attachments_mut(&mut self) -> impl Iterator<Item = &mut super::attachment::Attachment> {
        let calls = self.choices.iter_mut().flat_map(|c| c.tool_calls.iter_mut().flat_map(|t| t.images.iter_mut()));
        self.attachments.iter_mut().chain(calls)
    }

    /// Every attachment the message holds, in the order of [`Message::all_attachments_mut`].
    pub fn all_attachments(&self) -> impl Iterator<Item = &super::attachment::Attachment> {
        let calls = self.choices.iter().flat_map(|c| c.tool_calls.iter().flat_map(|t| t.images.iter()));
        self.attachments.iter().chain(calls)
    }

    /// Whether the turn is still in flight.
    #[must_use]
    pub fn is_live(&self) -> bool {
        matches!(self.status, MessageStatus::Waiting | MessageStatus::Streaming)
    }
}

/// A conversation: an ordered list of messages plus its settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: Option<String>,
    pub title: Option<String>,
    pub messages: Vec<Message>,
    next_id: u64,
}

impl Conversation {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message, giving it a fresh id; returns its position.
    pub fn push(&mut self, mut msg: Message) -> usize {
        self.next_id += 1;
        msg.id = self.next_id;
        self.messages.push(msg);
        self.messages.len() - 1
    }

    #[must_use]
    pub fn last_assistant(&self) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.role() == Role::Assistant)
    }
}
