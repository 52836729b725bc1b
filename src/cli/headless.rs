//! The headless runner: `palaver -p`, stdin piping, `--json`, and `replay`. It consumes the
//! same engine events as the TUI and prints either the answer or the JSON Lines contract.

use super::args::Global;
use super::exit::{EXIT_INTERRUPTED, EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::result::{event_line, result_line};
use super::stopped::Stopped;
use super::target::Target;
use crate::api::client::endpoint_client;
use crate::api::event::StreamEvent;
use crate::api::{Api, Mapper, sse};
use crate::config::theme::Role;
use crate::engine::message::{Message, MessageStatus, ToolCall, ToolStatus};
use crate::engine::reducer::{self, Ending};
use crate::engine::target::TurnSettings;
use crate::engine::turn_engine::{TurnAccount, TurnStop};
use crate::runs::recorder::{Recorder, Refused, Reopen};
use crate::runs::turn::{Turn, run_turn};
use crate::text::sanitize::sanitize;
use crate::tools::Registry;
use ratatui::style::Modifier;
use std::io::{IsTerminal, Write};

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
    /// Text deltas held back per stream (kind, choice) while they may be the start of a secret
    /// the next delta completes: printed redacted (see [`crate::sys::secrets::Holdback`]).
    held: Vec<(Held, crate::sys::secrets::Holdback)>,
}

/// Which text stream a delta belongs to: its kind and choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    Text(u32),
    Reasoning(u32),
    Refusal(u32),
}

impl Held {
    fn of(ev: &StreamEvent) -> Option<(Self, &str)> {
        match ev {
            StreamEvent::Text { choice, delta } => Some((Self::Text(*choice), delta)),
            StreamEvent::Reasoning { choice, delta } => Some((Self::Reasoning(*choice), delta)),
            StreamEvent::Refusal { choice, delta } => Some((Self::Refusal(*choice), delta)),
            _ => None,
        }
    }

    fn event(self, text: String) -> StreamEvent {
        let delta = text.into();
        match self {
            Self::Text(choice) => StreamEvent::Text { choice, delta },
            Self::Reasoning(choice) => StreamEvent::Reasoning { choice, delta },
            Self::Refusal(choice) => StreamEvent::Refusal { choice, delta },
        }
    }
}

