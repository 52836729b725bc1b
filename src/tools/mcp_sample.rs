//! Sampling: a server asking to use the conversation's model (`sampling/createMessage`).
//! Offered only to a server whose `[mcp.servers.NAME]` sets `allow_sampling = true`; another
//! is refused with [`super::live::SAMPLING_REFUSED`]. For an allowed server the request is
//! turned into a [`SampleRequest`] (palaver's own words: text parts, the rest summarised) and
//! handed to the session's [`Sampler`], which whoever runs the session sets: headless `--yes`
//! runs it on the run's model, the chat screen asks the user first. With no sampler it is
//! refused with [`NO_SAMPLER_REASON`]. Everything in a request is the server's words,
//! unsanitised: whoever shows it sanitises it.

#![allow(deprecated)] // Sampling is deprecated upstream (SEP-2577), and servers still ask for it.

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, Role, SamplingMessage, SamplingMessageContentBlock,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// Why an allowed server's request is refused where no one can approve it.
pub const NO_SAMPLER_REASON: &str = "palaver refused this sampling request: no one can approve it here \
     (a headless run samples for a server only with --yes)";

/// Who said a message of a sampling request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleRole {
    User,
    Assistant,
}

/// A sampling request in palaver's words (unsanitised).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The server's name in `config.toml`.
    pub server: String,
    /// The messages, text parts joined; other parts summarised (`[an image part, not sent]`).
    pub messages: Vec<(SampleRole, String)>,
    pub system: Option<String>,
    /// The most tokens the server wants back.
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// The server's model hints, in its order of preference (palaver runs its own model).
    pub hints: Vec<String>,
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    pub text: String,
    /// The model that answered (as the provider named it).
    pub model: String,
    /// The API's finish reason (`stop`, `length`, …), if it gave one.
    pub finish_reason: Option<String>,
}

/// The answer a sampler gives: the model's reply, or why there is none.
pub type SampleFuture = Pin<Box<dyn Future<Output = Result<Sampled, String>> + Send>>;

/// Runs a sampling request (after asking, where someone can be asked).
pub type Sampler = Arc<dyn Fn(SampleRequest) -> SampleFuture + Send + Sync>;

/// How long a request waits for the user's approval and the model before it is refused.
pub const SAMPLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Where a sampling request's answer is sent, until it is.
type AnswerSlot = Arc<Mutex<Option<tokio::sync::oneshot::Sender<Result<Sampled, String>>>>>;

/// The way back to a waiting sampling request; answered once.
#[derive(Clone)]
pub struct SampleReply(AnswerSlot);

impl SampleReply {
    /// Answers the request (a second answer is dropped).
    pub fn send(&self, answer: Result<Sampled, String>) {
        if let Some(tx) = self.0.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = tx.send(answer);
        }
    }
}

impl SampleReply {
    /// A reply no request waits for (tests, and a request that could not be asked).
    #[must_use]
    pub fn detached() -> Self {
        Self(Arc::default())
    }
}

impl PartialEq for SampleReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for SampleReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SampleReply")
    }
}

/// A sampler that hands each request to `ask` (the chat screen's modal) and waits for the
/// answer, up to [`SAMPLE_TIMEOUT`].
pub fn asking(ask: impl Fn(SampleRequest, SampleReply) + Send + Sync + 'static) -> Sampler {
    let ask = Arc::new(ask);
    Arc::new(move |req| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        ask(req, SampleReply(Arc::new(Mutex::new(Some(tx)))));
        Box::pin(async move {
            match tokio::time::timeout(SAMPLE_TIMEOUT, rx).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err("palaver refused this sampling request: it was closed without an answer".to_owned()),
                Err(_) => Err("palaver refused this sampling request: no answer within the time it waits".to_owned()),
            }
        })
    })
}

/// The sampler of a session, if it has one.
pub(super) type SamplerSlot = Arc<Mutex<Option<(String, Sampler)>>>;

impl super::McpClient {
    /// From now on, sampling requests of this server go to `sampler` (a server not allowed to
    /// sample is refused all the same).
    pub fn on_sample(&self, sampler: Sampler) {
        *self.handler.sampler.lock().unwrap_or_else(PoisonError::into_inner) = Some((self.name.clone(), sampler));
    }
}

/// The text of one part, or a summary of a part palaver does not send.
fn part_text(part: SamplingMessageContentBlock) -> String {
    match part {
        SamplingMessageContentBlock::Text(t) => t.text,
        SamplingMessageContentBlock::Image(_) => "[an image part, not sent]".to_owned(),
        SamplingMessageContentBlock::Audio(_) => "[an audio part, not sent]".to_owned(),
        SamplingMessageContentBlock::ToolUse(_) => "[a tool call part, not sent]".to_owned(),
        SamplingMessageContentBlock::ToolResult(_) => "[a tool result part, not sent]".to_owned(),
        _ => "[a part palaver does not know, not sent]".to_owned(),
    }
}

/// The request in palaver's words.
#[must_use]
pub fn request_of(server: &str, params: CreateMessageRequestParams) -> SampleRequest {
    let messages = params
        .messages
        .into_iter()
        .map(|m: SamplingMessage| {
            let role = if m.role == Role::Assistant { SampleRole::Assistant } else { SampleRole::User };
            let text: Vec<String> = m.content.into_vec().into_iter().map(part_text).collect();
            (role, text.join("\n"))
        })
        .collect();
    let hints =
        params.model_preferences.and_then(|p| p.hints).unwrap_or_default().into_iter().filter_map(|h| h.name).collect();
    SampleRequest {
        server: server.to_owned(),
        messages,
        system: params.system_prompt.filter(|s| !s.trim().is_empty()),
        max_tokens: params.max_tokens,
        temperature: params.temperature,
        hints,
    }
}

