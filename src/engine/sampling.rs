//! Runs an MCP server's sampling request on the conversation's provider and model: one
//! non-streamed request built by the same request builder as a turn (the server's messages,
//! its system prompt, its `maxTokens` capped by the model's own limit), folded into a reply
//! by the same reducer. Whoever calls it has the user's approval (the chat screen's modal,
//! headless `--yes`).

use super::message::{Message, Role};
use super::request::{RequestOptions, build_body};
use super::target::Target;
use super::usage::UsageView;
use crate::api::Api;
use crate::tools::mcp::sample::{SampleRequest, SampleRole, Sampled};
use serde_json::Value;

/// The most tokens a sampling request asks of a model whose output limit palaver does not know
/// (the catalogue has no `max_output` for it): a server's own `maxTokens` is never sent as is.
pub const SAMPLE_MAX_TOKENS_UNKNOWN: u64 = 4096;

/// The `max_tokens` sent for a server that asked `asked`: at most the model's output limit, or
/// [`SAMPLE_MAX_TOKENS_UNKNOWN`] when that is not known; and, when it was cut, the words that
/// say so.
#[must_use]
pub fn max_tokens(asked: u32, max_output: Option<u64>) -> (u64, Option<String>) {
    let asked = u64::from(asked).max(1);
    let (cap, whose) = match max_output.filter(|m| *m > 0) {
        Some(m) => (m, format!("the model's output limit, {m}")),
        None => (
            SAMPLE_MAX_TOKENS_UNKNOWN,
            format!("SAMPLE_MAX_TOKENS_UNKNOWN = {SAMPLE_MAX_TOKENS_UNKNOWN}: the model's output limit is not known"),
        ),
    };
    if asked <= cap {
        return (asked, None);
    }
    (cap, Some(format!("the server asked for {asked} tokens; palaver asks for {cap} ({whose})")))
}

/// The options a sampling request on `t` starts from: its model, usage asked for as the
/// profile says, the profile's extra fields.
#[must_use]
pub fn base_options(t: &Target) -> RequestOptions {
    RequestOptions {
        model: t.model.clone(),
        include_usage: t.include_usage,
        extra: t.request_extra.clone(),
        ..RequestOptions::default()
    }
}

/// The request body of a sampling request on `api` from `base` (see [`base_options`]);
/// `max_output` is the model's own limit.
#[must_use]
pub fn body(api: Api, base: RequestOptions, max_output: Option<u64>, req: &SampleRequest) -> Value {
    let messages: Vec<Message> = req
        .messages
        .iter()
        .map(|(role, text)| {
            let role = if *role == SampleRole::Assistant { Role::Assistant } else { Role::User };
            Message::with_text(role, text)
        })
        .collect();
    let opts = RequestOptions {
        stream: false,
        system: req.system.clone(),
        temperature: req.temperature.map(f64::from),
        max_tokens: Some(max_tokens(req.max_tokens, max_output).0),
        tools: Vec::new(),
        ..base
    };
    build_body(api, &messages, &opts)
}

/// What a sampling request cost and answered.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRun {
    pub sampled: Sampled,
    /// The reply's usage as the provider reported it (raw, for the usage totals).
    pub usage: Option<Value>,
}

impl SampleRun {
    /// The tokens it cost (prompt + completion), when the provider said.
    #[must_use]
    pub fn tokens(&self) -> Option<u64> {
        let v = UsageView::from_raw(self.usage.as_ref()?);
        v.total.or_else(|| Some(v.prompt? + v.completion?))
    }
}

/// Runs `req` on `t` without streaming.
///
/// # Errors
/// The HTTP client cannot start, or the request fails (the provider's message, redacted).
pub async fn run(t: &Target, max_output: Option<u64>, req: &SampleRequest) -> Result<SampleRun, String> {
    let http =
        crate::api::client::endpoint_client(&t.endpoint).map_err(|e| format!("cannot start the HTTP client: {e}"))?;
    let rx = super::turn::spawn_request(
        http,
        t.endpoint.clone(),
        t.api,
        std::sync::Arc::new(body(t.api, base_options(t), max_output, req).into()),
    );
    collect(rx, &t.model).await
}