pub use crate::runs::sink::RetryHook;
pub use crate::runs::turn::TurnOutcome;

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
            held: Vec::new(),
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

    /// Prints one domain event as it arrives. A text delta goes through its stream's
    /// holdback; anything else first prints what the other streams held, so the order stays.
    pub fn event(&mut self, ev: &StreamEvent) {
        if self.quiet {
            return;
        }
        let delta = Held::of(ev);
        self.release_held(delta.map(|(k, _)| k));
        let Some((key, delta)) = delta else { return self.print_event(ev) };
        let at = match self.held.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                self.held.push((key, crate::sys::secrets::Holdback::default()));
                self.held.len() - 1
            }
        };
        match self.held[at].1.push(delta) {
            None => self.print_event(ev),
            Some(now) if !now.is_empty() => self.print_event(&key.event(now)),
            Some(_) => {}
        }
    }

    /// Prints what every stream but `except` held back.
    fn release_held(&mut self, except: Option<Held>) {
        let mut i = 0;
        while i < self.held.len() {
            if Some(self.held[i].0) == except {
                i += 1;
                continue;
            }
            let (key, mut hold) = self.held.remove(i);
            let text = hold.take();
            if !text.is_empty() {
                self.print_event(&key.event(text));
            }
        }
    }

    fn print_event(&mut self, ev: &StreamEvent) {
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
        let _ = writeln!(self.out, "{}", crate::sys::secrets::redact(s));
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Prints a tool call's outcome.
    pub fn tool_result(&mut self, c: &ToolCall) {
        if self.quiet {
            return;
        }
        self.release_held(None);
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
            for r in crate::sys::spawn::refusal::Refusal::in_output(out) {
                say!("{}: {}", sanitize(&c.name), r.label());
            }
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
        if !self.quiet {
            self.release_held(None);
        }
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
                // A logprob limit cut them: said, as the other limits are.
                if let Some(cut) = main.filter_notes.iter().find_map(|n| n.get("logprobs")?.as_str()) {
                    obj.insert("logprobs_cut".into(), serde_json::json!(cut));
                    say!("{}", sanitize(cut));
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

/// The turn loop's notes go to stderr as palaver's own lines.
impl crate::runs::sink::TurnSink for Printer {
    fn event(&mut self, ev: &StreamEvent) {
        Printer::event(self, ev);
    }

    fn tool_result(&mut self, call: &ToolCall) {
        Printer::tool_result(self, call);
    }

    /// A retry is told to the hook when there is one, else said on stderr (and, with `--json`,
    /// as a `retry` line).
    fn retry(&mut self, attempt: u32, wait_ms: u64, reason: &str) {
        if let Some(hook) = &self.retry_hook {
            hook(attempt, wait_ms);
            return;
        }
        say!("{}; retry {attempt} in {:.1} s", sanitize(reason), wait_ms as f64 / 1000.0);
        if self.json {
            self.line(
                &serde_json::json!({"type": "retry", "attempt": attempt, "wait_ms": wait_ms, "reason": reason})
                    .to_string(),
            );
        }
    }

    fn notice(&mut self, text: &str) {
        notice(text);
    }

    fn flush(&mut self) {
        Printer::flush(self);
    }

    /// With `--json`, MCP progress reports become `tool_progress` event lines, between the
    /// reply's lines (flushed first) and the calls' `tool_result` lines.
    fn progress_hook(&mut self) -> Option<crate::tools::mcp::live::ProgressSink> {
        if !self.json || self.quiet {
            return None;
        }
        Printer::flush(self);
        Some(std::sync::Arc::new(progress_line))
    }
}

/// Prints an MCP call's progress report as a `--json` event line (straight to stdout: it comes
/// from the MCP client's task while the printer waits for the calls).
fn progress_line(p: crate::tools::mcp::live::McpProgress) {
    let line = serde_json::json!({"type": "tool_progress", "id": p.call, "progress": p.progress,
        "total": p.total, "message": p.message});
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// A note for the user on stderr (what `runs` reports through its `say` callbacks).
pub fn notice(text: &str) {
    say!("{text}");
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
        seed: None,
    }
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
    let stop = super::interrupt::stop();
    let reopen = Reopen { continue_last: g.continue_last, resume: g.resume.clone() };
    let (mut rec, mut history) = match Recorder::begin(&reopen, t, user, &stop, &notice).await {
        Ok(v) => v,
        Err(Refused::Usage) => return EXIT_USAGE,
        Err(Refused::Interrupted) => return EXIT_INTERRUPTED,
    };
    let schema = settings(g, t).schema;
    let mut printer =
        Printer::new(g.json).rendering(super::render::for_stdout(g.render, g.json)).structured(schema.is_some());
    printer.pricing(cfg);
    printer.result_key("conversation_id", serde_json::json!(rec.conversation_id()));
    if let Some(c) = &t.continued {
        printer.result_key("continued", c.json());
    }
    let window = cfg.model_facts(&t.model).and_then(|f| f.context_window).filter(|w| *w > 0);
    super::compacting::note_failed_turns(&history);
    if g.compact {
        let opts = settings(g, t).request_options(t, &t.model);
        let compacted = super::compacting::compact_first(t, cfg, &http, &mut history, &mut rec, g.json, opts, window);
        if let Err(failed) = compacted.await {
            return out_of_compaction(t, &mut rec, &mut printer, &failed);
        }
    }
    super::compacting::warn_overflow(&history, g.system.as_deref(), window);
    let turn = Turn { target: t, settings: settings(g, t), registry, http: &http, stop };
    let mut out = run_turn(&turn, &mut history, &mut rec, &mut printer).await;
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

/// Ends a run whose compaction failed or was interrupted: the summary's result line, the
/// prompt not sent; 130 when a signal stopped it, else 1.
fn out_of_compaction(t: &Target, rec: &mut Recorder, printer: &mut Printer, failed: &Message) -> u8 {
    let interrupted = failed.status == MessageStatus::Cancelled;
    let notice = if interrupted {
        let by = super::interrupt::ended_by().unwrap_or("Ctrl+C");
        format!(
            "interrupted by {by} while summarising the earlier turns, so the prompt was not sent (it is saved; \
             run again to send it)"
        )
    } else {
        "the summary of the earlier turns failed, so the prompt was not sent (it is saved; run again without \
         --compact to send it as it is)"
            .to_owned()
    };
    let out = TurnOutcome {
        msg: failed.clone(),
        calls: Vec::new(),
        notice: Some(notice),
        account: TurnAccount::default(),
        stored: Some(rec.sync()),
        attachments: Vec::new(),
    };
    printer.finish(t.api.name(), &t.provider, &t.model, &out);
    printer.flush();
    if interrupted { EXIT_INTERRUPTED } else { EXIT_PROVIDER }
}

/// `palaver replay FILE`: feeds a recorded body through the engine and prints as `-p` does.
pub fn replay(g: &Global, cfg: &crate::config::Config, file: &std::path::Path, api: Option<Api>) -> u8 {
    let body = match crate::sys::read::file_bytes(file, crate::sys::read::INPUT_FILE) {
        Ok(b) => b,
        Err(e) => {
            say!("{}", e.about(&format!("cannot read {}", file.display())));
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
