//! Cells through a batch API, the pure part: the request line a cell becomes (one reply, no
//! tool loop: a batch cannot run tools between requests), its `custom_id`, and the stored row
//! an output or error line becomes, priced at the batch discount. Sending, polling and storing
//! are in `batch.rs`.

use super::cell::SchemaOf;
use crate::api::Api;
use crate::api::batch::BatchError;
use crate::config::Config;
use crate::engine::evals::expect::Expect;
use crate::engine::message::Message;
use crate::engine::metrics::{ReplyMetrics, priced};
use crate::engine::reducer::{self, Ending};
use crate::engine::request::build_body;
use crate::engine::target::{Target, TurnSettings};
use crate::engine::usage::UsageView;
use crate::store::runs::{CellRow, PromptRow};
use serde_json::{Value, json};

/// A cell's `custom_id`: its prompt and model indexes, and its sample after them when it is
/// not the first (so the ids of batches sent before samples were still read).
#[must_use]
pub fn cell_id(prompt_idx: u32, model_idx: u32, sample: u32) -> String {
    match sample {
        0 => format!("p{prompt_idx}-m{model_idx}"),
        s => format!("p{prompt_idx}-m{model_idx}-s{s}"),
    }
}

/// The prompt and model indexes and the sample of a `custom_id` palaver wrote.
#[must_use]
pub fn parse_cell_id(id: &str) -> Option<(u32, u32, u32)> {
    let (p, rest) = id.strip_prefix('p')?.split_once("-m")?;
    let (m, s) = match rest.split_once("-s") {
        Some((m, s)) => (m, s.parse().ok()?),
        None => (rest, 0),
    };
    Some((p.parse().ok()?, m.parse().ok()?, s))
}

/// The request body of one cell: the prompt (with its attachments, read now), the run's
/// settings, the prompt's own system text and the schema its check asks for; never streamed.
///
/// # Errors
/// An attachment that cannot be read or that this provider does not take.
pub fn request_body(
    t: &Target,
    settings: &TurnSettings,
    schema_of: SchemaOf,
    prompt: &PromptRow,
    expect: Option<&Expect>,
) -> Result<Value, String> {
    let mut user = Message::user(&prompt.prompt);
    if !prompt.attach.is_empty() {
        user.attachments = crate::engine::attach_load::load_all(&prompt.attach, |_| None, &t.attachments, t.api)?;
    }
    let settings = super::cell::settings_for(settings, prompt, expect, schema_of);
    let mut opts = settings.request_options(t, &t.model);
    opts.stream = false;
    opts.tools = Vec::new();
    Ok(build_body(t.api, std::slice::from_ref(&user), &opts))
}

/// What a stored row needs to know of its cell.
pub struct CellFacts<'a> {
    pub cfg: &'a Config,
    pub target: &'a Target,
    pub prompt: &'a PromptRow,
    pub expect: Option<&'a Expect>,
    pub model_idx: u32,
    /// The batch API's discount (0.5: half price).
    pub discount: f64,
}

impl CellFacts<'_> {
    fn empty_row(&self) -> CellRow {
        CellRow {
            prompt_idx: self.prompt.idx,
            model_idx: self.model_idx,
            model: self.target.model.clone(),
            provider: self.target.provider.clone(),
            finished_at: crate::store::ids::now_ms(),
            ..CellRow::default()
        }
    }
}

/// The reply a non-streamed response body holds, through the same mapper and reducer a
/// streamed one goes through.
#[must_use]
pub fn reply_of(api: Api, body: &Value) -> Message {
    let mut msg = Message::assistant_pending();
    for e in crate::api::map_full_response(api, body) {
        reducer::apply(&mut msg, e, 0);
    }
    reducer::finish(&mut msg, Ending::Eof, 0);
    msg
}

