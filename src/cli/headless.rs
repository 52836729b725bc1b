//! The headless runner: `palaver -p`, stdin piping, `--json`, and `replay`. It consumes the
//! same engine events as the TUI and prints either the answer or the JSON Lines contract.

use super::args::Global;
use super::exit::{EXIT_INTERRUPTED, EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::history::Recorder;
use super::result::{event_line, result_line};
use super::stopped::Stopped;
use super::target::Target;
use crate::api::client::{WireEvent, endpoint_client};
use crate::api::event::StreamEvent;
use crate::api::{Api, Mapper, sse};
use crate::config::theme::Role;
use crate::engine::message::{Message, MessageStatus, ToolCall, ToolStatus};
use crate::engine::reducer::{self, Ending};
use crate::engine::request::build_body;
use crate::engine::target::TurnSettings;
use crate::engine::tool_loop::{DEFAULT_STEP_LIMIT, DEFAULT_TOOL_TIMEOUT, run_calls_until};
use crate::engine::turn::{apply_wire, spawn_request};
use crate::engine::turn_engine::{Decision, Next, TurnAccount, TurnPolicy, TurnStop, answers, offered, settle_unrun};
use crate::text::sanitize::sanitize;
use crate::tools::Registry;
use ratatui::style::Modifier;
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Where output goes: plain text or JSON Lines.
pub struct Printer {
    json: bool,
    /// Compare runs collect silently and print at the end.
    quiet: bool,
    /// Buffered and flushed once per network read, not once per delta.
    out: std::io::BufWriter<std::io::Stdout>,
    /// The reasoning being printed on stderr.
    reasoning: super::reasoning_out::ReasoningOut,
    /// Markdown rendered for a terminal (see `render.rs`); `None` writes the raw text.
    render: Option<super::render::TermRender>,
    /// The last safety line written per kind and choice: `--json` writes one only when it
    /// changes (providers repeat the same results on every chunk).
    safety: std::collections::HashMap<(bool, u32), String>,
    /// Told about each retry (attempt, wait in ms) instead of a line on stderr: a prompt-set
    /// run pauses the provider's queue and keeps its progress bar clean.
    retry_hook: Option<RetryHook>,
    /// Keys the run adds to the result line (`conversation_id`, `continued`).
    result_keys: serde_json::Map<String, serde_json::Value>,
    /// The configuration whose prices (else the catalogue's) give the turn's cost.
    pricing: Option<std::sync::Arc<crate::config::Config>>,
    /// `--schema`: the answer is not streamed as text but printed once, as JSON, when checked.
    structured: bool,
    /// The check of the answer against `--schema`, set before [`Printer::finish`].
    verdict: Option<crate::engine::structured::Verdict>,
}

/// See [`Printer::on_retry`].
pub type RetryHook = std::sync::Arc<dyn Fn(u32, u64) + Send + Sync>;

impl Printer {
    #[must_use]
    pub fn new(json: bool) -> Self {
        Self {
            json,
            quiet: false,
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            reasoning: super::reasoning_out::ReasoningOut::default(),
            render: None,
            safety: std::collections::HashMap::new(),
            retry_hook: None,
            result_keys: serde_json::Map::new(),
            pricing: None,
            structured: false,
            verdict: None,
        }
    }

    /// Prices the turn with `cfg` (its `[models]` prices, else the catalogue's): the result
    /// line gets `cost` and `cost_estimated`, the rendered footer the cost.
    pub fn pricing(&mut self, cfg: &crate::config::Config) {
        self.pricing = Some(std::sync::Arc::new(cfg.clone()));
    }

    /// The turn's cost and whether it is an estimate, when it has usage and a price.
    fn turn_cost(&self, model: &str, out: &TurnOutcome) -> Option<(f64, bool)> {
        let cfg = self.pricing.as_ref()?;
        let view = if out.account.requests > 0 {
            out.account.usage_view()?
        } else {
            crate::engine::usage::UsageView::from_raw(out.msg.usage.as_ref()?)
        };
        if !view.has_counts() {
            return None;
        }
        crate::engine::metrics::priced(cfg, model, out.msg.meta.model.as_deref(), &view)
    }

    /// `--schema`: the answer is printed once, as the JSON it holds, after it is checked.
    #[must_use]
    pub fn structured(mut self, on: bool) -> Self {
        self.structured = on;
        if on {
            self.render = None;
        }
        self
    }

    /// The check of the answer against the schema, for the result line and stdout.
    pub fn set_verdict(&mut self, verdict: Option<crate::engine::structured::Verdict>) {
        self.verdict = verdict;
    }

    /// Reports retries to `hook` instead of stderr.
    #[must_use]
    pub fn on_retry(mut self, hook: RetryHook) -> Self {
        self.retry_hook = Some(hook);
        self
    }

    /// Adds `key` to the result line (what the run knows beyond the turn: its conversation).
    pub fn result_key(&mut self, key: &str, value: serde_json::Value) {
        self.result_keys.insert(key.to_owned(), value);
    }

    /// Renders the answer with `render` (from `render::for_stdout`) instead of writing it raw.
    #[must_use]
    pub fn rendering(mut self, render: Option<super::render::TermRender>) -> Self {
        self.render = render;
        self
    }

    /// Prints what the renderer still holds of the current answer.
    fn flush_render(&mut self) {
        if let Some(r) = &mut self.render {
            r.finish(&mut self.out);
        }
    }

    /// A printer that prints nothing while streaming.
    #[must_use]
    pub fn quiet(json: bool) -> Self {
        Self { quiet: true, ..Self::new(json) }
    }

    /// Prints one domain event as it arrives.
    pub fn event(&mut self, ev: &StreamEvent) {
        if self.quiet {
            return;
        }
        if self.json {
            // Text deltas are nearly every line of a stream: write them without building a Value.
            let delta_line = match ev {
                StreamEvent::Text { choice, delta } => Some(("text", choice, delta)),
                StreamEvent::Reasoning { choice, delta } => Some(("reasoning", choice, delta)),
                StreamEvent::Refusal { choice, delta } => Some(("refusal", choice, delta)),
                _ => None,
            };
            if let Some((kind, choice, delta)) = delta_line {
                let _ = write!(self.out, "{{\"type\":\"{kind}\",\"choice\":{choice},\"delta\":");
                let _ = serde_json::to_writer(&mut self.out, delta);
                let _ = self.out.write_all(b"}\n");
            } else if let Some(line) = event_line(ev) {
                let key = match ev {
                    StreamEvent::PromptFilter(_) => Some((false, 0)),
                    StreamEvent::ContentFilter { choice, .. } => Some((true, *choice)),
                    _ => None,
                };
                if let Some(key) = key {
                    let text = line.to_string();
                    if self.safety.get(&key) == Some(&text) {
                        return;
                    }
                    self.safety.insert(key, text);
                }
                self.line(&line.to_string());
            }
            return;
        }
        match ev {
            // With a schema, stdout is the JSON alone, printed once it is checked.
            StreamEvent::Text { .. } | StreamEvent::Refusal { .. } if self.structured => {}
            StreamEvent::Text { choice: 0, delta } | StreamEvent::Refusal { choice: 0, delta } => {
                self.end_reasoning();
                match &mut self.render {
                    Some(r) => r.push(delta, &mut self.out),
                    None => {
                        let _ = self.out.write_all(delta.as_bytes());
                    }
                }
            }
            StreamEvent::Reasoning { choice: 0, delta } => self.reasoning(delta),
            _ => {}
        }
    }

    /// Reasoning goes to stderr so stdout stays the answer (see `reasoning_out`).
    fn reasoning(&mut self, delta: &str) {
        let _ = self.out.flush();
        self.reasoning.push(delta, self.render.as_ref());
    }

    /// Ends the reasoning being printed, if any, before the answer or anything else on stderr.
    fn end_reasoning(&mut self) {
        self.reasoning.end(self.render.as_ref());
    }

    pub fn line(&mut self, s: &str) {
        if self.quiet {
            return;
        }
        let _ = writeln!(self.out, "{s}");
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Prints a tool call's outcome.
    pub fn tool_result(&mut self, c: &ToolCall) {
        if self.quiet {
            return;
        }
        if self.json {
            let line = serde_json::json!({"type": "tool_result", "id": c.id, "name": c.name, "arguments": c.arguments,
                "status": c.status, "output": c.output, "duration_ms": c.duration_ms});
            self.line(&line.to_string());
        } else {
            self.end_reasoning();
            self.flush_render();
            let _ = self.out.flush();
            let out = c.output.as_deref().unwrap_or_default();
            let line = format!("[{} {}({}) → {:?}, {} bytes]", c.id, c.name, c.arguments, c.status, out.len());
            eprintln!("{}", sanitize(&line));
            if c.status == ToolStatus::Denied {
                // Why it did not run (no one could approve it, a path outside the workspace…).
                match out.strip_prefix(crate::engine::tool_loop::refusal_output("").as_str()) {
                    Some(why) => say!("{} was not run: {}", sanitize(&c.name), sanitize(why)),
                    // It ran, and what it returned was held back (it holds secrets).
                    None => say!("{} ran; its output was not sent: {}", sanitize(&c.name), sanitize(out)),
                }
            }
        }
    }

    /// Prints the end of a turn: the result line, or a newline and a stderr note on failure.
    /// What stopped a reply short (the token limit, the content filter) is always said: on
    /// stderr, in the footer of a rendered answer, and as the result line's `notice`.
    pub fn finish(&mut self, api: &str, provider: &str, model: &str, out: &TurnOutcome) {
        let msg = &out.msg;
        // A reply cut inside its tool calls already has the turn's notice, which says so.
        let stopped = Stopped::of(msg).filter(|_| out.account.stop != Some(TurnStop::CutCall));
        let stop_notice = stopped.map(|s| s.notice(msg));
        let notice = out.notice.as_deref().or(stop_notice.as_deref());
        let main = msg.main();
        self.end_reasoning();
        let cost = self.turn_cost(model, out);
        if self.json {
            let mut r = result_line(api, provider, model, msg, &out.calls);
            if let Some(obj) = r.as_object_mut() {
                if self.pricing.is_some() {
                    // Dollars at the configured price, else the catalogue's (`cost_estimated`).
                    obj.insert("cost".into(), serde_json::json!(cost.map(|c| c.0)));
                    obj.insert("cost_estimated".into(), serde_json::json!(cost.is_some_and(|c| c.1)));
                }
                if out.account.requests > 0 {
                    // The turn's usage: every request added up, each one's own kept.
                    obj.insert("usage".into(), out.account.usage().unwrap_or(serde_json::Value::Null));
                    obj.insert("turn".into(), out.account.summary());
                }
                if let Some(n) = notice {
                    obj.insert("notice".into(), serde_json::json!(n));
                }
                if out.account.stop == Some(TurnStop::Cancelled) {
                    obj.insert("finish_reason".into(), serde_json::json!("cancelled"));
                }
                if let Some(stored) = out.stored {
                    obj.insert("stored".into(), serde_json::json!(stored));
                }
                if !out.attachments.is_empty() {
                    obj.insert("attachments".into(), serde_json::Value::Array(out.attachments.clone()));
                }
                obj.extend(self.result_keys.clone());
                let tokens = crate::engine::logprobs::tokens(&main.logprobs);
                if !tokens.is_empty() {
                    // Added only when sent: the §2 fields stay exactly as they are.
                    obj.insert("logprobs".into(), serde_json::json!(tokens));
                    obj.insert("logprob_stats".into(), serde_json::json!(crate::engine::logprobs::stats(&tokens)));
                }
                if self.structured {
                    let v = self.verdict.as_ref();
                    obj.insert("output_json".into(), v.and_then(|v| v.value.clone()).unwrap_or_default());
                    obj.insert("schema".into(), v.map_or(serde_json::Value::Null, |v| serde_json::json!(v)));
                }
            }
            self.line(&r.to_string());
        } else if let Some(r) = &mut self.render {
            r.finish(&mut self.out);
            let _ = self.out.flush();
            let usage = if out.account.requests > 0 { out.account.usage() } else { msg.usage.clone() };
            let styled = r.styled() && std::io::stderr().is_terminal();
            let label = crate::engine::target::model_label(Some(model), msg.meta.model.as_deref());
            let mark = Stopped::of(msg).map(|s| {
                let text = format!("⚠ {}", s.short());
                if styled { r.paint(Role::Warning, Modifier::BOLD, &text) } else { text }
            });
            let cost = cost.map(|(c, e)| crate::engine::metrics::money_label(c, e));
            let footer = super::render::footer(&label, usage.as_ref(), Some(r.elapsed_ms()), mark.as_deref(), styled);
            let footer = match cost {
                Some(c) if styled => format!("{footer}\x1b[2m · {c}\x1b[0m"),
                Some(c) => format!("{footer} · {c}"),
                None => footer,
            };
            eprintln!("{footer}");
        } else if self.structured {
            // The JSON as the model wrote it (not re-serialised: its key order stays), else
            // whatever it said instead.
            let text = self.verdict.as_ref().and_then(|v| v.text.clone());
            let text = text
                .unwrap_or_else(|| if main.content.is_empty() { main.refusal.clone() } else { main.content.clone() });
            if !text.is_empty() {
                self.line(&text);
            }
        } else {
            if !main.content.is_empty() || !main.refusal.is_empty() {
                self.line("");
            }
            let _ = self.out.flush();
            for c in main.tool_calls.iter().filter(|c| matches!(c.status, ToolStatus::Skipped)) {
                eprintln!("{}", sanitize(&format!("[tool call {} {}({}) not run]", c.id, c.name, c.arguments)));
            }
        }
        // Every stderr line is sanitised: errors and notices quote what servers and tools sent.
        if let Some(n) = notice {
            say!("{}", sanitize(n));
        }
        let _ = self.out.flush();
        // A stopped reply's reason (the signal that ended the run) is the notice's already.
        if let Some(e) = msg.error.as_ref().filter(|_| msg.status != MessageStatus::Cancelled) {
            let status = e.status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
            say!("{}", sanitize(&format!("{} error: {status}{}", e.kind, e.message)));
        }
        if let Some(why) = self.verdict.as_ref().and_then(crate::engine::structured::Verdict::first_error) {
            say!("the answer does not follow the schema {why}");
        }
    }
}

/// The exit status for a finished reply: 4 when the content filter stopped it (DESIGN.md §2).
#[must_use]
pub fn exit_status(msg: &Message) -> u8 {
    match msg.status {
        MessageStatus::Cancelled => EXIT_INTERRUPTED,
        _ if msg.error.is_some() => EXIT_PROVIDER,
        _ => Stopped::of(msg).map_or(EXIT_OK, Stopped::exit),
    }
}

/// The prompt text: `-p` plus anything piped on stdin.
#[must_use]
pub fn prompt_text(prompt: Option<&str>, stdin: Option<String>) -> String {
    match (prompt, stdin.filter(|s| !s.trim().is_empty())) {
        (Some(p), Some(s)) => format!("{p}\n\n{s}"),
        (Some(p), None) => p.to_owned(),
        (None, Some(s)) => s,
        (None, None) => String::new(),
    }
}

/// The turn settings from the flags, for `t` (whose profile may turn tools on).
#[must_use]
pub fn settings(g: &Global, t: &Target) -> TurnSettings {
    TurnSettings {
        stream: !g.no_stream,
        system: g.system.clone(),
        temperature: g.temperature,
        max_tokens: g.max_tokens,
        reasoning_effort: g.reasoning_effort.map(|e| format!("{e:?}").to_lowercase()),
        tools: t.tool_mode(g.tools.map(Into::into)),
        yes: g.yes,
        detail: g.detail.map(|d| format!("{d:?}").to_lowercase()),
        // Checked before anything started (`cli::run`): a schema that fails here was refused there.
        schema: g.schema.as_deref().and_then(|s| super::schema_arg::resolve(s).ok()),
        logprobs: g.logprobs,
    }
}

/// What a turn produced: the final reply, every tool call of the turn in order, a notice when
/// the loop was cut short, and the turn's account (requests, rounds, usage, how it stopped).
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    pub msg: Message,
    pub calls: Vec<ToolCall>,
    pub notice: Option<String>,
    pub account: TurnAccount,
    /// Whether the conversation reached the store (`None`: not a stored run). The result line
    /// says `"stored": false` when it did not, so a script knows `--continue` will not find it.
    pub stored: Option<bool>,
    /// What was attached to the prompt (`--json` lists it: name, type, bytes, hash, size).
    pub attachments: Vec<serde_json::Value>,
}

/// Runs one prompt headless, through the tool loop; returns the exit status.
pub async fn run_prompt(g: &Global, t: &Target, cfg: &crate::config::Config, registry: &Registry, user: Message) -> u8 {
    super::interrupt::install();
    if g.compact && !g.continue_last && g.resume.is_none() {
        say!("--compact summarises the earlier turns of a reopened conversation: add --continue or --resume ID");
        return EXIT_USAGE;
    }
    let http = match endpoint_client(&t.endpoint) {
        Ok(h) => h,
        Err(e) => {
            say!("cannot start the HTTP client: {e}");
            return EXIT_PROVIDER;
        }
    };
    let sent: Vec<serde_json::Value> =
        user.attachments.iter().map(crate::engine::attachment::Attachment::summary_json).collect();
    let (mut rec, mut history) = match Recorder::begin(g, t, user).await {
        Ok(v) => v,
        Err(code) => return code,
    };
    let schema = settings(g, t).schema;
    let mut printer =
        Printer::new(g.json).rendering(super::render::for_stdout(g.render, g.json)).structured(schema.is_some());
    printer.pricing(cfg);
    printer.result_key("conversation_id", serde_json::json!(rec.conversation_id()));
    if let Some(c) = &t.continued {
        printer.result_key("continued", c.json());
    }
    if g.compact {
        let opts = settings(g, t).request_options(t, &t.model);
        if let Err(failed) = super::compacting::compact_first(t, cfg, &http, &mut history, &mut rec, g.json, opts).await
        {
            out_of_compaction(t, &mut rec, &mut printer, &failed);
            return EXIT_PROVIDER;
        }
    }
    let window = cfg.model_facts(&t.model).and_then(|f| f.context_window).filter(|w| *w > 0);
    super::compacting::warn_overflow(&history, g.system.as_deref(), window);
    let mut out = run_turn(g, t, registry, &http, &mut history, &mut rec, &mut printer).await;
    printer.result_key("context", super::compacting::context_json(&history, &out.msg, g.system.as_deref(), window));
    out.attachments = sent;
    // On disk before the result line, which says whether it got there.
    out.stored = Some(rec.sync());
    if out.stored == Some(false) {
        say!("this conversation was not stored (see above); --continue will not find this turn");
    }
    // Only a reply that arrived whole is checked: an error or Ctrl+C already has its status.
    let whole = out.msg.error.is_none() && out.account.stop != Some(TurnStop::Cancelled);
    let verdict = schema.filter(|_| whole).map(|s| s.check(&out.msg.main().content));
    let invalid = verdict.as_ref().is_some_and(|v| !v.valid);
    printer.set_verdict(verdict);
    printer.finish(t.api.name(), &t.provider, &t.model, &out);
    printer.flush();
    match (out.account.stop == Some(TurnStop::Cancelled), exit_status(&out.msg)) {
        (true, _) => EXIT_INTERRUPTED,
        (false, EXIT_OK) if invalid => super::exit::EXIT_CHECKS,
        (false, code) => code,
    }
}

/// Ends a run whose compaction failed: the failed summary's result line, the prompt not sent.
fn out_of_compaction(t: &Target, rec: &mut Recorder, printer: &mut Printer, failed: &Message) {
    let out = TurnOutcome {
        msg: failed.clone(),
        calls: Vec::new(),
        notice: Some(
            "the summary of the earlier turns failed, so the prompt was not sent (it is saved; run again \
             without --compact to send it as it is)"
                .to_owned(),
        ),
        account: TurnAccount::default(),
        stored: Some(rec.sync()),
        attachments: Vec::new(),
    };
    printer.finish(t.api.name(), &t.provider, &t.model, &out);
    printer.flush();
}

/// Runs a turn on `history` (which ends with the user's message), driving the turn engine as a
/// plain loop: stream a reply, let the engine decide its calls, run the approved ones, answer
/// them, ask again, until the engine says the turn is over. `history` grows with every
/// message; each is saved as it goes.
pub async fn run_turn(
    g: &Global,
    t: &Target,
    registry: &Registry,
    http: &reqwest::Client,
    history: &mut Vec<Message>,
    rec: &mut Recorder,
    printer: &mut Printer,
) -> TurnOutcome {
    let settings = settings(g, t);
    let policy = TurnPolicy { mode: settings.tools, yes: g.yes, step_limit: DEFAULT_STEP_LIMIT, interactive: false };
    let mut opts = settings.request_options(t, &t.model);
    opts.tools = offered(policy.mode, registry);
    let limits = t.endpoint.limits;
    let mut registry = registry.clone();
    registry.set_output_limit(limits.tool_output_bytes);
    registry.set_sandbox(t.sandbox.clone());
    // Where the sandbox cannot be had, say so before any command runs, never silently.
    if policy.mode != crate::engine::tool_loop::ToolMode::Off {
        if let Some(n) = crate::tools::sandbox::notice_once(&t.sandbox) {
            eprintln!("palaver: {}", sanitize(&n));
        }
    }
    let mut account = TurnAccount::default();
    let mut all_calls: Vec<ToolCall> = Vec::new();
    let mut stop = super::interrupt::stop();
    loop {
        // A server that said its tools changed (during the last round) is listed again.
        if relist_changed(&mut registry).await && policy.mode != crate::engine::tool_loop::ToolMode::Off {
            opts.tools = offered(policy.mode, &registry);
        }
        let registry = &registry;
        let body = build_body(t.api, history, &opts);
        let (mut msg, _) = stream_reply(http, t, body, g.json, printer, rec, history.len()).await;
        let data_dir = crate::config::Paths::from_env().data_dir;
        let (saved, notices) = crate::engine::images::save_generated_images(&mut msg, &data_dir);
        for n in notices {
            say!("{}", sanitize(&n));
        }
        dropped_images_notice(&msg);
        let decisions = match account.after_reply(&policy, &mut msg, registry, &|_| false) {
            Next::Stop { notice, stop } => {
                let notice = match stop {
                    TurnStop::Cancelled => Some(match super::interrupt::ended_by() {
                        Some(signal) => format!("stopped by {signal}; what arrived is kept"),
                        None => "stopped by the user (Ctrl+C); what arrived is kept".to_owned(),
                    }),
                    _ => notice,
                };
                if saved > 0 || !msg.main().tool_calls.is_empty() {
                    rec.save_all(history.len(), std::slice::from_ref(&msg));
                }
                all_calls.extend(msg.main().tool_calls.iter().cloned());
                return TurnOutcome { msg, calls: all_calls, notice, account, stored: None, attachments: Vec::new() };
            }
            Next::Settle(d) => d,
        };
        let runnable: Vec<usize> = (0..decisions.len()).filter(|&i| decisions[i] == Decision::Run).collect();
        let mut calls = msg.main().tool_calls.clone();
        let mut to_run: Vec<ToolCall> = runnable.iter().map(|&i| calls[i].clone()).collect();
        // Ctrl+C drops the running calls (their process groups end) and ends the turn.
        let round = limits.round_tool_output_bytes;
        // The images the calls return share the reply's image limits with what it generated.
        let images = &mut crate::engine::images::reply_image_budget(limits, &msg, None);
        let run = run_calls_until(registry, &mut to_run, DEFAULT_TOOL_TIMEOUT, round, images, stop.fired());
        let finished = if g.json && !printer.quiet {
            // MCP progress reports become `tool_progress` event lines, between the reply's
            // lines (flushed first) and the calls' `tool_result` lines.
            printer.flush();
            crate::tools::mcp::live::with_progress(std::sync::Arc::new(progress_line), run).await
        } else {
            run.await
        };
        for (&i, done) in runnable.iter().zip(to_run) {
            calls[i] = done;
        }
        msg.main_mut().tool_calls = calls;
        if !finished || stop.is_set() {
            // Every call is answered, so the stored conversation continues (`--continue`).
            settle_unrun(&mut msg, ToolStatus::Failed, "The user stopped this call (Ctrl+C) before it finished.");
            let first = history.len();
            let answers = answers(&msg);
            all_calls.extend(msg.main().tool_calls.iter().cloned());
            history.push(msg.clone());
            history.extend(answers);
            rec.save_all(first, &history[first..]);
            account.cancel();
            let notice = Some("stopped by the user (Ctrl+C) while tools ran; what finished is kept".to_owned());
            return TurnOutcome { msg, calls: all_calls, notice, account, stored: None, attachments: Vec::new() };
        }
        let first = history.len();
        for call in &msg.main().tool_calls {
            printer.tool_result(call);
        }
        let answers = answers(&msg);
        all_calls.extend(msg.main().tool_calls.iter().cloned());
        history.push(msg);
        history.extend(answers);
        rec.save_all(first, &history[first..]);
    }
}

/// Lists again the tools of every MCP server that said they changed, saying so on stderr;
/// whether any did.
async fn relist_changed(registry: &mut Registry) -> bool {
    use crate::tools::mcp::live::ListKind;
    let clients: Vec<_> = registry.mcp_clients().to_vec();
    let mut changed = false;
    for client in clients {
        if !client.take_list_changes().contains(&ListKind::Tools) {
            continue;
        }
        match client.relist(ListKind::Tools).await {
            Ok(listed) => {
                say!("MCP server `{}` changed its tools: {} now", sanitize(client.name()), listed.count);
                registry.replace_mcp_tools(client.name(), listed.tools.unwrap_or_default());
                changed = true;
            }
            Err(e) => say!(
                "MCP server `{}` changed its tools; listing them failed: {}",
                sanitize(client.name()),
                sanitize(&e)
            ),
        }
    }
    changed
}

/// Prints an MCP call's progress report as a `--json` event line (straight to stdout: it comes
/// from the MCP client's task while the printer waits for the calls).
fn progress_line(p: crate::tools::mcp::live::McpProgress) {
    use std::io::Write as _;
    let line = serde_json::json!({"type": "tool_progress", "id": p.call, "progress": p.progress,
        "total": p.total, "message": p.message});
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Streams one reply, printing as it goes. Returns the message and whether the user interrupted.
pub(super) async fn stream_reply(
    http: &reqwest::Client,
    t: &Target,
    body: serde_json::Value,
    json: bool,
    printer: &mut Printer,
    rec: &mut Recorder,
    pos: usize,
) -> (Message, bool) {
    let mut msg = Message::assistant_pending();
    (msg.model, msg.provider, msg.api) = (Some(t.model.clone()), Some(t.provider.clone()), Some(t.api.name().into()));
    msg.base_url = t.storable_base_url();
    msg.timing.started_at_ms = crate::store::ids::now_ms();
    let start = Instant::now();
    let mut rx = spawn_request(http.clone(), t.endpoint.clone(), t.api, body);
    let mut interrupted = false;
    // The run's one Ctrl+C listener (see `interrupt`): heard while events are handled, during
    // a retry wait and before the first byte alike.
    let mut stop = super::interrupt::stop();
    // One checkpoint timer, moved only when the save it waits for moves (arming a new one
    // after every read was a timer insert and removal per read).
    let mut checkpoint = std::pin::pin!(tokio::time::sleep(std::time::Duration::ZERO));
    let handle = |ev: WireEvent, msg: &mut Message, printer: &mut Printer| {
        if let (WireEvent::Retrying { attempt, wait_ms, .. }, Some(hook)) = (&ev, &printer.retry_hook) {
            hook(*attempt, *wait_ms);
        } else if let WireEvent::Retrying { attempt, wait_ms, reason } = &ev {
            say!("{}; retry {attempt} in {:.1} s", sanitize(reason), *wait_ms as f64 / 1000.0);
            if json {
                printer.line(
                    &serde_json::json!({"type": "retry", "attempt": attempt, "wait_ms": wait_ms, "reason": reason})
                        .to_string(),
                );
            }
        }
        let now = start.elapsed().as_millis() as u64;
        apply_wire(msg, ev, now, &mut |e| printer.event(e))
    };
    loop {
        if rec.is_dirty() {
            let due = tokio::time::Instant::from_std(rec.save_due());
            if checkpoint.deadline() != due {
                checkpoint.as_mut().reset(due);
            }
        }
        tokio::select! {
            biased;
            () = stop.fired() => {
                interrupted = true;
                break;
            }
            ev = rx.recv() => {
                let Some(ev) = ev else { break };
                let mut done = handle(ev, &mut msg, printer);
                // Whatever else already arrived goes out with it: one write per burst, not per delta.
                while !done {
                    let Ok(ev) = rx.try_recv() else { break };
                    done = handle(ev, &mut msg, printer);
                }
                printer.flush();
                rec.streaming(pos, &mut msg);
                if done {
                    break;
                }
            }
            // A reply that stopped changing is still saved within the pacing interval.
            () = &mut checkpoint, if rec.is_dirty() => rec.streaming(pos, &mut msg),
        }
    }
    drop(rx);
    let now = start.elapsed().as_millis() as u64;
    if interrupted {
        reducer::finish(&mut msg, Ending::Cancelled, now);
        if let Some(signal) = super::interrupt::ended_by() {
            msg.error = Some(reducer::signal_reason(signal));
        }
    } else if msg.is_live() {
        reducer::finish(&mut msg, Ending::Eof, now);
    }
    rec.done(pos, &msg);
    (msg, interrupted)
}

/// `palaver replay FILE`: feeds a recorded body through the engine and prints as `-p` does.
pub fn replay(g: &Global, cfg: &crate::config::Config, file: &std::path::Path, api: Option<Api>) -> u8 {
    let body = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            say!("cannot read {}: {e}", file.display());
            return EXIT_USAGE;
        }
    };
    let api = api.unwrap_or_else(|| guess_api(&body));
    let mut printer = Printer::new(g.json).rendering(super::render::for_stdout(g.render, g.json));
    printer.pricing(cfg);
    let mut msg = Message::assistant_pending();
    let mut mapper = Mapper::new(api);
    let mut events = Vec::new();
    for ev in sse::decode_all(&body) {
        mapper.map(&ev.event, ev.data.as_bytes(), &mut events);
        reducer::record_frame(&mut msg, 0, ev.event, ev.data);
    }
    for e in events {
        printer.event(&e);
        reducer::apply(&mut msg, e, 0);
    }
    reducer::finish(&mut msg, Ending::Eof, 0);
    let calls = msg.main().tool_calls.clone();
    let out = TurnOutcome {
        msg,
        calls,
        notice: None,
        account: TurnAccount::default(),
        stored: None,
        attachments: Vec::new(),
    };
    printer.finish(api.name(), "replay", "replay", &out);
    printer.flush();
    exit_status(&out.msg)
}

/// A Responses stream names its events `response.*`; anything else is read as chat.
#[must_use]
pub fn guess_api(body: &[u8]) -> Api {
    let head = &body[..body.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    if text.contains("\"type\":\"response.") || text.contains("event: response.") { Api::Responses } else { Api::Chat }
}

/// Says on stderr how many generated images the reply's image limits dropped, and why.
fn dropped_images_notice(msg: &Message) {
    let mut why = msg.item_notes.values().filter_map(|n| n.get("dropped").and_then(serde_json::Value::as_str));
    if let Some(first) = why.next() {
        let n = 1 + why.count();
        eprintln!("palaver: {n} generated image{} not kept: {}", if n == 1 { "" } else { "s" }, sanitize(first));
    }
}