/// The MCP result of a reply: its text as the assistant's message, the model, and the stop
/// reason in MCP's words (`endTurn`, `maxTokens`, …; another finish reason as it came).
#[must_use]
pub fn result_of(s: Sampled) -> CreateMessageResult {
    let message = SamplingMessage::new(Role::Assistant, SamplingMessageContentBlock::text(s.text));
    let result = CreateMessageResult::new(message, s.model);
    match s.finish_reason.as_deref() {
        Some("stop" | "completed" | "end_turn") => result.with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN),
        Some("length" | "max_output_tokens" | "incomplete") => {
            result.with_stop_reason(CreateMessageResult::STOP_REASON_END_MAX_TOKEN)
        }
        Some("tool_calls") => result.with_stop_reason(CreateMessageResult::STOP_REASON_TOOL_USE),
        Some(other) => result.with_stop_reason(other),
        None => result,
    }
}

/// An error answer carrying `why` (the server can show it).
fn refused(why: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::new(ErrorCode(-1), why.to_owned(), None)
}

/// Answers `sampling/createMessage`: refused unless the server is allowed to sample and the
/// session has a sampler; else whatever the sampler answers.
pub(super) async fn answer(
    allowed: bool,
    slot: &SamplerSlot,
    budget: &super::flood::Budget,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, rmcp::ErrorData> {
    if !allowed {
        // A server must not spend the user's model (and money) or read the conversation
        // unasked: sampling is offered only where the config allows it.
        return Err(refused(super::live::SAMPLING_REFUSED));
    }
    // Counted before anyone is asked: past the budget no modal opens and no model runs.
    budget.sample().map_err(|why| refused(&why))?;
    let Some((server, sampler)) = slot.lock().unwrap_or_else(PoisonError::into_inner).clone() else {
        return Err(refused(NO_SAMPLER_REASON));
    };
    match sampler(request_of(&server, params)).await {
        Ok(s) => Ok(result_of(s)),
        Err(why) => Err(refused(&why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> CreateMessageRequestParams {
        serde_json::from_value(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Say hi"}},
                {"role": "assistant", "content": [{"type": "text", "text": "Hi"},
                    {"type": "image", "data": "aGk=", "mimeType": "image/png"}]}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 40,
            "modelPreferences": {"hints": [{"name": "claude-3"}, {"name": "gpt-4o"}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_request_becomes_palavers_words() {
        let r = request_of("ev", params());
        assert_eq!(r.server, "ev");
        assert_eq!(
            r.messages,
            [(SampleRole::User, "Say hi".into()), (SampleRole::Assistant, "Hi\n[an image part, not sent]".into())]
        );
        assert_eq!(r.system.as_deref(), Some("be brief"));
        assert_eq!(r.max_tokens, 40);
        assert_eq!(r.hints, ["claude-3", "gpt-4o"]);
    }

    #[test]
    fn a_reply_becomes_a_create_message_result() {
        let s =
            |f: Option<&str>| Sampled { text: "hello".into(), model: "m1".into(), finish_reason: f.map(Into::into) };
        let v = serde_json::to_value(result_of(s(Some("stop")))).unwrap();
        assert_eq!(
            v,
            json!({"model": "m1", "stopReason": "endTurn", "role": "assistant",
                   "content": {"type": "text", "text": "hello"}})
        );
        assert_eq!(result_of(s(Some("length"))).stop_reason.as_deref(), Some("maxTokens"));
        assert_eq!(result_of(s(None)).stop_reason, None);
    }

    #[test]
    fn sampling_is_offered_only_to_an_allowed_server() {
        use rmcp::ClientHandler as _;
        assert!(super::super::client_info(true).get_info().capabilities.sampling.is_some());
        let not = super::super::client_info(false).get_info().capabilities;
        assert!(not.sampling.is_none() && not.elicitation.is_some());
    }

    #[tokio::test]
    async fn refused_unless_allowed_and_someone_samples() {
        let slot = SamplerSlot::default();
        let budget = super::super::flood::Budget::default();
        let e = answer(false, &slot, &budget, params()).await.unwrap_err();
        assert_eq!(e.message, super::super::live::SAMPLING_REFUSED);
        let e = answer(true, &slot, &budget, params()).await.unwrap_err();
        assert_eq!(e.message, NO_SAMPLER_REASON);
        let sampler: Sampler = Arc::new(|r: SampleRequest| {
            Box::pin(async move {
                Ok(Sampled {
                    text: format!("{} said {}", r.server, r.messages[0].1),
                    model: "m".into(),
                    finish_reason: None,
                })
            })
        });
        *slot.lock().unwrap() = Some(("ev".into(), sampler));
        let r = answer(true, &slot, &budget, params()).await.unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap()["content"]["text"], "ev said Say hi");
        let e = answer(false, &slot, &budget, params()).await.unwrap_err();
        assert_eq!(e.message, super::super::live::SAMPLING_REFUSED, "a sampler does not make a server allowed");
    }
}
