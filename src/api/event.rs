//! The one domain stream both mappers produce. The conversation reducer consumes only this,
//! so a reply is built the same way whichever API carried it.

use serde_json::Value;

/// Facts about the response as a whole; a mapper sends one whenever it learns something new.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ResponseMeta {
    pub id: Option<String>,
    pub model: Option<String>,
    pub created: Option<i64>,
    pub system_fingerprint: Option<String>,
    pub service_tier: Option<String>,
}

/// An error reported by the provider, over HTTP or inside the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    /// HTTP status when the error came with one.
    pub status: Option<u16>,
    pub message: String,
    pub kind: Option<String>,
    pub code: Option<String>,
    pub param: Option<String>,
    /// The error body as sent (JSON, or a string for non-JSON bodies).
    pub body: Value,
}

/// A piece of streamed text. Nearly every event of a stream is one, a token or a few bytes
/// long: held inline up to 24 bytes, so a delta costs no allocation.
pub type Delta = compact_str::CompactString;

/// A tool-call fragment for an already resolved slot; `id`, `name` only when newly known.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFragment {
    pub choice: u32,
    pub slot: u32,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
    /// Provider extras on the call (e.g. Gemini's `extra_content`) to send back next turn.
    pub extra: Option<Value>,
    /// What kind of call: `None` is a function call; Responses items name theirs
    /// (`custom`, `shell`, `local_shell`, `apply_patch`, `mcp_approval`).
    pub kind: Option<String>,
    /// The call's `index` on the wire, when newly known: calls are ordered by it at the end,
    /// whatever order their first fragments arrived in.
    pub index: Option<u32>,
}

/// A normalized streaming event.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Response id, model, fingerprint and the like (boxed, as `ToolCall`).
    Meta(Box<ResponseMeta>),
    /// Assistant text for a choice.
    Text { choice: u32, delta: Delta },
    /// Reasoning text (chat `reasoning_content`/`reasoning`, Responses summaries and reasoning text).
    Reasoning { choice: u32, delta: Delta },
    /// Refusal text, distinct from content.
    Refusal { choice: u32, delta: Delta },
    /// A tool-call fragment for an already resolved slot (boxed: it is rare, and the largest
    /// event; every text delta would otherwise be moved at its size).
    ToolCall(Box<CallFragment>),
    /// The complete arguments of a call, replacing what the fragments built (Responses `.done`).
    ToolCallArguments { choice: u32, slot: u32, arguments: String },
    /// Usage as sent; the last one wins.
    Usage(Value),
    /// `prompt_filter_results` (or legacy `prompt_annotations`) as sent.
    PromptFilter(Value),
    /// One chunk's `content_filter_results` for a choice; the reducer merges them.
    ContentFilter { choice: u32, results: Value },
    /// Async-filter offsets and other per-choice annotations kept for the inspector.
    FilterOffsets { choice: u32, value: Value },
    /// Token logprobs of a chunk.
    Logprobs { choice: u32, value: Value },
    /// Message annotations (url citations and the like).
    Annotation { choice: u32, value: Value },
    /// A finish reason; the last non-empty one wins.
    Finish { choice: u32, reason: String },
    /// A Responses API output item as added (`done == false`) or finished.
    Item { index: u32, item: Value, done: bool },
    /// A live change to an output item between `added` and `done` (hosted tool progress).
    ItemUpdate { index: u32, update: ItemUpdate },
    /// An error frame inside a 200 stream (boxed, as `ToolCall`).
    Error(Box<ProviderError>),
    /// A payload or event type palaver does not know; kept raw, never fatal.
    Unknown { event: String, raw: Value },
    /// A payload that was not valid JSON; the reply is marked damaged but reading goes on.
    Malformed { data: String, reason: String },
    /// The provider signalled the end (`[DONE]` or a terminal Responses event).
    End,
}

/// How a streaming event changes an output item.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemUpdate {
    /// `status` becomes this (in_progress, searching, interpreting, generating, completed, failed…).
    Status(String),
    /// A string field grows (code, arguments, input).
    Append { field: String, delta: String },
    /// A field is set to its final value.
    Set { field: String, value: Value },
    /// Something palaver counted about the item (partial images); kept beside the item, never
    /// sent back to the provider, and not replaced when the final item arrives.
    Note { field: String, value: Value },
}

/// An error as kept on a message (serialisable form of `ProviderError`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ErrorInfo {
    pub status: Option<u16>,
    pub message: String,
    /// What failed in palaver's terms: http, stream, connect, timeout, body, interrupted…
    pub kind: String,
    pub body: Value,
}

impl ErrorInfo {
    #[must_use]
    pub fn from_provider(e: &ProviderError, kind: &str) -> Self {
        Self { status: e.status, message: e.message.clone(), kind: kind.to_owned(), body: e.body.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_small_enough_to_move_in_registers() {
        // Every text delta is moved a few times on its way from the wire to the screen: the
        // rare large variants are boxed so that a delta is not moved at their size.
        let size = std::mem::size_of::<StreamEvent>();
        assert!(size <= 72, "StreamEvent is {size} bytes");
    }
}