/// Folds a sampling request's wire events into what it answered; `model` names it when the
/// provider does not.
///
/// # Errors
/// The request failed (the provider's message, redacted).
pub async fn collect(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<crate::api::client::WireEvent>,
    model: &str,
) -> Result<SampleRun, String> {
    let mut msg = Message::assistant_pending();
    let start = std::time::Instant::now();
    while let Some(ev) = rx.recv().await {
        let at = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        if super::turn::apply_wire(&mut msg, ev, at, &mut |_| {}) {
            break;
        }
    }
    if let Some(e) = &msg.error {
        return Err(format!("the model's request failed: {}", e.message));
    }
    let main = msg.main();
    let sampled = Sampled {
        text: main.content.clone(),
        model: msg.meta.model.clone().unwrap_or_else(|| model.to_owned()),
        finish_reason: main.finish_reason.clone(),
    };
    Ok(SampleRun { sampled, usage: msg.usage.clone() })
}

/// `MCP server `NAME` used MODEL for a sampling request (N tokens)`.
#[must_use]
pub fn notice(server: &str, run: &SampleRun) -> String {
    let tokens = run.tokens().map_or_else(|| "tokens not reported".to_owned(), |n| format!("{n} tokens"));
    format!("MCP server `{server}` used {} for a sampling request ({tokens})", run.sampled.model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(t: &Target, max_output: Option<u64>, req: &SampleRequest) -> Value {
        super::body(t.api, base_options(t), max_output, req)
    }

    fn target(api: Api) -> Target {
        crate::engine::target::test_target(api, "demo-model")
    }

    fn request() -> SampleRequest {
        SampleRequest {
            server: "ev".into(),
            messages: vec![(SampleRole::User, "hi".into()), (SampleRole::Assistant, "yes?".into())],
            system: Some("be brief".into()),
            max_tokens: 500,
            temperature: Some(0.5),
            hints: vec!["claude".into()],
        }
    }

    #[test]
    fn a_request_becomes_an_unstreamed_chat_body_capped_by_the_model() {
        let b = body(&target(Api::Chat), Some(100), &request());
        assert_eq!(b["model"], "demo-model", "the conversation's model, not the server's hint");
        assert_eq!(b["stream"], false);
        assert_eq!(b["max_tokens"], 100, "capped by the model's max_output");
        assert_eq!(b["temperature"], 0.5);
        assert_eq!(
            b["messages"],
            json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                   {"role": "assistant", "content": "yes?"}])
        );
        assert!(b.get("tools").is_none() && b.get("stream_options").is_none(), "{b}");
        assert_eq!(body(&target(Api::Chat), None, &request())["max_tokens"], 500);
    }

    #[test]
    fn max_tokens_is_clamped_to_the_model_or_the_default_and_said() {
        assert_eq!(max_tokens(500, Some(1000)), (500, None));
        let (n, said) = max_tokens(100_000_000, Some(16_384));
        assert_eq!(n, 16_384);
        assert!(said.unwrap().contains("asked for 100000000 tokens; palaver asks for 16384 (the model's output limit"));
        let (n, said) = max_tokens(100_000_000, None);
        assert_eq!(n, SAMPLE_MAX_TOKENS_UNKNOWN);
        assert!(said.unwrap().contains("SAMPLE_MAX_TOKENS_UNKNOWN = 4096"));
        let huge = SampleRequest { max_tokens: 100_000_000, ..request() };
        assert_eq!(body(&target(Api::Chat), None, &huge)["max_tokens"], 4096);
        assert_eq!(body(&target(Api::Responses), Some(0), &huge)["max_output_tokens"], 4096);
    }

    #[test]
    fn a_request_becomes_a_responses_body_too() {
        let b = body(&target(Api::Responses), None, &request());
        assert_eq!(b["stream"], false);
        assert_eq!(b["max_output_tokens"], 500);
        assert_eq!(b["instructions"], "be brief", "{b}");
    }

    #[test]
    fn tokens_are_the_total_or_the_sum() {
        let run = |u: Option<Value>| SampleRun {
            sampled: Sampled { text: String::new(), model: "m".into(), finish_reason: None },
            usage: u,
        };
        assert_eq!(run(Some(json!({"prompt_tokens": 5, "completion_tokens": 2}))).tokens(), Some(7));
        assert_eq!(run(Some(json!({"input_tokens": 5, "output_tokens": 2, "total_tokens": 9}))).tokens(), Some(9));
        assert_eq!(run(None).tokens(), None);
    }
}
