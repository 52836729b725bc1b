//! The headless runner: `palaver -p`, stdin piping, `--json`, and `replay`. It consumes the
//! same engine events as the TUI and prints either the answer or the JSON Lines contract.

use super::args::Global;
use super::result::{event_line, result_line};
use super::target::Target;
use crate::api::client::{WireEvent, http_client};
use crate::api::event::StreamEvent;
use crate::api::request::build_body;
use crate::api::{Api, Mapper, sse};
use crate::engine::message::{Message, MessageStatus};
use crate::engine::reducer::{self, Ending};
use crate::engine::target::TurnSettings;
use crate::engine::turn::{apply_wire, spawn_request};
use std::io::Write;
use std::time::Instant;

/// Exit statuses of the contract.
pub const EXIT_OK: u8 = 0;
pub const EXIT_PROVIDER: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_INTERRUPTED: u8 = 130;

/// Where output goes: plain text or JSON Lines.
pub struct Printer {
    json: bool,
    /// Buffered and flushed once per network read, not once per delta.
    out: std::io::BufWriter<std::io::Stdout>,
    in_reasoning: bool,
}

impl Printer {
    #[must_use]
    pub fn new(json: bool) -> Self {
        Self { json, out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()), in_reasoning: false }
    }

    /// Prints one domain event as it arrives.
    pub fn event(&mut self, ev: &StreamEvent) {
        if self.json {
            if let Some(line) = event_line(ev) {
                self.line(&line.to_string());
            }
            return;
        }
        match ev {
            StreamEvent::Text { choice: 0, delta } | StreamEvent::Refusal { choice: 0, delta } => {
                if self.in_reasoning {
                    eprintln!();
                    self.in_reasoning = false;
                }
                let _ = self.out.write_all(delta.as_bytes());
            }
            // Reasoning goes to stderr so stdout stays the answer.
            StreamEvent::Reasoning { choice: 0, delta } => {
                self.in_reasoning = true;
                let _ = self.out.flush();
                eprint!("{delta}");
            }
            _ => {}
        }
    }

    pub fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{s}");
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Prints the end of a reply: the result line, or a newline and a stderr note on failure.
    pub fn finish(&mut self, api: &str, provider: &str, model: &str, msg: &Message) {
        let main = msg.main();
        if self.json {
            self.line(&result_line(api, provider, model, msg, &main.tool_calls).to_string());
        } else {
            if !main.content.is_empty() || !main.refusal.is_empty() {
                self.line("");
            }
            for c in &main.tool_calls {
                eprintln!("[tool call {} {}({})]", c.id, c.name, c.arguments);
            }
        }
        let _ = self.out.flush();
        if let Some(e) = &msg.error {
            let status = e.status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
            eprintln!("palaver: {} error: {status}{}", e.kind, e.message);
        } else if main.finish_reason.as_deref() == Some("content_filter") {
            eprintln!("palaver: the provider's content filter stopped the reply");
        }
    }
}

/// The exit status for a finished reply.
#[must_use]
pub fn exit_status(msg: &Message) -> u8 {
    match msg.status {
        MessageStatus::Cancelled => EXIT_INTERRUPTED,
        _ if msg.error.is_some() => EXIT_PROVIDER,
        _ => EXIT_OK,
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

/// The turn settings from the flags.
#[must_use]
pub fn settings(g: &Global) -> TurnSettings {
    TurnSettings {
        stream: !g.no_stream,
        system: g.system.clone(),
        temperature: g.temperature,
        max_tokens: g.max_tokens,
        reasoning_effort: g.reasoning_effort.map(|e| format!("{e:?}").to_lowercase()),
    }
}

/// Runs one prompt headless; returns the exit status.
pub async fn run_prompt(g: &Global, t: &Target, prompt: &str) -> u8 {
    let http = match http_client(&t.endpoint.timeouts) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("palaver: cannot start the HTTP client: {e}");
            return EXIT_PROVIDER;
        }
    };
    let history = vec![Message::user(prompt)];
    let opts = settings(g).request_options(t, &t.model);
    let body = build_body(t.api, &history, &opts);
    let mut printer = Printer::new(g.json);
    let mut msg = Message::assistant_pending();
    let start = Instant::now();
    let mut rx = spawn_request(http, t.endpoint.clone(), t.api, body);
    let mut interrupted = false;
    loop {
        tokio::select! {
            ev = rx.recv() => {
                let Some(ev) = ev else { break };
                if let WireEvent::Retrying { attempt, wait_ms, reason } = &ev {
                    eprintln!("palaver: {reason}; retry {attempt} in {:.1} s", *wait_ms as f64 / 1000.0);
                    if g.json {
                        printer.line(&serde_json::json!({"type": "retry", "attempt": attempt, "wait_ms": wait_ms, "reason": reason}).to_string());
                    }
                }
                let now = start.elapsed().as_millis() as u64;
                let done = apply_wire(&mut msg, ev, now, &mut |e| printer.event(e));
                printer.flush();
                if done {
                    break;
                }
            }
            _ = tokio::signal::ctrl_c() => {
                interrupted = true;
                break;
            }
        }
    }
    drop(rx);
    if interrupted {
        reducer::finish(&mut msg, Ending::Cancelled, start.elapsed().as_millis() as u64);
    } else if msg.is_live() {
        reducer::finish(&mut msg, Ending::Eof, start.elapsed().as_millis() as u64);
    }
    printer.finish(t.api.name(), &t.provider, &t.model, &msg);
    printer.flush();
    exit_status(&msg)
}

/// `palaver replay FILE`: feeds a recorded body through the engine and prints as `-p` does.
pub fn replay(g: &Global, file: &std::path::Path, api: Option<Api>) -> u8 {
    let body = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("palaver: cannot read {}: {e}", file.display());
            return EXIT_USAGE;
        }
    };
    let api = api.unwrap_or_else(|| guess_api(&body));
    let mut printer = Printer::new(g.json);
    let mut msg = Message::assistant_pending();
    let mut mapper = Mapper::new(api);
    let mut events = Vec::new();
    for ev in sse::decode_all(&body) {
        reducer::record_frame(&mut msg, 0, &ev.event, &ev.data);
        mapper.map(&ev.event, &ev.data, &mut events);
    }
    for e in events {
        printer.event(&e);
        reducer::apply(&mut msg, e, 0);
    }
    reducer::finish(&mut msg, Ending::Eof, 0);
    printer.finish(api.name(), "replay", "replay", &msg);
    printer.flush();
    exit_status(&msg)
}

/// A Responses stream names its events `response.*`; anything else is read as chat.
#[must_use]
pub fn guess_api(body: &[u8]) -> Api {
    let head = &body[..body.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    if text.contains("\"type\":\"response.") || text.contains("event: response.") { Api::Responses } else { Api::Chat }
}