/// The row of a cell whose line came back (output file, or an error line).
#[must_use]
pub fn row_of(f: &CellFacts<'_>, outcome: Result<&Value, &BatchError>) -> CellRow {
    let mut row = f.empty_row();
    let body = match outcome {
        Ok(body) => body,
        Err(e) => {
            row.error = Some(json!({"kind": "batch", "status": e.status, "message": e.message}));
            row.finish_reason = Some("error".into());
            return row;
        }
    };
    let t = f.target;
    let msg = reply_of(t.api, body);
    let main = msg.main();
    let view = msg.usage.as_ref().map(UsageView::from_raw).unwrap_or_default();
    let metrics = ReplyMetrics::of(&msg, f.cfg, &t.model);
    row.ok = msg.error.is_none();
    row.text.clone_from(&main.content);
    if !main.refusal.is_empty() && row.text.is_empty() {
        row.text.clone_from(&main.refusal);
    }
    row.reasoning.clone_from(&main.reasoning);
    row.prompt_tokens = view.prompt;
    row.completion_tokens = view.completion;
    // The batch API's price: the listed one less its discount.
    row.cost = priced(f.cfg, &t.model, msg.meta.model.as_deref(), &view).map(|c| c.0 * (1.0 - f.discount));
    row.usage.clone_from(&msg.usage);
    row.finish_reason = Some(main.finish_reason.clone().unwrap_or_else(|| "error".into()));
    row.prompt_filter.clone_from(&msg.prompt_filter);
    row.content_filter = main.content_filter.clone().map(Value::Object);
    row.safety_flag = metrics.safety_flag;
    if let Some(e) = &msg.error {
        row.error = Some(json!({"kind": e.kind, "status": e.status, "message": e.message}));
    }
    if let (Some(expect), true) = (f.expect, row.ok) {
        // A batch line has a cost but no duration (`max_latency_ms` is refused up front).
        let facts = crate::engine::evals::expect::Facts {
            cost: row.cost,
            latency_ms: None,
            finish_reason: row.finish_reason.as_deref(),
            refusal: !main.refusal.is_empty(),
            perplexity: crate::engine::logprobs::stats_of(&main.logprobs).map(|s| s.perplexity),
            tool_calls: row.tool_calls.as_ref(),
        };
        row.checks = serde_json::to_value(expect.run_with(&row.text, facts)).ok();
    }
    row
}

/// The row of a cell its batch ended without answering (the whole batch failed validation,
/// or could not be sent): failed, with why.
#[must_use]
pub fn failed_row(f: &CellFacts<'_>, message: &str) -> CellRow {
    let mut row = f.empty_row();
    row.error = Some(json!({"kind": "batch", "message": message}));
    row.finish_reason = Some("error".into());
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        crate::engine::target::test_target(Api::Chat, "demo")
    }

    #[test]
    fn cell_ids_round_trip_and_foreign_ids_do_not_parse() {
        assert_eq!(parse_cell_id(&cell_id(12, 3, 0)), Some((12, 3, 0)));
        assert_eq!(cell_id(12, 3, 0), "p12-m3", "a first sample's id is as before samples were");
        assert_eq!(parse_cell_id(&cell_id(12, 3, 4)), Some((12, 3, 4)));
        for bad in ["", "p1", "x1-m2", "p1-mx", "p-1-m2", "p1-m2-sx", "request-1"] {
            assert_eq!(parse_cell_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_cells_line_is_one_unstreamed_request_with_its_own_system_text() {
        let t = target();
        let settings = TurnSettings { system: Some("run-wide".into()), stream: true, ..TurnSettings::default() };
        let prompt = PromptRow { idx: 0, prompt: "hi".into(), system: Some("mine".into()), ..PromptRow::default() };
        let body = request_body(&t, &settings, |_| None, &prompt, None).unwrap();
        assert_eq!(body["model"], "demo");
        assert_ne!(body["stream"], true);
        assert!(body.get("tools").is_none());
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "mine"}));
        assert_eq!(body["messages"][1]["content"], "hi");
    }

    #[test]
    fn an_answer_becomes_a_row_with_usage_and_an_error_line_a_failed_row() {
        let t = target();
        let cfg =
            Config::parse("[models.demo]\nprice = { input = 1.0, output = 2.0 }\n", std::path::Path::new("t")).unwrap();
        let prompt = PromptRow { idx: 4, prompt: "hi".into(), ..PromptRow::default() };
        let facts = CellFacts { cfg: &cfg, target: &t, prompt: &prompt, expect: None, model_idx: 1, discount: 0.5 };
        let body = json!({"id": "c", "object": "chat.completion", "model": "demo", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
        let row = row_of(&facts, Ok(&body));
        assert!(row.ok);
        assert_eq!((row.prompt_idx, row.model_idx, row.text.as_str()), (4, 1, "Hello"));
        assert_eq!((row.prompt_tokens, row.completion_tokens), (Some(3), Some(2)));
        assert_eq!(row.finish_reason.as_deref(), Some("stop"));
        // 3 tokens in at $1/M and 2 out at $2/M, at half price.
        let cost = row.cost.unwrap();
        assert!((cost - 3.5e-6).abs() < 1e-12, "{cost}");
        let err = BatchError::http(Some(400), "bad line".into());
        let failed = row_of(&facts, Err(&err));
        assert!(!failed.ok);
        assert_eq!(failed.error.as_ref().and_then(|e| e.get("message")), Some(&json!("bad line")));
    }
}
